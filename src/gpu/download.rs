//! Device frame → host memory: the kernel writes device scratch, one DMA (in chunks for large
//! images) moves it into pinned memory, and the rows are copied into the caller's buffer. The
//! per-device staging area (stream, scratch, pinned buffer, events) is allocated on first use and
//! grown only for a bigger request: no allocation per call.

use super::context::{ck, Device, Event, Stream};
use super::deferred;
use super::kernels::kernels;
use super::memory::PinnedBuf;
use crate::convert::{Layout, Plan};
use crate::frame::Frame;
use crate::status::*;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;

/// Device memory owned by the staging area; retired through the deferred queue.
struct DevBuf {
    dev: Arc<Device>,
    ptr: sys::CUdeviceptr,
    len: usize,
}

impl DevBuf {
    fn new(dev: &Arc<Device>, len: usize) -> Result<DevBuf> {
        let _g = dev.push()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: our context is current (guard); writes one address.
        ck("cuMemAlloc(conversion scratch)", unsafe { sys::cuMemAlloc_v2(&mut ptr, len.max(1)) })?;
        super::stats::of(dev.ordinal).device_allocs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(DevBuf { dev: dev.clone(), ptr, len })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // Every use of the scratch ended with a wait on the staging buffer's event (see
        // `to_host`), so nothing on the GPU reads or writes it any more.
        deferred::retire(self.dev.clone(), deferred::Buf::Device(self.ptr), self.len as u64, Vec::new());
    }
}

/// Host downloads of at least this many bytes go in chunks: the copy of chunk k out of pinned
/// memory (on a few threads) overlaps the DMA of the chunks after it.
const CHUNKED_FROM: usize = 1 << 20;
/// 8 chunks on 4 threads with blocking waits: 17.1 GB/s for a 1080p BGRA download on the H100
/// machine; 16 chunks on 8 threads polling the events measured 5.1 GB/s (docs/BENCHMARKS.md).
const CHUNKS: usize = 8;
const COPY_THREADS: usize = 4;

/// One device's host-download path: a stream, device scratch, a pinned buffer, and one event per
/// chunk of the download.
struct Stage {
    stream: Stream,
    scratch: Option<DevBuf>,
    pinned: Option<PinnedBuf>,
    chunk_done: Vec<Event>,
}

static STAGES: Mutex<Vec<Option<Arc<Mutex<Stage>>>>> = Mutex::new(Vec::new());

fn stage(dev: &Arc<Device>) -> Result<Arc<Mutex<Stage>>> {
    let i = dev.ordinal as usize;
    let mut t = STAGES.lock();
    if t.len() <= i {
        t.resize(i + 1, None);
    }
    if let Some(s) = &t[i] {
        return Ok(s.clone());
    }
    let chunk_done = (0..CHUNKS).map(|_| Event::new(dev)).collect::<Result<Vec<_>>>()?;
    let s = Arc::new(Mutex::new(Stage { stream: Stream::new(dev)?, scratch: None, pinned: None, chunk_done }));
    t[i] = Some(s.clone());
    Ok(s)
}

/// Library shutdown: the staging areas go before the contexts are released.
pub(crate) fn shutdown() {
    let stages: Vec<_> = STAGES.lock().drain(..).flatten().collect();
    drop(stages);
}

