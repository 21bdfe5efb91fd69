//! A camera: one worker thread that demuxes, decodes, copies into the pool and publishes, and the
//! calls the host makes on it (get a frame, stats, reconnect, close).
//!
//! - [`shared`]: what the worker and the calls share (state, mailbox, gate, counters, errors).
//! - [`worker`]: the supervisor (sessions, reconnect schedule, permanent failures).
//! - [`session`]: one connection (read, decode, pace).
//! - [`deliver`]: pool switch, slot, publish.
//! - [`latency`]: packet arrival times (capture time, decode latency per frame).
//!
//! Ordering on close (the seed system's, which is what keeps a reconnect from pulling memory out
//! from under a reader): stop playing → wait for in-flight work (bounded) → force-release the
//! camera's clones → stop the worker, which tears the decoder down on its way out. The decoder never
//! owns memory a frame points at (pixels are copied into the camera's pool), so automatic
//! reconnects keep clones valid; `release_clones_on_reconnect` restores the seed's stricter rule.

mod attached;
mod deliver;
#[cfg(feature = "test-hooks")]
pub(crate) mod hooks;
mod latency;
mod loss_watch;
mod reconnect_rule;
mod session;
mod shared;
mod srt;
pub(crate) mod tls;
mod worker;

pub(crate) use shared::CameraState;

use crate::config::Options;
use crate::decode::DecoderKind;
use crate::frame::Frame;
use crate::pool::MemoryKind;
use crate::registry;
use crate::source::{self, Source};
use crate::status::*;
use parking_lot::Mutex;
use shared::Shared;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A snapshot of a camera's counters and state.
#[derive(Clone, Debug)]
pub(crate) struct Stats {
    pub state: CameraState,
    pub decoded: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub skipped: u64,
    pub reconnects: u64,
    pub slots_total: u32,
    pub slots_in_use: u32,
    pub bytes_held: u64,
    pub fps: f64,
    pub width: u32,
    pub height: u32,
    pub reconnect_attempt: u32,
    pub next_retry_ms: u32,
    pub stream_changes: u32,
    /// The current pool's memory and device (-1 for host), if there is a pool yet.
    pub memory: Option<(MemoryKind, i32)>,
    pub decoder: Option<DecoderKind>,
    /// Kind of the last error, if any.
    pub last_error: Option<ErrorKind>,
    pub live_handles: u64,
    /// Decode latency (packet read → frame published) over the last second, µs: (p50, p99).
    pub decode_latency_us: (u32, u32),
    /// Pictures decoded that were not exact, delivered or not.
    pub frames_corrupt: u64,
    /// Packets lost before the decoder (RTP gaps, packets flagged corrupt).
    pub packets_lost: u64,
    /// Wall clock of the last loss, ns since the epoch; 0 if none.
    pub last_loss_ns: u64,
    /// The interval between recovery points the camera estimated, ms; 0 until known.
    pub key_interval_ms: u32,
    /// How long a session takes from its start to its first key packet (an estimate), ms; 0
    /// until known.
    pub reconnect_to_key_ms: u32,
    /// Reconnects made because the next recovery point was further away than a reconnect.
    pub loss_reconnects: u64,
    /// Sessions that ended in a panic and reconnected.
    pub session_panics: u64,
    /// Streams and pictures refused for their size (over the limit, or past the churn bound).
    pub pictures_refused: u64,
    /// Processes attached to this camera (published), now.
    pub consumers: u32,
    /// Datagrams the kernel dropped at the camera's RTP/RTCP UDP sockets (Linux).
    pub kernel_drops: u64,
    /// Key frames asked of the camera with RTCP PLI/FIR.
    pub keyframe_requests: u64,
    /// An attached camera: its source as the publisher last reported it.
    pub source: Option<SourceStats>,
}

/// An attached camera's source, in the publishing process.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SourceStats {
    pub state: CameraState,
    pub decoded: u64,
    pub dropped: u64,
    pub fps: f64,
}

/// What a publisher tells attached processes of its camera.
fn source_status(sh: &Shared) -> crate::share::wire::StatusMsg {
    let c = &sh.counters;
    let r = Ordering::Relaxed;
    crate::share::wire::StatusMsg {
        state: sh.visible_state().as_u8() as u32,
        decoded: c.decoded.load(r),
        delivered: c.delivered.load(r),
        dropped: c.dropped.load(r),
        reconnects: c.reconnects.load(r),
        packets_lost: c.packets_lost.load(r),
        frames_corrupt: c.corrupt.load(r),
        fps_milli: c.fps_milli.load(r),
        consumers: 0,
        missed: 0,
    }
}

