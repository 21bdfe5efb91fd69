//! Where a recording may end: a cut in decode order after which every picture shown up to the
//! last one written is written and none after it is needed. Pictures come out of a decoder in
//! presentation order, not in the order their packets arrive (B-frames): a P picture written
//! without the B pictures shown before it would leave a hole in the file, and a clip cut at its
//! end's decode time misses the pictures shown before the end but decoded after it.

use super::shared::{Msg, Shared};
use super::bounds::RECORD_DEFAULTS;
use super::packet::Packet;
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

/// Packets held back when no closed cut comes (a stream whose decode times say nothing): past
/// this many they go on uncut.
const HELD_MAX: usize = 256;

/// Packets sent to the writer kept to name their pictures (a decoder hands a picture out within
/// a few packets of its own).
pub(super) const SENT_KEPT: usize = 64;

/// A running recording as the camera's thread feeds it.
pub(super) struct Active {
    pub rec: Arc<Shared>,
    /// `None` once the recording takes no more packets.
    pub tx: Option<SyncSender<Msg>>,
    /// No packet in the cache: the recording starts at the next key frame.
    pub wait_key: bool,
    /// Packets after the last closed cut, not sent to the writer yet.
    pub held: Vec<Arc<Packet>>,
    /// The newest packets sent to the writer, whose pictures may still come out.
    pub sent: std::collections::VecDeque<Arc<Packet>>,
    /// The last picture sent to the writer, shown at (recorder's clock).
    pub sent_shown_us: i64,
    /// The newest picture the camera decoded among the held packets, shown at: a decoder hands
    /// pictures out in presentation order, so every packet shown up to it has come.
    pub decoded_shown_us: i64,
    pub last_pts_us: i64,
    /// Packets seen since it stopped taking them (its last pictures come out meanwhile).
    pub after_end: u32,
    /// Its end was computed from presentation times estimated before the session's first
    /// decode time: corrected when that comes.
    pub provisional: bool,
    /// Started before its session's first packet: the first picture is its trigger, and its
    /// end that picture + this post (µs).
    pub trigger_at_first: Option<i64>,
}

impl Active {
    /// Sends what is known to end at a closed cut (all of it when `stopping`: an early end, after
    /// the pictures that can be shown whole); ends the recording once its end is reached or it
    /// stops. Returns the packets it could not queue (the recording failed).
    pub(super) fn advance(&mut self, clock_us: i64, stopping: bool) -> u64 {
        if self.tx.is_none() {
            return 0;
        }
        if self.rec.writer_failed.load(Ordering::Acquire) {
            // A write error ended it: the writer counts what it had queued, this what it held.
            self.tx = None;
            let held = std::mem::take(&mut self.held).len() as u64;
            self.rec.status.lock().dropped += held;
            return held;
        }
        let end = self.rec.end_clock_us.load(Ordering::Acquire);
        let (longest, reach) = closed(&self.held, self.sent_shown_us, clock_us.max(self.decoded_shown_us), end);
        let n = match reach {
            Some(n) if !stopping => n,
            _ if !stopping && self.held.len() > HELD_MAX => self.held.len() - HELD_MAX / 2,
            _ => longest,
        };
        let out: Vec<_> = self.held.drain(..n).collect();
        let lost = self.send_all(out);
        if lost > 0 {
            return lost;
        }
        if stopping || reach.is_some() {
            if let Some(tx) = self.tx.take() {
                let _ = tx.try_send(Msg::End);
            }
            self.held.clear();
        }
        0
    }

    /// The camera's session ended (end of stream, a server gone, a reconnect): no packet of it
    /// is still to come. Where the camera drained its decoder (every held packet's picture came
    /// out), every packet goes to the writer: the part keeps every picture the camera delivered,
    /// so `seq − first_seq` names the same picture in the next part. Where it did not (its drain
    /// ran out of time), the packets up to the last closed cut of what it decoded go, and the
    /// log says where the part ends. Up to the recording's end either way. The recording goes
    /// on at the next session's first key frame. Returns the packets it could not queue.
    pub(super) fn session_end(&mut self, clock_us: i64) -> u64 {
        if self.tx.is_none() {
            return 0;
        }
        let drained = self.held.iter().all(|p| p.seq.load(Ordering::SeqCst) != 0);
        let reach = if drained { i64::MAX } else { clock_us.max(self.decoded_shown_us) };
        let end = self.rec.end_clock_us.load(Ordering::Acquire);
        let (longest, ends) = closed(&self.held, self.sent_shown_us, reach, end);
        // Ended only where a picture at or after the end is among them (not because no packet
        // of this session is still to come: the next session's are).
        let ends = ends.filter(|_| self.sent_shown_us >= end || self.held.iter().any(|p| p.shown() >= end));
        let before = self.held.len();
        self.held.truncate(ends.unwrap_or(longest));
        let out = std::mem::take(&mut self.held);
        if !drained && ends.is_none() && out.len() < before {
            // The camera's decoder did not drain: the part ends at its last whole mini-GOP, and
            // the pictures the camera delivered past it are in no file (their numbers skipped).
            let last = out.iter().map(|p| p.seq.load(Ordering::SeqCst)).max().unwrap_or(0);
            log::warn!(
                "recording {}: the session ended without its decoder drained: this part ends at frame {last}; {} packet(s) after it are in no file",
                self.rec.status.lock().file.display(),
                before - out.len()
            );
        }
        let lost = self.send_all(out);
        if lost == 0 && ends.is_some() {
            if let Some(tx) = self.tx.take() {
                let _ = tx.try_send(Msg::End);
            }
        }
        lost
    }

