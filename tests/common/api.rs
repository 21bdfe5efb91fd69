//! The C API as the tests call it: the library initialized once and one test at a time, thin
//! wrappers that turn status codes into `Result`s with the library's message, the log as a host's
//! callback sees it, the statuses the header documents, and the churn scenario of the isolation
//! tests.

use super::*;

/// The checkout (`CARGO_MANIFEST_DIR`).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn init() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| unsafe {
        // NVCAM_TEST_LOG=4 (debug) or 5 (trace): the library's log on stderr, with each loss and
        // each picture's marks, to trace a failure.
        match std::env::var("NVCAM_TEST_LOG").ok().and_then(|v| v.parse().ok()) {
            Some(level) => assert_eq!(nvcam_log_init(c"-".as_ptr(), level), NVCAM_OK),
            None => assert_eq!(nvcam_log_init(std::ptr::null(), NVCAM_LOG_INFO), NVCAM_OK),
        }
    });
    assert_eq!(unsafe { nvcam_init(std::ptr::null()) }, NVCAM_OK);
}

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time, the library initialized: the tests of a suite share the library's global
/// state (its camera table, log and pools), and one failed test (a poisoned lock) must not fail
/// the rest.
pub fn serial() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    init();
    g
}

/// The calling thread's last error text.
pub fn last_error() -> String {
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    cstr(&buf)
}

/// The camera's last error text (from its worker or a call on it).
pub fn cam_error(cam: u64) -> String {
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_camera_last_error(cam, buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    cstr(&buf)
}

pub fn cstr(buf: &[u8]) -> String {
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())]).into_owned()
}

/// `Err((code, message))` for a failed call.
pub fn ok(code: i32) -> Result<(), (i32, String)> {
    if code == NVCAM_OK {
        Ok(())
    } else {
        Err((code, last_error()))
    }
}

pub fn options(flags: u32) -> nvcam_camera_options {
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { nvcam_camera_options_init(&mut o) }, NVCAM_OK);
    o.flags = flags;
    o.device = NVCAM_DEVICE_CPU;
    o
}

pub fn open(url: &str, o: &nvcam_camera_options) -> Result<u64, (i32, String)> {
    let c = CString::new(url).unwrap();
    let mut cam = 0;
    ok(unsafe { nvcam_camera_open(c.as_ptr(), o, &mut cam) })?;
    Ok(cam)
}

pub fn get_frame(cam: u64, timeout_ms: u32) -> Result<u64, (i32, String)> {
    let mut f = 0;
    ok(unsafe { nvcam_camera_get_frame(cam, timeout_ms, &mut f) })?;
    Ok(f)
}

pub fn info(frame: u64) -> Result<nvcam_frame_info, (i32, String)> {
    let mut i: nvcam_frame_info = unsafe { std::mem::zeroed() };
    i.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
    ok(unsafe { nvcam_frame_info(frame, &mut i) })?;
    Ok(i)
}

/// The frame's NV12 image, packed (`width` bytes a row, chroma rows after luma rows).
pub fn pixels(frame: u64) -> Result<Vec<u8>, (i32, String)> {
    let i = info(frame)?;
    let mut v = vec![0u8; i.nv12_size as usize];
    ok(unsafe { nvcam_frame_copy_nv12(frame, v.as_mut_ptr(), 0, v.len() as u64) })?;
    Ok(v)
}

pub fn stats(cam: u64) -> nvcam_camera_stats {
    let mut s: nvcam_camera_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
    assert_eq!(unsafe { nvcam_camera_stats(cam, &mut s) }, NVCAM_OK, "{}", last_error());
    s
}

pub fn clone(frame: u64) -> Result<u64, (i32, String)> {
    let mut c = 0;
    ok(unsafe { nvcam_frame_clone(frame, &mut c) })?;
    Ok(c)
}

