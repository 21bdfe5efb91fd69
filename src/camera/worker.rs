//! The camera's thread: the supervisor that runs one session after another, with the reconnect
//! schedule between them, until the camera closes or fails for good.

use super::session::{session, FirstOpen, SessionEnd};
use super::shared::{CameraState, Shared};
use crate::config::{Options, DEFAULTS};
use crate::registry;
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// When the next reconnect attempt starts.
///
/// Most outages are short (a camera, switch or server restarting), and a doubling delay lands its
/// retry long after the source is back. So for `reconnect_fast` after a loss every attempt waits
/// about `reconnect_min`; only a longer outage backs off, doubling up to `reconnect_max`.
/// The first attempt after a working connection dropped goes out at once (spread over 0-50 ms so
/// cameras that dropped together do not hit the server in the same millisecond); the others get
/// ±25 % jitter for the same reason.
pub(super) fn backoff(opts: &Options, attempt: u32, since_loss: Duration) -> Duration {
    let min = opts.reconnect_min.as_millis().max(1) as u64;
    let max = opts.reconnect_max.as_millis().max(min as u128) as u64;
    let fast = opts.reconnect_fast;
    let jitter = |of: u64, permille: u64| -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        of * (h.finish() % (permille + 1)) / 1000
    };
    if attempt == 0 {
        return Duration::from_millis(jitter(min.min(200), 250));
    }
    let base = if since_loss < fast {
        min
    } else {
        // Attempts since the fast phase ended, estimated from the time spent in the slow phase.
        let slow_for = (since_loss - fast).as_millis() as u64;
        let mut d = min.saturating_mul(2);
        let mut t = 0u64;
        while t + d <= slow_for && d < max {
            t += d;
            d = d.saturating_mul(2);
        }
        d.min(max)
    };
    // ±25 %, never past the cap.
    let d = base - base / 4 + jitter(base, 500);
    Duration::from_millis(d.clamp(1, max))
}

/// A failure that retrying cannot fix (credentials, configuration, codec): fail, don't retry.
fn is_permanent(e: &Error) -> bool {
    e.kind.is_permanent()
}

/// Sessions in a row that reached the source and gave no exact picture (see
/// `DEFAULTS.fruitless_sessions`): when each ended.
#[derive(Default)]
struct Fruitless(std::collections::VecDeque<std::time::Instant>);

impl Fruitless {
    /// A session ended: `exact` whether it gave an exact picture, `tried` whether it gave the
    /// decoder anything to judge (a picture, or a decode failure that ended it). Returns how many
    /// fruitless sessions came within the window, once that is enough to give up.
    fn session(&mut self, exact: bool, tried: bool, now: std::time::Instant) -> Option<usize> {
        if exact {
            self.0.clear();
            return None;
        }
        if !tried {
            return None;
        }
        let window = Duration::from_millis(DEFAULTS.fruitless_window_ms as u64);
        self.0.push_back(now);
        while self.0.front().is_some_and(|&t| now.saturating_duration_since(t) > window) {
            self.0.pop_front();
        }
        (self.0.len() >= DEFAULTS.fruitless_sessions.max(1) as usize).then_some(self.0.len())
    }
}

