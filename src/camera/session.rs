//! One connection: open the source, pick the decoder, then read, decode, pace and deliver until
//! the stream ends, fails, stalls, or the camera is stopped or kicked.

use super::deliver::{self, Stamp};
use crate::rtp_loss::integrity::Integrity;
use super::loss_watch::LossWatch;
use super::latency::{wall_ns, Arrival, Arrivals};
use super::shared::{CameraState, Shared};
use crate::config::DEFAULTS;
use crate::decode::{pts_us, Decoder, DecoderKind};
use crate::rtp_loss::gaps as rtp_gaps;
use crate::rtp_loss::sockets as rtp_sockets;
use crate::frame::TimeSource;
use crate::gpu::timing::{self, Stage};
use crate::input::{self, Read};
use crate::decode::select::{self, Chosen, Pools};
use crate::status::*;
use std::ops::ControlFlow;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Pictures a session delivers before its stage timings count (its start is not steady).
const STEADY_AFTER: u64 = 30;

/// What one turn of a session's loop came to.
enum Turn {
    Go,
    /// A looped file at its end, its decoder drained.
    Rewind,
    End(SessionEnd),
}

pub(super) enum SessionEnd {
    Stop,
    Eof,
    Kicked,
}

/// The first session's result goes back to a synchronous open.
pub(super) type FirstOpen = Option<Sender<Result<()>>>;

/// A new codec starts a new pool: another decoder may write another kind of memory.
fn note_codec(sh: &Shared, input: &input::Input) {
    let codec = format!("{:?}", input.stream().parameters().id()).to_lowercase();
    let mut st = sh.stream.lock();
    if !st.codec.is_empty() && st.codec != codec {
        log::info!(
            "camera {}: codec changed {} -> {codec}; new pool, the old one lives until its last clone is released",
            sh.name(),
            st.codec
        );
        sh.counters.stream_changes.fetch_add(1, Ordering::Relaxed);
        sh.pools.lock().retire();
    }
    st.codec = codec;
}

/// Records the decoder in use (logged when it changes: a new session's choice or a fall-back).
fn note_decoder(sh: &Shared, kind: crate::decode::DecoderKind) {
    let mut st = sh.stream.lock();
    if st.decoder != Some(kind) {
        log::info!("camera {}: decoding with {}", sh.name(), kind.name());
        st.decoder = Some(kind);
    }
}

/// Wall-clock pacing of files and the test source to their timestamps.
///
/// The clock is anchored at the first picture and re-anchored whenever the timestamps jump
/// (forward by more than 2 s, or backward) and whenever a picture comes out later than
/// `pace_reanchor_late_ms` after its due time (a stall, a slow decoder, a starved CPU): the
/// camera then goes on at its own rate from where it is, instead of playing faster until it has
/// caught up with a clock that ran on without it. After a jump (a looped file's rewind) the
/// picture is due one frame step after the last one was, as a live camera's next would be:
/// anchored at once, a 48-picture loop at 30 fps played 30.6 fps.
#[derive(Default)]
struct Pacer {
    clock: Option<(Instant, i64)>,
    reanchors: u64,
    /// How late the last picture was at its due time (zero when it was not).
    late: Duration,
    /// The last picture's timestamp: one at or before it is a jump (a rewound file), not lateness.
    last_pts: Option<i64>,
    /// When the last picture was due.
    last_due: Option<Instant>,
    /// The last step between two timestamps going forward (µs, up to a second).
    step: Option<i64>,
}

impl Pacer {
    /// One step after the last picture was due, where that is ahead of `now` by a second at most;
    /// else `now`.
    fn after_last(&self, now: Instant) -> Instant {
        let next = self.last_due.zip(self.step).map(|(d, s)| d + Duration::from_micros(s as u64));
        next.filter(|&t| t > now && t <= now + Duration::from_secs(1)).unwrap_or(now)
    }

