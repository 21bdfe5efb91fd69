//! The kernels' parameter blocks. `cargo xtask gen` writes them, with the codes and launch
//! shapes they use, into `kernels/nvcam_abi.cuh`, which the kernels include, and asserts their
//! layout on both sides (`static_assert`s there, `params_layout.rs` here): all fields 4 or 8 bytes.

use crate::convert::{Layout, Mode, Plan};
use crate::frame::Frame;
use crate::pool::Depth;

/// Items one batch launch takes: its parameter block (3,648 bytes) stays under the 4 KiB that
/// every driver accepts.
pub(crate) const BATCH_PER_LAUNCH: usize = 32;

/// What every item of a launch shares (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct KernelCommon {
    /// Bytes between output rows.
    pub dst_pitch: u64,
    /// Bytes between output planes (planar formats).
    pub dst_plane: u64,
    /// `FMT_*`.
    pub format: u32,
    pub out_w: i32,
    pub out_h: i32,
    /// Letterbox colour, R G B, 0..255 units.
    pub pad: [f32; 3],
    /// Float formats: out = clamp(v, 0, 255) * nscale + noff per channel R G B
    /// (nscale = 1 / (255 std), noff = -mean / std).
    pub nscale: [f32; 3],
    pub noff: [f32; 3],
}

/// One frame of a launch (112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct KernelItem {
    /// Device address of the Y plane.
    pub y: u64,
    /// Device address of the interleaved UV plane.
    pub uv: u64,
    /// Output image (planar formats: the R plane; G and B follow at dst_plane).
    pub dst: u64,
    /// Bytes between rows of Y (and of UV).
    pub src_pitch: u64,
    /// The ROI's origin in the frame, luma pixels.
    pub roi_x: i32,
    pub roi_y: i32,
    /// The frame's size: taps clamp to the frame, not to the ROI, so a ROI reads the pixels
    /// around it and equals that window of the whole frame's conversion.
    pub src_w: i32,
    pub src_h: i32,
    /// Where the scaled ROI lands in the output (the rest is pad).
    pub img_x: i32,
    pub img_y: i32,
    pub img_w: i32,
    pub img_h: i32,
    /// ROI pixels per output pixel (ROI width / img_w, ROI height / img_h).
    pub sx: f32,
    pub sy: f32,
    /// `MODE_*`.
    pub mode: u32,
    /// Y'CbCr -> R'G'B' (0..255 units): yy = (Y - y_off) * y_scale; du = U - 128; dv = V - 128;
    /// R = yy + dv*k_r; G = (yy - du*k_gb) - dv*k_gr; B = yy + du*k_b. y_off is an integer (0 or
    /// 16), so Y - y_off is exact however it is computed.
    pub y_off: f32,
    pub y_scale: f32,
    pub k_r: f32,
    pub k_gb: f32,
    pub k_gr: f32,
    pub k_b: f32,
    /// [`Plan::chroma_pos`], the stream's chroma siting: where a chroma sample sits in the 2x2
    /// luma block it belongs to, in half luma pixels from the block's top-left corner, 1 (with
    /// the first column / row), 2 (centred) or 3 (with the second row). H.264/HEVC's default
    /// (left) is (1, 2), JPEG's (2, 2). Luma position u (pixel centres at k + 0.5) is at chroma
    /// position u / 2 - h / 4 (sample centres at integers).
    pub chroma_x: i32,
    pub chroma_y: i32,
    /// The frame's sample width (`DEPTH_*`): 0 NV12, 1 P016. The host launches the `_p016`
    /// kernels for P016 items (a batch launch holds items of one width; the 8-bit kernels read
    /// bytes); the kernels themselves do not read it.
    pub depth: u32,
}

/// One frame's launch (`nvcam_convert_same` / `_bilinear` / `_area`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct KernelParams {
    pub c: KernelCommon,
    pub it: KernelItem,
}

/// A batch launch (`nvcam_convert_batch`): `items[..n]` used, item = blockIdx.z.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BatchParams {
    pub c: KernelCommon,
    pub items: [KernelItem; BATCH_PER_LAUNCH],
}

include!("params_layout.rs");
const _: () = assert!(std::mem::size_of::<BatchParams>() <= 4096);

impl KernelCommon {
    /// The shared part of converting into an image of `p`'s output size and format, rows
    /// `dst_pitch` bytes apart, planes `dst_plane` apart.
    pub(crate) fn new(p: &Plan, dst_pitch: usize, dst_plane: usize) -> KernelCommon {
        KernelCommon {
            dst_pitch: dst_pitch as u64,
            dst_plane: dst_plane as u64,
            format: p.format.code(),
            out_w: p.out_w as i32,
            out_h: p.out_h as i32,
            pad: p.pad,
            nscale: p.norm.scale,
            noff: p.norm.offset,
        }
    }
}

/// `KernelItem::depth`'s codes.
const DEPTH_EIGHT: u32 = 0;
const DEPTH_SIXTEEN: u32 = 1;

