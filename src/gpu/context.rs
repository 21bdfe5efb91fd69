//! The device layer: one CUDA context per device (the primary context, retained through cudarc),
//! the push/pop guard every CUDA call runs under, and thin owners of streams, events and pinned
//! host buffers.
//!
//! Rules kept here so the rest of the GPU code cannot get them wrong:
//! - Every driver call runs inside a [`CtxGuard`] (cuCtxPushCurrent … cuCtxPopCurrent), so the
//!   calling thread's own context (LabVIEW's, PyTorch's, the host's) is what it had before.
//!   cudarc's safe layer binds with cuCtxSetCurrent and never restores; we use it only to load the
//!   driver and to retain and release the primary context, with the caller's context saved and put
//!   back around both.
//! - Streams are non-blocking; events never record timing; nothing here calls cuCtxSynchronize.
//! - A failed call is returned at once with the call's name and CUDA's error name, and logged.

use crate::status::*;
use cudarc::driver::sys;
use cudarc::driver::CudaContext;
use std::marker::PhantomData;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

pub type CuResult = sys::CUresult;

/// The error for a failed driver call: its name and CUDA's error name.
pub fn cuda_error(call: &str, r: CuResult) -> Error {
    use sys::CUresult as R;
    let code = match r {
        R::CUDA_ERROR_OUT_OF_MEMORY => NVCAM_E_OUT_OF_MEMORY,
        R::CUDA_ERROR_NO_DEVICE | R::CUDA_ERROR_INVALID_DEVICE => NVCAM_E_NO_DEVICE,
        _ => NVCAM_E_CUDA,
    };
    Error::new(code, format!("{call} failed: {r:?}"))
}

/// Checks a driver call's result; a failure is logged here, where it happened, and returned.
pub fn ck(call: &str, r: CuResult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        let e = cuda_error(call, r);
        log::warn!("{e}");
        Err(e)
    }
}

