//! One recording: what the host polls (its status) and calls on its handle, and the thread that
//! writes its packets, off the camera's thread, behind a bounded queue.

use super::segments::{Kept, Plan};
use super::writer::{Muxer, Params};
use super::tally::{lost_to_error, Tally};
use super::{Leading, Packet, Recorder};
use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a recording is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Taking packets (pre-roll, then until trigger + post).
    Running,
    /// Complete: the file holds what was asked for, under its name.
    Done,
    /// Ended early (stop, release, camera close, shutdown): a complete file, shorter than asked.
    Stopped,
    /// Ended by an error (`error`): what was written is in the `.part` file.
    Failed,
}

/// What `nvcam_record_status` reports.
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub state: State,
    pub error: Option<Error>,
    /// The file being written (its `.part` name until complete), or the last part's final name.
    pub file: PathBuf,
    /// Files this recording made: more than one when the stream was reconnected or changed size.
    pub parts: u32,
    pub frames: u64,
    pub bytes: u64,
    /// The camera's frame numbers (`seq`) of the first and last picture in the files; 0 = none.
    pub first_seq: u64,
    pub last_seq: u64,
    /// Timestamps (µs, as frames carry them) of the first and last picture written.
    pub first_pts_us: i64,
    pub last_pts_us: i64,
    /// The stream time at the trigger (the newest packet then).
    pub trigger_pts_us: i64,
    /// Packets lost on the way from the camera inside the recording, and in how many spans.
    pub lost_packets: u64,
    pub loss_spans: u32,
    /// Timestamp of the picture after the first loss; 0 if none.
    pub first_loss_pts_us: i64,
    /// Packets taken for the recording that are in no file: the camera could not queue them
    /// (the writer fell behind), or a write error lost them (with those still queued or held).
    pub dropped: u64,
    /// The first picture of the current part, and the spans of the parts before it: the
    /// duration is the sum of each part's last − first.
    pub part_first_pts_us: i64,
    pub earlier_parts_us: i64,
}

impl Status {
    /// The summed span of the parts' pictures (each part's last − first presentation time).
    pub(crate) fn duration_us(&self) -> i64 {
        if self.frames == 0 {
            return 0;
        }
        self.earlier_parts_us + (self.last_pts_us - self.part_first_pts_us)
    }
}

/// What the camera's thread and the host's calls share with the writer.
pub(crate) struct Shared {
    pub status: Mutex<Status>,
    /// Ends the recording at the next packet or within the writer's poll.
    pub stop: AtomicBool,
    /// The stream time (the recorder's clock) up to which packets are taken (trigger + post;
    /// moved by extend).
    pub end_clock_us: AtomicI64,
    /// A wall-clock bound on the same end (ms after `base`), for a camera that stops sending.
    end_wall_ms: AtomicI64,
    base: Instant,
    /// Bytes queued for the writer and not yet written.
    pub queued: AtomicUsize,
    /// When the writer finished (trailer written or failed), once it has.
    finished: (Mutex<Option<Instant>>, Condvar),
    /// The camera's thread has seen the pictures of the last packet taken (their `seq`s are in).
    pub seqs_final: AtomicBool,
    /// The writer failed: the camera's thread sends no more and counts what it held back.
    pub writer_failed: AtomicBool,
    /// Packets the writer lost to its error (counted once into the camera's stats).
    pub writer_dropped: std::sync::atomic::AtomicU64,
}

/// How long after its end in wall-clock time a recording ends without packets (a stalled
/// camera): the same end in stream time normally comes first.
const WALL_GRACE: Duration = Duration::from_secs(3);

/// How long a stopped recording's writer waits for the packets that complete the pictures shown
/// at the stop (a few frames of B-frame delay) before it finishes without them.
const STOP_GRACE: Duration = Duration::from_millis(1000);

