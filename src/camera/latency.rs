//! When a frame's data arrived, and how long it took to come out: the packet read times a
//! session remembers until the picture made from the packet is published ([`Arrivals`]), and the
//! camera's decode latency (packet read → frame published) over the last second ([`Window`]).
//!
//! A picture is matched to its packet by timestamp (decoders hand pictures out in display order,
//! which with B-frames is not the read order); without timestamps, in read order.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Packets remembered; older ones were decoded or dropped long ago.
const MAX_ARRIVALS: usize = 64;

/// Nanoseconds since the Unix epoch, now.
pub(super) fn wall_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// One packet: its timestamp (µs, i64::MIN if none), when it was read, and the wall clock then.
#[derive(Clone, Copy, Debug)]
pub(super) struct Arrival {
    pub pts_us: i64,
    pub at: Instant,
    pub wall_ns: u64,
}

/// The packets of one session whose pictures have not been published yet.
#[derive(Default)]
pub(super) struct Arrivals {
    q: VecDeque<Arrival>,
}

impl Arrivals {
    pub(super) fn read(&mut self, a: Arrival) {
        if self.q.len() == MAX_ARRIVALS {
            self.q.pop_front();
        }
        self.q.push_back(a);
    }

    /// The packet a picture with `pts_us` came from: the one with that timestamp (older
    /// packets without a picture yet stay, they may be reordered), else the oldest.
    pub(super) fn take(&mut self, pts_us: i64) -> Option<Arrival> {
        let i = if pts_us == i64::MIN { None } else { self.q.iter().position(|a| a.pts_us == pts_us) };
        match i {
            Some(i) => self.q.remove(i),
            None => self.q.pop_front(),
        }
    }

    pub(super) fn clear(&mut self) {
        self.q.clear();
    }
}

/// Decode latencies of the last second, for the camera's stats.
pub(super) struct Window {
    samples: VecDeque<(Instant, u32)>,
}

/// At most this many samples (a second of 240 fps).
const MAX_SAMPLES: usize = 240;
const SPAN: Duration = Duration::from_secs(1);

impl Window {
    pub(super) fn new() -> Window {
        Window { samples: VecDeque::with_capacity(MAX_SAMPLES) }
    }

    pub(super) fn add(&mut self, now: Instant, latency: Duration) {
        if self.samples.len() == MAX_SAMPLES {
            self.samples.pop_front();
        }
        self.samples.push_back((now, latency.as_micros().min(u32::MAX as u128) as u32));
    }

    /// (p50, p99) in microseconds over the last second; (0, 0) without samples.
    pub(super) fn percentiles(&self, now: Instant) -> (u32, u32) {
        let mut v: Vec<u32> = self.samples.iter().filter(|(t, _)| now.saturating_duration_since(*t) <= SPAN).map(|s| s.1).collect();
        if v.is_empty() {
            return (0, 0);
        }
        v.sort_unstable();
        let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
        (at(0.50), at(0.99))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordered_pictures_find_their_own_packets() {
        let t0 = Instant::now();
        let mut a = Arrivals::default();
        for (i, pts) in [0i64, 100, 33, 66].into_iter().enumerate() {
            a.read(Arrival { pts_us: pts, at: t0 + Duration::from_millis(i as u64), wall_ns: i as u64 });
        }
        assert_eq!(a.take(33).unwrap().wall_ns, 2);
        assert_eq!(a.take(0).unwrap().wall_ns, 0);
        assert_eq!(a.take(i64::MIN).unwrap().wall_ns, 1, "no timestamp: the oldest");
    }

    #[test]
    fn latency_percentiles_cover_only_the_last_second() {
        let t0 = Instant::now();
        let mut w = Window::new();
        w.add(t0, Duration::from_millis(500));
        let t1 = t0 + Duration::from_millis(1500);
        for i in 1..=100u64 {
            w.add(t1, Duration::from_micros(i * 10));
        }
        assert_eq!(w.percentiles(t1), (500, 990));
        assert_eq!(w.percentiles(t1 + Duration::from_secs(2)), (0, 0));
    }
}
