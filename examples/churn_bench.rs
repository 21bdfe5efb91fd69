//! Isolation under churn, in one invocation: N steady paced cameras while M others reconnect in
//! a loop, reconnect in bursts, or are opened and closed in bursts; per backend. For each phase:
//! the steady cameras' fps (the slowest camera and the mean), their inter-frame gaps as their
//! consumers see them (p50 / p99 / max over all steady cameras), get_frame timeouts, the steady
//! cameras' decode latency (median of their p50s, worst p99), and for bursts the time until every
//! churned camera has a new frame again.
//!
//!   churn_bench CLIP [--steady 96] [--churn 32] [--backends nvdec,ffmpeg-hw,upload,nvjpeg,auto,any,cpu] [--seconds 5]
//!                    [--baseline-seconds S] [--rounds 3] [--phases baseline,loop,burst,openclose]
//!                    [--latency auto|low|throughput]
//!
//! Cameras decode CLIP looped and paced at its own frame rate on GPU 0 (`--backends cpu` decodes on
//! the CPU). The environment switches the library reads (NVCAM_NVDEC_CTXLOCK=context for the old
//! lock shared per context, NVCAM_NVDEC_REUSE=0 for a new NVDEC decoder at every reconnect) apply
//! to the whole run and are printed in the header (`NVCAM_HW_LOOP_FLUSH=1`: FFmpeg's hwaccel drains
//! and flushes at every loop of the file, as before, which re-creates its NVDEC session). After
//! each churn phase a line gives the NVDEC decoders created and adopted (kept from the camera's
//! last connection) during it. `CHURN_STAGES=1` adds, per phase, where the camera threads' time
//! went (`nvcam::diag::stage_times`: per stage calls, mean and, for the steady path's stages, the
//! thread's CPU time per call, p50/p99 as log2-bucket bounds, max, calls of 16 ms or more; the
//! `nv.*` stages are NVIDIA's calls, so their CPU is the driver's share), the hand-off from a frame's publication to its consumer, and when the
//! gaps of 50 ms or more came. The loop phase also reports its window in two parts: until every
//! churned camera has been back once (their first decoders are made then), and the loop alone.
//! `CHURN_POLL_MS` sets how often a reconnecting camera's thread polls its stats (default 1 ms).
//! `any` is AUTO on `NVCAM_DEVICE_ANY` (every GPU). After the baseline a `fleet:` line gives the
//! steady cameras per (GPU, decoder), how many FAILED, the lowest delivered fps and how many are
//! under 29.4, decode-to-return (a frame's publication to its consumer) p50 / p99 / p99.9 / max,
//! and the GPU counters (hardware sessions held, uploads, the session limit where the driver
//! refused one, sessions exhausted): `--steady` past the GPU's session limit shows where the extra
//! cameras went. `FLEET_TRACE=1` prints GPU 0's counters every 200 ms from before the first open
//! to the end of the baseline (`trace:` lines: ms, hardware sessions, uploads, NVML decoder busy %,
//! frames copied, demand share of the learned capacity, load refusals), to see a ramp's admissions
//! beside the load the engines showed then.

use nvcam::*;
#[path = "churn_bench/measure.rs"]
mod measure;
use measure::{cores_by_thread, cpu_by_thread, cpu_cores_between, cpu_seconds, pct, CPU_SAMPLES};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

struct Opts {
    clip: CString,
    device: i32,
    decoder: u32,
    latency: u32,
}

fn open(o: &Opts) -> Result<u64, String> {
    let mut co: nvcam_camera_options = unsafe { std::mem::zeroed() };
    unsafe { nvcam_camera_options_init(&mut co) };
    co.flags = NVCAM_OPEN_LOOP;
    co.device = o.device;
    co.decoder = o.decoder;
    co.latency = o.latency;
    let mut cam = 0;
    let r = unsafe { nvcam_camera_open(o.clip.as_ptr(), &co, &mut cam) };
    if r == NVCAM_OK {
        Ok(cam)
    } else {
        Err(format!("open: {r} {}", last_error()))
    }
}

fn stats(cam: u64) -> nvcam_camera_stats {
    let mut s: nvcam_camera_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
    unsafe { nvcam_camera_stats(cam, &mut s) };
    s
}

