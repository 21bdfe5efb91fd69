//! The camera object: options, open, close, reconnect, frames, stats, its last error.

use super::constants::*;
use super::types::*;
use super::{boundary, c_str, fill_versioned, marshal, out, sized, text_out, write_text, Ctx};
use crate::library;
use crate::status::*;
use std::ffi::c_char;
use std::time::Duration;

/// Fills `opts` with the defaults (and sets its `struct_size`).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_PANIC
///
/// # Safety
/// `opts` is NULL or writable for `sizeof(nvcam_camera_options_t)` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_options_init(opts: *mut nvcam_camera_options) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        *unsafe { out(opts, "opts") }? = marshal::options_defaults();
        Ok(())
    })
}

/// Reads `options` (and its option string, unless `ffmpeg` overrides it).
///
/// # Safety
/// `options` is NULL or a readable `nvcam_camera_options_t` whose `ffmpeg_options` is NULL or a
/// NUL-terminated string; `ffmpeg` is NULL or a NUL-terminated string.
unsafe fn read_options(options: *const nvcam_camera_options, ffmpeg: *const c_char) -> Result<crate::config::Options> {
    // SAFETY: forwarded from this function's contract.
    let c = unsafe { sized(options, "options") }?;
    let text = if !ffmpeg.is_null() {
        // SAFETY: non-null and NUL-terminated (contract).
        Some(unsafe { c_str(ffmpeg, "ffmpeg_options") }?)
    } else {
        match c {
            // SAFETY: non-null and NUL-terminated (contract).
            Some(c) if !c.ffmpeg_options.is_null() => Some(unsafe { c_str(c.ffmpeg_options, "ffmpeg_options") }?),
            _ => None,
        }
    };
    marshal::options_from(c, text.as_deref())
}

/// Opens a camera: `url` is `rtsp://…`, another FFmpeg URL, a file path, or `testsrc://WxH@FPS`
/// (a built-in test pattern), in UTF-8 (on Windows also in the ANSI code page: see Strings at the
/// top). Without `NVCAM_OPEN_ASYNC` it returns once the source is open (or with the reason it
/// could not be: `NVCAM_E_IO`, `NVCAM_E_TIMEOUT`, `NVCAM_E_AUTH`, `NVCAM_E_TLS_VERIFY`, `NVCAM_E_BAD_OPTION`,
/// `NVCAM_E_UNSUPPORTED`), leaving nothing behind on failure.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_STRUCT_SIZE, NVCAM_E_NOT_INITIALIZED, NVCAM_E_BAD_OPTION, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_AUTH, NVCAM_E_TLS_VERIFY, NVCAM_E_UNSUPPORTED, NVCAM_E_FFMPEG, NVCAM_E_CUDA, NVCAM_E_NO_DEVICE, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_CLOSED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `url` is NULL or a NUL-terminated string; `options` is NULL or a readable
/// `nvcam_camera_options_t` (its `ffmpeg_options` NULL or a NUL-terminated string); `cam` is NULL
/// or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_open(url: *const c_char, options: *const nvcam_camera_options, cam: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract (all three).
        let (out_cam, url, opts) = unsafe { (out(cam, "cam")?, c_str(url, "url")?, read_options(options, std::ptr::null())?) };
        *out_cam = library::open_camera(&url, opts)?;
        Ok(())
    })
}

/// `nvcam_camera_open` with the FFmpeg options as a separate string (NULL or "" = none), which
/// overrides `options->ffmpeg_options`. For hosts that cannot put a string pointer into a struct,
/// like LabVIEW.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_STRUCT_SIZE, NVCAM_E_NOT_INITIALIZED, NVCAM_E_BAD_OPTION, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_AUTH, NVCAM_E_TLS_VERIFY, NVCAM_E_UNSUPPORTED, NVCAM_E_FFMPEG, NVCAM_E_CUDA, NVCAM_E_NO_DEVICE, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_CLOSED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// As `nvcam_camera_open`; `ffmpeg_options` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_open_ex(
    url: *const c_char,
    ffmpeg_options: *const c_char,
    options: *const nvcam_camera_options,
    cam: *mut u64,
) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract (all four).
        let (out_cam, url, opts) = unsafe { (out(cam, "cam")?, c_str(url, "url")?, read_options(options, ffmpeg_options)?) };
        *out_cam = library::open_camera(&url, opts)?;
        Ok(())
    })
}

