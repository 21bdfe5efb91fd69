//! What a camera's worker and the host's calls share: state, the mailbox of the newest frame, the
//! in-flight gate, counters, errors, and the pools that frames still use.

use crate::config::Options;
use crate::decode::{DecoderKind, Outcome};
use crate::frame::Frame;
use crate::input::Interrupt;
use crate::pool::{MemoryKind, Pool};
use crate::decode::select::CameraBackend;
use crate::redact::redact_url;
use crate::source::Source;
use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Where a camera is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CameraState {
    Connecting,
    Streaming,
    /// Connected, but no packet for half the stall timeout (shown, not stored).
    Stalled,
    Reconnecting,
    Closed,
    /// A permanent failure; no retries until a manual reconnect.
    Failed,
    /// A file reached its end (without looping).
    Ended,
}

impl CameraState {
    const ALL: [CameraState; 7] = [
        CameraState::Connecting,
        CameraState::Streaming,
        CameraState::Stalled,
        CameraState::Reconnecting,
        CameraState::Closed,
        CameraState::Failed,
        CameraState::Ended,
    ];

    fn from_u8(v: u8) -> CameraState {
        Self::ALL[v as usize]
    }

    /// The state another nvcam process sent (a publisher's), if it is one.
    pub(crate) fn from_code(v: u32) -> Option<CameraState> {
        Self::ALL.get(v as usize).copied()
    }

    pub(super) fn as_u8(self) -> u8 {
        Self::ALL.iter().position(|&s| s == self).expect("listed") as u8
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CameraState::Connecting => "connecting",
            CameraState::Streaming => "streaming",
            CameraState::Stalled => "stalled",
            CameraState::Reconnecting => "reconnecting",
            CameraState::Closed => "closed",
            CameraState::Failed => "failed",
            CameraState::Ended => "ended",
        }
    }
}

/// "Stop playing, then wait for whoever is inside": the worker takes an in-flight guard only
/// while playing, atomically with that check, before it touches decoder memory or a slot.
pub(super) struct Gate {
    m: Mutex<(bool, u32)>,
    cv: Condvar,
}

