//! Hostile cameras at the protocol level: a scripted server (tests/support/hostile_server.py)
//! answers one camera with a single attack (huge or malformed RTSP answers, endless 401s and
//! redirects, silence, one byte a second; broken HTTP MJPEG), while 3 healthy cameras stream
//! beside it. Each case checks that the host survives it: no call blocked past its deadline,
//! memory bounded, no busy loop in the hostile camera's thread, the healthy cameras at their
//! rate, and the hostile camera either FAILED with a reason or reconnecting no faster than its
//! back-off. CPU path.
//!
//! The healthy cameras are `testsrc://` (nvcam's own paced source, 320x240 at 30 fps): three
//! GStreamer RTSP servers encoding beside the decoders do not fit a busy 2-core machine.
//!
//! Bounds (stated once, for every case):
//! - calls: `get_frame(500 ms)` returns within 1.5 s, `stats` within 0.5 s, the ASYNC `open`
//!   within 0.5 s, `close(5000)` within 5.5 s and OK;
//! - memory: the process's RSS grows by less than [`RSS_GROWTH`] during the case;
//! - CPU: the hostile camera's worker thread uses under [`CPU_SHARE`] of one core;
//! - healthy cameras: each at least [`MIN_FPS`] over the window (paced at 30 fps), and the p99 of
//!   the gaps between their frames at most [`GAP_P99_SLACK`] over what it was in the
//!   [`BASELINE`] before the hostile camera opened;
//! - back-off: at most one attempt per `reconnect_min_ms` (500 ms), and [`CONNS_PER_ATTEMPT`]
//!   connections per attempt (an RTSP open may try a second transport; a redirect loop gets
//!   8 redirects at one open, each a connection).

mod common;
use common::*;
use nvcam::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/hostile_server.py");
/// How long each case watches the hostile camera.
const WINDOW: Duration = Duration::from_secs(4);
const RSS_GROWTH: u64 = 96 << 20;
const CPU_SHARE: f64 = 0.25;
const MIN_FPS: f64 = 27.0;
/// How long the healthy cameras stream alone first, for their frame gaps' baseline.
const BASELINE: Duration = Duration::from_millis(1500);
/// How much worse the healthy cameras' p99 frame gap may get beside the hostile camera, ms.
const GAP_P99_SLACK: f64 = 10.0;
const BACKOFF_MS: u32 = 500;
const CONNS_PER_ATTEMPT: usize = 2;

/// The scripted hostile server: a child process that dies with this test.
struct Hostile {
    child: Child,
    port: u16,
    conns: Arc<AtomicUsize>,
}

