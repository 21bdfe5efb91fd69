//! Device and pinned host memory, what the driver knows of an address, and copies. Each call
//! needs its context current.

use super::sys::{CUdeviceptr, CUpointer_attribute, CUstream, CUDA_MEMCPY2D, CUDA_MEMCPY3D_PEER, CU_MEMHOSTALLOC_PORTABLE};
use super::{check, DriverError};
use cudarc::driver::sys as raw;
use std::ffi::{c_uint, c_void};

/// `cuMemGetInfo`: (free, total) bytes.
pub(crate) fn get_info() -> Result<(usize, usize), DriverError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two sizes.
    check("cuMemGetInfo", unsafe { raw::cuMemGetInfo_v2(&mut free, &mut total) })?;
    Ok((free, total))
}

/// `cuMemAlloc`.
pub(crate) fn alloc(bytes: usize) -> Result<CUdeviceptr, DriverError> {
    let mut p: CUdeviceptr = 0;
    // SAFETY: writes one address.
    check("cuMemAlloc", unsafe { raw::cuMemAlloc_v2(&mut p, bytes) })?;
    Ok(p)
}

/// `cuMemAllocPitch`: (address, pitch) of `rows` rows of at least `row_bytes`.
pub(crate) fn alloc_pitch(row_bytes: usize, rows: usize, element_bytes: c_uint) -> Result<(CUdeviceptr, usize), DriverError> {
    let (mut p, mut pitch): (CUdeviceptr, usize) = (0, 0);
    // SAFETY: writes the address and its pitch.
    check("cuMemAllocPitch", unsafe { raw::cuMemAllocPitch_v2(&mut p, &mut pitch, row_bytes, rows, element_bytes) })?;
    Ok((p, pitch))
}

/// `cuMemFree`.
///
/// # Safety
/// `p` is an allocation of the current context's, freed once, that nothing reads or writes any
/// more (its fences completed).
pub(crate) unsafe fn free(p: CUdeviceptr) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemFree", unsafe { raw::cuMemFree_v2(p) })
}

/// `cuMemHostAlloc(PORTABLE)`: page-locked host memory every context may use.
pub(crate) fn host_alloc_portable(bytes: usize) -> Result<*mut c_void, DriverError> {
    let mut p: *mut c_void = std::ptr::null_mut();
    // SAFETY: writes the allocation's address.
    check("cuMemHostAlloc", unsafe { raw::cuMemHostAlloc(&mut p, bytes, CU_MEMHOSTALLOC_PORTABLE) })?;
    Ok(p)
}

/// `cuMemFreeHost`.
///
/// # Safety
/// `p` came from [`host_alloc_portable`], is freed once, and nothing reads or writes it any
/// more (its fences completed).
pub(crate) unsafe fn free_host(p: *mut c_void) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemFreeHost", unsafe { raw::cuMemFreeHost(p) })
}

/// `cuPointerGetAttributes`: what the driver knows of `ptr`, each attribute written through the
/// pointer beside it. Memory the driver does not know leaves each value's default.
///
/// # Safety
/// `data[i]` points at a value of the size `attrs[i]` writes.
pub(crate) unsafe fn pointer_attributes(attrs: &mut [CUpointer_attribute], data: &mut [*mut c_void], ptr: CUdeviceptr) -> Result<(), DriverError> {
    assert_eq!(attrs.len(), data.len(), "one value per attribute");
    // SAFETY: the caller's contract; as many values as attributes (asserted).
    check("cuPointerGetAttributes", unsafe { raw::cuPointerGetAttributes(attrs.len() as c_uint, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr) })
}

/// `cuPointerGetAttribute(DEVICE_POINTER)`: the device address of host memory mapped into the
/// current context. An error (no mapping here) has no side effects.
pub(crate) fn device_pointer(host: u64) -> Result<CUdeviceptr, DriverError> {
    let mut d: CUdeviceptr = 0;
    // SAFETY: the attribute writes one device address into `d`.
    check("cuPointerGetAttribute", unsafe {
        raw::cuPointerGetAttribute(&mut d as *mut CUdeviceptr as *mut c_void, CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_POINTER, host)
    })?;
    Ok(d)
}

/// `cuMemcpyDtoHAsync`.
///
/// # Safety
/// `bytes` bytes at `src` (device memory of the current context) and at `dst` (host memory the
/// driver may write) stay valid until the copy has run on `s`, a live stream of the current
/// context.
pub(crate) unsafe fn copy_dtoh_async(dst: *mut c_void, src: CUdeviceptr, bytes: usize, s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemcpyDtoHAsync", unsafe { raw::cuMemcpyDtoHAsync_v2(dst, src, bytes, s) })
}

/// `cuMemcpy2DAsync`.
///
/// # Safety
/// Every field of `c` is written, both ends stay valid until the copy has run on `s`, a live
/// stream of the current context.
pub(crate) unsafe fn copy_2d_async(c: &CUDA_MEMCPY2D, s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemcpy2DAsync", unsafe { raw::cuMemcpy2DAsync_v2(c, s) })
}

/// `cuMemcpy3DPeerAsync`: a copy between contexts (GPUs).
///
/// # Safety
/// As [`copy_2d_async`], with each end's context named in `c`.
pub(crate) unsafe fn copy_3d_peer_async(c: &CUDA_MEMCPY3D_PEER, s: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    check("cuMemcpy3DPeerAsync", unsafe { raw::cuMemcpy3DPeerAsync(c, s) })
}
