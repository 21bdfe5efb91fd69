//! How often a stream may make nvcam reallocate for it: a sliding window of its last changes.
//!
//! A stream's parameter sets can claim a new picture size every picture. Each change costs an
//! allocation (a pool of the camera's slots, an NVDEC decoder's surfaces) and, on NVDEC, driver
//! calls that the driver runs one at a time for the whole GPU (`cuvidCreateDecoder` takes about
//! 70 ms). So a camera admits at most a fixed number of changes within a window and refuses the
//! rest until the window has room again: its pools by `DEFAULTS.pool_churn_max` (in
//! `camera/deliver.rs`), its NVDEC decoder's resizes by `DEFAULTS.decoder_churn_max`
//! (`nvdec/parser.rs`). A stream that settles is served again within one window.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// When the last admitted changes happened (at most `max` of them are kept).
#[derive(Debug, Default)]
pub(crate) struct ChurnBound {
    at: VecDeque<Instant>,
}

impl ChurnBound {
    /// Whether one more change may happen at `now`: fewer than `max` were admitted within
    /// `window` before it. An admitted change is counted; a refused one is not (a stream that
    /// keeps trying is served again once its old changes leave the window).
    pub(crate) fn admit(&mut self, now: Instant, max: u32, window: Duration) -> bool {
        if !self.has_room(now, max, window) {
            return false;
        }
        self.at.push_back(now);
        true
    }

    /// Whether [`ChurnBound::admit`] would admit a change at `now` (nothing is counted).
    pub(crate) fn has_room(&mut self, now: Instant, max: u32, window: Duration) -> bool {
        while self.at.front().is_some_and(|&t| now.saturating_duration_since(t) > window) {
            self.at.pop_front();
        }
        // Never more than `max` kept, whatever `max` was before.
        while self.at.len() > max as usize {
            self.at.pop_front();
        }
        self.at.len() < max as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Duration = Duration::from_secs(10);

    /// A stream that changes its size every picture (30 a second) must get exactly `max` changes
    /// per window, not one per picture: the bound that keeps a hostile camera from making nvcam
    /// allocate (or create an NVDEC decoder) every picture.
    #[test]
    fn a_change_every_picture_gets_max_per_window() {
        let (mut b, t0) = (ChurnBound::default(), Instant::now());
        let admitted: Vec<u64> = (0..30 * 25u64).filter(|i| b.admit(t0 + Duration::from_millis(i * 33), 10, W)).collect();
        // 10 at once, then 10 more only once the first have left the window (10 s later), and
        // so on: 30 in 25 s.
        assert_eq!(admitted.len(), 30, "{admitted:?}");
        assert_eq!(&admitted[..10], &(0..10).collect::<Vec<_>>()[..]);
        assert!(admitted[10] * 33 > 10_000 && admitted[10] * 33 < 10_100, "{admitted:?}");
        assert!(admitted[20] * 33 > 20_000 && admitted[20] * 33 < 20_200, "{admitted:?}");
    }

    /// A stream that changes its size now and then (a camera switched between two resolutions by
    /// an operator, every few seconds) is never refused.
    #[test]
    fn occasional_changes_are_never_refused() {
        let (mut b, t0) = (ChurnBound::default(), Instant::now());
        assert!((0..1000u64).all(|i| b.admit(t0 + Duration::from_millis(i * 1500), 10, W)));
    }

    /// Refused attempts are not counted: a stream that kept trying is admitted again as soon as
    /// its admitted changes leave the window, not a window after its last attempt.
    #[test]
    fn refused_attempts_do_not_extend_the_refusal() {
        let (mut b, t0) = (ChurnBound::default(), Instant::now());
        assert!((0..10).all(|_| b.admit(t0, 10, W)));
        assert!((1..100u64).all(|i| !b.admit(t0 + Duration::from_millis(i * 100), 10, W)));
        // Asking whether there is room counts nothing either.
        let later = t0 + W + Duration::from_millis(1);
        assert!(!b.has_room(t0 + W, 10, W));
        assert!((0..5).all(|_| b.has_room(later, 10, W)));
        assert!(b.admit(later, 10, W));
    }

    /// The kept instants are bounded by `max` (the memory of a camera whose stream churns for
    /// days), also when `max` shrinks; `max` 0 refuses every change.
    #[test]
    fn memory_is_bounded_by_max() {
        let (mut b, t0) = (ChurnBound::default(), Instant::now());
        for i in 0..100_000u64 {
            b.admit(t0 + Duration::from_micros(i), 10, W);
        }
        assert_eq!(b.at.len(), 10);
        assert!(!b.admit(t0, 3, W));
        assert_eq!(b.at.len(), 3);
        assert!(!ChurnBound::default().admit(t0, 0, W));
    }
}
