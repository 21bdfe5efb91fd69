//! What recording costs per camera (docs/BENCHMARKS.md, Recording): N cameras on a 1080p30
//! 4 Mbit/s H.264 clip (2 s between key frames), looped and paced as live cameras, decoding on the
//! CPU; first without recording, then each with a 5 s pre-roll cache and a recording running.
//! Prints per camera: the cache's bytes and time span, the recording writer thread's CPU time
//! (exact, from /proc), and the process's extra CPU time with recording on (the camera thread's
//! copy of each packet included; noisy on a shared machine, as the decode dominates).
//!
//!   cargo run --release --example record_bench -- [--cams 2] [--seconds 10] [--dir DIR] [--device GPU] [--unpaced]
//!
//! --unpaced: the cameras decode as fast as they can (every frame still taken), so the fps per
//! camera is the decoder's throughput with and without recording.
//!
//! Linux only (reads /proc). Makes the clip with the ffmpeg CLI once (kept in DIR).

#[cfg(target_os = "linux")]
fn main() {
    linux::main()
}

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("record_bench reads /proc: Linux only");
}

#[cfg(target_os = "linux")]
mod linux {
    use nvcam::*;
    use std::ffi::CString;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::time::{Duration, Instant};

    /// Which phase the consumers' frame gaps belong to: 1 without recording, 3 with (0 and 2 are
    /// the opens and the caches filling, not counted).
    static PHASE: AtomicU8 = AtomicU8::new(0);
    static STOP: AtomicBool = AtomicBool::new(false);

    /// Takes every frame of camera `h` as an inference host would, noting the time between
    /// frames and the phase each gap ended in.
    fn consume(h: u64) -> Vec<(u8, f64)> {
        let mut gaps = Vec::new();
        let mut last: Option<Instant> = None;
        while !STOP.load(Ordering::Relaxed) {
            let mut f = 0u64;
            // SAFETY (example): a writable out-pointer.
            if unsafe { nvcam_camera_get_frame(h, 500, &mut f) } == NVCAM_OK {
                let now = Instant::now();
                if let Some(l) = last {
                    gaps.push((PHASE.load(Ordering::Relaxed), (now - l).as_secs_f64() * 1e3));
                }
                last = Some(now);
                nvcam_frame_release(f);
            }
        }
        gaps
    }

    /// Frames a second per camera (mean, lowest) and the p99 and largest gap between frames, in
    /// phase `ph`.
    fn phase_figures(all: &[Vec<(u8, f64)>], ph: u8, secs: f64) -> (f64, f64, f64, f64) {
        let fps: Vec<f64> = all.iter().map(|g| g.iter().filter(|(p, _)| *p == ph).count() as f64 / secs).collect();
        let mut gaps: Vec<f64> = all.iter().flatten().filter(|(p, _)| *p == ph).map(|(_, g)| *g).collect();
        gaps.sort_by(f64::total_cmp);
        let p99 = gaps.get(gaps.len().saturating_sub(1) * 99 / 100).copied().unwrap_or(0.0);
        let mean = fps.iter().sum::<f64>() / fps.len().max(1) as f64;
        (mean, fps.iter().copied().fold(f64::INFINITY, f64::min), p99, gaps.last().copied().unwrap_or(0.0))
    }

    fn arg(name: &str, default: &str) -> String {
        let a: Vec<String> = std::env::args().collect();
        a.iter().position(|x| x == name).and_then(|i| a.get(i + 1).cloned()).unwrap_or_else(|| default.into())
    }

