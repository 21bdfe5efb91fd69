//! What a camera URL means, and the FFmpeg option string.
//!
//! Checked synchronously in `nvcam_camera_open`, so an empty, garbled or unknown-scheme URL is an
//! immediate error with a clear text rather than a thread that retries forever.

use crate::redact::redact;
use crate::status::*;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Source {
    /// FFmpeg's lavfi `testsrc2`, paced to its frame rate: frames with no camera and no file.
    TestSrc { width: u32, height: u32, fps: u32 },
    /// A network stream (RTSP, RTMP, HTTP, UDP, TCP…): live, reconnected when it drops.
    Network(String),
    /// A file: replayed at its own frame rate unless told otherwise, looped on request.
    File(String),
}

impl Source {
    pub(crate) fn is_live(&self) -> bool {
        !matches!(self, Source::File(_))
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
        }
    }
    /// The string handed to avformat_open_input, and the input format to force (lavfi for testsrc).
    pub(crate) fn ffmpeg_target(&self) -> (String, Option<&'static std::ffi::CStr>) {
        match self {
            Source::TestSrc { width, height, fps } => {
                (format!("testsrc2=size={width}x{height}:rate={fps}"), Some(c"lavfi"))
            }
            Source::Network(u) | Source::File(u) => (u.clone(), None),
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
                Ok(Source::Network(url.to_string()))
            } else {
                Err(Error::new(
                    ErrorKind::Unsupported,
                    format!("unknown URL scheme '{scheme}' (supported: testsrc, file, {})", served_schemes().join(", ")),
                ))
            }
        }
        None => file(url),
    }
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

/// A port in the URL's authority must be 1..65535 (FFmpeg only says "Invalid argument").
fn check_port(url: &str, rest: &str) -> Result<()> {
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let hostport = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
    let port = match hostport.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((_, after)) => after.strip_prefix(':'),
            None => return Err(Error::arg(format!("camera URL '{}' has an unclosed '['", redact(url)))),
        },
        None => hostport.rsplit_once(':').map(|(_, p)| p),
    };
    match port {
        Some(p) if p.parse::<u16>().map_or(true, |n| n == 0) => Err(Error::arg(format!(
            "camera URL '{}' has an invalid port '{p}' (1..65535)",
            redact(url)
        ))),
        _ => Ok(()),
    }
}

fn parse_testsrc(rest: &str) -> Result<Source> {
    let bad = || Error::arg(format!("testsrc URL must look like testsrc://1280x720@30, got 'testsrc://{rest}'"));
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

/// Parses FFmpeg options written `key=value;key=value` (`&` or newlines also separate pairs).
pub(crate) fn parse_options(s: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for part in s.split([';', '&', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| Error::new(ErrorKind::BadOption, format!("FFmpeg option '{part}' is not key=value")))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(Error::new(ErrorKind::BadOption, format!("FFmpeg option '{part}' has no key")));
        }
        out.push((k.to_string(), v.trim().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(msg.contains("testsrc, file, rtsp,"), "{msg}");
        for s in ["rtsps", "https", "rtmps", "srt"] {
            let offered = msg.contains(&format!(" {s},")) || msg.ends_with(&format!(" {s})"));
            assert_eq!(offered, crate::ffmpeg::protocols::missing_for(s).is_none(), "{s}: {msg}");
        }
        // nvcam's FFmpeg has TLS and SRT (libsrt) on both platforms.
        assert!(msg.contains(" rtsps,") || msg.contains(" rtsps)"), "{msg}");
        assert!(msg.contains(" srt,") || msg.ends_with(" srt)"), "nvcam's FFmpeg has SRT: {msg}");
    }

    #[test]
    fn options_split_on_semicolons() {
        let o = parse_options("rtsp_transport=tcp; timeout=5000000;").unwrap();
        assert_eq!(o, vec![("rtsp_transport".into(), "tcp".into()), ("timeout".into(), "5000000".into())]);
        assert_eq!(parse_options("novalue").unwrap_err().kind, ErrorKind::BadOption);
    }
}