/// The size of every frame the camera delivers until `get_frame` fails (5 s each), and that
/// failure.
pub fn sizes_until_error(cam: u64) -> (Vec<(u32, u32)>, (i32, String)) {
    let mut sizes = Vec::new();
    loop {
        match get_frame(cam, 5000) {
            Ok(f) => {
                let i = info(f).unwrap();
                sizes.push((i.width, i.height));
                release(f).unwrap();
            }
            Err(e) => return (sizes, e),
        }
    }
}

pub fn release(frame: u64) -> Result<(), (i32, String)> {
    ok(nvcam_frame_release(frame))
}

pub fn close(cam: u64, timeout_ms: u32) -> Result<(), (i32, String)> {
    ok(nvcam_camera_close(cam, timeout_ms))
}

/// Polls `f` every 5 ms (a detection time measured with it is late by at most that) until it holds
/// or `limit` passes, with a last look at the end.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// A 64-bit FNV-1a hash, to name frames in assertion messages without a hashing crate.
pub fn fnv(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}


/// The documented statuses per function, read from the header's `Returns:` lines.
pub fn documented() -> BTreeMap<String, BTreeSet<i32>> {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/nvcam.h")).unwrap();
    let code_of: BTreeMap<&str, i32> = nvcam::ffi::status::ALL.iter().map(|(c, n, _)| (*n, *c)).collect();
    let mut map = BTreeMap::new();
    let mut pending: Option<BTreeSet<i32>> = None;
    for line in header.lines() {
        if let Some(i) = line.find("Returns:") {
            let set: BTreeSet<i32> = line[i + 8..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|t| *t == "NVCAM_OK" || t.starts_with("NVCAM_E_"))
                .map(|t| *code_of.get(t).unwrap_or_else(|| panic!("header names unknown status {t}")))
                .collect();
            pending = Some(set);
            continue;
        }
        let decl = line.trim_start();
        if !decl.starts_with("int32_t nvcam_") {
            continue;
        }
        let name = decl["int32_t ".len()..].split('(').next().unwrap().to_string();
        let set = pending.take().unwrap_or_else(|| panic!("{name} has no `Returns:` line in the header"));
        if name != "nvcam_abi_version" {
            assert!(set.contains(&NVCAM_OK) && set.contains(&NVCAM_E_PANIC), "{name}: Returns: must list NVCAM_OK and NVCAM_E_PANIC");
        }
        map.insert(name, set);
    }
    assert!(map.len() >= 25, "found only {} functions with Returns: lines", map.len());
    map
}


/// SplitMix64: small, fast, and the same sequence everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    pub fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len() as u64) as usize]
    }
}

/// The churned cameras of the isolation tests: each takes a frame (waiting at most `wait_ms`),
/// then reconnects, `pause` apart, until `stop`; `count` counts the reconnects.
pub fn reconnect_in_a_loop(
    cams: &[u64],
    wait_ms: u32,
    pause: Duration,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
    count: &std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Vec<std::thread::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    cams.iter()
        .map(|&c| {
            let (stop, count) = (stop.clone(), count.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Back with a frame, then dropped again at once.
                    if let Ok(f) = get_frame(c, wait_ms) {
                        release(f).unwrap();
                    }
                    ok(nvcam_camera_reconnect(c)).unwrap();
                    count.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(pause);
                }
            })
        })
        .collect()
}

/// A steady camera's consumer: the gaps between its frames (ms) and its failed `get_frame(1000)`
/// calls, until `stop`.
pub fn gaps_until(cam: u64, stop: &std::sync::atomic::AtomicBool) -> (Vec<f64>, u32) {
    let (mut gaps, mut last, mut failures) = (Vec::new(), None::<std::time::Instant>, 0);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match get_frame(cam, 1000) {
            Ok(f) => {
                let now = std::time::Instant::now();
                if let Some(l) = last {
                    gaps.push(now.duration_since(l).as_secs_f64() * 1e3);
                }
                last = Some(now);
                release(f).unwrap();
            }
            Err(_) => failures += 1,
        }
    }
    (gaps, failures)
}

