//! The embedded conversion kernels (`kernels/nvcam_kernels.fatbin`, built by
//! `scripts/build/build-kernels.sh`), loaded once per device with cuModuleLoadData and kept until
//! library shutdown, and their launches.

use super::context::Device;
use super::params::{BatchParams, KernelItem, KernelParams, BATCH_PER_LAUNCH};
use crate::convert::{Mode, PixelFormat};
use crate::pool::Depth;
use crate::status::*;
use super::driver::{self, sys};
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;

/// The fatbin, aligned for the driver (it reads the header as 64-bit words).
#[repr(C, align(64))]
struct Aligned<T: ?Sized>(T);

static FATBIN: &Aligned<[u8]> = &Aligned(*include_bytes!("../../kernels/nvcam_kernels.fatbin"));

/// The kernels only tests load (`kernels/test/`), in a fatbin of their own that release builds
/// do not carry.
#[cfg(feature = "test-hooks")]
static TEST_FATBIN: &Aligned<[u8]> = &Aligned(*include_bytes!("../../kernels/test/nvcam_test_kernels.fatbin"));

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

/// Whether the box filter stages an item through shared memory: `tiled_scale` in the kernel
/// source, which decides (where it says no, no shared memory is given). Footprints of more than
/// 36 luma samples per output pixel, and of 16 to 36 with a fractional width; the measurements
/// are beside the kernel's.
fn tiled_scale(it: &KernelItem) -> bool {
    let f = it.sx * it.sy;
    f > 36.0 || (f >= 16.0 && it.sx != it.sx.floor())
}
const BATCH: Shape = Shape { px: 2, rows: 1 };
const P016: Shape = Shape { px: 2, rows: 1 };

/// The most dynamic shared memory a box-filter launch asks for (`area_tiled` in the kernel
/// source stages a block's footprint there): 4096x2160 into 320x320 bounds a block of
/// `_area_tiled` at about 71 KiB. Beyond it (or the GPU's opt-in limit) the blocks filter per
/// pixel, with the same values.
const AREA_SMEM_MAX: u32 = 100 * 1024;

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

/// The kernels of one device's primary context.
pub(crate) struct Kernels {
    dev: Arc<Device>,
    module: sys::CUmodule,
    /// `nvcam_convert_same` (8-bit formats), `_same_float`, `_bilinear`, `_area`.
    convert: [sys::CUfunction; 4],
    /// `nvcam_convert_area_tiled` and `_area4` (4 rows a thread): the box filter of large
    /// footprints through shared memory; `_batch_tiled`: batches holding such items. The
    /// per-pixel kernels above keep the code they had without it (small footprints ran 0.02-0.04
    /// of a copy's speed slower in one kernel with both).
    area_tiled: sys::CUfunction,
    area4: sys::CUfunction,
    batch_tiled: sys::CUfunction,
    /// Streaming multiprocessors: `area4` only where its blocks fill them twice.
    sm_count: u32,
    /// `nvcam_convert_batch`: up to [`BATCH_PER_LAUNCH`] items, any mode each.
    batch: sys::CUfunction,
    /// `nvcam_convert_p016` and `nvcam_convert_batch_p016`: P016 frames, any mode (the kernels
    /// above read NV12 bytes; these read 16-bit samples).
    p016: sys::CUfunction,
    batch_p016: sys::CUfunction,
    /// The dynamic shared memory the tiled kernels (`_area_tiled`, `_area4`, `_batch_tiled`) may be
    /// given: the smaller of [`AREA_SMEM_MAX`] and the GPU's opt-in limit per block.
    area_smem_cap: u32,
    /// The test hooks' slow consumer, from [`TEST_FATBIN`]'s module.
    #[cfg(feature = "test-hooks")]
    test_module: sys::CUmodule,
    #[cfg(feature = "test-hooks")]
    spin_copy: sys::CUfunction,
}

// SAFETY: module and function handles are driver handles usable from any thread with their
// context pushed.
unsafe impl Send for Kernels {}
// SAFETY: launching is thread-safe in the driver; the handles are never mutated.
unsafe impl Sync for Kernels {}

