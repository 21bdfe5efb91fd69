//! The log: a file or stderr, a host callback, and the queue LabVIEW polls.

use super::constants::*;
use super::types::*;
use super::{boundary, c_str, marshal, out, text_out, write_text, Ctx};
use crate::logging;
use crate::status::*;
use std::ffi::{c_char, c_void};

/// Sends the log to a file (`path`, UTF-8; on Windows also the ANSI code page), to stderr
/// (`"-"`), or only to the callback and the poll queue (NULL or ""), at `level` (`NVCAM_LOG_*`).
/// Callable before `nvcam_init`.
///
/// Returns: NVCAM_OK, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_IO, NVCAM_E_PANIC
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_init(path: *const c_char, level: i32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let path = if path.is_null() { "".into() } else { unsafe { c_str(path, "path") }? };
        logging::init(&path, marshal::log_filter(level)?).map_err(|m| Error::new(ErrorKind::Io, m))
    })
}

/// Sets (or with NULL clears) a callback that receives every message at `min_level` or more
/// severe. Called from any thread, never with nvcam's locks held; cleared by `nvcam_shutdown`.
///
/// Returns: NVCAM_OK, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_PANIC
///
/// # Safety
/// `callback` is NULL or a function that may be called from any thread with `user` until it is
/// replaced or `nvcam_shutdown` returns.
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_set_callback(callback: nvcam_log_fn, user: *mut c_void, min_level: i32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        let min = marshal::log_filter(min_level)?;
        let sink = callback.map(|f| {
            let user = user as usize;
            Box::new(move |level: log::Level, text: &std::ffi::CStr| {
                // SAFETY: the host gave this function and `user` for exactly this call, valid
                // until replaced or shutdown (contract); `text` lives for the call.
                unsafe { f(marshal::log_level(level), text.as_ptr(), user as *mut c_void) }
            }) as logging::Sink
        });
        logging::set_callback(sink, min);
        Ok(())
    })
}

/// Pops the oldest queued log message (for hosts that poll, like LabVIEW): `*level` gets its
/// level, `buf` its text, `*msg_len` its length in bytes, 0 when the queue is empty. A message that
/// does not fit in `len` bytes (with its NUL) stays queued: the call returns
/// `NVCAM_E_BUFFER_TOO_SMALL` with `*msg_len` set, so the host can grow its buffer and call again
/// (`len` 0 asks only for the length: nothing is written to `buf`).
/// The queue keeps the newest 1024 messages at the `nvcam_log_init` level (default warnings).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_PANIC
///
/// # Safety
/// `level` and `msg_len` are NULL or writable for an `int32_t`; `buf` is NULL or writable for
/// `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_pop(level: *mut i32, buf: *mut c_char, len: i32, msg_len: *mut i32) -> i32 {
    boundary(export_name!(), Ctx::Quiet, || {
        // SAFETY: forwarded from this function's contract (all three).
        let (lvl, n) = unsafe { (out(level, "level")?, out(msg_len, "msg_len")?) };
        // A host asking how long the next message is passes no room (`len` 0, `buf` NULL or
        // not): the length is still written, and nothing else.
        let mut none = [0u8; 0];
        let buf = if len <= 0 {
            &mut none[..]
        } else {
            // SAFETY: forwarded from this function's contract.
            unsafe { text_out(buf, len) }?
        };
        logging::ensure_installed();
        match logging::pop_if_fits(buf.len()) {
            Ok(Some((l, m))) => {
                *lvl = marshal::log_level(l);
                *n = m.len() as i32;
                write_text(buf, &m)
            }
            Ok(None) => {
                *lvl = NVCAM_LOG_OFF;
                *n = 0;
                if buf.is_empty() {
                    return Ok(());
                }
                write_text(buf, "")
            }
            Err((l, needed)) => {
                *lvl = marshal::log_level(l);
                *n = needed as i32;
                if !buf.is_empty() {
                    let _ = write_text(buf, "");
                }
                Err(Error::new(ErrorKind::BufferTooSmall, format!("the next log message needs {} bytes", needed + 1)))
            }
        }
    })
}
