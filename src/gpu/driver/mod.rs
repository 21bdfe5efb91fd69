//! The CUDA driver API as the library calls it: one thin function per entry point, each returning
//! `Result<_, DriverError>` (in the manner of cudarc's `driver::result`). This module, and
//! NVDEC's sibling layer (`crate::gpu::nvcuvid::api`, over libnvcuvid), are the only places a driver
//! function is called; the rest of `gpu` works with their results and the owners built on them
//! (`context`: device, streams, events, copies; `memory`, `staging`, `kernels`, `nvdec`).
//!
//! This file holds what every call shares (loading the library, [`DriverError`], [`check`]) and
//! modules and kernel launches; `ctx`, `memory` and `stream` hold the rest, one file each.
//!
//! The driver library (libcuda, nvcuda.dll on Windows) is cudarc's, opened at run time on first
//! use: nothing links against it, so the crate loads and runs its CPU path on machines without
//! it. [`library_present`] must have said yes before anything else here is called (cudarc's
//! loader panics on a missing library); `super::probe` sees to that.
//!
//! A function is `unsafe` where the driver would act on a handle or address the caller must
//! vouch for (a live stream, event, module, memory range); functions that only create handles
//! or read plain values are safe (a missing current context is an error the driver returns).
//! Every call site's `// SAFETY:` comment says why its handles are alive.
//!
//! A failure is a [`DriverError`]: the call's name and the `CUresult` as a number, named by the
//! driver's own `cuGetErrorName`. It becomes the library's error in one place, the `From` impl
//! below.

pub(crate) mod ctx;
pub(crate) mod memory;
pub(crate) mod stream;
pub(crate) mod vmm;

use crate::status::{Error, ErrorKind};
use cudarc::driver::sys as raw;
use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The driver's types and constants (cudarc's bindings). Its functions are called only through
/// this layer.
pub(crate) mod sys {
    pub(crate) use cudarc::driver::sys::{
        CUcontext, CUctx_flags, CUdevice, CUdevice_attribute, CUdeviceptr, CUevent, CUevent_flags, CUfunction, CUfunction_attribute,
        CUmemAccessDesc, CUmemAccess_flags, CUmemAllocationGranularity_flags, CUmemAllocationHandleType, CUmemAllocationProp, CUmemAllocationProp_st__bindgen_ty_1,
        CUmemAllocationType,
        CUmemGenericAllocationHandle, CUmemLocation, CUmemLocationType, CUmemorytype, CUmodule, CUpointer_attribute, CUstream, CUstream_flags,
        CUDA_MEMCPY2D, CUDA_MEMCPY3D_PEER, CU_MEMHOSTALLOC_PORTABLE,
    };
}

/// `CUDA_SUCCESS`.
pub(crate) const SUCCESS: u32 = 0;
/// `CUDA_ERROR_NOT_READY`: an event or stream query's "not yet".
pub(crate) const NOT_READY: u32 = 600;
/// `CUDA_ERROR_UNKNOWN`.
pub(crate) const UNKNOWN: u32 = 999;
/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub(crate) const OUT_OF_MEMORY: u32 = 2;

/// A failed driver (or NVDEC) call: its name and the `CUresult` it returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DriverError {
    /// The `CUresult` as a number: NVDEC returns it raw, and a value a later driver adds must
    /// not become an invalid Rust enum.
    pub code: u32,
    /// The call, with what it was for where the caller said so (`cuStreamWaitEvent(frame ready)`).
    pub call: Cow<'static, str>,
}

impl DriverError {
    pub(crate) fn new(call: impl Into<Cow<'static, str>>, code: u32) -> DriverError {
        DriverError { code, call: call.into() }
    }

    /// The same failure, its call named with what it was for: `call(what)`.
    pub(crate) fn during(self, what: &str) -> DriverError {
        DriverError { call: format!("{}({what})", self.call).into(), ..self }
    }

    /// The same failure under another call text (one that says more than the entry point).
    pub(crate) fn named(self, call: impl Into<Cow<'static, str>>) -> DriverError {
        DriverError { call: call.into(), ..self }
    }

