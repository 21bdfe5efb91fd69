//! The C surface: every exported function, and the only code that touches a caller's pointers.
//!
//! One file per C object (`library`, `camera`, `frame`, `log`, `gpu`); the `#[repr(C)]` types are
//! in [`types`], the constants in [`constants`], the status codes in [`status`]; [`marshal`] is the
//! only place C structs are built or read. Every export runs its body in [`boundary`] (panics caught, errors
//! turned into status codes, recorded as the thread's and the camera's last error, logged where
//! they happen) and reads its pointer
//! arguments through the checked helpers below, so each `unsafe` here is one of a handful of
//! shapes, each justified by the function's documented contract.

/// The name of the export it is called in, which is its C symbol (exports are `#[no_mangle]`,
/// named as their Rust function): what [`boundary`] puts before a failure's message, so that a
/// name is never typed a second time and cannot drift from the function.
macro_rules! export_name {
    () => {{
        fn f() {}
        let path = std::any::type_name_of_val(&f);
        let path = path.strip_suffix("::f").unwrap_or(path);
        path.rsplit("::").next().unwrap_or(path)
    }};
}

mod ansi;
pub mod camera;
pub mod frame;
pub mod gpu;
pub mod library;
pub mod log;
pub mod lv;
pub(crate) mod marshal;
pub mod status;
pub mod record;
pub mod types;
pub mod constants;

use crate::status::*;
use status::{code, NVCAM_OK};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// What a call concerns, so its error is also kept where a host that hops threads finds it.
#[derive(Clone, Copy)]
pub(crate) enum Ctx {
    /// Library-level call: the error goes to the thread's last error and the log.
    Lib,
    /// A call on a camera: also recorded as that camera's last error.
    Camera(u64),
    /// A call on a frame: also recorded on the frame's camera, while the frame is still valid.
    Frame(u64),
    /// The log calls themselves: never logged, or a failing poll would refill the queue it drains.
    Quiet,
}

/// The text of a caught panic.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs an export's body: catches panics, records and logs errors, returns the status code.
/// LabVIEW may run the next call on another thread, so errors on a camera or frame are kept on
/// the camera too (`nvcam_camera_last_error`).
pub(crate) fn boundary(name: &str, ctx: Ctx, body: impl FnOnce() -> Result<()>) -> i32 {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
    let r = catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|p| Err(Error::new(ErrorKind::Panic, format!("panic in {name}: {}", panic_text(&*p)))));
    let Err(e) = r else { return NVCAM_OK };
    let e = Error { msg: format!("{name}: {}", e.msg), ..e };
    match ctx {
        Ctx::Quiet => {}
        // Expected outcomes of a wait, not faults.
        _ if e.kind.is_wait_outcome() => ::log::debug!("{e}"),
        // A failed camera's state, asked again and again by a polling host; its reason was
        // logged (WARN) once, when it failed.
        _ if e.expected && e.kind == ErrorKind::Failed => ::log::debug!("{e}"),
        _ if e.expected => ::log::info!("{e}"),
        _ => ::log::warn!("{e}"),
    }
    let cam = match ctx {
        Ctx::Camera(c) => Some(c),
        Ctx::Frame(f) => crate::registry::get(f).ok().map(|f| f.owner),
        Ctx::Lib | Ctx::Quiet => None,
    };
    if let Some(c) = cam.filter(|_| !e.expected).and_then(|c| crate::library::camera(c).ok()) {
        c.note_api_error(&e);
    }
    let code = code(e.kind);
    LAST_ERROR.with(|l| *l.borrow_mut() = Some(e));
    code
}

/// The calling thread's last error, without clearing it (for `nvcam_last_error`).
pub(crate) fn last_error_text() -> String {
    LAST_ERROR.with(|e| e.borrow().as_ref().map(|e| e.to_string()).unwrap_or_default())
}

/// A caller's out-parameter: NULL is an error.
///
/// # Safety
/// `p` is NULL or valid for reads and writes of a `T` for the duration of the call (the
/// export's documented contract).
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: non-null `p` is valid for writes per this function's contract.
    unsafe { p.as_mut() }.ok_or_else(|| Error::null(what))
}

/// An optional out-parameter: NULL means the caller does not want it.
///
/// # Safety
/// As [`out`].
pub(crate) unsafe fn out_opt<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: non-null `p` is valid for writes per this function's contract.
    unsafe { p.as_mut() }
}

/// Reads a caller struct that starts with `struct_size`, requiring at least `size_of::<T>()`
/// bytes; NULL is `None` (defaults).
///
/// # Safety
/// `p` is NULL or points to at least `struct_size` readable bytes, where `struct_size` is the
/// struct's first field (the header's convention).
pub(crate) unsafe fn sized<'a, T>(p: *const T, what: &str) -> Result<Option<&'a T>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: every versioned struct starts with a u32 `struct_size`; `p` is readable for it.
    let size = unsafe { p.cast::<u32>().read_unaligned() };
    if (size as usize) < std::mem::size_of::<T>() {
        return Err(Error::new(
            ErrorKind::StructTooSmall,
            format!("{what}.struct_size is {size}, expected {}", std::mem::size_of::<T>()),
        ));
    }
    // SAFETY: the caller declared at least size_of::<T>() readable bytes, checked just above.
    Ok(Some(unsafe { &*p }))
}

