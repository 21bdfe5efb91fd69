//! What a camera URL means, and the FFmpeg option string.
//!
//! Checked synchronously in `nvcam_camera_open`, so an empty, garbled or unknown-scheme URL is an
//! immediate error with a clear text rather than a thread that retries forever.

use crate::redact::{redact_url, userinfo_end};
use crate::status::*;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Source {
    /// FFmpeg's lavfi `testsrc2`, paced to its frame rate: frames with no camera and no file.
    TestSrc { width: u32, height: u32, fps: u32 },
    /// A network stream (RTSP, RTMP, HTTP, UDP, TCP…): live, reconnected when it drops.
    Network(String),
    /// A file: replayed at its own frame rate unless told otherwise, looped on request.
    File(String),
    /// `nvcam://NAME`: a camera another process of this user publishes (see `crate::share`);
    /// its frames are that process's, mapped here, never decoded again.
    Shared(String),
}

impl Source {
    pub(crate) fn is_live(&self) -> bool {
        !matches!(self, Source::File(_))
    }
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Source::Shared(_))
    }
    pub(crate) fn is_rtsp(&self) -> bool {
        matches!(self, Source::Network(u) if u.starts_with("rtsp://") || u.starts_with("rtsps://"))
    }
    /// FFmpeg's `protocol_whitelist` for this source: only protocols whose reads FFmpeg's
    /// interrupt callback can cut short, so every open, read and close stays bounded by our
    /// deadlines (`pipe:` and `fd:` block in read() where no callback reaches them).
    pub(crate) fn protocol_whitelist(&self) -> &'static str {
        const NETWORK: &str = "file,tcp,udp,rtp,srtp,rtsp,tls,http,https,httpproxy,rtmp,rtmps,rtmpt,rtmpts,srt,crypto,data";
        match self {
            // FFmpeg also takes `rtsp:/host/…` and the like without `//`: those open the network.
            Source::File(p) if ffmpeg_scheme(p).is_some() => NETWORK,
            Source::TestSrc { .. } | Source::File(_) => "file",
            Source::Network(_) => NETWORK,
            // Never opened by FFmpeg.
            Source::Shared(_) => "",
        }
    }
    /// The string handed to avformat_open_input, and the input format to force (lavfi for testsrc).
    pub(crate) fn ffmpeg_target(&self) -> (String, Option<&'static std::ffi::CStr>) {
        match self {
            Source::TestSrc { width, height, fps } => {
                (format!("testsrc2=size={width}x{height}:rate={fps}"), Some(c"lavfi"))
            }
            Source::Network(u) | Source::File(u) => (u.clone(), None),
            Source::Shared(_) => (String::new(), None),
        }
    }
}

const NETWORK_SCHEMES: &[&str] = &["rtsp", "rtsps", "rtmp", "rtmps", "http", "https", "udp", "tcp", "rtp", "srt"];

/// The network schemes this build's FFmpeg can open: a list offered to the user leaves out those
/// whose protocol it lacks (`rtsps`, `https`, `rtmps` without TLS), which would fail at open.
fn served_schemes() -> Vec<&'static str> {
    NETWORK_SCHEMES.iter().copied().filter(|s| crate::ffmpeg::protocols::missing_for(s).is_none()).collect()
}

