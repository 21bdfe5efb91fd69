//! A fixed-seed, time-bounded fuzzer of the C API, as a hostile host calls it.
//!
//! Several threads call random exports with live, released, wrong-type and made-up handles, NULL
//! and misaligned pointers, zero, huge and overflowing sizes and pitches, random option strings
//! and URLs, while one thread interleaves `nvcam_shutdown`/`nvcam_init`. Every returned status
//! must be one that the header's `Returns:` line documents for that function; every buffer handed
//! to the library has guard bytes that must stay untouched. At the end: shutdown, camera threads
//! back to baseline, every handle the library ever issued stale (also after a re-init), RSS within
//! a generous bound of its level after the warm-up. The recording exports take part (recording
//! handles also where camera and frame handles go, and the reverse; double releases), and a test
//! fails when an export of the header is not called here at all.
//!
//! Knobs (environment): `NVCAM_FUZZ_SEED` (default below), `NVCAM_FUZZ_SECONDS` (default 60),
//! `NVCAM_FUZZ_CALLS` (default 20,000,000, about 20 s on 2 cores; the run stops at whichever limit comes first),
//! `NVCAM_FUZZ_THREADS` (default 4).

mod common;
use common::*;
use nvcam::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const DEFAULT_SEED: u64 = 0x6e76_6361_6d5f_667a; // "nvcam_fz"
const GUARD: usize = 64;
const GUARD_BYTE: u8 = 0xa5;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| {
        let v = v.trim();
        v.strip_prefix("0x").map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
    }).unwrap_or(default)
}

/// A byte buffer with guard bytes on both sides, its start optionally misaligned.
struct Guarded {
    mem: Vec<u64>,
    off: usize,
    len: usize,
}

impl Guarded {
    fn new(len: usize, misalign: usize) -> Guarded {
        let words = (2 * GUARD + len + misalign).div_ceil(8) + 1;
        let mut g = Guarded { mem: vec![0; words], off: GUARD + misalign, len };
        g.bytes_mut().fill(GUARD_BYTE);
        g
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.mem.len() * 8;
        // SAFETY (test): the Vec<u64> owns n bytes.
        unsafe { std::slice::from_raw_parts_mut(self.mem.as_mut_ptr().cast::<u8>(), n) }
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY (test): as above.
        unsafe { std::slice::from_raw_parts(self.mem.as_ptr().cast::<u8>(), self.mem.len() * 8) }
    }
    fn ptr(&mut self) -> *mut u8 {
        let off = self.off;
        self.bytes_mut()[off..].as_mut_ptr()
    }
    /// Whether every byte outside `[off, off + len)` still holds the guard pattern.
    fn intact(&self) -> bool {
        let b = self.bytes();
        b[..self.off].iter().chain(&b[self.off + self.len..]).all(|&x| x == GUARD_BYTE)
    }
    /// A struct-sized aligned buffer whose first u32 is `struct_size`.
    fn with_struct_size(len: usize, struct_size: u32) -> Guarded {
        let mut g = Guarded::new(len, 0);
        let p = g.ptr();
        // SAFETY (test): 8-aligned (GUARD is a multiple of 8), `len` ≥ 4 writable bytes.
        unsafe { p.cast::<u32>().write(struct_size) };
        g
    }
}

#[derive(Default)]
struct Pool {
    cams: Vec<u64>,
    frames: Vec<u64>,
    dead: Vec<u64>,
    /// Live recording handles (released ones go to `dead`).
    recs: Vec<u64>,
    /// Every handle the library ever issued (camera, frame): all must be stale at the end.
    issued: Vec<(u64, bool)>,
    /// Every recording handle the library issued: likewise.
    recs_issued: Vec<u64>,
    /// LabVIEW instance slots' values: reserved, and unreserved (stale).
    lv_live: Vec<usize>,
    lv_dead: Vec<usize>,
}

impl Pool {
    fn bury(&mut self, h: u64) {
        if self.dead.len() >= 512 {
            let i = (h as usize) % self.dead.len();
            self.dead[i] = h;
        } else {
            self.dead.push(h);
        }
    }
}

struct Shared {
    pool: Mutex<Pool>,
    doc: BTreeMap<String, BTreeSet<i32>>,
    violations: Mutex<BTreeMap<(String, i32), (u64, String)>>,
    calls: AtomicU64,
    stop: AtomicBool,
    guard_failures: Mutex<Vec<String>>,
    opens: AtomicU64,
    opens_ok: AtomicU64,
    frames_got: AtomicU64,
    cycles: AtomicU64,
    /// Copies of a live frame: into a real buffer (OK), and overflowing pitches refused.
    copies_ok: AtomicU64,
    pitch_refused: AtomicU64,
    last_fn: Vec<Mutex<&'static str>>,
    live_cams: AtomicUsize,
    /// Recordings started (OK) and released twice (the second refused as stale).
    recs_ok: AtomicU64,
    double_releases: AtomicU64,
}

