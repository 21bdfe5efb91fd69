//! A camera's recorder (the taps its session calls: the packet cache, the recordings it feeds)
//! and a recording as its handle holds it.

use super::bounds::RECORD_DEFAULTS;
use super::clock::Clock;
use super::cut::Active;
use super::packet::{Leading, Packet};
use super::shared::{Cut, Msg, Shared, State, Status};
use super::params::Params;
use super::muxer::Muxer;
#[cfg(feature = "test-hooks")]
use super::hooks;
use super::{cache, cut, inband, muxer, paths, segments, writer};
use crate::bitstream::recovery::{KeyPoint, KeyScan};
use crate::status::*;
use ffmpeg_next as ff;
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Inner {
    cache: Option<cache::Cache>,
    params: Option<Arc<Params>>,
    keys: Option<KeyScan>,
    watch: Option<inband::Watch>,
    /// The packet shown last so far: its pts and when it is shown (recorder's clock): a trigger.
    newest_pts_us: Option<i64>,
    newest_shown_us: Option<i64>,
    clock: Clock,
    /// The session has had no decode time yet: the offset (recorder's clock − presentation
    /// time) its packets' presentation times are placed by until the first comes, the packets
    /// so placed, and how many.
    undated_offset: Option<i64>,
    undated: Vec<Arc<Packet>>,
    undated_seen: u32,
    /// `newest_shown_us` is such an estimate.
    newest_undated: bool,
    lost_seen: u64,
    /// Sessions so far (the current one's number).
    session: u64,
    active: Vec<Active>,
    /// Every writer thread not joined yet.
    writers: Vec<(Arc<Shared>, JoinHandle<()>)>,
    closed: bool,
    made: u64,
    failed: u64,
    no_picture: u64,
    dropped: u64,
}

/// What `nvcam_camera_record_stats` reports.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecorderStats {
    pub cache_bytes: u64,
    pub cache_packets: u32,
    pub cache_span_us: i64,
    pub cache_trimmed_for_bytes: u64,
    pub running: u32,
    pub made: u64,
    /// Recordings ended by an error (not those that found no picture).
    pub failed: u64,
    /// Recordings that ended before a key frame came: no picture, no file.
    pub no_picture: u64,
    pub dropped: u64,
}

/// A camera's recording state: its cache and its recordings.
#[derive(Default)]
pub(crate) struct Recorder {
    /// A cache or a recording exists: the camera's taps do their work.
    on: AtomicBool,
    /// The session's demuxer gave no parameter sets (MPEG-TS, an SDP without them): its key
    /// frames are read for them even while nothing records, until found, so that a recording
    /// started later can write its file's header at once.
    needs_sets: AtomicBool,
    /// The session's time base (numerator << 32 | denominator; 0: none) and, kept while nothing
    /// records, the last packet's decode time and the newest presentation time (µs): only the
    /// camera's thread writes them.
    time_base: AtomicU64,
    /// The session has had no decode time yet: its packets go through the lock (the clock
    /// steps one frame for each).
    undated: AtomicBool,
    last_dts_us: AtomicI64,
    newest_pts_us: AtomicI64,
    inner: Mutex<Inner>,
}

impl Recorder {
    fn update_on(&self, i: &Inner) {
        self.on.store(i.cache.is_some() || !i.active.is_empty(), Ordering::Release);
    }

    /// Sizes the pre-roll cache (`pre` zero and `max_bytes` zero: no cache).
    pub(crate) fn set_cache(&self, pre: Duration, max_bytes: usize) -> Result<()> {
        let mut i = self.inner.lock();
        if i.closed {
            return Err(Error::new(ErrorKind::Closed, "camera is closed"));
        }
        i.cache = if pre.is_zero() && max_bytes == 0 {
            None
        } else {
            let bytes = if max_bytes == 0 { RECORD_DEFAULTS.cache_bytes } else { max_bytes };
            Some(cache::Cache::new(pre.as_micros() as i64, bytes))
        };
        self.update_on(&i);
        Ok(())
    }

