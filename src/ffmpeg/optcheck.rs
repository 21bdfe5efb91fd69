//! A host's FFmpeg option values, checked against FFmpeg's own option tables before anything is
//! opened. FFmpeg reports a bad value only as "Invalid argument" from the open (which a camera
//! would then retry forever); here a value no demuxer or protocol would take is a configuration
//! error that names the option (by its key: a value may be a secret), and is never retried.
//!
//! A key may be defined by several classes (the format context, each demuxer, each protocol):
//! the value is accepted if any definition takes it. Unknown keys are left to the open, whose
//! leftover check names them.

use crate::status::*;
use ff::ffi;
use ffmpeg_next as ff;
use std::ffi::{c_void, CStr, CString};

/// The option definitions named `key` on the format context's class and every child class.
fn definitions(key: &CStr) -> Vec<(*const ffi::AVClass, *const ffi::AVOption)> {
    let mut out = Vec::new();
    // SAFETY: a static class description.
    let root = unsafe { ffi::avformat_get_class() };
    let mut find = |class: *const ffi::AVClass| {
        let mut fake = class;
        // SAFETY: FAKE_OBJ makes `obj` a pointer to a class pointer, only read; `key` is
        // NUL-terminated; the result is a static option table entry or null.
        let o = unsafe {
            ffi::av_opt_find2(&mut fake as *mut _ as *mut c_void, key.as_ptr(), std::ptr::null(), 0, ffi::AV_OPT_SEARCH_FAKE_OBJ, std::ptr::null_mut())
        };
        if !o.is_null() {
            out.push((class, o));
        }
    };
    find(root);
    let mut iter: *mut c_void = std::ptr::null_mut();
    loop {
        // SAFETY: iterates the static child classes of a static class; `iter` is its cursor.
        let child = unsafe { ffi::av_opt_child_class_iterate(root, &mut iter) };
        if child.is_null() {
            return out;
        }
        find(child);
    }
}

/// Whether `value` names a constant of `unit` in `class`.
fn is_constant(class: *const ffi::AVClass, unit: *const std::ffi::c_char, value: &CStr) -> bool {
    if unit.is_null() {
        return false;
    }
    let mut fake = class;
    // SAFETY: as in `definitions`; `unit` is the option's static unit name.
    let o = unsafe { ffi::av_opt_find2(&mut fake as *mut _ as *mut c_void, value.as_ptr(), unit, 0, ffi::AV_OPT_SEARCH_FAKE_OBJ, std::ptr::null_mut()) };
    // SAFETY: null or a static option table entry.
    unsafe { o.as_ref() }.is_some_and(|o| o.type_ == ffi::AVOptionType::AV_OPT_TYPE_CONST)
}

/// A number as FFmpeg's option parser reads one (expressions and SI suffixes: "5M", "1e6").
fn number(value: &CStr) -> Option<f64> {
    if value.to_bytes().is_empty() {
        return None;
    }
    let mut d = 0.0;
    // SAFETY: a NUL-terminated expression; no names or functions (null lists).
    let r = unsafe {
        ffi::av_expr_parse_and_eval(
            &mut d,
            value.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
        )
    };
    (r >= 0 && d.is_finite()).then_some(d)
}

/// An option's bound as text. FFmpeg keeps the bounds of integer options as doubles, where
/// `INT64_MAX` reads 9223372036854775808 (and Rust's `{}` of that double, 9223372036854776000):
/// an integer option's bound is shown as the integer it stands for.
fn bound(d: f64, ty: ffi::AVOptionType) -> String {
    use ffi::AVOptionType::*;
    match ty {
        AV_OPT_TYPE_UINT64 if d >= u64::MAX as f64 => u64::MAX.to_string(),
        AV_OPT_TYPE_INT | AV_OPT_TYPE_INT64 | AV_OPT_TYPE_UINT64 if d >= i64::MAX as f64 => i64::MAX.to_string(),
        AV_OPT_TYPE_INT | AV_OPT_TYPE_INT64 | AV_OPT_TYPE_UINT64 if d <= i64::MIN as f64 => i64::MIN.to_string(),
        AV_OPT_TYPE_INT | AV_OPT_TYPE_INT64 | AV_OPT_TYPE_UINT64 if d.fract() == 0.0 => (d as i64).to_string(),
        _ => d.to_string(),
    }
}

