//! The chaos soak: cameras of every kind (the test source, looped files, the
//! loopback RTSP server, which is killed and restarted) are opened, closed, reconnected and
//! force-released at random while host threads get, clone, copy, release and leak (5 %) frames.
//! It prevents the failures that only show under churn: a status the header does not document, a
//! held frame whose pixels change under the host (a slot reused while referenced), slots or
//! handles that never come back, threads or memory that outlive `nvcam_shutdown`, a leaked handle
//! that still works after it.
//!
//! Knobs (environment): `NVCAM_SOAK_SECONDS` (default 60; 20 under Wine), `NVCAM_SOAK_DEVICE`
//! (default -1, the CPU; the GPU machine runs 0), `NVCAM_SOAK_RTSP` (default 1 on Linux; the GPU
//! machine has no GStreamer, and under Wine a Windows process cannot manage the Linux server),
//! `NVCAM_SOAK_SEED`, `NVCAM_SOAK_CAMERAS` (most open at once, default 8), `NVCAM_SOAK_MIN_FPS`
//! (frames the hosts must get per second of soak, default 20; lower under compute-sanitizer).

mod common;
#[cfg(not(windows))]
#[path = "support/rtsp.rs"]
mod rtsp;

use common::*;
use nvcam::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const GUARD: usize = 32;
const GUARD_BYTE: u8 = 0x5a;

fn code_name(r: i32) -> String {
    ffi::status::describe(r).map(|(n, _)| n.to_string()).unwrap_or_else(|| format!("?{r}"))
}

fn env_num(name: &str, default: i64) -> i64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