/// The calling thread's current context (null if none).
pub fn current_context() -> Result<sys::CUcontext> {
    let mut c: sys::CUcontext = std::ptr::null_mut();
    ck("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut c) })?;
    Ok(c)
}

/// Restores the caller's current context on drop, for the few cudarc calls that bind with
/// cuCtxSetCurrent (retaining and releasing the primary context).
struct RestoreCurrent(sys::CUcontext);

impl RestoreCurrent {
    fn save() -> Result<RestoreCurrent> {
        Ok(RestoreCurrent(current_context()?))
    }
}

impl Drop for RestoreCurrent {
    fn drop(&mut self) {
        let r = unsafe { sys::cuCtxSetCurrent(self.0) };
        if r != sys::CUresult::CUDA_SUCCESS {
            log::error!("cuCtxSetCurrent (restoring the caller's context) failed: {r:?}");
        }
    }
}

/// One GPU as the library uses it: its primary context, retained once for the library's life.
pub struct Device {
    pub ordinal: i32,
    pub cu_device: sys::CUdevice,
    ctx: sys::CUcontext,
    name: String,
    /// cudarc's handle on the retained primary context; released (with the caller's context
    /// restored) when the last `Arc<Device>` goes, after everything that used it.
    cudarc: Option<Arc<CudaContext>>,
    /// Hardware decode sessions open on this device now.
    pub hw_sessions: AtomicU32,
}

// SAFETY: a CUcontext is a handle the driver lets any thread push; the rest is plain data.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    /// Retains device `ordinal`'s primary context. Where the library is first to activate it,
    /// sets blocking-sync scheduling (cameras' threads then sleep instead of spinning when a wait
    /// is unavoidable); a context the host already made active keeps the host's flags.
    pub fn open(ordinal: i32) -> Result<Device> {
        let mut dev: sys::CUdevice = 0;
        ck("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
        let mut flags: std::ffi::c_uint = 0;
        let mut active: std::ffi::c_int = 0;
        ck("cuDevicePrimaryCtxGetState", unsafe { sys::cuDevicePrimaryCtxGetState(dev, &mut flags, &mut active) })?;
        let want = sys::CUctx_flags::CU_CTX_SCHED_BLOCKING_SYNC as u32;
        let mask = sys::CUctx_flags::CU_CTX_SCHED_MASK as u32;
        if active == 0 {
            ck("cuDevicePrimaryCtxSetFlags", unsafe { sys::cuDevicePrimaryCtxSetFlags_v2(dev, want) })?;
            log::info!("GPU {ordinal}: primary context set to blocking-sync scheduling");
        } else if flags & mask != want {
            log::info!(
                "GPU {ordinal}: primary context already active with flags 0x{flags:x} (the host's); keeping them (blocking-sync not set)"
            );
        }
        let cudarc = {
            let _restore = RestoreCurrent::save()?;
            CudaContext::new(ordinal as usize).map_err(|e| {
                let e = cuda_error("cuDevicePrimaryCtxRetain (CudaContext::new)", e.0);
                log::warn!("{e}");
                e
            })?
        };
        // cudarc's event tracking records and waits on events for every use of its slices, and
        // its first stream would synchronize the context: off, we order our own work.
        unsafe { cudarc.disable_event_tracking() };
        let ctx = cudarc.cu_ctx();
        let mut buf = [0 as std::ffi::c_char; 128];
        let name = if unsafe { sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev) } == sys::CUresult::CUDA_SUCCESS {
            unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
        } else {
            "?".into()
        };
        log::info!("GPU {ordinal} ({name}): primary context retained");
        Ok(Device { ordinal, cu_device: dev, ctx, name, cudarc: Some(cudarc), hw_sessions: AtomicU32::new(0) })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn cu_ctx(&self) -> sys::CUcontext {
        self.ctx
    }

    /// Makes this device's context current on the calling thread until the guard drops.
    pub fn push(&self) -> Result<CtxGuard> {
        ck("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(self.ctx) })?;
        Ok(CtxGuard { _not_send: PhantomData })
    }

    /// (free, total) bytes of device memory.
    pub fn mem_info(&self) -> Result<(u64, u64)> {
        let _g = self.push()?;
        let (mut free, mut total) = (0usize, 0usize);
        ck("cuMemGetInfo", unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
        Ok((free as u64, total as u64))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if let Some(c) = self.cudarc.take() {
            // cudarc's drop binds with cuCtxSetCurrent and releases the primary context.
            match RestoreCurrent::save() {
                Ok(_restore) => drop(c),
                Err(_) => std::mem::forget(c), // cannot restore: leak the retain rather than clobber
            }
            log::info!("GPU {}: primary context released", self.ordinal);
        }
    }
}

/// Pops the context pushed by [`Device::push`] when dropped; bound to its thread.
pub struct CtxGuard {
    _not_send: PhantomData<*mut ()>,
}

impl Drop for CtxGuard {
    fn drop(&mut self) {
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        let r = unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        if r != sys::CUresult::CUDA_SUCCESS {
            log::error!("cuCtxPopCurrent failed: {r:?}");
        }
    }
}

/// A non-blocking stream (it never serializes with the legacy NULL stream or other cameras').
pub struct Stream {
    pub dev: Arc<Device>,
    raw: sys::CUstream,
}

unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    pub fn new(dev: &Arc<Device>) -> Result<Stream> {
        let _g = dev.push()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        ck("cuStreamCreate(NON_BLOCKING)", unsafe {
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        })?;
        Ok(Stream { dev: dev.clone(), raw: s })
    }
    pub fn raw(&self) -> sys::CUstream {
        self.raw
    }
    /// Teardown only (close, shutdown): waits for this stream's work, never the device's.
    pub fn synchronize(&self) -> Result<()> {
        let _g = self.dev.push()?;
        super::stats::count_sync(self.dev.ordinal);
        ck("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // cuStreamDestroy returns at once; the driver frees the stream after its work is done.
        if let Ok(_g) = self.dev.push() {
            let _ = ck("cuStreamDestroy", unsafe { sys::cuStreamDestroy_v2(self.raw) });
        }
    }
}

/// An event without timing. Blocking-sync, so the rare wait on one sleeps instead of spinning.
pub struct Event {
    pub dev: Arc<Device>,
    raw: sys::CUevent,
}

unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    pub fn new(dev: &Arc<Device>) -> Result<Event> {
        let _g = dev.push()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32 | sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC as u32;
        ck("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, flags) })?;
        Ok(Event { dev: dev.clone(), raw: e })
    }
    pub fn raw(&self) -> sys::CUevent {
        self.raw
    }
    pub fn record(&self, s: &Stream) -> Result<()> {
        let _g = self.dev.push()?;
        ck("cuEventRecord", unsafe { sys::cuEventRecord(self.raw, s.raw) })
    }
    /// Whether the work recorded last has completed (an event never recorded has). Never waits.
    pub fn query(&self) -> Result<bool> {
        let _g = self.dev.push()?;
        match unsafe { sys::cuEventQuery(self.raw) } {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            r => ck("cuEventQuery", r).map(|_| false),
        }
    }
    /// Waits for the recorded work (counted). Only where a wait is the point: teardown, a
    /// download the host asked for, or a frame handed out before its copy finished.
    pub fn synchronize(&self) -> Result<()> {
        let _g = self.dev.push()?;
        super::stats::count_sync(self.dev.ordinal);
        ck("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.raw) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // Safe while a record is pending: the driver releases the event once it completes.
        if let Ok(_g) = self.dev.push() {
            let _ = ck("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(self.raw) });
        }
    }
}

/// A 2D copy with every field written (a zeroed CUDA_MEMCPY2D is an invalid enum value).
pub struct Copy2D {
    pub src: Mem,
    pub src_pitch: usize,
    pub dst: Mem,
    pub dst_pitch: usize,
    pub width_bytes: usize,
    pub rows: usize,
}

/// One end of a copy.
#[derive(Clone, Copy)]
pub enum Mem {
    Device(sys::CUdeviceptr),
    Host(*mut u8),
}

impl Copy2D {
    /// Enqueues the copy on `s` (the caller holds a context guard or not; this pushes its own).
    pub fn enqueue(&self, s: &Stream) -> Result<()> {
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
        ck("cuMemcpy2DAsync", unsafe { sys::cuMemcpy2DAsync_v2(&c, s.raw) })
    }
}

/// Pinned host memory (page-locked, *not* write-combined: the CPU reads downloads back) with the
/// event that fences its last copy. Dropping it hands both to the deferred-free queue.
pub struct PinnedBuf {
    pub dev: Arc<Device>,
    ptr: *mut u8,
    len: usize,
    /// Recorded after each copy that reads or writes the buffer.
    pub done: Option<Event>,
}

unsafe impl Send for PinnedBuf {}
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    pub fn new(dev: &Arc<Device>, len: usize) -> Result<PinnedBuf> {
        let done = Event::new(dev)?;
        let _g = dev.push()?;
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        ck("cuMemHostAlloc(PORTABLE)", unsafe { sys::cuMemHostAlloc(&mut p, len.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) })?;
        super::stats::count_pinned_alloc(dev.ordinal);
        Ok(PinnedBuf { dev: dev.clone(), ptr: p as *mut u8, len, done: Some(done) })
    }
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn done(&self) -> &Event {
        self.done.as_ref().expect("event lives until drop")
    }
    /// # Safety
    /// No GPU copy may be using the buffer (`done` completed), and no other reference to the
    /// bytes may exist.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.ptr, self.len)
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        let fences = self.done.take().into_iter().collect();
        super::deferred::retire(self.dev.clone(), super::deferred::Buf::Host(self.ptr), self.len as u64, fences);
    }
}
