//! Process-wide direct-NVDEC counters and per-frame timing (for stats, tests and the benchmark).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Counters summed over every direct-NVDEC decoder in the process.
#[derive(Default)]
pub struct NvdecCounters {
    pub decoders_created: AtomicU64,
    /// Decoders a session kept for the camera's next connection (`reuse.rs`).
    pub decoders_parked: AtomicU64,
    /// Sessions that adopted their camera's parked decoder (as is or reconfigured) instead of
    /// creating one.
    pub decoders_adopted: AtomicU64,
    pub reconfigures: AtomicU64,
    pub recoveries: AtomicU64,
    /// Pictures whose surface the parser reused before we mapped them (dropped; never expected).
    pub surface_hazards: AtomicU64,
    /// Pictures NVDEC reported as decoded with errors (cuvidGetDecodeStatus).
    pub decode_errors: AtomicU64,
    /// Pictures moved to a side buffer because a reconfigure was about to drop their surfaces.
    pub parked: AtomicU64,
    /// Frames whose output surface was unmapped while their copy out of it had not yet run
    /// (checked only under the ordering test's stream stall hook: one event query per frame).
    pub unmapped_before_copy_ran: AtomicU64,
    pub frames: AtomicU64,
    pub packets: AtomicU64,
    /// Nanoseconds spent in cuvidParseVideoData (bitstream filter included; the decode callback,
    /// hence cuvidDecodePicture, runs inside it).
    pub ns_parse: AtomicU64,
    /// In cuvidMapVideoFrame64 (waits for the picture's decode if it is not done yet).
    pub ns_map: AtomicU64,
    /// Enqueueing the two copies and recording the slot's event.
    pub ns_copy: AtomicU64,
    pub ns_unmap: AtomicU64,
}

pub(super) static COUNTERS: NvdecCounters = NvdecCounters {
    decoders_created: AtomicU64::new(0),
    decoders_parked: AtomicU64::new(0),
    decoders_adopted: AtomicU64::new(0),
    reconfigures: AtomicU64::new(0),
    recoveries: AtomicU64::new(0),
    surface_hazards: AtomicU64::new(0),
    decode_errors: AtomicU64::new(0),
    parked: AtomicU64::new(0),
    unmapped_before_copy_ran: AtomicU64::new(0),
    frames: AtomicU64::new(0),
    packets: AtomicU64::new(0),
    ns_parse: AtomicU64::new(0),
    ns_map: AtomicU64::new(0),
    ns_copy: AtomicU64::new(0),
    ns_unmap: AtomicU64::new(0),
};

/// The process's direct-NVDEC counters.
pub fn counters() -> &'static NvdecCounters {
    &COUNTERS
}

pub(super) fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// Local timing, flushed into [`COUNTERS`] every few frames (keeps atomics off the hot path).
#[derive(Default)]
pub(super) struct Timing {
    pub frames: u64,
    pub packets: u64,
    pub parse: u64,
    pub map: u64,
    pub copy: u64,
    pub unmap: u64,
}

impl Timing {
    pub(super) fn flush(&mut self) {
        let c = &COUNTERS;
        let r = Ordering::Relaxed;
        c.frames.fetch_add(self.frames, r);
        c.packets.fetch_add(self.packets, r);
        c.ns_parse.fetch_add(self.parse, r);
        c.ns_map.fetch_add(self.map, r);
        c.ns_copy.fetch_add(self.copy, r);
        c.ns_unmap.fetch_add(self.unmap, r);
        *self = Timing::default();
    }

    /// Flushes now and then, not per frame.
    pub(super) fn maybe_flush(&mut self) {
        if self.frames >= 64 || self.packets >= 64 {
            self.flush();
        }
    }
}

/// Nanoseconds since `t`.
pub(super) fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}
