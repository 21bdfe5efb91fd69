//! The C status codes: every kind of error as the `int32_t` a host sees, with the names and
//! descriptions `nvcam_status_text`, docs/api.md and LabVIEW's error file show.
//!
//! Every export returns an `int32_t`: 0 is success, errors are negative and live inside LabVIEW's
//! user range −8999..−8000, so a wrapper VI can put the code into an error cluster unchanged and
//! LabVIEW's General Error Handler can show the text from `labview-example/nvcam-errors.txt`.
//! The library decides on [`ErrorKind`]s; [`code`] is the one place a kind becomes a code, and an
//! error's text form names its code, so it is defined here too.

use crate::status::{Error, ErrorKind};
use std::fmt;

/// Success.
pub const NVCAM_OK: i32 = 0;
/// A required pointer argument was NULL.
pub const NVCAM_E_NULL_POINTER: i32 = -8001;
/// An argument is out of range or malformed (bad URL, bad option value, bad flag).
pub const NVCAM_E_INVALID_ARGUMENT: i32 = -8002;
/// The caller's buffer is too small; text outputs are still written, truncated.
pub const NVCAM_E_BUFFER_TOO_SMALL: i32 = -8003;
/// `struct_size` of a struct is smaller than the first version of that struct.
pub const NVCAM_E_STRUCT_SIZE: i32 = -8004;
/// `nvcam_init` has not been called (or `nvcam_shutdown` has).
pub const NVCAM_E_NOT_INITIALIZED: i32 = -8005;
/// The handle is 0.
pub const NVCAM_E_NULL_HANDLE: i32 = -8010;
/// The handle was never issued by this library instance.
pub const NVCAM_E_INVALID_HANDLE: i32 = -8011;
/// The handle is a valid handle of another type (a camera passed as a frame).
pub const NVCAM_E_WRONG_HANDLE_TYPE: i32 = -8012;
/// The handle was released, force-released, or belongs to a library session that was shut down.
pub const NVCAM_E_STALE_HANDLE: i32 = -8013;
/// The camera is closed or closing.
pub const NVCAM_E_CLOSED: i32 = -8014;
/// A wait ran out (no new frame, open or close past its deadline).
pub const NVCAM_E_TIMEOUT: i32 = -8020;
/// The source could not be opened or read (refused, unreachable, not found, I/O error).
pub const NVCAM_E_IO: i32 = -8021;
/// The server refused our credentials.
pub const NVCAM_E_AUTH: i32 = -8022;
/// The server's TLS certificate failed verification; the text names the reason (unknown issuer,
/// name mismatch, expired, pin mismatch). Permanent: the camera ends `FAILED`.
pub const NVCAM_E_TLS_VERIFY: i32 = -8029;
/// No decoder for this codec on the chosen path, or no video stream in the source.
pub const NVCAM_E_UNSUPPORTED: i32 = -8023;
/// An FFmpeg call failed; the text names the call and FFmpeg's error.
pub const NVCAM_E_FFMPEG: i32 = -8024;
/// A CUDA driver call failed; the text names the call and CUDA's error name.
pub const NVCAM_E_CUDA: i32 = -8025;
/// An FFmpeg option was not consumed by the demuxer or protocol (misspelled or unsupported).
pub const NVCAM_E_BAD_OPTION: i32 = -8026;
/// The camera gave up after a permanent failure (bad URL, auth) and will not retry by itself.
pub const NVCAM_E_FAILED: i32 = -8027;
/// A wait was cancelled (`nvcam_camera_cancel_wait`, or LabVIEW's Abort of the node that
/// waited); the camera is untouched and later waits work normally.
pub const NVCAM_E_CANCELLED: i32 = -8028;
/// Out of memory (host or device).
pub const NVCAM_E_OUT_OF_MEMORY: i32 = -8030;
/// A GPU was requested but none is usable.
pub const NVCAM_E_NO_DEVICE: i32 = -8031;
/// A Rust panic was caught at the boundary; the library stays usable.
pub const NVCAM_E_PANIC: i32 = -8040;
/// An internal invariant failed; please report with the log.
pub const NVCAM_E_INTERNAL: i32 = -8041;

