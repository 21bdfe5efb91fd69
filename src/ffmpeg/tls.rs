//! Certificate refusals as nvcam's FFmpeg build reports them: the patched mbedTLS back end
//! (scripts/build/ffmpeg-patches) returns one error code per reason, `FFERRTAG(0xF8, 'T', 'L', x)`;
//! so do a TLS version the camera and nvcam share none of, and a redirect from TLS to plaintext.

/// A certificate refusal reported by nvcam's FFmpeg build (tls_mbedtls.c's codes), with its
/// reason and what would fix it.
pub(crate) fn refusal(r: std::ffi::c_int) -> Option<&'static str> {
    Some(match r {
        x if x == tag(b'I') => "unknown issuer (not signed by a CA in the system's trust store or ca_file; a camera's own certificate needs ca_file or tls_pin_sha256)",
        x if x == tag(b'N') => "name mismatch (the certificate does not name the host of the URL)",
        x if x == tag(b'E') => "expired (or not yet valid)",
        x if x == tag(b'P') => "pin mismatch (the certificate is not the one tls_pin_sha256 names)",
        x if x == tag(b'B') => "invalid certificate (key usage, key or signature not acceptable)",
        x if x == tag(b'S') => "no system trust store found to verify against (no CA bundle file on Linux, an empty ROOT store on Windows); give ca_file or tls_pin_sha256",
        _ => return None,
    })
}

/// A TLS connection refused for a reason other than the certificate (patch 0005's codes): the
/// protocol version, or a redirect from TLS to plaintext. Permanent, like a certificate refusal.
pub(crate) fn connection_refusal(r: std::ffi::c_int) -> Option<&'static str> {
    Some(match r {
        x if x == tag(b'V') => {
            "the camera offers no TLS version nvcam supports (nvcam speaks TLS 1.2; a camera of TLS 1.0/1.1 only, or of TLS 1.3 only, cannot be reached)"
        }
        x if x == tag(b'D') => "it redirected to a plaintext URL (http:// or rtsp://); refused before any request was sent there",
        _ => return None,
    })
}

/// `FFERRTAG(0xF8, 'T', 'L', d)`, as libavutil/error.h computes it.
const fn tag(d: u8) -> std::ffi::c_int {
    -((0xF8u32 | (b'T' as u32) << 8 | (b'L' as u32) << 16 | (d as u32) << 24) as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_codes_match_the_ffmpeg_patch() {
        // FFERRTAG(0xF8, 'T', 'L', 'P') as libavutil/error.h computes it.
        let pin = -(0xF8 | (b'T' as i32) << 8 | (b'L' as i32) << 16 | (b'P' as i32) << 24);
        assert!(refusal(pin).unwrap().starts_with("pin mismatch"));
        let store = -(0xF8 | (b'T' as i32) << 8 | (b'L' as i32) << 16 | (b'S' as i32) << 24);
        assert!(refusal(store).unwrap().starts_with("no system trust store found"));
        assert!(refusal(-5).is_none());
        let version = -(0xF8 | (b'T' as i32) << 8 | (b'L' as i32) << 16 | (b'V' as i32) << 24);
        assert!(connection_refusal(version).unwrap().contains("TLS 1.2"));
        let downgrade = -(0xF8 | (b'T' as i32) << 8 | (b'L' as i32) << 16 | (b'D' as i32) << 24);
        assert!(connection_refusal(downgrade).unwrap().contains("plaintext"));
        assert!(connection_refusal(pin).is_none());
    }
}
