//! The device layer: one CUDA context per device (the primary context, retained through cudarc),
//! the push/pop guard every CUDA call runs under, and thin owners of streams, events and pinned
//! host buffers.
//!
//! Rules kept here so the rest of the GPU code cannot get them wrong:
//! - Every driver call runs inside a [`CtxGuard`] (cuCtxPushCurrent … cuCtxPopCurrent), so the
//!   calling thread's own context (LabVIEW's, PyTorch's, the host's) is what it had before.
//!   cudarc's safe layer binds with cuCtxSetCurrent and never restores; we use it only to load the
//!   driver and to retain and release the primary context ([`driver::ctx::Primary`]), with the
//!   caller's context saved and put back around both.
//! - Streams are non-blocking; events never record timing; nothing here calls cuCtxSynchronize.
//! - Driver calls go through [`super::driver`]: a failure comes back with the call's name and
//!   CUDA's error name, and is logged where it becomes the library's error.

use super::driver::{self, sys};
use crate::status::*;
use std::marker::PhantomData;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// Restores the caller's current context on drop, for the few cudarc calls that bind with
/// cuCtxSetCurrent (retaining and releasing the primary context).
struct RestoreCurrent(sys::CUcontext);

impl RestoreCurrent {
    fn save() -> Result<RestoreCurrent> {
        Ok(RestoreCurrent(driver::ctx::get_current()?))
    }
}

impl Drop for RestoreCurrent {
    fn drop(&mut self) {
        // SAFETY: restores the handle (or null) this thread had current when we saved it.
        if let Err(e) = unsafe { driver::ctx::set_current(self.0) } {
            log::error!("cuCtxSetCurrent (restoring the caller's context) failed: {}", e.name());
        }
    }
}

/// One GPU as the library uses it: its primary context, retained once for the library's life.
pub(crate) struct Device {
    pub ordinal: i32,
    ctx: sys::CUcontext,
    /// The retained primary context; released (with the caller's context restored) when the
    /// last `Arc<Device>` goes, after everything that used it.
    primary: Option<driver::ctx::Primary>,
    /// Hardware decode sessions open on this device now.
    pub hw_sessions: AtomicU32,
}

// SAFETY: a CUcontext is a handle the driver lets any thread push; the rest is plain data.
unsafe impl Send for Device {}
// SAFETY: as for Send; every use of the context goes through the driver's thread-safe calls.
unsafe impl Sync for Device {}

impl Device {
    /// Retains device `ordinal`'s primary context. Where the library is first to activate it,
    /// sets blocking-sync scheduling (cameras' threads then sleep instead of spinning when a wait
    /// is unavoidable); a context the host already made active keeps the host's flags.
    pub(crate) fn open(ordinal: i32) -> Result<Device> {
        // `ordinal` was checked against the device count.
        let dev = driver::ctx::device_get(ordinal)?;
        let (flags, active) = driver::ctx::primary_ctx_state(dev)?;
        let want = match crate::switches::Switch::CtxSched.var().as_deref() {
            Ok("yield") => sys::CUctx_flags::CU_CTX_SCHED_YIELD,
            Ok("spin") => sys::CUctx_flags::CU_CTX_SCHED_SPIN,
            Ok("auto") => sys::CUctx_flags::CU_CTX_SCHED_AUTO,
            _ => sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC,
        } as u32;
        let mask = sys::CUctx_flags::CU_CTX_SCHED_MASK as u32;
        if !active {
            driver::ctx::primary_ctx_set_flags(dev, want)?;
            log::info!("GPU {ordinal}: primary context set to scheduling flags 0x{want:x} (4: blocking-sync)");
        } else if flags & mask != want {
            log::info!(
                "GPU {ordinal}: primary context already active with flags 0x{flags:x} (the host's); keeping them (blocking-sync not set)"
            );
        }
        let primary = {
            let _restore = RestoreCurrent::save()?;
            driver::ctx::Primary::retain(ordinal as usize)?
        };
        let ctx = primary.raw();
        let name = driver::ctx::device_name(dev).unwrap_or_else(|_| "?".into());
        log::info!("GPU {ordinal} ({name}): primary context retained");
        Ok(Device { ordinal, ctx, primary: Some(primary), hw_sessions: AtomicU32::new(0) })
    }

