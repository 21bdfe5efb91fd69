//! Streams, events and host functions. Each call needs its context current (a missing one is an
//! error the driver returns).

use super::sys::{CUevent, CUstream, CUstream_flags};
use super::{check, DriverError, NOT_READY, SUCCESS};
use cudarc::driver::sys as raw;
use std::ffi::{c_uint, c_ulonglong};

/// `cuStreamCreate`.
pub(crate) fn create(flags: CUstream_flags) -> Result<CUstream, DriverError> {
    let mut s: CUstream = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuStreamCreate", unsafe { raw::cuStreamCreate(&mut s, flags as c_uint) })?;
    Ok(s)
}

/// `cuStreamDestroy`: returns at once; the driver frees the stream after its work is done.
///
/// # Safety
/// `s` is a live stream of the caller's, destroyed once.
pub(crate) unsafe fn destroy(s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuStreamDestroy", unsafe { raw::cuStreamDestroy_v2(s) })
}

/// `cuStreamSynchronize`.
///
/// # Safety
/// `s` is a live stream of the current context.
pub(crate) unsafe fn synchronize(s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuStreamSynchronize", unsafe { raw::cuStreamSynchronize(s) })
}

/// `cuStreamWaitEvent(s, e, 0)`: work enqueued on `s` later waits for `e`'s recorded work.
///
/// # Safety
/// `s` is a live stream of the current context (or 0, its legacy stream), `e` a live event (of
/// any context).
pub(crate) unsafe fn wait_event(s: CUstream, e: CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuStreamWaitEvent", unsafe { raw::cuStreamWaitEvent(s, e, 0) })
}

/// `cuStreamGetId`: the driver's id of `s`, never given to another stream (CUDA 12.0 drivers
/// and later).
///
/// # Safety
/// `s` is a live stream of the current context (or 0).
pub(crate) unsafe fn id(s: CUstream) -> Result<u64, DriverError> {
    let mut id: c_ulonglong = 0;
    // SAFETY: the caller's contract; writes `id`.
    check("cuStreamGetId", unsafe { raw::cuStreamGetId(s, &mut id) })?;
    Ok(id as u64)
}

/// `cuLaunchHostFunc`: `f(user)` runs on a driver thread once `s` reaches it.
///
/// # Safety
/// `s` is a live stream of the current context; `f` may be called with `user` from another
/// thread at any later time.
#[cfg(feature = "test-hooks")] // only the test hooks' stream delay uses it
pub(crate) unsafe fn launch_host_func(s: CUstream, f: unsafe extern "C" fn(*mut std::ffi::c_void), user: *mut std::ffi::c_void) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuLaunchHostFunc", unsafe { raw::cuLaunchHostFunc(s, Some(f), user) })
}

/// `cuEventCreate` with `flags` (`CUevent_flags` bits).
pub(crate) fn event_create(flags: c_uint) -> Result<CUevent, DriverError> {
    let mut e: CUevent = std::ptr::null_mut();
    // SAFETY: writes one handle.
    check("cuEventCreate", unsafe { raw::cuEventCreate(&mut e, flags) })?;
    Ok(e)
}

/// `cuEventRecord`.
///
/// # Safety
/// `e` is a live event and `s` a live stream (or 0) of the current context.
pub(crate) unsafe fn event_record(e: CUevent, s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuEventRecord", unsafe { raw::cuEventRecord(e, s) })
}

/// `cuEventQuery`: whether the work recorded last has completed (`CUDA_ERROR_NOT_READY` is
/// `false`, not an error). Never waits.
///
/// # Safety
/// `e` is a live event of the current context.
pub(crate) unsafe fn event_query(e: CUevent) -> Result<bool, DriverError> {
    // SAFETY: the caller's contract.
    match unsafe { raw::cuEventQuery(e) } as u32 {
        SUCCESS => Ok(true),
        NOT_READY => Ok(false),
        r => Err(DriverError::new("cuEventQuery", r)),
    }
}

/// `cuEventSynchronize`.
///
/// # Safety
/// `e` is a live event of the current context.
pub(crate) unsafe fn event_synchronize(e: CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuEventSynchronize", unsafe { raw::cuEventSynchronize(e) })
}

/// `cuEventDestroy`: safe while a record is pending (the driver releases the event once it
/// completes).
///
/// # Safety
/// `e` is a live event of the caller's, destroyed once.
pub(crate) unsafe fn event_destroy(e: CUevent) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuEventDestroy", unsafe { raw::cuEventDestroy_v2(e) })
}
