//! The deferred-free queue: GPU and pinned buffers that nothing of ours references any more, but
//! that a copy may still be using. Each entry is freed only when (a) every fence event recorded
//! after its last use has completed and (b) it has waited a minimum age (`gpu_free_min_age_ms`,
//! default 100 ms: a margin for hosts that released a clone a moment before their own kernel on
//! it finished). One background thread (`nvcam-free`, joined at shutdown) drains it while it is not empty, and
//! `nvcam_gpu_drain` on request, both by querying events only; close and shutdown drain by waiting
//! on those events, never on the device. The frees (`cuMemFree`, `cuMemFreeHost`) synchronize
//! implicitly, so they never run on a camera's thread: a burst of closes would otherwise stall
//! whichever steady cameras happened to do the housekeeping.

use super::context::{Device, Event};
use crate::config::DEFAULTS;
use super::stats;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use super::driver::{self, sys};

pub(crate) enum Buf {
    Device(sys::CUdeviceptr),
    Host(*mut u8),
    /// A VMM mapping (a shareable pool, or one mapped from another process): unmapped, its
    /// address range freed and its allocation released.
    Mapped(super::vmm::Mapping),
}

struct Entry {
    dev: Arc<Device>,
    buf: Buf,
    bytes: u64,
    fences: Vec<Event>,
    at: Instant,
}

// SAFETY: the pointers are owned by the entry and freed once, from whichever thread drains it.
unsafe impl Send for Entry {}

static QUEUE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static LEN: AtomicUsize = AtomicUsize::new(0);
/// Entries taken off the queue and being freed (shutdown waits for them too).
static FREEING: AtomicUsize = AtomicUsize::new(0);
static WAKE: (Mutex<bool>, parking_lot::Condvar) = (Mutex::new(false), parking_lot::Condvar::new());
static MIN_AGE_MS: AtomicU32 = AtomicU32::new(DEFAULTS.gpu_free_min_age_ms);

pub(crate) fn set_min_age(d: Duration) {
    MIN_AGE_MS.store(d.as_millis().min(u32::MAX as u128) as u32, Ordering::Relaxed);
}

pub(crate) fn min_age() -> Duration {
    Duration::from_millis(MIN_AGE_MS.load(Ordering::Relaxed) as u64)
}

/// Hands a buffer over; it is freed once `fences` completed and it is old enough.
pub(crate) fn retire(dev: Arc<Device>, buf: Buf, bytes: u64, fences: Vec<Event>) {
    let c = stats::of(dev.ordinal);
    c.bytes_deferred.fetch_add(bytes as i64, Ordering::Relaxed);
    c.deferred_buffers.fetch_add(1, Ordering::Relaxed);
    QUEUE.lock().push(Entry { dev, buf, bytes, fences, at: Instant::now() });
    LEN.fetch_add(1, Ordering::Relaxed);
    wake_freer();
}

/// The freeing thread, while one runs. Shutdown stops and joins it (no thread outlives
/// `nvcam_shutdown`); the next retire after that starts a new one.
static FREER: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);
/// Bumped by [`stop_freer`]: a freeing thread runs while the generation it started in is current.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Starts (if none runs) and wakes the thread that drains the queue while it is not empty.
fn wake_freer() {
    let mut t = FREER.lock();
    if t.is_none() {
        let gen = GENERATION.load(Ordering::Acquire);
        *t = std::thread::Builder::new().name("nvcam-free".into()).spawn(move || freer(gen)).ok();
    }
    if t.is_some() {
        *WAKE.0.lock() = true;
        WAKE.1.notify_all();
    }
}

fn freer(gen: u64) {
    let current = || GENERATION.load(Ordering::Acquire) == gen;
    loop {
        {
            let mut w = WAKE.0.lock();
            while !*w && LEN.load(Ordering::Relaxed) == 0 && current() {
                WAKE.1.wait(&mut w);
            }
            *w = false;
        }
        if !current() {
            return;
        }
        let _ = std::panic::catch_unwind(|| drain(min_age()));
        std::thread::sleep(Duration::from_millis(DEFAULTS.gpu_maintain_every_ms as u64));
    }
}

