//! TLS cameras with their certificates verified, on Linux and under Wine with the same servers:
//! rtsps:// (GStreamer's RTSP server) and https:// MJPEG (Python's http.server in ssl), both from
//! tests/support/tls_fixture.py, which makes the certificates with the openssl CLI and starts one
//! server per certificate for the whole test binary.
//!
//! On Linux the first test starts the fixture (it ends when this process does). A Windows process
//! under Wine cannot start Linux programs: scripts/ci/windows-test.sh starts the fixture on Linux
//! and names its file in NVCAM_TLS_FIXTURE; without it the Windows tests fail, they do not pass.
//! Tests run one at a time (a lock: the log capture is process-wide) and decode on the CPU.

mod common;
use common::{cam_error, get_frame, info, last_error, options, release, serial, stats, wait_until, LogCapture};
use nvcam::*;
use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Every server asks for this user and password (RTSP and HTTP Basic).
const CREDENTIALS: &str = "viewer:s3cret-tls";
const PASSWORD: &str = "s3cret-tls";
/// Base64 of CREDENTIALS: what an HTTP Basic header carries.
const CREDENTIALS_B64: &str = "dmlld2VyOnMzY3JldC10bHM=";

/// The H.264 clip the good rtsps server streams and the MJPEG the https servers stream; made on
/// Linux (the Windows step runs this binary on Linux first), found in the fixtures under Wine.
fn h264_clip() -> PathBuf {
    common::clip("tls_320x240.mp4", "320x240", 90, "libx264", &["-preset", "ultrafast", "-g", "30", "-bf", "0"])
}
fn mjpeg_clip() -> PathBuf {
    common::clip("tls_mjpeg_320x240.mjpeg", "320x240", 30, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "5"])
}

/// The fixture's values: URLs (without credentials), CA files, pins, log paths.
struct Fixture(HashMap<String, String>);

impl Fixture {
    fn get(&self, k: &str) -> String {
        self.0.get(k).unwrap_or_else(|| panic!("the TLS fixture has no {k}")).clone()
    }
    /// The URL with the test's credentials.
    fn url(&self, k: &str) -> String {
        self.get(k).replacen("://", &format!("://{CREDENTIALS}@"), 1)
    }
    /// A file the fixture made, as this process names it (under Wine, Linux's / is drive Z:).
    fn path(&self, k: &str) -> String {
        let p = self.get(k);
        if cfg!(windows) {
            format!("Z:{}", p.replace('/', "\\"))
        } else {
            p
        }
    }
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let file = match std::env::var_os("NVCAM_TLS_FIXTURE") {
            Some(f) => PathBuf::from(f),
            None if cfg!(windows) => panic!(
                "NVCAM_TLS_FIXTURE is not set: under Wine the TLS servers are started on Linux by scripts/ci/windows-test.sh (tests/support/tls_fixture.py)"
            ),
            None => start_fixture(),
        };
        let file = if cfg!(windows) { PathBuf::from(format!("Z:{}", file.display().to_string().replace('/', "\\"))) } else { file };
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        Fixture(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
    })
}

