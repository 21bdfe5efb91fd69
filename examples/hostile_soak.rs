//! The hostile soak: 8 cameras for 30 minutes, 3 healthy and 5 hostile, every hostile case in
//! rotation: the scripted server's protocol attacks (`tests/support/hostile_server.py`: 1 MiB
//! headers, a 10 MiB or malformed SDP, endless 401s and redirects, silence, one byte a second;
//! MJPEG without a boundary, with a 2^62 Content-Length, 65535x65535 or truncated JPEGs) and the
//! mutating relay's RTP attacks (`tests/support/mutating_relay.rs`, in front of a real GStreamer
//! RTSP server streaming a clip: bit flips, truncation, duplication, oversized NAL lengths, SPS
//! claiming 16384x16384, 2x2 or a new size every picture, timestamps 3 hours either way, a
//! sequence wrap, SSRC changes, absurd RTCP NTP times), over TCP and UDP in turn. Each hostile
//! slot runs one case for `--case-seconds`, closes it and opens the next.
//!
//!   hostile_soak [--minutes 30] [--case-seconds 20] [--healthy 3] [--hostile 5] [--device cpu|N]
//!
//! It prints, at the start and the end: crashes (the process got to its end: 0; a session panic
//! the library caught is counted apart), hangs (calls past their deadline: `get_frame(500)` over
//! 1.5 s, `stats` over 0.5 s, an ASYNC `open` over 0.5 s, `close(5000)` over 5.5 s or not OK),
//! RSS, and on a GPU (`--device N`) this process's GPU memory as `nvidia-smi` reports it; a line
//! a minute meanwhile. Linux (it starts Python servers and reads /proc). Needs python3 with
//! GStreamer's RTSP server (as the tests) and the ffmpeg CLI (for its clip and JPEG).

#[path = "../tests/support/lossy_udp.rs"]
mod lossy_udp;
#[path = "../tests/support/mutating_relay.rs"]
mod mutating_relay;
#[path = "../tests/support/rtsp.rs"]
mod rtsp;
#[path = "../tests/support/hostile_server.rs"]
mod hostile_server;

use hostile_server::{Hostile, HOSTILE_HTTP_MODES, HOSTILE_RTSP_MODES};
use mutating_relay::{Mutation, Relay, ATTACKS};
use nvcam::*;
use rtsp::{RtspServer, Stream};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    s.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) as f64 * 4096.0 / (1 << 20) as f64
}

/// This process's GPU memory (MiB) as nvidia-smi reports it; None without a GPU.
fn vram_mib() -> Option<u64> {
    let out = Command::new("nvidia-smi").args(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"]).output().ok()?;
    let me = std::process::id().to_string();
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_once(',')).filter(|(p, _)| p.trim() == me).map(|(_, m)| m.trim().parse::<u64>().unwrap_or(0)).reduce(|a, b| a + b)
}