    fn clip(dir: &Path) -> PathBuf {
        let p = dir.join("rec-bench-1080p30-4M.mp4");
        if !p.exists() {
            eprintln!("making {} with the ffmpeg CLI (once)", p.display());
            let tmp = dir.join("part-rec-bench.mp4");
            let ok = Command::new("ffmpeg")
                .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-frames:v", "600"])
                .args(["-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "4M", "-maxrate", "4M", "-bufsize", "8M", "-g", "60"])
                .arg(&tmp)
                .status()
                .expect("ffmpeg CLI")
                .success();
            assert!(ok, "ffmpeg failed");
            std::fs::rename(&tmp, &p).unwrap();
        }
        p
    }

    /// CPU seconds of this process (user + system).
    fn process_cpu() -> f64 {
        let s = std::fs::read_to_string("/proc/self/stat").unwrap();
        ticks(&s, 13) + ticks(&s, 14)
    }

    /// CPU seconds of this process's threads whose name starts with `prefix`.
    fn threads_cpu(prefix: &str) -> f64 {
        let mut t = 0.0;
        for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            if comm.starts_with(prefix) {
                let s = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                t += ticks(&s, 13) + ticks(&s, 14);
            }
        }
        t
    }

    /// Field `i` (0-based, after the command name) of a /proc stat line, in seconds (100 Hz ticks).
    fn ticks(stat: &str, i: usize) -> f64 {
        let rest = &stat[stat.rfind(')').map_or(0, |p| p + 2)..];
        rest.split_whitespace().nth(i - 2).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0
    }

    pub(super) fn main() {
        let cams: usize = arg("--cams", "2").parse().unwrap();
        let secs: u64 = arg("--seconds", "10").parse().unwrap();
        let dir = PathBuf::from(arg("--dir", "target/tmp/record_bench"));
        // A GPU ordinal decodes there (AUTO: direct NVDEC); the default is the CPU.
        let device: i32 = arg("--device", &NVCAM_DEVICE_CPU.to_string()).parse().unwrap();
        let unpaced = std::env::args().any(|a| a == "--unpaced");
        std::fs::create_dir_all(&dir).unwrap();
        let src = clip(&dir);
        // SAFETY (example): NULL = defaults.
        assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);
        let url = CString::new(src.to_str().unwrap()).unwrap();
        let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
        // SAFETY (example): a writable options struct.
        assert_eq!(unsafe { nvcam_camera_options_init(&mut o) }, NVCAM_OK);
        o.device = device;
        o.flags = NVCAM_OPEN_LOOP;
        if unpaced {
            o.flags |= NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOSSLESS;
        }
        o.decode_threads = 1;
        let handles: Vec<u64> = (0..cams)
            .map(|_| {
                let mut h = 0;
                // SAFETY (example): valid strings and out-pointer.
                assert_eq!(unsafe { nvcam_camera_open(url.as_ptr(), &o, &mut h) }, NVCAM_OK);
                h
            })
            .collect();
        let run = Duration::from_secs(secs);
        let consumers: Vec<_> = handles.iter().map(|&h| std::thread::spawn(move || consume(h))).collect();
        std::thread::sleep(Duration::from_secs(2)); // past the opens
        PHASE.store(1, Ordering::Relaxed);
        let (c0, t0) = (process_cpu(), Instant::now());
        std::thread::sleep(run);
        let base = (process_cpu() - c0) / t0.elapsed().as_secs_f64();
        let secs1 = t0.elapsed().as_secs_f64();
        PHASE.store(2, Ordering::Relaxed);

        let mut recs = Vec::new();
        for &h in &handles {
            assert_eq!(nvcam_camera_record_cache(h, 5000, 0), NVCAM_OK);
        }
        std::thread::sleep(Duration::from_secs(6)); // the caches fill
        for (i, &h) in handles.iter().enumerate() {
            let p = CString::new(dir.join(format!("cam{i}.mkv")).to_str().unwrap()).unwrap();
            let mut r = 0;
            // SAFETY (example): valid strings and out-pointer.
            assert_eq!(unsafe { nvcam_camera_record_start(h, p.as_ptr(), 5000, 600_000, &mut r) }, NVCAM_OK);
            recs.push(r);
        }
        PHASE.store(3, Ordering::Relaxed);
        let (c1, w1, t1) = (process_cpu(), threads_cpu("nvcam-rec"), Instant::now());
        std::thread::sleep(run);
        let el = t1.elapsed().as_secs_f64();
        PHASE.store(4, Ordering::Relaxed);
        STOP.store(true, Ordering::Relaxed);
        let gaps: Vec<_> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
        let with = (process_cpu() - c1) / el;
        let writers = (threads_cpu("nvcam-rec") - w1) / el;
        let on = if device == NVCAM_DEVICE_CPU { "CPU decode".to_string() } else { format!("GPU {device}, AUTO") };
        let pace = if unpaced { "unpaced (as fast as they decode)" } else { "paced at 30 fps" };
        println!("record_bench: {cams} cameras, 1080p30 H.264 4 Mbit/s (GOP 2 s), {pace}, {on}, {secs} s per phase");
        for (name, ph, d) in [("without recording", 1, secs1), ("with recording", 3, el)] {
            let (mean, low, p99, max) = phase_figures(&gaps, ph, d);
            println!("  {name}: {mean:.1} fps per camera (lowest {low:.1}); gap between frames p99 {p99:.1} ms, max {max:.1} ms");
        }
        for &h in &handles {
            let mut s: nvcam_record_stats = unsafe { std::mem::zeroed() };
            s.struct_size = std::mem::size_of::<nvcam_record_stats>() as u32;
            // SAFETY (example): a writable stats struct.
            assert_eq!(unsafe { nvcam_camera_record_stats(h, &mut s) }, NVCAM_OK);
            println!(
                "  camera 0x{h:016x}: cache {:.2} MB, {} packets, {:.2} s; recordings running {}",
                s.cache_bytes as f64 / 1e6,
                s.cache_packets,
                s.cache_span_us as f64 / 1e6,
                s.running
            );
        }
        for &r in &recs {
            let mut s: nvcam_record_status = unsafe { std::mem::zeroed() };
            s.struct_size = std::mem::size_of::<nvcam_record_status>() as u32;
            // SAFETY (example): a writable status struct.
            assert_eq!(unsafe { nvcam_record_status(r, &mut s) }, NVCAM_OK);
            println!("  recording: {} frames, {:.1} MB, state {}", s.frames, s.bytes as f64 / 1e6, s.state);
            assert_eq!(nvcam_record_release(r), NVCAM_OK);
        }
        println!("  process CPU: {:.1} % without recording, {:.1} % with (cores x 100)", base * 100.0, with * 100.0);
        println!(
            "  per recorded camera: writer thread {:.2} % of a core; process delta {:.2} % of a core",
            writers * 100.0 / cams as f64,
            (with - base) * 100.0 / cams as f64
        );
        for h in handles {
            nvcam_camera_close(h, 5000);
        }
        nvcam_shutdown(5000);
    }
}