    /// A new connection: its parameters, and a cache that starts afresh (its packets would not
    /// decode with the new session's parameters).
    pub(crate) fn session_start(&self, stream: &ff::format::stream::Stream) {
        let params = Params::new(stream).map_err(|e| log::warn!("recording: {e}")).ok();
        let mut i = self.inner.lock();
        i.keys = params.as_ref().map(|_| KeyScan::new(&stream.parameters()));
        i.watch = params.as_ref().map(|_| inband::Watch::new(&stream.parameters()));
        let needs = matches!((&i.watch, &params), (Some(w), Some(p)) if w.needs_sets(p));
        self.needs_sets.store(needs, Ordering::Release);
        let tb = params.as_ref().map_or(0, |p| (p.time_base.num as u32 as u64) << 32 | p.time_base.den as u32 as u64);
        self.time_base.store(tb, Ordering::Release);
        self.newest_pts_us.store(i64::MIN, Ordering::Release);
        self.last_dts_us.store(i64::MIN, Ordering::Release);
        i.clock.new_session(frame_step_us(stream));
        i.session += 1;
        (i.undated_offset, i.undated_seen, i.newest_undated) = (None, 0, false);
        i.undated.clear();
        self.undated.store(params.is_some(), Ordering::Release);
        i.params = params;
        if let Some(c) = i.cache.as_mut() {
            c.clear();
        }
        let now = i.clock.now_us;
        let mut dropped = 0;
        for a in i.active.iter_mut() {
            dropped += a.session_end(now);
        }
        i.dropped += dropped;
    }

    /// A packet read from the camera; `lost_total` is the camera's count of lost packets so far.
    pub(crate) fn packet(&self, p: &ff::Packet, pts_us: i64, lost_total: u64) {
        // The newest timestamps, noted without a lock: a recording started later (without a
        // cache) takes its trigger from them, not from the last packet it saw.
        let tb = self.time_base.load(Ordering::Acquire);
        if tb != 0 {
            let dts_us = crate::decode::pts_us(p.dts().or(p.pts()), ff::Rational::new((tb >> 32) as u32 as i32, tb as u32 as i32));
            let last = self.last_dts_us.swap(dts_us, Ordering::SeqCst);
            let newest = self.newest_pts_us.load(Ordering::Relaxed);
            if pts_us != i64::MIN && (pts_us > newest || (dts_us != i64::MIN && last != i64::MIN && dts_us < last)) {
                self.newest_pts_us.store(pts_us, Ordering::SeqCst);
            }
        }
        // `begin` sets `on` before it reads those: a packet that finds it off is at or before
        // the trigger, one that finds it on goes through the lock.
        if !self.on.load(Ordering::SeqCst) {
            let (sets, undated) = (self.needs_sets.load(Ordering::Acquire), self.undated.load(Ordering::Acquire));
            if sets || undated {
                #[cfg(feature = "test-hooks")]
                hooks::PACKET_LOCKS.fetch_add(1, Ordering::Relaxed);
                let mut guard = self.inner.lock();
                let i = &mut *guard;
                if let (true, Some(keys)) = (sets, i.keys) {
                    let data = p.data().unwrap_or(&[]);
                    self.watch(i, p, data, keys.classify(data, p.is_key()) == KeyPoint::Full);
                }
                // The session's first packets, before its first decode time: the clock steps
                // one frame for each (a recording started now ends by it).
                if let (true, Some(params)) = (undated, i.params.clone()) {
                    self.tick(i, p, pts_us, params.time_base.into());
                }
            }
            return;
        }
        #[cfg(feature = "test-hooks")]
        hooks::PACKET_LOCKS.fetch_add(1, Ordering::Relaxed);
        let mut guard = self.inner.lock();
        let i = &mut *guard;
        let lost_before = lost_total.saturating_sub(i.lost_seen);
        i.lost_seen = lost_total;
        let Some(keys) = i.keys else { return };
        let data = p.data().unwrap_or(&[]);
        let key = keys.classify(data, p.is_key()) == KeyPoint::Full;
        let leading = match keys.hevc_type(data) {
            Some(8 | 9) => Leading::Skipped,
            Some(6 | 7) => Leading::Decodable,
            _ => Leading::No,
        };
        self.watch(i, p, data, key);
        let Some(params) = i.params.clone() else { return };
        let (clock_us, shown_us) = self.tick(i, p, pts_us, params.time_base.into());
        let pkt = Arc::new(Packet {
            data: data.into(),
            pts: p.pts(),
            dts: p.dts(),
            duration: p.duration(),
            pts_us,
            clock_us,
            shown_us: AtomicI64::new(shown_us),
            key,
            leading,
            lost_before,
            params,
            session: i.session,
            seq: AtomicU64::new(0),
            written: AtomicBool::new(false),
        });
        if p.dts().is_none() && i.undated_offset.is_some() && i.undated.len() < UNDATED_MAX as usize {
            i.undated.push(pkt.clone());
        }
        if let Some(c) = i.cache.as_mut() {
            c.push(pkt.clone());
        }
        for a in i.active.iter_mut() {
            if let (Some(post), true) = (a.trigger_at_first, pts_us != i64::MIN) {
                a.trigger_at_first = None;
                a.rec.status.lock().trigger_pts_us = pts_us;
                a.rec.end_clock_us.fetch_max(shown_us.saturating_add(post), Ordering::AcqRel);
            }
            if a.tx.is_none() {
                a.after_end += 1;
                continue;
            }
            // The end is a presentation time (`cut`); a stop moved it back to the newest
            // picture shown then.
            if !a.wait_key || pkt.key {
                a.wait_key = false;
                a.held.push(pkt.clone());
            }
            i.dropped += a.advance(clock_us, false);
        }
        Self::prune(i, None);
        self.update_on(i);
    }

