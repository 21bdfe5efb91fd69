//! One camera read by N processes: each process opening it itself, against one process that
//! publishes it and N attached processes (`nvcam://NAME`). Real processes (`share_peer`, built
//! beside this example), one row per way and N:
//!
//!   cargo build --release --features test-hooks --examples
//!   target/release/examples/share_bench --url clip.mp4 --n 1,4,16 --frames 300 [--cpu]
//!
//! `--url` is any camera URL; a file is looped at its own rate (make a 1080p30 H.264 clip with
//! `ffmpeg -f lavfi -i testsrc2=size=1920x1080:rate=30 -t 20 -pix_fmt yuv420p -c:v libx264 -g 30 clip.mp4`).
//! `--cpu` decodes on the CPU; without it, on GPU 0 where there is one. `--skip N` leaves each
//! reader's first N frames out of the latency (its start: an attached process creates its CUDA
//! context and maps the pool at its first frame).
//!
//! Per row: the connections to the camera (RTSP sessions for an RTSP camera), the decoders, the
//! CPU cores of all the processes together while the readers take `--frames` frames each, their
//! memory (proportional set size: shared pages split between the processes that map them), the
//! GPU memory in use (nvidia-smi, where there is one) above what it was before the row, and the
//! latency from a frame leaving its decoder to a reader's host having it, p50 and p99 over every
//! frame of every reader.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn peer_program() -> PathBuf {
    let p = std::env::current_exe().expect("current_exe").with_file_name(format!("share_peer{}", std::env::consts::EXE_SUFFIX));
    assert!(p.is_file(), "{} is missing: cargo build --release --features test-hooks --examples", p.display());
    p
}

struct Proc {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    lines: Vec<String>,
}

impl Proc {
    fn start(args: &[&str]) -> Proc {
        let mut child = Command::new(peer_program()).args(args).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("share_peer");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        Proc { child, out, lines: Vec::new() }
    }
    fn until(&mut self, prefix: &str) {
        loop {
            let mut l = String::new();
            assert!(self.out.read_line(&mut l).expect("read") > 0, "share_peer ended before '{prefix}': {:?}", self.lines);
            let l = l.trim_end().to_string();
            let done = l.starts_with(prefix);
            self.lines.push(l);
            if done {
                return;
            }
        }
    }
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_s(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    #[cfg(target_os = "linux")]
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    #[cfg(not(target_os = "linux"))]
    let hz = 100.0; // no /proc there: every figure reads 0
    (ticks(11) + ticks(12)) / hz
}

/// Proportional set size of `pid`, MiB.
fn pss_mib(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("Pss:")).and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

/// GPU memory in use on GPU 0, MiB, if nvidia-smi answers.
fn vram_mib() -> Option<f64> {
    let o = Command::new("nvidia-smi").args(["--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"]).output().ok()?;
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

fn percentile(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

struct Row {
    way: &'static str,
    n: usize,
    connections: usize,
    decoders: usize,
    cores: f64,
    pss: f64,
    vram: Option<f64>,
    p50: u64,
    p99: u64,
    frames: usize,
    seconds: f64,
}

/// Runs the readers to their end, measuring what the row reports; `all` are every process of
/// the row (readers and publisher).
fn measure(readers: &mut [Proc], others: &[u32], vram0: Option<f64>, skip: usize) -> (f64, f64, Option<f64>, Vec<u64>, f64) {
    let pids: Vec<u32> = readers.iter().map(Proc::pid).chain(others.iter().copied()).collect();
    let cpu0: f64 = pids.iter().map(|&p| cpu_s(p)).sum();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let pss: f64 = pids.iter().map(|&p| pss_mib(p)).sum();
    let vram = vram_mib().zip(vram0).map(|(a, b)| a - b);
    // CPU up to the moment the first reader is done (all run the whole window).
    let mut cpu1 = None;
    let mut lat = Vec::new();
    for r in readers.iter_mut() {
        r.until("DONE");
        if cpu1.is_none() {
            cpu1 = Some((pids.iter().map(|&p| cpu_s(p)).sum::<f64>(), t0.elapsed().as_secs_f64()));
        }
        lat.extend(r.lines.iter().filter_map(|l| l.strip_prefix("L ")).filter_map(|v| v.parse::<u64>().ok()).skip(skip));
    }
    let (c1, wall) = cpu1.unwrap_or((cpu0, 1.0));
    ((c1 - cpu0) / wall, pss, vram, lat, wall)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = arg(&args, "--url").expect("--url URL (see the header)");
    let ns: Vec<usize> = arg(&args, "--n").unwrap_or_else(|| "1,4,16".into()).split(',').map(|v| v.parse().expect("N")).collect();
    let frames = arg(&args, "--frames").unwrap_or_else(|| "300".into());
    let cpu = args.iter().any(|a| a == "--cpu");
    let skip: usize = arg(&args, "--skip").map_or(0, |v| v.parse().expect("--skip N"));
    let mut rows = Vec::new();
    for &n in &ns {
        // Every process opens the camera.
        let vram0 = vram_mib();
        let mut readers: Vec<Proc> = (0..n)
            .map(|_| {
                let mut a = vec!["publish", url.as_str(), "unused", "--open-only", "--latency", "--loop", "--frames", frames.as_str()];
                if cpu {
                    a.push("--cpu");
                }
                Proc::start(&a)
            })
            .collect();
        for r in readers.iter_mut() {
            r.until("READY");
        }
        let (cores, pss, vram, mut lat, wall) = measure(&mut readers, &[], vram0, skip);
        let got = lat.len();
        rows.push(Row { way: "each process opens it", n, connections: n, decoders: n, cores, pss, vram, p50: percentile(&mut lat, 0.5), p99: percentile(&mut lat, 0.99), frames: got, seconds: wall });
        drop(readers);

        // One publishes, N attach.
        let vram0 = vram_mib();
        let name = format!("bench-{}-{n}", std::process::id());
        let max = n.to_string();
        let mut a = vec!["publish", url.as_str(), name.as_str(), "--loop", "--max", max.as_str()];
        if cpu {
            a.push("--cpu");
        }
        let mut publisher = Proc::start(&a);
        publisher.until("READY");
        let mut readers: Vec<Proc> = (0..n).map(|_| Proc::start(&["consume", &name, &frames, "--latency", "--seconds", "600"])).collect();
        let (cores, pss, vram, mut lat, wall) = measure(&mut readers, &[publisher.pid()], vram0, skip);
        let got = lat.len();
        rows.push(Row { way: "one publishes, N attach", n, connections: 1, decoders: 1, cores, pss, vram, p50: percentile(&mut lat, 0.5), p99: percentile(&mut lat, 0.99), frames: got, seconds: wall });
    }
    println!("camera: {url} ({}), {frames} frames per reader, the first {skip} of each left out of the latency", if cpu { "CPU decode" } else { "GPU 0 where there is one" });
    println!("| way | N | camera connections | decoders | CPU cores | memory (PSS, MiB) | GPU memory (MiB) | decoder → reader p50 / p99 (µs) | frames |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let vram = r.vram.map_or("-".to_string(), |v| format!("{v:.0}"));
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.0} | {} | {} / {} | {} in {:.1} s |",
            r.way, r.n, r.connections, r.decoders, r.cores, r.pss, vram, r.p50, r.p99, r.frames, r.seconds
        );
    }
}
