//! Pixel formats for people: FFmpeg's names instead of enum numbers, and which ones every
//! decoder choice can turn into NV12 on the GPU.

use ffmpeg_next::ffi;

/// FFmpeg's name of pixel format `fmt` (`yuv420p10le`), or `#N` for a value it does not know.
pub(crate) fn name(fmt: i32) -> String {
    if fmt == ffi::AVPixelFormat::AV_PIX_FMT_NONE as i32 {
        return "unknown".into();
    }
    if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&fmt) {
        return format!("#{fmt}");
    }
    // SAFETY: `fmt` is within the enum's range (checked), so the transmute yields a valid value;
    // av_get_pix_fmt_name returns a static string or null.
    let p = unsafe { ffi::av_get_pix_fmt_name(std::mem::transmute::<i32, ffi::AVPixelFormat>(fmt)) };
    if p.is_null() {
        return format!("#{fmt}");
    }
    // SAFETY: a NUL-terminated static string from FFmpeg's descriptor table.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The chroma layout of an 8-bit planar Y'CbCr (or gray) pixel format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chroma {
    /// Luma only (gray JPEG).
    Gray,
    C420,
    C422,
    C444,
}

/// The chroma layout of 8-bit pixel format `fmt` (`None`: another depth or layout, or not known).
pub(crate) fn chroma_8bit(fmt: i32) -> Option<Chroma> {
    use ffi::AVPixelFormat::*;
    let is = |fs: &[ffi::AVPixelFormat]| fs.iter().any(|&f| f as i32 == fmt);
    if is(&[AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_NV12]) {
        Some(Chroma::C420)
    } else if is(&[AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P]) {
        Some(Chroma::C422)
    } else if is(&[AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P]) {
        Some(Chroma::C444)
    } else if is(&[AV_PIX_FMT_GRAY8]) {
        Some(Chroma::Gray)
    } else {
        None
    }
}

/// Bits per sample of pixel format `fmt` (its first component), 0 if FFmpeg does not know it.
pub(crate) fn bit_depth(fmt: i32) -> u32 {
    if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&fmt) {
        return 0;
    }
    // SAFETY: `fmt` is within the enum's range (checked); the descriptor is static or null.
    let d = unsafe { ffi::av_pix_fmt_desc_get(std::mem::transmute::<i32, ffi::AVPixelFormat>(fmt)) };
    // SAFETY: null or FFmpeg's static descriptor.
    unsafe { d.as_ref() }.map_or(0, |d| d.comp[0].depth as u32)
}

/// Whether `fmt` holds Y'CbCr (three or four components, not RGB): the formats whose samples keep
/// their range on the way into a pool (RGB and gray sources take swscale's default conversion).
pub(crate) fn is_ycbcr(fmt: i32) -> bool {
    if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&fmt) {
        return false;
    }
    // SAFETY: `fmt` is within the enum's range (checked); the descriptor is static or null.
    let d = unsafe { ffi::av_pix_fmt_desc_get(std::mem::transmute::<i32, ffi::AVPixelFormat>(fmt)) };
    // SAFETY: null or FFmpeg's static descriptor.
    unsafe { d.as_ref() }.is_some_and(|d| d.nb_components >= 3 && d.flags & ffi::AV_PIX_FMT_FLAG_RGB as u64 == 0)
}

/// Whether `fmt` is a software format that is not Y'CbCr (RGB, gray): swscale turns such
/// pictures into limited-range BT.601 Y'CbCr, whatever their frames say.
pub(crate) fn becomes_bt601_limited(fmt: i32) -> bool {
    if !(0..ffi::AVPixelFormat::AV_PIX_FMT_NB as i32).contains(&fmt) {
        return false;
    }
    // SAFETY: `fmt` is within the enum's range (checked); the descriptor is static or null.
    let d = unsafe { ffi::av_pix_fmt_desc_get(std::mem::transmute::<i32, ffi::AVPixelFormat>(fmt)) };
    // SAFETY: null or FFmpeg's static descriptor.
    unsafe { d.as_ref() }.is_some_and(|d| d.flags & ffi::AV_PIX_FMT_FLAG_HWACCEL as u64 == 0) && !is_ycbcr(fmt)
}

/// Whether `fmt` is 4:2:0 at 10 or 12 bits (planar or P010/P016): what NVDEC writes as P016.
pub(crate) fn high_depth_420(fmt: i32) -> bool {
    use ffi::AVPixelFormat::*;
    [AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_YUV420P12LE, AV_PIX_FMT_P010LE, AV_PIX_FMT_P016LE].iter().any(|&f| f as i32 == fmt)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pixel_formats_have_names() {
        use ffmpeg_next::ffi::AVPixelFormat::*;
        assert_eq!(super::name(AV_PIX_FMT_YUV420P10LE as i32), "yuv420p10le");
        assert_eq!(super::name(AV_PIX_FMT_NV12 as i32), "nv12");
        assert_eq!(super::name(-1), "unknown");
        assert_eq!(super::name(100_000), "#100000");
        assert_eq!(super::chroma_8bit(AV_PIX_FMT_YUVJ422P as i32), Some(super::Chroma::C422));
        assert_eq!(super::chroma_8bit(AV_PIX_FMT_GRAY8 as i32), Some(super::Chroma::Gray));
        assert_eq!(super::chroma_8bit(AV_PIX_FMT_YUV420P10LE as i32), None);
        assert_eq!((super::bit_depth(AV_PIX_FMT_YUV420P10LE as i32), super::bit_depth(AV_PIX_FMT_NV12 as i32), super::bit_depth(-1)), (10, 8, 0));
        assert!(super::high_depth_420(AV_PIX_FMT_P010LE as i32) && !super::high_depth_420(AV_PIX_FMT_YUV422P10LE as i32));
        assert!(super::is_ycbcr(AV_PIX_FMT_YUVJ422P as i32) && super::is_ycbcr(AV_PIX_FMT_YUV420P10LE as i32));
        assert!(!super::is_ycbcr(AV_PIX_FMT_RGB24 as i32) && !super::is_ycbcr(AV_PIX_FMT_GRAY8 as i32) && !super::is_ycbcr(-1));
        assert!(super::becomes_bt601_limited(AV_PIX_FMT_BGR0 as i32) && !super::becomes_bt601_limited(AV_PIX_FMT_CUDA as i32));
        assert!(!super::becomes_bt601_limited(AV_PIX_FMT_NV12 as i32));
    }
}
