//! Secrets out of every text nvcam writes: the passwords in URLs and SRT's passphrase, hidden
//! before a URL or one of FFmpeg's own log lines reaches a log line or an error text.

/// A URL, or a line that may hold URLs and options, without its secrets, for logs and error
/// texts: the password of each `scheme://user:password@host` and the value of each `passphrase=`
/// (SRT's, in a URL query or an option string) become `***`.
pub(crate) fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let host_end = rest.find(['/', '?', '#', '\'', '"', ' ', '\t', '\n']).unwrap_or(rest.len());
        if let Some(at) = rest[..host_end].rfind('@').filter(|&at| rest[..at].contains(':')) {
            let user = rest[..at].split(':').next().unwrap_or("");
            out.push_str(user);
            out.push_str(":***");
            rest = &rest[at..];
        }
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
        let end = text[start..].find(['&', ';', '\'', '"', ' ', '\t', '\n']).map_or(text.len(), |e| start + e);
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
    }
}