    /// How long to wait at `now` before the picture at `pts_us` is due.
    fn delay(&mut self, now: Instant, pts_us: i64) -> Option<Duration> {
        if pts_us == i64::MIN {
            return None;
        }
        if self.clock.is_none() {
            self.clock = Some((self.after_last(now), pts_us));
        }
        let (t0, p0) = self.clock.unwrap_or((now, pts_us));
        let late_ok = Duration::from_millis(DEFAULTS.pace_reanchor_late_ms as u64);
        let ahead = pts_us - p0;
        let mut due = t0 + Duration::from_micros(ahead.max(0) as u64);
        // A timestamp jump (a rewound file, a gap in the stream) is not lateness.
        let last = self.last_pts.replace(pts_us);
        let back = last.is_some_and(|l| pts_us <= l);
        if let Some(l) = last.filter(|&l| pts_us > l && pts_us - l <= 1_000_000) {
            self.step = Some(pts_us - l);
        }
        let jump = back || ahead < 0 || due > now + Duration::from_secs(2);
        self.late = if jump { Duration::ZERO } else { now.saturating_duration_since(due) };
        if jump || self.late > late_ok {
            due = if jump { self.after_last(now) } else { now };
            self.clock = Some((due, pts_us));
            self.reanchors += 1;
        }
        self.last_due = Some(due);
        (due > now + Duration::from_millis(1)).then(|| due - now)
    }

    /// Waits until the picture is due; `steady` records how late it was, or how much longer
    /// than asked the wait took (`timing`).
    fn wait(&mut self, sh: &Shared, pts_us: i64, steady: bool) {
        let now = Instant::now();
        let d = self.delay(now, pts_us);
        if steady && !self.late.is_zero() {
            timing::record(Stage::Late, self.late);
        }
        if let Some(d) = d {
            sh.sleep_interruptible(d);
            if steady {
                timing::record(Stage::Oversleep, now.elapsed().saturating_sub(d));
            }
        }
    }
}

/// When a wait for the GPU's engines to take this camera ends (`gpu::load`: a burst of cameras is
/// let in at the pace decoders are made): the camera is closing, or the open's own time
/// (`open_timeout`) is spent from now, so a synchronous open is still answered within its bound.
fn admission_ends(sh: &Shared) -> impl Fn() -> bool + '_ {
    let by = Instant::now() + sh.opts.open_timeout;
    move || sh.irq.stopping() || Instant::now() >= by
}

/// Runs one connection: [`Session::open`] connects and picks the decoder, [`Session::run`] reads,
/// decodes, paces and delivers. `first` takes the open's result (a synchronous open waits for
/// it), `connected` says whether the source was reached, and each exact picture resets
/// `attempt` (the reconnect back-off).
pub(super) fn session(sh: &Arc<Shared>, first: &mut FirstOpen, attempt: &mut u32, connected: &mut bool) -> Result<SessionEnd> {
    Session::open(sh, first, connected)?.run(attempt)
}

/// How often a session reads its UDP sockets' drop counters.
const DROPS_EVERY: Duration = Duration::from_millis(250);

/// One connection's state, from its open to its end.
struct Session<'a> {
    sh: &'a Arc<Shared>,
    low_latency: bool,
    /// The decoder in use: a GPU decoder may fall back to another mid-session.
    kind: DecoderKind,
    paced: bool,
    pacer: Pacer,
    arrivals: Arrivals,
    time_base: ffmpeg_next::Rational,
    losses: LossWatch,
    integrity: Integrity,
    exact_seen: bool,
    /// A recovery point held back while the decoder drains, for a decoder that restarts there.
    after_drain: Option<ffmpeg_next::Packet>,
    seq: u64,
    /// The session has ended and its decoder drains until then (see [`Session::drain`]).
    drain_by: Option<Instant>,
    fps_window: (Instant, u64),
    eof: bool,
    /// Pictures this session delivered: the stage timings count a session's steady state only
    /// (after its first second), not its start.
    delivered: u64,
    looping: bool,
    read_since_rewind: bool,
    /// Datagrams the kernel had dropped at this session's UDP sockets when last looked at, and
    /// when to look next.
    kernel_drops: u64,
    drops_next: Instant,
    // Fields drop in this order at the session's end: the pools, then the decoder, then the input.
    pools: Pools,
    dec: Box<dyn Decoder>,
    input: input::Input,
}