/// The worker thread's body.
pub(super) fn run(sh: &Arc<Shared>, mut first: FirstOpen) {
    let mut attempt: u32 = 0;
    let mut ever_connected = false;
    // Whether the last session had connected: its end (a drop) starts a reconnect.
    let mut connected = false;
    let mut first_try = true;
    // When the source was last lost (or first tried): how long the outage has lasted so far.
    let mut lost_at = std::time::Instant::now();
    let mut fruitless = Fruitless::default();
    loop {
        if sh.irq.stopping() {
            break;
        }
        // The state first, then the kick: while an ended or failed camera still shows its old
        // state, the pending kick tells get_frame to wait for the new connection.
        sh.set_state(if ever_connected { CameraState::Reconnecting } else { CameraState::Connecting });
        let kicked = sh.irq.take_kick();
        // `reconnects` counts drops and manual requests, not the failed attempts in between
        // (those are `reconnect_attempt`).
        if !first_try && (connected || kicked) {
            sh.counters.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        first_try = false;
        if ever_connected && sh.opts.flags.release_clones_on_reconnect {
            registry::force_release_owner(sh.handle());
        }
        connected = false;
        let decoded_before = sh.counters.decoded.load(Ordering::Relaxed);
        let exact_before = sh.counters.exact.load(Ordering::Relaxed);
        let lost_before = sh.counters.packets_lost.load(Ordering::Relaxed);
        let refused_before = sh.counters.decode_errors.load(Ordering::Relaxed);
        // A panic inside a session (a bug of ours that a hostile stream reached) ends that
        // session like any other error: its decoder and connection unwind and drop, and the
        // camera reconnects with the usual backoff instead of failing for good.
        // An attached camera's session reads another process's frames; any other decodes its own.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &sh.source {
            crate::source::Source::Shared(name) => super::attached::session(sh, name, &mut first, &mut connected),
            _ => session(sh, &mut first, &mut attempt, &mut connected),
        }))
            .unwrap_or_else(|payload| {
                sh.counters.session_panics.fetch_add(1, Ordering::Relaxed);
                let what = payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str)).unwrap_or("no message");
                Err(Error::new(ErrorKind::Panic, format!("camera session panicked ({what}); reconnecting")))
            });
        ever_connected |= connected;
        // The decoder a session parked is for a reconnect that follows at once (a kick, a drop,
        // a replayed file). An attempt that did not connect means the source is down: free it.
        if !connected {
            sh.backend.release_parked();
        }
        // An outage starts when a session that gave exact pictures ends. A source that accepts and
        // fails at once, or sends only what does not decode, is one long outage, so it backs off
        // like one.
        let exact = sh.counters.exact.load(Ordering::Relaxed) != exact_before;
        if exact {
            lost_at = std::time::Instant::now();
        }
        let decoded = sh.counters.decoded.load(Ordering::Relaxed) != decoded_before;
        let ended_by_decoder = matches!(&r, Err(e) if e.kind == ErrorKind::Ffmpeg);
        let refused = sh.counters.decode_errors.load(Ordering::Relaxed) != refused_before;
        let stopped = matches!(&r, Ok(SessionEnd::Stop | SessionEnd::Kicked)) || sh.irq.stopping() || sh.irq.kicked();
        // A session whose packets were lost on the way is the network's doing, not the source's.
        let lossless = sh.counters.packets_lost.load(Ordering::Relaxed) == lost_before;
        let tried = (decoded || refused || ended_by_decoder) && lossless;
        let given_up = if connected && !stopped { fruitless.session(exact, tried, std::time::Instant::now()) } else { None };
        if let Some(tx) = first.take() {
            // The first open failed: open() reports it and closes; no retry storm.
            let _ = tx.send(r.as_ref().map(|_| ()).map_err(Clone::clone));
            if r.is_err() {
                break;
            }
        }
        if let Some(n) = given_up {
            let (kind, last) = match &r {
                Err(e) => (e.kind, e.msg.clone()),
                Ok(_) => (ErrorKind::Ffmpeg, "the stream ended".to_string()),
            };
            sh.set_error(&Error::new(
                kind,
                format!(
                    "no exact picture in {n} sessions within {} s: the source sends what does not decode; FAILED until nvcam_camera_reconnect (the last session: {last})",
                    DEFAULTS.fruitless_window_ms / 1000
                ),
            ));
            sh.backend.release_parked();
            sh.set_state(CameraState::Failed);
            fruitless = Fruitless::default();
            wait_for_kick(sh);
            continue;
        }
        match r {
            Ok(SessionEnd::Stop) => break,
            Ok(SessionEnd::Kicked) => {
                attempt = 0;
                continue;
            }
            Ok(SessionEnd::Eof) if !sh.source.is_live() && !sh.opts.flags.loop_file => {
                sh.set_state(CameraState::Ended);
                wait_for_kick(sh);
                continue;
            }
            Ok(SessionEnd::Eof) => {
                if sh.source.is_live() {
                    sh.set_error(&Error::new(ErrorKind::Io, "stream ended (EOF on a live source)"));
                }
            }
            Err(e) if e.kind == ErrorKind::Closed => break,
            Err(_) if sh.irq.kicked() => {}
            Err(e) => {
                if e.is_picture_refused() {
                    sh.counters.pictures_refused.fetch_add(1, Ordering::Relaxed);
                }
                sh.set_error(&e);
                if is_permanent(&e) {
                    sh.backend.release_parked();
                    sh.set_state(CameraState::Failed);
                    wait_for_kick(sh);
                    continue;
                }
            }
        }
        if sh.irq.stopping() {
            break;
        }
        if sh.irq.kicked() {
            attempt = 0;
            continue;
        }
        // Attaching again to a published camera costs a local connection, no camera's session:
        // a publisher that comes back is found within this.
        let d = if sh.source.is_shared() { Duration::from_millis(DEFAULTS.share_reattach_ms as u64) } else { backoff(&sh.opts, attempt, lost_at.elapsed()) };
        attempt = attempt.saturating_add(1);
        sh.counters.attempt.store(attempt, Ordering::Relaxed);
        sh.counters.next_retry_ms.store(d.as_millis() as u32, Ordering::Relaxed);
        if sh.state() != CameraState::Stalled {
            sh.set_state(CameraState::Reconnecting);
        }
        sh.sleep_interruptible(d);
        sh.counters.next_retry_ms.store(0, Ordering::Relaxed);
    }
    sh.gate.set_playing(false);
    // Closing: the parked decoder goes now, on this thread (as a session's decoder always did).
    sh.backend.release_parked();
}

