//! From a conversion plan to a launched kernel: the kernels' parameter blocks
//! ([`crate::gpu::params`]) filled from a [`Plan`], the kernel and its grid chosen for them (the
//! launch shapes, and the dynamic shared memory of the box filter's tiled kernels), and the launch
//! enqueued on the caller's stream. Loading the kernels, once per device, is [`crate::gpu::kernels`].

use crate::gpu::driver::{self, sys};
use crate::gpu::kernels::Kernels;
use crate::gpu::params::{BatchParams, KernelCommon, KernelItem, KernelParams, BATCH_PER_LAUNCH, DEPTH_EIGHT, DEPTH_SIXTEEN};
use crate::convert::{Layout, Mode, PixelFormat, Plan};
use crate::frame::Frame;
use crate::pool::Depth;
use crate::status::*;
use std::ffi::c_void;

// `cargo xtask gen` writes BLOCK and the `Shape` consts below into kernels/nvcam_abi.cuh
// (BLOCK_X, BLOCK_Y, NAME_PX, NAME_ROWS), which the kernels are built with.

/// Threads per block: 32 wide (one warp per row segment, coalesced), 4 rows.
const BLOCK: (u32, u32) = (32, 4);

/// How much of the output one thread converts, per kernel: `px` pixels along a row on `rows`
/// rows; the grids are sized by them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Shape {
    px: u32,
    rows: u32,
}

const SAME8: Shape = Shape { px: 8, rows: 2 };
const SAMEF: Shape = Shape { px: 4, rows: 2 };
const RESIZE: Shape = Shape { px: 4, rows: 1 };
const AREA: Shape = Shape { px: 2, rows: 1 };
/// `nvcam_convert_area4`: the box filter with a thread on 4 rows, for large outputs.
const AREA4: Shape = Shape { px: 1, rows: 4 };

const BATCH: Shape = Shape { px: 2, rows: 1 };
const P016: Shape = Shape { px: 2, rows: 1 };

/// Whether the box filter stages an item through shared memory: `tiled_scale` in the kernel
/// source, which decides (where it says no, no shared memory is given). Footprints of more than
/// 36 luma samples per output pixel, and of 16 to 36 with a fractional width; the measurements
/// are beside the kernel's.
fn tiled_scale(it: &KernelItem) -> bool {
    let f = it.sx * it.sy;
    f > 36.0 || (f >= 16.0 && it.sx != it.sx.floor())
}

/// The shared memory `area_tiled` needs for a block of `shape` (32 `px` columns, `BLOCK.1` x
/// `rows` rows) of an item that reads `sx` x `sy` source pixels per output pixel: an upper bound of
/// the kernel's own sum (the staged luma and chroma rectangles, 16-byte aligned, and the words a
/// footprint may read past the last row). The kernel checks the launch's size against its block's
/// exact need, so a bound too small costs speed, never values (a test below checks the bound).
fn area_smem(shape: Shape, sx: f32, sy: f32) -> u32 {
    let tw = (BLOCK.0 * shape.px) as f64;
    let th = (BLOCK.1 * shape.rows) as f64;
    let (sx, sy) = (sx as f64, sy as f64);
    let align = |b: f64| (b.ceil() as u64).div_ceil(16) * 16;
    let lw = align(tw * sx + 2.0 + 32.0);
    let lr = (th * sy).ceil() as u64 + 3;
    let cw = align(2.0 * ((tw * sx / 2.0).ceil() + 3.0) + 32.0);
    let cr = (th * sy / 2.0).ceil() as u64 + 3;
    let need = lr * lw + cr * cw + 64;
    need.min(u32::MAX as u64) as u32
}

