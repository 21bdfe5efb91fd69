//! FFmpeg's messages through nvcam's log (and so its file, callback and poll queue) instead of
//! stderr, with the camera they belong to where FFmpeg ran on that camera's thread.
//!
//! `av_log_set_callback` is process-wide and FFmpeg calls it from any thread (its own decoder
//! threads included), with a C `va_list`. The callback lets FFmpeg format the line
//! (`av_log_format_line2`, so no variadic handling on our side) into a fixed buffer on the stack,
//! checks the level before any work, allocates only the bounded line, and never unwinds into C.

use ffmpeg_next::ffi;
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr};

#[cfg(windows)]
type VaList = ffi::va_list;
#[cfg(not(windows))]
type VaList = *mut ffi::__va_list_tag;

/// Longest line kept (FFmpeg's own default callback uses 1024 too).
const LINE: usize = 1024;

thread_local! {
    /// The camera whose thread this is, for FFmpeg's messages.
    static CAMERA: RefCell<Option<String>> = const { RefCell::new(None) };
    /// RTP packets FFmpeg's demuxer reported missing on this thread, not yet taken.
    static RTP_MISSED: Cell<u64> = const { Cell::new(0) };
}

/// FFmpeg's RTP demuxer reports a sequence gap only in its log (rtpdec.c, when it gives up
/// waiting for the missing packets: reorder queue full or `max_delay` passed), from the thread
/// that reads the stream. Its format string is matched exactly; the count is its only argument.
const RTP_MISSED_FMT: &[u8] = b"RTP: missed %d packets\n\0";

/// RTP packets lost on this thread's stream since the last call (the camera's worker reads its
/// own stream, so the count is its camera's).
pub(crate) fn take_rtp_missed() -> u64 {
    RTP_MISSED.try_with(|c| c.replace(0)).unwrap_or(0)
}

/// The count in a formatted "RTP: missed N packets" line.
fn missed_count(line: &str) -> Option<u64> {
    let rest = &line[line.find("RTP: missed ")? + "RTP: missed ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// Names the camera that the calling thread works for (its worker thread calls this once).
pub(crate) fn set_thread_camera(name: Option<String>) {
    let _ = CAMERA.try_with(|c| *c.borrow_mut() = name);
}

/// FFmpeg's level → ours. FFmpeg's "error" is mostly a damaged packet it concealed, which the
/// camera survives: a warning here; only panic and fatal are errors.
fn level(l: c_int) -> log::Level {
    match l {
        l if l <= ffi::AV_LOG_FATAL as c_int => log::Level::Error,
        l if l <= ffi::AV_LOG_WARNING as c_int => log::Level::Warn,
        l if l <= ffi::AV_LOG_INFO as c_int => log::Level::Info,
        l if l <= ffi::AV_LOG_DEBUG as c_int => log::Level::Debug,
        _ => log::Level::Trace,
    }
}

/// # Safety
/// FFmpeg's log callback contract: `avcl` null or an AVClass-led struct, `fmt` a format string
/// and `vl` its arguments.
unsafe extern "C" fn on_log(avcl: *mut c_void, l: c_int, fmt: *const c_char, vl: VaList) {
    // Only warnings can be the gap report: the (frequent) debug and trace calls skip the compare.
    // SAFETY: a non-null `fmt` is FFmpeg's NUL-terminated format string.
    let rtp_gap = l == ffi::AV_LOG_WARNING as c_int && !fmt.is_null() && unsafe { CStr::from_ptr(fmt) }.to_bytes_with_nul() == RTP_MISSED_FMT;
    // SAFETY: reads FFmpeg's global level (an int).
    let shown = l != ffi::AV_LOG_QUIET as c_int && l <= unsafe { ffi::av_log_get_level() };
    let lvl = level(l);
    if !rtp_gap && (!shown || !log::log_enabled!(target: "nvcam::ffmpeg", lvl) || fmt.is_null()) {
        return;
    }
    let mut buf = [0 as c_char; LINE];
    let mut prefix: c_int = 1;
    // SAFETY: the arguments are FFmpeg's, passed on as received; the line goes into our buffer
    // of LINE bytes, NUL-terminated by FFmpeg (it truncates longer lines).
    let n = unsafe { ffi::av_log_format_line2(avcl, l, fmt, vl, buf.as_mut_ptr(), LINE as c_int, &mut prefix) };
    if n < 0 {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: av_log_format_line2 NUL-terminated the buffer.
        let line = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
        let line = line.trim_end();
        if rtp_gap {
            // A "gap" of more than half the sequence space is FFmpeg 5.1's reorder queue meeting
            // a duplicate of a packet it already parsed (it keeps duplicates, then parses the
            // second copy into the access unit): one damaged packet, not 65000 lost ones.
            let n = missed_count(line).filter(|&n| n < 32768).unwrap_or(1).max(1);
            let _ = RTP_MISSED.try_with(|c| c.set(c.get().saturating_add(n)));
            if !shown || !log::log_enabled!(target: "nvcam::ffmpeg", lvl) {
                return;
            }
        }
        if line.is_empty() {
            return;
        }
        let cam = CAMERA.try_with(|c| c.borrow().clone()).ok().flatten();
        match cam {
            Some(c) => log::log!(target: "nvcam::ffmpeg", lvl, "camera {c}: FFmpeg: {line}"),
            None => log::log!(target: "nvcam::ffmpeg", lvl, "FFmpeg: {line}"),
        }
    });
}

/// Routes FFmpeg's log into ours, once per process (the library stays loaded, so the callback
/// stays valid).
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: sets FFmpeg's process-wide log callback to a function that lives as long as the
    // process (the library is pinned) and honours the callback contract (see `on_log`).
    ONCE.call_once(|| unsafe { ffi::av_log_set_callback(Some(on_log)) });
}

#[cfg(test)]
mod tests {
    #[test]
    fn rtp_gap_lines_give_their_count() {
        assert_eq!(super::missed_count("[rtsp @ 0x55] RTP: missed 17 packets"), Some(17));
        assert_eq!(super::missed_count("RTP: missed 1 packets"), Some(1));
        assert_eq!(super::missed_count("something else"), None);
        assert_eq!(super::RTP_MISSED_FMT.last(), Some(&0));
    }

    #[test]
    fn ffmpeg_levels_map_to_ours() {
        use ffmpeg_next::ffi::*;
        assert_eq!(super::level(AV_LOG_FATAL), log::Level::Error);
        assert_eq!(super::level(AV_LOG_ERROR), log::Level::Warn);
        assert_eq!(super::level(AV_LOG_INFO), log::Level::Info);
        assert_eq!(super::level(AV_LOG_VERBOSE), log::Level::Debug);
        assert_eq!(super::level(AV_LOG_TRACE), log::Level::Trace);
    }
}
