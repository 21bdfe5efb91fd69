//! Which URL schemes this FFmpeg can open: a protocol that needs an external library (TLS, libsrt)
//! may be missing from an FFmpeg nvcam runs on (nvcam's own builds have both), so a scheme nvcam
//! knows may still be one this build cannot serve.

use ff::ffi;
use ffmpeg_next as ff;
use std::ffi::CStr;

/// For a scheme that needs an FFmpeg protocol built only with an external library, when that
/// protocol is missing: the protocol and what it is.
pub(crate) fn missing_for(scheme: &str) -> Option<(&'static CStr, &'static str)> {
    const NEEDS: &[(&str, &CStr, &str)] =
        &[("rtsps", c"tls", "TLS"), ("https", c"tls", "TLS"), ("rtmps", c"tls", "TLS"), ("srt", c"srt", "SRT (libsrt)")];
    NEEDS.iter().copied().find(|(s, p, _)| s.eq_ignore_ascii_case(scheme) && !has_input_protocol(p)).map(|(_, p, w)| (p, w))
}

/// Whether this FFmpeg was built with input protocol `name`.
fn has_input_protocol(name: &CStr) -> bool {
    let mut opaque = std::ptr::null_mut();
    loop {
        // SAFETY: `opaque` is the iteration state FFmpeg keeps, null to start; the names are
        // static NUL-terminated strings, null after the last.
        let p = unsafe { ffi::avio_enum_protocols(&mut opaque, 0) };
        if p.is_null() {
            return false;
        }
        // SAFETY: as above.
        if unsafe { CStr::from_ptr(p) } == name {
            return true;
        }
    }
}
