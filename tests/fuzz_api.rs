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

fn text_len(r: &mut Rng) -> (usize, i32) {
    match r.below(10) {
        0 => (0, 0),
        1 => (0, -1 - r.below(1000) as i32),
        2 => (0, i32::MIN),
        3 => (1, 1),
        4..=5 => {
            let n = 1 + r.below(16) as usize;
            (n, n as i32)
        }
        _ => {
            let n = 16 + r.below(600) as usize;
            (n, n as i32)
        }
    }
}

/// A text buffer call: NULL or a guarded buffer of a truthful `len` (or a non-positive `len`).
fn text_call(sh: &Shared, r: &mut Rng, name: &'static str, f: impl FnOnce(*mut c_char, i32) -> i32) {
    let (n, len) = text_len(r);
    if r.chance(8) {
        sh.check(name, f(std::ptr::null_mut(), len));
        return;
    }
    let mut g = Guarded::new(n, r.below(8) as usize);
    let code = sh.check(name, f(g.ptr().cast(), len));
    // A call given no room (nvcam_log_pop asking only for the length) writes nothing.
    if code == NVCAM_OK && len > 0 {
        assert!(g.bytes()[g.off..g.off + n].contains(&0), "{name}: OK without a NUL in the buffer");
    }
    sh.guard(name, &g);
}

const URLS_CHEAP: &[&str] = &[
    "",
    "bogus://x",
    "rtsp://",
    "rtsp://[::1",
    "rtsp://host:0/x",
    "rtsp://host:99999/x",
    "http://",
    "testsrc://0x0@30",
    "testsrc://64x48@0",
    "testsrc://64x48@999",
    "testsrc://99999x48@30",
    "testsrc://8x8@30",
    "testsrc://abc",
    "pipe:0",
    "fd:3",
    "a\x01b",
    "\x7f",
];

const URLS_REAL: &[&str] =
    &["testsrc://64x48@30", "testsrc://64x48", "testsrc://32x32@60", "testsrc://17x19@30", "/nonexistent/nvcam-fuzz.mp4", "file:///nonexistent/nvcam-fuzz.mkv"];

const FFOPTS: &[&str] = &[
    "",
    "probesize=banana",
    "nosuchopt=1",
    "novalue",
    "=x",
    ";;;",
    "probesize=32",
    "probesize=",
    "analyzeduration=-5",
    "rtsp_transport=udp",
    "fflags=nobuffer;probesize=32",
];

fn random_string(r: &mut Rng) -> Vec<u8> {
    let n = match r.below(10) {
        0 => 10_000,
        _ => r.below(40) as usize,
    };
    (0..n).map(|_| (1 + r.below(255)) as u8).collect()
}

fn options_buf(r: &mut Rng, ff: Option<&CString>, real: bool) -> Guarded {
    let size = std::mem::size_of::<nvcam_camera_options>();
    let mut g = Guarded::new(size, 0);
    let p = g.ptr().cast::<nvcam_camera_options>();
    // SAFETY (test): aligned, `size` writable bytes.
    unsafe {
        assert_eq!(nvcam_camera_options_init(p), NVCAM_OK);
        let o = &mut *p;
        o.device = NVCAM_DEVICE_CPU;
        o.open_timeout_ms = 300 + r.below(700) as u32;
        o.ffmpeg_options = ff.map_or(std::ptr::null(), |s| s.as_ptr());
        match r.below(12) {
            0 => o.struct_size = r.below(size as u64) as u32,
            1 => o.flags = r.next() as u32,
            2 => o.flags = (r.below(32) as u32) | NVCAM_OPEN_ASYNC,
            3 => o.pool_slots = r.below(100) as u32,
            4 => o.device = [-7, -2, 0, 3, i32::MIN][r.below(5) as usize],
            5 => o.decoder = r.below(6) as u32,
            6 => o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING,
            7 => o.decoder = NVCAM_DECODER_SOFTWARE,
            _ => {}
        }
        if !real {
            // An async open returns OK at once and leaves a worker retrying in the background:
            // only the rate-limited real opens may start threads.
            o.flags &= !NVCAM_OPEN_ASYNC;
        }
        if o.flags & NVCAM_OPEN_NO_PACING != 0 {
            // Unpaced and not lossless, a test source decodes as fast as the CPU goes.
            o.flags |= NVCAM_OPEN_LOSSLESS;
        }
    }
    g
}

/// One camera open (cheap: refused before any thread; real: a worker starts).
/// A 10-s H.264 clip (made by the ffmpeg CLI on Linux; none under Wine): the real source that
/// recordings can be written from (testsrc's raw pictures go into no container).
static H264_CLIP: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