impl KernelItem {
    /// The NV12 or P016 (`depth`) image at `y`/`uv` (rows `src_pitch` bytes apart) into `dst`,
    /// as `p` says.
    pub(crate) fn new(p: &Plan, depth: Depth, y: u64, uv: u64, src_pitch: usize, dst: u64) -> KernelItem {
        let c = &p.coeffs;
        let (chroma_x, chroma_y) = p.chroma_pos();
        KernelItem {
            y,
            uv,
            dst,
            src_pitch: src_pitch as u64,
            roi_x: p.roi.x as i32,
            roi_y: p.roi.y as i32,
            src_w: p.src_w as i32,
            src_h: p.src_h as i32,
            img_x: p.img.x as i32,
            img_y: p.img.y as i32,
            img_w: p.img.w as i32,
            img_h: p.img.h as i32,
            sx: p.sx,
            sy: p.sy,
            mode: p.mode as u32,
            y_off: c.y_off,
            y_scale: c.y_scale,
            k_r: c.k_r,
            k_gb: c.k_gb,
            k_gr: c.k_gr,
            k_b: c.k_b,
            chroma_x,
            chroma_y,
            depth: match depth {
                Depth::Eight => DEPTH_EIGHT,
                Depth::Sixteen => DEPTH_SIXTEEN,
            },
        }
    }

    /// The frame's sample width (which kernels run the item).
    pub(crate) fn depth(&self) -> Depth {
        if self.depth == DEPTH_SIXTEEN {
            Depth::Sixteen
        } else {
            Depth::Eight
        }
    }
}

impl KernelParams {
    /// The block for converting frame `f` (a device frame) into `dst`, laid out as `l`.
    pub(crate) fn for_frame(f: &Frame, p: &Plan, dst: u64, l: &Layout) -> KernelParams {
        let g = f.geom();
        KernelParams::new(p, g.depth, f.y_addr(), f.uv_addr(), g.pitch, dst, l.pitch, l.plane)
    }

    /// The block for converting the NV12 or P016 (`depth`) image at `y`/`uv` (rows `src_pitch`
    /// bytes apart) into `dst`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(p: &Plan, depth: Depth, y: u64, uv: u64, src_pitch: usize, dst: u64, dst_pitch: usize, dst_plane: usize) -> KernelParams {
        KernelParams { c: KernelCommon::new(p, dst_pitch, dst_plane), it: KernelItem::new(p, depth, y, uv, src_pitch, dst) }
    }

    /// The sampling mode (which kernel runs it), read back from the kernel's `MODE_*` number
    /// that [`KernelItem::new`] wrote.
    pub(crate) fn mode(&self) -> Mode {
        match self.it.mode {
            0 => Mode::Same,
            1 => Mode::Bilinear,
            _ => Mode::Area,
        }
    }

    /// The frame's sample width (P016 runs the `_p016` kernel whatever the mode).
    pub(crate) fn depth(&self) -> Depth {
        self.it.depth()
    }
}

impl BatchParams {
    pub(crate) fn new(c: KernelCommon) -> BatchParams {
        BatchParams { c, items: [KernelItem::default(); BATCH_PER_LAUNCH] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{colour, PixelFormat, Spec};
    use crate::frame::{Matrix, Range};

    /// The kernel's same-scale path computes Y - y_off as (2^23 + Y) - (2^23 + y_off), exact only
    /// for an integer y_off.
    #[test]
    fn luma_offset_is_an_integer_for_every_matrix_and_range() {
        for m in [Matrix::Bt601, Matrix::Bt709, Matrix::Unspecified] {
            for r in [Range::Limited, Range::Full, Range::Unspecified] {
                let p = Plan::new(&Spec::new(PixelFormat::Bgra8), 64, 64, &colour(m, r)).unwrap();
                let k = KernelParams::new(&p, Depth::Eight, 0, 0, 64, 0, 256, 0);
                assert_eq!(k.it.y_off, k.it.y_off.round(), "{m:?} {r:?}");
                assert!((0.0..256.0).contains(&k.it.y_off));
            }
        }
    }

    #[test]
    fn the_mode_picks_the_sampling() {
        let mut s = Spec::new(PixelFormat::RgbF16);
        let p = Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(KernelParams::new(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).mode(), Mode::Same);
        (s.width, s.height, s.letterbox) = (640, 640, true);
        let p = Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(KernelParams::new(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).mode(), Mode::Area);
        let p = Plan::new(&s, 1280, 720, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(KernelParams::new(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).mode(), Mode::Bilinear);
    }

    /// The kernel clamps taps to the frame and reads the siting from the item: a ROI's item
    /// carries the frame's size (not the ROI's) and the chroma position in half pixels.
    #[test]
    fn the_item_carries_the_frame_size_and_the_siting() {
        use crate::frame::{Color, Siting};
        let mut s = Spec::new(PixelFormat::Bgra8);
        s.roi = Some(crate::convert::Rect { x: 3, y: 5, w: 64, h: 32 });
        let c = Color { siting: Siting::TopLeft, ..colour(Matrix::Bt709, Range::Limited) };
        let p = Plan::new(&s, 1920, 1080, &c).unwrap();
        let it = KernelParams::new(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).it;
        assert_eq!((it.roi_x, it.roi_y, it.src_w, it.src_h), (3, 5, 1920, 1080));
        assert_eq!((it.chroma_x, it.chroma_y), (1, 1));
    }

    /// A P016 frame's item says so (the host then launches the 16-bit kernels; an 8-bit kernel
    /// would read its words as bytes), and a default (unused batch) item is NV12.
    #[test]
    fn the_item_carries_the_sample_width() {
        let p = Plan::new(&Spec::new(PixelFormat::Rgb8), 64, 48, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        for d in [Depth::Eight, Depth::Sixteen] {
            let k = KernelParams::new(&p, d, 0, 0, 256, 0, 0, 0);
            assert_eq!((k.depth(), k.it.depth()), (d, d));
        }
        assert_eq!(KernelParams::new(&p, Depth::Sixteen, 0, 0, 256, 0, 0, 0).it.depth, 1);
        assert_eq!(KernelItem::default().depth(), Depth::Eight);
    }
}