/// A caller struct to fill: non-NULL, with a `struct_size` at least `size_of::<T>()`.
///
/// # Safety
/// As [`sized`], and writable.
pub(crate) unsafe fn sized_out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: forwarded contract.
    let r = unsafe { out(p, what) }?;
    // SAFETY: `r` is a valid reference, so readable for its struct_size.
    unsafe { sized(r as *const T, what) }?;
    Ok(r)
}

/// Fills a caller struct that may be an older, shorter version of `T` (at least `min` bytes, the
/// first version's size): writes `value` up to the caller's `struct_size` and never past it, so a
/// host compiled against an earlier header keeps working and gets the fields it knows.
///
/// # Safety
/// `p` is NULL or points to at least `struct_size` writable bytes, where `struct_size` is the
/// struct's first field.
pub(crate) unsafe fn fill_versioned<T: Copy>(p: *mut T, min: u32, what: &str, value: impl FnOnce(u32) -> Result<T>) -> Result<()> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: every versioned struct starts with a u32 `struct_size`; `p` is readable for it.
    let size = unsafe { p.cast::<u32>().read_unaligned() };
    if size < min {
        return Err(Error::new(ErrorKind::StructTooSmall, format!("{what}.struct_size is {size}, expected at least {min}")));
    }
    let v = value(size)?;
    let n = (size as usize).min(std::mem::size_of::<T>());
    // SAFETY: `v` is a plain-data struct of size_of::<T>() >= n bytes; the caller declared `size`
    // >= n writable bytes at `p`; the two cannot overlap (`v` is a local).
    unsafe { std::ptr::copy_nonoverlapping((&v as *const T).cast::<u8>(), p.cast::<u8>(), n) };
    Ok(())
}

/// A caller's NUL-terminated string: UTF-8, or on Windows a string in the ANSI code page (what
/// LabVIEW passes) when it is not valid UTF-8 (see [`ansi`]).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string readable for the duration of the call.
pub(crate) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<Cow<'a, str>> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    let s = unsafe { CStr::from_ptr(p) };
    if let Ok(t) = s.to_str() {
        return Ok(Cow::Borrowed(t));
    }
    match ansi::from_ansi(s.to_bytes()) {
        Some(t) => {
            ::log::debug!("{what}: not UTF-8, read in the ANSI code page as {t:?}");
            Ok(Cow::Owned(t))
        }
        None if cfg!(windows) => Err(Error::arg(format!("{what} is neither UTF-8 nor text in the ANSI code page"))),
        None => Err(Error::arg(format!("{what} is not valid UTF-8"))),
    }
}

/// A caller's byte buffer of `len` bytes.
///
/// # Safety
/// `p` is NULL or valid for writes of `len` bytes for the duration of the call.
pub(crate) unsafe fn bytes_out<'a>(p: *mut u8, len: u64, what: &str) -> Result<&'a mut [u8]> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    let len = usize::try_from(len).map_err(|_| Error::arg(format!("{what} size {len} exceeds the address space")))?;
    if len > isize::MAX as usize {
        return Err(Error::arg(format!("{what} size {len} exceeds the address space")));
    }
    // SAFETY: non-null, writable for `len` bytes (contract), and `len` fits a slice.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// A caller's text buffer `(buf, len)`, as bytes.
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes.
pub(crate) unsafe fn text_out<'a>(buf: *mut c_char, len: i32) -> Result<&'a mut [u8]> {
    if buf.is_null() {
        return Err(Error::null("buf"));
    }
    if len <= 0 {
        return Err(Error::new(ErrorKind::BufferTooSmall, "buffer length must be positive"));
    }
    // SAFETY: non-null and writable for `len` (> 0) bytes per the contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len as usize) })
}

/// Writes `s` NUL-terminated into `buf`, truncating at a character boundary if it does not fit
/// (then `NVCAM_E_BUFFER_TOO_SMALL`, with the text still written).
pub(crate) fn write_text(buf: &mut [u8], s: &str) -> Result<()> {
    let Some(cap) = buf.len().checked_sub(1) else {
        return Err(Error::new(ErrorKind::BufferTooSmall, "buffer length must be positive"));
    };
    let mut n = s.len().min(cap);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    buf[n] = 0;
    if n < s.len() {
        Err(Error::new(ErrorKind::BufferTooSmall, format!("text needs {} bytes", s.len() + 1)))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod export_name_tests {
    fn nvcam_an_export() -> &'static str {
        export_name!()
    }

    #[test]
    fn an_export_is_named_by_its_function() {
        assert_eq!(nvcam_an_export(), "nvcam_an_export");
    }
}