/// Device frame → host memory: kernel into scratch, one copy into pinned memory, a wait on that
/// copy (the point of the call), then rows into the caller's buffer.
pub(crate) fn to_host(f: &Frame, plan: &Plan, dst: &mut [u8], l: &Layout) -> Result<()> {
    let dev = super::device(f.device())?;
    let k = kernels(&dev)?;
    let packed = plan.layout(0)?;
    let st = stage(&dev)?;
    let mut st = st.lock();
    if st.scratch.as_ref().is_none_or(|b| b.len < packed.total) {
        st.scratch = None;
        st.scratch = Some(DevBuf::new(&dev, packed.total)?);
    }
    if st.pinned.as_ref().is_none_or(|b| b.len() < packed.total) {
        st.pinned = None;
        st.pinned = Some(PinnedBuf::new(&dev, packed.total)?);
    }
    let st = &*st;
    let (scratch, pinned) = (st.scratch.as_ref().expect("made above"), st.pinned.as_ref().expect("made above"));
    let s = st.stream.raw();
    f.storage().wait_on_stream(f.slot(), s as u64)?;
    // SAFETY: the slot is held by `f` and fenced below; the scratch holds `packed.total` bytes
    // of this device and is used by this call only (the stage lock); our stream.
    unsafe { k.launch(&super::convert::params(f, plan, scratch.ptr, &packed), s) }?;
    f.storage().fence_after_stream(f.slot(), s as u64)?;
    let total = packed.total;
    if l.pitch == packed.pitch && total >= CHUNKED_FROM {
        return download_chunked(&dev, st, dst, total);
    }
    {
        let _g = dev.push()?;
        // SAFETY: both buffers hold `packed.total` bytes; the copy is ordered after the kernel on
        // our stream; the pinned buffer is ours under the stage lock.
        ck("cuMemcpyDtoHAsync(conversion)", unsafe { sys::cuMemcpyDtoHAsync_v2(pinned.ptr() as *mut c_void, scratch.ptr, total, s) })?;
    }
    pinned.done().record(&st.stream)?;
    // The host asked for the bytes: this wait is the point of the call (counted).
    pinned.done().synchronize()?;
    // SAFETY: the copy completed (waited above) and the stage lock makes this the only reference.
    let src = unsafe { pinned.as_mut_slice() };
    if l.pitch == packed.pitch {
        dst[..total].copy_from_slice(&src[..total]);
        return Ok(());
    }
    let row = plan.row_bytes();
    for pl in 0..plan.format.planes() {
        for r in 0..plan.out_h as usize {
            let (s0, d0) = (pl * packed.plane + r * packed.pitch, pl * l.plane + r * l.pitch);
            dst[d0..d0 + row].copy_from_slice(&src[s0..s0 + row]);
        }
    }
    Ok(())
}

/// A packed download in chunks: every chunk's DMA is queued at once, each followed by its event;
/// a few threads then copy each chunk out of pinned memory as soon as its event completes, so
/// the host copies overlap the transfer instead of following it.
fn download_chunked(dev: &Arc<Device>, st: &Stage, dst: &mut [u8], total: usize) -> Result<()> {
    let (scratch, pinned) = (st.scratch.as_ref().expect("made by to_host"), st.pinned.as_ref().expect("made by to_host"));
    let chunk = total.div_ceil(CHUNKS).next_multiple_of(4096);
    let n = total.div_ceil(chunk);
    {
        let _g = dev.push()?;
        for k in 0..n {
            let (off, len) = (k * chunk, chunk.min(total - k * chunk));
            // SAFETY: [off, off + len) lies inside both buffers (`total` bytes each); ordered
            // after the kernel on our stream; the pinned buffer is ours under the stage lock.
            ck("cuMemcpyDtoHAsync(conversion chunk)", unsafe {
                sys::cuMemcpyDtoHAsync_v2(pinned.ptr().add(off) as *mut c_void, scratch.ptr + off as u64, len, st.stream.raw())
            })?;
            st.chunk_done[k].record(&st.stream)?;
        }
    }
    pinned.done().record(&st.stream)?;
    let base = pinned.ptr() as usize;
    let mut parts: Vec<Vec<(usize, &mut [u8])>> = (0..COPY_THREADS).map(|_| Vec::new()).collect();
    for (k, d) in dst[..total].chunks_mut(chunk).enumerate() {
        parts[k % COPY_THREADS].push((k, d));
    }
    let copy = |mine: Vec<(usize, &mut [u8])>| -> Result<()> {
        for (k, d) in mine {
            // The host asked for the bytes: waiting for each chunk is the point (counted).
            st.chunk_done[k].synchronize()?;
            // SAFETY: chunk k's DMA completed (waited above); its bytes lie inside the pinned
            // buffer, which nothing else touches under the stage lock.
            let src = unsafe { std::slice::from_raw_parts((base + k * chunk) as *const u8, d.len()) };
            d.copy_from_slice(src);
        }
        Ok(())
    };
    std::thread::scope(|sc| {
        let mut parts = parts.into_iter();
        let first = parts.next().unwrap_or_default();
        let handles: Vec<_> = parts.map(|p| sc.spawn(move || copy(p))).collect();
        let mut r = copy(first);
        for h in handles {
            let x = h.join().unwrap_or_else(|_| Err(Error::internal("a download copy thread panicked")));
            r = r.and(x);
        }
        r
    })
}

