//! When a camera whose stream is suspect after a loss reconnects instead of waiting for the next
//! recovery point.
//!
//! A new RTSP session starts with a key frame on most cameras, so a reconnect ends the dark time
//! after about as long as a reconnect takes to its first key frame; waiting ends it at the
//! next recovery point, which on a long-GOP camera (an IDR every 10 s) is seconds away. So the
//! camera learns two figures as it streams, the interval between recovery points (`gop`, from the
//! timestamps of key packets) and the time from a session's start to its first key packet
//! (`reconnect`), and after a loss:
//! - reconnects at once when the next recovery point is further away than a reconnect plus
//!   [`MARGIN`] (a reconnect is a new session for the camera and its server, worth it only when
//!   it saves the host that much dark time);
//! - never reconnects when it is nearer: a camera with a 1-s GOP waits for its next IDR, however
//!   many IDRs the loss spoils, since the new session's would be spoiled alike;
//! - reconnects when no key packet at all came for two GOPs and `fallback` (a camera that
//!   stopped sending them);
//! - with nothing learnt yet, reconnects after `fallback` without a recovery point;
//! - stops reconnecting for losses after [`UNHELPFUL_MAX`] reconnects in a row that gave no exact
//!   picture, until one comes (the fallbacks still apply).

use std::time::Duration;

/// Dark time a reconnect must save to be worth a new session.
pub(super) const MARGIN: Duration = Duration::from_secs(1);
/// Reconnects for losses in a row that gave no exact picture before the rule stops reconnecting
/// (until one comes): on a link that spoils every key frame a new session's is spoilt too. Not 2:
/// at 0.5 % loss a 1080p IDR of ~90 packets is spoilt one time in five, so two spoilt in a row
/// came about twice a minute on a 10-s-GOP camera, each time leaving it dark for a whole GOP.
pub(super) const UNHELPFUL_MAX: u32 = 3;

/// What a suspect stream knows when a packet comes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Wait {
    /// Since the stream became suspect.
    pub suspect_for: Duration,
    /// The interval between recovery points, if known.
    pub gop: Option<Duration>,
    /// Stream time from the last key packet (whole or not) of this session to this packet.
    pub since_key: Option<Duration>,
    /// How long a session takes from its start to its first key packet, if known.
    pub reconnect: Option<Duration>,
    /// Without the figures: how long to wait for a recovery point before reconnecting.
    pub fallback: Duration,
}

/// Whether to reconnect now (see the module's rule).
pub(super) fn reconnect_now(w: &Wait) -> bool {
    match (w.gop, w.since_key, w.reconnect) {
        (Some(gop), Some(since_key), Some(reconnect)) => {
            if since_key > gop * 2 + w.fallback {
                return true;
            }
            gop.saturating_sub(since_key) > reconnect + MARGIN
        }
        _ => w.suspect_for > w.fallback,
    }
}

/// The interval between recovery points: the shortest of the last few (a key packet lost whole,
/// or one whose start was lost so it does not read as one, makes an interval look twice as long),
/// kept across a camera's sessions, so an interval a spoilt key packet lengthened is corrected by
/// the next whole one whichever session sees it.
#[derive(Clone, Debug, Default)]
pub(super) struct GopEstimate {
    last_key_us: Option<i64>,
    /// When the last key packet came: a session's first often has no timestamp.
    last_key_at: Option<std::time::Instant>,
    intervals: std::collections::VecDeque<i64>,
}

impl GopEstimate {
    const KEPT: usize = 8;

    /// A new session: its timestamps start afresh, the intervals learnt stay.
    pub(super) fn new_session(&mut self) {
        self.last_key_us = None;
        self.last_key_at = None;
    }

    /// A key packet at `pts_us` (`i64::MIN`: without a timestamp) came at `now`; returns the
    /// estimate when it changed.
    pub(super) fn key(&mut self, pts_us: i64, now: std::time::Instant) -> Option<Duration> {
        self.last_key_at = Some(now);
        if pts_us == i64::MIN {
            return None;
        }
        let before = self.gop();
        if let Some(l) = self.last_key_us.replace(pts_us) {
            let d = pts_us - l;
            // Backwards or absurdly far: a new timeline, not an interval.
            if d > 0 && d < 600_000_000 {
                if self.intervals.len() == Self::KEPT {
                    self.intervals.pop_front();
                }
                self.intervals.push_back(d);
            }
        }
        let now = self.gop();
        (now != before).then_some(now).flatten()
    }

    pub(super) fn gop(&self) -> Option<Duration> {
        self.intervals.iter().min().map(|&us| Duration::from_micros(us as u64))
    }

    /// Time since the last key packet came (a live stream comes at its own rate).
    pub(super) fn since_key(&self, now: std::time::Instant) -> Option<Duration> {
        self.last_key_at.map(|t| now.saturating_duration_since(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(gop_s: f64, since_key_s: f64, reconnect_s: f64) -> Wait {
        Wait {
            suspect_for: Duration::from_secs_f64(since_key_s),
            gop: Some(Duration::from_secs_f64(gop_s)),
            since_key: Some(Duration::from_secs_f64(since_key_s)),
            reconnect: Some(Duration::from_secs_f64(reconnect_s)),
            fallback: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_long_gop_camera_reconnects_at_once_when_its_next_idr_is_far() {
        assert!(reconnect_now(&wait(10.0, 2.0, 0.5)));
        assert!(!reconnect_now(&wait(10.0, 8.8, 0.5)), "the next IDR is 1.2 s away: nearer than a reconnect and a second");
    }

    #[test]
    fn a_short_gop_camera_never_reconnects_for_a_loss() {
        for k in [0.0, 0.5, 0.99, 5.0, 11.9] {
            assert!(!reconnect_now(&wait(1.0, k, 0.3)), "since key {k}");
        }
    }

    #[test]
    fn key_frames_that_stop_coming_or_unknown_figures_fall_back_to_the_timeout() {
        assert!(reconnect_now(&wait(1.0, 12.5, 0.3)), "no key packet for 2 GOPs + 10 s");
        let mut w = wait(10.0, 2.0, 0.5);
        w.reconnect = None;
        assert!(!reconnect_now(&w));
        w.suspect_for = Duration::from_secs(11);
        assert!(reconnect_now(&w));
    }

    #[test]
    fn the_gop_is_the_shortest_recent_interval_between_key_packets() {
        let t = std::time::Instant::now();
        let mut g = GopEstimate::default();
        assert_eq!(g.since_key(t), None);
        assert_eq!(g.key(i64::MIN, t), None, "a session's first key packet, without a timestamp");
        assert_eq!(g.since_key(t + Duration::from_millis(1500)), Some(Duration::from_millis(1500)));
        assert_eq!(g.key(0, t), None);
        assert_eq!(g.key(20_000_000, t), Some(Duration::from_secs(20)));
        assert_eq!(g.key(30_000_000, t), Some(Duration::from_secs(10)), "the shorter interval: 20 s was a key lost whole");
        assert_eq!(g.key(0, t), None, "a new timeline is no interval");
        // A reconnect: the intervals learnt stay, the session's own key packets start afresh.
        g.new_session();
        assert_eq!((g.gop(), g.since_key(t)), (Some(Duration::from_secs(10)), None));
    }
}
