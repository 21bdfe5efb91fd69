//! Recording: a camera's pre-roll cache, event clips to Matroska or fragmented MP4 files, their
//! status by poll (no callbacks, so LabVIEW can use all of it).

use super::{boundary, c_str, out, sized_out, text_out, write_text, Ctx};
use crate::library;
use crate::record::{self, recording::State, Reported};
use std::ffi::c_char;
use std::path::Path;
use std::time::Duration;

/// The recording takes packets (its pre-roll, then the stream until trigger + post).
pub const NVCAM_RECORD_RUNNING: u32 = 1;
/// It takes no more packets; its file is being finished.
pub const NVCAM_RECORD_FINISHING: u32 = 2;
/// Complete: the file holds [trigger − pre, trigger + post] (see `first_pts_us`) under its name.
pub const NVCAM_RECORD_DONE: u32 = 3;
/// Ended early (`nvcam_record_stop`, `nvcam_record_release`, the camera's close, shutdown): a
/// complete file, shorter than asked.
pub const NVCAM_RECORD_STOPPED: u32 = 4;
/// Ended by an error (`error`, `nvcam_record_error`): a disk that was full or too slow, an I/O
/// error. What was written is in the file (its `.part` name if it could not be finished).
pub const NVCAM_RECORD_FAILED: u32 = 5;

/// A recording's state and what its files hold (`nvcam_record_status`).
///
/// Frame ↔ file: the files hold the camera's pictures `first_seq..=last_seq` (the `seq` of
/// `nvcam_frame_info_t`), in order; a picture's time in the file is its `pts_us` − `first_pts_us`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_record_status {
    /// `sizeof(nvcam_record_status_t)`.
    pub struct_size: u32,
    /// `NVCAM_RECORD_*`.
    pub state: u32,
    /// `NVCAM_E_*` of a failed recording, else 0 (text: `nvcam_record_error`).
    pub error: i32,
    /// Files made: 1, more when a reconnect or a change of the stream split the recording
    /// (`NAME-part2.EXT`, ...; `nvcam_record_file` names the last).
    pub parts: u32,
    /// Places inside the recording where packets were lost on the way (see `lost_packets`).
    pub loss_spans: u32,
    pub reserved0: u32,
    /// Pictures (packets) written.
    pub frames: u64,
    /// Bytes of compressed video written.
    pub bytes: u64,
    /// The camera's frame numbers of the first and last picture in the files (0: none known).
    pub first_seq: u64,
    pub last_seq: u64,
    /// Timestamps (µs, as frames carry them) of the first picture of the first file and the
    /// last picture of the last file.
    pub first_pts_us: i64,
    pub last_pts_us: i64,
    /// The stream time of the trigger (the newest packet when the recording started): a full
    /// pre-roll has `first_pts_us` ≤ `trigger_pts_us` − pre.
    pub trigger_pts_us: i64,
    /// The files' spans summed: each part's last − first picture timestamp (`last_pts_us` −
    /// `first_pts_us` for one part; a reconnect may start its part's timestamps afresh).
    pub duration_us: i64,
    /// Packets lost on the way from the camera inside the recording.
    pub lost_packets: u64,
    /// Timestamp of the first picture after a loss (0: no loss).
    pub first_loss_pts_us: i64,
    /// Packets taken for the recording that are in no file: the writer fell behind, or a write
    /// error (a full disk) lost them; the recording failed. After a write error the counts
    /// above say what the files hold for certain (`frames`, `bytes` up to the last cluster or
    /// fragment written out).
    pub dropped: u64,
    pub reserved: [u64; 2],
}

/// A camera's pre-roll cache and recordings (`nvcam_camera_record_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct nvcam_record_stats {
    /// `sizeof(nvcam_record_stats_t)`.
    pub struct_size: u32,
    /// Recordings taking packets now.
    pub running: u32,
    /// Bytes, packets and stream time the cache holds.
    pub cache_bytes: u64,
    pub cache_packets: u64,
    pub cache_span_us: i64,
    /// Groups of pictures the cache dropped for its byte bound before its time bound.
    pub cache_trimmed: u64,
    /// Recordings started, failed, and packets dropped (a writer that fell behind).
    pub recordings: u64,
    pub failed: u64,
    pub dropped: u64,
}

