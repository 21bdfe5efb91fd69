//! The pictures of a sequence that the camera's decoder churn bound refused
//! (`DEFAULTS.decoder_churn_max`): the decoder keeps its size, so they are not decoded, and the
//! parser, which knows nothing of it, still hands each out for display by its surface index: that
//! display is dropped. A surface's mark lasts until a decoded picture takes the surface again,
//! so a picture the parser held back (its display delay) is dropped even after the refusal ended.

use std::ffi::c_int;

/// The refusal's state, driven by the parser's callbacks (`parser.rs`).
#[derive(Debug, Default)]
pub(super) struct Refusal {
    refusing: bool,
    /// Surfaces (bit = picture index) whose last picture was not decoded.
    skipped: u64,
    /// Pictures not decoded, not yet taken by the camera.
    not_decoded: u64,
}

/// A picture index's bit (indices are below the decoder's 32 surfaces; any other has none).
fn bit(idx: c_int) -> u64 {
    if (0..64).contains(&idx) {
        1 << idx
    } else {
        0
    }
}

impl Refusal {
    /// The bound refused the stream's new sequence: its pictures are not decoded from now on.
    /// True where the refusal begins here (not already refusing).
    pub(super) fn start(&mut self) -> bool {
        !std::mem::replace(&mut self.refusing, true)
    }

    /// A sequence the decoder takes (as it is, or resized within the bound): pictures decode
    /// again. True where a refusal ended here.
    pub(super) fn stop(&mut self) -> bool {
        std::mem::take(&mut self.refusing)
    }

    pub(super) fn refusing(&self) -> bool {
        self.refusing
    }

    /// The decode callback of a picture into surface `idx`: whether to decode it. A refused one
    /// is counted and its surface marked.
    pub(super) fn decode(&mut self, idx: c_int) -> bool {
        if self.refusing {
            self.skipped |= bit(idx);
            self.not_decoded += 1;
            return false;
        }
        self.skipped &= !bit(idx);
        true
    }

    /// The display callback of surface `idx`: whether its picture was decoded (else it is dropped).
    pub(super) fn shows(&self, idx: c_int) -> bool {
        self.skipped & bit(idx) == 0
    }

    /// A new parser (recovery, rewind, a retry of the refused sequence): its pictures start
    /// afresh, and its first sequence decides again.
    pub(super) fn forget(&mut self) {
        self.refusing = false;
        self.skipped = 0;
    }

    /// Pictures not decoded since the last call.
    pub(super) fn take_not_decoded(&mut self) -> u64 {
        std::mem::take(&mut self.not_decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pictures of a refused sequence are never shown: their surfaces hold another picture's
    /// pixels (or nothing), which would reach the host as that picture, unmarked. Pictures
    /// decoded before the refusal are shown, and each refused picture is counted once.
    #[test]
    fn refused_pictures_are_counted_and_never_shown() {
        let mut r = Refusal::default();
        assert!(r.decode(0) && r.decode(1));
        assert!(r.start());
        assert!(!r.start(), "a refusal begins once");
        assert!(!r.decode(2) && !r.decode(3));
        assert!(r.shows(0) && r.shows(1), "decoded before the refusal");
        assert!(!r.shows(2) && !r.shows(3));
        assert_eq!(r.take_not_decoded(), 2);
        assert_eq!(r.take_not_decoded(), 0);
        // Surface 0 taken by a refused picture: its old picture's display comes no more.
        assert!(!r.decode(0) && !r.shows(0));
        assert_eq!(r.take_not_decoded(), 1);
    }

    /// After the refusal, a surface decoded again shows again; one not yet decoded again (its
    /// refused picture held back by the parser's display delay) stays hidden.
    #[test]
    fn a_surface_shows_again_once_decoded_again() {
        let mut r = Refusal::default();
        r.start();
        assert!(!r.decode(2) && !r.decode(3));
        assert!(r.stop());
        assert!(!r.stop());
        assert!(r.decode(2));
        assert!(r.shows(2));
        assert!(!r.shows(3), "refused, displayed after the refusal ended");
        r.forget();
        assert!(r.shows(3) && !r.refusing());
        assert_eq!(r.take_not_decoded(), 2, "forgetting the surfaces keeps the count for the camera");
    }

    /// An index outside the surfaces (a broken parser) neither panics nor hides another.
    #[test]
    fn odd_indices_are_harmless() {
        let mut r = Refusal::default();
        r.start();
        for idx in [-1, 64, 1000, c_int::MAX, c_int::MIN] {
            assert!(!r.decode(idx));
            assert!(r.shows(idx));
        }
        assert!((0..64).all(|i| r.shows(i)));
    }
}