/// Starts tests/support/tls_fixture.py for the life of this process (it stops when its stdin, a
/// pipe this process holds, closes) and returns its file.
fn start_fixture() -> PathBuf {
    let (h264, mjpeg) = (h264_clip(), mjpeg_clip());
    let dir = std::env::temp_dir().join(format!("nvcam-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let python = std::env::var("NVCAM_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
    let mut child = std::process::Command::new(&python)
        .arg(common::root().join("tests/support/tls_fixture.py"))
        .arg("--dir")
        .arg(&dir)
        .arg("--clip")
        .arg(&h264)
        .arg("--mjpeg")
        .arg(&mjpeg)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {python} tests/support/tls_fixture.py: {e} (packages in .ci/packages.txt)"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY", "tls_fixture.py did not start (its stderr is above)");
    // The child, and with it the write end of its stdin, is held until this process ends: that end
    // closes the pipe, which stops the fixture (no zombie: the fixture outlives this process).
    std::mem::forget(child);
    dir.join("fixture.env")
}

/// Camera options: CPU, short timeouts, the given FFmpeg options and flags.
struct Cam {
    o: nvcam_camera_options,
    _ffmpeg: CString,
}

fn cam_options(ffmpeg: &str, flags: u32) -> Cam {
    let mut o = options(flags);
    o.open_timeout_ms = 5000;
    o.stall_timeout_ms = 3000;
    o.reconnect_min_ms = 100;
    o.reconnect_max_ms = 1000;
    let c = CString::new(ffmpeg).unwrap();
    o.ffmpeg_options = c.as_ptr();
    Cam { o, _ffmpeg: c }
}

fn open(url: &str, c: &Cam) -> Result<u64, (i32, String)> {
    common::open(url, &c.o)
}

/// Closes the camera when dropped (also when an assertion fails, so the next test starts clean).
struct Closer(u64);

impl Drop for Closer {
    fn drop(&mut self) {
        let r = nvcam_camera_close(self.0, 2000);
        if !std::thread::panicking() {
            assert_eq!(r, NVCAM_OK, "{}", last_error());
        }
    }
}

/// Takes `n` frames within `limit`; with `refs`, each must be one of them byte for byte. Returns
/// how many came.
fn frames(cam: u64, n: usize, limit: Duration, refs: Option<&HashSet<u64>>) -> usize {
    let end = Instant::now() + limit;
    let mut got = 0;
    while got < n && Instant::now() < end {
        let Ok(f) = get_frame(cam, 200) else { continue };
        if let Some(refs) = refs {
            let i = info(f).unwrap();
            let px = common::pixels(f).unwrap();
            assert!(refs.contains(&common::fnv(&px)), "frame {} is not one of the clip's", i.seq);
        }
        release(f).unwrap();
        got += 1;
    }
    got
}

fn refs_of(clip: &std::path::Path) -> HashSet<u64> {
    common::reference_nv12(clip, 320, 240).iter().map(|f| common::fnv(f)).collect()
}

/// The SETUPs the rtsps server of `k` has logged so far.
fn setups(f: &Fixture, k: &str) -> usize {
    std::fs::read_to_string(f.path(&format!("{k}_log"))).unwrap_or_default().lines().filter(|l| l.starts_with("SETUP ")).count()
}

// ---------------------------------------------------------------------------------------------

/// With the right CA the certificate verifies (its IP subjectAltName against the URL's
/// 127.0.0.1) and every frame is one of the clip's, exact: rtsps (H.264) and https (MJPEG).
/// Prevents: verification that refuses good certificates, an IP host never checked, a TLS
/// layer that damages data.
#[test]
fn right_ca_verifies_and_streams_exact_frames() {
    let _g = serial();
    let f = fixture();
    let o = cam_options(&format!("ca_file={}", f.path("ca_file")), 0);
    for (k, refs) in [("rtsps_good", refs_of(&h264_clip())), ("https_good", refs_of(&mjpeg_clip()))] {
        let cam = open(&f.url(k), &o).unwrap_or_else(|e| panic!("{k}, right CA: {e:?}"));
        let _c = Closer(cam);
        assert_eq!(frames(cam, 20, Duration::from_secs(8), Some(&refs)), 20, "{k}: {}", cam_error(cam));
    }
}

/// Each refusal is NVCAM_E_TLS_VERIFY with its reason, at once and for good, over rtsps and
/// https: a wrong CA, none (the system's store does not know a private CA: under Wine this is
/// Windows' ROOT store, which must load), a certificate for another host, an expired one, a pin of
/// another certificate. An ASYNC camera ends FAILED without reconnecting. Prevents: an impostor
/// accepted, a refusal retried as a network error (a reconnect storm), a reason lost, RTSP
/// spoken to an unverified server.
#[test]
fn refusals_name_their_reason_and_are_permanent() {
    let _g = serial();
    let f = fixture();
    let ca = format!("ca_file={}", f.path("ca_file"));
    for scheme in ["rtsps", "https"] {
        let cases = [
            ("good", format!("ca_file={}", f.path("other_ca_file")), "unknown issuer"),
            ("good", String::new(), "unknown issuer"),
            ("wrong_host", ca.clone(), "name mismatch"),
            ("expired", ca.clone(), "expired"),
            ("good", format!("tls_pin_sha256={}", f.get("pin_own")), "pin mismatch"),
        ];
        for (server, opts, reason) in cases {
            let k = format!("{scheme}_{server}");
            let before = (scheme == "rtsps").then(|| setups(f, &k));
            let t0 = Instant::now();
            let e = open(&f.url(&k), &cam_options(&opts, 0)).expect_err(reason);
            assert_eq!(e.0, NVCAM_E_TLS_VERIFY, "{k} {reason}: {e:?}");
            assert!(e.1.contains(reason), "{k}: reason {reason:?} not named: {}", e.1);
            assert!(!e.1.contains(PASSWORD), "password in the error: {}", e.1);
            assert!(t0.elapsed() < Duration::from_secs(3), "{k} {reason}: took {:?}", t0.elapsed());
            if let Some(n) = before {
                assert_eq!(setups(f, &k), n, "{k} {reason}: RTSP went on after the refusal");
            }
        }
        // In the background: FAILED, its error the refusal, and no reconnect.
        let cam = open(&f.url(&format!("{scheme}_expired")), &cam_options(&ca, NVCAM_OPEN_ASYNC)).expect("an ASYNC open returns at once");
        let _c = Closer(cam);
        assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "{scheme}: state {}", stats(cam).state);
        std::thread::sleep(Duration::from_millis(500));
        let st = stats(cam);
        assert_eq!((st.state, st.reconnects, st.last_error_code), (NVCAM_STATE_FAILED, 0, NVCAM_E_TLS_VERIFY), "{scheme}");
        assert!(cam_error(cam).contains("expired"), "{}", cam_error(cam));
    }
}

