//! RTSP replies past what a camera may send, as nvcam's FFmpeg build refuses them: the patched
//! rtsp.c (scripts/build/ffmpeg-patches) returns `FFERRTAG(0xF8, 'R', 'S', 'L')` for a message
//! header over 16 KiB or a body over 1 MiB, and `FFERRTAG(0xF8, 'R', 'S', 'R')` after 8 redirects
//! at one open, where FFmpeg 5.1 read any header byte by byte, allocated any body it was told of
//! and followed redirects for ever.

const fn tag(a: u8, b: u8, c: u8, d: u8) -> std::ffi::c_int {
    -((a as u32 | (b as u32) << 8 | (c as u32) << 16 | (d as u32) << 24) as i32)
}

/// What the patched build refused, if `r` is one of its RTSP limit codes.
pub(crate) fn refusal(r: std::ffi::c_int) -> Option<&'static str> {
    match r {
        x if x == tag(0xF8, b'R', b'S', b'L') => Some("its RTSP reply is over nvcam's limits (a 16 KiB header, a 1 MiB body)"),
        x if x == tag(0xF8, b'R', b'S', b'R') => Some("it redirected more than 8 times at one open (a redirect loop)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refusal_codes_match_the_ffmpeg_patch() {
        // FFERRTAG(0xF8, 'R', 'S', x) as libavutil/error.h computes it.
        let code = |x: u8| -(0xF8 | (b'R' as i32) << 8 | (b'S' as i32) << 16 | (x as i32) << 24);
        assert!(super::refusal(code(b'L')).unwrap().contains("16 KiB"));
        assert!(super::refusal(code(b'R')).unwrap().contains("redirect"));
        assert_eq!(super::refusal(-5), None);
    }
}
