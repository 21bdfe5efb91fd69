//! A session's watch over losses before the decoder: the gaps the RTP demuxer reports (placed on
//! the pictures they hit), H.264 reference gaps and packets the demuxer flagged, the loss
//! counters, the figures of the reconnect rule, and the rule itself.

use crate::rtp_loss::integrity::{hits_of, Integrity};
use super::reconnect_rule::{self, Wait};
use super::shared::Shared;
use crate::config::DEFAULTS;
use crate::bitstream::frame_num::FrameNumCheck;
use crate::decode::pts_us;
use crate::bitstream::recovery::{KeyPoint, KeyScan};
use crate::rtp_loss::gaps::{self as rtp_gaps, RtpGap};
use crate::status::*;
use super::latency::wall_ns;
use ffmpeg_next as ff;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub(super) struct LossWatch {
    keys: KeyScan,
    frame_nums: Option<FrameNumCheck>,
    time_base: ff::Rational,
    video: i32,
    /// Reports taken from the demuxer, reused between packets.
    gaps: Vec<RtpGap>,
    first_packet: bool,
    /// The packet about to go in is the session's first access unit, stamped by
    /// [`LossWatch::stamp_first`] with this: the timestamp its own RTP packets carry may lie a
    /// little off it (see there), by less than `first_slack` (the stream's time base).
    stamped: Option<i64>,
    first_slack: i64,
    /// When the session began (its open), and whether its first key packet has come.
    t_open: Instant,
    key_seen: bool,
    fallback: Duration,
    /// MJPEG: every packet's markers are checked (`jpeg_check`), the same for every decoder.
    jpeg: bool,
    /// Key-frame requests (RTCP PLI/FIR) of the current loss: when the first and the last were
    /// asked for, and whether the wait for them ended without a recovery point.
    asked_first: Option<Instant>,
    asked_last: Option<Instant>,
    ask_wait_over: bool,
    /// A request is due; the session passes it to the demuxer (`take_keyframe_wanted`).
    want_keyframe: bool,
    /// This session's demuxer cannot send requests (an FFmpeg without nvcam's patch).
    cannot_ask: bool,
}

/// Losses in a row whose key-frame requests went unanswered, after which the reconnect rule no
/// longer waits for them.
const KEYFRAME_REQUESTS_IGNORED: u32 = 3;

impl LossWatch {
    pub(super) fn new(sh: &Shared, stream: &ff::format::stream::Stream<'_>, t_open: Instant) -> LossWatch {
        sh.gop.lock().new_session();
        let params = stream.parameters();
        LossWatch {
            keys: KeyScan::new(&params),
            frame_nums: FrameNumCheck::for_stream(&params),
            time_base: stream.time_base(),
            video: stream.index() as i32,
            gaps: Vec::new(),
            first_packet: true,
            stamped: None,
            first_slack: first_slack(stream),
            t_open,
            key_seen: false,
            fallback: Duration::from_millis(DEFAULTS.loss_recovery_reconnect_ms as u64),
            jpeg: params.id() == ff::codec::Id::MJPEG,
            asked_first: None,
            asked_last: None,
            ask_wait_over: false,
            want_keyframe: false,
            cannot_ask: false,
        }
    }

    /// FFmpeg's parser gives an RTSP session's first access unit no timestamp (an RTP packet
    /// has no file position, which its lookup for a first frame needs); without one its picture
    /// could not be flagged a key frame, placed against losses, or told apart from the next.
    /// nvcam's FFmpeg (patch 0010) reports the pts of the first packet it parsed, which starts
    /// that unit: the unit gets it.
    ///
    /// Not 0, the demuxer's start: that is the RTP timestamp the PLAY answer names (RTP-Info's
    /// `rtptime`), which need not be the first picture's. A shared GStreamer stream that seeks
    /// for another client's PLAY names one from 0.3 ms to 5 s before it, and the demuxer reports
    /// a gap in the unit's packets at their own timestamp: placed there against a unit stamped 0,
    /// the hit waited for a picture that never came, and the damaged key picture and its GOP
    /// went out unmarked. The gaps taken with this unit that lie within half a frame of the stamp
    /// are its own as well ([`Self::packet`]): where packets of a picture before it came first
    /// (a stream that seeks), the stamp is theirs. An FFmpeg without the patch stamps 0.
    pub(super) fn stamp_first(&mut self, p: &mut ff::Packet, rtsp: bool) {
        if std::mem::take(&mut self.first_packet) && rtsp && p.pts().is_none() && p.dts().is_none() && p.is_key() {
            let at = rtp_gaps::first_pts(self.video).unwrap_or(0);
            p.set_pts(Some(at));
            self.stamped = Some(at);
        }
    }

