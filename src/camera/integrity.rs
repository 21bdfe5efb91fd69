//! Whether each picture is exact: decoded from a complete bitstream with every reference it needs
//! intact. After a loss every picture is suspect until a recovery point has gone into the decoder
//! and come out.
//!
//! The tracker sees the stream twice: packets on their way into the decoder (losses, damaged
//! packets, recovery points) and pictures on their way out. Decoders reorder and hold pictures
//! back, so a picture is matched to the recovery point by timestamp: a recovery point (IDR, HEVC
//! IRAP, or the picture a recovery-point SEI names) is followed in decode order only by pictures
//! that come at or after it in display order, except for leading pictures (open GOP, HEVC RASL),
//! which have earlier timestamps and stay suspect. A picture decoded before the loss but output
//! after it is marked too: a false alarm costs one frame, a missed one feeds inference garbage.
//!
//! Every signal that reaches the tracker through packets (RTP gaps, demuxer corruption flags,
//! recovery points) is the same whichever decoder runs, so the decoders mark the same pictures;
//! a decoder's own error report adds to that (see `Decoder::write_into`).

use crate::decode::recovery::KeyPoint;
use crate::frame::FrameIntegrity;
use std::time::{Duration, Instant};

/// Recent key packets' timestamps kept to flag key pictures (a reorder buffer is shorter).
const KEYS_KEPT: usize = 16;

#[derive(Debug, Default)]
pub(super) struct Integrity {
    /// Since when the stream has been suspect (a loss, a damaged packet or picture), if it is.
    suspect_since: Option<Instant>,
    /// A recovery point sent after the last loss: pictures at or after its timestamp are exact.
    recovery: Option<i64>,
    /// A recovery-point SEI seen after the last loss: the picture this many packets later is the
    /// recovery point.
    pending: Option<u32>,
    /// Timestamps of recent key packets, to flag their pictures.
    keys: std::collections::VecDeque<i64>,
}

impl Integrity {
    /// Something was lost or damaged before the decoder: every picture from here is suspect
    /// until a recovery point that comes after it.
    pub(super) fn lost(&mut self, now: Instant) {
        self.suspect_since.get_or_insert(now);
        self.recovery = None;
        self.pending = None;
    }

    /// A packet goes into the decoder: `key` is what it is as a recovery point.
    pub(super) fn packet(&mut self, key: KeyPoint, pts_us: i64) {
        if key != KeyPoint::None && pts_us != i64::MIN {
            if self.keys.len() == KEYS_KEPT {
                self.keys.pop_front();
            }
            self.keys.push_back(pts_us);
        }
        if self.suspect_since.is_none() || self.recovery.is_some() {
            return;
        }
        // The picture a recovery-point SEI named: this packet, once its count ran out.
        if let Some(n) = self.pending {
            if n == 0 {
                self.pending = None;
                self.recovery = Some(pts_us);
            } else {
                self.pending = Some(n - 1);
            }
            return;
        }
        match key {
            KeyPoint::Full => self.recovery = Some(pts_us),
            KeyPoint::After(0) => self.recovery = Some(pts_us),
            KeyPoint::After(n) => self.pending = Some(n - 1),
            KeyPoint::None => {}
        }
    }

    /// A picture comes out of the decoder; `damaged` if the decoder said it has errors.
    pub(super) fn picture(&mut self, pts_us: i64, damaged: bool, now: Instant) -> FrameIntegrity {
        let keyframe = pts_us != i64::MIN && self.keys.contains(&pts_us);
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
            self.lost(now);
        }
        FrameIntegrity { corrupt: damaged, after_loss, keyframe }
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
        g.packet(KeyPoint::None, 166);
        assert!(exact(g.picture(133, false, t)), "the IDR itself is exact");
        assert!(exact(g.picture(166, false, t)));
        assert_eq!(g.suspect_for(t), None);
    }

    #[test]
    fn a_picture_decoded_before_the_loss_but_output_after_it_is_not_cleared_by_an_older_key() {
        // Reorder delay: key packet K sent, then a loss, then K's picture comes out.
        let t = Instant::now();
        let mut g = Integrity::default();
        g.packet(KeyPoint::Full, 1000);
        g.lost(t);
        assert!(g.picture(1000, false, t).after_loss, "the key was sent before the loss");
        g.packet(KeyPoint::Full, 2000);
        assert!(g.picture(1500, false, t).after_loss, "leading picture before the recovery point");
        assert!(exact(g.picture(2000, false, t)));
    }

    #[test]
    fn a_damaged_picture_is_corrupt_and_taints_what_follows() {
        let t = Instant::now();
        let mut g = Integrity::default();
        let p = g.picture(0, true, t);
        assert!(p.corrupt && !p.after_loss);
        assert!(g.picture(33, false, t).after_loss);
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