/// What the churn scenario saw: the steady cameras' gaps between frames (ms, all together), each
/// steady camera's failed `get_frame(1000)` calls, and the churning cameras' reconnects.
pub struct Churned {
    pub gaps: Vec<f64>,
    pub failures: Vec<u32>,
    pub reconnects: u64,
}

/// The isolation tests' churn scenario, on cameras that have delivered: `churn` reconnect in a
/// loop ([`reconnect_in_a_loop`], `wait_ms` and `pause`) while a consumer per `steady` camera
/// takes its frames ([`gaps_until`]), for `run`.
pub fn churn_scenario(steady: &[u64], churn: &[u64], wait_ms: u32, pause: Duration, run: Duration) -> Churned {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicU64::new(0));
    let churners = reconnect_in_a_loop(churn, wait_ms, pause, &stop, &reconnects);
    let consumers: Vec<_> = steady
        .iter()
        .map(|&c| {
            let stop = stop.clone();
            std::thread::spawn(move || gaps_until(c, &stop))
        })
        .collect();
    std::thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let mut seen = Churned { gaps: Vec::new(), failures: Vec::new(), reconnects: 0 };
    for t in consumers {
        let (g, failures) = t.join().unwrap();
        seen.gaps.extend(g);
        seen.failures.push(failures);
    }
    churners.into_iter().for_each(|t| t.join().unwrap());
    seen.reconnects = reconnects.load(Ordering::Relaxed);
    seen
}

/// The `q` quantile (nearest rank) of `v`, which it sorts.
pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}


// The log, as a host's callback receives it.

static LOG: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_log(level: i32, msg: *const std::ffi::c_char, _user: *mut std::ffi::c_void) {
    let m = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    LOG.lock().unwrap_or_else(|e| e.into_inner()).push((level, m));
}

/// Collects every message nvcam logs (FFmpeg's included, at its own default level) while alive,
/// every camera's of the test binary (the callback is global).
pub struct LogCapture;

impl LogCapture {
    pub fn start() -> LogCapture {
        LogCapture::at(NVCAM_LOG_TRACE)
    }
    /// Only messages at `level` or more severe (a test with hundreds of cameras would otherwise
    /// collect a trace line per packet and picture).
    pub fn at(level: i32) -> LogCapture {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
        assert_eq!(unsafe { nvcam_log_set_callback(Some(on_log), std::ptr::null_mut(), level) }, NVCAM_OK);
        LogCapture
    }
    pub fn lines(&self) -> Vec<(i32, String)> {
        LOG.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        unsafe { nvcam_log_set_callback(None, std::ptr::null_mut(), NVCAM_LOG_OFF) };
    }
}

/// Camera options as a host sets them (`nvcam_camera_options_init`): CPU decoding, 3 s to open or
/// stall, reconnects 100 ms to 1 s apart; the FFmpeg options string kept alive beside them.
pub struct Opts {
    pub o: nvcam_camera_options,
    _ffmpeg: Option<CString>,
}

// A test spells its options out: `new` is the starting point, not a default.
#[allow(clippy::new_without_default)]
impl Opts {
    pub fn new() -> Opts {
        let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { nvcam_camera_options_init(&mut o) }, NVCAM_OK);
        o.device = NVCAM_DEVICE_CPU;
        o.open_timeout_ms = 3000;
        o.stall_timeout_ms = 3000;
        o.reconnect_min_ms = 100;
        o.reconnect_max_ms = 1000;
        Opts { o, _ffmpeg: None }
    }
    pub fn ffmpeg(mut self, s: &str) -> Opts {
        let c = CString::new(s).unwrap();
        self.o.ffmpeg_options = c.as_ptr();
        self._ffmpeg = Some(c);
        self
    }
    pub fn with(mut self, f: impl FnOnce(&mut nvcam_camera_options)) -> Opts {
        f(&mut self.o);
        self
    }
}