    /// A packet (at `p_us`) is about to go into the decoder: the losses before it go to
    /// `integrity` and the counters. An error when the camera should reconnect for a key frame.
    pub(super) fn packet(&mut self, sh: &Shared, p: &ff::Packet, p_us: i64, integrity: &mut Integrity, now: Instant) -> Result<()> {
        let data = p.data().unwrap_or(&[]);
        let key = self.keys.classify(data, p.is_key());
        log::trace!("camera {}: packet pts {p_us} dts {:?} {} bytes {key:?} flag-key {} corrupt {}", sh.name(), p.dts(), data.len(), p.is_key(), p.is_corrupt());
        // Gaps the demuxer met while it read up to this packet: they hit pictures by their
        // timestamps, this one or later ones.
        let unplaced = rtp_gaps::take(&mut self.gaps);
        if let Some(at) = self.stamped.take() {
            let slack = self.first_slack;
            self.gaps.iter_mut().for_each(|g| onto_stamp(g, at, slack));
        }
        let tracks_refs = self.frame_nums.as_ref().is_some_and(|c| c.tracking());
        let (mut lost, mut unknown_place) = (unplaced, unplaced > 0);
        let mut cut_keys = Vec::new();
        for g in self.gaps.drain(..).filter(|g| g.stream == self.video) {
            lost += g.lost as u64;
            // A key picture whose start was lost: its access unit will not read as a key, but
            // the interval between recovery points must not look a GOP longer for it (the
            // reconnect rule would think the next one far away).
            if self.keys.rtp_continues_key(g.payload_after()) {
                let at = pts_us(g.pts_after, self.time_base);
                if at != i64::MIN {
                    cut_keys.push(at);
                }
            }
            let hits = hits_of(&g, &self.keys, self.time_base, tracks_refs).filter(|_| place_gaps(sh));
            log::debug!("camera {}: {} RTP packet(s) lost, {hits:?}", sh.name(), g.lost);
            match hits {
                Some(hits) => {
                    let before = pts_us(g.pts_before, self.time_base);
                    hits.into_iter().flatten().for_each(|h| integrity.gap(h, before, now));
                }
                None => unknown_place = true,
            }
        }
        for at in cut_keys {
            self.note_key(sh, at, now);
        }
        integrity.packet(key, self.keys.picture(data), p_us, now);
        // A reference picture missing before this one: lost, wherever it was lost.
        let ref_gap = self.frame_nums.as_mut().is_some_and(|c| c.gap_before(data));
        // A loss that cannot be placed may be in this packet: it and what follows are suspect,
        // and a recovery point must come after it to count.
        // A JPEG cut short or with bytes lost decodes silently on every engine: its markers tell.
        let jpeg_damage = if self.jpeg { crate::bitstream::jpeg_check::damage(data) } else { None };
        if let Some(why) = jpeg_damage {
            log::debug!("camera {}: JPEG at pts {p_us} is not whole: {why}", sh.name());
        }
        if unknown_place || ref_gap || p.is_corrupt() || jpeg_damage.is_some() {
            log::debug!("camera {}: reference gap {ref_gap}, demuxer-flagged corrupt {}, at the packet of pts {p_us} ({key:?}, {} bytes)", sh.name(), p.is_corrupt(), data.len());
            integrity.lost(now);
        }
        lost += p.is_corrupt() as u64;
        if lost > 0 || ref_gap {
            sh.counters.last_loss_ns.store(wall_ns(), Ordering::Relaxed);
        }
        if lost > 0 {
            sh.counters.packets_lost.fetch_add(lost, Ordering::Relaxed);
        }
        if key != KeyPoint::None {
            self.note_key(sh, p_us, now);
        }
        let Some(suspect_for) = integrity.suspect_for(now).filter(|_| sh.source.is_live()) else {
            self.loss_over(sh);
            return Ok(());
        };
        if self.may_ask(sh) && self.ask_for_keyframe(sh, now) {
            return Ok(());
        }
        let ms = |a: &AtomicU32| Some(a.load(Ordering::Relaxed)).filter(|&v| v > 0).map(|v| Duration::from_millis(v as u64));
        let wait = Wait {
            suspect_for,
            gop: ms(&sh.counters.key_interval_ms),
            since_key: sh.gop.lock().since_key(now),
            reconnect: ms(&sh.counters.reconnect_to_key_ms),
            fallback: self.fallback,
        };
        if reconnect_decision(sh, &wait, sh.counters.unhelpful_reconnects.load(Ordering::Relaxed), now) {
            sh.counters.loss_reconnects.fetch_add(1, Ordering::Relaxed);
            sh.counters.unhelpful_reconnects.fetch_add(1, Ordering::Relaxed);
            return Err(Error::new(ErrorKind::Io, format!("reconnecting for a key frame after a packet loss: {wait:?}")));
        }
        Ok(())
    }
}