pub(super) struct InFlight<'a>(&'a Gate);

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
    pub(super) fn enter(&self) -> Option<InFlight<'_>> {
        let mut g = self.m.lock();
        if !g.0 {
            return None;
        }
        g.1 += 1;
        Some(InFlight(self))
    }
    pub(super) fn set_playing(&self, on: bool) {
        self.m.lock().0 = on;
    }
    /// Stops playing and waits up to `d` for in-flight work; false if it was still running.
    pub(super) fn stop_and_wait(&self, d: Duration) -> bool {
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
pub(super) struct Counters {
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
    /// Pictures decoded that were not exact.
    pub corrupt: AtomicU64,
    /// Exact pictures handed to the host.
    pub exact: AtomicU64,
    /// Packets (or ends of stream) the decoder refused as corrupt.
    pub decode_errors: AtomicU64,
    pub packets_lost: AtomicU64,
    /// Datagrams the kernel dropped at the sessions' UDP sockets (see `rtp_loss::sockets`).
    pub kernel_drops: AtomicU64,
    /// RTCP key-frame requests sent.
    pub keyframe_requests: AtomicU64,
    /// Losses in a row after which key-frame requests brought no recovery point within
    /// `loss_keyframe_request_wait_ms`: from `KEYFRAME_REQUESTS_IGNORED` on, the reconnect rule
    /// no longer waits for them (a camera that ignores PLI/FIR).
    pub keyframe_requests_unanswered: AtomicU32,
    pub last_loss_ns: AtomicU64,
    /// The reconnect rule's figures (see `reconnect_rule`), ms; 0 until known.
    pub key_interval_ms: AtomicU32,
    pub reconnect_to_key_ms: AtomicU32,
    pub loss_reconnects: AtomicU64,
    /// Reconnects for losses since the last exact picture.
    pub unhelpful_reconnects: AtomicU32,
    /// Sessions that ended in a panic (each one reconnected).
    pub session_panics: AtomicU64,
    /// Streams and pictures refused for their size (over the limit, or a size change past the
    /// churn bound).
    pub pictures_refused: AtomicU64,
}

/// The camera's errors: the last of anything (worker or call), and the worker's own.
#[derive(Default)]
struct Errors {
    last: Option<Error>,
    /// Why the camera is not streaming. Texts built from it (get_frame's timeout, the failed
    /// state) never nest an earlier call's error.
    cause: Option<Error>,
}

/// What the current connection decodes.
#[derive(Default)]
pub(super) struct StreamInfo {
    pub decoder: Option<DecoderKind>,
    pub codec: String,
    pub size: (u32, u32),
}

/// The current pool, old pools that clones still keep alive (for stats), and when the last pools
/// were made in place of a current one (the churn bound).
#[derive(Default)]
pub(super) struct Pools {
    pub current: Option<Arc<Pool>>,
    pub old: Vec<Weak<Pool>>,
    pub replaced_at: std::collections::VecDeque<std::time::Instant>,
    /// The camera is published, and its memory could not be made shareable: it keeps pools of
    /// its own kind rather than try again every picture.
    pub no_export: bool,
}

impl Pools {
    /// Retires the current pool: it lives on while frames use it. Pools no frame keeps any more
    /// are forgotten here too, so a camera whose size keeps changing keeps no list that grows.
    pub(super) fn retire(&mut self) {
        self.old.retain(|w| w.strong_count() > 0);
        if let Some(p) = self.current.take() {
            self.old.push(Arc::downgrade(&p));
        }
    }
}

pub(crate) struct Shared {
    pub handle: AtomicU64,
    pub url: String,
    pub source: Source,
    pub opts: Options,
    state: AtomicU8,
    pub(super) gate: Gate,
    /// The newest frame not yet taken, and its condition (frame arrived, state changed, taken).
    pub(super) mailbox: Mutex<Option<Arc<Frame>>>,
    pub(super) mailbox_cv: Condvar,
    /// The last exact frame, kept by a camera that holds it through losses
    /// (`IntegrityPolicy::HoldLastExact`): one pool slot.
    pub(super) last_exact: Mutex<Option<Arc<Frame>>>,
    /// The interval between recovery points, learnt across the camera's sessions (see
    /// `reconnect_rule`): a session that reconnected for a loss starts with what the last one knew.
    pub(super) gop: Mutex<super::reconnect_rule::GopEstimate>,
    /// How far apart this camera's reconnects for key frames go (across its sessions).
    pub(super) loss_reconnects: Mutex<super::reconnect_rule::Spacing>,
    /// Wakes the worker from a backoff sleep (close, manual reconnect).
    wake: (Mutex<()>, Condvar),
    pub irq: Arc<Interrupt>,
    pub(super) counters: Counters,
    errors: Mutex<Errors>,
    pub(super) pools: Mutex<Pools>,
    pub(super) stream: Mutex<StreamInfo>,
    exited: (Mutex<bool>, Condvar),
    /// When the worker last read a packet, in ms after `born` (for the stalled state).
    born: Instant,
    last_packet_ms: AtomicU64,
    /// Backend state that outlives connections (the camera's GPU stream).
    pub(super) backend: CameraBackend,
    /// Decode latencies of the last second.
    pub(super) latency: Mutex<super::latency::Window>,
    /// The loss handling before gap placement and the GOP-aware reconnect, chosen at open
    /// (`hooks::set_legacy_loss_handling`).
    #[cfg(feature = "test-hooks")]
    pub(super) legacy_loss: bool,
    /// Key frames after a loss only by reconnecting (`hooks::set_no_keyframe_requests`).
    #[cfg(feature = "test-hooks")]
    pub(super) no_keyframe_requests: bool,
    /// The decoder's own error reports ignored (`hooks::set_no_decoder_reports`).
    #[cfg(feature = "test-hooks")]
    pub(super) no_decoder_reports: bool,
    /// The camera's packet cache and recordings (idle unless the host asks for them).
    pub(super) recorder: Arc<crate::record::Recorder>,
    /// Where this camera is published for other processes (`nvcam_camera_publish`).
    pub(super) publication: Mutex<Option<Arc<crate::share::publisher::Publication>>>,
    /// An attached camera (`nvcam://NAME`): its source as the publisher last reported it.
    pub(super) source_status: Mutex<Option<crate::share::wire::StatusMsg>>,
}

impl Shared {
    pub(super) fn new(url: &str, source: Source, opts: Options) -> Shared {
        Shared {
            handle: AtomicU64::new(0),
            url: url.to_string(),
            source,
            opts,
            state: AtomicU8::new(CameraState::Connecting.as_u8()),
            gate: Gate::new(),
            mailbox: Mutex::new(None),
            mailbox_cv: Condvar::new(),
            last_exact: Mutex::new(None),
            gop: Mutex::new(Default::default()),
            loss_reconnects: Mutex::new(Default::default()),
            wake: (Mutex::new(()), Condvar::new()),
            irq: Interrupt::new(),
            counters: Counters::default(),
            errors: Mutex::new(Errors::default()),
            pools: Mutex::new(Pools::default()),
            stream: Mutex::new(StreamInfo::default()),
            exited: (Mutex::new(false), Condvar::new()),
            born: Instant::now(),
            last_packet_ms: AtomicU64::new(0),
            backend: CameraBackend::default(),
            latency: Mutex::new(super::latency::Window::new()),
            #[cfg(feature = "test-hooks")]
            legacy_loss: super::hooks::legacy(),
            #[cfg(feature = "test-hooks")]
            no_keyframe_requests: super::hooks::no_keyframe_requests(),
            #[cfg(feature = "test-hooks")]
            no_decoder_reports: super::hooks::no_decoder_reports(),
            recorder: Arc::default(),
            publication: Mutex::new(None),
            source_status: Mutex::new(None),
        }
    }

    pub(super) fn handle(&self) -> u64 {
        self.handle.load(Ordering::Acquire)
    }

    pub(super) fn name(&self) -> String {
        redact_url(&self.url)
    }

    pub(crate) fn state(&self) -> CameraState {
        CameraState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Whether the source is a live network stream (not a file, not the test source).
    /// Where this camera is published, if it is.
    pub(super) fn publication(&self) -> Option<Arc<crate::share::publisher::Publication>> {
        self.publication.lock().clone()
    }

    pub(super) fn is_network(&self) -> bool {
        matches!(self.source, Source::Network(_))
    }

    /// The state as the host sees it: a streaming network camera that has had no packet for half
    /// its stall timeout shows as stalled while it still waits (the reconnect comes at the
    /// timeout). Files and the test source pause on purpose (pacing, lossless waits for the host).
    pub(super) fn visible_state(&self) -> CameraState {
        let s = self.state();
        if s == CameraState::Streaming && self.is_network() && !self.opts.flags.lossless {
            let quiet = (self.born.elapsed().as_millis() as u64).saturating_sub(self.last_packet_ms.load(Ordering::Relaxed));
            if quiet >= (self.opts.stall_timeout.as_millis() as u64 / 2).max(100) {
                return CameraState::Stalled;
            }
        }
        s
    }

    pub(super) fn note_packet(&self) {
        self.last_packet_ms.store(self.born.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    pub(super) fn set_state(&self, s: CameraState) {
        let old = CameraState::from_u8(self.state.swap(s.as_u8(), Ordering::AcqRel));
        if old != s {
            log::debug!("camera {}: {} -> {}", self.name(), old.name(), s.name());
            self.mailbox_cv.notify_all();
        }
    }

    /// Records an error of the worker's (connection, stream, decode).
    pub(super) fn set_error(&self, e: &Error) {
        log::warn!("camera {}: {e}", self.name());
        let mut er = self.errors.lock();
        er.last = Some(e.clone());
        er.cause = Some(e.clone());
    }

    /// Reports what a decoder call met besides success; true if a frame was lost to it.
    pub(super) fn report(&self, o: Outcome) -> bool {
        match o {
            Outcome::Clean | Outcome::Corrupt(None) => false,
            Outcome::Reported(w) | Outcome::Corrupt(Some(w)) => {
                self.set_error(&w);
                false
            }
            Outcome::Dropped(w) => {
                self.set_error(&w);
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
    }

    /// The worker's last error, not a call's.
    pub(super) fn cause(&self) -> Option<Error> {
        self.errors.lock().cause.clone()
    }

    /// Records an error a call on this camera returned (already logged by the boundary).
    pub(super) fn note_api_error(&self, e: &Error) {
        self.errors.lock().last = Some(e.clone());
    }

    pub(super) fn last_error(&self) -> Option<Error> {
        self.errors.lock().last.clone()
    }

    /// (slots total, slots in use, bytes held) across the current pool and old pools that clones
    /// still keep alive, and the current pool's memory.
    pub(super) fn pool_usage(&self) -> (u32, u32, u64, Option<(MemoryKind, i32)>) {
        let mut pools = self.pools.lock();
        let (mut total, mut used, mut bytes) = (0, 0, 0);
        let memory = pools.current.as_ref().map(|p| {
            total += p.slots();
            used += p.in_use();
            bytes += p.bytes();
            (p.storage().kind(), p.storage().device())
        });
        pools.old.retain(|w| w.strong_count() > 0);
        for p in pools.old.iter().filter_map(Weak::upgrade) {
            used += p.in_use();
            bytes += p.bytes();
        }
        (total as u32, used as u32, bytes, memory)
    }

    pub(super) fn mark_exited(&self) {
        *self.exited.0.lock() = true;
        self.exited.1.notify_all();
        self.mailbox_cv.notify_all();
    }

    /// The worker's exit: waits up to `d`.
    pub(super) fn wait_exited(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        let mut g = self.exited.0.lock();
        while !*g {
            if self.exited.1.wait_until(&mut g, end).timed_out() {
                return *g;
            }
        }
        true
    }

    /// Sleeps up to `d`, or until a stop or a manual reconnect.
    pub(super) fn sleep_interruptible(&self, d: Duration) {
        let end = Instant::now() + d;
        let mut g = self.wake.0.lock();
        while !self.irq.stopping() && !self.irq.kicked() {
            if self.wake.1.wait_until(&mut g, end).timed_out() {
                break;
            }
        }
    }

    pub(super) fn wake_worker(&self) {
        let _g = self.wake.0.lock();
        self.wake.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn state_round_trips() {
        for s in CameraState::ALL {
            assert_eq!(CameraState::from_u8(s.as_u8()), s);
        }
    }

    /// A stream that changes size keeps retiring pools: the list of old ones held every pool
    /// since the last `stats` call (a camera whose stats nobody reads grew it for ever). Retiring
    /// forgets the pools no frame keeps.
    #[test]
    fn retiring_pools_forgets_those_no_frame_keeps() {
        let geom = crate::pool::Geometry::new(16, 16, crate::pool::Depth::Eight);
        let mut pools = Pools::default();
        let kept = Pool::host(geom, 2).unwrap();
        pools.current = Some(kept.clone());
        for _ in 0..100 {
            pools.retire();
            pools.current = Some(Pool::host(geom, 2).unwrap());
        }
        assert_eq!(pools.old.len(), 2, "the pool a frame keeps and the one just retired");
        assert!(pools.old.iter().any(|w| w.upgrade().is_some_and(|p| Arc::ptr_eq(&p, &kept))));
    }
}
