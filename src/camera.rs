//! A camera: one worker thread that demuxes, decodes, copies into the pool and publishes, and the
//! calls the host makes on it (get a frame, stats, reconnect, close).
//!
//! Ordering on close (the seed system's, which is what keeps a reconnect from pulling memory out
//! from under a reader): stop playing → wait for in-flight work (bounded) → force-release the
//! camera's clones → stop the worker, which tears the decoder down on its way out. The decoder never
//! owns memory a frame points at (pixels are copied into the camera's pool), so automatic
//! reconnects keep clones valid; `release_clones_on_reconnect` restores the seed's stricter rule.

use crate::decode::{Decoder, SoftwareDecoder};
use crate::frame::Frame;
use crate::input::{self, Interrupt, Read};
use crate::pool::{Geometry, Pool};
use crate::registry;
use crate::source::{self, Source};
use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Camera states (values from the C API).
pub mod state {
    use crate::api::*;
    pub const CONNECTING: u32 = NVCAM_STATE_CONNECTING;
    pub const STREAMING: u32 = NVCAM_STATE_STREAMING;
    pub const STALLED: u32 = NVCAM_STATE_STALLED;
    pub const RECONNECTING: u32 = NVCAM_STATE_RECONNECTING;
    pub const CLOSED: u32 = NVCAM_STATE_CLOSED;
    pub const FAILED: u32 = NVCAM_STATE_FAILED;
    pub const ENDED: u32 = NVCAM_STATE_ENDED;
    pub fn name(s: u32) -> &'static str {
        ["connecting", "streaming", "stalled", "reconnecting", "closed", "failed", "ended"]
            .get(s as usize)
            .copied()
            .unwrap_or("?")
    }
}

/// Camera open flags (values from the C API).
pub mod flags {
    use crate::api::*;
    pub const ASYNC_OPEN: u32 = NVCAM_OPEN_ASYNC;
    pub const LOOP: u32 = NVCAM_OPEN_LOOP;
    pub const LOSSLESS: u32 = NVCAM_OPEN_LOSSLESS;
    pub const NO_PACING: u32 = NVCAM_OPEN_NO_PACING;
    pub const RELEASE_CLONES_ON_RECONNECT: u32 = NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT;
    pub const ALL: u32 = NVCAM_OPEN_ALL;
}

/// Validated camera options (the C struct, with defaults filled in).
#[derive(Clone, Debug)]
pub struct Options {
    pub flags: u32,
    pub pool_slots: usize,
    pub device: i32,
    pub decoder: u32,
    pub open_timeout: Duration,
    pub stall_timeout: Duration,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    pub decode_threads: usize,
    pub ffmpeg: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            flags: 0,
            pool_slots: 4,
            device: -1,
            decoder: 0,
            open_timeout: Duration::from_millis(5000),
            stall_timeout: Duration::from_millis(5000),
            reconnect_min: Duration::from_millis(250),
            reconnect_max: Duration::from_millis(10_000),
            decode_threads: 0,
            ffmpeg: Vec::new(),
        }
    }
}

/// "Stop playing, then wait for whoever is inside": the worker takes an in-flight guard only
/// while playing, atomically with that check, before it touches decoder memory or a slot.
struct Gate {
    m: Mutex<(bool, u32)>,
    cv: Condvar,
}

struct InFlight<'a>(&'a Gate);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut g = self.0.m.lock();
        g.1 -= 1;
        if g.1 == 0 {
            self.0.cv.notify_all();
        }
    }
}

impl Gate {
    fn new() -> Gate {
        Gate { m: Mutex::new((true, 0)), cv: Condvar::new() }
    }
    fn enter(&self) -> Option<InFlight<'_>> {
        let mut g = self.m.lock();
        if !g.0 {
            return None;
        }
        g.1 += 1;
        Some(InFlight(self))
    }
    fn set_playing(&self, on: bool) {
        self.m.lock().0 = on;
    }
    /// Stops playing and waits up to `d` for in-flight work; false if it was still running.
    fn stop_and_wait(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        let mut g = self.m.lock();
        g.0 = false;
        while g.1 > 0 {
            if self.cv.wait_until(&mut g, end).timed_out() {
                return g.1 == 0;
            }
        }
        true
    }
}