/// Keeps the last `pre_ms` of the camera's compressed packets (from the key frame at or before
/// then), at most `max_bytes` (0: 32 MiB), so that a recording can start before its trigger.
/// `pre_ms` 0 and `max_bytes` 0 turn the cache off (a camera without a cache or a recording pays
/// nothing). Set it once after the open: resizing starts the cache afresh.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_camera_record_cache(cam: u64, pre_ms: u32, max_bytes: u64) -> i32 {
    boundary("nvcam_camera_record_cache", Ctx::Camera(cam), || {
        let bytes = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        library::camera(cam)?.recorder().set_cache(Duration::from_millis(pre_ms as u64), bytes)
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
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_FFMPEG, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `rec` is NULL or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_record_start(cam: u64, path: *const c_char, pre_ms: u32, post_ms: u32, rec: *mut u64) -> i32 {
    boundary("nvcam_camera_record_start", Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract (both).
        let (out_rec, path) = unsafe { (out(rec, "rec")?, c_str(path, "path")?) };
        let c = library::camera(cam)?;
        let r = c.recorder().start(Path::new(&*path), Duration::from_millis(pre_ms as u64), Duration::from_millis(post_ms as u64))?;
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
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_TIMEOUT, NVCAM_E_IO, NVCAM_E_FFMPEG, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_INTERNAL, NVCAM_E_PANIC
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
    boundary("nvcam_camera_record_segments", Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract (all three).
        let (out_rec, dir, container) = unsafe { (out(rec, "rec")?, c_str(dir, "dir")?, c_str(container, "container")?) };
        let ext = container.trim_start_matches('.').to_ascii_lowercase();
        if ext != "mkv" && ext != "mp4" {
            return Err(crate::status::Error::arg(format!("container '{container}': \"mkv\" or \"mp4\"")));
        }
        if segment_ms < 1000 {
            return Err(crate::status::Error::arg(format!("segment_ms {segment_ms}: at least 1000")));
        }
        let plan = record::segments::Plan {
            dir: Path::new(&*dir).to_path_buf(),
            ext,
            every_us: segment_ms as i64 * 1000,
            keep_count,
            keep_bytes,
            last: Default::default(),
        };
        let r = library::camera(cam)?.recorder().start_segments(plan)?;
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
    })
}

/// Moves a running recording's end to now + `post_ms` (never earlier): a second trigger while it
/// runs extends the same clip. `NVCAM_E_CLOSED` once it has ended.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CLOSED, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_record_extend(rec: u64, post_ms: u32) -> i32 {
    boundary("nvcam_record_extend", Ctx::Lib, || record::get(rec)?.extend(Duration::from_millis(post_ms as u64)))
}

/// Ends a recording now: what it has taken is written and the file finished
/// (`NVCAM_RECORD_STOPPED`). Stopping an ended recording does nothing.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_record_stop(rec: u64) -> i32 {
    boundary("nvcam_record_stop", Ctx::Lib, || {
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
    boundary("nvcam_record_status", Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let o = unsafe { sized_out(status, "status") }?;
        let (reported, s) = record::get(rec)?.status();
        let state = match reported {
            Reported::Running => NVCAM_RECORD_RUNNING,
            Reported::Finishing => NVCAM_RECORD_FINISHING,
            Reported::Ended(State::Running) => NVCAM_RECORD_FINISHING,
            Reported::Ended(State::Done) => NVCAM_RECORD_DONE,
            Reported::Ended(State::Stopped) => NVCAM_RECORD_STOPPED,
            Reported::Ended(State::Failed) => NVCAM_RECORD_FAILED,
        };
        *o = nvcam_record_status {
            struct_size: o.struct_size,
            state,
            error: s.error.as_ref().map_or(super::status::NVCAM_OK, |e| super::status::code(e.kind)),
            parts: s.parts,
            loss_spans: s.loss_spans,
            reserved0: 0,
            frames: s.frames,
            bytes: s.bytes,
            first_seq: s.first_seq,
            last_seq: s.last_seq,
            first_pts_us: s.first_pts_us,
            last_pts_us: s.last_pts_us,
            trigger_pts_us: s.trigger_pts_us,
            duration_us: s.duration_us(),
            lost_packets: s.lost_packets,
            first_loss_pts_us: s.first_loss_pts_us,
            dropped: s.dropped,
            reserved: [0; 2],
        };
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
    boundary("nvcam_record_file", Ctx::Lib, || {
        let (_, s) = record::get(rec)?.status();
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &s.file.to_string_lossy())
    })
}

/// Why a recording failed ("" if it did not).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_record_error(rec: u64, buf: *mut c_char, len: i32) -> i32 {
    boundary("nvcam_record_error", Ctx::Quiet, || {
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
    boundary("nvcam_record_release", Ctx::Lib, || record::release(rec))
}

/// Fills `stats` with the camera's cache and recording counters (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `stats` is NULL or a writable `nvcam_record_stats_t` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_record_stats(cam: u64, stats: *mut nvcam_record_stats) -> i32 {
    boundary("nvcam_camera_record_stats", Ctx::Camera(cam), || {
        // SAFETY: forwarded from this function's contract.
        let o = unsafe { sized_out(stats, "stats") }?;
        let s = library::camera(cam)?.recorder().stats();
        *o = nvcam_record_stats {
            struct_size: o.struct_size,
            running: s.running,
            cache_bytes: s.cache_bytes,
            cache_packets: s.cache_packets as u64,
            cache_span_us: s.cache_span_us,
            cache_trimmed: s.cache_trimmed_for_bytes,
            recordings: s.made,
            failed: s.failed,
            dropped: s.dropped,
        };
        Ok(())
    })
}
