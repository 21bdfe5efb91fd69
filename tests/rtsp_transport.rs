//! RTSP transports and credentials as users configure them: the `transport` camera
//! option (TCP, UDP, UDP multicast, the HTTP tunnel, AUTO's fall-back to TCP behind a firewall
//! that drops UDP), Basic and Digest authentication, rtsps://, and passwords kept out of error
//! texts and the log.
//!
//! Every test runs against the loopback server `tests/support/rtsp_server.py` (GStreamer), which
//! logs each SETUP's transport, so a test can tell which transport a camera really used. They run
//! one at a time (a lock) and call only the exported C functions, decoding on the CPU.

mod common;
use common::{cam_error, get_frame, last_error, serial, stats, wait_until, LogCapture, Opts};
use nvcam::*;
use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

#[path = "support/rtsp.rs"]
mod rtsp;
use rtsp::{RtspServer, Stream};

/// The kit's camera options with the given transport, and 5 s to open (a TLS handshake or
/// AUTO's fall-back to TCP takes longer than the kit's 3 s on a busy machine).
fn opts(transport: u32) -> Opts {
    Opts::new().with(|o| {
        o.open_timeout_ms = 5000;
        o.transport = transport;
    })
}

fn open(url: &str, o: &Opts) -> Result<u64, (i32, String)> {
    let c = CString::new(url).unwrap();
    let mut cam = 0u64;
    match unsafe { nvcam_camera_open(c.as_ptr(), &o.o, &mut cam) } {
        NVCAM_OK => Ok(cam),
        r => Err((r, last_error())),
    }
}

fn release(f: u64) {
    assert_eq!(nvcam_frame_release(f), NVCAM_OK, "{}", last_error());
}

fn close(cam: u64) {
    assert_eq!(nvcam_camera_close(cam, 2000), NVCAM_OK, "{}", last_error());
}

/// Closes the cameras if the test panics (so the next test starts clean).
struct CloseOnPanic(Vec<u64>);

impl Drop for CloseOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for &c in &self.0 {
                nvcam_camera_close(c, 1000);
            }
        }
    }
}

/// Takes `n` frames within `limit`; returns how many came.
fn frames(cam: u64, n: usize, limit: Duration) -> usize {
    let end = Instant::now() + limit;
    let mut got = 0;
    while got < n && Instant::now() < end {
        if let Ok(f) = get_frame(cam, 200) {
            release(f);
            got += 1;
        }
    }
    got
}

/// Base64 of `s` (what HTTP Basic puts on the wire), to look for it in logs.
fn base64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------

/// The `transport` option and `rtsp_transport` in the FFmpeg options both choose the transport:
/// together they would silently disagree, so the open fails naming both. An unknown value and a
/// UDP choice for rtsps:// (whose RTP rides its TLS connection) fail too, at once.
#[test]
fn transport_option_and_rtsp_transport_together_are_refused_by_name() {
    let _g = serial();
    let url = "rtsp://127.0.0.1:9/cam"; // refused at once if it were ever opened
    let e = open(url, &opts(NVCAM_TRANSPORT_UDP).ffmpeg("rtsp_transport=tcp")).expect_err("both given");
    assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{e:?}");
    assert!(e.1.contains("NVCAM_TRANSPORT_UDP") && e.1.contains("rtsp_transport=tcp"), "{}", e.1);
    let e = open(url, &opts(NVCAM_TRANSPORT_AUTO).ffmpeg("rtsp_transport=udp")).expect_err("both given");
    assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{e:?}");
    assert!(e.1.contains("NVCAM_TRANSPORT_AUTO"), "{}", e.1);
    let e = open(url, &opts(99)).expect_err("unknown transport");
    assert_eq!(e.0, NVCAM_E_INVALID_ARGUMENT, "{e:?}");
    let e = open("rtsps://127.0.0.1:9/cam", &opts(NVCAM_TRANSPORT_UDP)).expect_err("UDP with rtsps");
    assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{e:?}");
    assert!(e.1.contains("rtsps"), "{}", e.1);
    // Other sources ignore the option.
    let cam = open("testsrc://64x48@30", &opts(NVCAM_TRANSPORT_UDP)).unwrap_or_else(|e| panic!("testsrc: {e:?}"));
    close(cam);
}