/// Parses a camera URL: `testsrc://WxH@FPS`, a network URL, `file://PATH` or a plain path.
pub(crate) fn parse(url: &str) -> Result<Source> {
    let url = url.trim();
    if url.is_empty() {
        return Err(Error::arg("camera URL is empty"));
    }
    if url.chars().any(|c| c.is_control()) {
        return Err(Error::arg("camera URL contains control characters"));
    }
    if let Some(rest) = url.strip_prefix("testsrc://") {
        return parse_testsrc(rest);
    }
    if let Some(name) = url.strip_prefix("nvcam://") {
        crate::share::check_name(name)?;
        return Ok(Source::Shared(name.to_string()));
    }
    if let Some(path) = url.strip_prefix("file://") {
        return Ok(Source::File(path.to_string()));
    }
    match url.find("://") {
        Some(i) => {
            let scheme = url[..i].to_ascii_lowercase();
            if NETWORK_SCHEMES.contains(&scheme.as_str()) {
                if url.len() == i + 3 {
                    return Err(Error::arg(format!("camera URL '{url}' has no host")));
                }
                check_port(url, &url[i + 3..])?;
                Ok(Source::Network(encode_userinfo(url, i + 3)))
            } else if is_scheme(&scheme) {
                Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("unknown URL scheme '{scheme}' (supported: testsrc, file, nvcam, {})", served_schemes().join(", ")),
                ))
            } else {
                // Not a scheme's spelling (`admin:pw@cam://x`): the text before `://` may be
                // credentials, so it is not quoted.
                Err(Error::arg(format!(
                    "camera URL has no valid scheme before '://' (supported: testsrc, file, nvcam, {})",
                    served_schemes().join(", ")
                )))
            }
        }
        None => file(url),
    }
}

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic()) && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The protocol FFmpeg would read from `name:rest` (`pipe:0`, `rtsp:/host`); None for plain
/// paths and DOS drive letters.
fn ffmpeg_scheme(path: &str) -> Option<&str> {
    let (scheme, _) = path.split_once(':')?;
    let protocol_like = scheme.len() >= 2 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "_+.-".contains(c));
    (protocol_like && scheme != "file").then_some(scheme)
}

/// Protocols whose reads block where FFmpeg's interrupt callback cannot reach them.
const UNINTERRUPTIBLE: &[&str] = &["pipe", "fd"];

/// A path without `://`. FFmpeg reads `name:rest` as protocol `name` when one exists; those that
/// cannot be interrupted are refused here, the rest are bounded by the protocol whitelist.
fn file(path: &str) -> Result<Source> {
    // `user:password@host/…` with its `rtsp://` forgotten would be taken for a path, and a path
    // reaches log lines and error texts: refused, quoting nothing.
    let head = &path[..path.find(['/', '\\']).unwrap_or(path.len())];
    if ffmpeg_scheme(path).is_some() && head.contains('@') {
        return Err(Error::arg(
            "camera URL looks like user:password@host without a scheme (write rtsp://user:password@host/…)",
        ));
    }
    if let Some(scheme) = ffmpeg_scheme(path) {
        if UNINTERRUPTIBLE.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("'{scheme}:' inputs are not supported: their reads cannot be interrupted, so open and stall timeouts could not be kept (use a file path or a network URL)"),
            ));
        }
    }
    Ok(Source::File(path.strip_prefix("file:").unwrap_or(path).to_string()))
}

/// A port in the URL's authority must be 1..65535 (FFmpeg only says "Invalid argument"). The
/// message never quotes the userinfo, nor a port that is not a number (a password typed without
/// its `user:…@` reads as one).
fn check_port(url: &str, rest: &str) -> Result<()> {
    let after = userinfo_end(rest).map_or(rest, |at| &rest[at + 1..]);
    let hostport = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let scheme = &url[..url.len() - rest.len()];
    let port = match hostport.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((_, after)) => after.strip_prefix(':'),
            None => return Err(Error::arg(format!("camera URL '{}' has an unclosed '['", redact_url(url)))),
        },
        None => hostport.rsplit_once(':').map(|(_, p)| p),
    };
    let needs_host = ["rtsp://", "rtsps://", "http://", "https://", "rtmp://", "rtmps://"].iter().any(|s| s.eq_ignore_ascii_case(scheme));
    if needs_host && (hostport.is_empty() || hostport.starts_with(':')) {
        return Err(Error::arg(format!("camera URL '{}' has no host", redact_url(url))));
    }
    match port {
        Some(p) if !p.chars().all(|c| c.is_ascii_digit()) => Err(Error::arg(format!(
            "camera URL '{scheme}…' has a port that is not a number (a password needs its user name and '@': {scheme}user:password@host/…)"
        ))),
        Some(p) if p.parse::<u16>().map_or(true, |n| n == 0) => Err(Error::arg(format!(
            "camera URL '{}' has an invalid port '{p}' (1..65535)",
            redact_url(url)
        ))),
        _ => Ok(()),
    }
}

