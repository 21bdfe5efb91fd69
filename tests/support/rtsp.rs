//! Test servers on loopback: a real RTSP server (GStreamer's gst-rtsp-server, driven by
//! `rtsp_server.py` next to this file) that tests start, kill, pause and restart on the same port,
//! and a silent TCP listener that accepts connections and never answers.
//!
//! Only 127.0.0.1 is ever used. The server dies with the thread that started it (PR_SET_PDEATHSIG)
//! and with its `RtspServer` value, so a failing test leaves no process behind.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/rtsp_server.py");

/// What the server streams.
#[derive(Clone, Debug)]
pub struct Stream {
    /// "h264" or "h265".
    pub codec: &'static str,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// A videotestsrc pattern ("ball" moves, so every frame differs).
    pub pattern: &'static str,
    /// "USER:PASS" to require basic authentication.
    pub auth: Option<&'static str>,
    /// Encoder bit rate, kbit/s.
    pub bitrate: u32,
    /// Encoder speed preset: "ultrafast" (cheap for the server; no CABAC, no deblocking, so also
    /// cheap to decode) or a slower one whose streams decode like a real camera's.
    pub preset: &'static str,
    /// Frames between keyframes.
    pub keyint: u32,
    /// Milliseconds every encoded frame is held before it is sent (capture-to-send latency).
    pub delay_ms: u32,
    /// RTCP sender reports on the capture clock (as cameras send them).
    pub sr_capture_time: bool,
    // a lossy network (GStreamer's netsim after the payloader) and a known clip
    /// Stream this H.264/H.265 file at its own rate instead of an encoded test source.
    pub clip: Option<String>,
    /// Probability that an RTP packet is dropped.
    pub loss: f64,
    /// Extra delay per RTP packet, uniform 0..N ms, reordering allowed.
    pub jitter_ms: u32,
    /// Probability that an RTP packet is sent twice.
    pub duplicate: f64,
    /// A file the server writes a line to for every RTP packet `loss` drops (see rtsp_server.py).
    pub drop_log: Option<String>,
    // transports and auth
    /// "USER:PASS" to require digest authentication.
    pub auth_digest: Option<&'static str>,
    /// Offer UDP multicast too (a 239.255.42.x group, TTL 1).
    pub multicast: bool,
    /// A firewall that drops everything the server sends over UDP (RTP and RTCP).
    pub no_udp_send: bool,
    /// A PEM file with certificate and key: serve rtsps:// (TLS).
    pub tls: Option<String>,
    /// Each session gets its own pipeline (a clip from its start, with its first key frame at
    /// once), as cameras that start every new session with a key frame.
    pub not_shared: bool,
    /// Offer only this lower transport ("tcp" or "udp"): a SETUP asking for the other is answered
    /// 461 Unsupported Transport.
    pub protocols: Option<&'static str>,
    /// Log how many packets the server sent over UDP (see [`RtspServer::udp_sent`]).
    pub count_udp: bool,
}

impl Default for Stream {
    fn default() -> Self {
        Stream {
            codec: "h264",
            width: 320,
            height: 240,
            fps: 30,
            pattern: "ball",
            auth: None,
            bitrate: 2048,
            preset: "ultrafast",
            keyint: 30,
            delay_ms: 0,
            sr_capture_time: false,
            clip: None,
            loss: 0.0,
            jitter_ms: 0,
            duplicate: 0.0,
            drop_log: None,
            auth_digest: None,
            multicast: false,
            no_udp_send: false,
            tls: None,
            not_shared: false,
            protocols: None,
            count_udp: false,
        }
    }
}