/// A pin accepts exactly the camera's own self-signed certificate, however the host writes the
/// fingerprint (openssl's colons and capitals, or bare lower-case hex), without a CA or a name
/// check; insecure streams from the same camera and warns at every open; over rtsps and https.
/// Nothing logged (nvcam's log at TRACE, FFmpeg's messages included) holds the password, its
/// Base64 or a line of the private key. Prevents: pinned cameras refused, insecure silently
/// insecure, secrets in logs.
#[test]
fn pin_streams_insecure_warns_and_no_secret_is_logged() {
    let _g = serial();
    let f = fixture();
    let log = LogCapture::start();
    let pin = f.get("pin_own");
    let bare = pin.replace(':', "").to_lowercase();
    let warned = |log: &LogCapture| log.lines().iter().filter(|(l, m)| *l == NVCAM_LOG_WARN && m.contains("NOT verified")).count();
    let mut warnings = 0;
    for k in ["rtsps_own", "https_own"] {
        for p in [pin.as_str(), bare.as_str()] {
            let cam = open(&f.url(k), &cam_options(&format!("tls_pin_sha256={p}"), 0)).unwrap_or_else(|e| panic!("{k} pin {p}: {e:?}"));
            let _c = Closer(cam);
            assert_eq!(frames(cam, 10, Duration::from_secs(6), None), 10, "{k}: {}", cam_error(cam));
        }
        assert_eq!(warned(&log), warnings, "a verified camera warned: {:?}", log.lines());
        for _ in 0..2 {
            let cam = open(&f.url(k), &cam_options("", NVCAM_OPEN_TLS_INSECURE)).unwrap_or_else(|e| panic!("{k} insecure: {e:?}"));
            let _c = Closer(cam);
            assert_eq!(frames(cam, 10, Duration::from_secs(6), None), 10, "{k}: {}", cam_error(cam));
            warnings += 1;
            assert_eq!(warned(&log), warnings, "one warning per open: {:?}", log.lines());
        }
    }
    // Insecure with a pin contradicts itself; a malformed pin is a configuration error.
    let url = f.url("rtsps_own");
    let e = open(&url, &cam_options(&format!("tls_pin_sha256={bare}"), NVCAM_OPEN_TLS_INSECURE)).expect_err("pin + insecure");
    assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{e:?}");
    let e = open(&url, &cam_options("tls_pin_sha256=abcd", 0)).expect_err("short pin");
    assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{e:?}");
    let key = std::fs::read_to_string(f.path("key_own")).unwrap();
    let key_lines: Vec<&str> = key.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(key_lines.len() > 10, "{key}");
    let lines = log.lines();
    assert!(lines.len() >= 8, "too little logged to look at: {lines:?}");
    for (_, m) in &lines {
        assert!(!m.contains(PASSWORD) && !m.contains(CREDENTIALS_B64), "password in the log: {m}");
        assert!(!key_lines.iter().any(|k| m.contains(k)), "private key in the log: {m}");
    }
}

/// With no system trust store (SSL_CERT_FILE naming no file, in a child process of this test
/// binary) a verified open is NVCAM_E_TLS_VERIFY saying the store was not found, not an I/O
/// error that would be retried. Prevents: a host without CA certificates that reconnects for
/// ever with an error nobody can act on.
#[test]
fn a_missing_trust_store_is_a_verification_error_that_says_so() {
    if std::env::var_os("NVCAM_TLS_CHILD").is_some() {
        let _g = serial();
        let f = fixture();
        let e = open(&f.url("rtsps_good"), &cam_options("", 0)).expect_err("no trust store");
        assert_eq!(e.0, NVCAM_E_TLS_VERIFY, "{e:?}");
        assert!(e.1.contains("no system trust store found"), "{}", e.1);
        println!("CHILD-OK: {}", e.1);
        return;
    }
    let _g = serial();
    let f = fixture();
    let env_file = std::env::var("NVCAM_TLS_FIXTURE").unwrap_or_else(|_| {
        let dir = std::path::Path::new(&f.get("ca_file")).parent().unwrap().to_path_buf();
        dir.join("fixture.env").display().to_string()
    });
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_missing_trust_store_is_a_verification_error_that_says_so", "--nocapture", "--test-threads=1"])
        .env("NVCAM_TLS_CHILD", "1")
        .env("NVCAM_TLS_FIXTURE", env_file)
        .env("SSL_CERT_FILE", if cfg!(windows) { "Z:\\nonexistent\\ca-bundle.pem" } else { "/nonexistent/ca-bundle.pem" })
        .output()
        .expect("run this test binary again");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("CHILD-OK"), "child: {out:?}");
}

