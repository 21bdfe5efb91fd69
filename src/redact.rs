//! Secrets out of every text nvcam writes: the passwords in URLs and SRT's passphrase, hidden
//! before a URL or one of FFmpeg's own log lines reaches a log line or an error text.
//!
//! A URL's credentials are found by structure, not by spelling: users paste passwords unencoded,
//! with `#`, `?`, `/`, `@`, `:`, spaces, `%` or non-ASCII in them, so the userinfo is everything
//! between `scheme://` and the last `@` that a host (and optional port) follows ([`userinfo_end`]).
//! The same rule decides what nvcam hands FFmpeg as credentials (`source.rs` percent-encodes them),
//! so what is hidden is exactly what is sent as a password.

/// In `rest` (a URL after its `scheme://`), the index of the `@` that ends the userinfo, if the URL
/// has one:
/// - when the text up to the first `/` or `?` is a plain `host[:port]` (no `@`, a numeric port),
///   the URL has no userinfo (an `@` further on belongs to the path or query);
/// - otherwise the last `@` that a host-like authority follows (a name, an address or `[v6]`, an
///   optional `:port`, then the end, `/`, `?` or `#`), when the text before it holds a `:`
///   (`user:password`) or holds none of `/`, `?`, `#` (a user name alone, or `udp://@:1234`).
pub(crate) fn userinfo_end(rest: &str) -> Option<usize> {
    if !rest.contains('@') {
        return None;
    }
    let first = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let plain = !rest[..first].contains('@') && rest.as_bytes().get(first) != Some(&b'#') && host_port_len(&rest[..first]) == Some(first);
    if plain {
        return None;
    }
    rest.match_indices('@').map(|(i, _)| i).rev().find(|&at| {
        let after = &rest[at + 1..];
        let host_ok = host_port_len(after).is_some_and(|n| after[n..].is_empty() || after[n..].starts_with(['/', '?', '#']));
        let before = &rest[..at];
        host_ok && (before.contains(':') || !before.contains(['/', '?', '#']))
    })
}

/// The length of the `host[:port]` that `s` starts with (a host may be empty, as in `udp://@:1234`;
/// a port is digits).
fn host_port_len(s: &str) -> Option<usize> {
    let host = if let Some(v6) = s.strip_prefix('[') {
        v6.find(']').map(|e| e + 2)?
    } else {
        s.find(|c: char| !(c.is_ascii_alphanumeric() || ".-_~%".contains(c))).unwrap_or(s.len())
    };
    match s[host..].strip_prefix(':') {
        Some(p) => Some(host + 1 + p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len())),
        None => Some(host),
    }
}

/// A whole URL without its password: `scheme://user:***@host…`, the user name kept (it ends at
/// the userinfo's first `:`), and SRT's `passphrase=` value hidden.
pub(crate) fn redact_url(url: &str) -> String {
    let mut out = match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            // A malformed authority (`user:pw@[::1`, no host after the `@`) has no userinfo to
            // a parser, but may still hold a password: for a text that is shown, not sent, the
            // last `@` before the path ends it whenever the start is not a plain `host[:port]`.
            match userinfo_end(rest).or_else(|| malformed_userinfo_end(rest)) {
                Some(at) if rest[..at].contains(':') => {
                    let user = rest[..at].split(':').next().unwrap_or("");
                    format!("{}{user}:***{}", &url[..i + 3], &rest[at..])
                }
                _ => url.to_string(),
            }
        }
        None => url.to_string(),
    };
    out = hide_values(&out, "passphrase=");
    out
}

/// In `rest` (after `scheme://`), the last `@` before the first `/`, `?` or `#` when the text
/// there is not a plain `host[:port]`; also the last `@` of all when that text holds a `:` and the
/// path has an `@` (a password with `/` in it before a host that does not parse).
fn malformed_userinfo_end(rest: &str) -> Option<usize> {
    let first = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let head = &rest[..first];
    if host_port_len(head) == Some(head.len()) && !head.contains('@') {
        // `host:port/…@…` reads as a path with an `@`, unless the port is no number.
        return None;
    }
    head.rfind('@').or_else(|| head.contains(':').then(|| rest.rfind('@')).flatten())
}

/// A line that may hold URLs and options (FFmpeg's own log lines, which name the URLs nvcam gave
/// it, credentials percent-encoded), without its secrets: each URL, up to a quote or white space,
/// as [`redact_url`] writes it, and the value of each `passphrase=` (SRT's, in a URL query or an
/// option string) as `***`.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        // The scheme: the letters before `://`.
        let start = rest[..i].rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c))).map_or(0, |s| s + 1);
        out.push_str(&rest[..start]);
        // A quoted URL ends at its closing quote (a password may hold spaces), another at white
        // space or a quote.
        let quote = rest[..start].chars().next_back().filter(|c| *c == '\'' || *c == '"');
        let end = match quote {
            Some(q) => {
                let from = i + 3;
                let closes = |e: usize| rest[e + 1..].chars().next().is_none_or(|c| c.is_whitespace() || ",.;:)]".contains(c));
                rest[from..].match_indices(q).map(|(e, _)| from + e).find(|&e| closes(e)).unwrap_or(rest.len())
            }
            None => rest[i + 3..].find(['\'', '"', ' ', '\t', '\n']).map_or(rest.len(), |e| i + 3 + e),
        };
        let url = &rest[start..end];
        let hidden = redact_url(url);
        out.push_str(&hidden);
        rest = &rest[end..];
    }
    out.push_str(rest);
    hide_values(&out, "passphrase=")
}