    pub(crate) fn cu_ctx(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Makes this device's context current on the calling thread until the guard drops. Where
    /// it is current already (an outer guard of ours, or a host such as PyTorch working in the
    /// same primary context) nothing is pushed or popped: the calls under the guard run in this
    /// context either way, and the thread's context stack is left as it was. This keeps the
    /// per-call cost of the hot exports (a conversion enqueued per frame) to one push at most,
    /// however many helpers under it take their own guard.
    pub(crate) fn push(&self) -> Result<CtxGuard> {
        if driver::ctx::get_current()? == self.ctx {
            return Ok(CtxGuard { pushed: false, _not_send: PhantomData });
        }
        // SAFETY: our retained context, valid while `self` lives; the guard pops it.
        unsafe { driver::ctx::push_current(self.ctx) }?;
        Ok(CtxGuard { pushed: true, _not_send: PhantomData })
    }

    /// (free, total) bytes of device memory.
    pub(crate) fn mem_info(&self) -> Result<(u64, u64)> {
        let _g = self.push()?;
        let (free, total) = driver::memory::get_info()?;
        Ok((free as u64, total as u64))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Some(c) = self.primary.take() {
            // cudarc's drop binds with cuCtxSetCurrent and releases the primary context.
            match RestoreCurrent::save() {
                Ok(_restore) => drop(c),
                Err(_) => std::mem::forget(c), // cannot restore: leak the retain rather than clobber
            }
            log::info!("GPU {}: primary context released", self.ordinal);
        }
    }
}

/// Pops the context pushed by [`Device::push`] (if it pushed) when dropped; bound to its thread.
pub(crate) struct CtxGuard {
    /// Whether [`Device::push`] pushed (false: the context was current already; nothing to pop).
    pushed: bool,
    _not_send: PhantomData<*mut ()>,
}

impl Drop for CtxGuard {
    fn drop(&mut self) {
        if !self.pushed {
            return;
        }
        // SAFETY: pops the context this guard's push made current on this thread (the guard is
        // not Send, so this is that thread).
        if let Err(e) = unsafe { driver::ctx::pop_current() } {
            log::error!("{e}");
        }
    }
}

/// The driver's unique id of a caller's stream (`cuStreamGetId`, drivers of CUDA 12.0 and
/// later; `None` before them or on an error). Unlike the handle, an id is never given to another
/// stream, so "the same id" means "the same stream, in its order".
pub(crate) fn stream_id(stream: sys::CUstream) -> Option<u64> {
    if super::probe::driver_version() < 12000 {
        return None;
    }
    // SAFETY: the caller's stream of the current context (the caller's contract).
    unsafe { driver::stream::id(stream) }.ok()
}

/// A non-blocking stream (it never serializes with the legacy NULL stream or other cameras').
pub(crate) struct Stream {
    pub dev: Arc<Device>,
    raw: sys::CUstream,
}

// SAFETY: a CUstream is a driver handle usable from any thread with its context pushed.
unsafe impl Send for Stream {}
// SAFETY: as for Send; enqueueing on one stream from several threads is allowed by the driver.
unsafe impl Sync for Stream {}

impl Stream {
    pub(crate) fn new(dev: &Arc<Device>) -> Result<Stream> {
        let _g = dev.push()?;
        let s = driver::stream::create(sys::CUstream_flags::CU_STREAM_NON_BLOCKING).map_err(|e| e.during("NON_BLOCKING"))?;
        Ok(Stream { dev: dev.clone(), raw: s })
    }
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.raw
    }
    /// Teardown only (close, shutdown): waits for this stream's work, never the device's.
    pub(crate) fn synchronize(&self) -> Result<()> {
        let _g = self.dev.push()?;
        super::stats::count_sync(self.dev.ordinal);
        // SAFETY: our stream, context current (guard).
        Ok(unsafe { driver::stream::synchronize(self.raw) }?)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // cuStreamDestroy returns at once; the driver frees the stream after its work is done.
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our stream, destroyed once; nothing of ours enqueues on it any more.
            driver::ok_or_logged(unsafe { driver::stream::destroy(self.raw) });
        }
    }
}

/// An event without timing. Blocking-sync, so the rare wait on one sleeps instead of spinning.
pub(crate) struct Event {
    pub dev: Arc<Device>,
    raw: sys::CUevent,
    /// Made with `CU_EVENT_BLOCKING_SYNC` ([`Event::new`]), or a fence ([`Event::fence`]).
    blocking: bool,
}

/// How long a host wait on a fence event sleeps between queries.
const FENCE_POLL: std::time::Duration = std::time::Duration::from_micros(50);

// SAFETY: a CUevent is a driver handle usable from any thread with its context pushed.
unsafe impl Send for Event {}
// SAFETY: as for Send; record/query/synchronize are thread-safe driver calls.
unsafe impl Sync for Event {}