    /// Reads a key frame for parameters other than the session's (`inband`): new ones go to
    /// the packets from this one on, and the recordings split there.
    fn watch(&self, i: &mut Inner, p: &ff::Packet, data: &[u8], key: bool) {
        let (true, Some(w), Some(params)) = (key, i.watch.as_mut(), i.params.as_ref()) else { return };
        let side = p.side_data().find(|d| d.kind() == ff::packet::side_data::Type::NewExtraData);
        let Some(next) = w.check(data, side.as_ref().map(|d| d.data()), params) else { return };
        if params.shape() == next.shape() {
            log::debug!("recording: the stream's parameter sets taken from its packets (its demuxer had none)");
        } else {
            log::info!("recording: the stream changed inside its session ({:?} -> {:?}): recordings go on in a new part", params.size(), next.size());
        }
        if !next.extradata().is_empty() {
            self.needs_sets.store(false, Ordering::Release);
        }
        i.params = Some(next);
    }

    /// Moves the recorder's clock with packet `p` and notes the newest presentation time: the
    /// packet's decode time and when its picture is shown, on that clock. A packet without a
    /// decode time (the first packets of an RTSP session) takes one frame's step, and its picture
    /// is placed by its presentation time relative to the session's first; the session's first
    /// decode time corrects those places (and the ends computed from them).
    fn tick(&self, i: &mut Inner, p: &ff::Packet, pts_us: i64, tb: ff::Rational) -> (i64, i64) {
        let dts_us = crate::decode::pts_us(p.dts(), tb);
        let duration_us = if p.duration() > 0 { crate::decode::pts_us(Some(p.duration()), tb) } else { 0 };
        let clock_us = i.clock.tick(dts_us, duration_us);
        let shown_us = match (pts_us, dts_us) {
            (i64::MIN, _) => clock_us,
            (pts, i64::MIN) => {
                i.undated_seen += 1;
                if i.undated_seen > UNDATED_MAX {
                    // A stream without decode times: nothing will correct the estimate.
                    self.undated.store(false, Ordering::Release);
                }
                let off = *i.undated_offset.get_or_insert(clock_us - pts);
                let s = pts.saturating_add(off);
                if (s - clock_us).abs() <= 2_000_000 { s } else { clock_us }
            }
            (pts, dts) => {
                if let Some(est) = i.undated_offset.take() {
                    Self::correct(i, (clock_us - dts) - est);
                }
                if self.undated.load(Ordering::Relaxed) {
                    self.undated.store(false, Ordering::Release);
                }
                clock_us + (pts - dts)
            }
        };
        if pts_us != i64::MIN && i.newest_shown_us.is_none_or(|n| shown_us > n) {
            i.newest_shown_us = Some(shown_us);
            i.newest_pts_us = Some(pts_us);
            i.newest_undated = dts_us == i64::MIN;
        }
        (clock_us, shown_us)
    }