/// `url` with its user name and password percent-encoded (from `at`, where the authority starts),
/// as FFmpeg splits a URL at the first `/`, `?` or `#` and URL-decodes the credentials it sends
/// (Basic and Digest): a password pasted unencoded reaches the camera as typed, and one already
/// encoded (`%23`) stays as it is.
fn encode_userinfo(url: &str, at: usize) -> String {
    let rest = &url[at..];
    let Some(end) = userinfo_end(rest) else { return url.to_string() };
    let (user, password) = match rest[..end].split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (&rest[..end], None),
    };
    let mut out = String::with_capacity(url.len() + 16);
    out.push_str(&url[..at]);
    percent_encode(user, &mut out);
    if let Some(p) = password {
        out.push(':');
        percent_encode(p, &mut out);
    }
    out.push_str(&rest[end..]);
    out
}

/// Appends `s` with every byte but RFC 3986's unreserved characters and sub-delimiters
/// percent-encoded; a `%` and two hex digits is an escape already and stays.
fn percent_encode(s: &str, out: &mut String) {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let escape = c == b'%' && b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
        if c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=".contains(&c) || escape {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
}

fn parse_testsrc(rest: &str) -> Result<Source> {
    // Not quoted: what follows `testsrc://` may be anything a host pasted, credentials included.
    let bad = || Error::arg("testsrc URL must look like testsrc://1280x720@30 (width x height @ fps)");
    if rest.is_empty() {
        return Ok(Source::TestSrc { width: 1280, height: 720, fps: 30 });
    }
    let (size, fps) = match rest.split_once('@') {
        Some((s, f)) => (s, f.parse::<u32>().map_err(|_| bad())?),
        None => (rest, 30),
    };
    let (w, h) = size.split_once('x').ok_or_else(bad)?;
    let (width, height) = (w.parse::<u32>().map_err(|_| bad())?, h.parse::<u32>().map_err(|_| bad())?);
    if !(16..=8192).contains(&width) || !(16..=8192).contains(&height) || !(1..=240).contains(&fps) {
        return Err(Error::arg(format!("testsrc size {width}x{height}@{fps} out of range (16..8192, 1..240 fps)")));
    }
    Ok(Source::TestSrc { width, height, fps })
}