impl Event {
    /// An event a host thread may wait on ([`Event::synchronize`]): the waiting thread sleeps
    /// instead of spinning a core (`CU_EVENT_BLOCKING_SYNC`).
    pub(crate) fn new(dev: &Arc<Device>) -> Result<Event> {
        Self::make(dev, true)
    }
    /// An event recorded on a stream per call (a consumer fence on the caller's stream, a
    /// download's staging events) that streams wait on and the host queries or polls. No
    /// blocking sync: recording a blocking-sync event costs the stream GPU time, recording this
    /// one nothing measurable (an H100, after each 1080p conversion kernel: 0.82 x a copy's
    /// speed fell to 0.63 for BGRA8 and 0.84 to 0.42 for planar f32 with blocking-sync records;
    /// docs/BENCHMARKS.md). A host wait on it polls and sleeps ([`Event::synchronize`]).
    pub(crate) fn fence(dev: &Arc<Device>) -> Result<Event> {
        Self::make(dev, false)
    }
    fn make(dev: &Arc<Device>, blocking: bool) -> Result<Event> {
        let mut flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        if blocking {
            flags |= sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
        }
        let _g = dev.push()?;
        let e = driver::stream::event_create(flags)?;
        Ok(Event { dev: dev.clone(), raw: e, blocking })
    }
    pub(crate) fn raw(&self) -> sys::CUevent {
        self.raw
    }
    pub(crate) fn record(&self, s: &Stream) -> Result<()> {
        let _g = self.dev.push()?;
        // SAFETY: our event and a live stream of the same context, which is current (guard).
        Ok(unsafe { driver::stream::event_record(self.raw, s.raw) }?)
    }
    /// Whether the work recorded last has completed (an event never recorded has). Never waits.
    pub(crate) fn query(&self) -> Result<bool> {
        let _g = self.dev.push()?;
        // SAFETY: our event, context current (guard).
        Ok(unsafe { driver::stream::event_query(self.raw) }?)
    }
    /// Waits for the recorded work (counted). Only where a wait is the point: teardown, a
    /// download the host asked for, or a frame handed out before its copy finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        super::stats::count_sync(self.dev.ordinal);
        self.wait()
    }
    /// [`Event::synchronize`] without the count (a wait the caller counted already). A fence
    /// event is polled with short sleeps: cuEventSynchronize would spin a core on it.
    pub(crate) fn wait(&self) -> Result<()> {
        let _g = self.dev.push()?;
        if !self.blocking {
            while !self.query()? {
                std::thread::sleep(FENCE_POLL);
            }
            return Ok(());
        }
        // SAFETY: our event, context current (guard).
        Ok(unsafe { driver::stream::event_synchronize(self.raw) }?)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // Safe while a record is pending: the driver releases the event once it completes.
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our event, destroyed once.
            driver::ok_or_logged(unsafe { driver::stream::event_destroy(self.raw) });
        }
    }
}

/// A 2D copy with every field written (a zeroed CUDA_MEMCPY2D is an invalid enum value).
pub(crate) struct Copy2D {
    pub src: Mem,
    pub src_pitch: usize,
    pub dst: Mem,
    pub dst_pitch: usize,
    pub width_bytes: usize,
    pub rows: usize,
}

/// One end of a copy.
#[derive(Clone, Copy)]
pub(crate) enum Mem {
    Device(sys::CUdeviceptr),
    Host(*mut u8),
}

impl Copy2D {
    /// Enqueues the copy on `s` (the caller holds a context guard or not; this pushes its own).
    ///
    /// # Safety
    /// Both ends are valid for `rows` rows of `width_bytes` at their pitches (device addresses in
    /// `s`'s context, or host memory the driver can read or write), and stay so until the copy has
    /// run on `s`: the caller records an event after it that fences any reuse or free.
    pub(crate) unsafe fn enqueue(&self, s: &Stream) -> Result<()> {
        use sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
        let (src_t, src_host, src_dev) = match self.src {
            Mem::Device(p) => (CU_MEMORYTYPE_DEVICE, std::ptr::null(), p),
            Mem::Host(p) => (CU_MEMORYTYPE_HOST, p as *const std::ffi::c_void, 0),
        };
        let (dst_t, dst_host, dst_dev) = match self.dst {
            Mem::Device(p) => (CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), p),
            Mem::Host(p) => (CU_MEMORYTYPE_HOST, p as *mut std::ffi::c_void, 0),
        };
        let c = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_t,
            srcHost: src_host,
            srcDevice: src_dev,
            srcArray: std::ptr::null_mut(),
            srcPitch: self.src_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_t,
            dstHost: dst_host,
            dstDevice: dst_dev,
            dstArray: std::ptr::null_mut(),
            dstPitch: self.dst_pitch,
            WidthInBytes: self.width_bytes,
            Height: self.rows,
        };
        let _g = s.dev.push()?;
        // SAFETY: every field of `c` is written; both ends are valid (this function's contract).
        Ok(unsafe { driver::memory::copy_2d_async(&c, s.raw) }?)
    }
}