/// How far from a stamped first unit's stamp its own packets' timestamps may lie (the stream's
/// time base): half a frame interval, every other picture being a frame or more away (10 ms
/// when the stream names no rate; 5-50 ms whatever rate it names).
fn first_slack(stream: &ff::format::stream::Stream<'_>) -> i64 {
    let tb = stream.time_base();
    let rate = [stream.avg_frame_rate(), stream.rate()].into_iter().find(|r| r.numerator() > 0 && r.denominator() > 0);
    let half_frame_us = rate.map_or(10_000, |r| (500_000 * r.denominator() as i64 / r.numerator() as i64).clamp(5_000, 50_000));
    if tb.numerator() <= 0 || tb.denominator() <= 0 {
        return 0;
    }
    half_frame_us * tb.denominator() as i64 / (1_000_000 * tb.numerator() as i64)
}

/// A gap taken with the session's stamped first unit: the timestamps within `slack` of the stamp
/// `at` are the unit's own (see [`LossWatch::stamp_first`]).
fn onto_stamp(g: &mut RtpGap, at: i64, slack: i64) {
    for pts in [&mut g.pts_before, &mut g.pts_after] {
        if pts.is_some_and(|p| p != at && p.saturating_sub(at).abs() < slack) {
            *pts = Some(at);
        }
    }
}

impl LossWatch {
    /// A key-frame request is due (at most one per call); the session passes it on.
    pub(super) fn take_keyframe_wanted(&mut self) -> bool {
        std::mem::take(&mut self.want_keyframe)
    }

    /// The demuxer could not take a request, or could not send one: this session reconnects for
    /// key frames as before.
    pub(super) fn cannot_ask(&mut self, sh: &Shared) {
        if !std::mem::replace(&mut self.cannot_ask, true) {
            log::debug!("camera {}: key frames cannot be asked for in this session (RTCP PLI/FIR): reconnects get them", sh.name());
        }
    }

    fn may_ask(&self, sh: &Shared) -> bool {
        !self.cannot_ask && sh.source.is_rtsp() && !legacy(sh) && !no_keyframe_requests(sh)
    }