/// Parses FFmpeg options written `key=value;key=value` (`&` or newlines also separate pairs;
/// white space around keys and values is dropped). A value that holds `;`, `&`, `=`, a newline or
/// white space to keep at its ends is written in double quotes, `key="a;b "`, where `""` stands
/// for one `"`; everything else inside the quotes is taken as it is (backslashes included, as in
/// Windows paths). An error names the option by its key, never by its value (which may be a
/// passphrase).
pub(crate) fn parse_options(s: &str) -> Result<Vec<(String, String)>> {
    let bad = |msg: String| Error::new(ErrorKind::BadOption, msg);
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    let mut n = 0;
    loop {
        // A key: up to `=` or the end of the entry.
        let mut key = String::new();
        let mut has_eq = false;
        for c in chars.by_ref() {
            match c {
                '=' => {
                    has_eq = true;
                    break;
                }
                ';' | '&' | '\n' => break,
                _ => key.push(c),
            }
        }
        let key = key.trim().to_string();
        if !has_eq {
            if !key.is_empty() {
                return Err(bad(format!(
                    "FFmpeg option {} is not key=value (a value holding ';', '&' or '=' is written in double quotes: key=\"a;b\")",
                    n + 1
                )));
            }
            if chars.peek().is_none() {
                return Ok(out);
            }
            continue;
        }
        n += 1;
        if key.is_empty() {
            return Err(bad(format!("FFmpeg option {n} has no key")));
        }
        // A value: quoted, or up to the end of the entry.
        while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') if chars.next_if_eq(&'"').is_some() => value.push('"'),
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => return Err(bad(format!("FFmpeg option '{key}' has a quoted value without its closing '\"'"))),
                }
            }
            while chars.next_if(|c| *c == ' ' || *c == '\t' || *c == '\r').is_some() {}
            if chars.next_if(|c| matches!(c, ';' | '&' | '\n')).is_none() && chars.peek().is_some() {
                return Err(bad(format!("FFmpeg option '{key}' has text after its quoted value (separate options with ';')")));
            }
        } else {
            while let Some(c) = chars.next_if(|c| !matches!(c, ';' | '&' | '\n')) {
                value.push(c);
            }
            chars.next();
            value = value.trim().to_string();
        }
        out.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Malformed URLs whose text holds a password: no error quotes it, whatever part of the URL
    /// the parser takes it for (a scheme, a path, a test pattern's size).
    #[test]
    fn a_malformed_url_never_quotes_its_password() {
        for url in [
            "admin:Secret1@cam://x",
            "admin:Secret1@192.168.1.10:554/stream",
            "admin:Secret1@cam",
            "testsrc://admin:Secret1@cam",
            "rtsp://admin:Se/cret1@cam:x/y",
            "rtsp://admin:Secret1@cam:99999/y",
        ] {
            let e = parse(url).expect_err(url);
            assert!(!e.to_string().to_ascii_lowercase().contains("secret1") && !e.to_string().contains("cret1"), "{url}: {e}");
        }
        assert!(matches!(parse("C:\\videos\\a@b.mp4"), Ok(Source::File(_))), "a drive letter is a path");
        assert!(matches!(parse("/videos/a:b@c.mp4"), Ok(Source::File(_))));
    }

    #[test]
    fn urls_parse_or_fail_with_a_reason() {
        assert_eq!(parse("testsrc://640x480@25").unwrap(), Source::TestSrc { width: 640, height: 480, fps: 25 });
        assert_eq!(parse("testsrc://").unwrap(), Source::TestSrc { width: 1280, height: 720, fps: 30 });
        assert!(parse("rtsp://127.0.0.1:8554/cam").unwrap().is_rtsp());
        assert_eq!(parse("/tmp/a.mp4").unwrap(), Source::File("/tmp/a.mp4".into()));
        assert_eq!(parse("").unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(parse("gopher://x").unwrap_err().kind, ErrorKind::Unsupported);
        assert_eq!(parse("rtsp://").unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(parse("testsrc://axb").unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(parse("testsrc://1x1@30").unwrap_err().kind, ErrorKind::InvalidArgument);
        assert!(parse("rtsp://127.0.0.1:99999/cam").unwrap_err().msg.contains("invalid port '99999'"));
        assert!(parse("rtsp://127.0.0.1:/cam").unwrap_err().msg.contains("invalid port ''"));
        let e = parse("rtsp://admin:pw@10.0.0.1:0/cam").unwrap_err().msg;
        assert!(e.contains("invalid port '0'") && !e.contains("pw@"), "{e}");
        assert!(parse("rtsp://admin:pw@10.0.0.1:554/cam?x=1:2").is_ok());
        assert!(parse("rtsp://[::1]:8554/cam").is_ok());
        assert!(parse("rtsp://[::1]/cam").is_ok());
        assert!(parse("udp://@:1234?fifo_size=100").is_ok());
        assert!(parse("rtsp://[::1:8554/cam").is_err());
        assert!(parse("rtsp://u:p@/cam").unwrap_err().msg.contains("has no host"));
        assert!(parse("udp://@:1234").is_ok() && parse("srt://:9000?mode=listener").is_ok());
        assert_eq!(parse("pipe:0").unwrap_err().kind, ErrorKind::Unsupported);
        assert_eq!(parse("fd:3").unwrap_err().kind, ErrorKind::Unsupported);
        assert_eq!(parse("C:\\clips\\a.mp4").unwrap(), Source::File("C:\\clips\\a.mp4".into()));
        assert_eq!(parse("file:/tmp/a.mp4").unwrap(), Source::File("/tmp/a.mp4".into()));
    }

    /// The list an unknown scheme's error offers is what this FFmpeg opens: offering a scheme the
    /// build lacks (once rtsps:// on Linux, srt:// everywhere) sent users to a second, different
    /// error, and leaving out one it has (srt://, looked up under the wrong protocol name) hid it.
    #[test]
    fn unknown_scheme_offers_only_schemes_this_build_opens() {
        let msg = parse("gopher://x").unwrap_err().msg;
        assert!(msg.contains("testsrc, file, nvcam, rtsp,"), "{msg}");
        for s in ["rtsps", "https", "rtmps", "srt"] {
            let offered = msg.contains(&format!(" {s},")) || msg.ends_with(&format!(" {s})"));
            assert_eq!(offered, crate::ffmpeg::protocols::missing_for(s).is_none(), "{s}: {msg}");
        }
        // nvcam's FFmpeg has TLS and SRT (libsrt) on both platforms.
        assert!(msg.contains(" rtsps,") || msg.contains(" rtsps)"), "{msg}");
        assert!(msg.contains(" srt,") || msg.ends_with(" srt)"), "nvcam's FFmpeg has SRT: {msg}");
    }

    /// A password pasted unencoded: never quoted back (once "invalid port 'Adm1n'"), and handed to
    /// FFmpeg percent-encoded, so FFmpeg's split at the first `/`, `?` or `#` leaves it whole.
    #[test]
    fn passwords_of_any_spelling_are_encoded_and_never_quoted() {
        let e = parse("rtsp://admin:Adm1n#Secret42@10.0.0.1:0/cam").unwrap_err().msg;
        assert!(e.contains("invalid port '0'") && !e.contains("Adm1n") && !e.contains("Secret42"), "{e}");
        let e = parse("rtsp://admin:Adm1n#Secret42").unwrap_err().msg;
        assert!(!e.contains("Adm1n") && !e.contains("Secret42") && e.contains("not a number"), "{e}");
        let target = |u: &str| parse(u).unwrap().ffmpeg_target().0;
        assert_eq!(target("rtsp://admin:Adm1n#Secret42@10.0.0.1/cam"), "rtsp://admin:Adm1n%23Secret42@10.0.0.1/cam");
        assert_eq!(target("rtsp://admin:a?b/c@d:e f%g\u{fc}@cam:554/x?y=1"), "rtsp://admin:a%3Fb%2Fc%40d%3Ae%20f%25g%C3%BC@cam:554/x?y=1");
        assert_eq!(target("rtsp://admin:Adm1n%23Secret42@10.0.0.1/cam"), "rtsp://admin:Adm1n%23Secret42@10.0.0.1/cam");
        assert_eq!(target("rtsp://10.0.0.1:554/a@b"), "rtsp://10.0.0.1:554/a@b");
        assert_eq!(target("udp://@:1234?fifo_size=100"), "udp://@:1234?fifo_size=100");
    }

    #[test]
    fn options_split_on_semicolons() {
        let o = parse_options("rtsp_transport=tcp; timeout=5000000;").unwrap();
        assert_eq!(o, vec![("rtsp_transport".into(), "tcp".into()), ("timeout".into(), "5000000".into())]);
        assert_eq!(parse_options("novalue").unwrap_err().kind, ErrorKind::BadOption);
        assert_eq!(parse_options("").unwrap(), vec![]);
        assert_eq!(parse_options(" ; ;").unwrap(), vec![]);
        assert_eq!(parse_options("a=1&b = 2\nc=").unwrap(), vec![("a".into(), "1".into()), ("b".into(), "2".into()), ("c".into(), "".into())]);
        assert_eq!(parse_options("a=x=y").unwrap(), vec![("a".into(), "x=y".into())]);
    }

    /// Values with any characters, quoted: a passphrase or a path holding `;` or `&` was split
    /// into a second "option" (quoted back in the error text), and its end spaces were trimmed.
    #[test]
    fn quoted_values_keep_every_character() {
        let o = parse_options(r#"passphrase=" Secret;Part2 & x=y "" "; ca_file="C:\certs\ca.pem";latency = 300000"#).unwrap();
        assert_eq!(
            o,
            vec![
                ("passphrase".into(), r#" Secret;Part2 & x=y " "#.into()),
                ("ca_file".into(), r"C:\certs\ca.pem".into()),
                ("latency".into(), "300000".into())
            ]
        );
        for bad in [r#"passphrase="Secret;Part2xyzQ"#, r#"passphrase="Secret"Part2xyzQ"#, "passphrase=Secret;Part2xyzQ"] {
            let e = parse_options(bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::BadOption);
            assert!(!e.msg.contains("Secret") && !e.msg.contains("Part2xyzQ"), "{}", e.msg);
        }
    }
}
