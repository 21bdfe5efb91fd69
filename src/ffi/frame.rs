//! The frame object: clone, release, info, host copies; and the clone registry's calls.

use super::types::*;
use super::{boundary, bytes_out, convert, out, out_opt, sized_out, Ctx};
use crate::handle::{self, Kind};
use crate::registry;

/// A new handle to the same frame; the pixels stay valid (and their slot unwritten) until every
/// handle to them is released.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_PANIC
///
/// # Safety
/// `clone` is NULL or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_clone(frame: u64, clone: *mut u64) -> i32 {
    boundary("nvcam_frame_clone", Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let out_clone = unsafe { out(clone, "clone") }?;
        *out_clone = registry::clone(frame)?;
        Ok(())
    })
}

/// Releases one frame handle. A second release of the same handle is `NVCAM_E_STALE_HANDLE`.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_frame_release(frame: u64) -> i32 {
    boundary("nvcam_frame_release", Ctx::Frame(frame), || registry::release(frame))
}

/// Fills `info` (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `info` is NULL or a writable `nvcam_frame_info_t` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_info(frame: u64, info: *mut nvcam_frame_info) -> i32 {
    boundary("nvcam_frame_info", Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let i = unsafe { sized_out(info, "info") }?;
        let f = registry::get(frame)?;
        *i = convert::frame_info(&f, i.struct_size);
        Ok(())
    })
}

/// Copies the frame as NV12 into a host buffer: Y rows then UV rows, `dst_pitch` bytes apart
/// (0 = packed, `nv12_size` bytes in all). Works for host and device frames (the LabVIEW way:
/// pass an initialized U8 array as an Array Data Pointer and its size). Nothing is written unless
/// the whole image fits in `dst_size` bytes.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `dst` is NULL or writable for `dst_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_copy_nv12(frame: u64, dst: *mut u8, dst_pitch: u64, dst_size: u64) -> i32 {
    boundary("nvcam_frame_copy_nv12", Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let dst = unsafe { bytes_out(dst, dst_size, "dst") }?;
        let pitch = usize::try_from(dst_pitch).map_err(|_| crate::status::Error::arg(format!("dst_pitch {dst_pitch} too large")))?;
        registry::get(frame)?.copy_nv12(dst, pitch)
    })
}

/// Invalidates every frame handle that camera `cam` has outstanding (its clones included) and
/// writes how many into `*released` (may be NULL). The memory returns to the pool once no call in
/// progress still uses it. Works on a closed camera's handle value too.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_PANIC
///
/// # Safety
/// `released` is NULL or writable for a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_force_release_owner(cam: u64, released: *mut u32) -> i32 {
    boundary("nvcam_registry_force_release_owner", Ctx::Lib, || {
        handle::decode(cam, Kind::Camera)?;
        let n = registry::force_release_owner(cam) as u32;
        // SAFETY: forwarded from this function's contract.
        if let Some(r) = unsafe { out_opt(released) } {
            *r = n;
        }
        Ok(())
    })
}

/// Live frame handles: of camera `cam` into `*for_camera` (cam 0 = none), of all cameras into
/// `*total`. Either pointer may be NULL.
///
/// Returns: NVCAM_OK, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_PANIC
///
/// # Safety
/// `for_camera` is NULL or writable for a `uint32_t`; `total` is NULL or writable for a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_stats(cam: u64, for_camera: *mut u32, total: *mut u64) -> i32 {
    boundary("nvcam_registry_stats", Ctx::Lib, || {
        if cam != 0 {
            handle::decode(cam, Kind::Camera)?;
        }
        let m = registry::per_owner();
        // SAFETY: forwarded from this function's contract (both pointers).
        let (fc, t) = unsafe { (out_opt(for_camera), out_opt(total)) };
        if let Some(p) = fc {
            *p = m.get(&cam).copied().unwrap_or(0);
        }
        if let Some(p) = t {
            *p = m.values().map(|&v| v as u64).sum();
        }
        Ok(())
    })
}
