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
//!   picture, until one comes (the fallbacks still apply);
//! - and never reconnects sooner than [`Spacing`] allows: at least
//!   `DEFAULTS.loss_reconnect_min_spacing_ms` apart, further after repeats. A new session is a
//!   cost to the camera (many limit their sessions, and log or block a client that opens one
//!   every few seconds); a loss that comes meanwhile waits for the next recovery point.

use crate::config::DEFAULTS;
use std::time::{Duration, Instant};

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

/// How far apart reconnects for key frames go, kept across a camera's sessions: the spacing
/// starts at `DEFAULTS.loss_reconnect_min_spacing_ms`; a reconnect within twice the spacing of
/// the last one (the losses go on) doubles it, up to `loss_reconnect_max_spacing_ms`; one after
/// a longer quiet starts it over.
#[derive(Clone, Debug, Default)]
pub(super) struct Spacing {
    last: Option<Instant>,
    spacing: Duration,
}

impl Spacing {
    fn min() -> Duration {
        Duration::from_millis(DEFAULTS.loss_reconnect_min_spacing_ms as u64)
    }

    /// Whether a reconnect may go at `now`.
    pub(super) fn allows(&self, now: Instant) -> bool {
        self.last.is_none_or(|t| now.saturating_duration_since(t) >= self.spacing.max(Self::min()))
    }

    /// A reconnect went at `now`.
    pub(super) fn went(&mut self, now: Instant) {
        let max = Duration::from_millis(DEFAULTS.loss_reconnect_max_spacing_ms as u64).max(Self::min());
        let cur = self.spacing.max(Self::min());
        self.spacing = match self.last {
            Some(t) if now.saturating_duration_since(t) < cur * 2 => (cur * 2).min(max),
            _ => Self::min(),
        };
        self.last = Some(now);
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

    /// At most one reconnect for a key frame per 10 s, and fewer while the losses go on: a
    /// long-GOP camera at 0.5 % loss used to get 43-51 new sessions a minute.
    #[test]
    fn reconnects_for_key_frames_are_spaced_and_back_off_on_repeats() {
        let t = Instant::now();
        let s = |secs: u64| t + Duration::from_secs(secs);
        let mut p = Spacing::default();
        assert!(p.allows(t));
        p.went(t);
        assert!(!p.allows(s(9)), "one per 10 s");
        assert!(p.allows(s(10)));
        p.went(s(10));
        assert!(!p.allows(s(29)), "a repeat doubles the spacing");
        p.went(s(30));
        assert!(!p.allows(s(59)) && p.allows(s(60)), "up to 30 s");
        p.went(s(60));
        assert!(!p.allows(s(89)) && p.allows(s(90)));
        // Wanted every second for ten minutes: two a minute once spaced out.
        let mut p = Spacing::default();
        let n = (0..600).filter(|&i| p.allows(s(i)) && { p.went(s(i)); true }).count();
        assert!(n <= 22, "{n} reconnects in 10 minutes");
        // After a quiet time (more than twice the spacing) it starts over.
        let mut p = Spacing::default();
        p.went(t);
        p.went(s(10));
        p.went(s(100));
        assert!(p.allows(s(110)));
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