/// Each transport option reaches FFmpeg: the server sees the SETUP it names, and frames arrive.
/// DEFAULT stays TCP (lossless), as before the option existed.
#[test]
fn each_transport_option_is_the_transport_used() {
    let _g = serial();
    let srv = RtspServer::start(Stream::default());
    for (transport, want) in [
        (NVCAM_TRANSPORT_DEFAULT, "tcp"),
        (NVCAM_TRANSPORT_TCP, "tcp"),
        (NVCAM_TRANSPORT_UDP, "udp"),
        (NVCAM_TRANSPORT_HTTP, "http"),
    ] {
        let before = srv.setups().len();
        let cam = open(&srv.url(), &opts(transport)).unwrap_or_else(|e| panic!("transport {transport}: {e:?}"));
        let _closer = CloseOnPanic(vec![cam]);
        assert_eq!(frames(cam, 15, Duration::from_secs(4)), 15, "transport {transport}: {}", cam_error(cam));
        close(cam);
        let setups = srv.setups();
        assert_eq!(setups[before..], [want.to_string()], "transport {transport}: all SETUPs {setups:?}");
    }
}

/// UDP multicast: the server picks a 239.255.42.x group; the camera joins it and decodes.
#[test]
fn multicast_transport_receives_the_group() {
    let _g = serial();
    // The group goes out through the interface of the route to it and is looped back to this
    // host: without such a route (a host with only loopback) multicast cannot work here at all.
    let route = std::process::Command::new("ip").args(["route", "get", "239.255.42.1"]).output();
    if !route.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("not run: no route to 239.255.42.1 on this host ({route:?})");
        return;
    }
    let srv = RtspServer::start(Stream::default().multicast());
    let cam = open(&srv.url(), &opts(NVCAM_TRANSPORT_UDP_MULTICAST)).unwrap_or_else(|e| panic!("multicast: {e:?} {}", srv.stderr_text()));
    let _closer = CloseOnPanic(vec![cam]);
    assert_eq!(frames(cam, 30, Duration::from_secs(5)), 30, "{}", cam_error(cam));
    close(cam);
    assert_eq!(srv.setups(), ["udp-mcast"], "{}", srv.stderr_text());
}

/// Behind a firewall that drops the server's UDP, a UDP camera gets nothing (so UDP alone is a
/// real choice, not TCP in disguise), and an AUTO camera falls back to TCP within the documented
/// time, says so once in the log, and stays on TCP when it reconnects.
#[test]
fn auto_falls_back_to_tcp_when_udp_is_dropped() {
    let _g = serial();
    let mut srv = RtspServer::start(Stream::default().no_udp_send());

    let o = opts(NVCAM_TRANSPORT_UDP).with(|o| o.flags = NVCAM_OPEN_ASYNC);
    let cam = open(&srv.url(), &o).unwrap();
    let _closer = CloseOnPanic(vec![cam]);
    let e = get_frame(cam, 3000).expect_err("UDP is dropped: no frame may arrive");
    assert_eq!(e.0, NVCAM_E_TIMEOUT, "{e:?}");
    assert_eq!(stats(cam).frames_decoded, 0);
    close(cam);
    assert!(srv.setups().iter().all(|s| s == "udp"), "{:?}", srv.setups());

    let log = LogCapture::start();
    let before = srv.setups().len();
    let t = Instant::now();
    let cam = open(&srv.url(), &opts(NVCAM_TRANSPORT_AUTO)).unwrap_or_else(|e| panic!("AUTO: {e:?}"));
    let _closer = CloseOnPanic(vec![cam]);
    release(get_frame(cam, 3000).unwrap_or_else(|e| panic!("AUTO over TCP: {e:?}")));
    let first = t.elapsed();
    assert!(first < Duration::from_millis(2000 + 1500), "first frame {first:?} after the open began");
    assert!(first >= Duration::from_millis(1900), "fell back after {first:?}, before UDP had its 2 s");
    assert_eq!(srv.setups()[before..], ["udp", "tcp"]);
    let said: Vec<_> = log.lines().into_iter().filter(|(_, m)| m.contains("opened over TCP instead")).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0].0, NVCAM_LOG_INFO, "{said:?}");

    // The server restarts: the camera reconnects straight over TCP, without another 2 s on UDP.
    let ready = srv.restart(None);
    assert!(wait_until(Duration::from_secs(6), || stats(cam).reconnects >= 1), "{}", cam_error(cam));
    let decoded = stats(cam).frames_decoded;
    assert!(wait_until(Duration::from_secs(6), || stats(cam).frames_decoded > decoded + 5), "{}", cam_error(cam));
    let back = ready.elapsed();
    assert!(back < Duration::from_millis(1900), "frames again {back:?} after the restart");
    assert_eq!(srv.setups(), ["tcp"], "after the restart");
    assert_eq!(log.lines().iter().filter(|(_, m)| m.contains("opened over TCP instead")).count(), 1);
    close(cam);
}