/// How a close ended.
pub(crate) enum Closed {
    /// Drained and joined within the timeout.
    Done,
    /// Timed out; the worker (if it was still running) finishes on its own and is returned so
    /// the library can join it at shutdown.
    TimedOut(Option<JoinHandle<()>>),
}

/// A camera as the handle table holds it.
pub(crate) struct Camera {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// Bumped (under the mailbox lock) by [`Camera::cancel_waits`]: a wait that began under an
    /// older value is cancelled, a wait that begins later is not.
    cancels: AtomicU64,
}

/// Who picks an RTSP camera's transport at each open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Choice {
    /// The options fix it (`rtsp_transport` is among them).
    Fixed,
    /// `Transport::Auto`: UDP, TCP when no packet comes over UDP (see [`crate::input::open`]).
    Auto,
    /// `Transport::Default`: TCP, UDP when the server refuses TCP (see [`crate::input::open`]).
    TcpThenUdp,
}

/// Turns an RTSP camera's `transport` into FFmpeg's `rtsp_transport`, or says that the open
/// chooses it itself.
///
/// `Default` is TCP-interleaved (lossless), or UDP where the server refuses TCP, unless the FFmpeg
/// options name `rtsp_transport`. Any other choice together with `rtsp_transport` in the FFmpeg
/// options is ambiguous and fails, naming both. `rtsps://` carries RTP inside its TLS connection
/// (FFmpeg forces TCP there), so a UDP, multicast or HTTP choice for it fails instead of being
/// ignored.
fn transport_options(source: &Source, opts: &mut Options) -> Result<Choice> {
    use crate::config::Transport;
    let given = opts.ffmpeg.iter().find(|(k, _)| k == "rtsp_transport").map(|(_, v)| v.clone());
    let tls = matches!(source, Source::Network(u) if u.starts_with("rtsps://"));
    let (name, ffmpeg) = match opts.transport {
        Transport::Default => {
            if given.is_some() {
                return Ok(Choice::Fixed);
            }
            if tls {
                opts.ffmpeg.push(("rtsp_transport".into(), "tcp".into()));
                return Ok(Choice::Fixed);
            }
            return Ok(Choice::TcpThenUdp);
        }
        Transport::Tcp => ("NVCAM_TRANSPORT_TCP", "tcp"),
        Transport::Udp => ("NVCAM_TRANSPORT_UDP", "udp"),
        Transport::UdpMulticast => ("NVCAM_TRANSPORT_UDP_MULTICAST", "udp_multicast"),
        Transport::Http => ("NVCAM_TRANSPORT_HTTP", "http"),
        Transport::Auto => ("NVCAM_TRANSPORT_AUTO", ""),
    };
    if let Some(v) = given {
        return Err(Error::new(
            ErrorKind::BadOption,
            format!("transport {name} and FFmpeg option rtsp_transport={v} both choose the RTSP transport: set one of them"),
        ));
    }
    if tls && !matches!(opts.transport, Transport::Tcp | Transport::Auto) {
        return Err(Error::new(
            ErrorKind::BadOption,
            format!("transport {name} is not possible with rtsps://: RTP goes inside its TLS connection (TCP only)"),
        ));
    }
    if opts.transport == Transport::Auto {
        if tls {
            opts.ffmpeg.push(("rtsp_transport".into(), "tcp".into()));
            return Ok(Choice::Fixed);
        }
        return Ok(Choice::Auto);
    }
    opts.ffmpeg.push(("rtsp_transport".into(), ffmpeg.into()));
    Ok(Choice::Fixed)
}

impl Camera {
    /// Validates the URL and fills in the defaults that depend on the source.
    pub(crate) fn new(url: &str, mut opts: Options) -> Result<Arc<Camera>> {
        let source = source::parse(url)?;
        let choice = if source.is_rtsp() { transport_options(&source, &mut opts)? } else { Choice::Fixed };
        tls::tls_options(&source, &mut opts)?;
        srt::srt_options(&source, &opts)?;
        // Probing a live stream's frame rate reads ~20 frames (0.7 s at 30 fps) before the first
        // frame comes out, on every reconnect; nothing here needs it (network streams are not paced).
        if matches!(source, Source::Network(_)) && !opts.has_ffmpeg_option("fpsprobesize") {
            opts.ffmpeg.push(("fpsprobesize".into(), "0".into()));
        }
        let shared = Shared::new(url, source, opts);
        match choice {
            Choice::Auto => shared.irq.set_auto_transport(),
            Choice::TcpThenUdp => shared.irq.set_tcp_then_udp(),
            Choice::Fixed => {}
        }
        Ok(Arc::new(Camera { shared: Arc::new(shared), worker: Mutex::new(None), cancels: AtomicU64::new(0) }))
    }

