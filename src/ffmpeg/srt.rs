//! SRT handshake refusals as nvcam's FFmpeg build reports them: the patched libsrt.c
//! (scripts/build/ffmpeg-patches) returns `FFERRTAG(0xF8, 'S', 'R', 'P')` when the listener
//! refused the passphrase, where FFmpeg 5.1 said only "Input/output error".

/// Whether `r` is the patched build's code for a refused passphrase (wrong, missing, or given
/// where the listener has none).
pub(crate) fn passphrase_refused(r: std::ffi::c_int) -> bool {
    r == -((0xF8u32 | (b'S' as u32) << 8 | (b'R' as u32) << 16 | (b'P' as u32) << 24) as i32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn refusal_code_matches_the_ffmpeg_patch() {
        // FFERRTAG(0xF8, 'S', 'R', 'P') as libavutil/error.h computes it.
        let code = -(0xF8 | (b'S' as i32) << 8 | (b'R' as i32) << 16 | (b'P' as i32) << 24);
        assert!(super::passphrase_refused(code));
        assert!(!super::passphrase_refused(-5));
    }
}