/// Where UDP works, AUTO uses it: no fall-back, no 2 s wait.
#[test]
fn auto_stays_on_udp_when_packets_arrive() {
    let _g = serial();
    let srv = RtspServer::start(Stream::default());
    let log = LogCapture::start();
    let t = Instant::now();
    let cam = open(&srv.url(), &opts(NVCAM_TRANSPORT_AUTO)).unwrap_or_else(|e| panic!("AUTO: {e:?}"));
    let _closer = CloseOnPanic(vec![cam]);
    release(get_frame(cam, 3000).unwrap_or_else(|e| panic!("AUTO over UDP: {e:?}")));
    assert!(t.elapsed() < Duration::from_millis(1500), "first frame after {:?}", t.elapsed());
    assert_eq!(frames(cam, 30, Duration::from_secs(3)), 30, "{}", cam_error(cam));
    close(cam);
    assert_eq!(srv.setups(), ["udp"]);
    assert!(!log.lines().iter().any(|(_, m)| m.contains("over TCP")), "{:?}", log.lines());
}

/// Digest authentication: the right password streams, a wrong one is NVCAM_E_AUTH at once, and
/// an asynchronous camera with it fails for good (no retry storm against the server).
#[test]
fn digest_auth_right_password_streams_wrong_one_fails_without_retries() {
    let _g = serial();
    let srv = RtspServer::start(Stream::default().auth_digest("viewer:d1gest-pw"));
    let o = opts(NVCAM_TRANSPORT_DEFAULT);
    let cam = open(&srv.url_with_auth("viewer:d1gest-pw"), &o).unwrap_or_else(|e| panic!("right password: {e:?}"));
    let _closer = CloseOnPanic(vec![cam]);
    assert_eq!(frames(cam, 15, Duration::from_secs(4)), 15, "{}", cam_error(cam));
    close(cam);

    let e = open(&srv.url_with_auth("viewer:wr0ng-pw"), &o).expect_err("wrong password");
    assert_eq!(e.0, NVCAM_E_AUTH, "{e:?}");
    assert!(e.1.contains("401"), "{}", e.1);
    let e = open(&srv.url(), &o).expect_err("no credentials");
    assert_eq!(e.0, NVCAM_E_AUTH, "{e:?}");

    let cam = open(&srv.url_with_auth("viewer:wr0ng-pw"), &opts(NVCAM_TRANSPORT_AUTO).with(|o| o.flags = NVCAM_OPEN_ASYNC)).unwrap();
    let _closer = CloseOnPanic(vec![cam]);
    assert!(wait_until(Duration::from_secs(3), || stats(cam).state == NVCAM_STATE_FAILED), "state {}", stats(cam).state);
    std::thread::sleep(Duration::from_millis(700));
    let s = stats(cam);
    assert_eq!((s.state, s.reconnects, s.last_error_code), (NVCAM_STATE_FAILED, 0, NVCAM_E_AUTH));
    // Wrong credentials end at DESCRIBE: no SETUP, over UDP or (AUTO falling back) TCP.
    assert_eq!(srv.setups(), ["tcp"], "only the right password's camera set up a stream");
    close(cam);
}

