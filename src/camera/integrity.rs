//! Whether each picture is exact: decoded from a complete bitstream with every reference it needs
//! intact. After a loss every picture is suspect until a recovery point has gone into the decoder
//! and come out.
//!
//! The tracker sees the stream twice: packets on their way into the decoder (losses, damaged
//! packets, recovery points) and pictures on their way out. Decoders reorder and hold pictures
//! back, each by its own delay, so pictures are matched to packets by timestamp:
//! - a picture whose packet went in before the loss is exact: it can only reference pictures
//!   before it in decode order, all of which were whole (the tracker keeps the timestamps of the
//!   packets sent while the stream was exact and not yet out);
//! - after the loss, a recovery point (IDR, HEVC IRAP, or the picture a recovery-point SEI names)
//!   is followed in decode order only by pictures at or after it in display order, except for
//!   leading pictures (open GOP, HEVC RASL), which have earlier timestamps and stay suspect.
//!
//! So the marks do not depend on a decoder's delay, and every decoder marks the same pictures.
//!
//! Every signal that reaches the tracker through packets (RTP gaps, demuxer corruption flags,
//! recovery points) is the same whichever decoder runs, so the decoders mark the same pictures;
//! a decoder's own error report adds to that (see `Decoder::write_into`).

use crate::decode::recovery::KeyPoint;
use crate::frame::FrameIntegrity;
use std::time::{Duration, Instant};

/// Recent key packets' timestamps kept to flag key pictures (a reorder buffer is shorter).
const KEYS_KEPT: usize = 16;
/// Packets sent while the stream was exact whose pictures are still in the decoder: more than
/// any decoder holds back (NVDEC's surfaces, FFmpeg's frame threads and reorder buffer).
const SENT_KEPT: usize = 64;

#[derive(Debug, Default)]
pub(super) struct Integrity {
    /// Since when the stream has been suspect (a loss, a damaged packet or picture), if it is.
    suspect_since: Option<Instant>,
    /// A recovery point sent after the last loss: pictures at or after its timestamp are exact.
    recovery: Option<i64>,
    /// Whether that recovery point stands alone (an IDR or IRAP), so a decoder may start afresh
    /// there; the picture a recovery-point SEI names still predicts from earlier ones.
    recovery_alone: bool,
    /// A recovery-point SEI seen after the last loss: the picture this many packets later is the
    /// recovery point.
    pending: Option<u32>,
    /// Recent key packets (timestamp, send number, kind), to flag their pictures and to find a
    /// recovery point already sent when a damaged picture comes out.
    keys: std::collections::VecDeque<(i64, u64, KeyPoint)>,
    /// Packets sent while the stream was exact whose pictures have not come out: (timestamp,
    /// send number).
    sent_exact: std::collections::VecDeque<(i64, u64)>,
    /// Every recent packet, (timestamp, send number): where a damaged picture was in decode order.
    sent: std::collections::VecDeque<(i64, u64)>,
    /// Packets sent so far.
    sends: u64,
    /// Whether the last packet went into `sent_exact`.
    last_exact: bool,
}

impl Integrity {
    /// Something was lost or damaged before the decoder, at the last packet: that packet's
    /// picture and every one after it are suspect until a recovery point that comes after it.
    pub(super) fn lost(&mut self, now: Instant) {
        if std::mem::take(&mut self.last_exact) {
            self.sent_exact.pop_back();
        }
        self.suspect(now);
    }

    /// The picture at `pts_us` came out damaged: pictures decoded after it may reference it, so
    /// the packets sent after its own no longer count as exact (all of them if it is not known
    /// where it was).
    pub(super) fn damaged(&mut self, pts_us: i64, now: Instant) {
        let at = self.sent.iter().find(|(p, _)| *p == pts_us && pts_us != i64::MIN).map(|&(_, n)| n);
        match at {
            Some(n) => self.sent_exact.retain(|&(_, m)| m < n),
            None => self.sent_exact.clear(),
        }
        self.last_exact = false;
        self.suspect(now);
        // A decoder that holds pictures back may already have the next IDR: it is the recovery
        // point, not the one after it.
        if let Some(n) = at {
            self.recovery = self.keys.iter().find(|&&(_, m, k)| m > n && k == KeyPoint::Full).map(|&(p, _, _)| p);
        }
    }

