//! Which string encodings the API takes (the rule in the header's conventions): UTF-8 always; on
//! Windows also the system ANSI code page, which is what LabVIEW passes for paths and URLs, so a
//! path like "café.mp4" from a LabVIEW string (bytes 63 61 66 E9 in Windows-1252) opens instead of
//! failing as invalid UTF-8. On Linux only UTF-8 is accepted.

mod common;
use common::*;
use nvcam::*;
use std::ffi::CString;
use std::path::PathBuf;

/// A copy of a clip the `core` tests make, under a name with a non-ASCII character.
fn clip_named(name: &str) -> PathBuf {
    let src = clip("h264_bframes_320x240.mp4", "320x240", 45, "libx264", &["-bf", "3", "-g", "15"]);
    let dst = src.with_file_name(name);
    if !dst.exists() {
        std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy to {}: {e}", dst.display()));
    }
    dst
}

/// Opens `url` given as raw bytes, takes one frame, and returns its width.
fn open_bytes(url: &[u8]) -> Result<u32, (i32, String)> {
    init();
    let c = CString::new(url).unwrap();
    let o = options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING);
    let mut cam = 0;
    // SAFETY (test): a NUL-terminated string, live options and output.
    ok(unsafe { nvcam_camera_open(c.as_ptr(), &o, &mut cam) })?;
    let f = get_frame(cam, 5000)?;
    let w = info(f)?.width;
    release(f)?;
    close(cam, 2000)?;
    Ok(w)
}

#[test]
fn utf8_path_with_non_ascii_characters_opens() {
    let p = clip_named("caf\u{e9}-utf8.mp4");
    assert_eq!(open_bytes(p.to_str().unwrap().as_bytes()).unwrap(), 320);
}

#[cfg(not(windows))]
#[test]
fn non_utf8_path_is_invalid_argument_on_linux() {
    let p = clip_named("caf\u{e9}-ansi.mp4");
    // The same name in Windows-1252: "é" is the single byte E9.
    let dir = p.parent().unwrap().to_str().unwrap();
    let ansi = [dir.as_bytes(), b"/caf\xe9-ansi.mp4"].concat();
    let (code, msg) = open_bytes(&ansi).unwrap_err();
    assert_eq!(code, NVCAM_E_INVALID_ARGUMENT, "{msg}");
    assert!(msg.contains("not valid UTF-8"), "{msg}");
}

#[cfg(windows)]
mod windows {
    use super::*;
    use std::os::windows::ffi::OsStrExt;

    #[link(name = "kernel32")]
    extern "system" {
        fn GetACP() -> u32;
        fn WideCharToMultiByte(
            code_page: u32,
            flags: u32,
            src: *const u16,
            src_len: i32,
            dst: *mut u8,
            dst_len: i32,
            default_char: *const u8,
            used_default: *mut i32,
        ) -> i32;
    }

    /// `s` in the ANSI code page, exactly (no best-fit or default characters), or None.
    fn to_ansi(s: &std::ffi::OsStr) -> Option<Vec<u8>> {
        const CP_ACP: u32 = 0;
        const WC_NO_BEST_FIT_CHARS: u32 = 0x400;
        let w: Vec<u16> = s.encode_wide().collect();
        let mut buf = vec![0u8; w.len() * 4 + 4];
        let mut used_default = 0;
        // SAFETY (test): `w` readable, `buf` writable for the lengths passed.
        let n = unsafe {
            WideCharToMultiByte(CP_ACP, WC_NO_BEST_FIT_CHARS, w.as_ptr(), w.len() as i32, buf.as_mut_ptr(), buf.len() as i32, std::ptr::null(), &mut used_default)
        };
        (n > 0 && used_default == 0).then(|| buf[..n as usize].to_vec())
    }

    #[test]
    fn ansi_code_page_path_opens_on_windows() {
        // SAFETY (test): no arguments.
        let acp = unsafe { GetACP() };
        println!("ANSI code page: {acp}");
        let p = clip_named("caf\u{e9}-ansi.mp4");
        let ansi = to_ansi(p.as_os_str()).unwrap_or_else(|| panic!("code page {acp} cannot spell {}", p.display()));
        assert!(
            std::str::from_utf8(&ansi).is_err(),
            "code page {acp} spells the path as valid UTF-8: this test would not exercise the conversion"
        );
        if acp == 1252 {
            assert!(ansi.ends_with(b"caf\xe9-ansi.mp4"), "{ansi:02x?}");
        }
        assert_eq!(open_bytes(&ansi).unwrap(), 320);
    }
}