static CALLBACKS: AtomicU64 = AtomicU64::new(0);

unsafe extern "C" fn log_cb(_level: i32, msg: *const c_char, user: *mut c_void) {
    if !msg.is_null() && user as usize == 0x1234 {
        CALLBACKS.fetch_add(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// Records one call's status and checks it against the header.
    fn check(&self, name: &'static str, code: i32) -> i32 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let ok = self.doc.get(name).unwrap_or_else(|| panic!("{name} not in header")).contains(&code);
        if !ok {
            let text = last_error();
            let mut v = self.violations.lock().unwrap();
            let e = v.entry((name.to_string(), code)).or_insert((0, text));
            e.0 += 1;
        }
        code
    }
    fn guard(&self, name: &str, g: &Guarded) {
        if !g.intact() {
            self.guard_failures.lock().unwrap().push(format!("{name}: guard bytes changed (len {}, off {})", g.len, g.off - GUARD));
        }
    }
    /// A recording handle to pass: live, dead, a camera's or a frame's, or made up.
    fn rec_handle(&self, r: &mut Rng) -> u64 {
        let p = self.pool.lock().unwrap();
        match r.below(100) {
            0..=44 if !p.recs.is_empty() => *r.pick(&p.recs),
            45..=59 if !p.dead.is_empty() => *r.pick(&p.dead),
            60..=67 if !p.cams.is_empty() => *r.pick(&p.cams),
            68..=74 if !p.frames.is_empty() => *r.pick(&p.frames),
            75..=79 => 0,
            80..=84 if !p.recs.is_empty() => *r.pick(&p.recs) ^ (1 << r.below(64)),
            85..=89 => u64::MAX - r.below(4),
            _ => r.next() >> r.below(2),
        }
    }
    /// A handle to pass: live, dead, of the other kind (or a recording's), or made up.
    fn handle(&self, r: &mut Rng, want_cam: bool) -> u64 {
        let p = self.pool.lock().unwrap();
        let (mine, other) = if want_cam { (&p.cams, &p.frames) } else { (&p.frames, &p.cams) };
        match r.below(100) {
            0..=49 if !mine.is_empty() => *r.pick(mine),
            50..=64 if !p.dead.is_empty() => *r.pick(&p.dead),
            65..=71 if !other.is_empty() => *r.pick(other),
            72..=74 if !p.recs.is_empty() => *r.pick(&p.recs),
            75..=79 => 0,
            80..=84 if !mine.is_empty() => *r.pick(mine) ^ (1 << r.below(64)),
            85..=89 => u64::MAX - r.below(4),
            _ => r.next() >> r.below(2),
        }
    }
}

#[path = "fuzz_api/calls_records.rs"]
mod calls_records;
#[path = "fuzz_api/cameras_frames.rs"]
mod cameras_frames;
use calls_records::*;
use cameras_frames::*;

fn worker(sh: Arc<Shared>, id: usize, seed: u64, end: Instant, max_calls: u64) {
    let mut r = Rng(seed ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut since_open = 0u64;
    let mut since_cycle = 0u64;
    let mut n = 0u64;
    while !sh.stop.load(Ordering::Relaxed) {
        n += 1;
        if n.is_multiple_of(256) && (Instant::now() >= end || sh.calls.load(Ordering::Relaxed) >= max_calls) {
            sh.stop.store(true, Ordering::Relaxed);
            break;
        }
        since_open += 1;
        since_cycle += 1;
        // Expensive calls are rare, so the cheap ones dominate: a real open or close at most every 2,000
        // calls of a thread (at most 4 live cameras), init/shutdown every ~50,000 calls of thread 0.
        if id == 0 && since_cycle > 50_000 && r.chance(1000) {
            *sh.last_fn[id].lock().unwrap() = "shutdown/init";
            op_lifecycle(&sh, &mut r);
            since_cycle = 0;
        } else if since_open > 2_000 && r.chance(20) {
            since_open = 0;
            if sh.live_cams.load(Ordering::Relaxed) >= 4 || r.chance(3) {
                *sh.last_fn[id].lock().unwrap() = "close";
                op_close_live(&sh, &mut r);
            } else {
                *sh.last_fn[id].lock().unwrap() = "open";
                op_open(&sh, &mut r, true);
            }
        } else {
            op_cheap(&sh, &mut r);
        }
    }
}

/// Exports the fuzzer does not call through `Shared::check`, and why.
const NOT_FUZZED: &[(&str, &str)] = &[("nvcam_abi_version", "takes nothing, returns a number: asserted equal to NVCAM_ABI_VERSION in op_cheap")];

/// A new export that the fuzzer never calls would go unfuzzed without anyone noticing: every
/// function of the header must be named (as the string `sh.check` records) in the fuzzer's files.
#[test]
fn every_export_of_the_header_is_fuzzed() {
    let src = [include_str!("fuzz_api.rs"), include_str!("fuzz_api/cameras_frames.rs"), include_str!("fuzz_api/calls_records.rs")].concat();
    let missing: Vec<String> = documented()
        .into_keys()
        .filter(|n| !src.contains(&format!("\"{n}\"")) && !NOT_FUZZED.iter().any(|(x, _)| x == n))
        .collect();
    assert!(missing.is_empty(), "exports of include/nvcam.h the fuzzer never calls (add them to op_cheap, or to NOT_FUZZED with why): {missing:?}");
}

#[test]
fn c_api_fuzz_keeps_every_status_documented_and_leaves_nothing_behind() {
    let seed = env_u64("NVCAM_FUZZ_SEED", DEFAULT_SEED);
    let seconds = env_u64("NVCAM_FUZZ_SECONDS", 60);
    let max_calls = env_u64("NVCAM_FUZZ_CALLS", 20_000_000);
    let threads = env_u64("NVCAM_FUZZ_THREADS", 4).max(1) as usize;
    println!("fuzz_api: seed {seed:#x}, up to {seconds} s or {max_calls} calls, {threads} threads");
    let doc = documented();
    let rec_dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz_api-rec");
    let _ = std::fs::remove_dir_all(&rec_dir);
    std::fs::create_dir_all(&rec_dir).unwrap();
    let cwd_before = part_files(Path::new("."));
    let h264 = (!cfg!(windows)).then(|| clip("fuzz-h264-64x48.mp4", "64x48", 300, "libx264", &["-g", "15"]).to_str().unwrap().to_string());
    H264_CLIP.set(h264).unwrap();
    let baseline_threads = threads_named("nvcam-cam");
    // SAFETY (test): NULL path, a valid level.
    assert_eq!(unsafe { nvcam_log_init(std::ptr::null(), NVCAM_LOG_WARN) }, NVCAM_OK);
    // SAFETY (test): NULL = defaults.
    assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);

    let sh = Arc::new(Shared {
        pool: Mutex::new(Pool::default()),
        doc,
        violations: Mutex::new(BTreeMap::new()),
        calls: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        guard_failures: Mutex::new(Vec::new()),
        opens: AtomicU64::new(0),
        opens_ok: AtomicU64::new(0),
        frames_got: AtomicU64::new(0),
        cycles: AtomicU64::new(0),
        copies_ok: AtomicU64::new(0),
        pitch_refused: AtomicU64::new(0),
        last_fn: (0..threads).map(|_| Mutex::new("cheap")).collect(),
        live_cams: AtomicUsize::new(0),
        recs_ok: AtomicU64::new(0),
        double_releases: AtomicU64::new(0),
    });
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let hs: Vec<_> = (0..threads)
        .map(|i| {
            let sh = sh.clone();
            std::thread::Builder::new().name(format!("fuzz-{i}")).spawn(move || worker(sh, i, seed, end, max_calls)).unwrap()
        })
        .collect();

    // Watchdog and RSS sampling: a thread that makes no progress for 60 s is a hang.
    let mut warm_rss = None;
    let mut last = (0u64, Instant::now());
    while !hs.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(100));
        let c = sh.calls.load(Ordering::Relaxed);
        if warm_rss.is_none() && (c >= max_calls / 10 || start.elapsed() >= Duration::from_secs(seconds / 10)) {
            warm_rss = Some(rss_bytes());
        }
        if c != last.0 {
            last = (c, Instant::now());
        } else if last.1.elapsed() > Duration::from_secs(60) {
            let fns: Vec<&str> = sh.last_fn.iter().map(|m| *m.lock().unwrap()).collect();
            eprintln!("fuzz_api: HANG: no call returned for 60 s after {c} calls (threads last in {fns:?}); aborting");
            std::process::abort();
        }
    }
    for h in hs {
        h.join().expect("a fuzz thread panicked (see above)");
    }
    let elapsed = start.elapsed();
    let calls = sh.calls.load(Ordering::Relaxed);

    // The end: shutdown leaves no thread, no live handle.
    let code = nvcam_shutdown(10_000);
    assert!(code == NVCAM_OK || code == NVCAM_E_NOT_INITIALIZED, "final shutdown: {code} {}", last_error());
    assert!(
        wait_until(Duration::from_secs(10), || threads_named("nvcam-cam") == baseline_threads),
        "camera threads after shutdown: {} (baseline {baseline_threads})",
        threads_named("nvcam-cam")
    );
    let issued = std::mem::take(&mut sh.pool.lock().unwrap().issued);
    let stale = |when: &str| {
        for &(h, is_cam) in &issued {
            let code = if is_cam {
                let mut s = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
                // SAFETY (test): a live, sized struct.
                unsafe { nvcam_camera_stats(h, &mut s) }
            } else {
                let mut i = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
                // SAFETY (test): a live, sized struct.
                unsafe { nvcam_frame_info(h, &mut i) }
            };
            assert_eq!(code, NVCAM_E_STALE_HANDLE, "{when}: handle {h:#x} ({}) is not stale", if is_cam { "camera" } else { "frame" });
        }
    };
    stale("after shutdown");
    let recs_issued = std::mem::take(&mut sh.pool.lock().unwrap().recs_issued);
    let recs_stale = |when: &str| {
        for &h in &recs_issued {
            // SAFETY (test): a zeroed plain C struct, sized.
            let mut st: nvcam_record_status = unsafe { std::mem::zeroed() };
            st.struct_size = std::mem::size_of::<nvcam_record_status>() as u32;
            // SAFETY (test): a live, sized struct.
            let code = unsafe { nvcam_record_status(h, &mut st) };
            assert_eq!(code, NVCAM_E_STALE_HANDLE, "{when}: recording handle {h:#x} is not stale");
        }
    };
    recs_stale("after shutdown");
    assert!(
        wait_until(Duration::from_secs(10), || threads_named("nvcam-rec") == 0),
        "recording writer threads after shutdown: {}",
        threads_named("nvcam-rec")
    );
    // SAFETY (test): NULL = defaults.
    assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);
    stale("after a re-init");
    recs_stale("after a re-init");
    assert_eq!(nvcam_shutdown(10_000), NVCAM_OK);
    let end_rss = rss_bytes();
    // Every recording ended by a stop, a release, a close or shutdown is a finished file: no
    // `.part` is left in the test's folder, and none was written into the working folder.
    let left = part_files(&rec_dir);
    assert!(left.is_empty(), "recordings left .part files: {left:?}");
    let stray: Vec<_> = part_files(Path::new(".")).into_iter().filter(|p| !cwd_before.contains(p)).collect();
    assert!(stray.is_empty(), "the fuzz wrote .part files into the working folder: {stray:?}");

    let v = sh.violations.lock().unwrap();
    let g = sh.guard_failures.lock().unwrap();
    println!(
        "fuzz_api: {calls} calls in {:.1} s ({:.0} calls/s), seed {seed:#x}, {threads} threads; real opens {} ({} OK), frames {}, copies {} OK, \
         overflowing pitches refused {}, \
         init/shutdown cycles {}, handles issued {}, recordings started {} (released twice {}), log callbacks {}, RSS warm {:.1} MiB -> end {:.1} MiB",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        sh.opens.load(Ordering::Relaxed),
        sh.opens_ok.load(Ordering::Relaxed),
        sh.frames_got.load(Ordering::Relaxed),
        sh.copies_ok.load(Ordering::Relaxed),
        sh.pitch_refused.load(Ordering::Relaxed),
        sh.cycles.load(Ordering::Relaxed),
        issued.len(),
        sh.recs_ok.load(Ordering::Relaxed),
        sh.double_releases.load(Ordering::Relaxed),
        CALLBACKS.load(Ordering::Relaxed),
        warm_rss.unwrap_or(0) as f64 / 1048576.0,
        end_rss as f64 / 1048576.0,
    );
    for ((f, code), (n, text)) in v.iter() {
        eprintln!("UNDOCUMENTED: {f} returned {code} ({n}x), e.g. {text}");
    }
    assert!(v.is_empty(), "{} undocumented (function, status) pairs (see above)", v.len());
    assert!(g.is_empty(), "guard bytes changed: {:?}", &g[..g.len().min(10)]);
    let warm = warm_rss.unwrap_or(end_rss);
    assert!(end_rss <= warm + 128 * 1048576, "RSS grew from {warm} to {end_rss} bytes after the warm-up");
}