/// What every thread shares.
struct Soak {
    doc: BTreeMap<String, BTreeSet<i32>>,
    /// (function, status) → count.
    seen: Mutex<BTreeMap<(&'static str, i32), u64>>,
    /// Cameras open now, and some closed ones (their handles must fail cleanly).
    open: Mutex<Vec<u64>>,
    closed: Mutex<Vec<u64>>,
    /// Handles the hosts never released.
    leaked: Mutex<Vec<u64>>,
    stop: AtomicBool,
    frames: AtomicU64,
    copies: AtomicU64,
    held_checked: AtomicU64,
    changed: Mutex<Vec<String>>,
    guard_broken: AtomicU64,
}

impl Soak {
    fn note(&self, f: &'static str, r: i32) -> i32 {
        *self.seen.lock().unwrap().entry((f, r)).or_default() += 1;
        r
    }
    fn any_camera(&self, rng: &mut Rng) -> u64 {
        if rng.percent(3) {
            let c = self.closed.lock().unwrap();
            if !c.is_empty() {
                return c[rng.below(c.len() as u64) as usize];
            }
        }
        let o = self.open.lock().unwrap();
        if o.is_empty() {
            0
        } else {
            o[rng.below(o.len() as u64) as usize]
        }
    }
}

/// Copies `frame` into a buffer with guard bytes; the pixels' hash, or the status.
fn copy_hash(s: &Soak, frame: u64, info: &nvcam_frame_info) -> Result<u64, i32> {
    let n = info.nv12_size as usize;
    let mut buf = vec![GUARD_BYTE; n + 2 * GUARD];
    // SAFETY (test): the buffer holds n bytes after the leading guard.
    let r = s.note("nvcam_frame_copy_nv12", unsafe {
        nvcam_frame_copy_nv12(frame, buf.as_mut_ptr().add(GUARD), 0, n as u64)
    });
    if buf[..GUARD].iter().chain(&buf[GUARD + n..]).any(|&b| b != GUARD_BYTE) {
        s.guard_broken.fetch_add(1, Ordering::Relaxed);
    }
    if r != NVCAM_OK {
        return Err(r);
    }
    s.copies.fetch_add(1, Ordering::Relaxed);
    Ok(fnv(&buf[GUARD..GUARD + n]))
}

fn frame_info(s: &Soak, f: u64) -> Result<nvcam_frame_info, i32> {
    let mut i = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
    match s.note("nvcam_frame_info", unsafe { nvcam_frame_info(f, &mut i) }) {
        NVCAM_OK => Ok(i),
        r => Err(r),
    }
}

fn release_or_leak(s: &Soak, rng: &mut Rng, f: u64) {
    if rng.percent(5) {
        s.leaked.lock().unwrap().push(f);
    } else {
        s.note("nvcam_frame_release", nvcam_frame_release(f));
    }
}

/// A held clone: its pixels must not change while it is held.
struct Held {
    frame: u64,
    hash: u64,
    what: String,
}

/// One host thread: takes frames from random cameras, copies, clones, holds, releases, leaks.
fn host(s: Arc<Soak>, seed: u64) {
    let mut rng = Rng(seed);
    let mut held: Vec<Held> = Vec::new();
    let check = |s: &Soak, h: &Held| {
        if let Ok(i) = frame_info(s, h.frame) {
            if let Ok(now) = copy_hash(s, h.frame, &i) {
                s.held_checked.fetch_add(1, Ordering::Relaxed);
                if now != h.hash {
                    s.changed.lock().unwrap().push(h.what.clone());
                }
            }
        }
    };
    while !s.stop.load(Ordering::Acquire) {
        let cam = s.any_camera(&mut rng);
        if cam == 0 {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        let mut f = 0u64;
        let r = s.note("nvcam_camera_get_frame", unsafe { nvcam_camera_get_frame(cam, rng.below(60) as u32, &mut f) });
        if r != NVCAM_OK {
            if r != NVCAM_E_TIMEOUT {
                std::thread::sleep(Duration::from_millis(2));
            }
            continue;
        }
        s.frames.fetch_add(1, Ordering::Relaxed);
        if rng.percent(20) {
            let mut st = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
            s.note("nvcam_camera_stats", unsafe { nvcam_camera_stats(cam, &mut st) });
        }
        if let Ok(info) = frame_info(&s, f) {
            if rng.percent(35) {
                let mut c = 0u64;
                if s.note("nvcam_frame_clone", unsafe { nvcam_frame_clone(f, &mut c) }) == NVCAM_OK {
                    match copy_hash(&s, c, &info) {
                        Ok(hash) => held.push(Held { frame: c, hash, what: format!("camera {cam:#x} frame {}", info.seq) }),
                        Err(_) => release_or_leak(&s, &mut rng, c),
                    }
                }
            } else if rng.percent(30) {
                let _ = copy_hash(&s, f, &info);
            }
        }
        release_or_leak(&s, &mut rng, f);
        while held.len() > 3 || (!held.is_empty() && rng.percent(10)) {
            let h = held.remove(0);
            check(&s, &h);
            release_or_leak(&s, &mut rng, h.frame);
        }
    }
    for h in held.drain(..) {
        check(&s, &h);
        s.note("nvcam_frame_release", nvcam_frame_release(h.frame));
    }
}

struct Sources {
    file: String,
    #[cfg(not(windows))]
    rtsp: Option<rtsp::RtspServer>,
}

impl Sources {
    fn url(&self, rng: &mut Rng) -> (String, u32) {
        #[cfg(not(windows))]
        if let Some(srv) = &self.rtsp {
            if rng.percent(40) {
                return (srv.url(), 0);
            }
        }
        if rng.percent(50) {
            ("testsrc://320x240@30".into(), 0)
        } else {
            (self.file.clone(), NVCAM_OPEN_LOOP)
        }
    }
}

fn open_camera(s: &Soak, src: &Sources, rng: &mut Rng, device: i32) {
    let (url, flags) = src.url(rng);
    let mut o = options(flags | if rng.percent(30) { NVCAM_OPEN_ASYNC } else { 0 });
    o.device = device;
    o.pool_slots = 2 + rng.below(5) as u32;
    o.open_timeout_ms = 3000;
    o.stall_timeout_ms = 2000;
    let c = std::ffi::CString::new(url).unwrap();
    let mut cam = 0u64;
    if s.note("nvcam_camera_open", unsafe { nvcam_camera_open(c.as_ptr(), &o, &mut cam) }) == NVCAM_OK {
        s.open.lock().unwrap().push(cam);
    }
}

fn close_camera(s: &Soak, rng: &mut Rng) {
    let cam = {
        let mut o = s.open.lock().unwrap();
        if o.is_empty() {
            return;
        }
        let i = rng.below(o.len() as u64) as usize;
        o.swap_remove(i)
    };
    s.note("nvcam_camera_close", nvcam_camera_close(cam, 3000));
    let mut c = s.closed.lock().unwrap();
    c.push(cam);
    if c.len() > 16 {
        c.remove(0);
    }
}

/// Device memory free on `device` (the primary context retained for the measurement).
#[cfg(not(windows))]
fn device_free_bytes(device: i32) -> Option<u64> {
    use cudarc::driver::sys;
    if device < 0 || !gpu_usable() {
        return None;
    }
    // SAFETY (test): plain driver calls on a retained primary context, pushed and popped here.
    unsafe {
        let mut dev = 0;
        if sys::cuDeviceGet(&mut dev, device) != sys::CUresult::CUDA_SUCCESS {
            return None;
        }
        let mut ctx = std::ptr::null_mut();
        if sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) != sys::CUresult::CUDA_SUCCESS {
            return None;
        }
        sys::cuCtxPushCurrent_v2(ctx);
        let (mut free, mut total) = (0usize, 0usize);
        let r = sys::cuMemGetInfo_v2(&mut free, &mut total);
        let mut popped = std::ptr::null_mut();
        sys::cuCtxPopCurrent_v2(&mut popped);
        // The retain is kept: the measurement before init and after shutdown sees the same context.
        (r == sys::CUresult::CUDA_SUCCESS).then_some(free as u64)
    }
}

#[cfg(windows)]
fn device_free_bytes(_device: i32) -> Option<u64> {
    None
}

#[test]
fn chaos_soak_keeps_every_invariant() {
    let seconds = env_num("NVCAM_SOAK_SECONDS", if cfg!(windows) { 20 } else { 60 }) as u64;
    let device = env_num("NVCAM_SOAK_DEVICE", -1) as i32;
    let seed = env_num("NVCAM_SOAK_SEED", 0x736f_616b) as u64;
    let max_cams = env_num("NVCAM_SOAK_CAMERAS", 8) as usize;
    let want_rtsp = !cfg!(windows) && env_num("NVCAM_SOAK_RTSP", 1) == 1;
    if device >= 0 && !need_gpu!(gpu_usable(), "CUDA device") {
        return;
    }
    let threads0 = threads_named("nvcam");
    let dev_free0 = device_free_bytes(device);

    let file = match std::env::var_os("BUNDLE_WITH") {
        // The GPU machine has no ffmpeg CLI: the bundle's clip.
        Some(w) => std::path::PathBuf::from(w).join("fixtures/gpu-h264-640x360.mp4"),
        None => clip("h264_bframes_320x240.mp4", "320x240", 45, "libx264", &["-bf", "3", "-g", "15"]),
    };
    assert!(file.exists(), "{} is missing", file.display());
    #[cfg(not(windows))]
    let mut src = Sources {
        file: file.to_string_lossy().into_owned(),
        rtsp: want_rtsp.then(|| rtsp::RtspServer::start(rtsp::Stream::default().keyint(15))),
    };
    #[cfg(windows)]
    let src = Sources { file: file.to_string_lossy().into_owned() };
    let _ = want_rtsp;

    init();
    let s = Arc::new(Soak {
        doc: documented(),
        seen: Mutex::default(),
        open: Mutex::default(),
        closed: Mutex::default(),
        leaked: Mutex::default(),
        stop: AtomicBool::new(false),
        frames: AtomicU64::new(0),
        copies: AtomicU64::new(0),
        held_checked: AtomicU64::new(0),
        changed: Mutex::default(),
        guard_broken: AtomicU64::new(0),
    });
    let mut rng = Rng(seed);
    for _ in 0..max_cams / 2 {
        open_camera(&s, &src, &mut rng, device);
    }
    let hosts: Vec<_> = (0..4u64)
        .map(|i| {
            let s = s.clone();
            std::thread::Builder::new().name(format!("soak-host-{i}")).spawn(move || host(s, seed ^ ((i + 1) * 0x1234_5678))).unwrap()
        })
        .collect();

    // The chaos: one action every 50-350 ms.
    let t0 = Instant::now();
    let end = t0 + Duration::from_secs(seconds);
    let warm_at = t0 + Duration::from_secs(seconds / 4);
    let (mut rss_warm, mut rss_peak_after_warm) = (None, 0u64);
    let mut threads_peak = 0usize;
    let (mut opens, mut closes, mut reconnects, mut forced) = (0u32, 0u32, 0u32, 0u32);
    // Counted only where the RTSP server runs (not under Wine).
    #[cfg_attr(windows, allow(unused_mut))]
    let mut restarts = 0u32;
    while Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50 + rng.below(300)));
        let n_open = s.open.lock().unwrap().len();
        match rng.below(100) {
            0..=29 if n_open < max_cams => {
                open_camera(&s, &src, &mut rng, device);
                opens += 1;
            }
            0..=49 if n_open > 1 => {
                close_camera(&s, &mut rng);
                closes += 1;
            }
            50..=69 => {
                let cam = s.any_camera(&mut rng);
                s.note("nvcam_camera_reconnect", nvcam_camera_reconnect(cam));
                reconnects += 1;
            }
            70..=77 => {
                let cam = s.any_camera(&mut rng);
                let mut n = 0u32;
                s.note("nvcam_registry_force_release_owner", unsafe { nvcam_registry_force_release_owner(cam, &mut n) });
                forced += 1;
            }
            78..=85 => {
                #[cfg(not(windows))]
                if let Some(srv) = src.rtsp.as_mut() {
                    srv.kill();
                    std::thread::sleep(Duration::from_millis(rng.below(1500)));
                    srv.restart(None);
                    restarts += 1;
                }
            }
            _ => {
                let mut g = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
                s.note("nvcam_gpu_stats", unsafe { nvcam_gpu_stats(device, &mut g) });
            }
        }
        // gst-rtsp-server sometimes aborts when several clients set up its media at once: the
        // test's server failing, not nvcam; start it again.
        #[cfg(not(windows))]
        if let Some(srv) = src.rtsp.as_mut() {
            if srv.health().is_err() {
                srv.restart(None);
                restarts += 1;
            }
        }
        threads_peak = threads_peak.max(threads_named("nvcam"));
        if Instant::now() >= warm_at {
            let r = rss_bytes();
            match rss_warm {
                None => rss_warm = Some(r),
                Some(_) => rss_peak_after_warm = rss_peak_after_warm.max(r),
            }
        }
    }
    s.stop.store(true, Ordering::Release);
    for h in hosts {
        h.join().expect("a host thread panicked");
    }

    // Half the cameras: force-release what the hosts leaked, then every slot and handle is free
    // (but the frame that waits to be taken, which a streaming camera always has).
    let open_now = s.open.lock().unwrap().clone();
    let (released, kept) = open_now.split_at(open_now.len() / 2);
    for &cam in released {
        let mut n = 0u32;
        assert_eq!(unsafe { nvcam_registry_force_release_owner(cam, &mut n) }, NVCAM_OK, "{}", last_error());
        if let Ok(f) = get_frame(cam, 0) {
            release(f).unwrap();
        }
        let st = stats(cam);
        assert_eq!(st.live_handles, 0, "camera {cam:#x}: handles left after force-release");
        assert!(st.pool_slots_in_use <= 1, "camera {cam:#x}: {} slots in use after force-release", st.pool_slots_in_use);
        close(cam, 3000).unwrap();
    }
    let rss_end = rss_bytes();
    let leaked = s.leaked.lock().unwrap().clone();
    let live_before_shutdown = kept.len();

    // The other half stays open, with leaked handles outstanding, into shutdown.
    assert_eq!(nvcam_shutdown(5000), NVCAM_OK, "{}", last_error());
    for &h in &leaked {
        let r = nvcam_frame_release(h);
        assert!(
            matches!(r, NVCAM_E_STALE_HANDLE | NVCAM_E_NOT_INITIALIZED),
            "leaked handle {h:#x} after shutdown: {r} ({})",
            last_error()
        );
    }
    init();
    for &h in &leaked {
        let mut i = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
        let r = unsafe { nvcam_frame_info(h, &mut i) };
        assert_eq!(r, NVCAM_E_STALE_HANDLE, "leaked handle {h:#x} after shutdown and a new init");
    }
    assert_eq!(nvcam_shutdown(5000), NVCAM_OK);
    let threads_ok = wait_until(Duration::from_secs(5), || threads_named("nvcam") <= threads0);

    // The report, then the invariants.
    let seen = s.seen.lock().unwrap().clone();
    let calls: u64 = seen.values().sum();
    let mut undocumented = Vec::new();
    let mut by_fn: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (&(f, r), &n) in &seen {
        by_fn.entry(f).or_default().push(format!("{}×{n}", code_name(r)));
        if !s.doc.get(f).is_some_and(|d| d.contains(&r)) {
            undocumented.push(format!("{f} returned {} ({n}×)", code_name(r)));
        }
    }
    let rss_warm = rss_warm.unwrap_or(rss_end);
    println!(
        "soak: {seconds} s, device {device}, rtsp {}, {calls} calls, {} frames, {} copies, {} held clones re-checked, \
         {} handles leaked; chaos: {opens} opens, {closes} closes, {reconnects} reconnects, {forced} force-releases, \
         {restarts} server restarts; {live_before_shutdown} cameras open at shutdown",
        want_rtsp,
        s.frames.load(Ordering::Relaxed),
        s.copies.load(Ordering::Relaxed),
        s.held_checked.load(Ordering::Relaxed),
        leaked.len(),
    );
    println!(
        "soak: RSS after warm-up {} MiB, peak after {} MiB, at the end {} MiB; nvcam threads {} before init, {} at most, {} after shutdown",
        rss_warm >> 20,
        rss_peak_after_warm >> 20,
        rss_end >> 20,
        threads0,
        threads_peak,
        threads_named("nvcam")
    );
    for (f, v) in &by_fn {
        println!("soak: {f}: {}", v.join(", "));
    }
    assert!(undocumented.is_empty(), "statuses the header does not document: {undocumented:#?}");
    assert!(s.changed.lock().unwrap().is_empty(), "held frames whose pixels changed: {:?}", s.changed.lock().unwrap());
    assert_eq!(s.guard_broken.load(Ordering::Relaxed), 0, "a copy wrote outside its buffer");
    assert!(threads_peak > threads0, "no nvcam thread was ever seen: the thread count checks nothing");
    assert!(threads_ok, "nvcam threads {} after shutdown, {} before init", threads_named("nvcam"), threads0);
    assert!(
        rss_peak_after_warm.max(rss_end) <= rss_warm + (96 << 20),
        "RSS grew after warm-up: {} MiB -> {} MiB",
        rss_warm >> 20,
        rss_peak_after_warm.max(rss_end) >> 20
    );
    // Something happened: the soak must not pass by doing nothing.
    let min_fps = env_num("NVCAM_SOAK_MIN_FPS", 20) as u64;
    assert!(s.frames.load(Ordering::Relaxed) > seconds * min_fps, "only {} frames", s.frames.load(Ordering::Relaxed));
    assert!(s.held_checked.load(Ordering::Relaxed) > seconds, "only {} held clones re-checked", s.held_checked.load(Ordering::Relaxed));
    assert!(opens > 0 && closes > 0 && reconnects > 0 && !leaked.is_empty());
    if let (Some(before), Some(after)) = (dev_free0, device_free_bytes(device)) {
        println!("soak: device memory free before init {} MiB, after shutdown {} MiB", before >> 20, after >> 20);
        assert!(after + (16 << 20) >= before, "device memory not back: {} MiB free before init, {} MiB after shutdown", before >> 20, after >> 20);
    }
}