/// Counters the worker updates and `stats` reads.
#[derive(Default)]
pub struct Counters {
    pub decoded: AtomicU64,
    pub delivered: AtomicU64,
    pub dropped: AtomicU64,
    pub skipped: AtomicU64,
    pub reconnects: AtomicU64,
    pub attempt: AtomicU32,
    pub next_retry_ms: AtomicU32,
    pub stream_changes: AtomicU32,
    /// fps × 1000, over the last second.
    pub fps_milli: AtomicU64,
}

struct Latest {
    frame: Option<Arc<Frame>>,
}

/// What the worker and the API calls share.
pub struct Shared {
    pub handle: AtomicU64,
    pub url: String,
    pub source: Source,
    pub opts: Options,
    state: AtomicU32,
    gate: Gate,
    latest: Mutex<Latest>,
    latest_cv: Condvar,
    /// Wakes the worker from a backoff sleep (close, manual reconnect).
    wake: (Mutex<()>, Condvar),
    pub irq: Arc<Interrupt>,
    pub counters: Counters,
    last_error: Mutex<Option<Error>>,
    /// The worker's last error alone: why the camera is not streaming. Texts built from it
    /// (get_frame's timeout, the failed state) never nest an earlier call's error.
    cause: Mutex<Option<Error>>,
    pool: Mutex<Option<Arc<Pool>>>,
    old_pools: Mutex<Vec<Weak<Pool>>>,
    decoder_name: Mutex<&'static str>,
    size: AtomicU64,
    codec: Mutex<String>,
    exited: (Mutex<bool>, Condvar),
    /// When the worker last read a packet, in ms after `born` (for the stalled state).
    born: Instant,
    last_packet_ms: AtomicU64,
    /// Backend state that outlives connections (the camera's GPU stream).
    pub backend: crate::backend::CameraSlot,
}

