//! A camera's TLS settings as FFmpeg options: the server's certificate is verified by default
//! for `rtsps://`, `https://` and `rtmps://` (FFmpeg's own default is not to verify), against the
//! system's trust store, a CA file (`ca_file`) or one pinned certificate (`tls_pin_sha256`, the
//! SHA-256 of its DER form), unless the host opts out with `NVCAM_OPEN_TLS_INSECURE`.
//!
//! The options are checked here, before anything is opened, so a malformed pin or an unreadable
//! CA file is a configuration error that names the option, never a connection that retries.

use crate::config::Options;
use crate::source::Source;
use crate::status::*;

/// The URL schemes whose connection is TLS in nvcam's FFmpeg.
const TLS_SCHEMES: &[&str] = &["rtsps://", "https://", "rtmps://"];

/// The FFmpeg options nvcam reads for TLS (the patched mbedTLS back end's names).
const CA_FILE: &str = "ca_file";
const PIN: &str = "tls_pin_sha256";
const VERIFY: &str = "tls_verify";

pub(crate) fn is_tls(source: &Source) -> bool {
    matches!(source, Source::Network(u) if TLS_SCHEMES.iter().any(|s| u.len() > s.len() && u[..s.len()].eq_ignore_ascii_case(s)))
}

/// Checks the TLS options of a camera and adds `tls_verify`. A pin is normalised to lowercase
/// hex without separators.
pub(crate) fn tls_options(source: &Source, opts: &mut Options) -> Result<()> {
    let given = |opts: &Options, k: &str| opts.ffmpeg.iter().any(|(key, _)| key == k);
    if given(opts, VERIFY) {
        return Err(Error::new(
            ErrorKind::BadOption,
            "tls_verify is nvcam's to set: verification is on for every TLS camera, NVCAM_OPEN_TLS_INSECURE turns it off",
        ));
    }
    if !is_tls(source) {
        if let Some(k) = [CA_FILE, PIN].into_iter().find(|k| given(opts, k)) {
            return Err(Error::new(ErrorKind::BadOption, format!("{k} applies only to rtsps://, https:// and rtmps:// cameras")));
        }
        return Ok(());
    }
    let insecure = opts.flags.tls_insecure;
    for (k, v) in opts.ffmpeg.iter_mut() {
        if k == PIN {
            *v = normalise_pin(v)?;
        } else if k == CA_FILE {
            check_ca_file(v)?;
        }
        if insecure && (k == PIN || k == CA_FILE) {
            return Err(Error::new(ErrorKind::BadOption, format!("{k} and NVCAM_OPEN_TLS_INSECURE contradict each other: set one of them")));
        }
    }
    opts.ffmpeg.push((VERIFY.into(), if insecure { "0" } else { "1" }.into()));
    Ok(())
}

/// A CA file mbedTLS can load: a file (not a folder) that can be read and holds a certificate, in
/// PEM (`-----BEGIN CERTIFICATE-----`) or DER (an ASN.1 sequence). Anything else failed only at
/// the connection, as an I/O error at every attempt. The path is not named (option values are
/// never quoted).
fn check_ca_file(path: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::new(ErrorKind::BadOption, format!("ca_file {why}")));
    if std::path::Path::new(path).is_dir() {
        return bad("is a folder, not a file of CA certificates");
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return bad("does not exist"),
        Err(_) => return bad("cannot be read"),
    };
    let pem = bytes.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----");
    let der = bytes.len() > 64 && bytes[0] == 0x30;
    if !pem && !der {
        return bad("holds no certificate (PEM or DER)");
    }
    Ok(())
}

/// 64 hex digits, upper or lower case, with `:` or spaces between them as tools print them.
fn normalise_pin(v: &str) -> Result<String> {
    let hex: String = v.chars().filter(|c| *c != ':' && *c != ' ').collect();
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::new(
            ErrorKind::BadOption,
            format!("tls_pin_sha256 is not a SHA-256 fingerprint (64 hex digits, colons allowed): {} characters given", v.len()),
        ));
    }
    Ok(hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_with_or_without_colons() {
        let h = "AB".repeat(32);
        assert_eq!(normalise_pin(&h).unwrap(), "ab".repeat(32));
        let colons = vec!["Ab"; 32].join(":");
        assert_eq!(normalise_pin(&colons).unwrap(), "ab".repeat(32));
        assert_eq!(normalise_pin("ab").unwrap_err().kind, ErrorKind::BadOption);
        assert_eq!(normalise_pin(&"zz".repeat(32)).unwrap_err().kind, ErrorKind::BadOption);
    }

    /// A folder, a missing file or one without a certificate was accepted at the call and failed
    /// at every connection attempt, for ever, as an I/O error.
    #[test]
    fn unusable_ca_files_are_refused_at_the_call() {
        let dir = std::env::temp_dir().join(format!("nvcam-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let good = dir.join("ca.pem");
        std::fs::write(&good, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").unwrap();
        for (p, why) in [(&dir, "folder"), (&dir.join("missing.pem"), "does not exist"), (&empty, "no certificate")] {
            let e = check_ca_file(p.to_str().unwrap()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadOption);
            assert!(e.msg.contains(why) && !e.msg.contains("nvcam-ca"), "{}", e.msg);
        }
        assert!(check_ca_file(good.to_str().unwrap()).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tls_schemes_are_recognised() {
        assert!(is_tls(&Source::Network("rtsps://h/x".into())));
        assert!(is_tls(&Source::Network("HTTPS://h/x".into())));
        assert!(!is_tls(&Source::Network("rtsp://h/x".into())));
    }
}
