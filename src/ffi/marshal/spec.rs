//! C conversion specs (`nvcam_convert_t`) read into the core's [`Spec`], and the CPU reference
//! conversion the GPU tests compare the kernels against.

use crate::ffi::constants::*;
use crate::ffi::types::*;
use crate::convert::{PixelFormat, Rect, Spec};
use crate::frame::{Matrix, Range, Siting};
use crate::pool::Depth;
use crate::status::*;

/// An `NVCAM_SITING_*` value (numbered as FFmpeg's `AVChromaLocation`; anything else is
/// unspecified).
fn siting_from_code(code: u32) -> Siting {
    Siting::from_ffmpeg(code)
}

/// Where a conversion's `dst` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DstKind {
    Host,
    Device(i32),
}

/// A conversion spec from the C struct, checked (sizes and the ROI against the frame are checked
/// by the plan).
pub(crate) fn convert_spec(c: &nvcam_convert) -> Result<(Spec, DstKind)> {
    let format = match c.format {
        NVCAM_FORMAT_BGRA8 => PixelFormat::Bgra8,
        NVCAM_FORMAT_BGR8 => PixelFormat::Bgr8,
        NVCAM_FORMAT_RGB8 => PixelFormat::Rgb8,
        NVCAM_FORMAT_GRAY8 => PixelFormat::Gray8,
        NVCAM_FORMAT_RGB_F32_PLANAR => PixelFormat::RgbF32,
        NVCAM_FORMAT_RGB_F16_PLANAR => PixelFormat::RgbF16,
        NVCAM_FORMAT_NV12 => return Err(Error::arg("format NV12: use nvcam_frame_copy_nv12 or the frame's own planes")),
        f => return Err(Error::arg(format!("format {f} is not an NVCAM_FORMAT_* value"))),
    };
    if c.flags & !NVCAM_CONVERT_ALL != 0 {
        return Err(Error::arg(format!("nvcam_convert_t.flags 0x{:x}: unknown bits", c.flags & !NVCAM_CONVERT_ALL)));
    }
    if c.reserved.iter().any(|&r| r != 0) {
        return Err(Error::arg("nvcam_convert_t.reserved must be 0"));
    }
    let matrix = match c.matrix {
        NVCAM_MATRIX_UNKNOWN => None,
        NVCAM_MATRIX_BT601 => Some(Matrix::Bt601),
        NVCAM_MATRIX_BT709 => Some(Matrix::Bt709),
        NVCAM_MATRIX_BT2020 => Some(Matrix::Bt2020),
        m => return Err(Error::arg(format!("matrix {m} is not an NVCAM_MATRIX_* value"))),
    };
    let range = match c.range {
        NVCAM_RANGE_UNKNOWN => None,
        NVCAM_RANGE_LIMITED => Some(Range::Limited),
        NVCAM_RANGE_FULL => Some(Range::Full),
        r => return Err(Error::arg(format!("range {r} is not an NVCAM_RANGE_* value"))),
    };
    let siting = match c.chroma_siting {
        0 => None,
        NVCAM_SITING_LEFT..=NVCAM_SITING_BOTTOM => Some(siting_from_code(c.chroma_siting)),
        v => return Err(Error::arg(format!("chroma_siting {v} is not an NVCAM_SITING_* value"))),
    };
    let dst = match c.dst_memory {
        NVCAM_MEMORY_HOST => DstKind::Host,
        NVCAM_MEMORY_DEVICE if c.dst_device >= 0 => DstKind::Device(c.dst_device),
        NVCAM_MEMORY_DEVICE => return Err(Error::arg(format!("dst_device {} is not a GPU ordinal", c.dst_device))),
        m => return Err(Error::arg(format!("dst_memory {m} is not an NVCAM_MEMORY_* value"))),
    };
    let roi = (c.roi_width != 0 && c.roi_height != 0).then_some(Rect { x: c.roi_x, y: c.roi_y, w: c.roi_width, h: c.roi_height });
    let spec = Spec {
        format,
        width: c.width,
        height: c.height,
        roi,
        letterbox: c.flags & NVCAM_CONVERT_LETTERBOX != 0,
        pad: c.pad,
        matrix,
        range,
        siting,
        mean: c.mean,
        std: c.std.map(|s| if s == 0.0 { 1.0 } else { s }),
    };
    Ok((spec, dst))
}