fn op_open(sh: &Shared, r: &mut Rng, real: bool) {
    let h264 = H264_CLIP.get().cloned().flatten().filter(|_| real && r.chance(3));
    let url: Vec<u8> = if let Some(u) = h264 {
        u.into_bytes()
    } else if real {
        r.pick(URLS_REAL).as_bytes().to_vec()
    } else {
        match r.below(4) {
            0 => random_string(r),
            1 => vec![b't', 0xff, 0xfe, b'x'],
            _ => r.pick(URLS_CHEAP).as_bytes().to_vec(),
        }
    };
    let url = CString::new(url).unwrap();
    let ff = if r.chance(3) { Some(CString::new(*r.pick(FFOPTS)).unwrap()) } else { None };
    let ff2 = if r.chance(3) { Some(CString::new(random_string(r)).unwrap()) } else { None };
    let opts = if r.chance(5) { None } else { Some(options_buf(r, ff.as_ref(), real)) };
    let opts_p = opts.as_ref().map_or(std::ptr::null(), |g| g.bytes()[g.off..].as_ptr().cast::<nvcam_camera_options>());
    let url_p = if r.chance(30) { std::ptr::null() } else { url.as_ptr() };
    let mut cam = 0u64;
    let cam_p: *mut u64 = if r.chance(30) { std::ptr::null_mut() } else { &mut cam };
    let ex = r.chance(2);
    if real {
        sh.opens.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY (test): every pointer is NULL or valid for the call.
    let code = if ex {
        let ffp = ff2.as_ref().or(ff.as_ref()).map_or(std::ptr::null(), |s| s.as_ptr());
        sh.check("nvcam_camera_open_ex", unsafe { nvcam_camera_open_ex(url_p, ffp, opts_p, cam_p) })
    } else {
        sh.check("nvcam_camera_open", unsafe { nvcam_camera_open(url_p, opts_p, cam_p) })
    };
    if code == NVCAM_OK {
        assert!(!cam_p.is_null() && cam != 0);
        sh.opens_ok.fetch_add(1, Ordering::Relaxed);
        sh.live_cams.fetch_add(1, Ordering::Relaxed);
        let mut p = sh.pool.lock().unwrap();
        p.cams.push(cam);
        p.issued.push((cam, true));
    }
}

fn op_close_live(sh: &Shared, r: &mut Rng) {
    let cam = {
        let mut p = sh.pool.lock().unwrap();
        if p.cams.is_empty() {
            return;
        }
        let i = r.below(p.cams.len() as u64) as usize;
        p.cams.swap_remove(i)
    };
    let code = sh.check("nvcam_camera_close", nvcam_camera_close(cam, [0, 50, 2000][r.below(3) as usize]));
    if code == NVCAM_OK || code == NVCAM_E_TIMEOUT {
        sh.live_cams.fetch_sub(1, Ordering::Relaxed);
    }
    sh.pool.lock().unwrap().bury(cam);
}

fn op_get_frame(sh: &Shared, r: &mut Rng) {
    let cam = sh.handle(r, true);
    let mut f = 0u64;
    let fp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut f };
    let timeout = match r.below(20) {
        0 => 1 + r.below(3) as u32,
        _ => 0,
    };
    // SAFETY (test): `fp` is NULL or a live u64.
    let code = sh.check("nvcam_camera_get_frame", unsafe { nvcam_camera_get_frame(cam, timeout, fp) });
    if code == NVCAM_OK {
        sh.frames_got.fetch_add(1, Ordering::Relaxed);
        keep_frame(sh, r, f);
    }
}

fn keep_frame(sh: &Shared, r: &mut Rng, f: u64) {
    let mut p = sh.pool.lock().unwrap();
    p.issued.push((f, false));
    p.frames.push(f);
    if p.frames.len() > 48 {
        let i = r.below(p.frames.len() as u64) as usize;
        let old = p.frames.swap_remove(i);
        drop(p);
        let code = sh.check("nvcam_frame_release", nvcam_frame_release(old));
        let _ = code;
        sh.pool.lock().unwrap().bury(old);
    }
}

