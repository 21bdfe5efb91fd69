//! The kernels' parameter blocks: the conversion kernels' (filled from a plan by
//! `crate::convert::launch`) and nvJPEG's chroma packing's. `cargo xtask gen` writes them, with the codes
//! and launch shapes they use, into `kernels/nvcam_abi.cuh`, which the kernels include, and
//! asserts their layout on both sides (`static_assert`s there, `params_layout.rs` here): all
//! fields 4 or 8 bytes.

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

/// `nvcam_jpeg_pack_uv`'s block (kernels/nvcam_jpeg.cu): nvJPEG's chroma planes, decoded at the
/// picture's own subsampling, box-averaged into a pool slot's NV12 UV plane.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct JpegPackParams {
    /// The decoded Cb plane (device).
    pub u: u64,
    /// The decoded Cr plane.
    pub v: u64,
    /// Bytes between their rows.
    pub c_pitch: u32,
    /// Their size in samples.
    pub cw: u32,
    pub ch: u32,
    /// Decoded samples per NV12 sample on each axis (1 or 2); `fx` 0: gray.
    pub fx: u32,
    pub fy: u32,
    pub _pad: u32,
    /// The slot's UV plane.
    pub uv: u64,
    pub uv_pitch: u32,
    /// NV12 chroma size: ceil(w / 2) x ceil(h / 2).
    pub ow: u32,
    pub oh: u32,
}

/// `KernelItem::depth`'s codes.
pub(crate) const DEPTH_EIGHT: u32 = 0;
pub(crate) const DEPTH_SIXTEEN: u32 = 1;

include!("params_layout.rs");
const _: () = assert!(std::mem::size_of::<BatchParams>() <= 4096);

impl BatchParams {
    /// A launch of items sharing `c`, every item still the default (filled up to `n` before it goes).
    pub(crate) fn new(c: KernelCommon) -> BatchParams {
        BatchParams { c, items: [KernelItem::default(); BATCH_PER_LAUNCH] }
    }
}