/// The CPU conversion of a packed NV12 or P016 image (`frame_format` `NVCAM_FORMAT_NV12` or
/// `NVCAM_FORMAT_P016`; `nv12_size` bytes as `nvcam_frame_copy_nv12` writes them) whose stream
/// colours are the `NVCAM_MATRIX_*`/`NVCAM_RANGE_*`/`NVCAM_SITING_*` codes given (as
/// `nvcam_frame_info_t` reports them): the reference the GPU tests compare the kernels against.
pub(crate) fn cpu_reference(pixels: &[u8], frame_format: u32, width: u32, height: u32, spec: &nvcam_convert, color: (u32, u32, u32), dst_pitch: usize) -> Result<Vec<u8>> {
    let (s, _) = convert_spec(spec)?;
    let depth = match frame_format {
        NVCAM_FORMAT_NV12 => Depth::Eight,
        NVCAM_FORMAT_P016 => Depth::Sixteen,
        f => return Err(Error::arg(format!("frame format {f} is neither NVCAM_FORMAT_NV12 nor NVCAM_FORMAT_P016"))),
    };
    let matrix = match color.0 {
        NVCAM_MATRIX_BT601 => Matrix::Bt601,
        NVCAM_MATRIX_BT709 => Matrix::Bt709,
        NVCAM_MATRIX_BT2020 => Matrix::Bt2020,
        _ => Matrix::Unspecified,
    };
    let range = if color.1 == NVCAM_RANGE_FULL { Range::Full } else { Range::Limited };
    let color = crate::frame::Color { matrix, range, siting: siting_from_code(color.2), ..Default::default() };
    let plan = crate::convert::Plan::new(&s, width, height, &color)?;
    let l = plan.layout(dst_pitch)?;
    // Packed: both planes at the UV rows' width (the frame's `row_bytes`).
    let pitch = (width as usize).div_ceil(2) * 2 * depth.bytes();
    let src = crate::convert::cpu::Image { bytes: pixels, pitch, uv_offset: pitch * height as usize, depth };
    let mut out = vec![0u8; l.total];
    crate::convert::cpu::convert(&plan, &src, &mut out, &l)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::siting_code;
    use super::*;

    /// `chroma_siting` overrides the stream's siting with an `NVCAM_SITING_*` value (numbered as
    /// FFmpeg's `AVChromaLocation`); 0 keeps the stream's; anything else is refused.
    #[test]
    fn chroma_siting_override_is_read_and_checked() {
        let base = nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, format: NVCAM_FORMAT_RGB8, ..Default::default() };
        let siting = |v: u32| convert_spec(&nvcam_convert { chroma_siting: v, ..base }).map(|(s, _)| s.siting);
        assert_eq!(siting(0).unwrap(), None);
        assert_eq!(siting(NVCAM_SITING_LEFT).unwrap(), Some(Siting::Left));
        assert_eq!(siting(NVCAM_SITING_TOPLEFT).unwrap(), Some(Siting::TopLeft));
        assert_eq!(siting(NVCAM_SITING_BOTTOM).unwrap(), Some(Siting::Bottom));
        for bad in [7, u32::MAX] {
            assert_eq!(siting(bad).unwrap_err().kind, ErrorKind::InvalidArgument, "{bad}");
        }
        // The frame_info numbering reads back as the same siting.
        for s in [Siting::Left, Siting::Center, Siting::TopLeft, Siting::Top, Siting::BottomLeft, Siting::Bottom] {
            assert_eq!(siting_from_code(siting_code(s)), s);
        }
    }
}