impl Shared {
    pub fn state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }
    /// The state as the host sees it: a streaming network camera that has had no packet for half
    /// its stall timeout shows as stalled while it still waits (the reconnect comes at the
    /// timeout). Files and the test source pause on purpose (pacing, lossless waits for the host).
    pub fn visible_state(&self) -> u32 {
        let s = self.state();
        if s == state::STREAMING && matches!(self.source, Source::Network(_)) && self.opts.flags & flags::LOSSLESS == 0 {
            let quiet = (self.born.elapsed().as_millis() as u64).saturating_sub(self.last_packet_ms.load(Ordering::Relaxed));
            if quiet >= (self.opts.stall_timeout.as_millis() as u64 / 2).max(100) {
                return state::STALLED;
            }
        }
        s
    }
    fn note_packet(&self) {
        self.last_packet_ms.store(self.born.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn set_state(&self, s: u32) {
        let old = self.state.swap(s, Ordering::AcqRel);
        if old != s {
            log::debug!("camera {}: {} -> {}", input::redact(&self.url), state::name(old), state::name(s));
            self.latest_cv.notify_all();
        }
    }
    fn set_error(&self, e: &Error) {
        log::warn!("camera {}: {e}", input::redact(&self.url));
        *self.last_error.lock() = Some(e.clone());
        *self.cause.lock() = Some(e.clone());
    }
    /// The worker's last error (connection, stream, decode), not a call's.
    pub fn cause(&self) -> Option<Error> {
        self.cause.lock().clone()
    }
    /// Records an error a call on this camera returned (already logged by the boundary).
    pub fn note_api_error(&self, e: &Error) {
        *self.last_error.lock() = Some(e.clone());
    }
    pub fn last_error(&self) -> Option<Error> {
        self.last_error.lock().clone()
    }
    pub fn decoder_name(&self) -> &'static str {
        *self.decoder_name.lock()
    }
    pub fn codec(&self) -> String {
        self.codec.lock().clone()
    }
    pub fn size(&self) -> (u32, u32) {
        let s = self.size.load(Ordering::Relaxed);
        ((s >> 32) as u32, s as u32)
    }
    /// (slots total, slots in use, bytes held) across the current pool and old pools that clones
    /// still keep alive.
    pub fn pool_usage(&self) -> (u32, u32, u64) {
        let mut total = 0;
        let mut used = 0;
        let mut bytes = 0;
        if let Some(p) = self.pool.lock().as_ref() {
            total += p.slots();
            used += p.in_use();
            bytes += p.bytes();
        }
        let mut old = self.old_pools.lock();
        old.retain(|w| w.strong_count() > 0);
        for p in old.iter().filter_map(Weak::upgrade) {
            used += p.in_use();
            bytes += p.bytes();
        }
        (total as u32, used as u32, bytes)
    }
    /// The worker's exit: waits up to `d`.
    fn wait_exited(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        let mut g = self.exited.0.lock();
        while !*g {
            if self.exited.1.wait_until(&mut g, end).timed_out() {
                return *g;
            }
        }
        true
    }
    fn sleep_interruptible(&self, d: Duration) {
        let end = Instant::now() + d;
        let mut g = self.wake.0.lock();
        while !self.irq.stopping() && !self.irq.kicked() {
            if self.wake.1.wait_until(&mut g, end).timed_out() {
                break;
            }
        }
    }
    fn wake_worker(&self) {
        let _g = self.wake.0.lock();
        self.wake.1.notify_all();
    }
}

/// A camera as the handle table holds it.
pub struct Camera {
    pub shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

impl Camera {
    /// Validates the URL, starts the worker and (unless `ASYNC_OPEN`) waits for the first
    /// connection, so a bad URL or option fails here with its reason and leaves no thread behind.
    pub fn open(url: &str, opts: Options) -> Result<Arc<Camera>> {
        let source = source::parse(url)?;
        let mut opts = opts;
        if source.is_rtsp() && !opts.ffmpeg.iter().any(|(k, _)| k == "rtsp_transport") {
            opts.ffmpeg.push(("rtsp_transport".into(), "tcp".into()));
        }
        // Probing a live stream's frame rate reads ~20 frames (0.7 s at 30 fps) before the first
        // frame comes out, on every reconnect; nothing here needs it (network streams are not paced).
        if matches!(source, Source::Network(_)) && !opts.ffmpeg.iter().any(|(k, _)| k == "fpsprobesize") {
            opts.ffmpeg.push(("fpsprobesize".into(), "0".into()));
        }
        let shared = Arc::new(Shared {
            handle: AtomicU64::new(0),
            url: url.to_string(),
            source,
            opts,
            state: AtomicU32::new(state::CONNECTING),
            gate: Gate::new(),
            latest: Mutex::new(Latest { frame: None }),
            latest_cv: Condvar::new(),
            wake: (Mutex::new(()), Condvar::new()),
            irq: Interrupt::new(),
            counters: Counters::default(),
            last_error: Mutex::new(None),
            cause: Mutex::new(None),
            pool: Mutex::new(None),
            old_pools: Mutex::new(Vec::new()),
            decoder_name: Mutex::new("none"),
            size: AtomicU64::new(0),
            codec: Mutex::new(String::new()),
            exited: (Mutex::new(false), Condvar::new()),
            born: Instant::now(),
            last_packet_ms: AtomicU64::new(0),
            backend: Default::default(),
        });
        Ok(Arc::new(Camera { shared, worker: Mutex::new(None) }))
    }

