//! One process of a shared camera, as a host program would be: it publishes a camera under a
//! name, or attaches to one (`nvcam://NAME`) and reads its frames. The sharing tests and the
//! sharing benchmark run it as their separate processes; anyone can run it by hand:
//!
//!   cargo run --release --example share_peer -- publish testsrc://1280x720@30 cam1
//!   cargo run --release --example share_peer -- consume cam1 100 --report
//!
//! `publish URL NAME [--quota N] [--max N] [--report] [--latency] [--frames N] [--open-only]
//!   [--loop] [--cpu]`: opens URL (a file looped with `--loop`, on the CPU with `--cpu`),
//!   publishes it, prints `READY <pid>`, then takes every frame its own host would (`--report`:
//!   `F <seq> <hash>` for each, `--latency`: `L <us>` from decoder to host); after `--frames N`
//!   frames it prints the `S` line (with the decoder, `NVCAM_DECODER_*`, last) and `DONE`, and
//!   exits. `--open-only` opens URL and reads it without publishing (the benchmark's "every process
//!   opens the camera" row).
//! `consume NAME FRAMES [--hold K] [--clones C] [--report] [--then-hold] [--never-release]
//!   [--latency] [--lossless] [--seconds S]`: attaches, reads FRAMES frames (within S seconds)
//!   keeping the last K handles (1), printing `M <memory> <device>` of the first frame,
//!   `F <seq> <hash>` with `--report` and `L <us>` (publish to here) with `--latency`; then
//!   `S <decoded> <delivered> <dropped> <skipped> <state> <source_decoded>`, on a machine with a
//!   GPU `G <frames_copied> <device_allocs> <bytes_in_pools>` of GPU 0 in this process, and `DONE`.
//!   `--then-hold`: keeps K frames and C clones of each, prints `HOLDING`, then every 300 ms
//!   `HELD <n> same|changed` (the held frames' bytes against what they were) until killed.
//!   `--never-release`: keeps every frame it gets.
//!
//! `<hash>` is the FNV-1a 64 of the frame's NV12 bytes, tightly packed (`nvcam_frame_copy_nv12`
//! with pitch 0). Lines go to stdout, flushed each; errors to stderr with exit status 1.

use nvcam::*;
use std::ffi::CString;
use std::io::Write;
use std::time::{Duration, Instant};

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    // SAFETY: buf is writable for buf.len() bytes, the length nvcam_last_error is given.
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

fn check(what: &str, code: i32) {
    if code != NVCAM_OK {
        eprintln!("{what} failed: {code} {}", last_error());
        std::process::exit(1);
    }
}