fn op_copy(sh: &Shared, r: &mut Rng) {
    let frame = sh.handle(r, false);
    let name = "nvcam_frame_copy_nv12";
    // A pitch whose image size wraps (pitch x height past 2^64) must be refused before writing:
    // the wrapped size would pass the length check and the copy would run off the buffer.
    let huge = [1u64 << 61, 1u64 << 63, u64::MAX, u64::MAX / 3, 1 << 40];
    match r.below(6) {
        0 => {
            // NULL destination, any size.
            let size = *r.pick(&[0u64, 1, 1 << 20, u64::MAX]);
            sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, std::ptr::null_mut(), r.below(200), size) });
        }
        1 => {
            // A size beyond the address space: refused before the buffer is looked at.
            let mut g = Guarded::new(16, r.below(8) as usize);
            let size = *r.pick(&[u64::MAX, 1 << 63, (isize::MAX as u64) + 1]);
            // SAFETY (test): refused before any write (the size cannot describe a real buffer).
            let code = sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), 0, size) });
            assert_ne!(code, NVCAM_OK, "{name}: dst_size {size} accepted");
            sh.guard(name, &g);
        }
        2 => {
            let mut g = Guarded::new(64 + r.below(4096) as usize, r.below(8) as usize);
            let pitch = *r.pick(&huge);
            // SAFETY (test): `dst` is writable for the `dst_size` passed.
            let code = sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), pitch, g.len as u64) });
            assert!(
                code != NVCAM_OK && code != NVCAM_E_PANIC,
                "{name}: dst_pitch {pitch:#x} with a {}-byte buffer returned {code}",
                g.len
            );
            if code == NVCAM_E_INVALID_ARGUMENT {
                sh.pitch_refused.fetch_add(1, Ordering::Relaxed);
            }
            if pitch >= 1 << 61 {
                // Only the handle checks come before the size check.
                assert!(
                    matches!(
                        code,
                        NVCAM_E_INVALID_ARGUMENT
                            | NVCAM_E_NULL_HANDLE
                            | NVCAM_E_INVALID_HANDLE
                            | NVCAM_E_WRONG_HANDLE_TYPE
                            | NVCAM_E_STALE_HANDLE
                    ),
                    "{name}: dst_pitch {pitch:#x} (overflowing) must be NVCAM_E_INVALID_ARGUMENT, got {code}"
                );
            }
            sh.guard(name, &g);
        }
        _ => {
            // Real-sized buffers (a 64x48 frame packs into 4608 bytes), pitch 0, small or odd.
            let len = *r.pick(&[0usize, 1, 100, 4607, 4608, 5000, 20_000, 70_000]);
            let pitch = *r.pick(&[0u64, 0, 1, 31, 63, 64, 65, 100, 333]);
            let mut g = Guarded::new(len, r.below(8) as usize);
            // SAFETY (test): `dst` is writable for `len` bytes.
            if sh.check(name, unsafe { nvcam_frame_copy_nv12(frame, g.ptr(), pitch, len as u64) }) == NVCAM_OK {
                sh.copies_ok.fetch_add(1, Ordering::Relaxed);
            }
            sh.guard(name, &g);
        }
    }
}

/// A conversion spec: mostly valid and small (the fuzzer's frames are 64x48), sometimes hostile.
fn convert_spec(r: &mut Rng) -> nvcam_convert {
    let mut c = nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, ..Default::default() };
    c.format = *r.pick(&[NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_BGR8, NVCAM_FORMAT_RGB8, NVCAM_FORMAT_GRAY8, NVCAM_FORMAT_RGB_F32_PLANAR, NVCAM_FORMAT_RGB_F16_PLANAR, NVCAM_FORMAT_NV12, 7, u32::MAX]);
    let side = [0u32, 0, 1, 7, 32, 64, 97, 16384, 16385, u32::MAX];
    let n = if r.chance(8) { 10 } else { 7 };
    c.width = *r.pick(&side[..n]);
    let n = if r.chance(8) { 10 } else { 7 };
    c.height = *r.pick(&side[..n]);
    if r.chance(3) {
        c.roi_x = *r.pick(&[0u32, 1, 33, 63, 64, u32::MAX]);
        c.roi_y = *r.pick(&[0u32, 1, 20, 47, 48, u32::MAX]);
        c.roi_width = *r.pick(&[0u32, 1, 31, 64, 65, u32::MAX]);
        c.roi_height = *r.pick(&[0u32, 1, 27, 48, 49, u32::MAX]);
    }
    c.flags = *r.pick(&[0u32, 0, NVCAM_CONVERT_LETTERBOX, 2, u32::MAX]);
    c.matrix = *r.pick(&[0u32, 0, 1, 2, 3]);
    c.range = *r.pick(&[0u32, 0, 1, 2, 3]);
    c.dst_memory = *r.pick(&[NVCAM_MEMORY_HOST, NVCAM_MEMORY_HOST, NVCAM_MEMORY_HOST, NVCAM_MEMORY_DEVICE, 2]);
    c.dst_device = *r.pick(&[0, 0, -1, 1, i32::MIN]);
    let any = f32::from_bits(r.next() as u32);
    c.pad = [*r.pick(&[0.0f32, 114.0, 255.0, -1.0, f32::NAN, any]); 3];
    c.mean = [*r.pick(&[0.0f32, 0.485, f32::INFINITY, any]), 0.456, 0.406];
    c.std = [*r.pick(&[0.0f32, 0.229, 1.0, -0.0, any]), 0.224, 0.225];
    c.chroma_siting = *r.pick(&[0u32, 0, 0, 1, 2, 3, 6, 7, u32::MAX]);
    if r.chance(10) {
        c.reserved[r.below(5) as usize] = 1;
    }
    if r.chance(10) {
        c.struct_size = *r.pick(&[0u32, 4, 111, u32::MAX]);
    }
    c
}

