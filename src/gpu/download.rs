//! Device frame → host memory (`nvcam_frame_convert` with a host destination, Python's
//! `to_numpy`, LabVIEW's BGRA download). The kernel writes the device scratch of a staging area
//! ([`super::staging`]), then:
//!
//! - **Page-locked destinations** (`cuMemHostAlloc`, `cuMemHostRegister`, a pinned torch tensor:
//!   the driver knows the whole range as one host allocation): one DMA straight into the
//!   caller's memory, at the caller's pitch. No host copy.
//! - **Pageable destinations**: the DMA goes into the staging area's pinned buffer in chunks;
//!   the library's worker threads ([`crate::workers`], started once, never per call) and the
//!   caller copy each chunk out as soon as its DMA completed, so the copies overlap the
//!   transfer instead of following it.
//!
//! The call returns when the bytes are there: that wait is the point (counted once per call).
//! Waits poll the events first (a transfer takes 0.1–1 ms), one thread at a time, and sleep
//! between queries after [`SPIN`]. The staging events are fences, not blocking-sync events:
//! recording a blocking-sync event costs the stream GPU time per record, and a download records
//! one per chunk (measured: 4K into a Vec 0.74 x a pinned cuMemcpyDtoH with blocking-sync
//! events, 0.89 without; docs/BENCHMARKS.md).

use super::context::{Copy2D, Device, Event, Mem};
use super::kernels::kernels;
use super::launch;
use super::staging::{self, MAX_CHUNKS};
use crate::convert::{Layout, Plan};
use crate::frame::Frame;
use crate::status::*;
use super::driver::{self, sys};
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A page-locked destination: the device address the kernel may write it through, where the
/// driver maps it (asked only when the kernel is to write it).
struct Pinned {
    dev_ptr: Option<u64>,
}

/// Whether `len` bytes at `p` lie inside one page-locked host allocation the driver knows
/// (allocated or registered through CUDA, in any context of this process): the first and the
/// last byte are host memory of the same allocation (buffer id), or of one range that covers
/// both. Anything else, pageable memory included, is `None` (never an error).
fn pinned_dst(dev: &Arc<Device>, p: *mut u8, len: usize, want_dev_ptr: bool) -> Result<Option<Pinned>> {
    use sys::CUpointer_attribute as A;
    if len == 0 {
        return Ok(None);
    }
    let _g = dev.push()?;
    let first = p as u64;
    let Some(last) = first.checked_add(len as u64 - 1) else { return Ok(None) };
    // (memory type, buffer id) of one address; defaults (0, 0) where the driver knows nothing.
    let kind = |a: u64| -> (u32, u64) {
        let (mut ty, mut id) = (0u32, 0u64);
        let mut attrs = [A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A::CU_POINTER_ATTRIBUTE_BUFFER_ID];
        let mut data = [&mut ty as *mut u32 as *mut c_void, &mut id as *mut u64 as *mut c_void];
        // SAFETY: two attributes, each with room for its value (a 32-bit memory type, a 64-bit
        // id); context current (guard). The plural call reports unknown pointers as defaults.
        match unsafe { driver::memory::pointer_attributes(&mut attrs, &mut data, a) } {
            Ok(()) => (ty, id),
            Err(_) => (0, 0),
        }
    };
    let host = sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32;
    let (t0, id0) = kind(first);
    if t0 != host {
        return Ok(None);
    }
    let (t1, id1) = kind(last);
    if t1 != host {
        return Ok(None);
    }
    let same_buffer = id0 != 0 && id0 == id1;
    if !same_buffer {
        let (mut start, mut size) = (0u64, 0usize);
        let mut attrs = [A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, A::CU_POINTER_ATTRIBUTE_RANGE_SIZE];
        let mut data = [&mut start as *mut u64 as *mut c_void, &mut size as *mut usize as *mut c_void];
        // SAFETY: as above (an address and a size).
        let r = unsafe { driver::memory::pointer_attributes(&mut attrs, &mut data, first) };
        let covers = r.is_ok() && start <= first && start.checked_add(size as u64).is_some_and(|end| end > last);
        if !covers {
            return Ok(None);
        }
    }
    let dev_ptr = want_dev_ptr
        .then(|| {
            // Context current (guard). Fails (no mapping in this context) without side effects.
            driver::memory::device_pointer(first).ok().filter(|&d| d != 0)
        })
        .flatten();
    Ok(Some(Pinned { dev_ptr }))
}

/// Waits for `e`: polls up to [`SPIN`], then sleeps between queries. Counted as one host wait.
fn wait(e: &Event) -> Result<()> {
    if POLL.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        while t0.elapsed() < SPIN {
            if e.query()? {
                super::stats::count_sync(e.dev.ordinal);
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
    let dev = super::device(f.device())?;
    let k = kernels(&dev)?;
    let dst = &mut dst[..l.total];
    let row = plan.row_bytes();
    let rows = plan.out_h as usize * plan.format.planes();
    let kernel_direct = KERNEL_DIRECT.load(Ordering::Relaxed);
    let pinned = pinned_dst(&dev, dst.as_mut_ptr(), dst.len(), kernel_direct)?;
    let mut st = staging::take(&dev, packed.total, if pinned.is_some() { 0 } else { packed.total })?;
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
fn pageable(st: &mut staging::Lease, scratch: u64, dst: &mut [u8], pitch: usize, rows: usize, row: usize) -> Result<()> {
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
    let st: &staging::Stage = st;
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
    super::stats::count_sync(st.dev.ordinal);
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
