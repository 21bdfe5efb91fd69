//! The camera's thread: the supervisor that runs one session after another, with the reconnect
//! schedule between them, until the camera closes or fails for good.

use super::session::{session, FirstOpen, SessionEnd};
use super::shared::{CameraState, Shared};
use crate::config::Options;
use crate::registry;
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The delay before reconnect attempt `attempt` (from 0): doubling from `reconnect_min` up to
/// `reconnect_max`, with ±25 % jitter so cameras that dropped together do not reconnect in
/// lockstep.
pub(super) fn backoff(opts: &Options, attempt: u32) -> Duration {
    let min = opts.reconnect_min.as_millis().max(1) as u64;
    let max = opts.reconnect_max.as_millis().max(min as u128) as u64;
    let exp = min.saturating_mul(1u64 << attempt.min(20)).min(max);
    let jitter = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(attempt);
        (h.finish() % 1001) as i64 - 500
    };
    let d = exp as i64 + exp as i64 * jitter / 2000;
    Duration::from_millis(d.clamp(1, max as i64) as u64)
}

/// A failure that retrying cannot fix (credentials, configuration, codec): fail, don't retry.
fn is_permanent(e: &Error) -> bool {
    matches!(e.code, NVCAM_E_AUTH | NVCAM_E_BAD_OPTION | NVCAM_E_UNSUPPORTED | NVCAM_E_INVALID_ARGUMENT)
}

/// The worker thread's body.
pub(super) fn run(sh: &Arc<Shared>, mut first: FirstOpen) {
    let mut attempt: u32 = 0;
    let mut ever_connected = false;
    // Whether the last session had connected: its end (a drop) starts a reconnect.
    let mut connected = false;
    let mut first_try = true;
    loop {
        if sh.irq.stopping() {
            break;
        }
        let kicked = sh.irq.take_kick();
        // `reconnects` counts drops and manual requests, not the failed attempts in between
        // (those are `reconnect_attempt`).
        if !first_try && (connected || kicked) {
            sh.counters.reconnects.fetch_add(1, Ordering::Relaxed);
        }
        first_try = false;
        sh.set_state(if ever_connected { CameraState::Reconnecting } else { CameraState::Connecting });
        if ever_connected && sh.opts.flags.release_clones_on_reconnect {
            registry::force_release_owner(sh.handle());
        }
        connected = false;
        let r = session(sh, &mut first, &mut attempt, &mut connected);
        ever_connected |= connected;
        if let Some(tx) = first.take() {
            // The first open failed: open() reports it and closes; no retry storm.
            let _ = tx.send(r.as_ref().map(|_| ()).map_err(Clone::clone));
            if r.is_err() {
                break;
            }
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
                    sh.set_error(&Error::new(NVCAM_E_IO, "stream ended (EOF on a live source)"));
                }
            }
            Err(e) if e.code == NVCAM_E_CLOSED => break,
            Err(_) if sh.irq.kicked() => {}
            Err(e) => {
                sh.set_error(&e);
                if is_permanent(&e) {
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
        let d = backoff(&sh.opts, attempt);
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

    #[test]
    fn backoff_grows_and_is_capped() {
        let o = Options { reconnect_min: Duration::from_millis(100), reconnect_max: Duration::from_millis(1000), ..Default::default() };
        let d0 = backoff(&o, 0).as_millis();
        let d3 = backoff(&o, 3).as_millis();
        let d9 = backoff(&o, 9).as_millis();
        assert!((75..=125).contains(&d0), "{d0}");
        assert!((600..=1000).contains(&d3), "{d3}");
        assert!(d9 <= 1000, "{d9}");
    }
}
