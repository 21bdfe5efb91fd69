//! Virtual memory management: physical allocations that another process can map through an OS
//! handle (a file descriptor on Linux, an NT handle on Windows), address ranges, and the
//! mappings between them. Each call needs its context current.

use super::sys::{CUdeviceptr, CUmemAccessDesc, CUmemAllocationGranularity_flags, CUmemAllocationHandleType, CUmemAllocationProp, CUmemGenericAllocationHandle};
use super::{check, DriverError};
use cudarc::driver::sys as raw;
use std::ffi::c_void;

/// `cuMemGetAllocationGranularity(MINIMUM)`: what every size and offset of an allocation made
/// with `prop` must be a multiple of.
pub(crate) fn granularity(prop: &CUmemAllocationProp) -> Result<usize, DriverError> {
    let mut g = 0usize;
    // SAFETY: reads the properties, writes one size.
    check("cuMemGetAllocationGranularity", unsafe {
        raw::cuMemGetAllocationGranularity(&mut g, prop, CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    })?;
    Ok(g)
}

/// `cuMemCreate`: `bytes` (a multiple of the granularity) of physical memory.
pub(crate) fn create(bytes: usize, prop: &CUmemAllocationProp) -> Result<CUmemGenericAllocationHandle, DriverError> {
    let mut h: CUmemGenericAllocationHandle = 0;
    // SAFETY: reads the properties (whose metadata pointer, where set, the caller keeps alive for
    // the call), writes one handle.
    check("cuMemCreate", unsafe { raw::cuMemCreate(&mut h, bytes, prop, 0) })?;
    Ok(h)
}

/// `cuMemRelease`.
///
/// # Safety
/// `h` is an allocation handle of ours, released once. Mappings of it keep the memory alive.
pub(crate) unsafe fn release(h: CUmemGenericAllocationHandle) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemRelease", unsafe { raw::cuMemRelease(h) })
}

/// `cuMemAddressReserve`: `bytes` of address space, at the driver's choice of address.
pub(crate) fn address_reserve(bytes: usize) -> Result<CUdeviceptr, DriverError> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: writes one address; no hint, default alignment, no flags.
    check("cuMemAddressReserve", unsafe { raw::cuMemAddressReserve(&mut p, bytes, 0, 0, 0) })?;
    Ok(p)
}

/// `cuMemAddressFree`.
///
/// # Safety
/// `p` and `bytes` are one reservation of ours, exactly as reserved, with nothing mapped in it
/// any more, freed once.
pub(crate) unsafe fn address_free(p: CUdeviceptr, bytes: usize) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemAddressFree", unsafe { raw::cuMemAddressFree(p, bytes) })
}

/// `cuMemMap`: the first `bytes` of allocation `h` at `p`.
///
/// # Safety
/// `p..p + bytes` lies inside a reservation of ours with nothing mapped there; `h` is a live
/// allocation handle. (A size past the allocation's end is an error the driver returns.)
pub(crate) unsafe fn map(p: CUdeviceptr, bytes: usize, h: CUmemGenericAllocationHandle) -> Result<(), DriverError> {
    // SAFETY: the caller's contract; offset 0, no flags.
    check("cuMemMap", unsafe { raw::cuMemMap(p, bytes, 0, h, 0) })
}

/// `cuMemUnmap`.
///
/// # Safety
/// `p..p + bytes` is one mapping of ours, unmapped once, that no work reads or writes any more
/// (its fences completed).
pub(crate) unsafe fn unmap(p: CUdeviceptr, bytes: usize) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemUnmap", unsafe { raw::cuMemUnmap(p, bytes) })
}

/// `cuMemSetAccess` with one descriptor.
///
/// # Safety
/// `p..p + bytes` is mapped (by us).
pub(crate) unsafe fn set_access(p: CUdeviceptr, bytes: usize, desc: &CUmemAccessDesc) -> Result<(), DriverError> {
    // SAFETY: the caller's contract; one descriptor, read during the call.
    check("cuMemSetAccess", unsafe { raw::cuMemSetAccess(p, bytes, desc, 1) })
}

/// `cuMemExportToShareableHandle`: a new OS handle of `kind` to allocation `h`, written through
/// `out` (an `int` for a file descriptor, a `HANDLE` for an NT handle). The caller owns it.
///
/// # Safety
/// `h` is a live allocation handle made with `kind` among its requested handle types; `out`
/// points at a value of the handle's size.
pub(crate) unsafe fn export(out: *mut c_void, h: CUmemGenericAllocationHandle, kind: CUmemAllocationHandleType) -> Result<(), DriverError> {
    // SAFETY: the caller's contract; no flags.
    check("cuMemExportToShareableHandle", unsafe { raw::cuMemExportToShareableHandle(out, h, kind, 0) })
}

/// `cuMemImportFromShareableHandle`: an allocation handle of ours for the memory behind
/// `os_handle` (a file descriptor as a pointer-sized number, or an NT handle). The OS handle
/// stays the caller's to close.
///
/// # Safety
/// `os_handle` is an open handle of `kind` for the duration of the call.
pub(crate) unsafe fn import(os_handle: *mut c_void, kind: CUmemAllocationHandleType) -> Result<CUmemGenericAllocationHandle, DriverError> {
    let mut h: CUmemGenericAllocationHandle = 0;
    // SAFETY: the caller's contract; writes one handle.
    check("cuMemImportFromShareableHandle", unsafe { raw::cuMemImportFromShareableHandle(&mut h, os_handle, kind) })?;
    Ok(h)
}