/// Every code with its name and a one-line description, for `nvcam_status_text`, docs/api.md and
/// LabVIEW's error file (a test keeps the three in step).
pub const ALL: &[(i32, &str, &str)] = &[
    (NVCAM_OK, "NVCAM_OK", "success"),
    (NVCAM_E_NULL_POINTER, "NVCAM_E_NULL_POINTER", "a required pointer argument was NULL"),
    (NVCAM_E_INVALID_ARGUMENT, "NVCAM_E_INVALID_ARGUMENT", "an argument is out of range or malformed"),
    (NVCAM_E_BUFFER_TOO_SMALL, "NVCAM_E_BUFFER_TOO_SMALL", "the caller's buffer is too small"),
    (NVCAM_E_STRUCT_SIZE, "NVCAM_E_STRUCT_SIZE", "struct_size is smaller than the struct's first version"),
    (NVCAM_E_NOT_INITIALIZED, "NVCAM_E_NOT_INITIALIZED", "nvcam_init has not been called"),
    (NVCAM_E_NULL_HANDLE, "NVCAM_E_NULL_HANDLE", "the handle is 0"),
    (NVCAM_E_INVALID_HANDLE, "NVCAM_E_INVALID_HANDLE", "the handle was never issued by this library"),
    (NVCAM_E_WRONG_HANDLE_TYPE, "NVCAM_E_WRONG_HANDLE_TYPE", "the handle is of another type"),
    (NVCAM_E_STALE_HANDLE, "NVCAM_E_STALE_HANDLE", "the handle was released or its session shut down"),
    (NVCAM_E_CLOSED, "NVCAM_E_CLOSED", "the camera is closed"),
    (NVCAM_E_TIMEOUT, "NVCAM_E_TIMEOUT", "the wait ran out"),
    (NVCAM_E_IO, "NVCAM_E_IO", "the source could not be opened or read"),
    (NVCAM_E_AUTH, "NVCAM_E_AUTH", "the server refused the credentials"),
    (NVCAM_E_TLS_VERIFY, "NVCAM_E_TLS_VERIFY", "the server's TLS certificate failed verification"),
    (NVCAM_E_UNSUPPORTED, "NVCAM_E_UNSUPPORTED", "codec or stream not supported on this path"),
    (NVCAM_E_FFMPEG, "NVCAM_E_FFMPEG", "an FFmpeg call failed"),
    (NVCAM_E_CUDA, "NVCAM_E_CUDA", "a CUDA driver call failed"),
    (NVCAM_E_BAD_OPTION, "NVCAM_E_BAD_OPTION", "an FFmpeg option was not consumed"),
    (NVCAM_E_FAILED, "NVCAM_E_FAILED", "the camera failed permanently and does not retry"),
    (NVCAM_E_CANCELLED, "NVCAM_E_CANCELLED", "the wait was cancelled"),
    (NVCAM_E_OUT_OF_MEMORY, "NVCAM_E_OUT_OF_MEMORY", "out of host or device memory"),
    (NVCAM_E_NO_DEVICE, "NVCAM_E_NO_DEVICE", "no usable GPU"),
    (NVCAM_E_PANIC, "NVCAM_E_PANIC", "a panic was caught inside the library"),
    (NVCAM_E_INTERNAL, "NVCAM_E_INTERNAL", "internal error"),
];

/// The name and description of a status code, if it is one of ours.
pub fn describe(code: i32) -> Option<(&'static str, &'static str)> {
    ALL.iter().find(|(c, _, _)| *c == code).map(|(_, n, d)| (*n, *d))
}

/// The status code a host sees for an error of `kind`. No wildcard arm: a new kind gets its code
/// here or does not compile.
pub fn code(kind: ErrorKind) -> i32 {
    use ErrorKind::*;
    match kind {
        NullPointer => NVCAM_E_NULL_POINTER,
        InvalidArgument => NVCAM_E_INVALID_ARGUMENT,
        BufferTooSmall => NVCAM_E_BUFFER_TOO_SMALL,
        StructTooSmall => NVCAM_E_STRUCT_SIZE,
        NotInitialized => NVCAM_E_NOT_INITIALIZED,
        NullHandle => NVCAM_E_NULL_HANDLE,
        UnknownHandle => NVCAM_E_INVALID_HANDLE,
        WrongHandleType => NVCAM_E_WRONG_HANDLE_TYPE,
        StaleHandle => NVCAM_E_STALE_HANDLE,
        Closed => NVCAM_E_CLOSED,
        TimedOut => NVCAM_E_TIMEOUT,
        Io => NVCAM_E_IO,
        Auth => NVCAM_E_AUTH,
        TlsVerify => NVCAM_E_TLS_VERIFY,
        Unsupported => NVCAM_E_UNSUPPORTED,
        Ffmpeg => NVCAM_E_FFMPEG,
        Cuda => NVCAM_E_CUDA,
        BadOption => NVCAM_E_BAD_OPTION,
        Failed => NVCAM_E_FAILED,
        Cancelled => NVCAM_E_CANCELLED,
        OutOfMemory => NVCAM_E_OUT_OF_MEMORY,
        NoDevice => NVCAM_E_NO_DEVICE,
        Panic => NVCAM_E_PANIC,
        Internal => NVCAM_E_INTERNAL,
    }
}

/// "NVCAM_E_NAME: message", the text `nvcam_last_error`, `nvcam_camera_last_error` and the log
/// give a host.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = describe(code(self.kind)).map(|d| d.0).unwrap_or("NVCAM_E_?");
        write!(f, "{name}: {}", self.msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn every_error_code_is_in_labviews_user_range_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for (code, name, _) in ALL {
            assert!(seen.insert(*code), "duplicate code {code}");
            assert!(name.starts_with("NVCAM_"));
            if *code != 0 {
                assert!((-8999..=-8000).contains(code), "{name} = {code} outside LabVIEW's user range");
            }
        }
    }

    /// A kind without a listed code would reach the host as "NVCAM_E_?"; a code no kind maps to
    /// is documented but never returned; two kinds on one code would make a host's branch on
    /// the code blind to a difference the library acts on (every kind is its own code today).
    #[test]
    fn kinds_and_error_codes_map_one_to_one() {
        let mut kind_of: HashMap<i32, ErrorKind> = HashMap::new();
        for &k in ErrorKind::ALL {
            let c = code(k);
            assert!(c != NVCAM_OK, "{k:?} maps to NVCAM_OK");
            assert!(describe(c).is_some(), "{k:?} maps to {c}, which is not in ALL");
            if let Some(other) = kind_of.insert(c, k) {
                panic!("{other:?} and {k:?} both map to {c}");
            }
        }
        for (c, name, _) in ALL.iter().filter(|(c, _, _)| *c != NVCAM_OK) {
            assert!(kind_of.contains_key(c), "{name} is not reachable from any ErrorKind");
        }
    }

    #[test]
    fn an_errors_text_names_its_code() {
        assert_eq!(Error::new(ErrorKind::TimedOut, "no frame").to_string(), "NVCAM_E_TIMEOUT: no frame");
        assert_eq!(Error::new(ErrorKind::UnknownHandle, "x").to_string(), "NVCAM_E_INVALID_HANDLE: x");
    }
}