    fn suspect(&mut self, now: Instant) {
        self.suspect_since.get_or_insert(now);
        self.recovery = None;
        self.pending = None;
    }

    /// A packet goes into the decoder: `key` is what it is as a recovery point.
    pub(super) fn packet(&mut self, key: KeyPoint, pts_us: i64) {
        self.sends += 1;
        self.last_exact = false;
        if pts_us != i64::MIN {
            if self.sent.len() == SENT_KEPT {
                self.sent.pop_front();
            }
            self.sent.push_back((pts_us, self.sends));
            if self.suspect_since.is_none() {
                if self.sent_exact.len() == SENT_KEPT {
                    self.sent_exact.pop_front();
                }
                self.sent_exact.push_back((pts_us, self.sends));
                self.last_exact = true;
            }
        }
        if key != KeyPoint::None && pts_us != i64::MIN {
            if self.keys.len() == KEYS_KEPT {
                self.keys.pop_front();
            }
            self.keys.push_back((pts_us, self.sends, key));
        }
        if self.suspect_since.is_none() || self.recovery.is_some() {
            return;
        }
        // The picture a recovery-point SEI named: this packet, once its count ran out.
        if let Some(n) = self.pending {
            if n == 0 {
                self.pending = None;
                self.recovery = Some(pts_us);
                self.recovery_alone = false;
            } else {
                self.pending = Some(n - 1);
            }
            return;
        }
        match key {
            KeyPoint::Full => (self.recovery, self.recovery_alone) = (Some(pts_us), true),
            KeyPoint::After(0) => (self.recovery, self.recovery_alone) = (Some(pts_us), false),
            KeyPoint::After(n) => self.pending = Some(n - 1),
            KeyPoint::None => {}
        }
    }

    /// A picture comes out of the decoder; `damaged` if the decoder said it has errors.
    pub(super) fn picture(&mut self, pts_us: i64, damaged: bool, now: Instant) -> FrameIntegrity {
        let keyframe = pts_us != i64::MIN && self.keys.iter().any(|&(p, _, _)| p == pts_us);
        let sent_exact = pts_us != i64::MIN && self.sent_exact.iter().position(|&(p, _)| p == pts_us).map(|i| self.sent_exact.remove(i)).is_some();
        if sent_exact {
            if damaged {
                self.damaged(pts_us, now);
            }
            return FrameIntegrity { corrupt: damaged, after_loss: false, keyframe };
        }
        if self.suspect_since.is_some() {
            if let Some(r) = self.recovery {
                // Unknown timestamps cannot be ordered: the first picture after the recovery
                // point went in is taken as it.
                if pts_us == i64::MIN || r == i64::MIN || pts_us >= r {
                    self.suspect_since = None;
                    self.recovery = None;
                }
            }
        }
        let after_loss = self.suspect_since.is_some();
        if damaged {
            // Later pictures may reference this one: suspect until a recovery point after it.
            self.damaged(pts_us, now);
        }
        FrameIntegrity { corrupt: damaged, after_loss, keyframe }
    }

    /// Whether the packet just given to [`Integrity::packet`] is the recovery point the stream
    /// was waiting for, and one a decoder can start afresh at (`Decoder::before_recovery_point`):
    /// an IDR or IRAP, not the end of an intra-refresh sweep.
    pub(super) fn is_recovery_point(&self, pts_us: i64) -> bool {
        self.suspect_since.is_some() && self.recovery == Some(pts_us) && self.recovery_alone
    }