/// `nvcam_frame_convert` and friends with live, dead and made-up frames, hostile specs, sizes
/// and pitches; host destinations are guarded buffers (stream 0: the fuzzer's frames are CPU
/// frames, and a made-up stream handle is outside the contract).
fn op_convert(sh: &Shared, r: &mut Rng) {
    let frame = sh.handle(r, false);
    let spec = convert_spec(r);
    let sp: *const nvcam_convert = if r.chance(15) { std::ptr::null() } else { &spec };
    match r.below(5) {
        0 => {
            let mut n = 0u64;
            let np: *mut u64 = if r.chance(10) { std::ptr::null_mut() } else { &mut n };
            let pitch = *r.pick(&[0u64, 0, 1, 256, 1 << 61, u64::MAX]);
            // SAFETY (test): NULL or a live spec and u64.
            sh.check("nvcam_frame_convert_size", unsafe { nvcam_frame_convert_size(frame, sp, pitch, np) });
        }
        1 => {
            sh.check("nvcam_frame_wait_stream", unsafe { nvcam_frame_wait_stream(frame, 0) });
        }
        2 => {
            // SAFETY (test): stream 0 is valid wherever a device frame could be.
            if sh.check("nvcam_frame_release_after_stream", unsafe { nvcam_frame_release_after_stream(frame, 0) }) == NVCAM_OK {
                let mut p = sh.pool.lock().unwrap();
                p.frames.retain(|&x| x != frame);
                p.bury(frame);
            }
        }
        _ => {
            let name = "nvcam_frame_convert";
            let len = *r.pick(&[0usize, 1, 100, 3071, 3072, 9216, 12_288, 36_864, 70_000]);
            let pitch = *r.pick(&[0u64, 0, 0, 1, 64, 191, 192, 256, 1 << 61, u64::MAX]);
            let mut g = Guarded::new(len, r.below(8) as usize);
            let (dst, size) = match r.below(10) {
                0 => (std::ptr::null_mut(), len as u64),
                1 => (g.ptr(), *r.pick(&[u64::MAX, 1 << 63])),
                _ => (g.ptr(), len as u64),
            };
            let device = spec.dst_memory == NVCAM_MEMORY_DEVICE;
            // SAFETY (test): host dst is writable for the size passed (or the size is refused
            // before any write); a "device" dst is refused for the fuzzer's host frames.
            let code = sh.check(name, unsafe { nvcam_frame_convert(frame, sp, dst.cast(), pitch, size, 0) });
            if code == NVCAM_OK {
                assert!(!device, "{name}: a host frame converted into 'device' memory");
                sh.copies_ok.fetch_add(1, Ordering::Relaxed);
            }
            sh.guard(name, &g);
        }
    }
}

/// `nvcam_cameras_get_frames` and `nvcam_frames_convert_batch` with live, dead, repeated and
/// made-up handles, n of 0, in range and past `NVCAM_BATCH_MAX`, NULL arrays; every frame handed
/// out (also with a non-OK status) is kept and released later; arrays and destinations guarded.
fn op_batch(sh: &Shared, r: &mut Rng) {
    let n = *r.pick(&[0u32, 1, 1, 2, 3, 4, NVCAM_BATCH_MAX + 1]);
    let len = (n as usize).min(4);
    let want_cam = r.chance(2);
    let mut handles: Vec<u64> = (0..len).map(|_| sh.handle(r, want_cam)).collect();
    if len >= 2 && r.chance(4) {
        handles[1] = handles[0];
    }
    // Arrays are read/written for `n` elements only when n is in range (then n == len).
    let mut hin = Guarded::new(len * 8, r.below(8) as usize);
    // SAFETY (test): the guarded buffer holds len * 8 bytes (any alignment: the API reads unaligned).
    unsafe { std::ptr::copy_nonoverlapping(handles.as_ptr().cast::<u8>(), hin.ptr(), len * 8) };
    let inp: *const u64 = if r.chance(15) { std::ptr::null() } else { hin.ptr().cast() };
    if want_cam {
        let name = "nvcam_cameras_get_frames";
        let mut out = Guarded::new(len * 8, r.below(8) as usize);
        let outp: *mut u64 = if r.chance(15) { std::ptr::null_mut() } else { out.ptr().cast() };
        let timeout = if r.chance(20) { 1 + r.below(3) as u32 } else { 0 };
        // SAFETY (test): both arrays hold `len` elements, and n > len only when n is out of range
        // (refused before either is touched).
        let code = sh.check(name, unsafe { nvcam_cameras_get_frames(inp, n, timeout, outp) });
        sh.guard(name, &hin);
        sh.guard(name, &out);
        if !outp.is_null() && (1..=NVCAM_BATCH_MAX).contains(&n) {
            for i in 0..len {
                // SAFETY (test): written by the call (zeroed at least), within the buffer.
                let f = unsafe { outp.add(i).read_unaligned() };
                if f != 0 {
                    sh.frames_got.fetch_add(1, Ordering::Relaxed);
                    keep_frame(sh, r, f);
                }
            }
        }
        let _ = code;
    } else {
        let name = "nvcam_frames_convert_batch";
        let spec = convert_spec(r);
        let sp: *const nvcam_convert = if r.chance(15) { std::ptr::null() } else { &spec };
        let size = *r.pick(&[0usize, 1, 100, 3072, 9216, 36_864, 70_000]);
        let stride = *r.pick(&[0u64, 0, 0, 1, 3072, 9216, 1 << 61, u64::MAX]);
        let mut g = Guarded::new(size, r.below(8) as usize);
        let (dst, dsize) = match r.below(10) {
            0 => (std::ptr::null_mut(), size as u64),
            1 => (g.ptr(), *r.pick(&[u64::MAX, 1 << 63])),
            _ => (g.ptr(), size as u64),
        };
        // SAFETY (test): host dst is writable for the size passed (or refused before any write);
        // a "device" dst is refused for the fuzzer's host frames.
        let code = sh.check(name, unsafe { nvcam_frames_convert_batch(inp, n, sp, dst.cast(), stride, dsize, 0) });
        if code == NVCAM_OK {
            assert_ne!(spec.dst_memory, NVCAM_MEMORY_DEVICE, "{name}: host frames converted into 'device' memory");
            sh.copies_ok.fetch_add(1, Ordering::Relaxed);
        }
        sh.guard(name, &hin);
        sh.guard(name, &g);
    }
}