/// Test hooks: the fatbin file `NVCAM_KERNELS_FATBIN` names, instead of the embedded one (kernel
/// tuning on a GPU machine compares builds of `kernels/` without rebuilding the library). Read
/// once and kept for the process's life, like the embedded image (tools such as
/// compute-sanitizer may read a module's image after the load), as 8-byte words (the driver
/// reads the header as 64-bit words).
#[cfg(feature = "test-hooks")]
fn fatbin_override() -> Result<Option<&'static [u64]>> {
    static IMAGE: std::sync::OnceLock<std::result::Result<Option<Vec<u64>>, String>> = std::sync::OnceLock::new();
    let image = IMAGE.get_or_init(|| {
        let Some(path) = std::env::var_os("NVCAM_KERNELS_FATBIN") else { return Ok(None) };
        let bytes = std::fs::read(&path).map_err(|e| format!("NVCAM_KERNELS_FATBIN {}: {e}", path.to_string_lossy()))?;
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (w, b) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            *w = u64::from_ne_bytes(a);
        }
        log::warn!("conversion kernels from {} ({} bytes, NVCAM_KERNELS_FATBIN), not the embedded fatbin", path.to_string_lossy(), bytes.len());
        Ok(Some(words))
    });
    match image {
        Ok(w) => Ok(w.as_deref()),
        Err(e) => Err(Error::internal(e.clone())),
    }
}

impl Kernels {
    fn load(dev: &Arc<Device>) -> Result<Kernels> {
        #[cfg(feature = "test-hooks")]
        let image = fatbin_override()?.map_or(FATBIN.0.as_ptr() as *const c_void, |w| w.as_ptr() as *const c_void);
        #[cfg(not(feature = "test-hooks"))]
        let image = FATBIN.0.as_ptr() as *const c_void;
        let _g = dev.push()?;
        let module = load_module(image)?;
        #[cfg(feature = "test-hooks")]
        let test_module = load_module(TEST_FATBIN.0.as_ptr() as *const c_void)?;
        let get_in = |module: sys::CUmodule, name: &std::ffi::CStr| -> Result<sys::CUfunction> {
            // SAFETY: a module just loaded, context current.
            Ok(unsafe { driver::module::get_function(module, name) }?)
        };
        let get = |name: &std::ffi::CStr| get_in(module, name);
        let convert = [get(c"nvcam_convert_same")?, get(c"nvcam_convert_same_float")?, get(c"nvcam_convert_bilinear")?, get(c"nvcam_convert_area")?];
        let batch = get(c"nvcam_convert_batch")?;
        let area_tiled = get(c"nvcam_convert_area_tiled")?;
        let area4 = get(c"nvcam_convert_area4")?;
        let batch_tiled = get(c"nvcam_convert_batch_tiled")?;
        let area_smem_cap = allow_dynamic_smem(dev, &[area_tiled, area4, batch_tiled]);
        let sm_count = sm_count(dev);
        let k = Kernels {
            dev: dev.clone(),
            module,
            convert,
            area_tiled,
            area4,
            batch_tiled,
            sm_count,
            batch,
            area_smem_cap,
            p016: get(c"nvcam_convert_p016")?,
            batch_p016: get(c"nvcam_convert_batch_p016")?,
            #[cfg(feature = "test-hooks")]
            test_module,
            #[cfg(feature = "test-hooks")]
            spin_copy: get_in(test_module, c"nvcam_test_spin_copy")?,
        };
        log::info!("GPU {}: conversion kernels loaded ({} bytes of fatbin)", dev.ordinal, FATBIN.0.len());
        Ok(k)
    }

    /// A kernel of the fatbin outside the conversion family, by name (nvJPEG's chroma packing):
    /// its user looks it up once and keeps the handle, valid while the library runs.
    pub(crate) fn function(&self, name: &std::ffi::CStr) -> Result<sys::CUfunction> {
        let _g = self.dev.push()?;
        // SAFETY: our module, context current (guard).
        Ok(unsafe { driver::module::get_function(self.module, name) }?)
    }

