//! How much a recording may queue, and the cache's byte bound when the host gives none.

/// Bounds of recording (one table; the cache's own bounds are the host's, per camera).
pub(crate) struct RecordDefaults {
    /// Bytes a recording's writer may have queued before the recording ends (a disk that
    /// cannot keep up): ~60 s of a 4 Mbit/s camera.
    pub queue_bytes: usize,
    /// Packets likewise.
    pub queue_packets: usize,
    /// The cache's byte bound when the host gives 0.
    pub cache_bytes: usize,
}

pub(crate) const RECORD_DEFAULTS: RecordDefaults =
    RecordDefaults { queue_bytes: 32 << 20, queue_packets: 2048, cache_bytes: 32 << 20 };
