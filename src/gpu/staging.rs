//! Staging areas for conversions that do not write the caller's memory directly: host downloads
//! ([`super::download`]) and copies to another GPU ([`super::convert`]). A staging area is a stream
//! of its device, device scratch the kernel writes, a pinned buffer (pageable host destinations
//! only) and the events that order them.
//!
//! Each device has a small pool of them (at most [`MAX_PER_DEVICE`], made on demand), so
//! conversions of different cameras run side by side instead of queueing behind one lock; a
//! call takes one for its duration (a host download) or for its enqueue (a peer copy, whose
//! consumers' events then guard the scratch). Buffers grow to the largest request and are never
//! allocated per call after that; what a staging area drops goes through the deferred-free
//! queue with the events that fence its last use.

use super::context::{Device, Event, Stream};
use super::deferred;
use super::memory::PinnedBuf;
use crate::status::*;
use super::driver::{self, sys};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Staging areas per device: the most host downloads and peer enqueues of one GPU that run at
/// once (more wait for one to come back). Memory: at most this many times the largest request
/// (device scratch, plus pinned memory for pageable destinations).
pub(crate) const MAX_PER_DEVICE: usize = 8;
/// The most chunks a pageable download is cut into (one event each).
pub(crate) const MAX_CHUNKS: usize = 32;
/// How long a call waits for a staging area when all are taken before it gives up (they come
/// back within one transfer unless the GPU hangs).
const TAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Device memory of a staging area; retired through the deferred queue with its fences.
struct DevBuf {
    dev: Arc<Device>,
    ptr: sys::CUdeviceptr,
    len: usize,
}

impl DevBuf {
    fn new(dev: &Arc<Device>, len: usize) -> Result<DevBuf> {
        let _g = dev.push()?;
        let ptr = driver::memory::alloc(len.max(1)).map_err(|e| e.during("conversion scratch"))?;
        super::stats::of(dev.ordinal).device_allocs.fetch_add(1, Ordering::Relaxed);
        Ok(DevBuf { dev: dev.clone(), ptr, len })
    }

    /// Hands the memory to the deferred queue, freed once `fences` completed.
    fn retire(self, fences: Vec<Event>) {
        deferred::retire(self.dev.clone(), deferred::Buf::Device(self.ptr), self.len as u64, fences);
    }
}

/// One staging area of one device.
pub(crate) struct Stage {
    pub dev: Arc<Device>,
    pub stream: Stream,
    scratch: Option<DevBuf>,
    pinned: Option<PinnedBuf>,
    /// Recorded after the last work of a host download on `stream`.
    pub done: Event,
    /// One per chunk of a pageable download.
    pub chunk_done: Vec<Event>,
    /// Per destination GPU (by ordinal): recorded on a consumer's stream of that GPU after its
    /// copy out of the scratch. The scratch is written again only after these (a stream wait).
    peer_done: Vec<Option<Event>>,
}

impl Stage {
    fn new(dev: &Arc<Device>) -> Result<Stage> {
        Ok(Stage {
            dev: dev.clone(),
            stream: Stream::new(dev)?,
            scratch: None,
            pinned: None,
            done: Event::fence(dev)?,
            chunk_done: (0..MAX_CHUNKS).map(|_| Event::fence(dev)).collect::<Result<Vec<_>>>()?,
            peer_done: Vec::new(),
        })
    }

    fn scratch_len(&self) -> usize {
        self.scratch.as_ref().map_or(0, |b| b.len)
    }

    /// Device scratch of at least `len` bytes, ordered on `stream` after every earlier reader
    /// (this stream's own work, and the peer copies' events: the stream waits for them, the
    /// host does not). A smaller scratch is retired, fenced by those same events.
    pub(crate) fn scratch(&mut self, len: usize) -> Result<u64> {
        self.order_after_peers()?;
        if self.scratch_len() < len {
            if let Some(old) = self.scratch.take() {
                let mut fences: Vec<Event> = std::mem::take(&mut self.peer_done).into_iter().flatten().collect();
                let ours = Event::fence(&self.dev)?;
                ours.record(&self.stream)?;
                fences.push(ours);
                old.retire(fences);
            }
            self.scratch = Some(DevBuf::new(&self.dev, len)?);
        }
        Ok(self.scratch.as_ref().expect("made above").ptr)
    }

    /// A pinned buffer of at least `len` bytes. Every use of one ends with a host wait, so the
    /// old one (if any) is idle; it retires with its own event.
    pub(crate) fn pinned(&mut self, len: usize) -> Result<&PinnedBuf> {
        if self.pinned.as_ref().is_none_or(|b| b.len() < len) {
            self.pinned = None;
            self.pinned = Some(PinnedBuf::new(&self.dev, len)?);
        }
        Ok(self.pinned.as_ref().expect("made above"))
    }

    /// Whether no other GPU's copy still reads the scratch (a query; a failed one counts as
    /// done: a broken context completes nothing).
    fn idle(&self) -> bool {
        self.peer_done.iter().flatten().all(|e| e.query().unwrap_or(true))
    }