/// Asks `cam` to reconnect and waits until it delivers a frame of its new connection.
fn reconnect_and_wait(cam: u64, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let before = stats(cam).reconnects;
    let _ = nvcam_camera_reconnect(cam);
    while stats(cam).reconnects == before {
        if t0.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(poll_ms()));
    }
    let at = now_ns();
    fresh_frame(cam, at, limit.saturating_sub(t0.elapsed())).map(|_| t0.elapsed())
}

/// How often a reconnecting camera's thread polls its stats (`CHURN_POLL_MS`, default 1 ms).
fn poll_ms() -> u64 {
    static MS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MS.get_or_init(|| std::env::var("CHURN_POLL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1))
}

/// Waits for a frame decoded after `after_ns` (wall clock); the time it took, or None.
fn fresh_frame(cam: u64, after_ns: u64, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        let mut f = 0;
        if unsafe { nvcam_camera_get_frame(cam, 200, &mut f) } == NVCAM_OK {
            let mut i: nvcam_frame_info = unsafe { std::mem::zeroed() };
            i.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
            unsafe { nvcam_frame_info(f, &mut i) };
            nvcam_frame_release(f);
            if i.wallclock_ns > after_ns {
                return Some(t0.elapsed());
            }
        }
    }
    None
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// What one steady camera's consumer saw: (time of the frame, gap before it in ms), timeouts.
#[derive(Default)]
struct Seen {
    frames: Vec<(Instant, f64)>,
    timeouts: Vec<Instant>,
    /// (time, ms from the frame's publication to its consumer getting it, frames skipped before it).
    handoff: Vec<(Instant, f64, u64)>,
}

fn report(label: &str, seen: &[Arc<Mutex<Seen>>], steady: &[u64], from: Instant, to: Instant, back: &[f64]) {
    let secs = to.duration_since(from).as_secs_f64();
    let mut gaps = Vec::new();
    let mut fps = Vec::new();
    let mut timeouts = 0;
    for s in seen {
        let s = s.lock().unwrap();
        let inside: Vec<f64> = s.frames.iter().filter(|(t, _)| *t >= from && *t <= to).map(|f| f.1).collect();
        fps.push(inside.len() as f64 / secs);
        gaps.extend(inside);
        timeouts += s.timeouts.iter().filter(|t| **t >= from && **t <= to).count();
    }
    let min_fps = fps.iter().cloned().fold(f64::INFINITY, f64::min);
    let slow = fps.iter().filter(|&&f| f < 29.5).count();
    let none = fps.iter().filter(|&&f| f == 0.0).count();
    let mean_fps = fps.iter().sum::<f64>() / fps.len().max(1) as f64;
    let mut p50s: Vec<f64> = steady.iter().map(|&c| stats(c).decode_latency_p50_us as f64 / 1e3).collect();
    let p99 = steady.iter().map(|&c| stats(c).decode_latency_p99_us as f64 / 1e3).fold(0.0, f64::max);
    let mut b = back.to_vec();
    let back_txt = if b.is_empty() { "-".to_string() } else { format!("{:.2} s (p50 {:.2})", pct(&mut b, 1.0), pct(&mut b, 0.5)) };
    println!(
        "| {label} | {mean_fps:.1} (min {min_fps:.1}) | {:.1} / {:.1} / {:.1} | {timeouts} | {:.2} / {:.2} | {back_txt} | {:.2} |",
        pct(&mut gaps, 0.5),
        pct(&mut gaps, 0.99),
        pct(&mut gaps, 1.0),
        pct(&mut p50s, 0.5),
        p99,
        cpu_cores_between(from, to)
    );
    if slow > 0 {
        println!("| ({slow} steady cameras under 29.5 fps, {none} of them with no frame) |");
    }
    if std::env::var("CHURN_STAGES").is_ok_and(|v| v == "1") {
        // Publication → consumer: a late consumer (its thread not scheduled, a lock) against a
        // late worker (the stages below).
        let mut h = Vec::new();
        let mut skipped = 0;
        for s in seen {
            for &(t, ms, k) in &s.lock().unwrap().handoff {
                if t >= from && t <= to {
                    h.push(ms);
                    skipped += k;
                }
            }
        }
        let late = h.iter().filter(|&&ms| ms >= 10.0).count();
        // When the long gaps came, by half second of the window.
        let bins = (to.duration_since(from).as_secs_f64() / 0.5).ceil() as usize;
        let mut long = vec![0u32; bins.max(1)];
        for s in seen {
            for &(t, gap) in &s.lock().unwrap().frames {
                if t >= from && t <= to && gap >= 50.0 {
                    long[((t.duration_since(from).as_secs_f64() / 0.5) as usize).min(bins.max(1) - 1)] += 1;
                }
            }
        }
        println!("gaps of 50 ms or more, per half second of the window: {long:?}");
        println!(
            "handoff (publication → consumer): p50 {:.2} p99 {:.2} max {:.1} ms, {late} ≥ 10 ms; frames skipped (replaced before taken): {skipped}",
            pct(&mut h, 0.5),
            pct(&mut h, 0.99),
            pct(&mut h, 1.0)
        );
    }
}

/// Where a fleet of steady cameras went and how it was delivered (see the header).
fn fleet(seen: &[Arc<Mutex<Seen>>], steady: &[u64], from: Instant, to: Instant) {
    let mut per = std::collections::BTreeMap::<(i32, u32), usize>::new();
    let failed = steady.iter().filter(|&&c| stats(c).state == NVCAM_STATE_FAILED).count();
    steady.iter().for_each(|&c| *per.entry((stats(c).device, stats(c).decoder)).or_default() += 1);
    let (mut h, mut fps) = (Vec::new(), Vec::new());
    for s in seen {
        let s = s.lock().unwrap();
        h.extend(s.handoff.iter().filter(|x| x.0 >= from && x.0 <= to).map(|x| x.1));
        fps.push(s.frames.iter().filter(|(t, _)| *t >= from && *t <= to).count() as f64 / to.duration_since(from).as_secs_f64());
    }
    let mut g: nvcam_gpu_stats = unsafe { std::mem::zeroed() };
    g.struct_size = std::mem::size_of::<nvcam_gpu_stats>() as u32;
    unsafe { nvcam_gpu_stats(-1, &mut g) };
    println!(
        "fleet: (GPU, decoder) → cameras {per:?}; FAILED {failed}; delivered fps lowest {:.2}, {} under 29.4; decode-to-return p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.1} ms; GPUs: {} hardware sessions, {} uploads, session limit {} (0: not met), sessions exhausted {}, decoder load (NVML, busiest GPU) {} %, engines' demand {} of learned capacity, load refusals {}",
        fps.iter().cloned().fold(f64::INFINITY, f64::min),
        fps.iter().filter(|&&f| f < 29.4).count(),
        pct(&mut h, 0.5),
        pct(&mut h, 0.99),
        pct(&mut h, 0.999),
        pct(&mut h, 1.0),
        g.hw_decoders,
        g.upload_decoders,
        g.session_limit,
        g.sessions_exhausted,
        g.decoder_load as i64,
        if g.decoder_demand == u32::MAX { "unknown".to_string() } else { format!("{} %", g.decoder_demand) },
        g.load_refusals
    );
}

/// Where the camera threads' time went since the last call (`nvcam::diag::stage_times`): per
/// stage, calls, mean (and the thread's CPU time per call, where the stage measures it), p50 and p99 (upper bounds of log2 buckets), max, and calls of 16 ms or more.
fn stage_lines() {
    let t = nvcam::diag::stage_times();
    if t.is_empty() {
        return;
    }
    let cells: Vec<String> = t
        .iter()
        .map(|s| {
            format!(
                "{} {}× mean {:.2}{} p50 ≤{:.2} p99 ≤{:.2} max {:.1} ms, ≥16 ms {}",
                s.stage.name(),
                s.count,
                s.mean_us / 1e3,
                if s.mean_cpu_us > 0.0 { format!(" (CPU {:.1} µs)", s.mean_cpu_us) } else { String::new() },
                s.quantile_us(0.5) / 1e3,
                s.quantile_us(0.99) / 1e3,
                s.max_us / 1e3,
                s.at_least_us(16_384)
            )
        })
        .collect();
    println!("stages: {}", cells.join("; "));
}

/// (decoders created, decoders adopted) so far, over the process.
fn nvdec_made() -> (u64, u64) {
    let c = nvcam::diag::nvdec_counters();
    (c.decoders_created.load(Ordering::Relaxed), c.decoders_adopted.load(Ordering::Relaxed))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let clip = args.get(1).filter(|a| !a.starts_with("--")).cloned().expect("usage: churn_bench CLIP [options]");
    let n_steady: usize = arg(&args, "--steady", "96").parse().unwrap();
    let n_churn: usize = arg(&args, "--churn", "32").parse().unwrap();
    // The stage timings cost shared atomics per frame: on only when asked for.
    nvcam::diag::enable_stage_times(std::env::var("CHURN_STAGES").is_ok_and(|v| v == "1"));
    std::thread::spawn(|| loop {
        CPU_SAMPLES.lock().unwrap().push((Instant::now(), cpu_seconds()));
        std::thread::sleep(Duration::from_millis(100));
    });
    let secs: f64 = arg(&args, "--seconds", "5").parse().unwrap();
    // The baseline may need longer than a churn phase: long enough to hold a loop of the clip.
    let baseline_secs: f64 = arg(&args, "--baseline-seconds", &secs.to_string()).parse().unwrap();
    let rounds: usize = arg(&args, "--rounds", "3").parse().unwrap();
    let phases = arg(&args, "--phases", "baseline,loop,burst,openclose");
    let latency = match arg(&args, "--latency", "auto").as_str() {
        "low" => NVCAM_LATENCY_LOW,
        "throughput" => NVCAM_LATENCY_THROUGHPUT,
        _ => NVCAM_LATENCY_AUTO,
    };
    unsafe {
        // CHURN_LOG=info: the library's info lines too (decoder set-up and its timings).
        nvcam_log_init(c"-".as_ptr(), if std::env::var("CHURN_LOG").is_ok_and(|v| v == "info") { NVCAM_LOG_INFO } else { NVCAM_LOG_WARN });
        assert_eq!(nvcam_init(std::ptr::null()), NVCAM_OK, "{}", last_error());
    }
    println!(
        "churn_bench: clip {clip}; {n_steady} steady + {n_churn} churned cameras; {} CPU cores; latency {}; env NVCAM_NVDEC_CTXLOCK={:?} NVCAM_NVDEC_REUSE={:?} NVCAM_HW_LOOP_FLUSH={:?} NVCAM_CTX_SCHED={:?}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        arg(&args, "--latency", "auto"),
        std::env::var("NVCAM_NVDEC_CTXLOCK").ok(),
        std::env::var("NVCAM_NVDEC_REUSE").ok(),
        std::env::var("NVCAM_HW_LOOP_FLUSH").ok(),
        std::env::var("NVCAM_CTX_SCHED").ok()
    );
    for backend in arg(&args, "--backends", "nvdec,ffmpeg-hw").split(',') {
        let (device, decoder) = match backend {
            "nvdec" => (0, NVCAM_DECODER_NVDEC),
            "ffmpeg-hw" => (0, NVCAM_DECODER_FFMPEG_HW),
            "upload" => (0, NVCAM_DECODER_SOFTWARE),
            "nvjpeg" => (0, NVCAM_DECODER_NVJPEG),
            "auto" => (0, NVCAM_DECODER_AUTO),
            "any" => (NVCAM_DEVICE_ANY, NVCAM_DECODER_AUTO),
            _ => (NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE),
        };
        let o = Arc::new(Opts { clip: CString::new(clip.clone()).unwrap(), device, decoder, latency });
        println!("\n{backend}:\n\n| phase | steady fps (min) | gap p50 / p99 / max ms | get_frame timeouts | decode latency p50 / p99 ms | churned back after | CPU cores |\n|---|---|---|---|---|---|---|");
        let tracing = Arc::new(AtomicBool::new(std::env::var("FLEET_TRACE").is_ok_and(|v| v == "1")));
        if tracing.load(Ordering::Relaxed) {
            let tracing = tracing.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while tracing.load(Ordering::Relaxed) {
                    let mut g: nvcam_gpu_stats = unsafe { std::mem::zeroed() };
                    g.struct_size = std::mem::size_of::<nvcam_gpu_stats>() as u32;
                    unsafe { nvcam_gpu_stats(0, &mut g) };
                    let share = if g.decoder_demand == u32::MAX { -1 } else { g.decoder_demand as i64 };
                    println!("trace: {} {} {} {} {} {} {}", t0.elapsed().as_millis(), g.hw_decoders, g.upload_decoders, g.decoder_load as i64, g.frames_copied, share, g.load_refusals);
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
        }
        let steady: Vec<u64> = match (0..n_steady).map(|_| open(&o)).collect::<Result<Vec<_>, _>>() {
            Ok(v) => v,
            Err(e) => {
                println!("| {backend}: cannot open the steady cameras: {e} |");
                continue;
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let seen: Vec<Arc<Mutex<Seen>>> = steady.iter().map(|_| Arc::new(Mutex::new(Seen::default()))).collect();
        let consumers: Vec<_> = steady
            .iter()
            .zip(&seen)
            .map(|(&cam, seen)| {
                let (stop, seen) = (stop.clone(), seen.clone());
                std::thread::Builder::new().name("bench-consumer".into()).spawn(move || {
                    let mut last: Option<Instant> = None;
                    let mut last_seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut f = 0;
                        let r = unsafe { nvcam_camera_get_frame(cam, 1000, &mut f) };
                        let now = Instant::now();
                        if r == NVCAM_OK {
                            let wall = now_ns();
                            let mut i: nvcam_frame_info = unsafe { std::mem::zeroed() };
                            i.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
                            unsafe { nvcam_frame_info(f, &mut i) };
                            nvcam_frame_release(f);
                            let mut s = seen.lock().unwrap();
                            if let Some(l) = last {
                                s.frames.push((now, now.duration_since(l).as_secs_f64() * 1e3));
                                let skipped = i.seq.saturating_sub(last_seq + 1);
                                s.handoff.push((now, wall.saturating_sub(i.wallclock_ns) as f64 / 1e6, skipped));
                            }
                            drop(s);
                            last_seq = i.seq;
                            last = Some(now);
                        } else {
                            seen.lock().unwrap().timeouts.push(now);
                        }
                    }
                })
                .expect("consumer thread")
            })
            .collect();
        // Warm up: every steady camera has its decoder and two seconds of frames behind it (sync
        // opens return before the first picture, while decoders are still being made).
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) && steady.iter().any(|&c| stats(c).frames_decoded < 60) {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        let window = Duration::from_secs_f64(secs);
        let baseline_window = Duration::from_secs_f64(baseline_secs);
        for phase in phases.split(',') {
            let nv0 = nvdec_made();
            let _ = nvcam::diag::stage_times();
            match phase {
                "baseline" => {
                    let (t0, by0) = (Instant::now(), cpu_by_thread());
                    std::thread::sleep(baseline_window);
                    let (t1, by1) = (Instant::now(), cpu_by_thread());
                    report(&format!("{n_steady} steady, none else"), &seen, &steady, t0, t1, &[]);
                    fleet(&seen, &steady, t0, t1);
                    println!("CPU cores by thread: {}", cores_by_thread(&by0, &by1, t1.duration_since(t0).as_secs_f64()));
                    tracing.store(false, Ordering::Relaxed);
                }
                "loop" => {
                    let churn: Vec<u64> = (0..n_churn).filter_map(|_| open(&o).ok()).collect();
                    let go = Arc::new(AtomicBool::new(true));
                    let count = Arc::new(AtomicU64::new(0));
                    // When every churned camera had come back from its first reconnect (its first
                    // decoder made), and the reconnect count then.
                    let up = Arc::new(Mutex::new((0usize, None::<(Instant, u64)>)));
                    std::thread::sleep(Duration::from_millis(500));
                    let t0 = Instant::now();
                    let n = churn.len();
                    let loops: Vec<_> = churn
                        .iter()
                        .map(|&c| {
                            let (go, count, up) = (go.clone(), count.clone(), up.clone());
                            std::thread::spawn(move || {
                                let mut first = true;
                                while go.load(Ordering::Relaxed) {
                                    reconnect_and_wait(c, Duration::from_secs(5));
                                    let k = count.fetch_add(1, Ordering::Relaxed) + 1;
                                    if std::mem::take(&mut first) {
                                        let mut u = up.lock().unwrap();
                                        u.0 += 1;
                                        if u.0 == n {
                                            u.1 = Some((Instant::now(), k));
                                        }
                                    }
                                }
                            })
                        })
                        .collect();
                    std::thread::sleep(window);
                    let t1 = Instant::now();
                    go.store(false, Ordering::Relaxed);
                    loops.into_iter().for_each(|t| t.join().unwrap());
                    let total = count.load(Ordering::Relaxed);
                    let label = format!("{n_steady} steady + {} reconnecting in a loop ({total} reconnects)", churn.len());
                    report(&label, &seen, &steady, t0, t1, &[]);
                    // The same window in two parts: while the churned cameras' first decoders are
                    // made (the start of the phase is their open burst), then the loop alone.
                    if let Some((tu, k)) = up.lock().unwrap().1.filter(|(tu, _)| t1.saturating_duration_since(*tu) >= Duration::from_secs(1) && tu.duration_since(t0) >= Duration::from_millis(500)) {
                        let first = format!("… of which until every churned camera was back once ({:.2} s, {k} reconnects)", tu.duration_since(t0).as_secs_f64());
                        report(&first, &seen, &steady, t0, tu, &[]);
                        let rest = format!("… of which the loop alone ({:.2} s, {} reconnects)", t1.duration_since(tu).as_secs_f64(), total - k);
                        report(&rest, &seen, &steady, tu, t1, &[]);
                    }
                    churn.iter().for_each(|&c| {
                        let _ = nvcam_camera_close(c, 5000);
                    });
                }
                "burst" => {
                    let churn: Vec<u64> = (0..n_churn).filter_map(|_| open(&o).ok()).collect();
                    std::thread::sleep(Duration::from_secs(1));
                    let t0 = Instant::now();
                    let mut back = Vec::new();
                    for _ in 0..rounds {
                        // All at once: one thread per camera, released together.
                        let go = Arc::new(std::sync::Barrier::new(churn.len() + 1));
                        let waits: Vec<_> = churn
                            .iter()
                            .map(|&c| {
                                let go = go.clone();
                                std::thread::spawn(move || {
                                    go.wait();
                                    reconnect_and_wait(c, Duration::from_secs(10))
                                })
                            })
                            .collect();
                        go.wait();
                        let t = Instant::now();
                        let ok = waits.into_iter().map(|w| w.join().ok().flatten().is_some()).filter(|&b| b).count();
                        back.push(t.elapsed().as_secs_f64());
                        if ok < churn.len() {
                            println!("| ({} of {} churned cameras not back within 10 s) |", churn.len() - ok, churn.len());
                        }
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    let label = format!("{n_steady} steady, {} others reconnect at once ({rounds} rounds)", churn.len());
                    report(&label, &seen, &steady, t0, Instant::now(), &back);
                    churn.iter().for_each(|&c| {
                        let _ = nvcam_camera_close(c, 5000);
                    });
                }
                "openclose" => {
                    let t0 = Instant::now();
                    let (mut opens, mut closes) = (Vec::new(), Vec::new());
                    for _ in 0..rounds {
                        let t = Instant::now();
                        let opened: Vec<_> = (0..n_churn)
                            .map(|_| {
                                let o = o.clone();
                                std::thread::spawn(move || {
                                    let c = open(&o).ok()?;
                                    fresh_frame(c, 0, Duration::from_secs(10));
                                    Some(c)
                                })
                            })
                            .collect();
                        let cams: Vec<u64> = opened.into_iter().filter_map(|t| t.join().ok().flatten()).collect();
                        opens.push(t.elapsed().as_secs_f64());
                        let t = Instant::now();
                        let closing: Vec<_> = cams.into_iter().map(|c| std::thread::spawn(move || nvcam_camera_close(c, 5000))).collect();
                        closing.into_iter().for_each(|c| drop(c.join()));
                        closes.push(t.elapsed().as_secs_f64());
                        std::thread::sleep(Duration::from_secs(1));
                    }
                    let label = format!("{n_steady} steady, {n_churn} new cameras opened at once, then closed ({rounds} rounds; closes took {:.2} s max)", pct(&mut closes, 1.0));
                    report(&label, &seen, &steady, t0, Instant::now(), &opens);
                }
                p => println!("| unknown phase {p} |"),
            }
            let nv1 = nvdec_made();
            if phase != "baseline" && backend == "nvdec" {
                println!("| ({phase}: NVDEC decoders created +{}, adopted from the last connection +{}) |", nv1.0 - nv0.0, nv1.1 - nv0.1);
            }
            if std::env::var("CHURN_STAGES").is_ok_and(|v| v == "1") {
                stage_lines();
            }
        }
        stop.store(true, Ordering::Relaxed);
        consumers.into_iter().for_each(|t| t.join().unwrap());
        steady.iter().for_each(|&c| {
            let _ = nvcam_camera_close(c, 5000);
        });
    }
    nvcam_shutdown(20_000);
}