/// Whether the definition `o` of `class` takes `value`; otherwise what it expects.
fn accepts(class: *const ffi::AVClass, o: &ffi::AVOption, value: &CStr) -> std::result::Result<(), String> {
    use ffi::AVOptionType::*;
    let in_range = |d: f64| d >= o.min && d <= o.max;
    let range = || format!("a number from {} to {}", bound(o.min, o.type_), bound(o.max, o.type_));
    match o.type_ {
        AV_OPT_TYPE_INT | AV_OPT_TYPE_INT64 | AV_OPT_TYPE_UINT64 | AV_OPT_TYPE_DOUBLE | AV_OPT_TYPE_FLOAT => {
            if is_constant(class, o.unit, value) || number(value).is_some_and(in_range) {
                Ok(())
            } else {
                Err(range())
            }
        }
        AV_OPT_TYPE_FLAGS => {
            let s = value.to_str().unwrap_or("");
            let ok = !s.is_empty()
                && s.split(['+', '-', '|']).filter(|t| !t.is_empty()).all(|t| {
                    CString::new(t).is_ok_and(|t| is_constant(class, o.unit, &t) || number(&t).is_some())
                });
            ok.then_some(()).ok_or_else(|| "flag names joined with '+'".to_string())
        }
        AV_OPT_TYPE_BOOL => {
            let s = value.to_str().unwrap_or("").to_ascii_lowercase();
            let named = ["true", "false", "yes", "no", "enable", "disable", "auto", "y", "n"].contains(&s.as_str());
            (named || number(value).is_some_and(in_range)).then_some(()).ok_or_else(|| "true, false or auto".to_string())
        }
        AV_OPT_TYPE_DURATION => {
            let mut us = 0i64;
            // SAFETY: a NUL-terminated string; writes one integer.
            let r = unsafe { ffi::av_parse_time(&mut us, value.as_ptr(), 1) };
            (r >= 0).then_some(()).ok_or_else(|| "a duration (seconds, or [-][HH:]MM:SS[.m...])".to_string())
        }
        // Strings, dictionaries, sizes, rates, formats: FFmpeg parses those on open.
        _ => Ok(()),
    }
}

/// Fails with `ErrorKind::BadOption` for the first option whose key FFmpeg knows and whose value
/// no definition of that key takes.
pub(crate) fn check_values(pairs: &[(String, String)]) -> Result<()> {
    for (k, v) in pairs {
        let (Ok(key), Ok(value)) = (CString::new(k.as_str()), CString::new(v.as_str())) else { continue };
        let defs = definitions(&key);
        let mut expected = None;
        for (class, o) in &defs {
            // SAFETY: a static option table entry.
            match accepts(*class, unsafe { &**o }, &value) {
                Ok(()) => {
                    expected = None;
                    break;
                }
                Err(e) => expected = expected.or(Some(e)),
            }
        }
        if let Some(e) = expected {
            // Named by its key only: a value may be a secret.
            return Err(Error::new(ErrorKind::BadOption, format!("FFmpeg option '{k}' has an invalid value (expects {e})")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(k: &str, v: &str) -> Result<()> {
        check_values(&[(k.to_string(), v.to_string())])
    }

    #[test]
    fn bad_values_of_known_options_are_named() {
        for v in ["banana", "", "1", &"9".repeat(10_000)] {
            let e = check("probesize", v).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadOption, "{v:.20}: {}", e.msg);
            assert!(e.msg.contains("probesize") && e.msg.len() < 300, "{}", e.msg);
        }
        assert_eq!(check("rtsp_transport", "carrier_pigeon").unwrap_err().kind, ErrorKind::BadOption);
        // An int64 bound is an integer, not a double's rounding of one.
        let e = check("probesize", "1").unwrap_err();
        assert!(e.msg.contains("from 32 to 9223372036854775807)"), "{}", e.msg);
    }

    #[test]
    fn good_values_and_unknown_keys_pass() {
        for (k, v) in [("probesize", "5M"), ("probesize", "32"), ("rtsp_transport", "tcp"), ("rtsp_transport", "udp+tcp"),
            ("fpsprobesize", "0"), ("timeout", "5000000"), ("buffer_size", "1048576"), ("no_such_option", "x")] {
            assert!(check(k, v).is_ok(), "{k}={v}: {:?}", check(k, v));
        }
    }
}
