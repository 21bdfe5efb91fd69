//! Modules, their functions, and kernel launches. Each call needs its context current.

use super::sys::{CUfunction, CUfunction_attribute, CUmodule, CUstream};
use super::{check, DriverError};
use cudarc::driver::sys as raw;
use std::ffi::{c_int, c_uint, c_void, CStr};

/// `cuModuleLoadData`.
///
/// # Safety
/// `image` is a complete module image (cubin, fatbin or PTX) suitably aligned (8 bytes).
pub(crate) unsafe fn load_data(image: *const c_void) -> Result<CUmodule, DriverError> {
    let mut m: CUmodule = std::ptr::null_mut();
    // SAFETY: the caller's contract; writes one handle.
    check("cuModuleLoadData", unsafe { raw::cuModuleLoadData(&mut m, image) })?;
    Ok(m)
}

/// `cuModuleGetFunction`.
///
/// # Safety
/// `m` is a live module of the current context.
pub(crate) unsafe fn get_function(m: CUmodule, name: &CStr) -> Result<CUfunction, DriverError> {
    let mut f: CUfunction = std::ptr::null_mut();
    // SAFETY: the caller's contract; writes one handle.
    check("cuModuleGetFunction", unsafe { raw::cuModuleGetFunction(&mut f, m, name.as_ptr()) })?;
    Ok(f)
}

/// `cuModuleUnload`.
///
/// # Safety
/// `m` is a live module of the current context, unloaded once, none of whose functions is used
/// any more.
pub(crate) unsafe fn unload(m: CUmodule) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuModuleUnload", unsafe { raw::cuModuleUnload(m) })
}

/// `cuFuncSetAttribute`.
///
/// # Safety
/// `f` is a function of a live module of the current context.
pub(crate) unsafe fn set_attribute(f: CUfunction, attr: CUfunction_attribute, value: c_int) -> Result<(), DriverError> {
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
pub(crate) unsafe fn launch_kernel(f: CUfunction, grid: (c_uint, c_uint, c_uint), block: (c_uint, c_uint, c_uint), shared_bytes: c_uint, s: CUstream, params: &mut [*mut c_void]) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuLaunchKernel", unsafe { raw::cuLaunchKernel(f, grid.0, grid.1, grid.2, block.0, block.1, block.2, shared_bytes, s, params.as_mut_ptr(), std::ptr::null_mut()) })
}
