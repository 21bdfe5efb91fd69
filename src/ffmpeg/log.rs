//! FFmpeg's messages through nvcam's log (and so its file, callback and poll queue) instead of
//! stderr, with the camera they belong to where FFmpeg ran on that camera's thread.
//!
//! `av_log_set_callback` sets a global of the libavutil it is called in, and FFmpeg calls the
//! callback from any thread (its own decoder threads included), with a C `va_list`. nvcam's
//! libavutil is its own (`libavutil_nvcam`, see `super::own`), so this routing never replaces the
//! callback of an FFmpeg the host uses, nor the host's nvcam's. The callback lets FFmpeg format the line
//! (`av_log_format_line2`, so no variadic handling on our side) into a fixed buffer on the stack,
//! checks the level before any work, allocates only the bounded line, and never unwinds into C.

use ffmpeg_next::ffi;
use std::cell::RefCell;
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
    // SAFETY: reads FFmpeg's global level (an int).
    let shown = l != ffi::AV_LOG_QUIET as c_int && l <= unsafe { ffi::av_log_get_level() };
    let lvl = level(l);
    if !shown || !log::log_enabled!(target: "nvcam::ffmpeg", lvl) || fmt.is_null() {
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
        if line.is_empty() {
            return;
        }
        // FFmpeg names URLs (with their credentials and SRT passphrase) in its own lines.
        let line = crate::redact::redact(line);
        let cam = CAMERA.try_with(|c| c.borrow().clone()).ok().flatten();
        match cam {
            Some(c) => log::log!(target: "nvcam::ffmpeg", lvl, "camera {c}: FFmpeg: {line}"),
            None => log::log!(target: "nvcam::ffmpeg", lvl, "FFmpeg: {line}"),
        }
    });
}

/// Routes nvcam's FFmpeg's log into ours, once per process (the library stays loaded, so the
/// callback stays valid).
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: sets nvcam's libavutil's log callback to a function that lives as long as the
    // process (the library is pinned) and honours the callback contract (see `on_log`).
    ONCE.call_once(|| unsafe { ffi::av_log_set_callback(Some(on_log)) });
}

#[cfg(test)]
mod tests {
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