/// `text` with the value after each `key` (ASCII case-insensitive) replaced by `***`; a value ends
/// where a URL query, an option string or a quoted log line ends it.
fn hide_values(text: &str, key: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(k) = lower[from..].find(key) {
        let start = from + k + key.len();
        // A quoted value (the option string's quoting: `""` is one `"`) ends at its closing quote.
        let end = if text[start..].starts_with('"') {
            let b = text.as_bytes();
            let mut i = start + 1;
            loop {
                match b.get(i) {
                    None => break text.len(),
                    Some(b'"') if b.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => break i + 1,
                    Some(_) => i += 1,
                }
            }
        } else {
            text[start..].find(['&', ';', '\'', '"', ' ', '\t', '\n']).map_or(text.len(), |e| start + e)
        };
        out.push_str(&text[from..start]);
        out.push_str("***");
        from = end;
    }
    out.push_str(&text[from..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(redact("rtsp://admin:secret@10.0.0.1/s"), "rtsp://admin:***@10.0.0.1/s");
        assert_eq!(redact("rtsp://10.0.0.1/a@b"), "rtsp://10.0.0.1/a@b");
        assert_eq!(redact("testsrc://1280x720@30"), "testsrc://1280x720@30");
        assert_eq!(redact("rtsp://admin:secret@10.0.0.1"), "rtsp://admin:***@10.0.0.1");
        // FFmpeg's own lines name URLs inside quotes, several to a line.
        assert_eq!(
            redact("Opening 'rtsps://u:p1@h/x' then 'http://v:p2@g'"),
            "Opening 'rtsps://u:***@h/x' then 'http://v:***@g'"
        );
    }

    /// Passwords pasted unencoded, with the characters that end an authority or a token: the
    /// userinfo is hidden by structure (up to the last `@` a host follows), whatever it holds.
    /// Redaction by spelling let `#`, `?`, `/` and spaces through, into errors and TRACE lines.
    #[test]
    fn passwords_of_any_spelling_are_hidden() {
        for pw in ["Adm1n#Secret42", "a?b", "a/b", "p@ss", "p:w", "with space", "100%", "p%zz", "pä$s", "#?/@: %ü"] {
            let url = format!("rtsp://admin:{pw}@10.0.0.1:554/stream?x=1");
            let r = redact_url(&url);
            assert_eq!(r, "rtsp://admin:***@10.0.0.1:554/stream?x=1", "{pw}");
            let r = redact(&format!("Opening '{url}' now"));
            assert_eq!(r, "Opening 'rtsp://admin:***@10.0.0.1:554/stream?x=1' now", "{pw}");
        }
        assert_eq!(redact_url("rtsp://admin:a/b@cam"), "rtsp://admin:***@cam");
        assert_eq!(redact_url("rtsp://admin:a@b@[::1]:8554/x"), "rtsp://admin:***@[::1]:8554/x");
        // A path or query with an `@` after a plain host is no userinfo.
        assert_eq!(redact_url("rtsp://10.0.0.1:554/a@b"), "rtsp://10.0.0.1:554/a@b");
        assert_eq!(redact_url("rtsp://10.0.0.1/x?user=a@b"), "rtsp://10.0.0.1/x?user=a@b");
        assert_eq!(redact_url("udp://@:1234?fifo_size=100"), "udp://@:1234?fifo_size=100");
        assert_eq!(redact_url("rtsp://admin@cam/x"), "rtsp://admin@cam/x");
        // Malformed authorities that no parser takes apart still hide what may be a password.
        assert_eq!(redact_url("srt://admin:Pw1@[::1:65536/"), "srt://admin:***@[::1:65536/");
        assert_eq!(redact_url("rtsp://admin:Se/cret@cam:x/y"), "rtsp://admin:***@cam:x/y");
        assert_eq!(redact_url("rtsp://admin:pw@/x"), "rtsp://admin:***@/x");
    }

    #[test]
    fn the_userinfo_ends_at_the_last_at_a_host_follows() {
        assert_eq!(userinfo_end("u:p@h/x"), Some(3));
        assert_eq!(userinfo_end("u:p@h@x/y"), Some(5));
        assert_eq!(userinfo_end("u:a/b@h"), Some(5));
        assert_eq!(userinfo_end("u:a#b@h:554"), Some(5));
        assert_eq!(userinfo_end("h:554/a@b"), None);
        assert_eq!(userinfo_end("h/a@b"), None);
        assert_eq!(userinfo_end("h"), None);
        assert_eq!(userinfo_end("@:1234"), Some(0));
    }

    /// SRT's passphrase, in a URL query, an option string or a log line quoting either.
    #[test]
    fn passphrases_never_reach_logs() {
        assert_eq!(
            redact("srt://10.0.0.1:9000?latency=300000&passphrase=s3cret-pass&streamid=cam1"),
            "srt://10.0.0.1:9000?latency=300000&passphrase=***&streamid=cam1"
        );
        assert_eq!(redact("latency=300000;PassPhrase=s3cret-pass"), "latency=300000;PassPhrase=***");
        assert_eq!(
            redact("Connection to srt://h:1?passphrase=s3cret-pass failed: x"),
            "Connection to srt://h:1?passphrase=*** failed: x"
        );
        assert_eq!(redact("passphrase=a passphrase=b"), "passphrase=*** passphrase=***");
        assert_eq!(redact("no secret here"), "no secret here");
        assert_eq!(redact(r#"latency=1;passphrase=" a;b ""c"" & d=e ";pbkeylen=32"#), "latency=1;passphrase=***;pbkeylen=32");
        assert_eq!(redact(r#"passphrase=" unclosed; x"#), "passphrase=***");
    }
}
