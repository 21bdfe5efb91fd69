//! Recording: a camera's pre-roll cache, event clips to Matroska or fragmented MP4 files, their
//! status by poll (no callbacks, so LabVIEW can use all of it).

use super::types::{nvcam_record_stats, nvcam_record_status, RECORD_STATS_SIZE_V1};
use super::{boundary, c_str, fill_versioned, marshal, out, sized_out, text_out, write_text, Ctx};
use crate::library;
use crate::record::{self, Recording};
use crate::status::Result;
use std::ffi::c_char;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Keeps the last `pre_ms` of the camera's compressed packets (from the key frame at or before
/// then), at most `max_bytes` (0: 32 MiB), so that a recording can start before its trigger.
/// `pre_ms` 0 and `max_bytes` 0 turn the cache off (a camera without a cache or a recording pays
/// nothing). Set it once after the open: resizing starts the cache afresh.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_UNSUPPORTED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_record_cache(cam: u64, pre_ms: u32, max_bytes: u64) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        let bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        library::camera(cam)?.recorder_to_start()?.set_cache(Duration::from_millis(pre_ms as u64), bytes)
    })
}

/// Records the camera's stream, as it comes (no re-encode), into `path`: `.mkv` (Matroska) or
/// `.mp4` (fragmented MP4, playable while it is written and after a crash). The clip starts at the
/// key frame at or before now − `pre_ms` (as far as the cache of `nvcam_camera_record_cache`
/// reaches; without one, at the next key frame) and ends at now + `post_ms` (stream time), or
/// later after `nvcam_record_extend`. The file is written as `path` + ".part" and renamed to
/// `path` when complete. One recording per path: a path a running recording writes, an existing
/// file, or a folder is `NVCAM_E_INVALID_ARGUMENT`; a missing folder or a denied permission is
/// `NVCAM_E_IO`; a stream the container cannot hold, such as raw pictures, is
/// `NVCAM_E_INVALID_ARGUMENT`. A call that fails leaves no file. The end is a presentation time:
/// the clip holds every picture shown up to it (B-frames included). Before the
/// camera's first frame (or, for a stream whose setup carries no parameter sets, its first key
/// frame) it is `NVCAM_E_TIMEOUT`. A disk that fills or cannot keep up later ends the recording
/// (`NVCAM_RECORD_FAILED`), never the camera. Recordings of one camera may overlap. Poll `nvcam_record_status`; release the handle with
/// `nvcam_record_release`.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_FFMPEG, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `rec` is NULL or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_record_start(cam: u64, path: *const c_char, pre_ms: u32, post_ms: u32, rec: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract (both).
        let (out_rec, path) = unsafe { (out(rec, "rec")?, c_str(path, "path")?) };
        let c = library::camera(cam)?;
        let r = c.recorder_to_start()?.start(Path::new(&*path), Duration::from_millis(pre_ms as u64), Duration::from_millis(post_ms as u64))?;
        hand_out(r, out_rec)
    })
}

/// Records the camera's stream continuously into files of about `segment_ms` each (cut at the
/// first key frame after that), in the folder `dir`, named by the wall-clock time (UTC) of their
/// start: `YYYYMMDD-HHMMSS.EXT` (`-2`, `-3`, ... when taken), `container` "mkv" or "mp4". Once a
/// segment is finished, the oldest finished segments beyond `keep_count` files or `keep_bytes`
/// bytes (0: no limit) are deleted (the newest always stays). Runs until `nvcam_record_stop`,
/// `nvcam_record_release`, or the camera's close; `parts` in the status counts the segments,
/// `nvcam_record_file` names the current one. Starts at the key frame at or before now (from the
/// cache), or at the next one.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_FFMPEG, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `dir` and `container` are NULL or NUL-terminated strings; `rec` is NULL or writable for a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_record_segments(
    cam: u64,
    dir: *const c_char,
    container: *const c_char,
    segment_ms: u32,
    keep_count: u32,
    keep_bytes: u64,
    rec: *mut u64,
) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract (all three).
        let (out_rec, dir, container) = unsafe { (out(rec, "rec")?, c_str(dir, "dir")?, c_str(container, "container")?) };
        let plan = record::segments::Plan::new(Path::new(&*dir), &container, segment_ms, keep_count, keep_bytes)?;
        let r = library::camera(cam)?.recorder_to_start()?.start_segments(plan)?;
        hand_out(r, out_rec)
    })
}

/// Moves a running recording's end to now + `post_ms` (never earlier): a second trigger while it
/// runs extends the same clip. `NVCAM_E_CLOSED` once it has ended.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_record_extend(rec: u64, post_ms: u32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || record::get(rec)?.extend(Duration::from_millis(post_ms as u64)))
}

/// Ends a recording now: what it has taken is written and the file finished
/// (`NVCAM_RECORD_STOPPED`). Stopping an ended recording does nothing.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_record_stop(rec: u64) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        record::get(rec)?.stop();
        Ok(())
    })
}

/// Fills `status` (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `status` is NULL or a writable `nvcam_record_status_t` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn nvcam_record_status(rec: u64, status: *mut nvcam_record_status) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let o = unsafe { sized_out(status, "status") }?;
        let (reported, s) = record::get(rec)?.status();
        *o = marshal::record_status(reported, &s, o.struct_size);
        Ok(())
    })
}

/// The recording's file: its `.part` name while it is written, its final name once complete (the
/// last part's, when it was split).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_record_file(rec: u64, buf: *mut c_char, len: i32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        let (_, s) = record::get(rec)?.status();
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &s.file.to_string_lossy())
    })
}

/// Why a recording failed ("" if it did not); names every part that stays under its `.part` name.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_record_error(rec: u64, buf: *mut c_char, len: i32) -> i32 {
    boundary(export_name!(), Ctx::Quiet, || {
        let (_, s) = record::get(rec)?.status();
        let text = s.error.map(|e| e.to_string()).unwrap_or_default();
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &text)
    })
}

/// Releases a recording handle (a second release is `NVCAM_E_STALE_HANDLE`). A recording still
/// running is stopped as by `nvcam_record_stop`; its file is finished in the background.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_record_release(rec: u64) -> i32 {
    boundary(export_name!(), Ctx::Lib, || record::release(rec))
}

/// Fills `stats` with the camera's cache and recording counters (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `stats` is NULL or a writable `nvcam_record_stats_t` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_record_stats(cam: u64, stats: *mut nvcam_record_stats) -> i32 {
    boundary(export_name!(), Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract (an earlier, shorter struct is filled
        // up to its size).
        unsafe { fill_versioned(stats, RECORD_STATS_SIZE_V1, "stats", |size| Ok(marshal::record_stats(&library::camera(cam)?.recorder().stats(), size))) }
    })
}

/// Gives the host the handle of a recording just started, or stops the recording when there is
/// none to give (no handle left, or the library shutting down): no recording runs that no handle
/// can stop.
fn hand_out(r: Arc<Recording>, out_rec: &mut u64) -> Result<()> {
    match record::register(r.clone()) {
        Ok(h) => {
            *out_rec = h;
            Ok(())
        }
        Err(e) => {
            r.stop();
            Err(e)
        }
    }
}
