//! The embedded conversion kernels (`kernels/nvcam_kernels.fatbin`, built by
//! `scripts/build/build-kernels.sh`), loaded once per device with cuModuleLoadData and kept until
//! library shutdown: the module and its function handles. Launching them is `crate::convert::launch`.

use super::context::Device;
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

/// The most dynamic shared memory a box-filter launch asks for (`area_tiled` in the kernel
/// source stages a block's footprint there): 4096x2160 into 320x320 bounds a block of
/// `_area_tiled` at about 71 KiB. Beyond it (or the GPU's opt-in limit) the blocks filter per
/// pixel, with the same values.
const AREA_SMEM_MAX: u32 = 100 * 1024;

/// The kernels of one device's primary context.
pub(crate) struct Kernels {
    pub(crate) dev: Arc<Device>,
    module: sys::CUmodule,
    /// `nvcam_convert_same` (8-bit formats), `_same_float`, `_bilinear`, `_area`.
    pub(crate) convert: [sys::CUfunction; 4],
    /// `nvcam_convert_area_tiled` and `_area4` (4 rows a thread): the box filter of large
    /// footprints through shared memory; `_batch_tiled`: batches holding such items. The
    /// per-pixel kernels above keep the code they had without it (small footprints ran 0.02-0.04
    /// of a copy's speed slower in one kernel with both).
    pub(crate) area_tiled: sys::CUfunction,
    pub(crate) area4: sys::CUfunction,
    pub(crate) batch_tiled: sys::CUfunction,
    /// Streaming multiprocessors: `area4` only where its blocks fill them twice.
    pub(crate) sm_count: u32,
    /// `nvcam_convert_batch`: up to `BATCH_PER_LAUNCH` items, any mode each.
    pub(crate) batch: sys::CUfunction,
    /// `nvcam_convert_p016` and `nvcam_convert_batch_p016`: P016 frames, any mode (the kernels
    /// above read NV12 bytes; these read 16-bit samples).
    pub(crate) p016: sys::CUfunction,
    pub(crate) batch_p016: sys::CUfunction,
    /// The dynamic shared memory the tiled kernels (`_area_tiled`, `_area4`, `_batch_tiled`) may be
    /// given: the smaller of [`AREA_SMEM_MAX`] and the GPU's opt-in limit per block.
    pub(crate) area_smem_cap: u32,
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
        let Some(path) = crate::switches::Switch::KernelsFatbin.var_os() else { return Ok(None) };
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
            Ok(unsafe { driver::get_function(module, name) }?)
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
        Ok(unsafe { driver::get_function(self.module, name) }?)
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our module, unloaded once at shutdown, after every frame was released.
            driver::ok_or_logged(unsafe { driver::unload(self.module) });
            // SAFETY: as above, the test kernels' module.
            #[cfg(feature = "test-hooks")]
            driver::ok_or_logged(unsafe { driver::unload(self.test_module) });
        }
    }
}

/// Loads a fatbin into the current context.
fn load_module(image: *const c_void) -> Result<sys::CUmodule> {
    // SAFETY: the caller's context is current; the image is a complete fatbin, 8-byte aligned (64
    // for the embedded ones) and 'static.
    unsafe { driver::load_data(image) }
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
        if unsafe { driver::set_attribute(f, F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, cap as i32) }.is_err() {
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
    Ok(unsafe { driver::launch_kernel(k.spin_copy, (64, 1, 1), (256, 1, 1), 0, stream as sys::CUstream, &mut args) }.map_err(|e| e.during("spin_copy"))?)
}
