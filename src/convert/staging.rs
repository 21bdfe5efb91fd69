//! Staging areas, and the host downloads that go through them. A staging area is a stream of
//! its device, device scratch the kernel writes, a pinned buffer (pageable host destinations
//! only) and the events that order them; host downloads and copies to another GPU
//! ([`super::gpu`]) convert into it when they cannot write the caller's memory directly.
//!
//! Each device has a small pool of them (at most [`MAX_PER_DEVICE`], made on demand), so
//! conversions of different cameras run side by side instead of queueing behind one lock; a
//! call takes one for its duration (a host download) or for its enqueue (a peer copy, whose
//! consumers' events then guard the scratch). Buffers grow to the largest request and are never
//! allocated per call after that; what a staging area drops goes through the deferred-free
//! queue with the events that fence its last use.
//!
//! **Host downloads** ([`to_host`]: `nvcam_frame_convert` with a host destination, Python's
//! `to_numpy`, LabVIEW's BGRA download): the kernel writes the scratch, then
//! - **page-locked destinations** (`cuMemHostAlloc`, `cuMemHostRegister`, a pinned torch tensor:
//!   the driver knows the whole range as one host allocation): one DMA straight into the
//!   caller's memory, at the caller's pitch. No host copy.
//! - **pageable destinations**: the DMA goes into the pinned buffer in chunks; the library's
//!   worker threads ([`crate::workers`], started once, never per call) and the caller copy each
//!   chunk out as soon as its DMA completed, so the copies overlap the transfer.
//!
//! The call returns when the bytes are there: that wait is the point (counted once per call).
//! Waits poll the events first (a transfer takes 0.1–1 ms), one thread at a time, and sleep
//! between queries after [`SPIN`]. The staging events are fences, not blocking-sync events:
//! recording a blocking-sync event costs the stream GPU time per record, and a download records
//! one per chunk (measured: 4K into a Vec 0.74 x a pinned cuMemcpyDtoH with blocking-sync
//! events, 0.89 without; docs/BENCHMARKS.md).

use crate::gpu::context::{Copy2D, Device, Event, Mem, Stream};
use crate::gpu::deferred;
use crate::gpu::kernels::kernels;
use super::launch;
use crate::gpu::memory::PinnedBuf;
use crate::convert::{Layout, Plan};
use crate::frame::Frame;
use crate::status::*;
use crate::gpu::driver::{self, sys};
use parking_lot::{Condvar, Mutex};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Staging areas per device: the most host downloads and peer enqueues of one GPU that run at
/// once (more wait for one to come back). Memory: at most this many times the largest request
/// (device scratch, plus pinned memory for pageable destinations).
pub(crate) const MAX_PER_DEVICE: usize = 8;
/// The most chunks a pageable download is cut into (one event each).
const MAX_CHUNKS: usize = 32;
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
        crate::gpu::stats::of(dev.ordinal).device_allocs.fetch_add(1, Ordering::Relaxed);
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


// Host downloads (the module docs say how they run).

/// Pageable downloads of at least this many bytes go in chunks.
const CHUNKED_FROM: usize = 1 << 20;
/// The chunk size pageable downloads aim for (at most [`MAX_CHUNKS`] chunks). Measured on the
/// H100 machine (docs/BENCHMARKS.md): 16 chunks (~0.5 MB) were best for a 1080p BGRA download
/// (8.3 MB: 22.7 GB/s against 18.1 with 8 and 16.4 with 32), 32 (~1 MB) for 4K (33 MB: 35.7 GB/s
/// against 26.1 with 8); this size gives those counts.
const CHUNK_BYTES: usize = 512 << 10;
/// How long a wait polls before it sleeps between queries (polled: 43.9 GB/s into pinned
/// memory at 1080p; blocking-sync waits, before the staging events became fences: 37.3).
const SPIN: Duration = Duration::from_millis(5);

/// How downloads run (fixed in production; the benchmark compares variants through
/// `nvcam::diag::set_download_knobs`). Chunks of a pageable download; 0 = by size.
static CHUNKS: AtomicUsize = AtomicUsize::new(0);
/// Let the kernel write page-locked destinations through their device mapping instead of the
/// scratch + DMA. Off: it measured faster for BGRA (0.94 x a pinned cuMemcpyDtoH against 0.87),
/// but keeps the SMs busy for the whole PCIe transfer (other cameras' kernels queue behind it),
/// where a copy engine does the DMA beside them.
static KERNEL_DIRECT: AtomicBool = AtomicBool::new(false);
/// Poll events before sleeping between queries (else sleep at once).
static POLL: AtomicBool = AtomicBool::new(true);