/// LabVIEW's callbacks and get_frame_lv, with NULL slots and slots holding 0, live, stale,
/// made-up and wrong-kind values.
fn op_lv(sh: &Shared, r: &mut Rng) {
    let value = {
        let p = sh.pool.lock().unwrap();
        match r.below(10) {
            0..=3 if !p.lv_live.is_empty() => *r.pick(&p.lv_live),
            4 if !p.lv_dead.is_empty() => *r.pick(&p.lv_dead),
            5 if !p.cams.is_empty() => *r.pick(&p.cams) as usize,
            6 => r.next() as usize,
            7 => *r.pick(&[1usize, 0x10, usize::MAX, 0xdead_beef]),
            _ => 0,
        }
    };
    let mut slot = value;
    let sp: *mut *mut c_void = if r.chance(10) { std::ptr::null_mut() } else { (&mut slot as *mut usize).cast() };
    // SAFETY (test): `sp` is NULL or a live pointer-sized slot; the value in it is only a number.
    let (name, code) = unsafe {
        match r.below(4) {
            0 => ("nvcam_lv_reserve", nvcam_lv_reserve(sp)),
            1 => ("nvcam_lv_unreserve", nvcam_lv_unreserve(sp)),
            2 => ("nvcam_lv_abort", nvcam_lv_abort(sp)),
            _ => {
                let cam = sh.handle(r, true);
                let mut f = 0u64;
                let fp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut f };
                let code = nvcam_camera_get_frame_lv(cam, if r.chance(20) { 1 + r.below(3) as u32 } else { 0 }, fp, sp);
                if code == NVCAM_OK {
                    sh.frames_got.fetch_add(1, Ordering::Relaxed);
                    keep_frame(sh, r, f);
                }
                ("nvcam_camera_get_frame_lv", code)
            }
        }
    };
    sh.check(name, code);
    if code != NVCAM_OK || sp.is_null() {
        return;
    }
    let mut p = sh.pool.lock().unwrap();
    if slot == 0 && value != 0 {
        // Unreserved: the old value is stale from now on.
        p.lv_live.retain(|&v| v != value);
        p.lv_dead.push(value);
    } else if slot != 0 && !p.lv_live.contains(&slot) {
        p.lv_live.push(slot);
    }
    if p.lv_dead.len() > 64 {
        p.lv_dead.remove(0);
    }
    if p.lv_live.len() > 16 {
        // Release one, as LabVIEW's Unreserve would.
        let mut v = p.lv_live.swap_remove(0);
        drop(p);
        let old = v;
        // SAFETY (test): a live local slot.
        sh.check("nvcam_lv_unreserve", unsafe { nvcam_lv_unreserve((&mut v as *mut usize).cast()) });
        sh.pool.lock().unwrap().lv_dead.push(old);
    }
}

fn sized_call<T>(sh: &Shared, r: &mut Rng, name: &'static str, f: impl FnOnce(*mut T) -> i32) {
    sized_call_from::<T>(sh, r, name, std::mem::size_of::<T>(), f)
}

/// As [`sized_call`] for a struct that also takes its older, shorter versions (`min` bytes and
/// up): an OK needs at least `min`, and the buffer is only `struct_size` long when that is
/// shorter, so a write past what the caller declared trips the guard.
fn sized_call_from<T>(sh: &Shared, r: &mut Rng, name: &'static str, min: usize, f: impl FnOnce(*mut T) -> i32) {
    let size = std::mem::size_of::<T>();
    if r.chance(10) {
        sh.check(name, f(std::ptr::null_mut()));
        return;
    }
    let ss = match r.below(8) {
        0 => 0,
        1 => r.below(size as u64) as u32,
        2 => u32::MAX,
        3 if min < size => (min + r.below((size - min) as u64) as usize) as u32,
        _ => size as u32,
    };
    // A declared size between `min` and the full size gets exactly that many bytes.
    let len = if (min..size).contains(&(ss as usize)) { ss as usize } else { size };
    let mut g = Guarded::with_struct_size(len.max(4), ss);
    let code = sh.check(name, f(g.ptr().cast()));
    if code == NVCAM_OK {
        assert!(ss as usize >= min, "{name}: OK with struct_size {ss} < {min}");
    }
    sh.guard(name, &g);
}