/// Closes a camera: stops it, waits up to `timeout_ms` for in-flight work, invalidates every frame
/// handle it has outstanding, then stops its thread. The handle is released even when the thread
/// outlives the timeout (`NVCAM_E_TIMEOUT`; it exits on its own).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_TIMEOUT, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_close(cam: u64, timeout_ms: u32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || library::close_camera(cam, Duration::from_millis(timeout_ms as u64)))
}

/// Publishes an open camera under `name` for other processes of the same user: they open
/// `nvcam://NAME` and get an ordinary camera whose frames are this camera's, decoded once here and
/// mapped there without a copy. `name` is 1 to 64 letters, digits, `.`, `_` or `-`, not starting
/// with `.`; `GROUP/NAME` also admits the processes of that Unix group's members (the publisher
/// must be one; Linux). A name another process (or camera) publishes is refused. Each attached process holds
/// at most `hold_quota` frames at once (0: 3) and at most `max_consumers` attach at once (0: 8);
/// the camera's pools get `hold_quota * max_consumers` slots more. When an attached process
/// exits, is killed or falls silent for 5 s, the frames it held come back at once. Linux (a Unix
/// socket) and Windows (a named pipe). The camera's URL (and its credentials) never
/// reaches the attached processes.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_IO, NVCAM_E_AUTH, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_publish(cam: u64, name: *const c_char, hold_quota: u32, max_consumers: u32) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract.
        let name = unsafe { c_str(name, "name") }?;
        library::camera(cam)?.publish(&name, hold_quota, max_consumers)
    })
}

/// Ends a camera's publication: attached processes are detached (their cameras go on trying to
/// attach), the frames they held come back, and the name is free. Waits at most `timeout_ms` for
/// the publisher's threads.
///
/// Returns: NVCAM_OK, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_unpublish(cam: u64, timeout_ms: u32) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || library::camera(cam)?.unpublish(Duration::from_millis(timeout_ms as u64)))
}

/// Drops the current connection and reconnects at once, in any state (also after a failure).
/// Frame handles stay valid unless the camera was opened with
/// `NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT`.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_reconnect(cam: u64) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || library::camera(cam)?.reconnect())
}

/// Waits up to `timeout_ms` for the newest frame not yet handed out and returns a new frame handle
/// in `*frame` (release it with `nvcam_frame_release`). Frames the host was too slow to take are
/// skipped and counted. `NVCAM_E_TIMEOUT` if none came; `NVCAM_E_FAILED`/`NVCAM_E_CLOSED` if none
/// will; `NVCAM_E_CANCELLED` if `nvcam_camera_cancel_wait` ran during the wait. The longest wait
/// is `timeout_ms` (there is no infinite wait: 0 returns at once, and `UINT32_MAX` is about 49.7
/// days, a finite wait like any other).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_TIMEOUT, NVCAM_E_CANCELLED, NVCAM_E_CLOSED, NVCAM_E_FAILED, NVCAM_E_IO, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_UNSUPPORTED, NVCAM_E_PANIC
///
/// # Safety
/// `frame` is NULL or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_get_frame(cam: u64, timeout_ms: u32, frame: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract.
        let out_frame = unsafe { out(frame, "frame") }?;
        *out_frame = library::get_frame(cam, Duration::from_millis(timeout_ms as u64))?;
        Ok(())
    })
}