/// A server of only TLS 1.0, only TLS 1.1 or only TLS 1.3 (nvcam's mbedTLS speaks TLS 1.2) is
/// NVCAM_E_TLS_VERIFY naming the version, within 3 s, and an ASYNC camera ends FAILED with no
/// reconnect. Prevents: "Input/output error" retried for ever against a camera nvcam can never
/// reach.
#[test]
fn a_tls_version_nvcam_does_not_speak_is_a_named_permanent_refusal() {
    let _g = serial();
    let f = fixture();
    let ca = format!("ca_file={}", f.path("ca_file"));
    for k in ["https_tls10", "https_tls11", "https_tls13"] {
        let t0 = Instant::now();
        let e = open(&f.url(k), &cam_options(&ca, 0)).expect_err(k);
        assert_eq!(e.0, NVCAM_E_TLS_VERIFY, "{k}: {e:?}");
        assert!(e.1.contains("no TLS version nvcam supports") && e.1.contains("TLS 1.2"), "{k}: {}", e.1);
        assert!(!e.1.contains(PASSWORD), "password in the error: {}", e.1);
        assert!(t0.elapsed() < Duration::from_secs(3), "{k}: took {:?}", t0.elapsed());
        let cam = open(&f.url(k), &cam_options(&ca, NVCAM_OPEN_ASYNC)).expect("an ASYNC open returns at once");
        let _c = Closer(cam);
        assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "{k}: state {}", stats(cam).state);
        std::thread::sleep(Duration::from_millis(500));
        let st = stats(cam);
        assert_eq!((st.state, st.reconnects, st.last_error_code), (NVCAM_STATE_FAILED, 0, NVCAM_E_TLS_VERIFY), "{k}");
    }
}

/// An https camera that redirects to http://, and an rtsps one that redirects to rtsp://, are
/// refused, named, before the plaintext server gets a request (the http server logs each request,
/// the rtsp listener each connection), and for good. Prevents: a request, with its credentials,
/// sent in the clear after a verified TLS connection; a refusal misreported as misspelled options.
#[test]
fn a_redirect_from_tls_to_plaintext_is_refused_before_any_request() {
    let _g = serial();
    let f = fixture();
    let ca = format!("ca_file={}", f.path("ca_file"));
    for (k, log) in [("https_redirect_plain", "http_plain_log"), ("rtsps_redirect_plain", "rtsp_plain_log")] {
        let requests = || std::fs::read_to_string(f.path(log)).expect("the plaintext server's log").lines().count();
        let t0 = Instant::now();
        let e = open(&f.url(k), &cam_options(&ca, 0)).expect_err(k);
        assert_eq!(e.0, NVCAM_E_TLS_VERIFY, "{k}: {e:?}");
        assert!(e.1.contains("redirected to a plaintext URL"), "{k}: {}", e.1);
        assert!(!e.1.contains(PASSWORD), "password in the error: {}", e.1);
        assert!(t0.elapsed() < Duration::from_secs(3), "{k}: took {:?}", t0.elapsed());
        let cam = open(&f.url(k), &cam_options(&ca, NVCAM_OPEN_ASYNC)).expect("an ASYNC open returns at once");
        let _c = Closer(cam);
        assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "{k}: state {}", stats(cam).state);
        std::thread::sleep(Duration::from_millis(300));
        let st = stats(cam);
        assert_eq!((st.state, st.reconnects, st.last_error_code), (NVCAM_STATE_FAILED, 0, NVCAM_E_TLS_VERIFY), "{k}");
        assert_eq!(requests(), 0, "{k}: a plaintext request was made");
    }
}

/// A ca_file that is a folder, or a file without a certificate, is NVCAM_E_BAD_OPTION at the
/// open, for a synchronous and an ASYNC camera alike. Prevents: an I/O error at every connection
/// attempt, for ever, for a mistake in the configuration.
#[test]
fn an_unusable_ca_file_fails_at_the_call() {
    let _g = serial();
    let f = fixture();
    let folder = std::path::Path::new(&f.path("ca_file")).parent().unwrap().display().to_string();
    let key = f.path("key_own");
    for (ca, why) in [(folder.as_str(), "folder"), (key.as_str(), "no certificate")] {
        for flags in [0, NVCAM_OPEN_ASYNC] {
            let e = open(&f.url("rtsps_good"), &cam_options(&format!("ca_file={ca}"), flags)).expect_err(why);
            assert_eq!(e.0, NVCAM_E_BAD_OPTION, "{why}: {e:?}");
            assert!(e.1.contains(why), "{}", e.1);
        }
    }
}