impl Hostile {
    fn start(mode: &str, jpeg: Option<&Path>) -> Hostile {
        let python = std::env::var("NVCAM_TEST_PYTHON").unwrap_or_else(|_| "/usr/bin/python3".into());
        let mut cmd = Command::new(&python);
        cmd.arg(SCRIPT).args(["--mode", mode]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(j) = jpeg {
            cmd.arg("--jpeg").arg(j);
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {python} {SCRIPT}: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().strip_prefix("READY ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("hostile_server.py {mode}: no READY line: {line:?}"));
        // One stderr line per connection the server accepted.
        let conns = Arc::new(AtomicUsize::new(0));
        let (c, err) = (conns.clone(), child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                if l == "CONN" {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Hostile { child, port, conns }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU seconds (user + system) of this process's threads named `comm` (a thread's name as
/// /proc shows it: its first 15 bytes), summed; None while no thread has that name.
fn thread_cpu_seconds(comm: &str) -> Option<f64> {
    extern "C" {
        fn sysconf(name: i32) -> i64;
    }
    // SAFETY: sysconf(_SC_CLK_TCK = 2) reads a constant of the C library.
    let tck = unsafe { sysconf(2) }.max(1) as f64;
    let (mut ticks, mut found) = (0u64, false);
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else { continue };
        let (Some(a), Some(b)) = (stat.find('('), stat.rfind(')')) else { continue };
        if &stat[a + 1..b] != comm {
            continue;
        }
        found = true;
        let f: Vec<&str> = stat[b + 2..].split(' ').collect();
        // After "(comm) ": state is field 0, utime 11, stime 12.
        ticks += f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    }
    found.then_some(ticks as f64 / tck)
}

/// The worker thread's name of camera `cam` as /proc shows it.
fn worker_comm(cam: u64) -> String {
    let mut n = format!("nvcam-cam-{:x}", cam & 0xff_ffff);
    n.truncate(15);
    n
}

/// What a case saw of the hostile camera.
struct Seen {
    stats: nvcam_camera_stats,
    state: u32,
    error: String,
    frames: Vec<u32>,
}

/// Runs `url` (served by `server`) as the hostile camera for [`WINDOW`] beside 3 healthy cameras
/// and checks every bound of the module's list; returns what the hostile camera did.
fn beside_three_healthy(case: &str, url: &str, server: &Hostile, conns_per_attempt: usize) -> Seen {
    let healthy_opts = Opts::new();
    let healthy: Vec<u64> = (0..3).map(|_| open("testsrc://320x240@30", &healthy_opts.o).expect("a healthy camera opens")).collect();
    for &h in &healthy {
        release(get_frame(h, 5000).expect("a healthy camera streams")).unwrap();
    }
    let rss_before = rss_bytes();
    let rss_max = Arc::new(AtomicU64::new(rss_before));
    let stop = Arc::new(AtomicBool::new(false));
    let counters: Vec<Arc<AtomicU64>> = (0..3).map(|_| Arc::new(AtomicU64::new(0))).collect();
    // Every healthy frame's gap to the one before it (ms), with when it came.
    let gaps: Arc<std::sync::Mutex<Vec<(Instant, f64)>>> = Default::default();
    let mut threads = Vec::new();
    for (&h, n) in healthy.iter().zip(&counters) {
        let (stop, n, gaps) = (stop.clone(), n.clone(), gaps.clone());
        threads.push(std::thread::spawn(move || {
            let mut last = None::<Instant>;
            while !stop.load(Ordering::Acquire) {
                if let Ok(f) = get_frame(h, 1000) {
                    let now = Instant::now();
                    if let Some(l) = last {
                        gaps.lock().unwrap().push((now, now.duration_since(l).as_secs_f64() * 1e3));
                    }
                    last = Some(now);
                    n.fetch_add(1, Ordering::Relaxed);
                    release(f).unwrap();
                }
            }
        }));
    }
    std::thread::sleep(BASELINE);
    let hostile_from = Instant::now();
    {
        let (stop, m) = (stop.clone(), rss_max.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                m.fetch_max(rss_bytes(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
    }

    let o = Opts::new().with(|o| {
        o.flags = NVCAM_OPEN_ASYNC;
        o.open_timeout_ms = 2000;
        o.stall_timeout_ms = 2000;
        (o.reconnect_min_ms, o.reconnect_max_ms) = (BACKOFF_MS, 2000);
        o.integrity = NVCAM_INTEGRITY_MARK;
    });
    let conns_before = server.conns.load(Ordering::Relaxed);
    let t = Instant::now();
    let cam = open(url, &o.o).unwrap_or_else(|e| panic!("{case}: an ASYNC open returns OK at once: {e:?}"));
    assert!(t.elapsed() < Duration::from_millis(500), "{case}: the ASYNC open took {:?}", t.elapsed());
    let comm = worker_comm(cam);
    // The worker names itself once it runs; one that already ended took its CPU time with it
    // (then it must have ended the camera).
    let start = Instant::now();
    let mut cpu_start = None;
    wait_until(Duration::from_secs(1), || {
        cpu_start = thread_cpu_seconds(&comm);
        cpu_start.is_some() || stats(cam).state == NVCAM_STATE_FAILED
    });
    let cpu_start = cpu_start.unwrap_or_else(|| {
        assert_eq!(stats(cam).state, NVCAM_STATE_FAILED, "{case}: no thread named {comm}: the CPU bound cannot be checked");
        0.0
    });
    let mut cpu_last = cpu_start;
    let (mut frames, mut slowest_get, mut slowest_stats) = (Vec::new(), Duration::ZERO, Duration::ZERO);
    let counts_start: Vec<u64> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    while start.elapsed() < WINDOW {
        let t = Instant::now();
        if let Ok(f) = get_frame(cam, 500) {
            frames.push(info(f).unwrap().flags);
            release(f).unwrap();
        }
        slowest_get = slowest_get.max(t.elapsed());
        let t = Instant::now();
        let _ = stats(cam);
        slowest_stats = slowest_stats.max(t.elapsed());
        // The thread may end (a FAILED camera): its last reading counts.
        cpu_last = cpu_last.max(thread_cpu_seconds(&comm).unwrap_or(0.0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let window = start.elapsed().as_secs_f64();
    let counts_end: Vec<u64> = counters.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let s = stats(cam);
    let error = cam_error(cam);
    let conns = server.conns.load(Ordering::Relaxed) - conns_before;
    let t = Instant::now();
    let closed = close(cam, 5000);
    let close_took = t.elapsed();
    stop.store(true, Ordering::Release);
    for t in threads {
        t.join().unwrap();
    }
    for h in healthy {
        close(h, 5000).unwrap();
    }
    let fps: Vec<f64> = counts_start.iter().zip(&counts_end).map(|(a, b)| (b - a) as f64 / window).collect();
    let (mut before, mut beside): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    for &(t, g) in gaps.lock().unwrap().iter() {
        if t < hostile_from { before.push(g) } else { beside.push(g) }
    }
    let (p99_before, p99_beside) = (percentile(&mut before, 0.99), percentile(&mut beside, 0.99));
    let cpu = (cpu_last - cpu_start) / window;
    let grew = rss_max.load(Ordering::Relaxed).saturating_sub(rss_before);
    let attempts_allowed = (window * 1000.0 / BACKOFF_MS as f64) as usize + 2;
    // Failed attempts since the last frame, and the sessions before them.
    let attempts = (s.reconnect_attempt as u64 + s.reconnects) as usize;
    eprintln!(
        "{case}: state {} ({error}), attempts {attempts}, {conns} connections, {} frames ({} marked; decoded {}, refused {}, corrupt {}), cpu {:.1}%, rss +{} MiB, healthy fps {fps:.1?}, gap p99 {p99_before:.1} -> {p99_beside:.1} ms, get_frame max {slowest_get:?}, stats max {slowest_stats:?}, close {close_took:?}",
        s.state,
        frames.len(),
        frames.iter().filter(|&&f| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0).count(),
        s.frames_decoded,
        s.pictures_refused,
        s.frames_corrupt,
        cpu * 100.0,
        grew >> 20
    );
    assert_eq!(closed, Ok(()), "{case}: close");
    assert!(close_took < Duration::from_millis(5500), "{case}: close(5000) took {close_took:?}");
    assert!(slowest_get < Duration::from_millis(1500), "{case}: get_frame(500) took {slowest_get:?}");
    assert!(slowest_stats < Duration::from_millis(500), "{case}: stats took {slowest_stats:?}");
    assert!(grew < RSS_GROWTH, "{case}: RSS grew {} MiB (bound {} MiB)", grew >> 20, RSS_GROWTH >> 20);
    assert!(cpu < CPU_SHARE, "{case}: the hostile camera's thread used {:.0}% of a core (bound {:.0}%)", cpu * 100.0, CPU_SHARE * 100.0);
    assert!(fps.iter().all(|&f| f >= MIN_FPS), "{case}: healthy cameras at {fps:.1?} fps (bound {MIN_FPS})");
    assert!(
        p99_beside <= p99_before + GAP_P99_SLACK,
        "{case}: the healthy cameras' p99 frame gap went from {p99_before:.1} ms alone to {p99_beside:.1} ms beside the hostile camera (slack {GAP_P99_SLACK} ms)"
    );
    assert!(conns >= 1, "{case}: the camera never reached the hostile server");
    assert!(
        conns <= attempts_allowed * conns_per_attempt,
        "{case}: {conns} connections in {window:.1} s: faster than the back-off allows ({attempts_allowed} attempts)"
    );
    assert!(attempts <= attempts_allowed, "{case}: {attempts} attempts in {window:.1} s: faster than the back-off");
    let alive = [NVCAM_STATE_CONNECTING, NVCAM_STATE_RECONNECTING, NVCAM_STATE_STALLED, NVCAM_STATE_STREAMING];
    assert!(
        (s.state == NVCAM_STATE_FAILED && !error.is_empty()) || alive.contains(&s.state),
        "{case}: state {} ({error:?}): neither FAILED with a reason nor reconnecting",
        s.state
    );
    if ![NVCAM_STATE_STREAMING, NVCAM_STATE_FAILED].contains(&s.state) {
        assert!(attempts >= 1, "{case}: no attempt ended in {window:.1} s (open_timeout 2 s)");
    }
    Seen { stats: s, state: s.state, error, frames }
}

fn rtsp_case(mode: &str) -> Seen {
    let _g = serial();
    let server = Hostile::start(mode, None);
    let url = format!("rtsp://127.0.0.1:{}/cam", server.port);
    beside_three_healthy(mode, &url, &server, CONNS_PER_ATTEMPT)
}

fn mjpeg_case(mode: &str) -> Seen {
    let _g = serial();
    let jpg = jpeg_image();
    let server = Hostile::start(mode, Some(&jpg));
    let url = format!("http://127.0.0.1:{}/video.mjpg", server.port);
    beside_three_healthy(mode, &url, &server, CONNS_PER_ATTEMPT)
}

/// One real JPEG image (320x240, from FFmpeg's encoder).
fn jpeg_image() -> std::path::PathBuf {
    clip("hostile-320x240.jpg", "320x240", 1, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "5", "-f", "image2"])
}

/// A 1 MiB header line in an RTSP answer could be buffered whole (or grow a buffer per line).
#[test]
fn rtsp_a_one_megabyte_answer_header_is_refused_without_harm() {
    let seen = rtsp_case("big-header");
    assert!(seen.error.contains("over nvcam's limits"), "the reason names the limit: {}", seen.error);
}

/// A 10 MiB SDP could be kept whole, or parsed slowly enough to hold up the host.
#[test]
fn rtsp_a_ten_megabyte_sdp_is_refused_without_harm() {
    let seen = rtsp_case("big-sdp");
    assert!(seen.error.contains("over nvcam's limits"), "the reason names the limit: {}", seen.error);
}

/// A malformed SDP (broken m=, rtpmap and fmtp lines) could crash a parser or leave a stream
/// half set up.
#[test]
fn rtsp_a_malformed_sdp_fails_the_camera_or_retries_at_its_backoff() {
    rtsp_case("bad-sdp");
}

/// A camera that answers every request 401 with a new nonce could be asked again and again
/// at the speed of loopback; the password must not reach the camera's error either.
#[test]
fn rtsp_endless_401s_with_new_nonces_are_not_a_loop() {
    let _g = serial();
    let server = Hostile::start("auth-loop", None);
    let url = format!("rtsp://admin:hunter2secret@127.0.0.1:{}/cam", server.port);
    let seen = beside_three_healthy("auth-loop", &url, &server, CONNS_PER_ATTEMPT);
    assert!(!seen.error.contains("hunter2secret"), "the password reached the error text: {}", seen.error);
}

/// A redirect to the next path, for ever, could be followed for ever.
#[test]
fn rtsp_an_endless_redirect_loop_is_not_followed_for_ever() {
    let _g = serial();
    let server = Hostile::start("redirect-loop", None);
    let url = format!("rtsp://127.0.0.1:{}/cam", server.port);
    let seen = beside_three_healthy("redirect-loop", &url, &server, CONNS_PER_ATTEMPT * 9);
    assert!(seen.error.contains("redirected more than 8 times"), "the reason names the loop: {}", seen.error);
}

/// A camera that accepts the connection and never answers must cost only the open's deadline.
#[test]
fn rtsp_a_server_that_never_answers_costs_only_the_open_deadline() {
    rtsp_case("silent");
}

/// A camera that answers one byte a second keeps every read alive: only the open's deadline
/// ends it.
#[test]
fn rtsp_an_answer_at_one_byte_a_second_is_cut_at_the_open_deadline() {
    rtsp_case("slow");
}

/// A multipart stream without a boundary must not be read as one endless part.
#[test]
fn mjpeg_a_stream_without_a_boundary_is_refused_without_harm() {
    mjpeg_case("mjpeg-no-boundary");
}

/// A part that claims Content-Length 2^62 must not be allocated.
#[test]
fn mjpeg_a_content_length_of_two_to_the_62_is_not_allocated() {
    mjpeg_case("mjpeg-huge-length");
}

/// A JPEG whose header claims 65535x65535 must get no decoder or pool for that size (over the
/// default picture limit, 8192 each way).
#[test]
fn mjpeg_a_jpeg_claiming_65535x65535_gets_no_pool() {
    let seen = mjpeg_case("mjpeg-65535");
    assert!(seen.frames.is_empty(), "a picture of the claimed size was delivered");
    let s = seen.stats;
    assert_eq!((s.pool_slots_total, s.bytes_held, s.frames_decoded), (0, 0, 0), "no pool, nothing decoded: {s:?}");
}

/// Truncated JPEGs could be delivered as if whole: every picture that comes is marked.
#[test]
fn mjpeg_truncated_jpegs_are_delivered_marked_or_not_at_all() {
    let seen = mjpeg_case("mjpeg-truncated");
    let unmarked = seen.frames.iter().filter(|&&f| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) == 0).count();
    assert_eq!(unmarked, 0, "{unmarked} of {} truncated pictures came unmarked (state {})", seen.frames.len(), seen.state);
}