    /// CUDA's name for the code (`CUDA_ERROR_OUT_OF_MEMORY`), from the driver; `CUresult <n>`
    /// where the driver has no name for it or is not loaded.
    pub(crate) fn name(&self) -> String {
        error_name(self.code).unwrap_or_else(|| format!("CUresult {}", self.code))
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.call, self.name())
    }
}

impl std::error::Error for DriverError {}

/// The one conversion of a driver failure into the library's error. It is logged here, where it
/// became one (so a failure is in the log at the call that failed, even where a caller adds to
/// the message or drops the error).
impl From<DriverError> for Error {
    fn from(e: DriverError) -> Error {
        let kind = match e.code {
            2 => ErrorKind::OutOfMemory,
            100 | 101 => ErrorKind::NoDevice,
            801 => ErrorKind::Unsupported,
            _ => ErrorKind::Cuda,
        };
        let err = Error::new(kind, e.to_string());
        log::warn!("{err}");
        err
    }
}

/// Whether `r` succeeded. A failure nobody can act on (a free, a destroy in a drop) is converted
/// into the library's error, which logs it, and let go.
pub(crate) fn ok_or_logged<T>(r: Result<T, DriverError>) -> bool {
    r.map_err(Error::from).is_ok()
}

/// `Ok` for `CUDA_SUCCESS`, else the failure of `call`.
pub(crate) fn check(call: &'static str, r: raw::CUresult) -> Result<(), DriverError> {
    check_code(call, r as u32)
}

/// [`check`] for a `CUresult` returned as a number (NVDEC's entry points).
pub(crate) fn check_code(call: &'static str, r: u32) -> Result<(), DriverError> {
    if r == SUCCESS {
        Ok(())
    } else {
        Err(DriverError::new(call, r))
    }
}

/// Set once cudarc's loader found the driver library: from then on its entry points resolve.
static LOADED: AtomicBool = AtomicBool::new(false);

/// Whether the driver library (libcuda, nvcuda.dll) can be opened. Until this said yes, nothing
/// else here may be called.
pub(crate) fn library_present() -> bool {
    // SAFETY: cudarc's loader only tries to open the library by its usual names.
    let present = unsafe { raw::is_culib_present() };
    if present {
        LOADED.store(true, Ordering::Release);
    }
    present
}

/// `cuGetErrorName` with the code as a number (cudarc's binding takes the enum, which a code a
/// later driver adds would make invalid), resolved from cudarc's handle on the driver library.
type GetErrorName = unsafe extern "C" fn(u32, *mut *const c_char) -> u32;