fn error_of(cam: u64) -> String {
    let mut buf = vec![0u8; 1024];
    unsafe { nvcam_camera_last_error(cam, buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

fn stats_of(cam: u64) -> nvcam_camera_stats {
    let mut s: nvcam_camera_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
    unsafe { nvcam_camera_stats(cam, &mut s) };
    s
}

/// Makes the soak's clip and JPEG with the ffmpeg CLI (once per folder).
fn fixtures(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let clip = dir.join("hostile-soak-320x240.mkv");
    let jpg = dir.join("hostile-soak-320x240.jpg");
    for (path, args) in [
        (&clip, vec!["-frames:v", "1800", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0", "-b:v", "1M"]),
        (&jpg, vec!["-frames:v", "1", "-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-q:v", "5", "-f", "image2"]),
    ] {
        if path.exists() {
            continue;
        }
        let tmp = path.with_extension(format!("part.{}", path.extension().unwrap().to_string_lossy()));
        let ok = Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30,format=rgb24", "-pix_fmt", "yuv420p"])
            .args(&args)
            .arg(&tmp)
            .status()
            .expect("ffmpeg CLI");
        assert!(ok.success(), "ffmpeg could not make {}", path.display());
        std::fs::rename(&tmp, path).unwrap();
    }
    (clip, jpg)
}

/// One hostile case of the rotation.
#[derive(Clone, Copy, Debug)]
enum Case {
    Server(&'static str),
    Relay(Mutation, &'static str),
}

impl Case {
    fn name(&self) -> String {
        match self {
            Case::Server(m) => m.to_string(),
            Case::Relay(m, t) => format!("{}/{t}", m.name()),
        }
    }
}

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = HOSTILE_RTSP_MODES.iter().chain(HOSTILE_HTTP_MODES.iter()).map(|&m| Case::Server(m)).collect();
    for (i, &m) in ATTACKS.iter().enumerate() {
        v.push(Case::Relay(m, if i % 2 == 0 { "tcp" } else { "udp" }));
    }
    for (i, &m) in ATTACKS.iter().enumerate() {
        v.push(Case::Relay(m, if i % 2 == 0 { "udp" } else { "tcp" }));
    }
    v
}

#[derive(Default)]
struct Totals {
    hangs: Vec<String>,
    cases: u64,
    failed_with_reason: u64,
    failed_without_reason: Vec<String>,
    frames: u64,
    marked: u64,
    panics: u64,
    refused: u64,
}

/// A call's time against its deadline: a hang is recorded.
fn timed<T>(totals: &Mutex<Totals>, what: &str, limit: Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    let took = t.elapsed();
    if took > limit {
        totals.lock().unwrap().hangs.push(format!("{what} took {took:?} (limit {limit:?})"));
    }
    r
}

fn options(device: i32, ffmpeg: Option<&CString>, flags: u32) -> nvcam_camera_options {
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    unsafe { nvcam_camera_options_init(&mut o) };
    o.device = device;
    o.flags = flags;
    o.open_timeout_ms = 2000;
    o.stall_timeout_ms = 2000;
    o.reconnect_min_ms = 500;
    o.reconnect_max_ms = 2000;
    o.integrity = NVCAM_INTEGRITY_MARK;
    if let Some(f) = ffmpeg {
        o.ffmpeg_options = f.as_ptr();
    }
    o
}

/// Runs one case on one camera for `d`.
fn run_case(case: Case, d: Duration, device: i32, server_port: u16, jpg: &Path, totals: &Mutex<Totals>, seed: u64) {
    let name = case.name();
    let (mut _hostile, mut relay) = (None, None);
    let (url, ffmpeg) = match case {
        Case::Server(mode) => {
            let http = HOSTILE_HTTP_MODES.contains(&mode);
            let h = Hostile::start(mode, http.then_some(jpg));
            let url = if http { format!("http://127.0.0.1:{}/video.mjpg", h.port) } else if mode == "auth-loop" { format!("rtsp://admin:soaksecret@127.0.0.1:{}/cam", h.port) } else { format!("rtsp://127.0.0.1:{}/cam", h.port) };
            _hostile = Some(h);
            (url, None)
        }
        Case::Relay(m, transport) => {
            let r = Relay::start(server_port, seed);
            r.set(m);
            let url = r.url();
            relay = Some(r);
            (url, Some(CString::new(format!("rtsp_transport={transport}")).unwrap()))
        }
    };
    let o = options(device, ffmpeg.as_ref(), NVCAM_OPEN_ASYNC);
    let u = CString::new(url).unwrap();
    let mut cam = 0u64;
    let rc = timed(totals, &format!("{name}: open"), Duration::from_millis(500), || unsafe { nvcam_camera_open(u.as_ptr(), &o, &mut cam) });
    if rc != NVCAM_OK {
        totals.lock().unwrap().hangs.push(format!("{name}: the ASYNC open returned {rc}"));
        return;
    }
    let t0 = Instant::now();
    let (mut frames, mut marked) = (0u64, 0u64);
    while t0.elapsed() < d {
        // The relay's attacks alternate with sane stretches, so recovery happens in every case.
        if let Some(r) = &relay {
            if let Case::Relay(m, _) = case {
                r.set(if (t0.elapsed().as_secs() / 4).is_multiple_of(2) { m } else { Mutation::Sane });
            }
        }
        let mut f = 0u64;
        let rc = timed(totals, &format!("{name}: get_frame(500)"), Duration::from_millis(1500), || unsafe { nvcam_camera_get_frame(cam, 500, &mut f) });
        if rc == NVCAM_OK {
            let mut i: nvcam_frame_info = unsafe { std::mem::zeroed() };
            i.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
            unsafe { nvcam_frame_info(f, &mut i) };
            frames += 1;
            if i.flags & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0 {
                marked += 1;
            }
            nvcam_frame_release(f);
        }
        timed(totals, &format!("{name}: stats"), Duration::from_millis(500), || stats_of(cam));
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = stats_of(cam);
    let err = error_of(cam);
    let rc = timed(totals, &format!("{name}: close(5000)"), Duration::from_millis(5500), || nvcam_camera_close(cam, 5000));
    let mut t = totals.lock().unwrap();
    if rc != NVCAM_OK {
        t.hangs.push(format!("{name}: close returned {rc}"));
    }
    t.cases += 1;
    t.frames += frames;
    t.marked += marked;
    t.panics += s.session_panics;
    t.refused += s.pictures_refused;
    if s.state == NVCAM_STATE_FAILED {
        if err.is_empty() {
            t.failed_without_reason.push(name);
        } else {
            t.failed_with_reason += 1;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let minutes: f64 = arg(&args, "--minutes", "30").parse().expect("--minutes");
    let case_s: u64 = arg(&args, "--case-seconds", "20").parse().expect("--case-seconds");
    let n_healthy: usize = arg(&args, "--healthy", "3").parse().expect("--healthy");
    let n_hostile: usize = arg(&args, "--hostile", "5").parse().expect("--hostile");
    let device = match arg(&args, "--device", "cpu").as_str() {
        "cpu" => NVCAM_DEVICE_CPU,
        n => n.parse().expect("--device cpu|N"),
    };
    assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/hostile-soak");
    let (clip, jpg) = fixtures(&dir);
    // Each session streams the 60 s clip from its start (a case, 20 s, never reaches its end).
    let server = RtspServer::start(Stream::default().clip(&clip).not_shared());
    let all = cases();
    let total = Duration::from_secs_f64(minutes * 60.0);
    let totals = Arc::new(Mutex::new(Totals::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (rss0, vram0) = (rss_mib(), vram_mib());
    println!(
        "hostile soak: {minutes} min, {n_healthy} healthy + {n_hostile} hostile cameras, {} cases in rotation ({case_s} s each), device {}",
        all.len(),
        if device == NVCAM_DEVICE_CPU { "cpu".to_string() } else { device.to_string() }
    );
    println!("start: RSS {rss0:.1} MiB{}", vram0.map_or(String::new(), |v| format!(", VRAM {v} MiB")));
    let healthy_frames: Vec<Arc<AtomicU64>> = (0..n_healthy).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut threads = Vec::new();
    for n in &healthy_frames {
        let (n, stop, totals) = (n.clone(), stop.clone(), totals.clone());
        threads.push(std::thread::spawn(move || {
            let o = options(device, None, 0);
            let u = CString::new("testsrc://320x240@30").unwrap();
            let mut cam = 0u64;
            assert_eq!(unsafe { nvcam_camera_open(u.as_ptr(), &o, &mut cam) }, NVCAM_OK, "a healthy camera opens");
            while !stop.load(Ordering::Relaxed) {
                let mut f = 0u64;
                if timed(&totals, "healthy: get_frame(1000)", Duration::from_millis(2000), || unsafe { nvcam_camera_get_frame(cam, 1000, &mut f) }) == NVCAM_OK {
                    n.fetch_add(1, Ordering::Relaxed);
                    nvcam_frame_release(f);
                }
            }
            nvcam_camera_close(cam, 5000);
        }));
    }
    let started = Instant::now();
    for slot in 0..n_hostile {
        let (stop, totals, all, jpg) = (stop.clone(), totals.clone(), all.clone(), jpg.clone());
        let port = server.port;
        threads.push(std::thread::spawn(move || {
            let mut k = slot;
            while !stop.load(Ordering::Relaxed) && started.elapsed() + Duration::from_secs(case_s) <= total {
                run_case(all[k % all.len()], Duration::from_secs(case_s), device, port, &jpg, &totals, 0x54 + k as u64);
                k += n_hostile;
            }
        }));
    }
    let mut rss_max = rss0;
    let mut last_print = Instant::now();
    let mut last_frames = 0u64;
    while started.elapsed() < total {
        std::thread::sleep(Duration::from_secs(1));
        rss_max = rss_max.max(rss_mib());
        if last_print.elapsed() >= Duration::from_secs(60) {
            let f: u64 = healthy_frames.iter().map(|n| n.load(Ordering::Relaxed)).sum();
            let fps = (f - last_frames) as f64 / last_print.elapsed().as_secs_f64() / n_healthy.max(1) as f64;
            let t = totals.lock().unwrap();
            println!(
                "{:5.1} min: cases {}, hangs {}, session panics {}, RSS {:.1} MiB, healthy {fps:.1} fps each{}",
                started.elapsed().as_secs_f64() / 60.0,
                t.cases,
                t.hangs.len(),
                t.panics,
                rss_mib(),
                vram_mib().map_or(String::new(), |v| format!(", VRAM {v} MiB"))
            );
            (last_frames, last_print) = (f, Instant::now());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    let t = totals.lock().unwrap();
    let healthy_fps: Vec<f64> = healthy_frames.iter().map(|n| n.load(Ordering::Relaxed) as f64 / secs).collect();
    println!("end after {:.1} min:", secs / 60.0);
    println!("  crashes 0 (the process ran to its end); session panics caught {}", t.panics);
    println!("  hangs {}{}", t.hangs.len(), if t.hangs.is_empty() { String::new() } else { format!(": {:?}", &t.hangs[..t.hangs.len().min(20)]) });
    println!(
        "  hostile cases run {}, ended FAILED with a reason {}, FAILED without one {:?}; hostile frames {} ({} marked), pictures refused {}",
        t.cases, t.failed_with_reason, t.failed_without_reason, t.frames, t.marked, t.refused
    );
    println!("  healthy fps (mean over the run) {healthy_fps:.1?}");
    println!("  RSS {rss0:.1} MiB at the start, {:.1} MiB at the end, {rss_max:.1} MiB at most", rss_mib());
    if let (Some(a), Some(b)) = (vram0, vram_mib()) {
        println!("  VRAM {a} MiB at the start, {b} MiB at the end");
    }
    drop(server);
    if !t.hangs.is_empty() || !t.failed_without_reason.is_empty() {
        std::process::exit(1);
    }
}
