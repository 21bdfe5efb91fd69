//! Devices, primary contexts and the calling thread's context stack.

use super::sys::{CUcontext, CUdevice, CUdevice_attribute};
use super::{check, DriverError};
use cudarc::driver::sys as raw;
use cudarc::driver::CudaContext;
use std::ffi::{c_char, c_int, c_uint, CStr};
use std::sync::Arc;

/// `cuDeviceGetCount`.
pub(crate) fn device_count() -> Result<c_int, DriverError> {
    let mut n = 0;
    // SAFETY: writes one integer.
    check("cuDeviceGetCount", unsafe { raw::cuDeviceGetCount(&mut n) })?;
    Ok(n)
}

/// `cuDeviceGet`: the device of `ordinal`.
pub(crate) fn device_get(ordinal: c_int) -> Result<CUdevice, DriverError> {
    let mut dev: CUdevice = 0;
    // SAFETY: writes one device handle; a bad ordinal is an error the driver returns.
    check("cuDeviceGet", unsafe { raw::cuDeviceGet(&mut dev, ordinal) })?;
    Ok(dev)
}

/// `cuDeviceGetAttribute`.
pub(crate) fn device_attribute(dev: CUdevice, attr: CUdevice_attribute) -> Result<c_int, DriverError> {
    let mut v: c_int = 0;
    // SAFETY: writes one integer; a bad device is an error the driver returns.
    check("cuDeviceGetAttribute", unsafe { raw::cuDeviceGetAttribute(&mut v, attr, dev) })?;
    Ok(v)
}

/// `cuDeviceGetName`.
pub(crate) fn device_name(dev: CUdevice) -> Result<String, DriverError> {
    let mut buf = [0 as c_char; 128];
    // SAFETY: writes at most `buf.len()` bytes, NUL-terminated, into `buf`.
    check("cuDeviceGetName", unsafe { raw::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
    // SAFETY: the driver NUL-terminated the name inside `buf`.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

/// `cuDeviceGetPCIBusId`: the device's PCI address (`0000:1b:00.0`), by which NVML finds it.
pub(crate) fn pci_bus_id(dev: CUdevice) -> Result<String, DriverError> {
    let mut buf = [0 as c_char; 32];
    // SAFETY: writes at most `buf.len()` bytes, NUL-terminated, into `buf`.
    check("cuDeviceGetPCIBusId", unsafe { raw::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, dev) })?;
    // SAFETY: the driver NUL-terminated the address inside `buf`.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

/// `cuDevicePrimaryCtxGetState`: (flags, active).
pub(crate) fn primary_ctx_state(dev: CUdevice) -> Result<(c_uint, bool), DriverError> {
    let (mut flags, mut active): (c_uint, c_int) = (0, 0);
    // SAFETY: writes two integers; a bad device is an error the driver returns.
    check("cuDevicePrimaryCtxGetState", unsafe { raw::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active) })?;
    Ok((flags, active != 0))
}

/// `cuDevicePrimaryCtxSetFlags`.
pub(crate) fn primary_ctx_set_flags(dev: CUdevice, flags: c_uint) -> Result<(), DriverError> {
    // SAFETY: plain values; the driver refuses flags it does not take.
    check("cuDevicePrimaryCtxSetFlags", unsafe { raw::cuDevicePrimaryCtxSetFlags_v2(dev, flags) })
}

/// A device's primary context, retained (through cudarc's safe layer) until dropped. Both the
/// retain and the release bind the context with cuCtxSetCurrent and never restore the caller's:
/// the caller saves and restores its current context around [`Primary::retain`] and the drop.
pub(crate) struct Primary(Arc<CudaContext>);

impl Primary {
    pub(crate) fn retain(ordinal: usize) -> Result<Primary, DriverError> {
        let c = CudaContext::new(ordinal).map_err(|e| DriverError::new("cuDevicePrimaryCtxRetain (CudaContext::new)", e.0 as u32))?;
        // cudarc's event tracking records and waits on events for every use of its slices, and
        // its first stream would synchronize the context: off, we order our own work.
        // SAFETY: no cudarc slice or stream of this context exists yet (we never make any).
        unsafe { c.disable_event_tracking() };
        Ok(Primary(c))
    }

    pub(crate) fn raw(&self) -> CUcontext {
        self.0.cu_ctx()
    }
}

/// `cuCtxGetCurrent`: the calling thread's current context (null if none).
pub(crate) fn get_current() -> Result<CUcontext, DriverError> {
    let mut c: CUcontext = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuCtxGetCurrent", unsafe { raw::cuCtxGetCurrent(&mut c) })?;
    Ok(c)
}

/// `cuCtxSetCurrent`.
///
/// # Safety
/// `c` is null or a live context.
pub(crate) unsafe fn set_current(c: CUcontext) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuCtxSetCurrent", unsafe { raw::cuCtxSetCurrent(c) })
}

/// `cuCtxPushCurrent`.
///
/// # Safety
/// `c` is a live context that stays alive until the matching [`pop_current`].
pub(crate) unsafe fn push_current(c: CUcontext) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuCtxPushCurrent", unsafe { raw::cuCtxPushCurrent_v2(c) })
}

/// `cuCtxPopCurrent`: the context it popped.
///
/// # Safety
/// The top of this thread's context stack is the caller's own push.
pub(crate) unsafe fn pop_current() -> Result<CUcontext, DriverError> {
    let mut c: CUcontext = std::ptr::null_mut();
    // SAFETY: the caller's contract; writes one handle.
    check("cuCtxPopCurrent", unsafe { raw::cuCtxPopCurrent_v2(&mut c) })?;
    Ok(c)
}