/// Downloads by path: DMA into page-locked memory, kernel into page-locked memory, pageable.
static PATHS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

/// Waits for `e`: polls up to [`SPIN`], then sleeps between queries. Counted as one host wait.
fn wait(e: &Event) -> Result<()> {
    if POLL.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        while t0.elapsed() < SPIN {
            if e.query()? {
                crate::gpu::stats::count_sync(e.dev.ordinal);
                return Ok(());
            }
            std::hint::spin_loop();
        }
    }
    e.synchronize()
}

/// Device frame → host memory laid out as `l` (`dst` holds at least `l.total` bytes, checked by
/// the caller), through a scratch laid out as `packed` (the same image packed) unless the kernel
/// writes `dst` itself; returns when the bytes are there.
pub(crate) fn to_host(f: &Frame, plan: &Plan, dst: &mut [u8], l: &Layout, packed: &Layout) -> Result<()> {
    let dev = crate::gpu::device(f.device())?;
    let k = kernels(&dev)?;
    let dst = &mut dst[..l.total];
    let row = plan.row_bytes();
    let rows = plan.out_h as usize * plan.format.planes();
    let kernel_direct = KERNEL_DIRECT.load(Ordering::Relaxed);
    let pinned = crate::gpu::memory::page_locked(&dev, dst.as_mut_ptr(), dst.len(), kernel_direct)?;
    let mut st = take(&dev, packed.total, if pinned.is_some() { 0 } else { packed.total })?;
    let s = st.stream.raw();
    let a = plan.format.align() as u64;
    if let Some(p) = pinned.as_ref().and_then(|p| p.dev_ptr).filter(|&p| p.is_multiple_of(a) && (l.pitch as u64).is_multiple_of(a)) {
        f.storage().wait_on_stream(f.slot(), s as u64)?;
        // SAFETY: `p` is the device mapping of the caller's page-locked memory, which holds
        // `l.total` bytes (checked: one allocation) and is written before we return (the wait
        // below); the frame's slot is held by `f` and fenced after; our stream.
        unsafe { launch::frame(&k, f, plan, p, l, s) }?;
        f.storage().fence_after_stream(f.slot(), s as u64)?;
        st.done.record(&st.stream)?;
        PATHS[1].fetch_add(1, Ordering::Relaxed);
        return wait(&st.done);
    }
    let scratch = st.scratch(packed.total)?;
    f.storage().wait_on_stream(f.slot(), s as u64)?;
    // SAFETY: the scratch holds `packed.total` bytes of this device and is ours (the lease,
    // ordered after its earlier readers by `scratch`); the slot is held by `f` and fenced below.
    unsafe { launch::frame(&k, f, plan, scratch, packed, s) }?;
    f.storage().fence_after_stream(f.slot(), s as u64)?;
    if pinned.is_some() {
        if l.pitch == row {
            let _g = dev.push()?;
            // SAFETY: the caller's page-locked memory holds `l.total` bytes (one allocation,
            // checked), written before we return (the wait below); ordered after the kernel.
            unsafe { driver::memory::copy_dtoh_async(dst.as_mut_ptr() as *mut c_void, scratch, dst.len(), s) }.map_err(|e| e.during("into pinned dst"))?;
        } else {
            // SAFETY: as above; `rows` rows of `row` bytes at the caller's pitch end exactly at
            // `l.total`; the scratch holds them packed.
            unsafe { Copy2D { src: Mem::Device(scratch), src_pitch: row, dst: Mem::Host(dst.as_mut_ptr()), dst_pitch: l.pitch, width_bytes: row, rows }.enqueue(&st.stream) }?;
        }
        st.done.record(&st.stream)?;
        PATHS[0].fetch_add(1, Ordering::Relaxed);
        return wait(&st.done);
    }
    PATHS[2].fetch_add(1, Ordering::Relaxed);
    pageable(&mut st, scratch, dst, l.pitch, rows, row)
}