/// Failed or ended: wait (without spinning) for a manual reconnect or close.
fn wait_for_kick(sh: &Shared) {
    while !sh.irq.stopping() && !sh.irq.kicked() {
        sh.sleep_interruptible(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(min: u64, max: u64, fast: u64) -> Options {
        Options {
            reconnect_min: Duration::from_millis(min),
            reconnect_max: Duration::from_millis(max),
            reconnect_fast: Duration::from_millis(fast),
            ..Default::default()
        }
    }

    /// A short outage must not be met with a doubled delay: within the fast window every attempt
    /// waits about `reconnect_min`, and the first goes out at once.
    #[test]
    fn short_outage_keeps_retries_short() {
        let o = opts(250, 10_000, 3000);
        for _ in 0..50 {
            assert!(backoff(&o, 0, Duration::ZERO) <= Duration::from_millis(50));
            for a in 1..12 {
                let d = backoff(&o, a, Duration::from_millis(a as u64 * 250)).as_millis();
                assert!((187..=313).contains(&d), "attempt {a}: {d} ms");
            }
        }
    }

    /// A source of garbage ends: N sessions in a row that gave the decoder something and got no
    /// exact picture, within the window, give up; an exact picture, or sessions spread wider
    /// than the window, do not; sessions that never reached the decoder do not count.
    #[test]
    fn sessions_without_an_exact_picture_give_up_after_n_within_the_window() {
        let n = DEFAULTS.fruitless_sessions as usize;
        let window = Duration::from_millis(DEFAULTS.fruitless_window_ms as u64);
        let t = std::time::Instant::now();
        let mut f = Fruitless::default();
        for i in 0..n - 1 {
            assert_eq!(f.session(false, true, t + Duration::from_secs(i as u64)), None);
            assert_eq!(f.session(false, false, t + Duration::from_secs(i as u64)), None, "nothing decoded: not counted");
        }
        assert_eq!(f.session(false, true, t + Duration::from_secs(n as u64)), Some(n));
        let mut f = Fruitless::default();
        for i in 0..n * 3 {
            assert_eq!(f.session(i % n == n - 1, true, t + Duration::from_secs(i as u64)), None, "an exact picture starts over");
        }
        let mut f = Fruitless::default();
        for i in 0..n * 3 {
            assert_eq!(f.session(false, true, t + (window / (n as u32 - 1) + Duration::from_millis(1)) * i as u32), None, "wider than the window");
        }
    }

    /// A long outage backs off (doubling) up to the cap, so a dead camera costs the network little.
    #[test]
    fn long_outage_backs_off_to_the_cap() {
        let o = opts(100, 1000, 500);
        let d1 = backoff(&o, 5, Duration::from_millis(600)).as_millis();
        let d2 = backoff(&o, 6, Duration::from_millis(900)).as_millis();
        let d9 = backoff(&o, 9, Duration::from_secs(60)).as_millis();
        assert!((150..=250).contains(&d1), "{d1}");
        assert!((300..=500).contains(&d2), "{d2}");
        assert!((750..=1000).contains(&d9), "{d9}");
    }
}
