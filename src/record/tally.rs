//! What of a recording's status is known to be in its files: a muxer holds a cluster or
//! fragment in memory until it writes it out, so a write error (a full disk) loses the packets
//! since; the status then goes back to what the files hold and counts the rest as dropped.

use super::shared::{Msg, Shared, Status};
use super::Packet;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What of the status is known to be in the files: the status when a file last grew (its
/// muxer wrote out a cluster or fragment, or a part was finished), and the packets written to
/// the muxer since, which a write error loses.
#[derive(Default)]
pub(super) struct Tally {
    committed: Option<Status>,
    /// The packets of the last write-out (their pictures' frame numbers may come later).
    committed_tail: Vec<Arc<Packet>>,
    pub pending: Vec<Arc<Packet>>,
    /// The next packet written starts a part (set at each part's start).
    pub part_start: bool,
    /// Still among the leading pictures of the part's first key frame.
    pub leading: bool,
}

impl Tally {
    /// A recording's first part starts with its first packet.
    pub(super) fn new() -> Tally {
        Tally { part_start: true, ..Tally::default() }
    }

    /// Everything written so far is in the files.
    pub(super) fn commit(&mut self, sh: &Shared) {
        self.committed = Some(sh.status.lock().clone());
        self.committed_tail = std::mem::take(&mut self.pending);
    }
}

/// A write error: the status goes back to what the files hold, the packets the muxer had not
/// written out and those still queued are counted as dropped, and the camera's thread sends no
/// more (it counts what it held back). Waits, briefly, for the camera's thread to let go.
pub(super) fn lost_to_error(sh: &Shared, tally: &mut Tally, rx: &Receiver<Msg>) {
    sh.writer_failed.store(true, Ordering::Release);
    sh.stop.store(true, Ordering::Release);
    let mut lost = tally.pending.len() as u64;
    {
        let mut s = sh.status.lock();
        for p in tally.pending.drain(..) {
            p.written.store(false, Ordering::SeqCst);
        }
        let tail_seq = tally.committed_tail.iter().map(|p| p.seq.load(Ordering::SeqCst)).max().unwrap_or(0);
        let c = tally.committed.take();
        let keep = |s: &mut Status, c: &Status| {
            (s.frames, s.bytes, s.first_seq, s.last_seq) = (c.frames, c.bytes, c.first_seq, c.last_seq.max(tail_seq));
            (s.first_pts_us, s.last_pts_us, s.part_first_pts_us, s.earlier_parts_us) = (c.first_pts_us, c.last_pts_us, c.part_first_pts_us, c.earlier_parts_us);
            (s.lost_packets, s.loss_spans, s.first_loss_pts_us) = (c.lost_packets, c.loss_spans, c.first_loss_pts_us);
        };
        match c {
            Some(c) => keep(&mut s, &c),
            None => {
                let mut zero = s.clone();
                (zero.frames, zero.bytes, zero.first_seq, zero.last_seq, zero.first_pts_us, zero.last_pts_us) = (0, 0, 0, 0, 0, 0);
                (zero.part_first_pts_us, zero.earlier_parts_us, zero.lost_packets, zero.loss_spans, zero.first_loss_pts_us) = (0, 0, 0, 0, 0);
                keep(&mut s, &zero);
            }
        }
        s.dropped += lost;
    }
    // What the camera's thread queued before it saw the failure.
    let end = Instant::now() + Duration::from_secs(2);
    let mut queued = 0;
    loop {
        match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(Msg::Packet(p)) => {
                sh.queued.fetch_sub(p.data.len(), Ordering::AcqRel);
                queued += 1;
            }
            Ok(Msg::End) => {}
            Err(_) => break,
        }
    }
    lost += queued;
    sh.status.lock().dropped += queued;
    sh.writer_dropped.fetch_add(lost, Ordering::AcqRel);
}