    /// Starts the worker once the camera has its handle (frames carry it as their owner).
    pub fn start(&self, handle: u64) -> Result<()> {
        let sh = self.shared.clone();
        sh.handle.store(handle, Ordering::Release);
        let sync_open = sh.opts.flags & flags::ASYNC_OPEN == 0;
        let (tx, rx) = std::sync::mpsc::channel::<Result<()>>();
        let name = format!("nvcam-cam-{:x}", handle & 0xffffff);
        let worker = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                let tx = if sync_open { Some(tx) } else { None };
                let sh2 = sh.clone();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || worker_main(&sh2, tx)));
                if r.is_err() {
                    sh.set_error(&Error::new(NVCAM_E_PANIC, "camera worker panicked (see log)"));
                    sh.set_state(state::FAILED);
                }
                *sh.exited.0.lock() = true;
                sh.exited.1.notify_all();
                sh.latest_cv.notify_all();
            })
            .map_err(|e| Error::internal(format!("cannot start camera thread: {e}")))?;
        *self.worker.lock() = Some(worker);
        if sync_open {
            // The worker bounds the open itself; the margin covers probing after the connect.
            let wait = self.shared.opts.open_timeout * 2 + Duration::from_secs(1);
            match rx.recv_timeout(wait) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    self.close(Duration::from_millis(2000));
                    return Err(e);
                }
                Err(_) => {
                    self.close(Duration::from_millis(2000));
                    return Err(Error::timeout(format!(
                        "timeout after {} ms opening '{}'",
                        wait.as_millis(),
                        input::redact(&self.shared.url)
                    )));
                }
            }
        }
        Ok(())
    }

    /// Waits for the newest frame not yet handed out.
    pub fn get_frame(&self, timeout: Duration) -> Result<Arc<Frame>> {
        let sh = &self.shared;
        let end = Instant::now() + timeout;
        let mut l = sh.latest.lock();
        loop {
            if let Some(f) = l.frame.take() {
                sh.counters.delivered.fetch_add(1, Ordering::Relaxed);
                sh.latest_cv.notify_all(); // a lossless worker waits for this
                drop(l);
                // A device frame is published as soon as its copy is enqueued; the host gets it
                // once that copy is done (almost always already), so it can read it anywhere.
                f.lease().pool().storage().wait_ready(f.lease().index())?;
                return Ok(f);
            }
            match sh.state() {
                state::CLOSED => return Err(Error::new(NVCAM_E_CLOSED, "camera is closed")),
                state::FAILED => {
                    let e = sh.cause().unwrap_or_else(|| Error::new(NVCAM_E_FAILED, "camera failed"));
                    return Err(Error::new(NVCAM_E_FAILED, format!("camera failed: {}", e.msg)));
                }
                state::ENDED => return Err(Error::new(NVCAM_E_IO, "end of file (open with NVCAM_OPEN_LOOP to repeat)")),
                _ => {}
            }
            if sh.latest_cv.wait_until(&mut l, end).timed_out() && l.frame.is_none() {
                let why = match sh.cause() {
                    Some(e) if sh.state() != state::STREAMING => format!(" (camera {}: {})", state::name(sh.state()), e.msg),
                    _ => String::new(),
                };
                return Err(Error::timeout(format!("no new frame within {} ms{why}", timeout.as_millis())));
            }
        }
    }

    /// A snapshot of the camera's counters for `nvcam_camera_stats`.
    pub fn stats(&self, handle: u64) -> crate::api::nvcam_camera_stats {
        let sh = &self.shared;
        let c = &sh.counters;
        let (total, used, bytes) = sh.pool_usage();
        let (width, height) = sh.size();
        let (memory, device) = match sh.pool.lock().as_ref() {
            Some(p) => (p.storage().kind() as u32, p.storage().device()),
            None => (0, -1),
        };
        crate::api::nvcam_camera_stats {
            struct_size: std::mem::size_of::<crate::api::nvcam_camera_stats>() as u32,
            state: sh.visible_state(),
            frames_decoded: c.decoded.load(Ordering::Relaxed),
            frames_delivered: c.delivered.load(Ordering::Relaxed),
            frames_dropped: c.dropped.load(Ordering::Relaxed),
            frames_skipped: c.skipped.load(Ordering::Relaxed),
            reconnects: c.reconnects.load(Ordering::Relaxed),
            pool_slots_total: total,
            pool_slots_in_use: used,
            bytes_held: bytes,
            fps: c.fps_milli.load(Ordering::Relaxed) as f64 / 1000.0,
            width,
            height,
            reconnect_attempt: c.attempt.load(Ordering::Relaxed),
            next_retry_ms: c.next_retry_ms.load(Ordering::Relaxed),
            stream_changes: c.stream_changes.load(Ordering::Relaxed),
            memory,
            device,
            decoder: crate::backend::policy_of(sh.decoder_name()),
            last_error_code: sh.last_error().map(|e| e.code).unwrap_or(0),
            _pad0: 0,
            live_handles: crate::registry::per_owner().get(&handle).copied().unwrap_or(0) as u64,
            reserved: [0; 4],
        }
    }

    /// Aborts the current connection and reopens at once, in any state.
    pub fn reconnect(&self) -> Result<()> {
        let sh = &self.shared;
        if sh.state() == state::CLOSED {
            return Err(Error::new(NVCAM_E_CLOSED, "camera is closed"));
        }
        sh.irq.kick();
        sh.wake_worker();
        Ok(())
    }

    /// Closes in the seed order; returns false if the worker did not exit within `timeout`
    /// (it still exits on its own; nothing it holds is reachable from a handle any more).
    pub fn close(&self, timeout: Duration) -> bool {
        let sh = &self.shared;
        let end = Instant::now() + timeout;
        sh.irq.stop();
        let drained = sh.gate.stop_and_wait(timeout);
        registry::force_release_owner(sh.handle.load(Ordering::Acquire));
        let pending = sh.latest.lock().frame.take();
        drop(pending);
        // Retire the pool (device memory goes to the deferred queue, fenced by its events) before
        // the worker closes the decoder on its way out.
        if drained {
            *sh.pool.lock() = None;
        }
        sh.set_state(state::CLOSED);
        sh.wake_worker();
        let exited = sh.wait_exited(end.saturating_duration_since(Instant::now()));
        let worker = self.worker.lock().take();
        match worker {
            Some(w) if exited => {
                let _ = w.join();
            }
            Some(w) => crate::library::adopt_lingering(w),
            None => {}
        }
        *sh.pool.lock() = None;
        if !drained || !exited {
            log::warn!(
                "camera {}: close timed out after {} ms; its worker finishes on its own",
                input::redact(&sh.url),
                timeout.as_millis()
            );
        }
        drained && exited
    }
}