impl Stream {
    pub fn size(mut self, w: u32, h: u32) -> Self {
        self.width = w;
        self.height = h;
        self
    }
    pub fn codec(mut self, c: &'static str) -> Self {
        self.codec = c;
        self
    }
    pub fn pattern(mut self, p: &'static str) -> Self {
        self.pattern = p;
        self
    }
    pub fn bitrate(mut self, kbps: u32) -> Self {
        self.bitrate = kbps;
        self
    }
    pub fn preset(mut self, p: &'static str) -> Self {
        self.preset = p;
        self
    }
    pub fn not_shared(mut self) -> Self {
        self.not_shared = true;
        self
    }
    pub fn keyint(mut self, n: u32) -> Self {
        self.keyint = n;
        self
    }
    pub fn auth(mut self, a: &'static str) -> Self {
        self.auth = Some(a);
        self
    }
    /// Streams `path` (its codec is `codec`'s) at its own rate.
    pub fn clip(mut self, path: &std::path::Path) -> Self {
        self.clip = Some(path.display().to_string());
        self
    }
    /// RTP packets dropped with probability `loss`, delayed 0..`jitter_ms` (reordered) and
    /// duplicated with probability `duplicate`, between the payloader and the network.
    pub fn network(mut self, loss: f64, jitter_ms: u32, duplicate: f64) -> Self {
        (self.loss, self.jitter_ms, self.duplicate) = (loss, jitter_ms, duplicate);
        self
    }
    /// Every RTP packet the lossy network drops is logged to `path`.
    pub fn drop_log(mut self, path: &std::path::Path) -> Self {
        self.drop_log = Some(path.to_string_lossy().into_owned());
        self
    }
    pub fn auth_digest(mut self, a: &'static str) -> Self {
        self.auth_digest = Some(a);
        self
    }
    pub fn multicast(mut self) -> Self {
        self.multicast = true;
        self
    }
    /// The server's UDP is dropped on its way out (a firewall); RTSP itself works.
    pub fn no_udp_send(mut self) -> Self {
        self.no_udp_send = true;
        self
    }
    /// Serve rtsps:// with the certificate and key in this PEM file.
    pub fn tls(mut self, pem: &str) -> Self {
        self.tls = Some(pem.to_string());
        self
    }
    /// Only this lower transport ("tcp" or "udp") is offered; the other's SETUP gets 461.
    pub fn only(mut self, protocol: &'static str) -> Self {
        self.protocols = Some(protocol);
        self
    }
    /// The server logs the packets it sends over UDP ([`RtspServer::udp_sent`]).
    pub fn count_udp(mut self) -> Self {
        self.count_udp = true;
        self
    }
    /// Frames held `ms` before sending, sender reports on the capture clock.
    pub fn capture_clock(mut self, delay_ms: u32) -> Self {
        self.delay_ms = delay_ms;
        self.sr_capture_time = true;
        self
    }
}