/// "Latest of N": the newest frame of each of `n` cameras (`cams[0..n]`, each at most once) in
/// one call, into `frames[0..n]`, for batching inference.
///
/// - `frames` is zeroed first (whenever `frames` is not NULL and `n` is in range); then every
///   camera handle is checked (a NULL, stale, closed-and-removed or repeated handle fails the call
///   before any frame is taken, and `frames` stays all 0).
/// - It then waits up to `timeout_ms` in all (one deadline, not per camera) until every camera has
///   a frame it has not handed out yet (as `nvcam_camera_get_frame`: older frames are skipped); a
///   frame taken early in the wait is swapped for a newer one that came meanwhile (the older
///   handle is released by the call; never for a camera opened with `NVCAM_OPEN_LOSSLESS`, which
///   hands out every frame in order). `timeout_ms` 0 only polls.
/// - `frames[i]` is a new frame handle of `cams[i]`, or 0 when that camera had none.
/// - Status: `NVCAM_OK` when every camera has a frame; otherwise the first hard error in array
///   order (`NVCAM_E_CLOSED`, `NVCAM_E_FAILED`, `NVCAM_E_IO` for an ended file, ...), else
///   `NVCAM_E_CANCELLED` (`nvcam_camera_cancel_wait` on one of the cameras ran: the others are
///   then only polled), else `NVCAM_E_TIMEOUT` (some or none came).
/// - **Whatever the status, release every non-zero `frames[i]`** (with a partial batch, the
///   frames that came are valid and yours).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_TIMEOUT, NVCAM_E_CANCELLED, NVCAM_E_CLOSED, NVCAM_E_FAILED, NVCAM_E_IO, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_UNSUPPORTED, NVCAM_E_PANIC
///
/// # Safety
/// `cams` is NULL or readable for `n` `uint64_t`s; `frames` is NULL or writable for `n`
/// `uint64_t`s (`n` at most `NVCAM_BATCH_MAX`). Neither needs 8-byte alignment.
#[no_mangle]
pub unsafe extern "C" fn nvcam_cameras_get_frames(cams: *const u64, n: u32, timeout_ms: u32, frames: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        if n == 0 || n > NVCAM_BATCH_MAX {
            return Err(Error::arg(format!("n {n} (1..{NVCAM_BATCH_MAX})")));
        }
        if frames.is_null() {
            return Err(Error::null("frames"));
        }
        let n = n as usize;
        for i in 0..n {
            // SAFETY: `frames` is writable for `n` u64s (contract); unaligned writes allowed.
            unsafe { frames.add(i).write_unaligned(0) };
        }
        if cams.is_null() {
            return Err(Error::null("cams"));
        }
        // SAFETY: `cams` is readable for `n` u64s (contract); unaligned reads allowed.
        let handles: Vec<u64> = (0..n).map(|i| unsafe { cams.add(i).read_unaligned() }).collect();
        let got = library::get_frames(&handles, Duration::from_millis(timeout_ms as u64))?;
        for (i, &f) in got.frames.iter().enumerate() {
            // SAFETY: as above (i < n).
            unsafe { frames.add(i).write_unaligned(f) };
        }
        got.status
    })
}

/// Wakes every thread blocked in `nvcam_camera_get_frame` or `nvcam_camera_get_frame_lv` on this
/// camera: each returns `NVCAM_E_CANCELLED` at once. Only waits in progress are cancelled (a wait
/// that begins after this call waits normally, and nothing is remembered for it); the camera stays
/// open and keeps streaming, and a frame that arrives meanwhile is kept for the next wait. Returns
/// at once. (Opening, closing and shutdown are bounded by their own timeouts and are not
/// cancelled.)
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_cancel_wait(cam: u64) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || library::cancel_waits(cam))
}

/// Fills `stats` (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `stats` is NULL or a writable `nvcam_camera_stats_t` whose `struct_size` is set (152, the size
/// before `key_interval_ms`, or more).
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_stats(cam: u64, stats: *mut nvcam_camera_stats) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract: writable for its struct_size.
        unsafe { fill_versioned(stats, CAMERA_STATS_SIZE_V1, "stats", |size| Ok(marshal::camera_stats(&library::camera(cam)?.stats(), size))) }
    })
}

/// The camera's last error, from its worker (connection, decode) or from a call on it.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_last_error(cam: u64, buf: *mut c_char, len: i32) -> i32 {
    boundary(export_name!(), Ctx::Quiet, || {
        let c = library::camera(cam)?;
        let text = c.last_error().map(|e| e.to_string()).unwrap_or_default();
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &text)
    })
}