fn op_cheap(sh: &Shared, r: &mut Rng) {
    match r.below(27) {
        0..=2 => op_get_frame(sh, r),
        3 => {
            let f = sh.handle(r, false);
            let mut c = 0u64;
            let cp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut c };
            // SAFETY (test): NULL or a live u64.
            if sh.check("nvcam_frame_clone", unsafe { nvcam_frame_clone(f, cp) }) == NVCAM_OK {
                keep_frame(sh, r, c);
            }
        }
        4..=5 => {
            let f = sh.handle(r, false);
            if sh.check("nvcam_frame_release", nvcam_frame_release(f)) == NVCAM_OK {
                let mut p = sh.pool.lock().unwrap();
                p.frames.retain(|&x| x != f);
                p.bury(f);
            }
        }
        6..=7 => {
            let f = sh.handle(r, false);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            // 120: the size before `flags` was appended, still taken (and filled to its end only).
            sized_call_from::<nvcam_frame_info>(sh, r, "nvcam_frame_info", 120, |p| unsafe { nvcam_frame_info(f, p) });
        }
        8 => op_copy(sh, r),
        9 => {
            match r.below(4) {
                0 | 1 => op_copy(sh, r),
                2 => op_convert(sh, r),
                _ => op_batch(sh, r),
            }
        }
        10..=11 => {
            let c = sh.handle(r, true);
            // SAFETY (test): as above.
            // 152: the size before the reconnect rule's figures were appended, still taken.
            sized_call_from::<nvcam_camera_stats>(sh, r, "nvcam_camera_stats", 152, |p| unsafe { nvcam_camera_stats(c, p) });
        }
        12 => {
            let c = sh.handle(r, true);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_camera_last_error", |b, l| unsafe { nvcam_camera_last_error(c, b, l) });
        }
        13 => {
            // Reconnects restart a live camera's connection: mostly on handles that are not live.
            let c = if r.chance(20) { sh.handle(r, true) } else { sh.pool.lock().unwrap().dead.first().copied().unwrap_or(7) };
            sh.check("nvcam_camera_reconnect", nvcam_camera_reconnect(c));
        }
        14 => {
            let c = sh.handle(r, true);
            let c = if r.chance(10) { 0 } else { c };
            let (mut a, mut b) = (0u32, 0u64);
            let ap: *mut u32 = if r.chance(3) { std::ptr::null_mut() } else { &mut a };
            let bp: *mut u64 = if r.chance(3) { std::ptr::null_mut() } else { &mut b };
            // SAFETY (test): NULL or live locals.
            sh.check("nvcam_registry_stats", unsafe { nvcam_registry_stats(c, ap, bp) });
        }
        15 => {
            // Force-release on live cameras invalidates their frames: mostly on other handles.
            let c = if r.chance(10) { sh.handle(r, true) } else { sh.handle(r, false) };
            let mut n = 0u32;
            let np: *mut u32 = if r.chance(3) { std::ptr::null_mut() } else { &mut n };
            // SAFETY (test): NULL or a live local.
            sh.check("nvcam_registry_force_release_owner", unsafe { nvcam_registry_force_release_owner(c, np) });
        }
        16 => {
            let any = r.next() as i32;
            let code = *r.pick(&[0, -8001, -8040, -8041, -8999, 1, i32::MIN, i32::MAX, any]);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_status_text", |b, l| unsafe { nvcam_status_text(code, b, l) });
        }
        17 => {
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_last_error", |b, l| unsafe { nvcam_last_error(b, l) });
        }
        18 => {
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_version_string", |b, l| unsafe { nvcam_version_string(b, l) });
            sh.calls.fetch_add(1, Ordering::Relaxed);
            assert_eq!(nvcam_abi_version(), NVCAM_ABI_VERSION);
        }
        19 => {
            let (mut lvl, mut n) = (0i32, 0i32);
            let lp: *mut i32 = if r.chance(10) { std::ptr::null_mut() } else { &mut lvl };
            let np: *mut i32 = if r.chance(10) { std::ptr::null_mut() } else { &mut n };
            // SAFETY (test): NULL or live locals; the buffer as in text_call.
            text_call(sh, r, "nvcam_log_pop", |b, l| unsafe { nvcam_log_pop(lp, b, l, np) });
        }
        20 => {
            let any = r.next() as i32;
            let device = *r.pick(&[-1, -1, 0, 1, -2, i32::MIN, i32::MAX, any]);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            sized_call::<nvcam_gpu_stats>(sh, r, "nvcam_gpu_stats", |p| unsafe { nvcam_gpu_stats(device, p) });
        }
        21 => {
            sh.check("nvcam_gpu_drain", nvcam_gpu_drain(*r.pick(&[0, 1, 100, u32::MAX])));
        }
        22 => {
            if r.chance(2) {
                // Not a sized struct: it writes the whole struct and sets struct_size itself.
                let size = std::mem::size_of::<nvcam_camera_options>();
                let mut g = Guarded::with_struct_size(size, r.next() as u32);
                let p = if r.chance(10) { std::ptr::null_mut() } else { g.ptr().cast::<nvcam_camera_options>() };
                // SAFETY (test): NULL or a guarded, aligned buffer of the struct's size.
                let code = sh.check("nvcam_camera_options_init", unsafe { nvcam_camera_options_init(p) });
                if code == NVCAM_OK {
                    // SAFETY (test): filled by the call.
                    assert_eq!(unsafe { (*p).struct_size } as usize, size);
                }
                sh.guard("nvcam_camera_options_init", &g);
            } else {
                // A handle call on a camera-shaped value that is not live: close fails cheaply.
                let c = if r.chance(4) { sh.handle(r, false) } else { r.next() };
                sh.check("nvcam_camera_close", nvcam_camera_close(c, 0));
            }
        }
        24 => {
            let c = sh.handle(r, true);
            sh.check("nvcam_camera_cancel_wait", nvcam_camera_cancel_wait(c));
        }
        25 => op_lv(sh, r),
        26 => op_record(sh, r),
        _ => match r.below(3) {
            0 => {
                // Levels up to WARN (more verbose ones would only slow the run), plus invalid ones.
                let level = *r.pick(&[NVCAM_LOG_OFF, NVCAM_LOG_ERROR, NVCAM_LOG_WARN, -1, 6, 99, i32::MIN]);
                let path = *r.pick(&["", "/nonexistent-dir/nvcam.log"]);
                let c = CString::new(path).unwrap();
                let p = if r.chance(2) { std::ptr::null() } else { c.as_ptr() };
                // SAFETY (test): NULL or a NUL-terminated string.
                sh.check("nvcam_log_init", unsafe { nvcam_log_init(p, level) });
            }
            1 => {
                let level = *r.pick(&[NVCAM_LOG_OFF, NVCAM_LOG_ERROR, NVCAM_LOG_WARN, -3, 42]);
                let cb: nvcam_log_fn = if r.chance(2) { Some(log_cb) } else { None };
                // SAFETY (test): the callback is valid for the whole process and thread-safe.
                sh.check("nvcam_log_set_callback", unsafe { nvcam_log_set_callback(cb, 0x1234 as *mut c_void, level) });
            }
            _ => op_open(sh, r, false),
        },
    }
}