    /// Enqueues one conversion on `stream`.
    ///
    /// # Safety
    /// The addresses in `p` are device memory of this context, valid for the planned reads and
    /// writes until the work completes; `stream` is a stream of this context (or 0).
    pub(crate) unsafe fn launch(&self, p: &KernelParams, stream: sys::CUstream) -> Result<()> {
        let float = p.c.format >= PixelFormat::RgbF32.code();
        let (f, shape) = match (p.depth(), p.mode()) {
            // One kernel for every mode: the per-mode ones read NV12 bytes.
            (Depth::Sixteen, _) => (self.p016, P016),
            (Depth::Eight, Mode::Same) if float => (self.convert[1], SAMEF),
            (Depth::Eight, Mode::Same) => (self.convert[0], SAME8),
            (Depth::Eight, Mode::Bilinear) => (self.convert[2], RESIZE),
            (Depth::Eight, Mode::Area) => (self.convert[3], AREA),
        };
        let (f, shape, smem) = match (p.depth(), p.mode()) {
            (Depth::Eight, Mode::Area) => self.area_launch(&p.it),
            _ => (f, shape, 0),
        };
        let mut block = *p;
        // SAFETY: the kernel takes one parameter of exactly `KernelParams`'s layout (asserted on
        // both sides); memory validity: this function's contract.
        unsafe { self.enqueue(f, &mut block as *mut KernelParams as *mut c_void, p.c.out_w, p.c.out_h, shape, 1, smem, stream) }
    }

    /// Enqueues `b.items[..n]` (1 ..= [`BATCH_PER_LAUNCH`], all of one sample width: NV12 and
    /// P016 items have kernels of their own) as one launch on `stream`.
    ///
    /// # Safety
    /// As [`Kernels::launch`], for every item.
    pub(crate) unsafe fn launch_batch(&self, b: &BatchParams, n: usize, stream: sys::CUstream) -> Result<()> {
        if n == 0 || n > BATCH_PER_LAUNCH {
            return Err(Error::internal(format!("a batch launch of {n} items")));
        }
        let depth = b.items[0].depth();
        if b.items[..n].iter().any(|it| it.depth() != depth) {
            return Err(Error::internal("a batch launch mixing NV12 and P016 items"));
        }
        let (f, shape, smem) = match depth {
            Depth::Eight => match self.smem_for(BATCH, &b.items[..n]) {
                0 => (self.batch, BATCH, 0),
                smem => (self.batch_tiled, BATCH, smem),
            },
            Depth::Sixteen => (self.batch_p016, P016, 0),
        };
        let mut block = *b;
        // SAFETY: the kernel takes one parameter of exactly `BatchParams`'s layout (asserted on
        // both sides) and reads items 0..n (grid z); memory validity: this function's contract.
        unsafe { self.enqueue(f, &mut block as *mut BatchParams as *mut c_void, b.c.out_w, b.c.out_h, shape, n as u32, smem, stream) }
    }

