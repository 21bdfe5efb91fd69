//! What a recording's writer thread shares with the camera's thread and the host's calls: its
//! state, its status, the messages it takes, a segmented recording's cut.

use super::segments::{Kept, Plan};
use super::packet::Packet;
use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
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
    /// Earlier parts (of a recording split by a reconnect or a stream change) that stay complete
    /// under their `.part` names: their final names were taken meanwhile, or the folder denied
    /// the rename. The recording's end names every one (`error`).
    pub kept_parts: Vec<PathBuf>,
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
    /// It ended without a picture (no key frame came): counted apart from the failures.
    pub no_picture: AtomicBool,
}

/// How long after its end in wall-clock time a recording ends without packets (a stalled
/// camera): the same end in stream time normally comes first.
pub(super) const WALL_GRACE: Duration = Duration::from_secs(3);

/// How long a stopped recording's writer waits for the packets that complete the pictures shown
/// at the stop (a few frames of B-frame delay) before it finishes without them.
pub(super) const STOP_GRACE: Duration = Duration::from_millis(1000);

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
                kept_parts: Vec::new(),
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
            no_picture: AtomicBool::new(false),
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

    pub(super) fn wall_left(&self) -> Duration {
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
    pub(super) kept: Kept,
    /// The recorder's clock at the current segment's first packet.
    pub(super) start_us: Option<i64>,
}

impl Cut {
    pub(crate) fn new(plan: Plan) -> Cut {
        Cut { plan, kept: Kept::default(), start_us: None }
    }
}