/// Passwords stay out of error texts and out of the log at its most verbose, for Basic and
/// Digest, right and wrong, and in the base64 form Basic sends.
#[test]
fn passwords_never_reach_error_texts_or_the_log() {
    let _g = serial();
    for (stream, user, good, bad) in [
        (Stream::default().auth("viewer:b4sic-pw"), "viewer", "b4sic-pw", "b4sic-wr0ng"),
        (Stream::default().auth_digest("viewer:d1gest-pw"), "viewer", "d1gest-pw", "d1gest-wr0ng"),
    ] {
        let srv = RtspServer::start(stream);
        let log = LogCapture::start();
        let o = opts(NVCAM_TRANSPORT_TCP);
        let cam = open(&srv.url_with_auth(&format!("{user}:{good}")), &o).unwrap_or_else(|e| panic!("right password: {e:?}"));
        release(get_frame(cam, 3000).expect("a frame"));
        let (ok_error, ok_cam_error) = (last_error(), cam_error(cam));
        close(cam);
        let e = open(&srv.url_with_auth(&format!("{user}:{bad}")), &o).expect_err("wrong password");
        assert_eq!(e.0, NVCAM_E_AUTH, "{e:?}");
        assert!(e.1.contains(&format!("{user}:***@")), "the URL is named, redacted: {}", e.1);
        let lines = log.lines();
        assert!(!lines.is_empty());
        for secret in [good.to_string(), bad.to_string(), base64(&format!("{user}:{good}")), base64(&format!("{user}:{bad}"))] {
            for (_, m) in &lines {
                assert!(!m.contains(&secret), "{secret:?} in the log: {m}");
            }
            for t in [&e.1, &ok_error, &ok_cam_error] {
                assert!(!t.contains(&secret), "{secret:?} in an error text: {t}");
            }
        }
    }
}

/// A password as users paste it, unencoded, holding every character that ends a URL's authority
/// or a token: `#`, `?`, `/`, `@`, `:`, a space, `%` and non-ASCII, between runs no log line may
/// show.
const ODD_PASSWORD: &str = "Kq7#Zx9?Wv3/Hp5@Jt2:Ly8 Rb4%Nc6\u{fc}Gm1";

/// `s` percent-encoded, every byte but letters and digits.
fn percent_encoded(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// Passwords of any spelling, pasted unencoded, stream over Basic and Digest (and the same
/// password percent-encoded by the host still does); a wrong one is NVCAM_E_AUTH; malformed URLs
/// that hold it fail with a reason. No error text and no log line at TRACE (FFmpeg's own
/// included) holds any part of it, its encoded form or the Base64 Basic sends. Prevents: a
/// password split at `#`, `?`, `/` or a space into a port or a path (quoted back in the error:
/// "invalid port 'Adm1n'"), sent wrong to the camera, or logged by FFmpeg.
#[test]
fn passwords_of_any_spelling_stream_and_never_reach_texts() {
    let _g = serial();
    let parts: Vec<&str> = ODD_PASSWORD.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| p.len() >= 3).collect();
    assert_eq!(parts.len(), 9, "{parts:?}");
    let user_pw = format!("viewer:{ODD_PASSWORD}");
    let mut secrets: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    secrets.extend([ODD_PASSWORD.to_string(), percent_encoded(ODD_PASSWORD), base64(&user_pw)]);
    let user_pw: &'static str = Box::leak(user_pw.into_boxed_str());
    let log = LogCapture::start();
    let mut texts = Vec::new();
    for stream in [Stream::default().auth(user_pw), Stream::default().auth_digest(user_pw)] {
        let srv = RtspServer::start(stream);
        let o = opts(NVCAM_TRANSPORT_TCP);
        for url in [srv.url_with_auth(user_pw), srv.url_with_auth(&format!("viewer:{}", percent_encoded(ODD_PASSWORD)))] {
            let cam = open(&url, &o).unwrap_or_else(|e| panic!("right password: {e:?}"));
            let _closer = CloseOnPanic(vec![cam]);
            assert_eq!(frames(cam, 5, Duration::from_secs(4)), 5, "{}", cam_error(cam));
            texts.extend([last_error(), cam_error(cam)]);
            close(cam);
        }
        let e = open(&srv.url_with_auth(&format!("viewer:{ODD_PASSWORD}x")), &o).expect_err("wrong password");
        assert_eq!(e.0, NVCAM_E_AUTH, "{e:?}");
        assert!(e.1.contains("viewer:***@127.0.0.1"), "the URL is named, redacted: {}", e.1);
        texts.push(e.1);
    }
    // Malformed URLs holding the password: a bad port after it, no host, an unclosed '['.
    for url in [
        format!("rtsp://viewer:{ODD_PASSWORD}@127.0.0.1:0/cam"),
        format!("rtsp://viewer:{ODD_PASSWORD}@127.0.0.1:99999/cam"),
        format!("rtsp://viewer:{ODD_PASSWORD}"),
        format!("rtsp://viewer:{ODD_PASSWORD}@[::1/cam"),
        format!("rtsp://viewer:{ODD_PASSWORD}@/cam"),
    ] {
        let e = open(&url, &opts(NVCAM_TRANSPORT_TCP)).expect_err(&url);
        assert_eq!(e.0, NVCAM_E_INVALID_ARGUMENT, "{url}: {e:?}");
        texts.push(e.1);
    }
    let lines = log.lines();
    assert!(lines.len() > 50, "too little logged at TRACE to look at: {}", lines.len());
    for secret in &secrets {
        for (_, m) in &lines {
            assert!(!m.contains(secret.as_str()), "{secret:?} in the log: {m}");
        }
        for t in &texts {
            assert!(!t.contains(secret.as_str()), "{secret:?} in an error text: {t}");
        }
    }
}