impl Shared {
    /// `post` `None`: open-ended (a segmented recording, until stopped).
    pub(crate) fn new(file: PathBuf, trigger_pts_us: i64, trigger_clock_us: i64, post: Option<Duration>) -> Arc<Shared> {
        let end = post.map_or(i64::MAX, |p| trigger_clock_us.saturating_add(p.as_micros().min(i64::MAX as u128) as i64));
        let s = Arc::new(Shared {
            status: Mutex::new(Status {
                state: State::Running,
                error: None,
                file,
                parts: 1,
                frames: 0,
                bytes: 0,
                first_seq: 0,
                last_seq: 0,
                first_pts_us: 0,
                last_pts_us: 0,
                trigger_pts_us,
                lost_packets: 0,
                loss_spans: 0,
                first_loss_pts_us: 0,
                dropped: 0,
                part_first_pts_us: 0,
                earlier_parts_us: 0,
            }),
            stop: AtomicBool::new(false),
            end_clock_us: AtomicI64::new(end),
            end_wall_ms: AtomicI64::new(0),
            base: Instant::now(),
            queued: AtomicUsize::new(0),
            finished: (Mutex::new(None), Condvar::new()),
            seqs_final: AtomicBool::new(false),
            writer_failed: AtomicBool::new(false),
            writer_dropped: Default::default(),
        });
        let wall = post.map_or(i64::MAX, |p| (p + WALL_GRACE).as_millis().min(i64::MAX as u128) as i64);
        s.end_wall_ms.store(wall, Ordering::Release);
        s
    }

    /// Moves the end to `now_clock_us + post` (never earlier than it was).
    pub(crate) fn extend(&self, now_clock_us: i64, post: Duration) {
        self.end_clock_us.fetch_max(now_clock_us.saturating_add(post.as_micros().min(i64::MAX as u128) as i64), Ordering::AcqRel);
        let wall = (self.base.elapsed() + post + WALL_GRACE).as_millis().min(i64::MAX as u128) as i64;
        self.end_wall_ms.fetch_max(wall, Ordering::AcqRel);
    }

    fn wall_left(&self) -> Duration {
        let end = self.end_wall_ms.load(Ordering::Acquire);
        Duration::from_millis(end.saturating_sub(self.base.elapsed().as_millis() as i64).max(0) as u64)
    }

    pub(crate) fn running(&self) -> bool {
        self.status.lock().state == State::Running
    }

    /// When the writer finished, if it has.
    pub(crate) fn finished_at(&self) -> Option<Instant> {
        *self.finished.0.lock()
    }

    /// Waits up to `d` for the writer to finish; whether it did.
    pub(crate) fn wait_finished(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        let mut f = self.finished.0.lock();
        while f.is_none() {
            if self.finished.1.wait_until(&mut f, end).timed_out() {
                return f.is_some();
            }
        }
        true
    }

    /// Ends the recording with `e` (the camera could not queue a packet, or the writer failed).
    pub(crate) fn fail(&self, e: Error) {
        let mut s = self.status.lock();
        if s.state == State::Running {
            log::warn!("recording {}: {e}", s.file.display());
            s.state = State::Failed;
            s.error = Some(e);
        }
        self.stop.store(true, Ordering::Release);
    }

    pub(crate) fn mark_finished(&self) {
        *self.finished.0.lock() = Some(Instant::now());
        self.finished.1.notify_all();
    }

    /// Records a picture's frame number, for a packet in the files (checked under the status's
    /// lock: a write error takes the packets the muxer had not written out back).
    pub(crate) fn note_seq(&self, p: &Packet, seq: u64) {
        let mut s = self.status.lock();
        if !p.written.load(Ordering::SeqCst) {
            return;
        }
        if s.first_seq == 0 || seq < s.first_seq {
            s.first_seq = seq;
        }
        s.last_seq = s.last_seq.max(seq);
    }
}

/// What the camera's thread sends the writer.
pub(crate) enum Msg {
    Packet(Arc<Packet>),
    /// The end in stream time is reached.
    End,
}

/// A segmented recording's state in its writer.
pub(crate) struct Cut {
    pub plan: Plan,
    kept: Kept,
    /// The recorder's clock at the current segment's first packet.
    start_us: Option<i64>,
}