/// Shutdown: stops the freeing thread and joins it by `deadline` (it never blocks: its drain only
/// queries events). Returns whether no freeing thread is left.
pub(crate) fn stop_freer(deadline: Instant) -> bool {
    let Some(h) = FREER.lock().take() else { return true };
    GENERATION.fetch_add(1, Ordering::AcqRel);
    *WAKE.0.lock() = true;
    WAKE.1.notify_all();
    while !h.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if h.is_finished() {
        let _ = h.join();
        true
    } else {
        false
    }
}

fn fences_done(e: &Entry) -> bool {
    // A query that fails (a broken context) counts as done: nothing will ever complete it.
    e.fences.iter().all(|f| f.query().unwrap_or(true))
}

fn free(e: Entry) {
    let c = stats::of(e.dev.ordinal);
    match e.dev.push() {
        Ok(_g) => match e.buf {
            Buf::Device(p) => {
                // SAFETY: our allocation, freed once; its fences completed (nothing reads it).
                if driver::ok_or_logged(unsafe { driver::memory::free(p) }) {
                    c.device_frees.fetch_add(1, Ordering::Relaxed);
                }
            }
            Buf::Mapped(mut m) => {
                // Its fences completed: nothing reads or writes the range any more.
                if m.free() {
                    c.device_frees.fetch_add(1, Ordering::Relaxed);
                }
            }
            Buf::Host(p) => {
                // SAFETY: our pinned allocation, freed once; its fences completed.
                if driver::ok_or_logged(unsafe { driver::memory::free_host(p as *mut std::ffi::c_void) }) {
                    c.pinned_frees.fetch_add(1, Ordering::Relaxed);
                }
            }
        },
        Err(err) => log::error!("deferred free skipped: {err}"),
    }
    c.bytes_deferred.fetch_sub(e.bytes as i64, Ordering::Relaxed);
    c.deferred_buffers.fetch_sub(1, Ordering::Relaxed);
    drop(e.fences);
    drop(e.dev);
}

/// Frees every entry whose fences completed and that is at least `min_age` old; never waits.
/// Returns how many were freed.
pub(crate) fn drain(min_age: Duration) -> usize {
    if LEN.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    let ready: Vec<Entry> = {
        let mut q = QUEUE.lock();
        let mut ready = Vec::new();
        let mut i = 0;
        while i < q.len() {
            if q[i].at.elapsed() >= min_age && fences_done(&q[i]) {
                ready.push(q.swap_remove(i));
            } else {
                i += 1;
            }
        }
        LEN.fetch_sub(ready.len(), Ordering::Relaxed);
        FREEING.fetch_add(ready.len(), Ordering::AcqRel);
        ready
    };
    let n = ready.len();
    for e in ready {
        free(e);
        FREEING.fetch_sub(1, Ordering::AcqRel);
    }
    n
}

/// The workers' call: nudges the freeing thread if anything is queued; never frees here.
pub(crate) fn maintain() {
    if LEN.load(Ordering::Relaxed) != 0 {
        wake_freer();
    }
}

/// Teardown: frees every entry (whatever its age) once its fences completed, waiting for them
/// until `deadline`. Entries still pending at the deadline stay queued. Returns whether the queue
/// is empty.
pub(crate) fn drain_wait(deadline: Instant) -> bool {
    let all: Vec<Entry> = {
        let mut q = QUEUE.lock();
        LEN.fetch_sub(q.len(), Ordering::Relaxed);
        std::mem::take(&mut *q)
    };
    let mut left = Vec::new();
    for e in all {
        let mut done = fences_done(&e);
        while !done && Instant::now() < deadline {
            // Bounded wait on these events only (never the device): poll, since
            // cuEventSynchronize cannot time out.
            std::thread::sleep(Duration::from_micros(200));
            done = fences_done(&e);
        }
        if done {
            free(e);
        } else {
            left.push(e);
        }
    }
    // Entries the freeing thread took before us are being freed right now: wait for those too.
    while FREEING.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(200));
    }
    let empty = left.is_empty() && FREEING.load(Ordering::Acquire) == 0;
    if !left.is_empty() {
        log::warn!("{} GPU buffer(s) still fenced by unfinished work at the deadline; kept for later", left.len());
        LEN.fetch_add(left.len(), Ordering::Relaxed);
        QUEUE.lock().extend(left);
    }
    empty
}