    /// While a loss leaves the stream suspect: asks for a key frame (again every
    /// `loss_keyframe_request_repeat_ms`), and says whether the reconnect rule is to wait for
    /// the answer (within `loss_keyframe_request_wait_ms` of the first request, unless the
    /// camera left the last losses' requests unanswered).
    fn ask_for_keyframe(&mut self, sh: &Shared, now: Instant) -> bool {
        let ms = |v: u32| Duration::from_millis(v as u64);
        let first = *self.asked_first.get_or_insert(now);
        if self.asked_last.is_none_or(|t| now.duration_since(t) >= ms(DEFAULTS.loss_keyframe_request_repeat_ms)) {
            self.asked_last = Some(now);
            self.want_keyframe = true;
        }
        let unanswered = &sh.counters.keyframe_requests_unanswered;
        if now.duration_since(first) < ms(DEFAULTS.loss_keyframe_request_wait_ms) {
            return unanswered.load(Ordering::Relaxed) < KEYFRAME_REQUESTS_IGNORED;
        }
        if !std::mem::replace(&mut self.ask_wait_over, true) {
            let n = unanswered.fetch_add(1, Ordering::Relaxed) + 1;
            log::debug!("camera {}: no recovery point within {} ms of asking for a key frame ({n} loss(es) in a row)", sh.name(), DEFAULTS.loss_keyframe_request_wait_ms);
        }
        false
    }

    /// The stream is exact again (or was never suspect): a request of this loss was answered in
    /// time when its wait had not ended.
    fn loss_over(&mut self, sh: &Shared) {
        if self.asked_first.take().is_some() && !self.ask_wait_over {
            sh.counters.keyframe_requests_unanswered.store(0, Ordering::Relaxed);
        }
        self.asked_last = None;
        self.ask_wait_over = false;
    }

    /// A key picture (whole or not) at `pts` came: the figures of the reconnect rule learn from it.
    fn note_key(&mut self, sh: &Shared, pts: i64, now: Instant) {
        if !std::mem::replace(&mut self.key_seen, true) {
            note_to_key(sh, self.t_open.elapsed());
        }
        if let Some(g) = sh.gop.lock().key(pts, now) {
            sh.counters.key_interval_ms.store(g.as_millis().min(u32::MAX as u128) as u32, Ordering::Relaxed);
        }
    }
}

/// A session took `d` from its start to its first key packet: the reconnect estimate moves
/// halfway to it (cameras and servers answer at varying speeds). Whether that key frame arrives
/// whole is another matter, the same for a reconnect as for waiting.
fn note_to_key(sh: &Shared, d: Duration) {
    let ms = d.as_millis().clamp(1, u32::MAX as u128) as u32;
    let old = sh.counters.reconnect_to_key_ms.load(Ordering::Relaxed);
    let new = if old == 0 { ms } else { ((old as u64 + ms as u64) / 2) as u32 };
    sh.counters.reconnect_to_key_ms.store(new, Ordering::Relaxed);
}

/// Whether to reconnect now. With the `test-hooks` feature a test can put the camera back on the
/// rule before the GOP estimate (only after `fallback` without a recovery point), to measure both.
/// `unhelpful`: reconnects for losses in a row that gave no exact picture.
fn reconnect_decision(sh: &Shared, w: &Wait, unhelpful: u32, now: Instant) -> bool {
    if legacy(sh) {
        return w.suspect_for > w.fallback;
    }
    let wanted = if unhelpful >= reconnect_rule::UNHELPFUL_MAX { w.suspect_for > w.fallback } else { reconnect_rule::reconnect_now(w) };
    let mut spacing = sh.loss_reconnects.lock();
    if !wanted || !spacing.allows(now) {
        return false;
    }
    spacing.went(now);
    true
}

/// Whether gaps are placed by the pictures they hit; the `test-hooks` feature can turn that off
/// (every gap then counts where it was noticed), to measure both.
fn place_gaps(sh: &Shared) -> bool {
    !legacy(sh)
}

/// Whether a test made this camera reconnect for key frames without asking first (`test-hooks`).
fn no_keyframe_requests(_sh: &Shared) -> bool {
    #[cfg(feature = "test-hooks")]
    return _sh.no_keyframe_requests;
    #[cfg(not(feature = "test-hooks"))]
    false
}

/// Whether a test put this camera on the earlier loss handling (`test-hooks` only).
fn legacy(_sh: &Shared) -> bool {
    #[cfg(feature = "test-hooks")]
    return _sh.legacy_loss;
    #[cfg(not(feature = "test-hooks"))]
    false
}