/// Whether the FFmpeg this process runs (the one nvcam links) has the `tls` protocol.
fn ffmpeg_has_tls() -> bool {
    use ffmpeg_next::ffi::avio_enum_protocols;
    let mut opaque = std::ptr::null_mut();
    loop {
        // SAFETY: FFmpeg's protocol iterator: `opaque` is its state, each name a static string.
        let p = unsafe { avio_enum_protocols(&mut opaque, 0) };
        if p.is_null() {
            return false;
        }
        // SAFETY: as above.
        if unsafe { CStr::from_ptr(p) } == c"tls" {
            return true;
        }
    }
}

/// rtsps://: RTSP and RTP inside TLS. nvcam's own FFmpeg builds have TLS (mbedTLS); a system
/// FFmpeg without it must fail an rtsps open at once, saying TLS is missing, instead of FFmpeg's
/// bare "Protocol not found" or a wait for the open timeout. With TLS, frames stream over every
/// transport choice that is possible with rtsps from a camera whose own (self-signed) certificate
/// is pinned.
#[test]
fn rtsps_streams_over_tls() {
    let _g = serial();
    if !ffmpeg_has_tls() {
        // A port that accepts and never answers: any attempt to connect would wait for the timeout.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("rtsps://viewer:tls-pw@127.0.0.1:{}/cam", silent.local_addr().unwrap().port());
        for transport in [NVCAM_TRANSPORT_DEFAULT, NVCAM_TRANSPORT_TCP, NVCAM_TRANSPORT_AUTO] {
            let t0 = Instant::now();
            let e = open(&url, &opts(transport)).expect_err("rtsps without TLS in FFmpeg");
            assert!(t0.elapsed() < Duration::from_secs(1), "took {:?}: {e:?}", t0.elapsed());
            assert_eq!(e.0, NVCAM_E_UNSUPPORTED, "{e:?}");
            assert!(e.1.contains("rtsps://") && e.1.contains("TLS"), "not named: {}", e.1);
            assert!(!e.1.contains("tls-pw"), "password in the error: {}", e.1);
        }
        eprintln!("FFmpeg has no TLS: rtsps:// is refused at once, with its reason");
        return;
    }
    let pki = Pki::new("transports");
    let own = pki.self_signed("camera");
    let srv = RtspServer::start(Stream::default().tls(own.pem.to_str().unwrap()).auth_digest("viewer:tls-pw"));
    let url = format!("rtsps://viewer:tls-pw@127.0.0.1:{}/cam", srv.port);
    for transport in [NVCAM_TRANSPORT_DEFAULT, NVCAM_TRANSPORT_AUTO] {
        let o = opts(transport).ffmpeg(&format!("tls_pin_sha256={}", own.sha256));
        let cam = open(&url, &o).unwrap_or_else(|e| panic!("rtsps, transport {transport}: {e:?}"));
        let _closer = CloseOnPanic(vec![cam]);
        assert_eq!(frames(cam, 15, Duration::from_secs(4)), 15, "{}", cam_error(cam));
        close(cam);
    }
    assert_eq!(srv.setups(), ["tcp", "tcp"]);
    // Plain RTSP to the TLS port is not RTSP: a clear failure, not a hang.
    let e = open(&srv.url(), &opts(NVCAM_TRANSPORT_TCP)).expect_err("plain RTSP to a TLS server");
    assert_ne!(e.0, NVCAM_OK);
}

