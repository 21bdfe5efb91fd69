//! A decoded frame: a leased pool slot plus what the host needs to know about it.
//!
//! Frames are immutable and shared (`Arc<Frame>`): every handle the host holds (the one from
//! `get_frame` and each clone) is one table entry holding one `Arc`. The slot returns to its pool
//! when the last of them is released, whichever order that happens in.

use crate::pool::{Geometry, Lease, MemoryKind};
use crate::status::*;

/// Where a frame's capture time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeSource {
    /// When the first packet of the frame was read from the source.
    Receive,
    /// The source's own clock (an RTSP camera's RTCP sender reports).
    Source,
}

pub(crate) struct Frame {
    lease: Lease,
    /// Camera handle that produced it (the registry's owner key).
    pub owner: u64,
    /// Per-camera decode counter, from 1; gaps show skipped or dropped frames.
    pub seq: u64,
    /// Stream timestamp in microseconds (the stream's own clock), or i64::MIN if unknown.
    pub pts_us: i64,
    /// Wall clock when the frame left the decoder, nanoseconds since the Unix epoch.
    pub wallclock_ns: u64,
    /// Wall clock when the frame was captured (see `time_source`), nanoseconds since the epoch.
    pub capture_ns: u64,
    pub time_source: TimeSource,
}

impl Frame {
    pub(crate) fn new(lease: Lease, owner: u64, seq: u64, pts_us: i64, wallclock_ns: u64, capture: (u64, TimeSource)) -> Frame {
        Frame { lease, owner, seq, pts_us, wallclock_ns, capture_ns: capture.0, time_source: capture.1 }
    }
    pub(crate) fn geom(&self) -> &Geometry {
        &self.lease.pool().geom
    }
    pub(crate) fn memory(&self) -> MemoryKind {
        self.lease.pool().storage().kind()
    }
    pub(crate) fn device(&self) -> i32 {
        self.lease.pool().storage().device()
    }
    pub(crate) fn y_addr(&self) -> u64 {
        self.lease.addr()
    }
    pub(crate) fn uv_addr(&self) -> u64 {
        self.lease.addr() + self.geom().uv_offset() as u64
    }
    /// Returns once the copy that wrote this frame has completed (device frames are published
    /// as soon as the copy is enqueued), so the host can read it from any stream or context.
    pub(crate) fn wait_ready(&self) -> Result<()> {
        self.lease.pool().storage().wait_ready(self.lease.index())
    }

    /// Copies the NV12 image into a host buffer, rows `dst_pitch` apart (0 = packed).
    pub(crate) fn copy_nv12(&self, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        let g = *self.geom();
        if dst_pitch != 0 && dst_pitch < g.row_bytes() {
            return Err(Error::arg(format!("dst_pitch {dst_pitch} < row width {}", g.row_bytes())));
        }
        let need = g
            .packed_size(dst_pitch)
            .ok_or_else(|| Error::arg(format!("dst_pitch {dst_pitch}: the image size overflows")))?;
        if dst.len() < need {
            return Err(Error::new(
                NVCAM_E_BUFFER_TOO_SMALL,
                format!("destination holds {} bytes, this {}x{} NV12 frame needs {need}", dst.len(), g.width, g.height),
            ));
        }
        self.lease.pool().storage().download(self.lease.index(), &g, dst, dst_pitch)
    }
}
