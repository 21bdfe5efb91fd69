//! The embedded conversion kernels (`kernels/nvcam_kernels.fatbin`, built by
//! `scripts/build-kernels.sh`), loaded once per device with cuModuleLoadData and kept until
//! library shutdown, and their launches.

use super::context::{ck, Device};
use crate::convert::params::KernelParams;
use crate::status::*;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;

/// The fatbin, aligned for the driver (it reads the header as 64-bit words).
#[repr(C, align(64))]
struct Aligned<T: ?Sized>(T);

static FATBIN: &Aligned<[u8]> = &Aligned(*include_bytes!("../../kernels/nvcam_kernels.fatbin"));

/// Threads per block: 32 wide (one warp per row segment, coalesced), 8 rows.
const BLOCK: (u32, u32) = (32, 8);

/// The kernels of one device's primary context.
pub(crate) struct Kernels {
    dev: Arc<Device>,
    module: sys::CUmodule,
    convert: sys::CUfunction,
    /// The test hooks' slow consumer (the kernel ships in the fatbin either way).
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    spin_copy: sys::CUfunction,
}

// SAFETY: module and function handles are driver handles usable from any thread with their
// context pushed.
unsafe impl Send for Kernels {}
// SAFETY: launching is thread-safe in the driver; the handles are never mutated.
unsafe impl Sync for Kernels {}

impl Kernels {
    fn load(dev: &Arc<Device>) -> Result<Kernels> {
        let _g = dev.push()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: our context is current (guard); the image is a complete fatbin, 64-byte aligned
        // and 'static.
        ck("cuModuleLoadData(nvcam kernels)", unsafe { sys::cuModuleLoadData(&mut module, FATBIN.0.as_ptr() as *const c_void) })
            .map_err(|e| Error::new(e.code, format!("{} (the driver may be older than the kernels need: R450 for SASS up to sm_90, R520 to JIT newer GPUs)", e.msg)))?;
        let get = |name: &std::ffi::CStr| -> Result<sys::CUfunction> {
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: the module just loaded, context current; writes one handle.
            ck("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) })?;
            Ok(f)
        };
        let k = Kernels { dev: dev.clone(), module, convert: get(c"nvcam_convert")?, spin_copy: get(c"nvcam_test_spin_copy")? };
        log::info!("GPU {}: conversion kernels loaded ({} bytes of fatbin)", dev.ordinal, FATBIN.0.len());
        Ok(k)
    }

    /// Enqueues one conversion on `stream`.
    ///
    /// # Safety
    /// The addresses in `p` are device memory of this context, valid for the planned reads and
    /// writes until the work completes; `stream` is a stream of this context (or 0).
    pub(crate) unsafe fn launch(&self, p: &KernelParams, stream: sys::CUstream) -> Result<()> {
        let _g = self.dev.push()?;
        let mut block = *p;
        let mut args = [&mut block as *mut KernelParams as *mut c_void];
        let gx = (p.out_w as u32).div_ceil(BLOCK.0);
        let gy = (p.out_h as u32).div_ceil(BLOCK.1);
        // SAFETY: the kernel takes one parameter of exactly `KernelParams`'s layout (asserted on
        // both sides); the driver copies it before returning. Memory validity: the contract.
        ck("cuLaunchKernel(nvcam_convert)", unsafe {
            sys::cuLaunchKernel(self.convert, gx, gy, 1, BLOCK.0, BLOCK.1, 1, 0, stream, args.as_mut_ptr(), std::ptr::null_mut())
        })
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our module, unloaded once at shutdown, after every frame was released.
            let _ = ck("cuModuleUnload", unsafe { sys::cuModuleUnload(self.module) });
        }
    }
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
pub fn spin_copy(device: i32, src: u64, dst: u64, n: u64, cycles: i64, stream: u64) -> std::result::Result<(), String> {
    let dev = super::device(device).map_err(|e| e.to_string())?;
    let k = kernels(&dev).map_err(|e| e.to_string())?;
    let _g = dev.push().map_err(|e| e.to_string())?;
    let (mut s, mut d, mut n, mut c) = (src, dst, n, cycles);
    let mut args = [&mut s as *mut u64 as *mut c_void, &mut d as *mut u64 as *mut c_void, &mut n as *mut u64 as *mut c_void, &mut c as *mut i64 as *mut c_void];
    // SAFETY: the kernel's four parameters are (u8*, u8*, u64, i64), given in order; the
    // caller (a test) owns both buffers of at least `n` bytes and the stream.
    ck("cuLaunchKernel(spin_copy)", unsafe {
        sys::cuLaunchKernel(k.spin_copy, 64, 1, 1, 256, 1, 1, 0, stream as sys::CUstream, args.as_mut_ptr(), std::ptr::null_mut())
    })
    .map_err(|e| e.to_string())
}