impl<'a> Session<'a> {
    /// Opens the source and picks its decoder; the camera is then streaming.
    fn open(sh: &'a Arc<Shared>, first: &mut FirstOpen, connected: &mut bool) -> Result<Session<'a>> {
        let o = &sh.opts;
        let low_latency = o.latency.is_low(sh.is_network());
        let t_open = timing::Mark::now();
        // RTP gaps FFmpeg reports on this thread from here on are this connection's (those of the
        // probe included: its packets are read again below).
        rtp_gaps::start();
        if o.flags.tls_insecure && super::tls::is_tls(&sh.source) {
            log::warn!(
                "camera {}: TLS certificate NOT verified (NVCAM_OPEN_TLS_INSECURE): the link is encrypted, but anyone on the network path can impersonate this camera",
                sh.name()
            );
        }
        let input = input::open(&sh.source, &o.ffmpeg, &sh.irq, o.open_timeout)?;
        if sh.source.is_rtsp() && !rtp_gaps::reporting() {
            log::warn!(
                "camera {}: this FFmpeg does not report lost RTP packets (it is not nvcam's patched build): losses show only where a decoder or H.264's frame_num notices them",
                sh.name()
            );
        }
        t_open.end(Stage::Open);
        let t_select = timing::Mark::now();
        let Chosen { decoder: dec, pools } = select::decoder_for(o, &input.stream(), &sh.backend, low_latency, &admission_ends(sh))?;
        t_select.end(Stage::Select);
        note_codec(sh, &input);
        sh.recorder.session_start(&input.stream());
        let kind = dec.kind();
        note_decoder(sh, kind);
        if let Some(tx) = first.take() {
            let _ = tx.send(Ok(()));
        }
        *connected = true;
        sh.note_packet();
        sh.set_state(CameraState::Streaming);
        sh.gate.set_playing(true);

        let paced = !o.flags.no_pacing && !sh.is_network();
        let time_base = input.stream().time_base();
        let losses = LossWatch::new(sh, &input.stream(), t_open.started());
        Ok(Session {
            sh,
            low_latency,
            kind,
            paced,
            pacer: Pacer::default(),
            arrivals: Arrivals::default(),
            time_base,
            losses,
            integrity: Integrity::at_session_start(),
            exact_seen: false,
            after_drain: None,
            seq: sh.counters.decoded.load(Ordering::Relaxed),
            drain_by: None,
            fps_window: (Instant::now(), 0u64),
            eof: false,
            delivered: 0,
            looping: !sh.source.is_live() && o.flags.loop_file,
            read_since_rewind: false,
            kernel_drops: 0,
            drops_next: Instant::now(),
            pools,
            dec,
            input,
        })
    }

    /// Reads, decodes, paces and delivers until the stream ends, fails, stalls, or the camera is
    /// stopped or kicked; then drains the decoder where the stream did not (see [`Self::drain`]).
    fn run(mut self, attempt: &mut u32) -> Result<SessionEnd> {
        loop {
            let end = match self.turn(attempt) {
                Ok(Turn::Go) => continue,
                Ok(Turn::Rewind) => {
                    self = self.rewind()?;
                    continue;
                }
                Ok(Turn::End(end)) => Ok(end),
                Err(e) => Err(e),
            };
            self.drain(&end, attempt);
            return end;
        }
    }

    /// One read, and the pictures it lets out.
    fn turn(&mut self, attempt: &mut u32) -> Result<Turn> {
        let sh = self.sh;
        let steady = self.delivered >= STEADY_AFTER;
        if let Some(end) = self.interrupted() {
            return Ok(Turn::End(end));
        }
        if !self.eof {
            if let Some(end) = self.read(steady)? {
                return Ok(Turn::End(end));
            }
        }
        let got_any = match self.receive(steady, attempt)? {
            ControlFlow::Continue(got_any) => got_any,
            ControlFlow::Break(end) => return Ok(Turn::End(end)),
        };
        self.resume_after_drain()?;
        crate::gpu::maintain();
        if self.eof && !got_any {
            if self.looping {
                return Ok(Turn::Rewind);
            }
            if !sh.source.is_live() && !sh.opts.flags.loop_file {
                log::info!("camera {}: end of file", sh.name());
            }
            return Ok(Turn::End(SessionEnd::Eof));
        }
        Ok(Turn::Go)
    }

    /// A session that ended before its stream did (a reconnect asked for, a stall, a read error):
    /// the decoder drains, so the pictures it holds (a mini-GOP's, with B-frames) reach the host
    /// and the recordings, and a recording's part keeps every picture of its session. Bounded
    /// by `DEFAULTS.session_drain_ms`, before the input closes (its TEARDOWN keeps its own
    /// deadline); a decoder that has not drained by then is dropped with what it holds, and the
    /// recordings' parts end at their last whole mini-GOP (the recorder says where). A close
    /// does not drain: its recordings have already ended.
    fn drain(&mut self, end: &Result<SessionEnd>, attempt: &mut u32) {
        let sh = self.sh;
        let closing = matches!(end, Ok(SessionEnd::Stop) | Ok(SessionEnd::Eof)) || matches!(end, Err(e) if e.kind == ErrorKind::Closed);
        if self.eof || closing || sh.irq.stopping() {
            return;
        }
        let by = Instant::now() + Duration::from_millis(DEFAULTS.session_drain_ms as u64);
        self.drain_by = Some(by);
        // A recovery point held back has already started the drain; it is of no picture now.
        if self.after_drain.take().is_none() {
            match self.dec.send_eof() {
                Ok(o) => self.sent(o, Instant::now()),
                Err(e) => {
                    log::debug!("camera {}: the decoder cannot drain at the session's end: {e}", sh.name());
                    return;
                }
            }
        }
        self.eof = true;
        match self.receive(false, attempt) {
            Ok(ControlFlow::Continue(_)) if Instant::now() < by => {
                log::debug!("camera {}: the decoder drained at the session's end", sh.name());
            }
            Ok(ControlFlow::Continue(_)) => log::info!(
                "camera {}: the decoder did not drain within {} ms of the session's end: the pictures it still held are dropped",
                sh.name(),
                DEFAULTS.session_drain_ms
            ),
            Ok(ControlFlow::Break(_)) => {}
            Err(e) => log::debug!("camera {}: draining the decoder at the session's end: {e}", sh.name()),
        }
    }

    /// The end a stop or a kick asks for, if one came. Both stay set for the rest of the session
    /// (only the worker takes a kick, between sessions).
    fn interrupted(&self) -> Option<SessionEnd> {
        if self.sh.irq.stopping() {
            return Some(SessionEnd::Stop);
        }
        if self.sh.irq.kicked() {
            return Some(SessionEnd::Kicked);
        }
        None
    }

    /// Key-frame requests the demuxer sent, and the datagrams the kernel dropped at the session's
    /// UDP sockets (looked at a few times a second: a system call per socket).
    fn note_socket_counters(&mut self, now: Instant) {
        let c = &self.sh.counters;
        let (asked, failed) = rtp_sockets::take_keyframes_asked();
        if asked > 0 {
            c.keyframe_requests.fetch_add(asked, Ordering::Relaxed);
        }
        if failed {
            self.losses.cannot_ask(self.sh);
        }
        if now < self.drops_next {
            return;
        }
        self.drops_next = now + DROPS_EVERY;
        if let Some(d) = rtp_sockets::drops() {
            let new = d.saturating_sub(std::mem::replace(&mut self.kernel_drops, d));
            if new > 0 {
                c.kernel_drops.fetch_add(new, Ordering::Relaxed);
                log::debug!("camera {}: the kernel dropped {new} datagram(s) at its UDP sockets (receive buffer full)", self.sh.name());
            }
        }
    }

    /// Reads the next packet and sends it to the decoder (or holds a recovery point back while the
    /// decoder drains); at the end of the input, drains the decoder or rewinds a looped file.
    /// Returns the session's end when the read ends it.
    fn read(&mut self, steady: bool) -> Result<Option<SessionEnd>> {
        let sh = self.sh;
        let t_read = timing::Mark::now();
        let read = self.input.read_video(sh.opts.stall_timeout);
        if steady {
            t_read.end(Stage::Read);
        }
        match read {
            Ok(Read::Packet(mut p)) => {
                sh.note_packet();
                self.read_since_rewind = true;
                // A kick or close that came after the read: the session ends, nothing more
                // goes into the decoder.
                if let Some(end) = self.interrupted() {
                    return Ok(Some(end));
                }
                self.losses.stamp_first(&mut p, sh.source.is_rtsp());
                let p_us = pts_us(p.pts(), self.time_base);
                let now = Instant::now();
                self.arrivals.read(Arrival { pts_us: p_us, at: now, wall_ns: wall_ns() });
                let verdict = self.losses.packet(sh, &p, p_us, &mut self.integrity, now);
                if self.losses.take_keyframe_wanted() && !self.input.request_keyframe() {
                    self.losses.cannot_ask(sh);
                }
                self.note_socket_counters(now);
                verdict?;
                sh.recorder.packet(&p, p_us, sh.counters.packets_lost.load(Ordering::Relaxed));
                if self.integrity.is_recovery_point(p_us) && self.dec.restarts_at_recovery_point() {
                    // Drain what the decoder holds (pictures before the recovery point),
                    // then start it afresh with this packet, after the pictures below.
                    log::debug!("camera {}: recovery point at pts {p_us}: the decoder starts afresh", sh.name());
                    let drained = self.dec.send_eof()?;
                    self.sent(drained, now);
                    self.after_drain = Some(p);
                } else {
                    let t_send = timing::Mark::now();
                    let sent = self.dec.send_packet(&p)?;
                    if steady {
                        t_send.end(Stage::Send);
                    }
                    self.sent(sent, now);
                }
            }
            // A looped file whose decoder goes on across the rewind: no drain, no reset
            // (unless the file gave no packet since the last rewind: then drain as usual).
            Ok(Read::Eof) if self.looping && self.read_since_rewind && self.dec.continues_across_rewind() => {
                self.input.rewind()?;
                self.read_since_rewind = false;
            }
            Ok(Read::Eof) => {
                let sent = self.dec.send_eof()?;
                self.sent(sent, Instant::now());
                self.eof = true;
            }
            Err(_) if sh.irq.kicked() => return Ok(Some(SessionEnd::Kicked)),
            Err(e) if e.kind == ErrorKind::Closed => return Ok(Some(SessionEnd::Stop)),
            Err(e) => {
                if e.kind == ErrorKind::TimedOut {
                    sh.set_state(CameraState::Stalled);
                }
                return Err(e);
            }
        }
        Ok(None)
    }

    /// What the decoder said to a packet (or to the end of the stream): a corrupt one makes what
    /// follows suspect; a warning goes to the camera's last error.
    fn sent(&mut self, o: crate::decode::Outcome, now: Instant) {
        if let crate::decode::Outcome::Corrupt(_) = &o {
            self.integrity.lost(now);
            self.sh.counters.decode_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.sh.report(o);
    }

    /// Paces and delivers every picture the decoder has ready. Continues with whether any came;
    /// breaks with the end a closing camera asks for.
    fn receive(&mut self, steady: bool, attempt: &mut u32) -> Result<ControlFlow<SessionEnd, bool>> {
        let sh = self.sh;
        let mut got_any = false;
        let mut t_receive = timing::Mark::now();
        loop {
            if self.drain_by.is_some_and(|by| Instant::now() >= by) {
                break;
            }
            let Some(pic) = self.dec.receive()? else { break };
            if steady {
                t_receive.end(Stage::Receive);
            }
            got_any = true;
            self.seq += 1;
            sh.counters.decoded.store(self.seq, Ordering::Relaxed);
            sh.recorder.picture(self.seq, pic.pts_us);
            let arrival = self.arrivals.take(pic.pts_us);
            let before_pacing = Instant::now();
            if self.paced && self.drain_by.is_none() {
                self.pacer.wait(sh, pic.pts_us, steady);
            }
            // Decode latency counts from the packet's read, less the time pacing held it on purpose.
            let since = arrival.map_or(before_pacing, |a| a.at) + before_pacing.elapsed();
            let capture = match self.input.source_clock_us() {
                Some(t0) if pic.pts_us != i64::MIN && t0.saturating_add(pic.pts_us) > 0 => {
                    ((t0 + pic.pts_us) as u64 * 1000, TimeSource::Source)
                }
                _ => (arrival.map_or_else(wall_ns, |a| a.wall_ns), TimeSource::Receive),
            };
            let Some(_in_flight) = sh.gate.enter() else { return Ok(ControlFlow::Break(SessionEnd::Stop)) };
            let t_deliver = timing::Mark::now();
            let exact_before = sh.counters.exact.load(Ordering::Relaxed);
            let to = deliver::Ctx { sh, dec: &mut *self.dec, pools: &self.pools, integrity: &mut self.integrity, drain_by: self.drain_by };
            deliver::deliver(to, pic, Stamp { seq: self.seq, since, capture })?;
            if sh.counters.exact.load(Ordering::Relaxed) != exact_before {
                // An exact picture: the reconnect back-off starts over (see `deliver`).
                *attempt = 0;
            }
            if !self.exact_seen && self.integrity.any_exact() {
                // The reconnects for losses before it helped.
                self.exact_seen = true;
                sh.counters.unhelpful_reconnects.store(0, Ordering::Relaxed);
            }

            if steady {
                t_deliver.end(Stage::Deliver);
            }
            self.delivered += 1;
            // A GPU decoder may have fallen back to another (same device, same pools); the
            // shared record is touched only when that happens, not per frame.
            if self.dec.kind() != self.kind {
                self.kind = self.dec.kind();
                note_decoder(sh, self.kind);
            }
            self.fps_window.1 += 1;
            let el = self.fps_window.0.elapsed();
            if el >= Duration::from_secs(1) {
                sh.counters.fps_milli.store(self.fps_window.1 * 1_000_000 / el.as_millis().max(1) as u64, Ordering::Relaxed);
                self.fps_window = (Instant::now(), 0);
            }
            t_receive = timing::Mark::now();
        }
        Ok(ControlFlow::Continue(got_any))
    }

    /// Starts the drained decoder afresh at the recovery point held back for it, if one was.
    fn resume_after_drain(&mut self) -> Result<()> {
        if let Some(p) = self.after_drain.take() {
            self.dec.before_recovery_point();
            let sent = self.dec.send_packet(&p)?;
            self.sent(sent, Instant::now());
        }
        Ok(())
    }

    /// A looped file at its end, the decoder drained: back to the start, with the decoder reset
    /// (or a new one) and the pacing and arrivals forgotten. Takes the session by value so that
    /// the old decoder can go before the new one is made.
    fn rewind(mut self) -> Result<Session<'a>> {
        let sh = self.sh;
        self.input.rewind()?;
        self.read_since_rewind = false;
        if !self.dec.reset() {
            // The old decoder goes first: it may park its NVDEC decoder for the new one.
            drop(self.dec);
            self.dec = select::decoder_for(&sh.opts, &self.input.stream(), &sh.backend, self.low_latency, &admission_ends(sh))?.decoder;
        }
        self.pacer.clock = None;
        self.arrivals.clear();
        self.eof = false;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_source_reanchors_after_a_gap_instead_of_catching_up() {
        let t0 = Instant::now();
        let mut p = Pacer::default();
        assert_eq!(p.delay(t0, 0), None);
        let d = p.delay(t0 + Duration::from_millis(10), 33_333).unwrap();
        assert!((Duration::from_millis(22)..=Duration::from_millis(24)).contains(&d), "{d:?}");
        // A 400 ms stall: the next picture is not rushed, and the ones after it keep the rate.
        let t1 = t0 + Duration::from_millis(433);
        assert_eq!(p.delay(t1, 66_667), None);
        assert_eq!(p.reanchors, 1);
        let d = p.delay(t1 + Duration::from_millis(1), 100_000).unwrap();
        assert!((Duration::from_millis(32)..=Duration::from_millis(33)).contains(&d), "{d:?}");
        // Timestamps going backward (a rewound file) re-anchor too, and are not lateness, even
        // back to the anchor's own timestamp; the picture is due one step (33.3 ms) after the
        // last one was (at t1 + 34 ms), not at once (a looped 30 fps clip played faster).
        let d = p.delay(t1 + Duration::from_millis(40), 66_667).unwrap();
        assert!((Duration::from_millis(26)..=Duration::from_millis(28)).contains(&d), "{d:?}");
        assert_eq!((p.reanchors, p.late), (2, Duration::ZERO));
        assert!(p.delay(t1 + Duration::from_millis(41), 100_000).is_some());
        assert_eq!(p.delay(t1 + Duration::from_millis(2000), 66_667), None);
        assert_eq!((p.reanchors, p.late), (3, Duration::ZERO));
    }
}