/// The `.part` files in `dir`.
fn part_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "part")).collect()
}

/// Paths a recording is asked to write: real files in the test's folder (two containers), a bad
/// extension, a missing folder, a folder, empty, long, not UTF-8.
fn rec_path(r: &mut Rng) -> Vec<u8> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz_api-rec");
    let real = |name: &str| dir.join(name).to_str().unwrap().as_bytes().to_vec();
    match r.below(10) {
        0..=2 => real(&format!("r{}.mkv", r.below(4))),
        3..=4 => real(&format!("r{}.mp4", r.below(4))),
        5 => real("r.avi"),
        6 => b"/nonexistent-dir/nvcam-fuzz.mkv".to_vec(),
        7 => dir.to_str().unwrap().as_bytes().to_vec(),
        // Not UTF-8 (read in the ANSI code page): in the test's folder, never the working one.
        8 => [dir.to_str().unwrap().as_bytes(), b"/x\xff\xfe.mkv"].concat(),
        _ => random_string(r),
    }
}

/// The recording exports with live, released, foreign and made-up handles, NULL pointers, bad
/// sizes and paths; a recording handle also goes where camera and frame handles are expected
/// (see `Shared::handle`), and camera and frame handles where a recording's is.
fn op_record(sh: &Shared, r: &mut Rng) {
    let ms = |r: &mut Rng| *r.pick(&[0u32, 1, 100, 1000, 5000, u32::MAX]);
    match r.below(12) {
        0 => {
            let c = sh.handle(r, true);
            let bytes = *r.pick(&[0u64, 1, 4096, 1 << 20, u64::MAX]);
            sh.check("nvcam_camera_record_cache", nvcam_camera_record_cache(c, ms(r), bytes));
        }
        1 | 2 => {
            let mut c = sh.handle(r, true);
            // A real recording (a thread, a file) on a live camera now and then; mostly the
            // handle checks.
            if !r.chance(50) && sh.pool.lock().unwrap().cams.contains(&c) {
                c = sh.rec_handle(r);
            }
            // Few recordings at once: each has a writer thread and a file.
            let full = sh.pool.lock().unwrap().recs.len() >= 6;
            let path = CString::new(rec_path(r)).unwrap();
            let pp = if r.chance(20) { std::ptr::null() } else { path.as_ptr() };
            let mut rec = 0u64;
            let rp: *mut u64 = if r.chance(20) { std::ptr::null_mut() } else { &mut rec };
            let segments = r.chance(4);
            if full {
                return op_record_release(sh, r);
            }
            // SAFETY (test): NULL or NUL-terminated strings and a live u64.
            let code = if segments {
                let ext = CString::new(*r.pick(&["mkv", "mp4", "", "avi", "MKV"])).unwrap();
                let ep = if r.chance(20) { std::ptr::null() } else { ext.as_ptr() };
                let keep = *r.pick(&[0u64, 1, 1 << 20, u64::MAX]);
                sh.check("nvcam_camera_record_segments", unsafe {
                    nvcam_camera_record_segments(c, pp, ep, ms(r), r.below(4) as u32, keep, rp)
                })
            } else {
                sh.check("nvcam_camera_record_start", unsafe { nvcam_camera_record_start(c, pp, ms(r), ms(r), rp) })
            };
            if code == NVCAM_OK {
                assert!(!rp.is_null() && rec != 0);
                sh.recs_ok.fetch_add(1, Ordering::Relaxed);
                let mut p = sh.pool.lock().unwrap();
                p.recs.push(rec);
                p.recs_issued.push(rec);
            }
        }
        3 => {
            let c = sh.handle(r, true);
            // SAFETY (test): NULL or a guarded, aligned struct buffer.
            sized_call::<nvcam_record_stats>(sh, r, "nvcam_camera_record_stats", |p| unsafe { nvcam_camera_record_stats(c, p) });
        }
        4 => {
            let h = sh.rec_handle(r);
            sh.check("nvcam_record_extend", nvcam_record_extend(h, ms(r)));
        }
        5 => {
            let h = sh.rec_handle(r);
            sh.check("nvcam_record_stop", nvcam_record_stop(h));
        }
        6 | 7 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): as above.
            sized_call::<nvcam_record_status>(sh, r, "nvcam_record_status", |p| unsafe { nvcam_record_status(h, p) });
        }
        8 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): NULL or a guarded buffer of `len` bytes.
            text_call(sh, r, "nvcam_record_file", |b, l| unsafe { nvcam_record_file(h, b, l) });
        }
        9 => {
            let h = sh.rec_handle(r);
            // SAFETY (test): as above.
            text_call(sh, r, "nvcam_record_error", |b, l| unsafe { nvcam_record_error(h, b, l) });
        }
        _ => op_record_release(sh, r),
    }
}

