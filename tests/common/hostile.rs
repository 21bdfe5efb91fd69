//! One hostile camera beside 3 healthy ones, and the checks that the host survives it (shared by
//! `hostile_servers.rs`, the scripted server's protocol attacks, and `hostile_relay.rs`, the
//! mutating relay's RTP attacks).
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
//! - back-off: at most one attempt per `reconnect_min_ms` ([`BACKOFF_MS`]), and a stated number
//!   of connections per attempt.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[path = "../support/hostile_server.rs"]
mod hostile_server;
#[allow(unused_imports)]
pub use hostile_server::*;

pub const RSS_GROWTH: u64 = 96 << 20;
pub const CPU_SHARE: f64 = 0.25;
pub const MIN_FPS: f64 = 27.0;
/// How long the healthy cameras stream alone first, for their frame gaps' baseline.
pub const BASELINE: Duration = Duration::from_millis(1500);
/// How much worse the healthy cameras' p99 frame gap may get beside the hostile camera, ms.
pub const GAP_P99_SLACK: f64 = 10.0;
pub const BACKOFF_MS: u32 = 500;

/// CPU seconds (user + system) of this process's threads named `comm` (a thread's name as
/// /proc shows it: its first 15 bytes), summed; None while no thread has that name.
pub fn thread_cpu_seconds(comm: &str) -> Option<f64> {
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
pub fn worker_comm(cam: u64) -> String {
    let mut n = format!("nvcam-cam-{:x}", cam & 0xff_ffff);
    n.truncate(15);
    n
}

/// A hostile case: the camera's URL and options, how long it is watched, how its connections
/// are counted, and what the case does meanwhile.
pub struct HostileCase<'a> {
    pub name: &'a str,
    pub url: &'a str,
    /// The hostile camera's FFmpeg options ("" for none).
    pub ffmpeg: &'a str,
    pub window: Duration,
    /// Connections the hostile server has accepted so far.
    pub conns: &'a dyn Fn() -> usize,
    /// Connections one attempt may make (an RTSP open may try a second transport).
    pub conns_per_attempt: usize,
    /// Called about every 20 ms with the time since the hostile camera opened (a case that
    /// changes the attack on a clock does it here).
    pub on_tick: &'a mut dyn FnMut(Duration),
    /// Called with every frame the hostile camera delivers, before it is released, and the time
    /// since it opened.
    pub on_frame: &'a mut dyn FnMut(u64, Duration),
}

/// What a case saw of the hostile camera.
pub struct Seen {
    pub stats: nvcam_camera_stats,
    pub state: u32,
    pub error: String,
    pub frames: Vec<u32>,
}

/// Runs the case's camera for its window beside 3 healthy cameras and checks every bound of the
/// module's list; returns what the hostile camera did.
pub fn beside_three_healthy(case: HostileCase) -> Seen {
    let HostileCase { name: case, url, ffmpeg, window: watch, conns: server_conns, conns_per_attempt, on_tick, on_frame } = case;
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
    let gaps: Arc<Mutex<Vec<(Instant, f64)>>> = Default::default();
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

    let o = if ffmpeg.is_empty() { Opts::new() } else { Opts::new().ffmpeg(ffmpeg) };
    let o = o.with(|o| {
        o.flags = NVCAM_OPEN_ASYNC;
        o.open_timeout_ms = 2000;
        o.stall_timeout_ms = 2000;
        (o.reconnect_min_ms, o.reconnect_max_ms) = (BACKOFF_MS, 2000);
        o.integrity = NVCAM_INTEGRITY_MARK;
    });
    let conns_before = server_conns();
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
    while start.elapsed() < watch {
        on_tick(start.elapsed());
        let t = Instant::now();
        if let Ok(f) = get_frame(cam, 500) {
            let got = t.elapsed();
            frames.push(info(f).unwrap().flags);
            on_frame(f, start.elapsed());
            release(f).unwrap();
            slowest_get = slowest_get.max(got);
        } else {
            slowest_get = slowest_get.max(t.elapsed());
        }
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
    let conns = server_conns() - conns_before;
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
        "{case}: state {} ({error}), attempts {attempts}, {conns} connections, {} frames ({} marked; decoded {}, refused {}, corrupt {}, panics {}), cpu {:.1}%, rss +{} MiB, healthy fps {fps:.1?}, gap p99 {p99_before:.1} -> {p99_beside:.1} ms, get_frame max {slowest_get:?}, stats max {slowest_stats:?}, close {close_took:?}",
        s.state,
        frames.len(),
        frames.iter().filter(|&&f| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0).count(),
        s.frames_decoded,
        s.pictures_refused,
        s.frames_corrupt,
        s.session_panics,
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