    /// How long the stream has been suspect without a recovery point, if it is.
    pub(super) fn suspect_for(&self, now: Instant) -> Option<Duration> {
        self.suspect_since.map(|t| now.saturating_duration_since(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(i: FrameIntegrity) -> bool {
        i.exact()
    }

    #[test]
    fn pictures_after_a_loss_are_suspect_until_the_next_idr_comes_out() {
        let t = Instant::now();
        let mut g = Integrity::default();
        g.packet(KeyPoint::Full, 0);
        let first = g.picture(0, false, t);
        assert!(exact(first) && first.keyframe);
        g.packet(KeyPoint::None, 33);
        assert!(exact(g.picture(33, false, t)));
        g.lost(t);
        g.packet(KeyPoint::None, 100);
        let p = g.picture(100, false, t);
        assert!(p.after_loss && !p.corrupt);
        g.packet(KeyPoint::Full, 133);
        assert!(g.is_recovery_point(133));
        g.packet(KeyPoint::None, 166);
        assert!(exact(g.picture(133, false, t)), "the IDR itself is exact");
        assert!(exact(g.picture(166, false, t)));
        assert_eq!(g.suspect_for(t), None);
    }

    #[test]
    fn pictures_sent_before_the_loss_stay_exact_whatever_the_decoder_delay() {
        // Decoder delay: packets 900 and 1000 sent, a loss noticed at 1100; their pictures come
        // out afterwards and are exact; 1100's is not.
        let t = Instant::now();
        let mut g = Integrity::default();
        g.packet(KeyPoint::None, 900);
        g.packet(KeyPoint::None, 1000);
        g.packet(KeyPoint::None, 1100);
        g.lost(t);
        g.packet(KeyPoint::None, 1200);
        assert!(exact(g.picture(900, false, t)));
        assert!(exact(g.picture(1000, false, t)));
        assert!(g.picture(1100, false, t).after_loss);
        assert!(g.picture(1200, false, t).after_loss);
    }

    #[test]
    fn a_key_packet_in_the_read_that_noticed_the_loss_is_no_recovery_point() {
        // The loss is noticed with the key packet: it may be the damaged one.
        let t = Instant::now();
        let mut g = Integrity::default();
        g.packet(KeyPoint::None, 500);
        g.lost(t);
        g.packet(KeyPoint::Full, 1000);
        g.lost(t);
        assert!(g.picture(1000, false, t).after_loss);
        g.packet(KeyPoint::Full, 2000);
        assert!(g.picture(1500, false, t).after_loss, "leading picture before the recovery point");
        assert!(exact(g.picture(2000, false, t)));
    }

    #[test]
    fn a_damaged_picture_is_corrupt_and_taints_what_follows() {
        let t = Instant::now();
        let mut g = Integrity::default();
        g.packet(KeyPoint::None, 0);
        g.packet(KeyPoint::None, 33);
        g.packet(KeyPoint::None, 17);
        let p = g.picture(0, true, t);
        assert!(p.corrupt && !p.after_loss);
        assert!(g.picture(33, false, t).after_loss, "sent before the damaged picture came out, but after it in decode order");
        assert!(g.picture(17, false, t).after_loss);
        // The next IDR was sent before the damaged picture came out (decoder delay): it is the
        // recovery point.
        g.packet(KeyPoint::None, 100);
        g.packet(KeyPoint::Full, 133);
        g.packet(KeyPoint::None, 166);
        assert!(g.picture(66, false, t).after_loss);
        let d = g.picture(100, true, t);
        assert!(d.corrupt);
        assert!(exact(g.picture(133, false, t)));
        assert!(exact(g.picture(166, false, t)));
        g.packet(KeyPoint::Full, 66);
        assert!(exact(g.picture(66, false, t)));
    }

    #[test]
    fn recovery_point_sei_counts_frames_before_the_stream_is_exact_again() {
        let t = Instant::now();
        let mut g = Integrity::default();
        g.lost(t);
        g.packet(KeyPoint::After(2), 10);
        g.packet(KeyPoint::None, 20);
        g.packet(KeyPoint::None, 30);
        assert!(!g.is_recovery_point(30), "the end of a sweep still predicts from earlier pictures: no fresh decoder there");
        assert!(g.picture(10, false, t).after_loss, "refresh in progress");
        assert!(g.picture(20, false, t).after_loss, "refresh in progress");
        assert!(exact(g.picture(30, false, t)), "recovery_frame_cnt reached");
    }

    #[test]
    fn a_second_loss_cancels_a_recovery_point_not_yet_out() {
        let t = Instant::now();
        let mut g = Integrity::default();
        g.lost(t);
        g.packet(KeyPoint::Full, 10);
        g.lost(t);
        assert!(g.picture(10, false, t).after_loss);
        assert!(g.suspect_for(t + Duration::from_secs(1)).unwrap() >= Duration::from_secs(1));
    }
}