/// Releases a live recording (and sometimes again: stale the second time), or any handle.
fn op_record_release(sh: &Shared, r: &mut Rng) {
    let live = {
        let mut p = sh.pool.lock().unwrap();
        if !p.recs.is_empty() && r.chance(2) {
            let i = r.below(p.recs.len() as u64) as usize;
            Some(p.recs.swap_remove(i))
        } else {
            None
        }
    };
    let h = live.unwrap_or_else(|| sh.rec_handle(r));
    let code = sh.check("nvcam_record_release", nvcam_record_release(h));
    if live.is_some() {
        // A shutdown between the pick and the call released it already.
        assert!(code == NVCAM_OK || code == NVCAM_E_STALE_HANDLE, "release of a live recording: {code} {}", last_error());
        if r.chance(4) {
            let again = sh.check("nvcam_record_release", nvcam_record_release(h));
            assert_eq!(again, NVCAM_E_STALE_HANDLE, "a second release of recording {h:#x}");
            sh.double_releases.fetch_add(1, Ordering::Relaxed);
        }
        sh.pool.lock().unwrap().bury(h);
    } else if code == NVCAM_OK {
        let mut p = sh.pool.lock().unwrap();
        p.recs.retain(|&x| x != h);
        p.bury(h);
    }
}

fn op_lifecycle(sh: &Shared, r: &mut Rng) {
    let t = *r.pick(&[0u32, 100, 5000, 5000, 10000]);
    let code = sh.check("nvcam_shutdown", nvcam_shutdown(t));
    if code == NVCAM_OK || code == NVCAM_E_TIMEOUT {
        // Every camera handle is stale now; keep them as dead handles.
        let mut p = sh.pool.lock().unwrap();
        let mut cams = std::mem::take(&mut p.cams);
        cams.append(&mut p.frames);
        for h in cams {
            p.bury(h);
        }
        sh.live_cams.store(0, Ordering::Relaxed);
    }
    sh.cycles.fetch_add(1, Ordering::Relaxed);
    let size = std::mem::size_of::<nvcam_config>();
    let mut g = Guarded::new(size, 0);
    let p = g.ptr().cast::<nvcam_config>();
    // SAFETY (test): aligned and writable for the struct.
    unsafe {
        p.write(nvcam_config { struct_size: size as u32, ..Default::default() });
        match r.below(6) {
            0 => (*p).struct_size = r.below(size as u64) as u32,
            1 => (*p).flags = r.next() as u32 | 1,
            2 => (*p).max_hw_decoders_per_device = r.below(4) as u32,
            _ => {}
        }
    }
    let cp = if r.chance(3) { std::ptr::null() } else { p.cast_const() };
    // SAFETY (test): NULL or an aligned, readable config.
    let code = sh.check("nvcam_init", unsafe { nvcam_init(cp) });
    sh.guard("nvcam_init", &g);
    if code != NVCAM_OK {
        // SAFETY (test): NULL = defaults.
        sh.check("nvcam_init", unsafe { nvcam_init(std::ptr::null()) });
    }
}

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
/// function of the header must be named (as the string `sh.check` records) in this file.
#[test]
fn every_export_of_the_header_is_fuzzed() {
    let src = include_str!("fuzz_api.rs");
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