    /// Makes `stream` wait for the peer copies still reading the scratch (no host wait).
    fn order_after_peers(&self) -> Result<()> {
        for e in self.peer_done.iter().flatten() {
            if !e.query()? {
                let _g = self.dev.push()?;
                // SAFETY: our stream and an event of ours (of another context: allowed for a
                // stream wait), both alive.
                unsafe { driver::stream::wait_event(self.stream.raw(), e.raw()) }.map_err(|e| e.during("peer copy"))?;
            }
        }
        Ok(())
    }

    /// The event recorded after copies out of the scratch on streams of GPU `dst` (made once).
    pub(crate) fn peer_event(&mut self, dst: &Arc<Device>) -> Result<&Event> {
        let i = dst.ordinal as usize;
        if self.peer_done.len() <= i {
            self.peer_done.resize_with(i + 1, || None);
        }
        if self.peer_done[i].is_none() {
            self.peer_done[i] = Some(Event::fence(dst)?);
        }
        Ok(self.peer_done[i].as_ref().expect("made above"))
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        if let Some(s) = self.scratch.take() {
            // Host downloads ended with a host wait; peer copies are fenced by their events.
            s.retire(std::mem::take(&mut self.peer_done).into_iter().flatten().collect());
        }
    }
}

struct Free {
    stages: Vec<Stage>,
    made: usize,
}

/// One device's staging areas.
struct Pool {
    dev: Arc<Device>,
    free: Mutex<Free>,
    back: Condvar,
}

/// A staging area taken from its device's pool; goes back on drop.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    stage: Option<Stage>,
}

impl std::ops::Deref for Lease {
    type Target = Stage;
    fn deref(&self) -> &Stage {
        self.stage.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for Lease {
    fn deref_mut(&mut self) -> &mut Stage {
        self.stage.as_mut().expect("held until drop")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(s) = self.stage.take() {
            self.pool.free.lock().stages.push(s);
            self.pool.back.notify_one();
        }
    }
}

static POOLS: Mutex<Vec<Option<Arc<Pool>>>> = Mutex::new(Vec::new());

fn pool(dev: &Arc<Device>) -> Arc<Pool> {
    let i = dev.ordinal as usize;
    let mut t = POOLS.lock();
    if t.len() <= i {
        t.resize(i + 1, None);
    }
    t[i].get_or_insert_with(|| Arc::new(Pool { dev: dev.clone(), free: Mutex::new(Free { stages: Vec::new(), made: 0 }), back: Condvar::new() }))
        .clone()
}

/// A staging area of `dev` for a request of `scratch` device bytes and `pinned` pinned bytes
/// (0: none). Preferred: a free one that no other GPU's copy still reads (else this call's work
/// would queue behind that consumer's stream), the most recently used whose buffers are big
/// enough, else whose scratch is, else any; then a new one while fewer than [`MAX_PER_DEVICE`]
/// exist; then a free one still being read (ordered after its readers on the GPU); else the
/// next to come back.
pub(crate) fn take(dev: &Arc<Device>, scratch: usize, pinned: usize) -> Result<Lease> {
    let pool = pool(dev);
    let mut free = pool.free.lock();
    loop {
        let pick = |stages: &[Stage], idle: &dyn Fn(&Stage) -> bool| -> Option<usize> {
            let fits = |s: &Stage| s.scratch_len() >= scratch && (pinned == 0 || s.pinned.as_ref().is_some_and(|b| b.len() >= pinned));
            stages
                .iter()
                .rposition(|s| idle(s) && fits(s))
                .or_else(|| stages.iter().rposition(|s| idle(s) && s.scratch_len() >= scratch))
                .or_else(|| stages.iter().rposition(idle))
        };
        let chosen = pick(&free.stages, &|s: &Stage| s.idle()).or_else(|| if free.made < MAX_PER_DEVICE { None } else { pick(&free.stages, &|_: &Stage| true) });
        if let Some(i) = chosen {
            let s = free.stages.remove(i);
            drop(free);
            return Ok(Lease { pool, stage: Some(s) });
        }
        if free.made < MAX_PER_DEVICE {
            free.made += 1;
            drop(free);
            return match Stage::new(&pool.dev) {
                Ok(s) => Ok(Lease { pool, stage: Some(s) }),
                Err(e) => {
                    pool.free.lock().made -= 1;
                    Err(e)
                }
            };
        }
        if pool.back.wait_for(&mut free, TAKE_TIMEOUT).timed_out() && free.stages.is_empty() {
            return Err(Error::timeout(format!("all {MAX_PER_DEVICE} staging areas of GPU {} stayed busy for {} s", dev.ordinal, TAKE_TIMEOUT.as_secs())));
        }
    }
}

/// Library shutdown: the free staging areas go (their memory through the deferred queue) before
/// the contexts are released. One still leased (a call racing with shutdown) goes when it is
/// given back.
pub(crate) fn shutdown() {
    let pools: Vec<Arc<Pool>> = POOLS.lock().drain(..).flatten().collect();
    for p in pools {
        let stages = std::mem::take(&mut p.free.lock().stages);
        drop(stages);
    }
}

/// Test hook: the staging areas made so far on GPU `device` (live ones; shutdown forgets them).
#[cfg(feature = "test-hooks")]
pub fn made(device: i32) -> usize {
    let t = POOLS.lock();
    t.get(device.max(0) as usize).cloned().flatten().map_or(0, |p| p.free.lock().made)
}
