//! LabVIEW's Call Library Function Node callbacks, and the frame wait that an Abort can wake.
//!
//! LabVIEW passes each callback a pointer to the node instance's pointer-sized slot
//! (`InstanceDataPtr *`, `void **` here). The slot holds an nvcam instance handle (a number,
//! never a pointer of ours), so NULL, garbage and stale slots are status codes, not crashes.
//! Configure a node that calls `nvcam_camera_get_frame_lv` with Reserve = `nvcam_lv_reserve`,
//! Unreserve = `nvcam_lv_unreserve`, Abort = `nvcam_lv_abort` and "Run in any thread" (LabVIEW
//! never calls Abort for a node that runs in the UI thread).

use super::{boundary, out, Ctx};
use crate::status::*;
use crate::{instances, library};
use std::ffi::c_void;
use std::time::Duration;

/// The handle in LabVIEW's slot (0: none yet).
///
/// # Safety
/// `data` is NULL or readable for a pointer (the callbacks' contract).
unsafe fn slot_read(data: *mut *mut c_void) -> Result<u64> {
    if data.is_null() {
        return Err(Error::null("data (InstanceDataPtr *)"));
    }
    // SAFETY: non-null and readable for a pointer (contract); LabVIEW's slot need not be aligned
    // for us to read it.
    Ok(unsafe { data.read_unaligned() }.addr() as u64)
}

/// Stores handle `h` (0: none) in LabVIEW's slot.
///
/// # Safety
/// `data` is non-NULL and writable for a pointer.
unsafe fn slot_write(data: *mut *mut c_void, h: u64) -> Result<()> {
    let v = usize::try_from(h).map_err(|_| Error::internal("instance handle does not fit a pointer (32-bit host)"))?;
    // SAFETY: non-null (checked by slot_read first) and writable for a pointer (contract).
    unsafe { data.write_unaligned(std::ptr::without_provenance_mut(v)) };
    Ok(())
}

/// LabVIEW's Reserve callback (CLFN Callbacks tab: Reserve). Gives the node instance an nvcam
/// instance and stores its handle in `*data`; a slot that already holds a live instance is kept.
/// Needs no `nvcam_init`. Any other value in `*data` (0, stale, garbage) is replaced, never read as
/// a pointer.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `data` is NULL or points to a pointer-sized, readable and writable slot (LabVIEW's instance
/// data).
#[no_mangle]
pub unsafe extern "C" fn nvcam_lv_reserve(data: *mut *mut c_void) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let cur = unsafe { slot_read(data) }?;
        if cur != 0 && instances::is_live(cur) {
            return Ok(());
        }
        let h = instances::reserve()?;
        // SAFETY: forwarded from this function's contract; non-null (read above).
        unsafe { slot_write(data, h) }.inspect_err(|_| {
            let _ = instances::unreserve(h);
        })
    })
}

/// LabVIEW's Unreserve callback (CLFN Callbacks tab: Unreserve). Releases the node instance's
/// nvcam instance (a wait still in progress from it returns `NVCAM_E_CANCELLED`) and sets `*data`
/// to 0. A slot holding 0 is fine (nothing reserved: `NVCAM_OK`); a stale or made-up value is an
/// error and the slot is left as it is.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// As `nvcam_lv_reserve`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_lv_unreserve(data: *mut *mut c_void) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let cur = unsafe { slot_read(data) }?;
        if cur == 0 {
            return Ok(());
        }
        instances::unreserve(cur)?;
        // SAFETY: forwarded from this function's contract; non-null (read above).
        unsafe { slot_write(data, 0) }
    })
}

/// LabVIEW's Abort callback (CLFN Callbacks tab: Abort): every `nvcam_camera_get_frame_lv` wait in
/// progress that was begun with this `data` returns `NVCAM_E_CANCELLED` at once; waits begun from
/// other node instances, and later waits, are not affected; the cameras stay open. A slot holding 0
/// (no wait ever begun) is `NVCAM_OK`. LabVIEW does not call Abort for a node set to run in the UI
/// thread.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// As `nvcam_lv_reserve` (only read).
#[no_mangle]
pub unsafe extern "C" fn nvcam_lv_abort(data: *mut *mut c_void) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let cur = unsafe { slot_read(data) }?;
        if cur == 0 {
            return Ok(());
        }
        instances::abort(cur)
    })
}

/// `nvcam_camera_get_frame` for a LabVIEW node with an "Instance Data Pointer" parameter (`data`):
/// the wait is registered under that node instance, so the node's Abort callback (`nvcam_lv_abort`)
/// ends it with `NVCAM_E_CANCELLED`; `nvcam_camera_cancel_wait` ends it too. A slot holding 0 (no
/// Reserve callback configured) gets a new instance, as `nvcam_lv_reserve` would; a stale or
/// made-up value is an error and no wait begins.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_TIMEOUT, NVCAM_E_CANCELLED, NVCAM_E_CLOSED, NVCAM_E_FAILED, NVCAM_E_IO, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `frame` is NULL or writable for a `uint64_t`; `data` as in `nvcam_lv_reserve`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_get_frame_lv(cam: u64, timeout_ms: u32, frame: *mut u64, data: *mut *mut c_void) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract.
        let out_frame = unsafe { out(frame, "frame") }?;
        // SAFETY: forwarded from this function's contract.
        let mut inst = unsafe { slot_read(data) }?;
        if inst == 0 {
            library::camera(cam)?; // a bad camera handle leaves the slot as it was
            inst = instances::reserve()?;
            // SAFETY: forwarded from this function's contract; non-null (read above).
            unsafe { slot_write(data, inst) }?;
        }
        *out_frame = library::get_frame_in(cam, Duration::from_millis(timeout_ms as u64), inst)?;
        Ok(())
    })
}
