//! Decoder throughput on one GPU, every backend, in one invocation: N cameras of the same clip
//! (looped, unpaced) through nvcam with direct NVDEC, FFmpeg's CUDA hwaccel and (N = 1) software
//! decode plus upload, next to N concurrent `ffmpeg-nvdec -hwaccel cuda -hwaccel_output_format
//! cuda -autoscale 0 -f null -` processes on the same clip. Every nvcam frame is decoded *and*
//! copied into the camera's device pool (that is what frames_decoded counts).
//!
//!   nvdec_bench CLIP [--cams 1,7,16,32] [--backends nvdec,ffmpeg-hw,software] [--seconds 3]
//!                    [--warmup 1] [--cli ffmpeg-nvdec|none] [--csv FILE] [--label TEXT]
//!
//! For each row: open N cameras (async), wait until each has a frame, warm up, then count frames
//! over a fixed window; aggregate fps = frames of all cameras / window. Decoder utilisation is the
//! mean of `nvidia-smi --query-gpu=utilization.decoder -lms 100` samples inside the window. For
//! the direct NVDEC rows the per-frame wall time of each stage of the camera thread is printed
//! (parse = bitstream filter + cuvidParseVideoData incl. cuvidDecodePicture, map = cuvidMapVideoFrame64
//! incl. waiting for the picture, copy = two cuMemcpy2DAsync + cuEventRecord, unmap), and the CPU
//! the process used (cores).

use nvcam::*;
use std::ffi::CString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Row {
    backend: String,
    n: usize,
    fps: f64,
    util: Option<f64>,
    cpu_cores: Option<f64>,
    notes: String,
}

/// nvidia-smi's decoder utilisation, sampled every 100 ms for the whole run.
struct Sampler {
    child: Option<Child>,
    samples: Arc<Mutex<Vec<(Instant, f64)>>>,
}

impl Sampler {
    fn start() -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let child = Command::new("nvidia-smi")
            .args(["--query-gpu=utilization.decoder", "--format=csv,noheader,nounits", "-lms", "100", "-i", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        let mut child = child;
        if let Some(c) = child.as_mut() {
            let out = c.stdout.take().expect("piped");
            let s = samples.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if let Ok(v) = line.trim().parse::<f64>() {
                        s.lock().unwrap().push((Instant::now(), v));
                    }
                }
            });
        } else {
            eprintln!("nvidia-smi not available: no decoder utilisation");
        }
        Sampler { child, samples }
    }
    fn mean(&self, from: Instant, to: Instant) -> Option<f64> {
        let s = self.samples.lock().unwrap();
        let v: Vec<f64> = s.iter().filter(|(t, _)| *t >= from && *t <= to).map(|(_, v)| *v).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// CPU seconds (user + system) this process used so far.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn cam_stats(cam: u64) -> nvcam_camera_stats {
    let mut s = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
    unsafe { nvcam_camera_stats(cam, &mut s) };
    s
}