    /// The session's first decode time came: the pictures placed before it move by `delta`
    /// (their estimate took the first picture as shown when decoded), and so do the ends
    /// computed from them.
    fn correct(i: &mut Inner, delta: i64) {
        let undated = std::mem::take(&mut i.undated);
        for a in i.active.iter_mut() {
            if std::mem::take(&mut a.provisional) && delta != 0 {
                let _ = a.rec.end_clock_us.fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| Some(if e == i64::MAX { e } else { e.saturating_add(delta) }));
            }
        }
        if delta == 0 {
            return;
        }
        for p in &undated {
            p.shown_us.fetch_add(delta, Ordering::Relaxed);
        }
        if std::mem::take(&mut i.newest_undated) {
            i.newest_shown_us = i.newest_shown_us.map(|n| n + delta);
        }
        let moved = |p: &&Arc<Packet>| undated.iter().any(|u| Arc::ptr_eq(u, p));
        for a in i.active.iter_mut() {
            if let Some(m) = a.sent.iter().filter(moved).map(|p| p.shown()).max() {
                a.sent_shown_us = a.sent_shown_us.max(m);
            }
            if let Some(m) = a.held.iter().filter(moved).filter(|p| p.seq.load(Ordering::Relaxed) != 0).map(|p| p.shown()).max() {
                a.decoded_shown_us = a.decoded_shown_us.max(m);
            }
        }
    }

    /// A picture the camera decoded: its frame number goes to the cached packet and to the
    /// recordings that hold it.
    pub(crate) fn picture(&self, seq: u64, pts_us: i64) {
        if !self.on.load(Ordering::Acquire) || pts_us == i64::MIN {
            return;
        }
        let mut guard = self.inner.lock();
        let i = &mut *guard;
        if let Some(p) = i.cache.as_ref().and_then(|c| c.find(pts_us)) {
            p.seq.store(seq, Ordering::Relaxed);
        }
        let session = i.session;
        let mine = |p: &&Arc<Packet>| p.pts_us == pts_us && p.session == session;
        for a in i.active.iter_mut() {
            if let Some(p) = a.held.iter().rev().find(mine) {
                // Noted when the packet goes to the file (a stop may leave it out).
                p.seq.store(seq, Ordering::SeqCst);
                a.decoded_shown_us = a.decoded_shown_us.max(p.shown());
            } else if let Some(p) = a.sent.iter().rev().find(mine) {
                // Noted here if the writer has written it, else by the writer (one of the two
                // sees the other's store).
                p.seq.store(seq, Ordering::SeqCst);
                a.rec.note_seq(p, seq);
            }
        }
        Self::prune(i, Some(pts_us));
        self.update_on(i);
    }

    /// Forgets recordings that take no more packets and whose last picture has come out (or
    /// that have waited long enough for it).
    fn prune(i: &mut Inner, picture_pts_us: Option<i64>) {
        i.active.retain(|a| {
            let gone = a.tx.is_none() && (a.after_end > 8 || picture_pts_us.is_some_and(|p| p > a.last_pts_us));
            if gone {
                a.rec.seqs_final.store(true, Ordering::Release);
            }
            !gone
        });
        Self::count_finished_writers(i);
    }

    /// Counts the writers that have finished (failed, no picture, packets they lost) and lets
    /// them go. Run as pictures come and when the stats are read: a camera with no cache and no
    /// recording left sends the recorder nothing, and its last recording must still be counted.
    fn count_finished_writers(i: &mut Inner) {
        let (mut failed, mut no_picture, mut lost) = (0, 0, 0);
        i.writers.retain(|(rec, _)| {
            let done = rec.finished_at().is_some();
            if done && rec.status.lock().state == State::Failed {
                if rec.no_picture.load(Ordering::Acquire) {
                    no_picture += 1;
                } else {
                    failed += 1;
                }
            }
            if done {
                lost += rec.writer_dropped.load(Ordering::Acquire);
            }
            !done
        });
        // A finished writer's thread has left its loop; its handle goes (detached: it ends by itself).
        i.failed += failed;
        i.no_picture += no_picture;
        i.dropped += lost;
    }

    /// Starts a recording of this camera into `path` (`.mkv` or `.mp4`): from the key frame at or
    /// before now − `pre` (as far as the cache reaches) to now + `post`.
    pub(crate) fn start(self: &Arc<Self>, path: &Path, pre: Duration, post: Duration) -> Result<Arc<Recording>> {
        self.begin(path, pre, Some(post), None)
    }

    /// Starts a continuous recording cut into segments (`plan`), from the key frame at or before
    /// now, until stopped.
    pub(crate) fn start_segments(self: &Arc<Self>, mut plan: segments::Plan) -> Result<Arc<Recording>> {
        if !plan.dir.is_dir() {
            return Err(Error::new(ErrorKind::Io, format!("'{}' is not a folder", plan.dir.display())));
        }
        let first = plan.next_name();
        self.begin(&first, Duration::ZERO, None, Some(plan))
    }

    fn begin(self: &Arc<Self>, path: &Path, pre: Duration, post: Option<Duration>, plan: Option<segments::Plan>) -> Result<Arc<Recording>> {
        let params = {
            let i = self.inner.lock();
            if i.closed {
                return Err(Error::new(ErrorKind::Closed, "camera is closed"));
            }
            if self.needs_sets.load(Ordering::Acquire) {
                return Err(Error::timeout("the camera's stream has not sent its parameter sets yet (they come with its first key frame): record once it has"));
            }
            i.params.clone().ok_or_else(|| Error::timeout("the camera has no stream yet: record once it delivers frames"))?
        };
        // The path is claimed and the file created and its header written here, so a bad or
        // busy path fails on this call; a call that fails leaves no file.
        let claim = paths::claim(path)?;
        let mux = Muxer::create(path, &params)?;
        let part = muxer::part_path(path);
        // Closed meanwhile: the file just made goes (the muxer closes it first).
        let unmade = |mux: Muxer, e: Error| -> Result<Arc<Recording>> { drop(mux); let _ = std::fs::remove_file(&part); Err(e) };
        let mut guard = self.inner.lock();
        let i = &mut *guard;
        if i.closed {
            return unmade(mux, Error::new(ErrorKind::Closed, "camera is closed"));
        }
        if !self.on.swap(true, Ordering::SeqCst) && !self.undated.load(Ordering::SeqCst) {
            // Nothing recorded: the clock catches up with the newest packet, noted lock-free
            // (before the session's first decode time, each packet moved it under the lock).
            let (dts, pts) = (self.last_dts_us.load(Ordering::SeqCst), self.newest_pts_us.load(Ordering::SeqCst));
            if dts != i64::MIN {
                let now = i.clock.tick(dts, 0);
                if pts != i64::MIN {
                    i.newest_shown_us = Some(now + (pts - dts));
                    i.newest_pts_us = Some(pts);
                }
            }
        }
        // Before the session's first packet (a recording started with the open): its first
        // picture is the trigger.
        let before_first = self.undated.load(Ordering::SeqCst) && i.undated_seen == 0;
        let trigger_at_first = post.filter(|_| before_first).map(|p| p.as_micros().min(i64::MAX as u128) as i64);
        let trigger = i.newest_pts_us.unwrap_or(0);
        let now = i.newest_shown_us.unwrap_or(i.clock.now_us);
        let mut pre_roll = match &i.cache {
            Some(c) => c.since(now.saturating_sub(pre.as_micros() as i64)),
            None => Vec::new(),
        };
        let rec = Shared::new(muxer::part_path(path), trigger, now, post);
        // The pre-roll goes to the writer up to its last closed cut; the rest waits for the
        // packets that close it, like those still to come.
        let decoded_shown_us = pre_roll.iter().filter(|p| p.seq.load(Ordering::Relaxed) != 0).map(|p| p.shown()).max().unwrap_or(i64::MIN);
        let (longest, reach) = cut::closed(&pre_roll, i64::MIN, i.clock.now_us.max(decoded_shown_us), rec.end_clock_us.load(Ordering::Acquire));
        let held = pre_roll.split_off(reach.unwrap_or(longest));
        #[allow(unused_mut)]
        let mut cap = RECORD_DEFAULTS.queue_packets;
        #[cfg(feature = "test-hooks")]
        if hooks::QUEUE_PACKETS.load(Ordering::Relaxed) > 0 {
            cap = hooks::QUEUE_PACKETS.load(Ordering::Relaxed);
        }
        let (tx, rx) = sync_channel(cap);
        let last_pts_us = pre_roll.iter().map(|p| p.pts_us).max().unwrap_or(i64::MIN);
        let sent_shown_us = pre_roll.iter().map(|p| p.shown()).max().unwrap_or(i64::MIN);
        let wait_key = pre_roll.is_empty() && held.is_empty();
        if reach.is_some() {
            let _ = tx.try_send(Msg::End);
        }
        let tx = reach.is_none().then_some(tx);
        let sent = pre_roll.iter().skip(pre_roll.len().saturating_sub(cut::SENT_KEPT)).cloned().collect();
        let (w, r) = (rec.clone(), pre_roll);
        let cut = plan.map(Cut::new);
        let name = format!("nvcam-rec-{}", i.made);
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            // The path is free again once the writer has finished with it.
            let _claim = claim;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| writer::write_loop(w.clone(), mux, r, rx, cut)));
            if r.is_err() {
                w.fail(Error::new(ErrorKind::Panic, "recording writer panicked (see log)"));
                w.mark_finished();
            }
        });
        let thread = match spawned {
            Ok(t) => t,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(Error::internal(format!("cannot start a recording thread: {e}")));
            }
        };
        i.made += 1;
        i.active.push(Active { rec: rec.clone(), tx, wait_key, held, sent, sent_shown_us, decoded_shown_us, last_pts_us, after_end: 0, provisional: i.newest_undated || before_first, trigger_at_first });
        i.writers.push((rec.clone(), thread));
        self.update_on(i);
        log::info!("recording {} started (pre {} ms, post {:?})", path.display(), pre.as_millis(), post);
        Ok(Arc::new(Recording { shared: rec, recorder: self.clone() }))
    }

    /// The stream time now (when the newest packet's picture is shown), on the recorder's clock.
    fn now_clock_us(&self) -> i64 {
        let i = self.inner.lock();
        i.newest_shown_us.unwrap_or(i.clock.now_us)
    }

    /// A recording stopped: it ends now, after the pictures its packets so far can show whole.
    fn stopped(&self, rec: &Arc<Shared>) {
        let mut guard = self.inner.lock();
        let i = &mut *guard;
        let now = i.clock.now_us;
        for a in i.active.iter_mut().filter(|a| Arc::ptr_eq(&a.rec, rec)) {
            // The end moves back to the newest picture shown so far; the packets still to come
            // that it needs (B-frames decoded after a P picture it shows) are taken.
            rec.end_clock_us.fetch_min(a.decoded_shown_us.max(a.sent_shown_us), Ordering::AcqRel);
            i.dropped += a.advance(now, false);
        }
    }

    pub(crate) fn stats(&self) -> RecorderStats {
        let mut i = self.inner.lock();
        Self::count_finished_writers(&mut i);
        let c = i.cache.as_ref();
        RecorderStats {
            cache_bytes: c.map_or(0, |c| c.bytes() as u64),
            cache_packets: c.map_or(0, |c| c.len() as u32),
            cache_span_us: c.map_or(0, |c| c.span_us()),
            cache_trimmed_for_bytes: c.map_or(0, |c| c.trimmed_for_bytes),
            running: i.active.iter().filter(|a| a.tx.is_some()).count() as u32,
            made: i.made,
            failed: i.failed,
            no_picture: i.no_picture,
            dropped: i.dropped,
        }
    }

    /// The camera closes: every recording finishes with what it has queued (a complete file,
    /// state `Stopped`), within `timeout`; the cache goes.
    pub(crate) fn close(&self, timeout: Duration) {
        let end = Instant::now() + timeout;
        let writers = {
            let mut i = self.inner.lock();
            i.closed = true;
            i.cache = None;
            let now = i.clock.now_us;
            for mut a in std::mem::take(&mut i.active) {
                if a.tx.is_some() {
                    a.rec.stop.store(true, Ordering::Release);
                    i.dropped += a.advance(now, true);
                }
                a.rec.seqs_final.store(true, Ordering::Release);
            }
            self.on.store(false, Ordering::Release);
            std::mem::take(&mut i.writers)
        };
        for (rec, thread) in writers {
            if rec.wait_finished(end.saturating_duration_since(Instant::now())) {
                let _ = thread.join();
            } else {
                log::warn!("recording {}: not finished within the close timeout; it finishes on its own", rec.status.lock().file.display());
            }
        }
    }
}