// ---------------------------------------------------------------------------------------------
// A certificate made by the openssl CLI (verification itself: tests/tls.rs).

/// A folder of test certificates.
struct Pki {
    dir: std::path::PathBuf,
}

/// A server certificate: the PEM of certificate and key (what the server loads) and its SHA-256
/// fingerprint as `openssl x509 -fingerprint` prints it (upper case, colons).
struct Cert {
    pem: std::path::PathBuf,
    sha256: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("nvcam-tls-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Pki { dir }
    }
    fn openssl(&self, args: &[&str]) {
        let out = std::process::Command::new("openssl").current_dir(&self.dir).args(args).output();
        assert!(out.as_ref().is_ok_and(|o| o.status.success()), "openssl {args:?} (apt-get install openssl): {out:?}");
    }
    /// A camera's own certificate, signed by its own key (no SAN, CN `camera`).
    fn self_signed(&self, name: &str) -> Cert {
        let (key, crt) = (format!("{name}.key"), format!("{name}.crt"));
        self.openssl(&["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=camera", "-keyout", &key, "-out", &crt]);
        self.cert(name)
    }
    fn cert(&self, name: &str) -> Cert {
        let (cert, key, pem) = (self.dir.join(format!("{name}.crt")), self.dir.join(format!("{name}.key")), self.dir.join(format!("{name}.pem")));
        std::fs::write(&pem, [std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap()].concat()).unwrap();
        let out = std::process::Command::new("openssl").args(["x509", "-noout", "-fingerprint", "-sha256", "-in"]).arg(&cert).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let sha256 = text.trim().rsplit('=').next().unwrap().to_string();
        assert_eq!(sha256.len(), 95, "{text}");
        Cert { pem, sha256 }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sessions the server set up and has not seen torn down (one per SETUP: the stream has one
/// track).
fn open_sessions(srv: &RtspServer) -> usize {
    srv.setups().len().saturating_sub(srv.teardowns())
}

/// Every session nvcam ends gets its TEARDOWN: a camera that limits its sessions (most do)
/// would otherwise count each closed or reconnected one until it times out, a minute or more, and
/// over UDP go on streaming to a port nobody reads. The TEARDOWN used to be cut short by the very
/// stop or kick that ended the session. Counted at the server over TCP and UDP, for a manual
/// reconnect, a stall (the TEARDOWN waits in the hung server's socket and counts once it
/// resumes; over UDP only, see below), a close and a shutdown; over UDP the server's packets stop
/// within 1 s of the close.
#[test]
fn every_session_nvcam_ends_is_torn_down() {
    let _g = serial();
    for (transport, name) in [(NVCAM_TRANSPORT_TCP, "tcp"), (NVCAM_TRANSPORT_UDP, "udp")] {
        let srv = RtspServer::start(Stream::default().count_udp());
        let o = opts(transport).with(|o| o.stall_timeout_ms = 1000);
        let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let closer = CloseOnPanic(vec![cam]);
        assert_eq!(frames(cam, 10, Duration::from_secs(5)), 10, "{name}: {}", cam_error(cam));
        assert_eq!(open_sessions(&srv), 1, "{name}: {}", srv.stderr_text());

        assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
        assert!(wait_until(Duration::from_secs(5), || srv.setups().len() == 2), "{name}: no new session after the reconnect");
        assert!(wait_until(Duration::from_secs(3), || open_sessions(&srv) == 1), "{name}: the reconnect left its old session: {}", srv.stderr_text());
        assert_eq!(frames(cam, 10, Duration::from_secs(5)), 10, "{name}: {}", cam_error(cam));

        srv.pause();
        let reconnects = stats(cam).reconnects;
        assert!(wait_until(Duration::from_secs(6), || stats(cam).reconnects > reconnects), "{name}: no stall seen: {}", cam_error(cam));
        srv.resume();
        assert!(wait_until(Duration::from_secs(10), || frames(cam, 1, Duration::from_millis(200)) == 1), "{name}: no frame after the stall: {}", cam_error(cam));
        // Over TCP the TEARDOWN to a hung server is best effort: the resumed server may first write
        // RTP to the closed connection, and the client's reset then discards what it had not
        // read yet, the TEARDOWN with it. Over UDP nothing is written to that connection.
        if name == "udp" {
            assert!(wait_until(Duration::from_secs(3), || open_sessions(&srv) == 1), "{name}: the stalled session was not torn down: {}", srv.stderr_text());
        } else {
            std::thread::sleep(Duration::from_millis(500));
        }
        let stale = open_sessions(&srv) - 1;

        close(cam);
        let closed = Instant::now();
        drop(closer);
        assert!(wait_until(Duration::from_secs(2), || open_sessions(&srv) == stale), "{name}: close sent no TEARDOWN: {}", srv.stderr_text());
        if name == "udp" {
            std::thread::sleep(Duration::from_secs(1).saturating_sub(closed.elapsed()));
            let at_1s = srv.udp_sent();
            std::thread::sleep(Duration::from_secs(1));
            assert_eq!(srv.udp_sent(), at_1s, "the server still streams over UDP 1 s after the close");
        }

        let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(frames(cam, 5, Duration::from_secs(5)), 5, "{name}: {}", cam_error(cam));
        assert_eq!(open_sessions(&srv), stale + 1, "{name}: {}", srv.stderr_text());
        assert_eq!(nvcam_shutdown(5000), NVCAM_OK, "{}", last_error());
        common::init();
        assert!(wait_until(Duration::from_secs(2), || open_sessions(&srv) == stale), "{name}: shutdown sent no TEARDOWN: {}", srv.stderr_text());
    }
}

/// The default transport opens a server that offers only UDP (VLC and many cameras answer a TCP
/// SETUP with 461 Unsupported Transport; the open used to fail "Protocol not supported") and one
/// that offers only TCP. The fall-back to UDP is logged once and kept for the camera's reconnects
/// (they do not ask for TCP again). An explicit transport the server refuses fails at once with a
/// permanent error naming it: a synchronous open with NVCAM_E_UNSUPPORTED, an ASYNC camera FAILED
/// without a retry loop.
#[test]
fn default_transport_falls_back_to_the_one_the_server_offers() {
    let _g = serial();
    let udp_only = RtspServer::start(Stream::default().only("udp"));
    let log = LogCapture::at(NVCAM_LOG_INFO);
    let said = || log.lines().into_iter().filter(|(_, m)| m.contains("refused RTP over TCP, opened over UDP")).count();
    let cam = open(&udp_only.url(), &opts(NVCAM_TRANSPORT_DEFAULT)).unwrap_or_else(|e| panic!("UDP-only server: {e:?}: {}", udp_only.stderr_text()));
    let closer = CloseOnPanic(vec![cam]);
    assert_eq!(frames(cam, 15, Duration::from_secs(5)), 15, "{}", cam_error(cam));
    assert_eq!(udp_only.setups(), ["udp"]);
    assert_eq!(said(), 1, "{:?}", log.lines());
    assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
    assert!(wait_until(Duration::from_secs(5), || udp_only.setups().len() == 2), "{}", cam_error(cam));
    assert_eq!(frames(cam, 15, Duration::from_secs(5)), 15, "{}", cam_error(cam));
    assert_eq!(said(), 1, "the reconnect asked for TCP again: {:?}", log.lines());
    close(cam);
    drop(closer);
    drop(log);

    let o = opts(NVCAM_TRANSPORT_TCP).with(|o| o.flags = NVCAM_OPEN_ASYNC);
    let cam = open(&udp_only.url(), &o).unwrap();
    let closer = CloseOnPanic(vec![cam]);
    assert!(wait_until(Duration::from_secs(3), || stats(cam).state == NVCAM_STATE_FAILED), "explicit TCP refused: {}", cam_error(cam));
    std::thread::sleep(Duration::from_millis(700));
    let s = stats(cam);
    assert_eq!((s.state, s.reconnects, s.reconnect_attempt), (NVCAM_STATE_FAILED, 0, 0), "a refused transport is not retried");
    assert_eq!(s.last_error_code, NVCAM_E_UNSUPPORTED);
    assert!(cam_error(cam).contains("refused RTP over TCP"), "{}", cam_error(cam));
    close(cam);
    drop(closer);

    let tcp_only = RtspServer::start(Stream::default().only("tcp"));
    let cam = open(&tcp_only.url(), &opts(NVCAM_TRANSPORT_DEFAULT)).unwrap_or_else(|e| panic!("TCP-only server: {e:?}"));
    let closer = CloseOnPanic(vec![cam]);
    assert_eq!(frames(cam, 15, Duration::from_secs(5)), 15, "{}", cam_error(cam));
    close(cam);
    drop(closer);
    assert_eq!(tcp_only.setups(), ["tcp"]);
    let t = Instant::now();
    let e = open(&tcp_only.url(), &opts(NVCAM_TRANSPORT_UDP)).expect_err("explicit UDP on a TCP-only server");
    assert_eq!(e.0, NVCAM_E_UNSUPPORTED, "{e:?}");
    assert!(e.1.contains("refused RTP over UDP"), "{}", e.1);
    assert!(t.elapsed() < Duration::from_secs(3), "the refusal took {:?}", t.elapsed());
}

/// The receive buffers (`rb` in `ss -m`) of this process's UDP sockets.
fn udp_receive_buffers() -> Vec<u64> {
    let out = std::process::Command::new("ss").args(["-u", "-a", "-m", "-p", "-n"]).output().expect("ss (iproute2)");
    assert!(out.status.success(), "ss: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let me = format!("pid={},", std::process::id());
    // Each socket is a line with its process, then a line with its memory: skmem:(r0,rb425984,...).
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[0].contains(&me))
        .filter_map(|w| w[1].split("skmem:(").nth(1))
        .filter_map(|m| m.split(',').find_map(|f| f.strip_prefix("rb")).and_then(|v| v.parse().ok()))
        .collect()
}

/// RTP over UDP gets a receive buffer of megabytes, not FFmpeg's 64 KB (which a decode held up
/// for a moment overflows in the kernel: packets lost that the network never lost), or what
/// Linux grants (net.core.rmem_max) where that is less; a camera's own `buffer_size` wins. Linux
/// reports (`rb`) twice what it granted.
#[test]
fn rtp_over_udp_gets_a_receive_buffer_of_megabytes() {
    let _g = serial();
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max").unwrap().trim().parse().unwrap();
    let want = 2 * (4u64 << 20).min(rmem_max);
    let srv = RtspServer::start(Stream::default());
    for (o, expect) in [(opts(NVCAM_TRANSPORT_UDP), want), (opts(NVCAM_TRANSPORT_UDP).ffmpeg("buffer_size=100000"), 200_000)] {
        let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("{e:?}"));
        let closer = CloseOnPanic(vec![cam]);
        assert_eq!(frames(cam, 5, Duration::from_secs(5)), 5, "{}", cam_error(cam));
        let rb = udp_receive_buffers();
        close(cam);
        drop(closer);
        assert!(rb.len() >= 2, "the camera's RTP and RTCP sockets not found: {rb:?}");
        assert!(rb.iter().all(|&b| b == expect), "receive buffers {rb:?}, expected {expect} each");
    }
}