fn last_error() -> String {
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

fn policy(backend: &str) -> u32 {
    match backend {
        "nvdec" => NVCAM_DECODER_NVDEC,
        "ffmpeg-hw" => NVCAM_DECODER_FFMPEG_HW,
        "software" => NVCAM_DECODER_SOFTWARE,
        "auto" => NVCAM_DECODER_AUTO,
        _ => panic!("unknown backend {backend}"),
    }
}

struct Snap {
    frames: u64,
    ns_parse: u64,
    ns_map: u64,
    ns_copy: u64,
    ns_unmap: u64,
    nv_frames: u64,
    nv_packets: u64,
}

fn snap(cams: &[u64]) -> Snap {
    let c = nvcam::diag::nvdec_counters();
    let r = Ordering::Relaxed;
    Snap {
        frames: cams.iter().map(|&c| cam_stats(c).frames_decoded).sum(),
        ns_parse: c.ns_parse.load(r),
        ns_map: c.ns_map.load(r),
        ns_copy: c.ns_copy.load(r),
        ns_unmap: c.ns_unmap.load(r),
        nv_frames: c.frames.load(r),
        nv_packets: c.packets.load(r),
    }
}

fn run_nvcam(clip: &str, backend: &str, n: usize, warmup: f64, seconds: f64, smi: &Sampler) -> Row {
    let url = CString::new(clip).unwrap();
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    unsafe { nvcam_camera_options_init(&mut o) };
    o.flags = NVCAM_OPEN_ASYNC | NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING;
    o.device = 0;
    o.decoder = policy(backend);
    let mut cams = Vec::new();
    let mut err = None;
    for _ in 0..n {
        let mut cam = 0;
        if unsafe { nvcam_camera_open(url.as_ptr(), &o, &mut cam) } != NVCAM_OK {
            err = Some(last_error());
            break;
        }
        cams.push(cam);
    }
    let t_open = Instant::now();
    while err.is_none() && !cams.iter().all(|&c| cam_stats(c).frames_decoded > 0) {
        if t_open.elapsed() > Duration::from_secs(20) {
            err = Some("cameras did not all stream within 20 s".into());
        }
        if let Some(&c) = cams.iter().find(|&&c| {
            let s = cam_stats(c);
            s.state == NVCAM_STATE_FAILED || (s.reconnect_attempt > 0 && s.frames_decoded == 0)
        }) {
            let mut buf = vec![0u8; 1024];
            unsafe { nvcam_camera_last_error(c, buf.as_mut_ptr() as *mut _, 1024) };
            err = Some(String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut row = Row { backend: format!("nvcam {backend}"), n, fps: 0.0, util: None, cpu_cores: None, notes: String::new() };
    if let Some(e) = &err {
        row.notes = format!("error: {e}");
    } else {
        std::thread::sleep(Duration::from_secs_f64(warmup));
        let (s0, c0, t0) = (snap(&cams), cpu_seconds(), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (s1, c1, t1) = (snap(&cams), cpu_seconds(), Instant::now());
        let dt = (t1 - t0).as_secs_f64();
        row.fps = (s1.frames - s0.frames) as f64 / dt;
        row.util = smi.mean(t0, t1);
        row.cpu_cores = c0.zip(c1).map(|(a, b)| (b - a) / dt);
        let names: Vec<u32> = cams.iter().map(|&c| cam_stats(c).decoder).collect();
        let used = |d: u32| names.iter().filter(|&&x| x == d).count();
        row.notes = format!(
            "decoders: {} nvdec, {} ffmpeg-cuda, {} sw",
            used(NVCAM_DECODER_NVDEC),
            used(NVCAM_DECODER_FFMPEG_HW),
            used(NVCAM_DECODER_SOFTWARE)
        );
        let fr = s1.nv_frames.saturating_sub(s0.nv_frames);
        let pk = s1.nv_packets.saturating_sub(s0.nv_packets);
        if fr > 0 {
            let us = |a: u64, b: u64, d: u64| (b - a) as f64 / d as f64 / 1000.0;
            row.notes += &format!(
                "; per frame on the camera thread: parse {:.0} µs, map {:.0} µs, copy+event {:.1} µs, unmap {:.1} µs",
                us(s0.ns_parse, s1.ns_parse, pk.max(1)),
                us(s0.ns_map, s1.ns_map, fr),
                us(s0.ns_copy, s1.ns_copy, fr),
                us(s0.ns_unmap, s1.ns_unmap, fr)
            );
        }
    }
    for c in cams {
        nvcam_camera_close(c, 10_000);
    }
    nvcam_gpu_drain(0);
    row
}

fn run_cli(bin: &str, clip: &str, n: usize, warmup: f64, seconds: f64, smi: &Sampler) -> Row {
    let mut row = Row { backend: format!("{bin} CLI ({n} processes)"), n, fps: 0.0, util: None, cpu_cores: None, notes: String::new() };
    let latest: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(vec![0; n]));
    let mut kids = Vec::new();
    for k in 0..n {
        let child = Command::new(bin)
            .args(["-hide_banner", "-loglevel", "error", "-nostats", "-progress", "pipe:1", "-stats_period", "0.1"])
            .args(["-hwaccel", "cuda", "-hwaccel_output_format", "cuda", "-stream_loop", "-1", "-i", clip])
            .args(["-autoscale", "0", "-f", "null", "-"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                row.notes = format!("error: cannot run {bin}: {e}");
                break;
            }
        };
        let out = child.stdout.take().expect("piped");
        let l = latest.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(v) = line.strip_prefix("frame=").and_then(|v| v.trim().parse::<u64>().ok()) {
                    l.lock().unwrap()[k] = v;
                }
            }
        });
        kids.push(child);
    }
    let t_open = Instant::now();
    if row.notes.is_empty() {
        while !latest.lock().unwrap().iter().all(|&f| f > 0) {
            if t_open.elapsed() > Duration::from_secs(30) || kids.iter_mut().any(|c| c.try_wait().ok().flatten().is_some()) {
                row.notes = "error: not every ffmpeg process got going".into();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    if row.notes.is_empty() {
        std::thread::sleep(Duration::from_secs_f64(warmup));
        let (f0, t0) = (latest.lock().unwrap().iter().sum::<u64>(), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (f1, t1) = (latest.lock().unwrap().iter().sum::<u64>(), Instant::now());
        row.fps = (f1 - f0) as f64 / (t1 - t0).as_secs_f64();
        row.util = smi.mean(t0, t1);
        row.notes = "frame counts from -progress every 0.1 s".into();
    }
    for mut c in kids {
        let _ = c.kill();
        let _ = c.wait();
    }
    row
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clip = args.next().expect("usage: nvdec_bench CLIP [--cams 1,7,16,32] [--backends nvdec,ffmpeg-hw,software] [--seconds S] [--warmup S] [--cli BIN|none] [--csv FILE] [--label TEXT]");
    let mut cams = vec![1usize, 7, 16, 32];
    let mut backends: Vec<String> = ["nvdec", "ffmpeg-hw", "software"].iter().map(|s| s.to_string()).collect();
    let (mut seconds, mut warmup) = (3.0f64, 1.0f64);
    let mut cli = Some("ffmpeg-nvdec".to_string());
    let mut csv: Option<String> = None;
    let mut label = String::new();
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--cams" => cams = v.split(',').map(|x| x.parse().expect("--cams")).collect(),
            "--backends" => backends = v.split(',').map(str::to_string).collect(),
            "--seconds" => seconds = v.parse().expect("--seconds"),
            "--warmup" => warmup = v.parse().expect("--warmup"),
            "--cli" => cli = (v != "none").then_some(v),
            "--csv" => csv = Some(v),
            "--label" => label = v,
            _ => panic!("unknown argument {a}"),
        }
    }
    unsafe {
        nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_WARN);
        assert_eq!(nvcam_init(std::ptr::null()), NVCAM_OK, "{}", last_error());
    }
    let gpu = Command::new("nvidia-smi")
        .args(["--query-gpu=name,driver_version", "--format=csv,noheader", "-i", "0"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "?".into());
    println!(
        "nvdec_bench {label}: clip {clip}; GPU {gpu}; window {seconds} s after {warmup} s warm-up; {} CPU cores; env NVCAM_NVDEC_CTXLOCK={:?} NVCAM_NVDEC_DISPLAY_DELAY={:?}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        std::env::var("NVCAM_NVDEC_CTXLOCK").ok(),
        std::env::var("NVCAM_NVDEC_DISPLAY_DELAY").ok()
    );
    let smi = Sampler::start();
    let mut rows = Vec::new();
    let emit = |r: Row, rows: &mut Vec<Row>| {
        let line = format!(
            "RESULT {label} | {} | {} | {:.0} | {:.1} | {} | {} | {}",
            r.backend,
            r.n,
            r.fps,
            r.fps / r.n as f64,
            r.util.map(|u| format!("{u:.0}%")).unwrap_or_else(|| "n/a".into()),
            r.cpu_cores.map(|c| format!("{c:.1}")).unwrap_or_else(|| "-".into()),
            r.notes
        );
        println!("{line}");
        if let Some(path) = &csv {
            if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
                let _ = writeln!(f, "{line}");
            }
        }
        rows.push(r);
    };
    for b in &backends {
        for &n in &cams {
            if b == "software" && n != 1 {
                continue;
            }
            let r = run_nvcam(&clip, b, n, warmup, seconds, &smi);
            emit(r, &mut rows);
        }
    }
    if let Some(bin) = &cli {
        for &n in &cams {
            let r = run_cli(bin, &clip, n, warmup, seconds, &smi);
            emit(r, &mut rows);
        }
    }
    println!();
    println!("| path | N | fps (all cameras) | fps per camera | decoder util | CPU cores |");
    println!("|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.0} | {:.0} | {} | {} |",
            r.backend,
            r.n,
            r.fps,
            r.fps / r.n as f64,
            r.util.map(|u| format!("{u:.0}%")).unwrap_or_else(|| "n/a".into()),
            r.cpu_cores.map(|c| format!("{c:.1}")).unwrap_or_else(|| "-".into())
        );
    }
    drop(smi);
    nvcam_shutdown(20_000);
}
