//! A recording's status and a camera's recording counters as their C structs.

use crate::ffi::constants::*;
use crate::ffi::status::{code, NVCAM_OK};
use crate::ffi::types::{nvcam_record_stats, nvcam_record_status};
use crate::record::shared::{State, Status};
use crate::record::{RecorderStats, Reported};

pub(crate) fn record_status(reported: Reported, s: &Status, struct_size: u32) -> nvcam_record_status {
    let state = match reported {
        Reported::Running => NVCAM_RECORD_RUNNING,
        Reported::Finishing => NVCAM_RECORD_FINISHING,
        Reported::Ended(State::Running) => NVCAM_RECORD_FINISHING,
        Reported::Ended(State::Done) => NVCAM_RECORD_DONE,
        Reported::Ended(State::Stopped) => NVCAM_RECORD_STOPPED,
        Reported::Ended(State::Failed) => NVCAM_RECORD_FAILED,
    };
    nvcam_record_status {
        struct_size,
        state,
        error: s.error.as_ref().map_or(NVCAM_OK, |e| code(e.kind)),
        parts: s.parts,
        loss_spans: s.loss_spans,
        reserved0: 0,
        frames: s.frames,
        bytes: s.bytes,
        first_seq: s.first_seq,
        last_seq: s.last_seq,
        first_pts_us: s.first_pts_us,
        last_pts_us: s.last_pts_us,
        trigger_pts_us: s.trigger_pts_us,
        duration_us: s.duration_us(),
        lost_packets: s.lost_packets,
        first_loss_pts_us: s.first_loss_pts_us,
        dropped: s.dropped,
        reserved: [0; 2],
    }
}

pub(crate) fn record_stats(s: &RecorderStats, struct_size: u32) -> nvcam_record_stats {
    nvcam_record_stats {
        struct_size,
        running: s.running,
        cache_bytes: s.cache_bytes,
        cache_packets: s.cache_packets as u64,
        cache_span_us: s.cache_span_us,
        cache_trimmed: s.cache_trimmed_for_bytes,
        recordings: s.made,
        failed: s.failed,
        dropped: s.dropped,
        no_picture: s.no_picture,
    }
}