/// Packets without a decode time after which a session is taken to have none (its presentation
/// times then place its pictures for good).
const UNDATED_MAX: u32 = 32;

/// One frame's step from a stream's rate, µs (0: unknown or implausible).
fn frame_step_us(stream: &ff::format::stream::Stream) -> i64 {
    let r = stream.avg_frame_rate();
    let r = if r.numerator() > 0 && r.denominator() > 0 { r } else { stream.rate() };
    if r.numerator() <= 0 || r.denominator() <= 0 {
        return 0;
    }
    let us = 1_000_000i64 * r.denominator() as i64 / r.numerator() as i64;
    if (1_000..=1_000_000).contains(&us) { us } else { 0 }
}

/// A recording as its handle holds it.
pub(crate) struct Recording {
    pub(crate) shared: Arc<Shared>,
    pub(super) recorder: Arc<Recorder>,
}

/// What the host sees of a recording's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reported {
    Running,
    /// Taking no more packets; the file is being finished (or the last frame numbers are
    /// coming in).
    Finishing,
    Ended(State),
}

impl Recording {
    /// Moves the end to now + `post` (never earlier).
    pub(crate) fn extend(&self, post: Duration) -> Result<()> {
        if !self.shared.running() || self.shared.stop.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "the recording has ended"));
        }
        self.shared.extend(self.recorder.now_clock_us(), post);
        Ok(())
    }

    /// Ends it now: what is queued is written, then the file is finished (state `Stopped`).
    pub(crate) fn stop(&self) {
        self.shared.stop.store(true, Ordering::Release);
        self.recorder.stopped(&self.shared);
    }

    pub(crate) fn status(&self) -> (Reported, Status) {
        let s = self.shared.status.lock().clone();
        let finished = self.shared.finished_at();
        let seqs = self.shared.seqs_final.load(Ordering::Acquire);
        let r = match finished {
            None if s.state == State::Running && !self.shared.stop.load(Ordering::Acquire) => Reported::Running,
            // The last pictures' frame numbers come within a few frames; a camera that stalls
            // meanwhile does not hold the status for long.
            Some(t) if seqs || t.elapsed() > Duration::from_secs(1) => Reported::Ended(s.state),
            _ => Reported::Finishing,
        };
        (r, s)
    }
}