    /// Queues `out` for the writer in order. At the first packet it cannot queue, that packet and
    /// those after it are dropped and counted; returns how many (0: all queued).
    fn send_all(&mut self, out: Vec<Arc<Packet>>) -> u64 {
        let total = out.len() as u64;
        for (k, p) in out.into_iter().enumerate() {
            if let Err(dropped) = self.send(p) {
                let more = total - k as u64 - 1;
                self.rec.status.lock().dropped += more;
                return dropped + more;
            }
        }
        0
    }

    fn send(&mut self, p: Arc<Packet>) -> std::result::Result<(), u64> {
        let Some(tx) = self.tx.as_ref() else { return Ok(()) };
        let len = p.data.len();
        let over = self.rec.queued.load(Ordering::Acquire) + len > RECORD_DEFAULTS.queue_bytes;
        let (pts, shown, p2) = (p.pts_us, p.shown(), p.clone());
        let sent = if over { Err(TrySendError::Full(Msg::End)) } else { tx.try_send(Msg::Packet(p)) };
        match sent {
            Ok(()) => {
                self.rec.queued.fetch_add(len, Ordering::AcqRel);
                self.last_pts_us = self.last_pts_us.max(pts);
                self.sent_shown_us = self.sent_shown_us.max(shown);
                if self.sent.len() == SENT_KEPT {
                    self.sent.pop_front();
                }
                self.sent.push_back(p2);
                Ok(())
            }
            Err(TrySendError::Full(_)) => {
                // This packet and those held behind it never reach the file.
                let dropped = 1 + self.held.len() as u64;
                self.rec.status.lock().dropped += dropped;
                self.rec.fail(Error::new(ErrorKind::Io, "the writer fell behind the camera (a slow or full disk): recording ended"));
                self.tx = None;
                self.held.clear();
                Err(dropped)
            }
            Err(TrySendError::Disconnected(_)) => {
                self.tx = None;
                self.held.clear();
                Ok(())
            }
        }
    }
}

/// The closed cuts of `held` (packets in decode order, after a closed cut at `sent_shown_us`):
/// the longest closed prefix's length, and the shortest closed prefix that holds every picture
/// shown at or before `end_us` (once known). `clock_us` is the newest packet's decode time on
/// the recorder's clock: every packet still to come is shown after it, so a prefix whose last
/// shown picture is at or before it can miss no picture still to come.
pub(super) fn closed(held: &[Arc<Packet>], sent_shown_us: i64, clock_us: i64, end_us: i64) -> (usize, Option<usize>) {
    if sent_shown_us >= end_us {
        return (0, Some(0));
    }
    let mut suffix_min = vec![i64::MAX; held.len() + 1];
    for k in (0..held.len()).rev() {
        suffix_min[k] = suffix_min[k + 1].min(held[k].shown());
    }
    let (mut longest, mut shown) = (0, sent_shown_us);
    for (k, p) in held.iter().enumerate() {
        shown = shown.max(p.shown());
        if shown > clock_us {
            break;
        }
        if shown < suffix_min[k + 1] {
            longest = k + 1;
            if shown >= end_us {
                return (longest, Some(longest));
            }
        }
    }
    // Every packet sent or closed, none to come shown at or before the end.
    if longest == held.len() && clock_us >= end_us {
        return (longest, Some(longest));
    }
    (longest, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decode order I0 P3 B1 B2 P6 B4 B5, with decode times one step apart from −1.
    fn mini_gops() -> Vec<Arc<Packet>> {
        [0, 3, 1, 2, 6, 4, 5]
            .iter()
            .enumerate()
            .map(|(k, &s)| {
                let mut p = Packet::for_test(s * 10, s == 0, 1);
                p.clock_us = (k as i64 - 1) * 10;
                Arc::new(p)
            })
            .collect()
    }

    /// A P picture is never the last written before the B pictures shown before it; an end that
    /// falls on a B picture takes the P picture it needs.
    #[test]
    fn cuts_fall_between_mini_gops() {
        let h = mini_gops();
        // All seven received (the newest decoded at 50): the cut after B2 is closed, the one after
        // B5 not yet (P6 shows at 60, a picture at 50..60 could still come).
        assert_eq!(closed(&h, i64::MIN, 50, i64::MAX), (4, None));
        assert_eq!(closed(&h, i64::MIN, 60, i64::MAX), (7, None));
        // An end at 10 (B1) needs P3 and B2 before the cut: the prefix I0 P3 B1 B2.
        assert_eq!(closed(&h, i64::MIN, 50, 10), (4, Some(4)));
        // Before P3's picture is known to be followed by none it needs, no cut past I0.
        assert_eq!(closed(&h[..3], i64::MIN, 10, 10), (1, None));
        // Already reached by what was sent.
        assert_eq!(closed(&h, 30, 50, 30), (0, Some(0)));
    }
}
