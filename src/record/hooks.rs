//! A slow disk and a count of the recorder's locks, for the tests (`test-hooks`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
pub(crate) static WRITE_DELAY_MS: AtomicU64 = AtomicU64::new(0);
pub(crate) static QUEUE_PACKETS: AtomicUsize = AtomicUsize::new(0);
pub(crate) static PACKET_LOCKS: AtomicU64 = AtomicU64::new(0);
/// How often a camera's thread took a recorder's lock for a packet, so far.
pub fn packet_locks() -> u64 {
    PACKET_LOCKS.load(Ordering::Relaxed)
}
/// Every recording writer sleeps `ms` per packet (0: off).
pub fn set_write_delay_ms(ms: u64) {
    WRITE_DELAY_MS.store(ms, Ordering::Relaxed)
}
/// Recordings started from now on queue at most `n` packets (0: the default).
pub fn set_queue_packets(n: usize) {
    QUEUE_PACKETS.store(n, Ordering::Relaxed)
}
