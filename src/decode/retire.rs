//! Decoder teardown off the camera's path: a reconnecting camera hands its old decoder here and
//! opens the next connection at once, while one process-wide thread destroys the old one.
//!
//! Destroying a hardware decoder waits for the camera's stream and then for the driver
//! (`cuvidDestroyDecoder`, FFmpeg's `avcodec_free_context` with its NVDEC session and frame
//! pool): tens of milliseconds per camera, seconds for a burst of 32. None of that has to happen
//! before the camera's next connection, which gets a new decoder anyway. A decoder here holds
//! what it needs to die cleanly (its device, its stream, its session ticket), so the order of
//! teardowns does not matter. Closing a camera still tears down inline (the camera is going
//! away and its close is expected to release everything); library shutdown waits for this queue
//! ([`drain_wait`]) before the GPU contexts go.

use super::Decoder;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

struct Queue {
    q: Mutex<(VecDeque<Box<dyn Decoder>>, usize)>,
    cv: Condvar,
}

fn queue() -> &'static Queue {
    static Q: OnceLock<Queue> = OnceLock::new();
    Q.get_or_init(|| Queue { q: Mutex::new((VecDeque::new(), 0)), cv: Condvar::new() })
}

fn start_thread() -> bool {
    static STARTED: OnceLock<bool> = OnceLock::new();
    *STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("nvcam-retire".into())
            .spawn(|| loop {
                let q = queue();
                let d = {
                    let mut g = q.q.lock();
                    while g.0.is_empty() {
                        q.cv.wait(&mut g);
                    }
                    g.0.pop_front().expect("not empty")
                };
                // A panic in a decoder's drop must not end the thread (nothing else would drain).
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(d)));
                let mut g = q.q.lock();
                g.1 -= 1;
                q.cv.notify_all();
            })
            .is_ok()
    })
}

/// Destroys `d` on the retire thread (inline if that thread could not start).
pub(crate) fn later(d: Box<dyn Decoder>) {
    if !start_thread() {
        drop(d);
        return;
    }
    let q = queue();
    let mut g = q.q.lock();
    g.0.push_back(d);
    g.1 += 1;
    q.cv.notify_all();
}

/// Decoders handed over and not destroyed yet.
pub(crate) fn pending() -> usize {
    queue().q.lock().1
}

/// Waits until every decoder handed over is destroyed, or `deadline`; true if none is left.
pub(crate) fn drain_wait(deadline: Instant) -> bool {
    let q = queue();
    let mut g = q.q.lock();
    while g.1 > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        q.cv.wait_for(&mut g, left.min(Duration::from_millis(50)));
    }
    true
}
