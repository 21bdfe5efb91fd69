//! Strings from hosts that do not speak UTF-8: LabVIEW on Windows passes paths and URLs in the
//! system ANSI code page (e.g. Windows-1252: "café" is the bytes 63 61 66 E9, not valid UTF-8).
//!
//! The rule (documented in the header and docs/windows.md): a string that is valid UTF-8 is taken as
//! UTF-8; on Windows any other string is converted from the ANSI code page (`CP_ACP`, through
//! UTF-16) before it reaches FFmpeg, whose Windows file protocol takes UTF-8; on Linux it is
//! refused (`NVCAM_E_INVALID_ARGUMENT`). Bytes the code page does not define are refused too.

/// `bytes` (not valid UTF-8) read in the ANSI code page, as UTF-8; None where that is not possible.
#[cfg(windows)]
pub(crate) fn from_ansi(bytes: &[u8]) -> Option<String> {
    const CP_ACP: u32 = 0;
    const MB_ERR_INVALID_CHARS: u32 = 0x8;
    #[link(name = "kernel32")]
    extern "system" {
        fn MultiByteToWideChar(code_page: u32, flags: u32, src: *const u8, src_len: i32, dst: *mut u16, dst_len: i32) -> i32;
    }
    let n = i32::try_from(bytes.len()).ok()?;
    if n == 0 {
        return Some(String::new());
    }
    // SAFETY: `bytes` is readable for `n` bytes; a NULL destination with length 0 asks for the size.
    let need = unsafe { MultiByteToWideChar(CP_ACP, MB_ERR_INVALID_CHARS, bytes.as_ptr(), n, std::ptr::null_mut(), 0) };
    let mut wide = vec![0u16; usize::try_from(need).ok().filter(|&w| w > 0)?];
    // SAFETY: `wide` is writable for `need` u16s, the length passed.
    let got = unsafe { MultiByteToWideChar(CP_ACP, MB_ERR_INVALID_CHARS, bytes.as_ptr(), n, wide.as_mut_ptr(), need) };
    wide.truncate(usize::try_from(got).ok().filter(|&g| g > 0)?);
    String::from_utf16(&wide).ok()
}

/// Linux hosts pass UTF-8: nothing else is accepted.
#[cfg(not(windows))]
pub(crate) fn from_ansi(_bytes: &[u8]) -> Option<String> {
    None
}