/// The packed image in the scratch (`rows` rows of `row` bytes) → the caller's pageable memory at
/// `pitch`, through the staging area's pinned buffer, chunk by chunk.
fn pageable(st: &mut Lease, scratch: u64, dst: &mut [u8], pitch: usize, rows: usize, row: usize) -> Result<()> {
    let pin = st.pinned(rows * row)?.ptr() as usize;
    let want = match CHUNKS.load(Ordering::Relaxed) {
        _ if dst.len() < CHUNKED_FROM => 1,
        0 => (rows * row).div_ceil(CHUNK_BYTES).clamp(1, MAX_CHUNKS),
        n => n.clamp(1, MAX_CHUNKS),
    };
    let per = rows.div_ceil(want.min(rows));
    let n = rows.div_ceil(per);
    let span = |c: usize| (c * per, rows.min(c * per + per));
    {
        let _g = st.dev.push()?;
        for c in 0..n {
            let (r0, r1) = span(c);
            // SAFETY: rows [r0, r1) lie inside both buffers (`rows * row` bytes each); ordered
            // after the kernel on our stream; the pinned buffer is ours (the lease).
            unsafe { driver::memory::copy_dtoh_async((pin + r0 * row) as *mut c_void, scratch + (r0 * row) as u64, (r1 - r0) * row, st.stream.raw()) }
                .map_err(|e| e.during("staging chunk"))?;
            st.chunk_done[c].record(&st.stream)?;
        }
    }
    // The caller's rows of each chunk (the last row of all is `row` bytes, not `pitch`).
    let mut parts = Vec::with_capacity(n);
    let mut rest = dst;
    for c in 0..n {
        let (r0, r1) = span(c);
        let take = if c + 1 == n { rest.len() } else { (r1 - r0) * pitch };
        let (a, b) = rest.split_at_mut(take);
        parts.push(Mutex::new(a));
        rest = b;
    }
    let st: &Stage = st;
    // Chunks known complete (in order), advanced by one polling thread at a time.
    let ready = AtomicUsize::new(0);
    let poller = Mutex::new(());
    let failed: Mutex<Option<Error>> = Mutex::new(None);
    let poll = POLL.load(Ordering::Relaxed);
    let wait_chunk = |c: usize| -> Result<()> {
        let t0 = Instant::now();
        while poll && t0.elapsed() < SPIN {
            if ready.load(Ordering::Acquire) > c {
                return Ok(());
            }
            if let Some(_p) = poller.try_lock() {
                let mut r = ready.load(Ordering::Acquire);
                while r < n && st.chunk_done[r].query()? {
                    r += 1;
                }
                ready.store(r, Ordering::Release);
                if r > c {
                    return Ok(());
                }
            }
            std::hint::spin_loop();
        }
        // Not counted: the call counts one wait.
        st.chunk_done[c].wait()
    };
    crate::workers::for_each(n, &|c| {
        if let Err(e) = wait_chunk(c) {
            failed.lock().get_or_insert(e);
            return;
        }
        let (r0, r1) = span(c);
        let mut d = parts[c].lock();
        // SAFETY: chunk c's DMA completed (waited above); its rows lie inside the pinned buffer,
        // which nothing writes until the lease is given back after every chunk was copied.
        let src = unsafe { std::slice::from_raw_parts((pin + r0 * row) as *const u8, (r1 - r0) * row) };
        if pitch == row {
            let len = d.len();
            d.copy_from_slice(&src[..len]);
        } else {
            for (i, s) in src.chunks_exact(row).enumerate() {
                d[i * pitch..i * pitch + row].copy_from_slice(s);
            }
        }
    })?;
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    crate::gpu::stats::count_sync(st.dev.ordinal);
    Ok(())
}

/// Test hook: how downloads run (the benchmark compares them). `chunks`: pageable downloads of
/// 1 MiB or more are cut into this many (1..=32; 0 = by size, the default); `kernel_direct`: the
/// kernel writes page-locked destinations through their device mapping; `poll`: waits poll
/// before they sleep between queries. The defaults: `(0, false, true)`.
#[cfg(feature = "test-hooks")]
pub fn set_knobs(chunks: usize, kernel_direct: bool, poll: bool) {
    CHUNKS.store(chunks.min(MAX_CHUNKS), Ordering::Relaxed);
    KERNEL_DIRECT.store(kernel_direct, Ordering::Relaxed);
    POLL.store(poll, Ordering::Relaxed);
}

/// Test hook: host downloads so far by path: (DMA into page-locked memory, kernel into
/// page-locked memory, pageable through staging).
#[cfg(feature = "test-hooks")]
pub fn paths() -> (u64, u64, u64) {
    let r = |i: usize| PATHS[i].load(Ordering::Relaxed);
    (r(0), r(1), r(2))
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