enum SessionEnd {
    Stop,
    Eof,
    Kicked,
}

fn backoff(opts: &Options, attempt: u32) -> Duration {
    let min = opts.reconnect_min.as_millis().max(1) as u64;
    let max = opts.reconnect_max.as_millis().max(min as u128) as u64;
    let exp = min.saturating_mul(1u64 << attempt.min(20)).min(max);
    // ±25 % jitter, so cameras that dropped together do not reconnect in lockstep.
    let jitter = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        (h.finish() % 1001) as i64 - 500
    };
    let d = exp as i64 + exp as i64 * jitter / 2000;
    Duration::from_millis(d.clamp(1, max as i64) as u64)
}

fn is_permanent(e: &Error) -> bool {
    matches!(e.code, NVCAM_E_AUTH | NVCAM_E_BAD_OPTION | NVCAM_E_UNSUPPORTED | NVCAM_E_INVALID_ARGUMENT)
}

fn worker_main(sh: &Arc<Shared>, mut first: Option<std::sync::mpsc::Sender<Result<()>>>) {
    let mut attempt: u32 = 0;
    let mut ever_connected = false;
    // Whether the last session had connected: its end (a drop) starts a reconnect.
    let mut connected = false;
    let mut first_try = true;
    loop {
        if sh.irq.stopping() {
            break;
        }
        let kicked = sh.irq.take_kick();
        // `reconnects` counts drops and manual requests, not the failed attempts in between
        // (those are `reconnect_attempt`).
        if !first_try && (connected || kicked) {
            sh.counters.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        first_try = false;
        sh.set_state(if ever_connected { state::RECONNECTING } else { state::CONNECTING });
        if ever_connected && sh.opts.flags & flags::RELEASE_CLONES_ON_RECONNECT != 0 {
            registry::force_release_owner(sh.handle.load(Ordering::Acquire));
        }
        connected = false;
        let r = session(sh, &mut first, &mut attempt, &mut connected);
        ever_connected |= connected;
        if let Some(tx) = first.take() {
            // The first open failed: open() reports it and closes; no retry storm.
            let _ = tx.send(r.as_ref().map(|_| ()).map_err(Clone::clone));
            if r.is_err() {
                break;
            }
        }
        match r {
            Ok(SessionEnd::Stop) => break,
            Ok(SessionEnd::Kicked) => {
                attempt = 0;
                continue;
            }
            Ok(SessionEnd::Eof) if !sh.source.is_live() && sh.opts.flags & flags::LOOP == 0 => {
                sh.set_state(state::ENDED);
                wait_for_kick(sh);
                continue;
            }
            Ok(SessionEnd::Eof) => {
                if sh.source.is_live() {
                    sh.set_error(&Error::new(NVCAM_E_IO, "stream ended (EOF on a live source)"));
                }
            }
            Err(e) if e.code == NVCAM_E_CLOSED => break,
            Err(_) if sh.irq.kicked() => {}
            Err(e) => {
                sh.set_error(&e);
                if is_permanent(&e) {
                    sh.set_state(state::FAILED);
                    wait_for_kick(sh);
                    continue;
                }
            }
        }
        if sh.irq.stopping() {
            break;
        }
        if sh.irq.kicked() {
            attempt = 0;
            continue;
        }
        let d = backoff(&sh.opts, attempt);
        attempt = attempt.saturating_add(1);
        sh.counters.attempt.store(attempt, Ordering::Relaxed);
        sh.counters.next_retry_ms.store(d.as_millis() as u32, Ordering::Relaxed);
        if sh.state() != state::STALLED {
            sh.set_state(state::RECONNECTING);
        }
        sh.sleep_interruptible(d);
        sh.counters.next_retry_ms.store(0, Ordering::Relaxed);
    }
    sh.gate.set_playing(false);
}

/// Failed or ended: wait (without spinning) for a manual reconnect or close.
fn wait_for_kick(sh: &Shared) {
    while !sh.irq.stopping() && !sh.irq.kicked() {
        sh.sleep_interruptible(Duration::from_millis(500));
    }
}

fn make_decoder(sh: &Shared, input: &input::Input) -> Result<Box<dyn Decoder>> {
    let stream = input.stream();
    if let Some(d) = crate::backend::make_decoder(&sh.opts, &stream, &sh.backend)? {
        return Ok(d);
    }
    Ok(Box::new(SoftwareDecoder::new(&stream, sh.opts.decode_threads)?))
}

/// One connection: open, decode until it ends, fails, stalls or is stopped.
fn session(
    sh: &Arc<Shared>,
    first: &mut Option<std::sync::mpsc::Sender<Result<()>>>,
    attempt: &mut u32,
    connected: &mut bool,
) -> Result<SessionEnd> {
    let o = &sh.opts;
    let mut input = input::open(&sh.source, &o.ffmpeg, &sh.irq, o.open_timeout)?;
    let mut dec = make_decoder(sh, &input)?;
    let codec = format!("{:?}", input.stream().parameters().id()).to_lowercase();
    {
        let mut c = sh.codec.lock();
        if !c.is_empty() && *c != codec {
            log::info!(
                "camera {}: codec changed {} -> {codec}; new pool, the old one lives until its last clone is released",
                input::redact(&sh.url),
                *c
            );
            sh.counters.stream_changes.fetch_add(1, Ordering::Relaxed);
            // Another decoder may write another kind of memory: the next frame makes a new pool.
            if let Some(old) = sh.pool.lock().take() {
                sh.old_pools.lock().push(Arc::downgrade(&old));
            }
        }
        *c = codec;
    }
    *sh.decoder_name.lock() = dec.name();
    let mut dec_name = dec.name();
    if let Some(tx) = first.take() {
        let _ = tx.send(Ok(()));
    }
    *connected = true;
    sh.note_packet();
    sh.set_state(state::STREAMING);
    sh.gate.set_playing(true);

    let paced = o.flags & flags::NO_PACING == 0 && !matches!(sh.source, Source::Network(_));
    let mut clock: Option<(Instant, i64)> = None;
    let mut seq = sh.counters.decoded.load(Ordering::Relaxed);
    let mut fps_window = (Instant::now(), 0u64);
    let mut eof = false;
    loop {
        if sh.irq.stopping() {
            return Ok(SessionEnd::Stop);
        }
        if sh.irq.kicked() {
            return Ok(SessionEnd::Kicked);
        }
        if !eof {
            match input.read_video(o.stall_timeout) {
                Ok(Read::Packet(p)) => {
                    sh.note_packet();
                    dec.send_packet(&p)?
                }
                Ok(Read::Eof) => {
                    dec.send_eof()?;
                    eof = true;
                }
                Err(_) if sh.irq.kicked() => return Ok(SessionEnd::Kicked),
                Err(e) if e.code == NVCAM_E_CLOSED => return Ok(SessionEnd::Stop),
                Err(e) => {
                    if e.code == NVCAM_E_TIMEOUT {
                        sh.set_state(state::STALLED);
                    }
                    return Err(e);
                }
            }
            if let Some(w) = dec.take_warning() {
                // The decoder met an error and recovered by itself: report it, keep streaming.
                sh.set_error(&w);
            }
        }
        let mut got_any = false;
        while let Some(pic) = dec.receive()? {
            got_any = true;
            seq += 1;
            sh.counters.decoded.store(seq, Ordering::Relaxed);
            *attempt = 0;
            sh.counters.attempt.store(0, Ordering::Relaxed);
            sh.counters.next_retry_ms.store(0, Ordering::Relaxed);
            if paced && pic.pts_us != i64::MIN {
                let (t0, p0) = *clock.get_or_insert((Instant::now(), pic.pts_us));
                let due = t0 + Duration::from_micros((pic.pts_us - p0).max(0) as u64);
                let now = Instant::now();
                if due > now + Duration::from_millis(1) {
                    if due - now > Duration::from_secs(2) {
                        clock = Some((now, pic.pts_us)); // timestamp jump: re-anchor
                    } else {
                        sh.sleep_interruptible(due - now);
                    }
                }
            }
            let Some(_in_flight) = sh.gate.enter() else { return Ok(SessionEnd::Stop) };
            deliver(sh, &mut *dec, pic, seq)?;
            if dec.name() != dec_name {
                // A GPU decoder fell back to software + upload.
                dec_name = dec.name();
                *sh.decoder_name.lock() = dec_name;
            }
            fps_window.1 += 1;
            let el = fps_window.0.elapsed();
            if el >= Duration::from_secs(1) {
                sh.counters.fps_milli.store(fps_window.1 * 1_000_000 / el.as_millis().max(1) as u64, Ordering::Relaxed);
                fps_window = (Instant::now(), 0);
            }
        }
        crate::backend::maintain();
        if eof && !got_any {
            if !sh.source.is_live() && o.flags & flags::LOOP != 0 {
                input.rewind()?;
                if !dec.reset() {
                    dec = make_decoder(sh, &input)?;
                }
                clock = None;
                eof = false;
                continue;
            }
            return Ok(SessionEnd::Eof);
        }
    }
}

/// Copies a decoded picture into a free slot and publishes it as the camera's latest frame.
fn deliver(sh: &Arc<Shared>, dec: &mut dyn Decoder, pic: crate::decode::Picture, seq: u64) -> Result<()> {
    let geom = Geometry::nv12(pic.width, pic.height);
    let pool = {
        let mut cur = sh.pool.lock();
        match cur.as_ref() {
            // Same size in the memory this decoder writes (a device pool picks its own pitch).
            Some(p) if (p.geom.width, p.geom.height) == (pic.width, pic.height) && p.storage().device() == dec.pool_device() => {
                p.clone()
            }
            old => {
                if let Some(o) = old {
                    log::info!(
                        "camera {}: resolution {}x{} -> {}x{}; new pool, the old one lives until its last clone is released",
                        input::redact(&sh.url), o.geom.width, o.geom.height, pic.width, pic.height
                    );
                    sh.counters.stream_changes.fetch_add(1, Ordering::Relaxed);
                    sh.old_pools.lock().push(Arc::downgrade(o));
                }
                let p = dec.new_pool(geom, sh.opts.pool_slots)?;
                sh.size.store(((pic.width as u64) << 32) | pic.height as u64, Ordering::Relaxed);
                *cur = Some(p.clone());
                p
            }
        }
    };
    let lossless = sh.opts.flags & flags::LOSSLESS != 0;
    if lossless {
        // Wait for the host to take the previous frame (bounded by stop and kick).
        let mut l = sh.latest.lock();
        while l.frame.is_some() && !sh.irq.stopping() && !sh.irq.kicked() {
            sh.latest_cv.wait_for(&mut l, Duration::from_millis(50));
        }
    }
    let mut lease = loop {
        match pool.acquire() {
            Some(l) => break l,
            None if lossless && !sh.irq.stopping() && !sh.irq.kicked() => {
                std::thread::sleep(Duration::from_millis(2));
            }
            None => {
                sh.counters.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
    };
    if let Err(e) = dec.write_into(&mut lease) {
        return match dec.take_warning() {
            // The decoder recovered (e.g. recreated its hardware session): this frame is lost.
            Some(w) => {
                sh.set_error(&w);
                sh.counters.dropped.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            None => Err(e),
        };
    }
    let frame = Arc::new(Frame::new(lease, sh.handle.load(Ordering::Acquire), seq, pic.pts_us, now_ns()));
    let replaced = {
        let mut l = sh.latest.lock();
        let old = l.frame.replace(frame);
        sh.latest_cv.notify_all();
        old
    };
    if replaced.is_some() {
        sh.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let o = Options { reconnect_min: Duration::from_millis(100), reconnect_max: Duration::from_millis(1000), ..Default::default() };
        let d0 = backoff(&o, 0).as_millis();
        let d3 = backoff(&o, 3).as_millis();
        let d9 = backoff(&o, 9).as_millis();
        assert!((75..=125).contains(&d0), "{d0}");
        assert!((600..=1000).contains(&d3), "{d3}");
        assert!(d9 <= 1000, "{d9}");
    }

    #[test]
    fn gate_refuses_after_stop_and_waits_for_inflight() {
        let g = Arc::new(Gate::new());
        let g2 = g.clone();
        let t = std::thread::spawn(move || {
            let _in = g2.enter().unwrap();
            std::thread::sleep(Duration::from_millis(100));
        });
        std::thread::sleep(Duration::from_millis(20));
        let t0 = Instant::now();
        assert!(g.stop_and_wait(Duration::from_secs(2)));
        assert!(t0.elapsed() >= Duration::from_millis(50));
        assert!(g.enter().is_none());
        t.join().unwrap();
    }
}
