//! nvcam runs only on its own FFmpeg build. The build (scripts/build/) gives the libraries private
//! names and symbol versions (`libavformat_nvcam.so.59` with `NVCAM_LIBAVFORMAT_59`,
//! `avformat_nvcam-59.dll`), so a host that loaded the distribution's FFmpeg of the same major
//! versions cannot capture nvcam's calls; [`check`] makes sure of it at init, because without
//! nvcam's patches a camera would run without certificate checks or loss reports, silently.

use crate::status::*;
use ffmpeg_next::ffi;
use std::ffi::{c_char, c_void, CStr};

/// `ffmpeg_suffix` of scripts/build/ffmpeg-common.sh: configure's `--build-suffix`, which the
/// libraries' configuration lines carry and their file names end with.
pub(crate) const BUILD_SUFFIX: &str = "_nvcam";

/// Checks that each FFmpeg library nvcam calls is its own build: its configuration line has
/// nvcam's `--build-suffix`, and the file that line is in has nvcam's name. The error names the
/// library that answered instead.
pub(crate) fn check() -> Result<()> {
    type Configuration = unsafe extern "C" fn() -> *const c_char;
    let libs: [(&str, Configuration); 5] = [
        ("libavutil", ffi::avutil_configuration),
        ("libavcodec", ffi::avcodec_configuration),
        ("libavformat", ffi::avformat_configuration),
        ("libavdevice", ffi::avdevice_configuration),
        ("libswscale", ffi::swscale_configuration),
    ];
    for (lib, f) in libs {
        // SAFETY: each `*_configuration` returns a static NUL-terminated string (never NULL).
        let p = unsafe { f() };
        // SAFETY: as above.
        let conf = unsafe { CStr::from_ptr(p) }.to_string_lossy();
        // The string is in the library that answered. (Not the function's address: on Windows
        // that is a delay-load thunk inside nvcam.dll.)
        let file = file_of(p as *const c_void);
        verify(lib, &conf, file.as_deref())?;
    }
    Ok(())
}

/// The decision of [`check`] for one library: its configuration line and the file that holds it
/// (None where the loader cannot say).
pub(crate) fn verify(lib: &str, configuration: &str, file: Option<&str>) -> Result<()> {
    let marker = format!("--build-suffix={BUILD_SUFFIX}");
    let configured = configuration.split_whitespace().any(|a| a.trim_matches(|c| c == '\'' || c == '"') == marker);
    // Linux libavformat_nvcam.so.59, Windows avformat_nvcam-59.dll.
    let stem = format!("{}{BUILD_SUFFIX}", lib.trim_start_matches("lib"));
    let named = file.is_none_or(|f| base_name(f).contains(&stem));
    if configured && named {
        return Ok(());
    }
    let from = file.map_or_else(|| "a library the loader does not name".to_string(), |f| format!("'{f}'"));
    let why = if configured { "its file is not nvcam's" } else { "it was not configured with nvcam's build suffix" };
    Err(Error::new(
        ErrorKind::Ffmpeg,
        format!(
            "nvcam's {lib} calls reach {from}, which is not nvcam's own FFmpeg build ({why}): another FFmpeg in this \
             process (preloaded, or a library swapped into nvcam's folder) took its place; nvcam runs only on the \
             FFmpeg it ships with ({lib}{BUILD_SUFFIX})"
        ),
    ))
}

fn base_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The file of the loaded library that holds `addr` (code or data).
#[cfg(unix)]
fn file_of(addr: *const c_void) -> Option<String> {
    /// glibc's `Dl_info`.
    #[repr(C)]
    struct DlInfo {
        fname: *const c_char,
        fbase: *mut c_void,
        sname: *const c_char,
        saddr: *mut c_void,
    }
    extern "C" {
        fn dladdr(addr: *const c_void, info: *mut DlInfo) -> i32;
    }
    let mut info = DlInfo { fname: std::ptr::null(), fbase: std::ptr::null_mut(), sname: std::ptr::null(), saddr: std::ptr::null_mut() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`; `fname`, when set, is a
    // NUL-terminated string owned by the loader for as long as the library stays mapped (FFmpeg's
    // stay for the life of the process: nvcam is pinned).
    unsafe {
        if dladdr(addr, &mut info) == 0 || info.fname.is_null() {
            return None;
        }
        Some(CStr::from_ptr(info.fname).to_string_lossy().into_owned())
    }
}

#[cfg(windows)]
fn file_of(addr: *const c_void) -> Option<String> {
    crate::win_loader::module_file(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prevents: nvcam running on the host's FFmpeg because the check accepts it. Fed what the
    /// distribution's libavformat.so.59 says of itself (loaded here privately, RTLD_LOCAL: its
    /// configuration line and its file), the check refuses and names that file; a library renamed
    /// into nvcam's place and a build with another suffix are refused too.
    #[cfg(target_os = "linux")]
    #[test]
    fn another_build_is_refused_and_named() {
        // SAFETY: loading Debian's libavformat runs only FFmpeg's own constructors (none touch
        // nvcam's state: its symbols have other versions); `avformat_configuration` has the C
        // signature declared here and returns a static string.
        let (conf, file) = unsafe {
            let lib = libloading::Library::new("libavformat.so.59")
                .expect("the distribution's libavformat.so.59 (Debian's libavformat59, from the ffmpeg package in .ci/packages.txt)");
            let f: libloading::Symbol<unsafe extern "C" fn() -> *const c_char> = lib.get(b"avformat_configuration\0").unwrap();
            let p = f();
            let conf = CStr::from_ptr(p).to_string_lossy().into_owned();
            let file = file_of(p as *const c_void).expect("dladdr names Debian's libavformat");
            std::mem::forget(lib);
            (conf, file)
        };
        assert!(file.ends_with("/libavformat.so.59") || file.contains("/libavformat.so.59."), "{file}");
        let e = verify("libavformat", &conf, Some(&file)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Ffmpeg);
        assert!(e.msg.contains(&format!("'{file}'")) && e.msg.contains("build suffix"), "{}", e.msg);
        // Another build that used a suffix of its own.
        assert!(verify("libavutil", "--build-suffix=_other --enable-shared", Some("/opt/x/libavutil_other.so.57")).is_err());
        // nvcam's configuration line, but the file is another (a library renamed into its place).
        let ours = "--prefix=<prefix> --enable-shared --disable-static --build-suffix=_nvcam --disable-programs";
        let e = verify("libavcodec", ours, Some("/opt/app/lib/libavcodec.so.59")).unwrap_err();
        assert!(e.msg.contains("its file is not nvcam's"), "{}", e.msg);
        assert!(verify("libavcodec", ours, Some("/opt/app/lib/libavcodec_nvcam.so.59")).is_ok());
        assert!(verify("libavcodec", ours, None).is_ok());
    }

    /// Prevents: an init that refuses nvcam's own libraries (every host would fail). The build this
    /// test runs on is nvcam's: the check passes on it, with its files named.
    #[test]
    fn own_build_passes() {
        check().unwrap();
        // SAFETY: a static string.
        let p = unsafe { ffi::avformat_configuration() };
        // SAFETY: as above.
        let conf = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        assert!(conf.contains("--build-suffix=_nvcam"), "{conf}");
        let f = file_of(p as *const c_void).expect("the loader names the library");
        let want = if cfg!(windows) { "avformat_nvcam-59.dll" } else { "libavformat_nvcam.so.59" };
        assert!(base_name(&f).starts_with(want), "{f}");
    }
}