    /// The dynamic shared memory for a launch of these items: what the largest box-filter
    /// footprint among them needs, or 0 (every block filters per pixel) when none is a box
    /// filter the kernel stages or that is more than the kernels may have.
    fn smem_for(&self, shape: Shape, items: &[KernelItem]) -> u32 {
        let staged = |it: &&KernelItem| it.mode == Mode::Area as u32 && tiled_scale(it);
        let need = items.iter().filter(staged).map(|it| area_smem(shape, it.sx, it.sy)).max().unwrap_or(0);
        if need <= self.area_smem_cap {
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
    fn area_launch(&self, it: &KernelItem) -> (sys::CUfunction, Shape, u32) {
        let item = std::slice::from_ref(it);
        let blocks4 = (it.img_w.max(0) as u32).div_ceil(BLOCK.0 * AREA4.px) * (it.img_h.max(0) as u32).div_ceil(BLOCK.1 * AREA4.rows);
        if blocks4 >= 2 * self.sm_count {
            let smem = self.smem_for(AREA4, item);
            if smem > 0 {
                return (self.area4, AREA4, smem);
            }
        }
        match self.smem_for(AREA, item) {
            0 => (self.convert[3], AREA, 0),
            smem => (self.area_tiled, AREA, smem),
        }
    }

    /// # Safety
    /// `f` takes one parameter, `*param`, and the launch is valid (the callers' contracts).
    #[allow(clippy::too_many_arguments)]
    unsafe fn enqueue(&self, f: sys::CUfunction, param: *mut c_void, out_w: i32, out_h: i32, shape: Shape, items: u32, smem: u32, stream: sys::CUstream) -> Result<()> {
        let _g = self.dev.push()?;
        let mut args = [param];
        let gx = (out_w as u32).div_ceil(BLOCK.0 * shape.px);
        let gy = (out_h as u32).div_ceil(BLOCK.1 * shape.rows);
        #[cfg(feature = "test-hooks")]
        LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: the caller's contract; the driver copies the parameter before returning.
        Ok(unsafe { driver::module::launch_kernel(f, (gx, gy, items), (BLOCK.0, BLOCK.1, 1), smem, stream, &mut args) }.map_err(|e| e.during("nvcam_convert"))?)
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our module, unloaded once at shutdown, after every frame was released.
            driver::ok_or_logged(unsafe { driver::module::unload(self.module) });
            // SAFETY: as above, the test kernels' module.
            #[cfg(feature = "test-hooks")]
            driver::ok_or_logged(unsafe { driver::module::unload(self.test_module) });
        }
    }
}

/// Loads a fatbin into the current context.
fn load_module(image: *const c_void) -> Result<sys::CUmodule> {
    // SAFETY: the caller's context is current; the image is a complete fatbin, 8-byte aligned (64
    // for the embedded ones) and 'static.
    unsafe { driver::module::load_data(image) }
        .map_err(|e| Error::from(e.during("nvcam kernels")))
        .map_err(|e| Error::new(e.kind, format!("{} (the driver may be older than the kernels need: R450 for SASS up to sm_90, R520 to JIT newer GPUs)", e.msg)))
}

/// The device's streaming multiprocessors (1 if the driver does not say).
fn sm_count(dev: &Arc<Device>) -> u32 {
    // The ordinal is an open device's.
    let n = driver::ctx::device_get(dev.ordinal).and_then(|d| driver::ctx::device_attribute(d, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    match n {
        Ok(n) => n.max(1) as u32,
        Err(_) => 1,
    }
}

/// Lets `fns` be launched with up to the returned bytes of dynamic shared memory: the smaller of
/// [`AREA_SMEM_MAX`] and the GPU's opt-in limit per block (48 KiB without opting in, which every
/// GPU allows). A driver that refuses leaves the default, 48 KiB. The caller's context is current.
fn allow_dynamic_smem(dev: &Arc<Device>, fns: &[sys::CUfunction]) -> u32 {
    use sys::CUdevice_attribute as D;
    use sys::CUfunction_attribute as F;
    // The ordinal is an open device's.
    let optin = driver::ctx::device_get(dev.ordinal).and_then(|d| driver::ctx::device_attribute(d, D::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    let default = 48 * 1024;
    let cap = match optin {
        Ok(optin) => (optin.max(0) as u32).min(AREA_SMEM_MAX),
        Err(_) => default,
    };
    if cap <= default {
        return cap.min(default);
    }
    for &f in fns {
        // SAFETY: a function of the module loaded in this (current) context; sets one attribute.
        if unsafe { driver::module::set_attribute(f, F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cap as i32) }.is_err() {
            return default;
        }
    }
    cap
}

static KERNELS: Mutex<Vec<Option<Arc<Kernels>>>> = Mutex::new(Vec::new());

/// The device's kernels, loaded on first use.
pub(crate) fn kernels(dev: &Arc<Device>) -> Result<Arc<Kernels>> {
    let i = dev.ordinal as usize;
    let mut t = KERNELS.lock();
    if t.len() <= i {
        t.resize(i + 1, None);
    }
    if let Some(k) = &t[i] {
        return Ok(k.clone());
    }
    let k = Arc::new(Kernels::load(dev)?);
    t[i] = Some(k.clone());
    Ok(k)
}

/// Library shutdown: the modules go before the contexts are released.
pub(crate) fn shutdown() {
    let kernels: Vec<_> = KERNELS.lock().drain(..).flatten().collect();
    drop(kernels);
}

/// Test hook: a kernel on `stream` that spins `cycles` clocks, then copies `n` bytes from `src`
/// to `dst` (device addresses on GPU `device`): the slow consumer of the stream hand-off tests.
#[cfg(feature = "test-hooks")]
pub fn spin_copy(device: i32, src: u64, dst: u64, n: u64, cycles: i64, stream: u64) -> Result<()> {
    let dev = super::device(device)?;
    let k = kernels(&dev)?;
    let _g = dev.push()?;
    let (mut s, mut d, mut n, mut c) = (src, dst, n, cycles);
    let mut args = [&mut s as *mut u64 as *mut c_void, &mut d as *mut u64 as *mut c_void, &mut n as *mut u64 as *mut c_void, &mut c as *mut i64 as *mut c_void];
    // SAFETY: the kernel's four parameters are (u8*, u8*, u64, i64), given in order; the
    // caller (a test) owns both buffers of at least `n` bytes and the stream.
    Ok(unsafe { driver::module::launch_kernel(k.spin_copy, (64, 1, 1), (256, 1, 1), 0, stream as sys::CUstream, &mut args) }.map_err(|e| e.during("spin_copy"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
