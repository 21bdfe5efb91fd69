//! The library object: version, init, shutdown, status texts, the thread's last error.

use super::constants::*;
use super::types::*;
use super::status::{code, describe, NVCAM_E_PANIC, NVCAM_OK};
use super::{boundary, marshal, sized, text_out, write_text, Ctx};
use std::ffi::c_char;
use std::panic::catch_unwind;
use std::time::Duration;

/// nvcam's version at build time, for `#if` in C (the header also has `NVCAM_VERSION_STRING`,
/// "MAJOR.MINOR.PATCH"; the loaded library's: `nvcam_version_string`). These literals are what the
/// header shows; the build fails unless they equal `Cargo.toml`'s version, which the Python
/// package takes as well.
pub const NVCAM_VERSION_MAJOR: i32 = 0;
pub const NVCAM_VERSION_MINOR: i32 = 1;
pub const NVCAM_VERSION_PATCH: i32 = 0;

const fn digits(s: &str) -> i32 {
    let (b, mut i, mut n) = (s.as_bytes(), 0, 0);
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as i32;
        i += 1;
    }
    n
}
const _: () = assert!(
    NVCAM_VERSION_MAJOR == digits(env!("CARGO_PKG_VERSION_MAJOR"))
        && NVCAM_VERSION_MINOR == digits(env!("CARGO_PKG_VERSION_MINOR"))
        && NVCAM_VERSION_PATCH == digits(env!("CARGO_PKG_VERSION_PATCH")),
    "NVCAM_VERSION_* in src/ffi/library.rs differ from Cargo.toml's version: update them, then `cargo xtask gen`"
);

/// The ABI major version of the loaded library (compare with `NVCAM_ABI_VERSION` from the header).
///
/// Returns: the ABI major (`NVCAM_ABI_VERSION`), not a status code.
#[no_mangle]
pub extern "C" fn nvcam_abi_version() -> i32 {
    NVCAM_ABI_VERSION
}

/// Writes the library version ("nvcam 0.1.0 (abi 1)") into `buf` of `len` bytes.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_version_string(buf: *mut c_char, len: i32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let buf = unsafe { text_out(buf, len) }?;
        write_text(buf, &format!("nvcam {} (abi {NVCAM_ABI_VERSION})", env!("CARGO_PKG_VERSION")))
    })
}

/// Initializes the library (NULL = defaults; reserved `flags` bits must be 0). Calling it again
/// while initialized is a no-op; after `nvcam_shutdown` it initializes afresh. Pins the library in
/// the process on first call. On Windows it loads the FFmpeg DLLs, from nvcam.dll's own folder:
/// `NVCAM_E_FFMPEG` if one cannot be loaded (`nvcam_last_error` names it and the folder).
/// `NVCAM_E_FFMPEG` too if nvcam's FFmpeg calls reach another FFmpeg build than the one it ships
/// with (`nvcam_last_error` names the library file that answered).
///
/// Returns: NVCAM_OK, NVCAM_E_STRUCT_SIZE, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_FFMPEG, NVCAM_E_PANIC
///
/// # Safety
/// `config` is NULL or points to an `nvcam_config_t` whose `struct_size` bytes are readable.
#[no_mangle]
pub unsafe extern "C" fn nvcam_init(config: *const nvcam_config) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let c = unsafe { sized(config, "config") }?;
        crate::library::init(marshal::config_from(c)?)
    })
}

/// Closes every camera, invalidates every frame handle (leaked ones included, and counted in the
/// log), joins every thread and frees all memory, within `timeout_ms`. Old handles return
/// `NVCAM_E_STALE_HANDLE` afterwards. `NVCAM_E_TIMEOUT` if a thread was still running at the end.
///
/// Returns: NVCAM_OK, NVCAM_E_NOT_INITIALIZED, NVCAM_E_TIMEOUT, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_shutdown(timeout_ms: u32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        crate::library::shutdown(Duration::from_millis(timeout_ms as u64)).map(|_| ())
    })
}

/// Writes "NAME: description" of a status code into `buf`.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_status_text(code: i32, buf: *mut c_char, len: i32) -> i32 {
    boundary(export_name!(), Ctx::Quiet, || {
        let text = match describe(code) {
            Some((n, d)) => format!("{n}: {d}"),
            None => format!("unknown status {code}"),
        };
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &text)
    })
}

/// The last error of the calling thread's previous nvcam call ("" if it succeeded).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_PANIC
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_last_error(buf: *mut c_char, len: i32) -> i32 {
    // Not through `boundary`: that would clear the very error being read.
    let r = catch_unwind(|| {
        let text = super::last_error_text();
        // SAFETY: forwarded from this function's contract.
        write_text(unsafe { text_out(buf, len) }?, &text)
    });
    match r {
        Ok(Ok(())) => NVCAM_OK,
        Ok(Err(e)) => code(e.kind),
        Err(_) => NVCAM_E_PANIC,
    }
}