/// Conversion kernel launches so far, all devices (test hooks: the batch test counts them).
#[cfg(feature = "test-hooks")]
static LAUNCHES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Test hook: conversion kernel launches so far (all devices, all callers).
#[cfg(feature = "test-hooks")]
pub fn convert_launches() -> u64 {
    LAUNCHES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Enqueues the conversion of `f` (a device frame) as `plan` says into `dst`, laid out as `l`,
/// on `stream`.
///
/// # Safety
/// `dst` is device memory of `k`'s context holding `l.total` bytes, and the frame's planes stay
/// valid, until the work completes; `stream` is a stream of that context (or 0).
pub(crate) unsafe fn frame(k: &Kernels, f: &Frame, plan: &Plan, dst: u64, l: &Layout, stream: sys::CUstream) -> Result<()> {
    let g = f.geom();
    let p = params(plan, g.depth, f.y_addr(), f.uv_addr(), g.pitch, dst, l.pitch, l.plane);
    // SAFETY: the block's addresses are the frame's planes and `dst`: this function's contract.
    unsafe { one(k, &p, stream) }
}

/// The shared part of converting into an image of `p`'s output size and format, rows
/// `dst_pitch` bytes apart, planes `dst_plane` apart.
pub(crate) fn common(p: &Plan, dst_pitch: usize, dst_plane: usize) -> KernelCommon {
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

/// The NV12 or P016 (`depth`) image at `y`/`uv` (rows `src_pitch` bytes apart) into `dst`, as
/// `p` says.
pub(crate) fn item(p: &Plan, depth: Depth, y: u64, uv: u64, src_pitch: usize, dst: u64) -> KernelItem {
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

/// The block for converting the NV12 or P016 (`depth`) image at `y`/`uv` (rows `src_pitch`
/// bytes apart) into `dst`.
#[allow(clippy::too_many_arguments)]
fn params(p: &Plan, depth: Depth, y: u64, uv: u64, src_pitch: usize, dst: u64, dst_pitch: usize, dst_plane: usize) -> KernelParams {
    KernelParams { c: common(p, dst_pitch, dst_plane), it: item(p, depth, y, uv, src_pitch, dst) }
}

/// An item's sample width (which kernels run it), read back from the `DEPTH_*` code that
/// [`item`] wrote.
fn depth(it: &KernelItem) -> Depth {
    if it.depth == DEPTH_SIXTEEN {
        Depth::Sixteen
    } else {
        Depth::Eight
    }
}

/// An item's sampling mode (which kernel runs it), read back from the kernel's `MODE_*` number
/// that [`item`] wrote.
fn mode(it: &KernelItem) -> Mode {
    match it.mode {
        0 => Mode::Same,
        1 => Mode::Bilinear,
        _ => Mode::Area,
    }
}

/// Enqueues one conversion on `stream`: P016 items run the `_p016` kernel whatever the mode.
///
/// # Safety
/// The addresses in `p` are device memory of `k`'s context, valid for the planned reads and
/// writes until the work completes; `stream` is a stream of this context (or 0).
unsafe fn one(k: &Kernels, p: &KernelParams, stream: sys::CUstream) -> Result<()> {
    let float = p.c.format >= PixelFormat::RgbF32.code();
    let (f, shape) = match (depth(&p.it), mode(&p.it)) {
        // One kernel for every mode: the per-mode ones read NV12 bytes.
        (Depth::Sixteen, _) => (k.p016, P016),
        (Depth::Eight, Mode::Same) if float => (k.convert[1], SAMEF),
        (Depth::Eight, Mode::Same) => (k.convert[0], SAME8),
        (Depth::Eight, Mode::Bilinear) => (k.convert[2], RESIZE),
        (Depth::Eight, Mode::Area) => (k.convert[3], AREA),
    };
    let (f, shape, smem) = match (depth(&p.it), mode(&p.it)) {
        (Depth::Eight, Mode::Area) => area_launch(k, &p.it),
        _ => (f, shape, 0),
    };
    let mut block = *p;
    // SAFETY: the kernel takes one parameter of exactly `KernelParams`'s layout (asserted on
    // both sides); memory validity: this function's contract.
    unsafe { enqueue(k, f, &mut block as *mut KernelParams as *mut c_void, p.c.out_w, p.c.out_h, shape, 1, smem, stream) }
}

/// Enqueues `b.items[..n]` (1 ..= [`BATCH_PER_LAUNCH`], all of one sample width: NV12 and
/// P016 items have kernels of their own) as one launch on `stream`.
///
/// # Safety
/// As [`frame`], for every item.
pub(crate) unsafe fn batch(k: &Kernels, b: &BatchParams, n: usize, stream: sys::CUstream) -> Result<()> {
    if n == 0 || n > BATCH_PER_LAUNCH {
        return Err(Error::internal(format!("a batch launch of {n} items")));
    }
    let width = depth(&b.items[0]);
    if b.items[..n].iter().any(|it| depth(it) != width) {
        return Err(Error::internal("a batch launch mixing NV12 and P016 items"));
    }
    let (f, shape, smem) = match width {
        Depth::Eight => match smem_for(k, BATCH, &b.items[..n]) {
            0 => (k.batch, BATCH, 0),
            smem => (k.batch_tiled, BATCH, smem),
        },
        Depth::Sixteen => (k.batch_p016, P016, 0),
    };
    let mut block = *b;
    // SAFETY: the kernel takes one parameter of exactly `BatchParams`'s layout (asserted on
    // both sides) and reads items 0..n (grid z); memory validity: this function's contract.
    unsafe { enqueue(k, f, &mut block as *mut BatchParams as *mut c_void, b.c.out_w, b.c.out_h, shape, n as u32, smem, stream) }
}

/// The dynamic shared memory for a launch of these items: what the largest box-filter
/// footprint among them needs, or 0 (every block filters per pixel) when none is a box
/// filter the kernel stages or that is more than the kernels may have.
fn smem_for(k: &Kernels, shape: Shape, items: &[KernelItem]) -> u32 {
    let staged = |it: &&KernelItem| it.mode == Mode::Area as u32 && tiled_scale(it);
    let need = items.iter().filter(staged).map(|it| area_smem(shape, it.sx, it.sy)).max().unwrap_or(0);
    if need <= k.area_smem_cap {
        need
    } else {
        0
    }
}

/// The box-filter kernel for one item, its grid shape and shared memory. Large footprints
/// (`tiled_scale`) whose block footprint fits: `area4` (a thread on 4 rows: a tile's set-up
/// serves 4 times the pixels) where its blocks fill the SMs twice, else `area_tiled`. The rest:
/// `area`, per pixel. Measured (H100, 4096x2160 into 640x640): 0.28 of a copy's speed with
/// `area4`, 0.23 with `area_tiled`, 0.20 per pixel.
fn area_launch(k: &Kernels, it: &KernelItem) -> (sys::CUfunction, Shape, u32) {
    let item = std::slice::from_ref(it);
    let blocks4 = (it.img_w.max(0) as u32).div_ceil(BLOCK.0 * AREA4.px) * (it.img_h.max(0) as u32).div_ceil(BLOCK.1 * AREA4.rows);
    if blocks4 >= 2 * k.sm_count {
        let smem = smem_for(k, AREA4, item);
        if smem > 0 {
            return (k.area4, AREA4, smem);
        }
    }
    match smem_for(k, AREA, item) {
        0 => (k.convert[3], AREA, 0),
        smem => (k.area_tiled, AREA, smem),
    }
}

/// # Safety
/// `f` takes one parameter, `*param`, and the launch is valid (the callers' contracts).
#[allow(clippy::too_many_arguments)]
unsafe fn enqueue(k: &Kernels, f: sys::CUfunction, param: *mut c_void, out_w: i32, out_h: i32, shape: Shape, items: u32, smem: u32, stream: sys::CUstream) -> Result<()> {
    let _g = k.dev.push()?;
    let mut args = [param];
    let gx = (out_w as u32).div_ceil(BLOCK.0 * shape.px);
    let gy = (out_h as u32).div_ceil(BLOCK.1 * shape.rows);
    #[cfg(feature = "test-hooks")]
    LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the caller's contract; the driver copies the parameter before returning.
    Ok(unsafe { driver::launch_kernel(f, (gx, gy, items), (BLOCK.0, BLOCK.1, 1), smem, stream, &mut args) }.map_err(|e| e.during("nvcam_convert"))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{colour, Spec};
    use crate::frame::{Matrix, Range};

    /// The kernel's same-scale path computes Y - y_off as (2^23 + Y) - (2^23 + y_off), exact only
    /// for an integer y_off.
    #[test]
    fn luma_offset_is_an_integer_for_every_matrix_and_range() {
        for m in [Matrix::Bt601, Matrix::Bt709, Matrix::Unspecified] {
            for r in [Range::Limited, Range::Full, Range::Unspecified] {
                let p = Plan::new(&Spec::new(PixelFormat::Bgra8), 64, 64, &colour(m, r)).unwrap();
                let k = params(&p, Depth::Eight, 0, 0, 64, 0, 256, 0);
                assert_eq!(k.it.y_off, k.it.y_off.round(), "{m:?} {r:?}");
                assert!((0.0..256.0).contains(&k.it.y_off));
            }
        }
    }

    #[test]
    fn the_mode_picks_the_sampling() {
        let mut s = Spec::new(PixelFormat::RgbF16);
        let p = Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(mode(&params(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).it), Mode::Same);
        (s.width, s.height, s.letterbox) = (640, 640, true);
        let p = Plan::new(&s, 1920, 1080, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(mode(&params(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).it), Mode::Area);
        let p = Plan::new(&s, 1280, 720, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        assert_eq!(mode(&params(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).it), Mode::Bilinear);
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
        let it = params(&p, Depth::Eight, 0, 0, 2048, 0, 0, 0).it;
        assert_eq!((it.roi_x, it.roi_y, it.src_w, it.src_h), (3, 5, 1920, 1080));
        assert_eq!((it.chroma_x, it.chroma_y), (1, 1));
    }

    /// A P016 frame's item says so (the host then launches the 16-bit kernels; an 8-bit kernel
    /// would read its words as bytes), and a default (unused batch) item is NV12.
    #[test]
    fn the_item_carries_the_sample_width() {
        let p = Plan::new(&Spec::new(PixelFormat::Rgb8), 64, 48, &colour(Matrix::Bt709, Range::Limited)).unwrap();
        for d in [Depth::Eight, Depth::Sixteen] {
            let k = params(&p, d, 0, 0, 256, 0, 0, 0);
            assert_eq!(depth(&k.it), d);
        }
        assert_eq!(params(&p, Depth::Sixteen, 0, 0, 256, 0, 0, 0).it.depth, 1);
        assert_eq!(depth(&KernelItem::default()), Depth::Eight);
    }

    /// A bound below a block's footprint sends that block to the per-pixel path without a word
    /// (the values stay exact, so no GPU test would see it, only a slower kernel): `area_smem`
    /// covers every block's footprint, computed as the kernel's `area_tiled` computes it (spans in
    /// f32, 16-byte aligned rectangles), for frames, outputs, crops and sitings that take the
    /// tiled path, in each tiled kernel's block shape.
    #[test]
    fn area_smem_covers_every_block_footprint() {
        let luma = |a: f32, b: f32, hi: i32| ((a.floor() as i32).min(hi), (b.ceil() as i32 - 1).min(hi));
        let chroma = |a: f32, b: f32, hi: i32| ((a.floor() as i32).clamp(0, hi), (b.ceil() as i32 - 1).clamp(0, hi));
        // The kernel's `staged`: rows x (16-aligned start to the last byte, rounded up to 16).
        let staged = |xa: i32, xb: i32, ya: i32, yb: i32| {
            let x0 = xa & !15;
            ((yb - ya + 1) * ((xb + 1 - x0 + 15) & !15)) as u32
        };
        let mut checked = 0;
        for (src_w, src_h) in [(1920, 1080), (3840, 2160), (4096, 2160), (1366, 768), (7680, 4320)] {
            for (img_w, img_h) in [(640, 338), (640, 360), (320, 169), (451, 254), (295, 166), (590, 332), (100, 57), (640, 640)] {
                for (roi_x, roi_y) in [(0, 0), (7, 3), (333, 177)] {
                    let (rw, rh) = (src_w - roi_x, src_h - roi_y);
                    let (sx, sy) = (rw as f32 / img_w as f32, rh as f32 / img_h as f32);
                    let it = KernelItem { mode: Mode::Area as u32, sx, sy, ..Default::default() };
                    if !tiled_scale(&it) {
                        continue;
                    }
                    for h in 1..=3 {
                        let c0x = roi_x as f32 * 0.5 + (0.5 - h as f32 * 0.25);
                        let c0y = roi_y as f32 * 0.5 + (0.5 - h as f32 * 0.25);
                        for shape in [AREA, AREA4, BATCH] {
                            let bound = area_smem(shape, sx, sy);
                            let (tw, th) = ((BLOCK.0 * shape.px) as i32, (BLOCK.1 * shape.rows) as i32);
                            for by in (0..img_h).step_by(th as usize) {
                                for bx in (0..img_w).step_by(tw as usize) {
                                    let (d0x, d1x) = (bx as f32, ((bx + tw).min(img_w) - 1) as f32);
                                    let (d0y, d1y) = (by as f32, ((by + th).min(img_h) - 1) as f32);
                                    let lx = (luma(d0x * sx + roi_x as f32, d0x * sx + roi_x as f32 + sx, src_w - 1).0, luma(d1x * sx + roi_x as f32, d1x * sx + roi_x as f32 + sx, src_w - 1).1);
                                    let ly = (luma(d0y * sy + roi_y as f32, d0y * sy + roi_y as f32 + sy, src_h - 1).0, luma(d1y * sy + roi_y as f32, d1y * sy + roi_y as f32 + sy, src_h - 1).1);
                                    let (hx, hy) = (sx * 0.5, sy * 0.5);
                                    let cspan = |d: f32, hs: f32, c0: f32, hi: i32| chroma(d * hs + c0, d * hs + c0 + hs, hi);
                                    let cx = (cspan(d0x, hx, c0x, (src_w - 1) >> 1).0, cspan(d1x, hx, c0x, (src_w - 1) >> 1).1);
                                    let cy = (cspan(d0y, hy, c0y, (src_h - 1) >> 1).0, cspan(d1y, hy, c0y, (src_h - 1) >> 1).1);
                                    let need = staged(lx.0, lx.1, ly.0, ly.1) + staged(2 * cx.0, 2 * cx.1 + 1, cy.0, cy.1) + 4 * 6;
                                    assert!(
                                        need <= bound,
                                        "{src_w}x{src_h} roi +{roi_x}+{roi_y} into {img_w}x{img_h}, siting {h}, {shape:?}, block ({bx}, {by}): needs {need} bytes, bound {bound}"
                                    );
                                    checked += 1;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "only {checked} blocks checked");
    }
}