    /// Starts the worker once the camera has its handle (frames carry it as their owner) and
    /// (unless `async_open`) waits for the first connection, so a bad URL or option fails here
    /// with its reason. On failure the caller closes the camera, so no thread stays behind.
    pub(crate) fn start(&self, handle: u64) -> Result<()> {
        let sh = self.shared.clone();
        sh.handle.store(handle, Ordering::Release);
        let sync_open = !sh.opts.flags.async_open;
        let (tx, rx) = std::sync::mpsc::channel::<Result<()>>();
        let name = format!("nvcam-cam-{:x}", handle & 0xffffff);
        let worker = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                crate::ffmpeg::log::set_thread_camera(Some(sh.name()));
                let first = sync_open.then_some(tx);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker::run(&sh, first)));
                if r.is_err() {
                    sh.set_error(&Error::new(ErrorKind::Panic, "camera worker panicked (see log)"));
                    sh.set_state(CameraState::Failed);
                }
                sh.mark_exited();
            })
            .map_err(|e| Error::internal(format!("cannot start camera thread: {e}")))?;
        *self.worker.lock() = Some(worker);
        if !sync_open {
            return Ok(());
        }
        // The worker bounds the open itself; the margin covers probing after the connect.
        let wait = self.shared.opts.open_timeout * 2 + Duration::from_secs(1);
        match rx.recv_timeout(wait) {
            Ok(r) => r,
            Err(_) => Err(Error::timeout(format!("timeout after {} ms opening '{}'", wait.as_millis(), self.shared.name()))),
        }
    }

    pub(crate) fn state(&self) -> CameraState {
        self.shared.state()
    }

    /// Waits for the newest frame not yet handed out. The wait ends with `ErrorKind::Cancelled` when
    /// [`Camera::cancel_waits`] runs after it began, or when `abort` is set (then
    /// [`Camera::wake_waits`] wakes it); a frame that arrives meanwhile stays for the next wait.
    pub(crate) fn get_frame(&self, timeout: Duration, abort: Option<&AtomicBool>) -> Result<Arc<Frame>> {
        let sh = &self.shared;
        let end = Instant::now() + timeout;
        let mut m = sh.mailbox.lock();
        // Read under the mailbox lock, where cancel_waits bumps it: a cancel either precedes this
        // wait (and does not touch it) or wakes it.
        let generation = self.cancels.load(Ordering::Acquire);
        let cancelled = || self.cancels.load(Ordering::Acquire) != generation || abort.is_some_and(|a| a.load(Ordering::Acquire));
        loop {
            if cancelled() {
                return Err(Error::new(ErrorKind::Cancelled, "the wait was cancelled"));
            }
            if let Some(f) = m.take() {
                sh.counters.delivered.fetch_add(1, Ordering::Relaxed);
                sh.mailbox_cv.notify_all(); // a lossless worker waits for this
                drop(m);
                // A device frame is published as soon as its copy is enqueued; the host gets it
                // once that copy is done (almost always already), so it can read it anywhere.
                f.wait_ready()?;
                return Ok(f);
            }
            match sh.state() {
                CameraState::Closed => return Err(Error::new(ErrorKind::Closed, "camera is closed")),
                // A reconnect was asked for and the worker has not taken it yet: wait for it.
                CameraState::Failed | CameraState::Ended if sh.irq.kicked() => {}
                CameraState::Failed => {
                    // The state, not a new fault: the camera's last error stays its reason
                    // (`last_error_code` says E_AUTH or E_UNSUPPORTED, not E_FAILED), and the
                    // worker warned of it once when it failed.
                    let e = sh.cause().unwrap_or_else(|| Error::new(ErrorKind::Failed, "camera failed"));
                    return Err(Error::expected(ErrorKind::Failed, format!("camera failed: {}", e.msg)));
                }
                CameraState::Ended => {
                    return Err(Error::expected(ErrorKind::Io, "end of file (open with NVCAM_OPEN_LOOP to repeat)"))
                }
                _ => {}
            }
            if sh.mailbox_cv.wait_until(&mut m, end).timed_out() && m.is_none() && !cancelled() {
                let state = sh.state();
                let why = match sh.cause() {
                    Some(e) if state != CameraState::Streaming => format!(" (camera {}: {})", state.name(), e.msg),
                    _ => String::new(),
                };
                return Err(Error::timeout(format!("no new frame within {} ms{why}", timeout.as_millis())));
            }
        }
    }

    /// Whether every frame must reach the host in order (`NVCAM_OPEN_LOSSLESS`): a batch grab must
    /// not swap one of its frames for a newer one then.
    pub(crate) fn lossless(&self) -> bool {
        self.shared.opts.flags.lossless
    }

    /// Cancels every wait in progress on this camera (they return `ErrorKind::Cancelled`); waits
    /// that begin afterwards are not affected. Returns at once.
    pub(crate) fn cancel_waits(&self) {
        let _m = self.shared.mailbox.lock();
        self.cancels.fetch_add(1, Ordering::AcqRel);
        self.shared.mailbox_cv.notify_all();
    }

    /// Wakes the waits in progress so they re-check their abort flags (the others go on waiting
    /// until their own deadline).
    pub(crate) fn wake_waits(&self) {
        let _m = self.shared.mailbox.lock();
        self.shared.mailbox_cv.notify_all();
    }

    /// A snapshot of the camera's counters.
    pub(crate) fn stats(&self) -> Stats {
        let sh = &self.shared;
        let c = &sh.counters;
        let r = Ordering::Relaxed;
        let (slots_total, slots_in_use, bytes_held, memory) = sh.pool_usage();
        let (decoder, (width, height)) = {
            let s = sh.stream.lock();
            (s.decoder, s.size)
        };
        Stats {
            state: sh.visible_state(),
            decoded: c.decoded.load(r),
            delivered: c.delivered.load(r),
            dropped: c.dropped.load(r),
            skipped: c.skipped.load(r),
            reconnects: c.reconnects.load(r),
            slots_total,
            slots_in_use,
            bytes_held,
            fps: c.fps_milli.load(r) as f64 / 1000.0,
            width,
            height,
            reconnect_attempt: c.attempt.load(r),
            next_retry_ms: c.next_retry_ms.load(r),
            stream_changes: c.stream_changes.load(r),
            memory,
            decoder,
            last_error: sh.last_error().map(|e| e.kind),
            live_handles: registry::per_owner().get(&sh.handle()).copied().unwrap_or(0) as u64,
            decode_latency_us: sh.latency.lock().percentiles(Instant::now()),
            frames_corrupt: c.corrupt.load(r),
            packets_lost: c.packets_lost.load(r),
            last_loss_ns: c.last_loss_ns.load(r),
            key_interval_ms: c.key_interval_ms.load(r),
            reconnect_to_key_ms: c.reconnect_to_key_ms.load(r),
            loss_reconnects: c.loss_reconnects.load(r),
            session_panics: c.session_panics.load(r),
            pictures_refused: c.pictures_refused.load(r),
            consumers: sh.publication().map_or(0, |p| p.consumers()),
            kernel_drops: c.kernel_drops.load(r),
            keyframe_requests: c.keyframe_requests.load(r),
            source: sh.source_status.lock().map(|s| SourceStats {
                state: CameraState::from_code(s.state).unwrap_or(CameraState::Reconnecting),
                decoded: s.decoded,
                dropped: s.dropped,
                fps: s.fps_milli as f64 / 1000.0,
            }),
        }
    }

    /// The camera's last error, from its worker or from a call on it.
    pub(crate) fn last_error(&self) -> Option<Error> {
        self.shared.last_error()
    }

    /// Records an error a call on this camera returned.
    pub(crate) fn note_api_error(&self, e: &Error) {
        self.shared.note_api_error(e)
    }

    /// The camera's packet cache and recordings.
    pub(crate) fn recorder(&self) -> &Arc<crate::record::Recorder> {
        &self.shared.recorder
    }

    /// The recorder, for a cache or a recording to start: an attached camera has no packets (its
    /// frames come decoded from the publisher), so it records nothing.
    pub(crate) fn recorder_to_start(&self) -> Result<&Arc<crate::record::Recorder>> {
        if self.shared.source.is_shared() {
            return Err(Error::new(ErrorKind::Unsupported, "an attached camera (nvcam://) has no packets to record: record in the process that publishes it"));
        }
        Ok(&self.shared.recorder)
    }

    /// Publishes the camera as `name` for other processes of this user (`nvcam://NAME`), each
    /// holding at most `quota` frames, at most `max_consumers` at once (0: the defaults). Frames
    /// from the next picture on are in pools those processes can map.
    pub(crate) fn publish(&self, name: &str, quota: u32, max_consumers: u32) -> Result<()> {
        use crate::config::DEFAULTS;
        use crate::share::publisher::{Publication, Terms};
        let sh = &self.shared;
        if sh.state() == CameraState::Closed {
            return Err(Error::new(ErrorKind::Closed, "camera is closed"));
        }
        if sh.source.is_shared() {
            return Err(Error::arg("an attached camera cannot be published again: attach to the original's name"));
        }
        let pick = |v: u32, d: u32, max: u32, what: &str| -> Result<u32> {
            match v {
                0 => Ok(d),
                v if v <= max => Ok(v),
                v => Err(Error::arg(format!("{what} {v} is over {max}"))),
            }
        };
        let terms = Terms {
            quota: pick(quota, DEFAULTS.share_hold_quota, 64, "hold quota")?,
            max_consumers: pick(max_consumers, DEFAULTS.share_max_consumers, 64, "max_consumers")?,
            heartbeat: Duration::from_millis(DEFAULTS.share_heartbeat_ms as u64),
            silence: Duration::from_millis(DEFAULTS.share_silence_ms as u64),
        };
        let mut slot = sh.publication.lock();
        if let Some(p) = slot.as_ref() {
            return Err(Error::arg(format!("the camera is published as '{}' already (unpublish it first)", p.name())));
        }
        let weak = Arc::downgrade(sh);
        let status = Box::new(move || weak.upgrade().map(|sh| source_status(&sh)).unwrap_or_default());
        *slot = Some(Publication::start(name, sh.name(), terms, status)?);
        sh.pools.lock().no_export = false;
        Ok(())
    }

    /// Publishes the camera under the name its options give (`nvcam_publish=NAME`), if any.
    pub(crate) fn publish_as_opened(&self) -> Result<()> {
        match self.shared.opts.publish.clone() {
            Some(name) => self.publish(&name, 0, 0),
            None => Ok(()),
        }
    }

    /// Ends the camera's publication: attached processes are told and detached (they go on
    /// trying to attach), the frames they held are released here, and the name is free.
    pub(crate) fn unpublish(&self, timeout: Duration) -> Result<()> {
        let p = self.shared.publication.lock().take();
        match p {
            Some(p) => {
                p.stop(timeout);
                Ok(())
            }
            None => Err(Error::arg("the camera is not published")),
        }
    }

    /// Asks the worker to stop, without waiting (shutdown stops all cameras first, so their
    /// closes overlap).
    pub(crate) fn stop(&self) {
        self.shared.irq.stop();
    }

    /// Aborts the current connection and reopens at once, in any state.
    pub(crate) fn reconnect(&self) -> Result<()> {
        let sh = &self.shared;
        if sh.state() == CameraState::Closed {
            return Err(Error::new(ErrorKind::Closed, "camera is closed"));
        }
        // Until the worker takes this kick, get_frame on an ended or failed camera waits for the
        // new connection instead of reporting the old end.
        sh.irq.retry_udp();
        sh.irq.kick();
        sh.wake_worker();
        Ok(())
    }

    /// Closes in the seed order within `timeout`.
    pub(crate) fn close(&self, timeout: Duration) -> Closed {
        let sh = &self.shared;
        let end = Instant::now() + timeout;
        sh.irq.stop();
        // Attached processes first: they are told, and what they held comes back.
        if let Some(p) = sh.publication.lock().take() {
            p.stop(timeout / 4);
        }
        // Recordings finish with what they have (complete files), before the camera goes.
        sh.recorder.close(timeout / 2);
        let drained = sh.gate.stop_and_wait(timeout);
        registry::force_release_owner(sh.handle());
        let pending = sh.mailbox.lock().take();
        drop(pending);
        let held = sh.last_exact.lock().take();
        drop(held);
        // Retire the pool (device memory goes to the deferred queue, fenced by its events) before
        // the worker closes the decoder on its way out.
        if drained {
            sh.pools.lock().current = None;
        }
        sh.set_state(CameraState::Closed);
        sh.wake_worker();
        let exited = sh.wait_exited(end.saturating_duration_since(Instant::now()));
        let worker = self.worker.lock().take();
        let lingering = match worker {
            Some(w) if exited => {
                let _ = w.join();
                None
            }
            w => w,
        };
        sh.pools.lock().current = None;
        if drained && exited {
            return Closed::Done;
        }
        log::warn!("camera {}: close timed out after {} ms; its worker finishes on its own", sh.name(), timeout.as_millis());
        Closed::TimedOut(lingering)
    }
}
