//! A compressed packet as the cache and the recordings' writers share it.

use super::params::Params;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// A compressed packet as the cache and the writers share it.
pub(crate) struct Packet {
    pub data: Box<[u8]>,
    /// Timestamps and duration in the session's time base (`params`).
    pub pts: Option<i64>,
    pub dts: Option<i64>,
    pub duration: i64,
    /// `pts` in µs, as frames carry it (`i64::MIN` if none).
    pub pts_us: i64,
    /// Stream time on the recorder's clock, µs: it follows the decode timestamps but never goes
    /// back or jumps (a looped file, a camera that resets its clock), which bound the cache and
    /// end the recordings.
    pub clock_us: i64,
    /// When its picture is shown, on the same clock (`clock_us` plus its pts − dts). Estimated
    /// for a packet without a decode time, and corrected once the session's first one comes
    /// (`shown`).
    pub shown_us: AtomicI64,
    /// A picture a decoder can start from (IDR, IRAP, a key frame of another codec).
    pub key: bool,
    /// An HEVC leading picture (shown before the key frame it follows in decode order): one
    /// that may reference pictures before that key frame (RASL), or not (RADL).
    pub leading: Leading,
    /// Packets lost on the way just before this one (RTP gaps, packets flagged corrupt).
    pub lost_before: u64,
    pub params: Arc<Params>,
    /// The camera's session it came in (counted by the recorder): a picture is matched to a
    /// packet of its own session only (a new session's timestamps may start afresh).
    pub session: u64,
    /// The camera's frame number of this packet's picture, once decoded; 0 until then.
    pub seq: AtomicU64,
    /// Written to a recording's file (its `seq` then names a picture in a file).
    pub written: AtomicBool,
}

impl Packet {
    /// When its picture is shown, on the recorder's clock.
    pub(crate) fn shown(&self) -> i64 {
        self.shown_us.load(Ordering::Relaxed)
    }
}

/// Whether a picture is an HEVC leading picture, and of which kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Leading {
    No,
    /// RADL: decodable from its key frame on.
    Decodable,
    /// RASL: may reference pictures before its key frame (an open GOP), so a file that starts
    /// at that key frame cannot show it: a decoder skips it.
    Skipped,
}

#[cfg(test)]
impl Packet {
    pub(crate) fn for_test(pts_us: i64, key: bool, len: usize) -> Packet {
        Packet {
            data: vec![0u8; len].into_boxed_slice(),
            pts: Some(pts_us),
            dts: Some(pts_us),
            duration: 0,
            pts_us,
            clock_us: pts_us,
            shown_us: AtomicI64::new(pts_us),
            key,
            leading: Leading::No,
            lost_before: 0,
            params: Params::empty(),
            session: 0,
            seq: AtomicU64::new(0),
            written: AtomicBool::new(false),
        }
    }
}