fn error_name(code: u32) -> Option<String> {
    static F: OnceLock<Option<GetErrorName>> = OnceLock::new();
    if !LOADED.load(Ordering::Acquire) {
        return None;
    }
    let f = (*F.get_or_init(|| {
        // SAFETY: the library is present (checked above), so cudarc's loader returns it; the
        // type is the header's prototype of cuGetErrorName with CUresult as its 32-bit value.
        unsafe { raw::culib().get::<GetErrorName>(b"cuGetErrorName\0").ok().map(|s| *s) }
    }))?;
    let mut s: *const c_char = std::ptr::null();
    // SAFETY: writes a pointer to a static string (or leaves it null for an unknown code).
    let r = unsafe { f(code, &mut s) };
    if r != SUCCESS || s.is_null() {
        return None;
    }
    // SAFETY: the driver's NUL-terminated static string.
    Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// `cuInit(0)`.
pub(crate) fn init() -> Result<(), DriverError> {
    // SAFETY: no arguments to vouch for; the library is present (module docs).
    check("cuInit", unsafe { raw::cuInit(0) })
}

/// `cuDriverGetVersion`: `1000 * major + 10 * minor`.
pub(crate) fn driver_version() -> Result<c_int, DriverError> {
    let mut v = 0;
    // SAFETY: writes one integer.
    check("cuDriverGetVersion", unsafe { raw::cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

// Modules, their functions, and kernel launches: here, beside `check`, because a launch is the
// one driver call every conversion makes. Each needs its context current.

/// `cuModuleLoadData`.
///
/// # Safety
/// `image` is a complete module image (cubin, fatbin or PTX) suitably aligned (8 bytes).
pub(crate) unsafe fn load_data(image: *const c_void) -> Result<sys::CUmodule, DriverError> {
    let mut m: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the caller's contract; writes one handle.
    check("cuModuleLoadData", unsafe { raw::cuModuleLoadData(&mut m, image) })?;
    Ok(m)
}

/// `cuModuleGetFunction`.
///
/// # Safety
/// `m` is a live module of the current context.
pub(crate) unsafe fn get_function(m: sys::CUmodule, name: &CStr) -> Result<sys::CUfunction, DriverError> {
    let mut f: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: the caller's contract; writes one handle.
    check("cuModuleGetFunction", unsafe { raw::cuModuleGetFunction(&mut f, m, name.as_ptr()) })?;
    Ok(f)
}

/// `cuModuleUnload`.
///
/// # Safety
/// `m` is a live module of the current context, unloaded once, none of whose functions is used
/// any more.
pub(crate) unsafe fn unload(m: sys::CUmodule) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuModuleUnload", unsafe { raw::cuModuleUnload(m) })
}

/// `cuFuncSetAttribute`.
///
/// # Safety
/// `f` is a function of a live module of the current context.
pub(crate) unsafe fn set_attribute(f: sys::CUfunction, attr: sys::CUfunction_attribute, value: c_int) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuFuncSetAttribute", unsafe { raw::cuFuncSetAttribute(f, attr, value) })
}

/// `cuLaunchKernel` with `params` (no `extra`).
///
/// # Safety
/// `f` is a function of a live module of the current context, `s` a live stream of it (or 0);
/// `params` holds one pointer per kernel parameter, in order, each at a value of that
/// parameter's type (the driver copies them before returning); what the kernel reads and writes
/// stays valid until it has run on `s`.
pub(crate) unsafe fn launch_kernel(f: sys::CUfunction, grid: (c_uint, c_uint, c_uint), block: (c_uint, c_uint, c_uint), shared_bytes: c_uint, s: sys::CUstream, params: &mut [*mut c_void]) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuLaunchKernel", unsafe { raw::cuLaunchKernel(f, grid.0, grid.1, grid.2, block.0, block.1, block.2, shared_bytes, s, params.as_mut_ptr(), std::ptr::null_mut()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_failure_keeps_its_call_and_maps_to_the_library_code() {
        let e = DriverError::new("cuStreamWaitEvent", 2).during("frame ready");
        assert_eq!(e.call, "cuStreamWaitEvent(frame ready)");
        let err = Error::from(e.clone());
        assert_eq!(err.kind, ErrorKind::OutOfMemory);
        assert!(err.msg.starts_with("cuStreamWaitEvent(frame ready) failed: "), "{}", err.msg);
        assert_eq!(Error::from(DriverError::new("cuDeviceGet", 101)).kind, ErrorKind::NoDevice);
        assert_eq!(Error::from(DriverError::new("cuvidCreateDecoder", 801)).kind, ErrorKind::Unsupported);
        assert_eq!(Error::from(DriverError::new("cuEventRecord", 400)).kind, ErrorKind::Cuda);
    }

    #[test]
    fn an_error_is_named_by_the_driver_or_by_number() {
        // With the driver loaded its name comes from cuGetErrorName; without it (or for a code
        // it does not know) the number. Never a panic, never empty.
        let present = library_present();
        let initialised = present && init().is_ok();
        let n = DriverError::new("cuMemAlloc", 2).name();
        if !present {
            assert_eq!(n, "CUresult 2");
        } else if initialised {
            assert_eq!(n, "CUDA_ERROR_OUT_OF_MEMORY");
        } else {
            assert!(n == "CUDA_ERROR_OUT_OF_MEMORY" || n == "CUresult 2", "{n}");
        }
        assert_eq!(DriverError::new("cuMemAlloc", 0x7fff_fff0).name(), "CUresult 2147483632");
    }
}
