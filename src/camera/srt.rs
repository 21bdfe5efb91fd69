//! A camera's SRT settings, checked before anything is opened: libsrt refuses a passphrase
//! outside 10..79 characters or a key length other than 16, 24 or 32 bytes only as FFmpeg's
//! "Input/output error" at every (re)connect, so here they are configuration errors that name
//! the option (never the passphrase itself).
//!
//! The options are FFmpeg's (`latency` in microseconds, `passphrase`, `pbkeylen`, `streamid`),
//! given in the option string or in the URL's query; nvcam adds none.

use crate::config::Options;
use crate::source::Source;
use crate::status::*;

fn is_srt(source: &Source) -> bool {
    matches!(source, Source::Network(u) if u.len() > 6 && u[..6].eq_ignore_ascii_case("srt://"))
}

/// The `key=value` pairs of a URL's query.
fn query(url: &str) -> impl Iterator<Item = (&str, &str)> {
    let q = url.split_once('?').map_or("", |(_, q)| q);
    q.split('&').filter_map(|p| p.split_once('='))
}

pub(crate) fn srt_options(source: &Source, opts: &Options) -> Result<()> {
    let Source::Network(url) = source else { return Ok(()) };
    if !is_srt(source) {
        return Ok(());
    }
    let given = opts.ffmpeg.iter().map(|(k, v)| (k.as_str(), v.as_str())).chain(query(url));
    for (k, v) in given {
        match k {
            "passphrase" if !(10..=79).contains(&v.chars().count()) => {
                return Err(Error::new(
                    ErrorKind::BadOption,
                    format!("the SRT passphrase must be 10 to 79 characters long ({} given)", v.chars().count()),
                ))
            }
            "pbkeylen" if !["0", "16", "24", "32"].contains(&v) => {
                return Err(Error::new(ErrorKind::BadOption, "pbkeylen must be 16, 24 or 32 (bytes of the AES key)"))
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(url: &str, opts: &[(&str, &str)]) -> Result<()> {
        let o = Options { ffmpeg: opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), ..Options::default() };
        srt_options(&Source::Network(url.into()), &o)
    }

    #[test]
    fn passphrase_and_key_length_are_checked_without_showing_the_passphrase() {
        assert!(check("srt://h:9000", &[("passphrase", "0123456789")]).is_ok());
        let e = check("srt://h:9000?passphrase=short1", &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadOption);
        assert!(!e.msg.contains("short1"), "{}", e.msg);
        assert_eq!(check("srt://h:9000", &[("passphrase", "short2")]).unwrap_err().kind, ErrorKind::BadOption);
        assert_eq!(check("srt://h:9000?pbkeylen=20", &[]).unwrap_err().kind, ErrorKind::BadOption);
        assert!(check("srt://h:9000?pbkeylen=32&passphrase=0123456789", &[]).is_ok());
        // Not SRT: not ours to check.
        assert!(check("rtsp://h/x", &[("passphrase", "x")]).is_ok());
    }
}
