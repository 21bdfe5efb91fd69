//! A camera's packet cache: the last `pre` of compressed packets, always starting at a key frame,
//! so that a recording triggered now can begin `pre` before now with a picture a decoder can start
//! from. Bounded in time and in bytes; the packets' bytes are shared (not copied) with the
//! recordings that take them.

use super::packet::Packet;
use std::collections::VecDeque;
use std::sync::Arc;

/// The packets of the current session from a key frame on.
pub(crate) struct Cache {
    q: VecDeque<Arc<Packet>>,
    bytes: usize,
    /// How far back from the newest packet the cache must reach (µs of stream time).
    keep_us: i64,
    max_bytes: usize,
    /// Groups of pictures dropped because the byte bound was reached before the time bound.
    pub(crate) trimmed_for_bytes: u64,
}

impl Cache {
    pub(crate) fn new(keep_us: i64, max_bytes: usize) -> Cache {
        Cache { q: VecDeque::new(), bytes: 0, keep_us, max_bytes, trimmed_for_bytes: 0 }
    }

    pub(crate) fn clear(&mut self) {
        self.q.clear();
        self.bytes = 0;
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }

    /// Stream time the cache spans (on the recorder's clock), µs.
    pub(crate) fn span_us(&self) -> i64 {
        match (self.q.front(), self.q.back()) {
            (Some(a), Some(b)) => (b.clock_us - a.clock_us).max(0),
            _ => 0,
        }
    }

    /// Adds a packet; a cache that holds nothing yet takes only a key frame (a picture before
    /// the first key frame cannot be decoded from the cache).
    pub(crate) fn push(&mut self, p: Arc<Packet>) {
        if self.q.is_empty() && !p.key {
            return;
        }
        self.bytes += p.data.len();
        self.q.push_back(p);
        self.trim();
    }

    /// Drops whole groups of pictures from the front while the next key frame still reaches back
    /// `keep_us` (so what remains starts at the key frame at or before newest − keep), and while
    /// the bytes are over the bound (then the reach is shorter, counted).
    fn trim(&mut self) {
        let Some(newest) = self.q.back().map(|p| p.clock_us) else { return };
        loop {
            let next_key = self.q.iter().skip(1).position(|p| p.key).map(|i| i + 1);
            let over = self.bytes > self.max_bytes;
            let drop_to = match next_key {
                Some(k) if self.q[k].clock_us <= newest - self.keep_us => k,
                Some(k) if over => {
                    self.trimmed_for_bytes += 1;
                    k
                }
                // One group of pictures alone is over the bound: nothing is kept until the
                // next key frame.
                None if over => {
                    self.trimmed_for_bytes += 1;
                    self.q.len()
                }
                _ => return,
            };
            for p in self.q.drain(..drop_to) {
                self.bytes -= p.data.len();
            }
            if self.q.is_empty() {
                return;
            }
        }
    }

    /// The packets from the key frame at or before `from_us` (on the recorder's clock; or the
    /// oldest key frame, if the cache does not reach that far) to the newest.
    pub(crate) fn since(&self, from_us: i64) -> Vec<Arc<Packet>> {
        let start = self.q.iter().rposition(|p| p.key && p.clock_us <= from_us).unwrap_or(0);
        self.q.range(start..).cloned().collect()
    }

    /// The cached packet of the picture with timestamp `pts_us` (searched from the newest: a
    /// decoder hands pictures out within a few packets of their arrival).
    pub(crate) fn find(&self, pts_us: i64) -> Option<&Arc<Packet>> {
        self.q.iter().rev().take(64).find(|p| p.pts_us == pts_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(i: i64, key: bool, len: usize) -> Arc<Packet> {
        Arc::new(Packet::for_test(i * 100_000, key, len))
    }

    /// A recording triggered now must find a key frame at or before now − pre: the cache keeps
    /// the whole group of pictures that reaches past pre, never one that starts after it.
    #[test]
    fn keeps_the_key_frame_at_or_before_now_minus_pre() {
        // 10 pictures a second, a key frame every 10 (1 s); keep 1.5 s.
        let mut c = Cache::new(1_500_000, usize::MAX);
        for i in 0..45 {
            c.push(pkt(i, i % 10 == 0, 100));
        }
        // Newest at 4.4 s: 4.4 − 1.5 = 2.9 s, whose key frame is at 2.0 s.
        let from = 4_400_000 - 1_500_000;
        let got = c.since(from);
        assert_eq!(got[0].pts_us, 2_000_000);
        assert!(got[0].key);
        assert_eq!(got.last().unwrap().pts_us, 4_400_000);
        assert!(c.span_us() >= 1_500_000);
    }

    /// The byte bound wins over the time bound (memory is fixed per camera), and what is kept
    /// still starts at a key frame.
    #[test]
    fn the_byte_bound_drops_whole_groups() {
        let mut c = Cache::new(10_000_000, 2_500);
        for i in 0..50 {
            c.push(pkt(i, i % 10 == 0, 100));
        }
        assert!(c.bytes() <= 2_500, "{}", c.bytes());
        assert!(c.since(0)[0].key);
        assert!(c.trimmed_for_bytes > 0);
        // A cache that starts empty takes no picture before a key frame.
        let mut c = Cache::new(1_000_000, usize::MAX);
        c.push(pkt(0, false, 10));
        assert_eq!(c.len(), 0);
    }
}