fn say(line: String) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn hash(frame: u64) -> (u64, u64, u64) {
    let mut info = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
    // SAFETY: a writable info struct of the size it declares.
    check("nvcam_frame_info", unsafe { nvcam_frame_info(frame, &mut info) });
    let mut px = vec![0u8; info.nv12_size as usize];
    // SAFETY: px holds nv12_size bytes, the size given.
    check("nvcam_frame_copy_nv12", unsafe { nvcam_frame_copy_nv12(frame, px.as_mut_ptr(), 0, px.len() as u64) });
    (info.seq, fnv(&px), info.wallclock_ns)
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn flag(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

fn value(args: &[String], name: &str, default: u32) -> u32 {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| v.parse().expect("a number"))
}

fn open(url: &str, flags: u32, cpu: bool) -> u64 {
    // SAFETY: the options struct is plain data (zero is valid); then filled with the defaults.
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    // SAFETY: a writable options struct.
    check("nvcam_camera_options_init", unsafe { nvcam_camera_options_init(&mut o) });
    o.flags = flags;
    if cpu {
        o.device = NVCAM_DEVICE_CPU;
    }
    let u = CString::new(url).expect("url");
    let mut cam = 0u64;
    // SAFETY: a NUL-terminated URL, readable options, a writable handle.
    check("nvcam_camera_open", unsafe { nvcam_camera_open(u.as_ptr(), &o, &mut cam) });
    cam
}

fn stats(cam: u64) -> nvcam_camera_stats {
    let mut s = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
    // SAFETY: a writable stats struct of the size it declares.
    check("nvcam_camera_stats", unsafe { nvcam_camera_stats(cam, &mut s) });
    s
}

/// This process's use of GPU 0 (pools it allocated, bytes in its pools), where there is one.
fn gpu_stats() -> Option<nvcam_gpu_stats> {
    let mut g = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
    // SAFETY: a writable stats struct of the size it declares.
    (unsafe { nvcam_gpu_stats(0, &mut g) } == NVCAM_OK && g.device_count > 0).then_some(g)
}

fn publish(args: &[String]) {
    let (url, name) = (&args[0], &args[1]);
    let cam = open(url, if flag(args, "--loop") { NVCAM_OPEN_LOOP } else { 0 }, flag(args, "--cpu"));
    if !flag(args, "--open-only") {
        let n = CString::new(name.as_str()).expect("name");
        // SAFETY: a NUL-terminated name.
        check("nvcam_camera_publish", unsafe { nvcam_camera_publish(cam, n.as_ptr(), value(args, "--quota", 0), value(args, "--max", 0)) });
    }
    say(format!("READY {}", std::process::id()));
    let (report, latency) = (flag(args, "--report"), flag(args, "--latency"));
    let frames = value(args, "--frames", u32::MAX) as u64;
    let mut got = 0u64;
    while got < frames {
        let mut f = 0u64;
        // SAFETY: a writable handle.
        let r = unsafe { nvcam_camera_get_frame(cam, 1000, &mut f) };
        if r == NVCAM_OK {
            got += 1;
            if latency {
                say(format!("L {}", latency_us(f)));
            }
            if report {
                let (seq, h, _) = hash(f);
                say(format!("F {seq} {h:016x}"));
            }
            nvcam_frame_release(f);
        } else if r != NVCAM_E_TIMEOUT {
            eprintln!("get_frame: {r} {}", last_error());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let s = stats(cam);
    say(format!("S {} {} {} {} {} {} {}", s.frames_decoded, s.frames_delivered, s.frames_dropped, s.frames_skipped, s.state, s.source_frames_decoded, s.decoder));
    say("DONE".into());
    check("nvcam_camera_close", nvcam_camera_close(cam, 2000));
}

/// From the frame leaving its decoder (in whichever process decoded it) to this host having it.
fn latency_us(f: u64) -> u64 {
    let mut info = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
    // SAFETY: a writable info struct.
    check("nvcam_frame_info", unsafe { nvcam_frame_info(f, &mut info) });
    now_ns().saturating_sub(info.wallclock_ns) / 1000
}

fn consume(args: &[String]) {
    let name = &args[0];
    let frames: u64 = args[1].parse().expect("FRAMES");
    let hold = value(args, "--hold", 1).max(1) as usize;
    let clones = value(args, "--clones", 0);
    let (report, latency, never) = (flag(args, "--report"), flag(args, "--latency"), flag(args, "--never-release"));
    let flags = if flag(args, "--lossless") { NVCAM_OPEN_LOSSLESS } else { 0 };
    let cam = open(&format!("nvcam://{name}"), flags, false);
    let mut held: std::collections::VecDeque<u64> = Default::default();
    let mut got = 0u64;
    let end = Instant::now() + Duration::from_secs(value(args, "--seconds", 60) as u64);
    while got < frames && Instant::now() < end {
        let mut f = 0u64;
        // SAFETY: a writable handle.
        let r = unsafe { nvcam_camera_get_frame(cam, 1000, &mut f) };
        if r != NVCAM_OK {
            if r != NVCAM_E_TIMEOUT {
                eprintln!("get_frame: {r} {}", last_error());
                std::thread::sleep(Duration::from_millis(50));
            }
            continue;
        }
        got += 1;
        if got == 1 {
            let mut info = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
            // SAFETY: a writable info struct.
            check("nvcam_frame_info", unsafe { nvcam_frame_info(f, &mut info) });
            say(format!("M {} {}", info.memory, info.device));
        }
        if latency {
            say(format!("L {}", latency_us(f)));
        }
        if report {
            let (seq, h, _) = hash(f);
            say(format!("F {seq} {h:016x}"));
        }
        held.push_back(f);
        while !never && held.len() > hold {
            check("nvcam_frame_release", nvcam_frame_release(held.pop_front().expect("held")));
        }
    }
    let s = stats(cam);
    say(format!(
        "S {} {} {} {} {} {}",
        s.frames_decoded, s.frames_delivered, s.frames_dropped, s.frames_skipped, s.state, s.source_frames_decoded
    ));
    if let Some(g) = gpu_stats() {
        say(format!("G {} {} {}", g.frames_copied, g.device_allocs, g.bytes_in_pools));
    }
    say("DONE".into());
    if flag(args, "--then-hold") {
        for &f in held.iter() {
            for _ in 0..clones {
                let mut c = 0u64;
                // SAFETY: a writable handle.
                check("nvcam_frame_clone", unsafe { nvcam_frame_clone(f, &mut c) });
            }
        }
        say("HOLDING".into());
        // The held frames' bytes, again and again: whatever happens to the publisher, they stay.
        let first: Vec<u64> = held.iter().map(|&f| hash(f).1).collect();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now: Vec<u64> = held.iter().map(|&f| hash(f).1).collect();
            say(format!("HELD {} {}", now.len(), if now == first { "same" } else { "changed" }));
        }
    }
    for f in held {
        nvcam_frame_release(f);
    }
    check("nvcam_camera_close", nvcam_camera_close(cam, 2000));
}

fn main() {
    // A test that dies must not leave its processes behind.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with an integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    // SAFETY: NULL: the defaults.
    check("nvcam_init", unsafe { nvcam_init(std::ptr::null()) });
    match args.first().map(String::as_str) {
        Some("publish") if args.len() >= 3 => publish(&args[1..]),
        Some("consume") if args.len() >= 3 => consume(&args[1..]),
        _ => {
            eprintln!("usage: share_peer publish URL NAME [..] | consume NAME FRAMES [..] (see the file's header)");
            std::process::exit(2);
        }
    }
}