impl Cut {
    pub(crate) fn new(plan: Plan) -> Cut {
        Cut { plan, kept: Kept::default(), start_us: None }
    }
}

/// The writer thread's body: writes the pre-roll, then what comes, until the end, a stop, or an
/// error; splits into a new part when the stream's parameters change (a reconnect, a new size
/// inside a session).
pub(crate) fn write_loop(sh: Arc<Shared>, mut mux: Muxer, pre_roll: Vec<Arc<Packet>>, rx: Receiver<Msg>, mut cut: Option<Cut>) {
    let mut first_part = true;
    let mut tally = Tally::new();
    let mut stopped_early = false;
    let mut stop_seen: Option<Instant> = None;
    let result = (|| -> Result<()> {
        for p in &pre_roll {
            put(&sh, &mut mux, p, &mut first_part, &mut cut, &mut tally)?;
        }
        drop(pre_roll);
        loop {
            let wait = sh.wall_left().min(Duration::from_millis(100));
            match rx.recv_timeout(wait) {
                Ok(Msg::Packet(p)) => {
                    sh.queued.fetch_sub(p.data.len(), Ordering::AcqRel);
                    put(&sh, &mut mux, &p, &mut first_part, &mut cut, &mut tally)?;
                }
                Ok(Msg::End) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                // Stopped (by the host, a close, or a queue that overflowed): the camera's thread
                // sends the packets up to the pictures shown then and the end; a camera that
                // stalls meanwhile leaves the file with what was queued.
                Err(RecvTimeoutError::Timeout) if sh.stop.load(Ordering::Acquire) => {
                    if stop_seen.get_or_insert_with(Instant::now).elapsed() >= STOP_GRACE {
                        stopped_early = true;
                        return Ok(());
                    }
                }
                Err(RecvTimeoutError::Timeout) if sh.wall_left().is_zero() => {
                    log::info!("recording {}: no packets came until its end; finished with what it has", mux.path().display());
                    return Ok(());
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    })();
    let result = result.inspect_err(|_| lost_to_error(&sh, &mut tally, &rx));
    let stopped_early = stopped_early || sh.stop.load(Ordering::Acquire);
    if result.is_ok() && mux.bytes == 0 && sh.status.lock().frames == 0 {
        // Nothing came before the end (no key frame): a header-only file plays nowhere, so
        // none is left, and the status says why.
        let part = crate::record::writer::part_path(mux.path());
        drop(mux);
        let _ = std::fs::remove_file(&part);
        sh.fail(Error::timeout("the recording ended before the camera sent a key frame: it holds no picture and left no file"));
        sh.mark_finished();
        return;
    }
    let done = result.and_then(|()| mux.finish().inspect_err(|_| lost_to_error(&sh, &mut tally, &rx)));
    {
        let mut s = sh.status.lock();
        match done {
            Ok(path) => {
                if let Some(c) = cut.as_mut() {
                    c.kept.add(&c.plan, &path);
                }
                s.file = path;
                if s.state == State::Running {
                    s.state = if stopped_early { State::Stopped } else { State::Done };
                }
                log::info!(
                    "recording {}: {} ({} frames, {} bytes, seq {}..{})",
                    s.file.display(),
                    if s.state == State::Done { "complete" } else { "ended early" },
                    s.frames,
                    s.bytes,
                    s.first_seq,
                    s.last_seq
                );
            }
            Err(e) => {
                if s.state == State::Running {
                    log::warn!("recording {}: {e}", s.file.display());
                    s.state = State::Failed;
                    s.error = Some(e);
                }
            }
        }
    }
    sh.mark_finished();
}

/// Writes one packet, opening the next part first when the packet is of another session.
fn put(sh: &Shared, mux: &mut Muxer, p: &Arc<Packet>, first_part: &mut bool, cut: &mut Option<Cut>, tally: &mut Tally) -> Result<()> {
    let new_session = !Arc::ptr_eq(mux.params(), &p.params);
    let due = cut.as_ref().is_some_and(|c| c.start_us.is_some_and(|s| p.clock_us - s >= c.plan.every_us));
    if new_session && mux.bytes == 0 {
        if !p.key {
            return Ok(());
        }
        // The file was opened with the stream's newest parameters, but its first packets (the
        // cache's oldest) are of the parameters before a change: it starts again with theirs.
        mux.restart(&p.params)?;
    } else if new_session || (due && p.key) {
        if !p.key {
            return Ok(()); // the new part starts at a key frame
        }
        next_part(sh, mux, &p.params, cut)?;
        tally.commit(sh);
        tally.part_start = true;
    }
    if tally.part_start {
        tally.leading = true;
    } else if tally.leading && p.leading == Leading::Skipped {
        // A leading picture of the part's first key frame that references pictures before it
        // (an open GOP): no decoder of this file shows it, so it is not written.
        return Ok(());
    } else if p.leading == Leading::No {
        tally.leading = false;
    }
    if let Some(c) = cut.as_mut() {
        c.start_us.get_or_insert(p.clock_us);
    }
    #[cfg(feature = "test-hooks")]
    match super::hooks::WRITE_DELAY_MS.load(Ordering::Relaxed) {
        0 => {}
        ms => std::thread::sleep(Duration::from_millis(ms)),
    }
    match mux.write(p) {
        Ok(true) => tally.commit(sh),
        Ok(false) => {}
        Err(e) => {
            // This packet is in no file either.
            tally.pending.push(p.clone());
            return Err(e);
        }
    }
    tally.pending.push(p.clone());
    p.written.store(true, Ordering::SeqCst);
    let seq = p.seq.load(Ordering::SeqCst);
    if seq != 0 {
        sh.note_seq(p, seq);
    }
    let mut s = sh.status.lock();
    if *first_part {
        s.first_pts_us = p.pts_us;
        *first_part = false;
    }
    if tally.part_start {
        // A new part's timestamps may start afresh (a reconnect): its span counts on its own.
        s.part_first_pts_us = p.pts_us;
        s.last_pts_us = p.pts_us;
        tally.part_start = false;
    }
    s.last_pts_us = s.last_pts_us.max(p.pts_us);
    s.frames += 1;
    s.bytes += p.data.len() as u64;
    if p.lost_before > 0 && s.frames > 1 {
        if s.loss_spans == 0 {
            s.first_loss_pts_us = p.pts_us;
        }
        s.lost_packets += p.lost_before;
        s.loss_spans += 1;
    }
    Ok(())
}

/// Finishes the current file and opens the next: `NAME-partN.EXT` for packets of new parameters,
/// or the next segment of a segmented recording (then the oldest beyond its limits go).
fn next_part(sh: &Shared, mux: &mut Muxer, params: &Arc<Params>, cut: &mut Option<Cut>) -> Result<()> {
    let n = sh.status.lock().parts + 1;
    let path = match cut.as_mut() {
        Some(c) => c.plan.next_name(),
        None => part_name(mux.path(), n),
    };
    let next = Muxer::create(&path, params)?;
    let old = std::mem::replace(mux, next);
    let (from, to) = (old.params().size(), params.size());
    let done = old.finish()?;
    if let Some(c) = cut.as_mut() {
        c.start_us = None;
        let deleted = c.kept.add(&c.plan, &done);
        log::debug!("recording: segment {} done, {deleted} old one(s) deleted", done.display());
        let mut s = sh.status.lock();
        s.earlier_parts_us += s.last_pts_us - s.part_first_pts_us;
        s.parts = n;
        s.file = crate::record::writer::part_path(&path);
        return Ok(());
    }
    log::info!("recording {}: the stream changed ({from:?} -> {to:?}, or a reconnect); going on in {}", done.display(), path.display());
    let mut s = sh.status.lock();
    s.earlier_parts_us += s.last_pts_us - s.part_first_pts_us;
    s.parts = n;
    s.file = crate::record::writer::part_path(&path);
    Ok(())
}

/// `clip.mkv` → `clip-part2.mkv`.
pub(crate) fn part_name(first: &Path, n: u32) -> PathBuf {
    let stem = first.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = first.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
    first.with_file_name(format!("{stem}-part{n}.{ext}"))
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