/// The Python that has python3-gi (Debian binds it to /usr/bin/python3, not to a pyenv shim).
fn python() -> String {
    std::env::var("NVCAM_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into())
}

/// A running (or stopped, between restarts) RTSP server.
pub struct RtspServer {
    child: Option<Child>,
    pub port: u16,
    pub stream: Stream,
    /// When the last (re)start printed READY.
    pub ready_at: Instant,
    stderr: Arc<Mutex<String>>,
}

impl RtspServer {
    /// Starts a server on a free port and waits until it listens.
    pub fn start(stream: Stream) -> RtspServer {
        let mut s = RtspServer { child: None, port: 0, stream, ready_at: Instant::now(), stderr: Default::default() };
        s.spawn();
        s
    }

    /// What the server printed to stderr lately (the last 8 to 16 KiB).
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// `rtsp://127.0.0.1:PORT/cam`, with credentials if given.
    pub fn url(&self) -> String {
        format!("rtsp://127.0.0.1:{}/cam", self.port)
    }
    pub fn url_with_auth(&self, user_pass: &str) -> String {
        format!("rtsp://{user_pass}@127.0.0.1:{}/cam", self.port)
    }

    /// The transports clients asked for in their SETUPs so far, in order, as the server logged
    /// them: "udp", "udp-mcast", "tcp", or "http" for TCP inside the HTTP tunnel.
    pub fn setups(&self) -> Vec<String> {
        self.stderr_text()
            .lines()
            .filter_map(|l| l.strip_prefix("SETUP "))
            .map(|l| match l.split_once(' ') {
                Some(("tcp", "tunneled=True")) => "http".to_string(),
                Some((t, _)) => t.to_string(),
                None => l.to_string(),
            })
            .collect()
    }

    /// How many TEARDOWNs the server has received since it (re)started.
    pub fn teardowns(&self) -> usize {
        self.stderr_text().lines().filter(|l| *l == "TEARDOWN").count()
    }

    /// Packets (RTP and RTCP) the server has sent over UDP since it (re)started, as it last
    /// reported them (every 50 ms while the count grows); needs [`Stream::count_udp`].
    pub fn udp_sent(&self) -> u64 {
        assert!(self.stream.count_udp, "udp_sent needs Stream::count_udp");
        self.stderr_text().lines().rev().find_map(|l| l.strip_prefix("UDP_SENT ")).map_or(0, |n| n.trim().parse().expect("UDP_SENT <n>"))
    }

    fn spawn(&mut self) {
        let s = &self.stream;
        let mut cmd = Command::new(python());
        cmd.arg(SCRIPT)
            .args(["--port", &self.port.to_string()])
            .args(["--codec", s.codec])
            .args(["--size", &format!("{}x{}", s.width, s.height)])
            .args(["--fps", &s.fps.to_string()])
            .args(["--pattern", s.pattern])
            .args(["--bitrate", &s.bitrate.to_string()])
            .args(["--preset", s.preset])
            .args(["--keyint", &s.keyint.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(a) = s.auth {
            cmd.args(["--auth", a]);
        }
        if s.delay_ms > 0 {
            cmd.args(["--delay-ms", &s.delay_ms.to_string()]);
        }
        if s.sr_capture_time {
            cmd.arg("--sr-capture-time");
        }
        if s.not_shared {
            cmd.arg("--not-shared");
        }
        if let Some(c) = &s.clip {
            cmd.args(["--clip", c]);
        }
        if s.loss > 0.0 || s.jitter_ms > 0 || s.duplicate > 0.0 {
            cmd.args(["--loss", &s.loss.to_string(), "--jitter-ms", &s.jitter_ms.to_string(), "--duplicate", &s.duplicate.to_string()]);
        }
        if let Some(p) = &s.drop_log {
            cmd.args(["--drop-log", p]);
        }
        if let Some(a) = s.auth_digest {
            cmd.args(["--auth-digest", a]);
        }
        if s.multicast {
            cmd.arg("--multicast");
        }
        if s.no_udp_send {
            cmd.arg("--no-udp-send");
        }
        if let Some(pem) = &s.tls {
            cmd.args(["--tls", pem]);
        }
        if let Some(p) = s.protocols {
            cmd.args(["--protocols", p]);
        }
        if s.count_udp {
            cmd.arg("--count-udp");
        }
        // Retries cover a port still held by the previous instance (it is released on exit, but
        // a SIGKILLed process may take a moment to be reaped).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut child = cmd.spawn().unwrap_or_else(|e| {
                panic!("cannot start {} {SCRIPT}: {e} (install the packages in .ci/packages.txt)", python())
            });
            let stdout = child.stdout.take().unwrap();
            let stderr = child.stderr.take().unwrap();
            let err_buf = self.stderr.clone();
            err_buf.lock().unwrap().clear();
            std::thread::spawn(move || {
                let mut r = BufReader::new(stderr);
                let mut chunk = [0u8; 4096];
                while let Ok(n) = r.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let mut b = err_buf.lock().unwrap();
                    b.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    let len = b.len();
                    if len > 16_384 {
                        let mut cut = len - 8192;
                        while !b.is_char_boundary(cut) {
                            cut += 1;
                        }
                        b.drain(..cut);
                    }
                }
            });
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
            let ready = loop {
                match rx.recv_timeout(Duration::from_secs(10)) {
                    Ok(l) if l.starts_with("READY ") => break Some(l[6..].trim().parse::<u16>().expect("READY <port>")),
                    Ok(_) => continue,
                    Err(_) => break None,
                }
            };
            match ready {
                Some(port) => {
                    self.ready_at = Instant::now();
                    self.port = port;
                    self.child = Some(child);
                    return;
                }
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    if Instant::now() > deadline {
                        panic!(
                            "RTSP server did not start on port {}: {}",
                            self.port,
                            self.stderr.lock().unwrap()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let st = Command::new("kill").args([sig, &c.id().to_string()]).status().expect("kill");
            assert!(st.success(), "kill {sig} failed");
        }
    }

    /// SIGKILL: connections drop at once, as when a camera loses power or the network.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM and wait (SIGKILL after 3 s).
    pub fn stop(&mut self) {
        if self.child.is_none() {
            return;
        }
        self.signal("-CONT");
        self.signal("-TERM");
        let mut c = self.child.take().unwrap();
        let end = Instant::now() + Duration::from_secs(3);
        loop {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            if Instant::now() > end {
                let _ = c.kill();
                let _ = c.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGSTOP: connections stay open but nothing more arrives (a hung network or server).
    pub fn pause(&self) {
        self.signal("-STOP");
    }
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// Starts again on the same port, with `stream` (or the same stream as before); returns when
    /// the server listens (also stored in `ready_at`).
    pub fn restart(&mut self, stream: Option<Stream>) -> Instant {
        self.kill();
        if let Some(s) = stream {
            self.stream = s;
        }
        self.spawn();
        self.ready_at
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Whether the server process is still alive, and if not how it ended and what it printed.
    pub fn health(&mut self) -> Result<(), String> {
        match self.child.as_mut().map(|c| c.try_wait()) {
            None => Err("not started".into()),
            Some(Ok(None)) => Ok(()),
            Some(Ok(Some(st))) => Err(format!("server exited ({st}); stderr: {}", self.stderr.lock().unwrap())),
            Some(Err(e)) => Err(format!("cannot wait for the server: {e}")),
        }
    }
}

impl Drop for RtspServer {
    fn drop(&mut self) {
        self.resume();
        self.kill();
    }
}

/// A TCP listener on 127.0.0.1 that accepts every connection and never sends a byte.
pub struct SilentServer {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SilentServer {
    pub fn start() -> SilentServer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (s2, a2) = (stop.clone(), accepted.clone());
        let thread = std::thread::spawn(move || {
            let mut held: Vec<TcpStream> = Vec::new();
            while !s2.load(Ordering::Acquire) {
                match l.accept() {
                    Ok((c, _)) => {
                        a2.fetch_add(1, Ordering::Relaxed);
                        held.push(c);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        SilentServer { port, accepted, stop, thread: Some(thread) }
    }
    pub fn url(&self) -> String {
        format!("rtsp://127.0.0.1:{}/cam", self.port)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
