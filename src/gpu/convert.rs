//! Conversions on the GPU: the embedded kernels (`kernels/nvcam_kernels.fatbin`, loaded once per
//! device with cuModuleLoadData), launched on the caller's stream for device destinations (after
//! a cuStreamWaitEvent on the frame's ready event: no host wait) or on a per-device staging
//! stream for host destinations (kernel → device scratch → pinned buffer → the caller's memory,
//! returning when the bytes are there). Scratch and pinned buffers are per device, allocated on
//! first use and grown only for a bigger request: no allocation per call. Host frames convert on
//! the CPU ([`crate::convert::cpu`]), the same arithmetic.

use super::context::{ck, Device, Event, Stream};
use super::deferred;
use super::memory::PinnedBuf;
use crate::convert::cpu::{self, Nv12};
use crate::convert::params::KernelParams;
use crate::convert::{Layout, Plan, Spec};
use crate::frame::Frame;
use crate::pool::MemoryKind;
use crate::status::*;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::Arc;

/// The fatbin, aligned for the driver (it reads the header as 64-bit words).
#[repr(C, align(64))]
struct Aligned<T: ?Sized>(T);

static FATBIN: &Aligned<[u8]> = &Aligned(*include_bytes!("../../kernels/nvcam_kernels.fatbin"));

/// Threads per block: 32 wide (one warp per row segment, coalesced), 8 rows.
const BLOCK: (u32, u32) = (32, 8);

/// The kernels of one device's primary context.
pub(crate) struct Kernels {
    dev: Arc<Device>,
    module: sys::CUmodule,
    convert: sys::CUfunction,
    /// The test hooks' slow consumer (the kernel ships in the fatbin either way).
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    spin_copy: sys::CUfunction,
}

// SAFETY: module and function handles are driver handles usable from any thread with their
// context pushed.
unsafe impl Send for Kernels {}
// SAFETY: launching is thread-safe in the driver; the handles are never mutated.
unsafe impl Sync for Kernels {}

impl Kernels {
    fn load(dev: &Arc<Device>) -> Result<Kernels> {
        let _g = dev.push()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: our context is current (guard); the image is a complete fatbin, 64-byte aligned
        // and 'static.
        ck("cuModuleLoadData(nvcam kernels)", unsafe { sys::cuModuleLoadData(&mut module, FATBIN.0.as_ptr() as *const c_void) })
            .map_err(|e| Error::new(e.code, format!("{} (the driver may be older than the kernels need: R450 for SASS up to sm_90, R520 to JIT newer GPUs)", e.msg)))?;
        let get = |name: &std::ffi::CStr| -> Result<sys::CUfunction> {
            let mut f: sys::CUfunction = std::ptr::null_mut();
            // SAFETY: the module just loaded, context current; writes one handle.
            ck("cuModuleGetFunction", unsafe { sys::cuModuleGetFunction(&mut f, module, name.as_ptr()) })?;
            Ok(f)
        };
        let k = Kernels { dev: dev.clone(), module, convert: get(c"nvcam_convert")?, spin_copy: get(c"nvcam_test_spin_copy")? };
        log::info!("GPU {}: conversion kernels loaded ({} bytes of fatbin)", dev.ordinal, FATBIN.0.len());
        Ok(k)
    }

    /// Enqueues one conversion on `stream`.
    ///
    /// # Safety
    /// The addresses in `p` are device memory of this context, valid for the planned reads and
    /// writes until the work completes; `stream` is a stream of this context (or 0).
    unsafe fn launch(&self, p: &KernelParams, stream: sys::CUstream) -> Result<()> {
        let _g = self.dev.push()?;
        let mut block = *p;
        let mut args = [&mut block as *mut KernelParams as *mut c_void];
        let gx = (p.out_w as u32).div_ceil(BLOCK.0);
        let gy = (p.out_h as u32).div_ceil(BLOCK.1);
        // SAFETY: the kernel takes one parameter of exactly `KernelParams`'s layout (asserted on
        // both sides); the driver copies it before returning. Memory validity: the contract.
        ck("cuLaunchKernel(nvcam_convert)", unsafe {
            sys::cuLaunchKernel(self.convert, gx, gy, 1, BLOCK.0, BLOCK.1, 1, 0, stream, args.as_mut_ptr(), std::ptr::null_mut())
        })
    }
}

impl Drop for Kernels {
    fn drop(&mut self) {
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our module, unloaded once at shutdown, after every frame was released.
            let _ = ck("cuModuleUnload", unsafe { sys::cuModuleUnload(self.module) });
        }
    }
}

static KERNELS: Mutex<Vec<Option<Arc<Kernels>>>> = Mutex::new(Vec::new());

/// The device's kernels, loaded on first use.
pub(crate) fn kernels(dev: &Arc<Device>) -> Result<Arc<Kernels>> {
    let i = dev.ordinal as usize;
    let mut t = KERNELS.lock();
    if t.len() <= i {
        t.resize(i + 1, None);
    }
    if let Some(k) = &t[i] {
        return Ok(k.clone());
    }
    let k = Arc::new(Kernels::load(dev)?);
    t[i] = Some(k.clone());
    Ok(k)
}

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

/// Library shutdown: the staging areas and modules go before the contexts are released.
pub(crate) fn shutdown() {
    let stages: Vec<_> = STAGES.lock().drain(..).flatten().collect();
    drop(stages);
    let kernels: Vec<_> = KERNELS.lock().drain(..).flatten().collect();
    drop(kernels);
}

/// Where a conversion writes.
pub(crate) enum Dst<'a> {
    /// Host memory the caller owns (any: pageable or pinned).
    Host(&'a mut [u8]),
    /// Device memory: `len` bytes at `ptr` on GPU `device`.
    Device { ptr: u64, len: usize, device: i32 },
}

/// Converts `f` as `spec` says into `dst` (rows `dst_pitch` apart, 0 = packed). Device
/// destinations are written by work enqueued on `stream` (a stream of the device's primary
/// context; 0 = its legacy default stream), which first waits for the frame; the frame's slot is
/// then fenced by that work, so releasing the handle at once is safe. Host destinations hold the
/// bytes when this returns.
pub(crate) fn convert_frame(f: &Frame, spec: &Spec, dst: Dst, dst_pitch: usize, stream: u64) -> Result<()> {
    let g = *f.geom();
    let plan = Plan::new(spec, g.width, g.height, f.color_resolved())?;
    let l = plan.layout(dst_pitch)?;
    let need = |have: usize| -> Result<()> {
        if have < l.total {
            return Err(Error::new(
                NVCAM_E_BUFFER_TOO_SMALL,
                format!("destination holds {have} bytes, a {}x{} {:?} image at pitch {} needs {}", plan.out_w, plan.out_h, plan.format, l.pitch, l.total),
            ));
        }
        Ok(())
    };
    match (f.memory(), dst) {
        (MemoryKind::Host, Dst::Host(buf)) => {
            need(buf.len())?;
            let bytes = f.host_bytes().ok_or_else(|| Error::internal("host frame without host bytes"))?;
            cpu::convert(&plan, &Nv12 { bytes, pitch: g.pitch, uv_offset: g.uv_offset() }, buf, &l)
        }
        (MemoryKind::Host, Dst::Device { .. }) => Err(Error::new(
            NVCAM_E_UNSUPPORTED,
            "this frame is in host memory (a CPU camera): convert into host memory, or open the camera on a GPU",
        )),
        (MemoryKind::Device, Dst::Device { ptr, len, device }) => {
            need(len)?;
            if device != f.device() {
                return Err(Error::new(
                    NVCAM_E_UNSUPPORTED,
                    format!("the frame is on GPU {}, dst on GPU {device}: cross-device conversion is not supported yet", f.device()),
                ));
            }
            let a = plan.format.align();
            if ptr % a as u64 != 0 || l.pitch % a != 0 {
                return Err(Error::arg(format!("{:?} needs dst and dst_pitch aligned to {a} bytes", plan.format)));
            }
            let dev = super::device(device)?;
            check_device_range(&dev, ptr, l.total)?;
            let k = kernels(&dev)?;
            let p = params(f, &plan, ptr, &l);
            f.storage().wait_on_stream(f.slot(), stream)?;
            // SAFETY: the frame's slot stays valid (we hold the frame, and fence it below before
            // any release); dst was checked to be device memory of this device holding
            // `l.total` bytes; the stream is the caller's of this context (the export's contract).
            unsafe { k.launch(&p, stream as sys::CUstream) }?;
            f.storage().fence_after_stream(f.slot(), stream)
        }
        (MemoryKind::Device, Dst::Host(buf)) => {
            need(buf.len())?;
            to_host(f, &plan, buf, &l)
        }
    }
}

fn params(f: &Frame, plan: &Plan, dst: u64, l: &Layout) -> KernelParams {
    KernelParams::new(plan, f.y_addr(), f.uv_addr(), f.geom().pitch, dst, l.pitch, l.plane)
}

/// Device frame → host memory: kernel into scratch, one copy into pinned memory, a wait on that
/// copy (the point of the call), then rows into the caller's buffer.
fn to_host(f: &Frame, plan: &Plan, dst: &mut [u8], l: &Layout) -> Result<()> {
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
    unsafe { k.launch(&params(f, plan, scratch.ptr, &packed), s) }?;
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

/// Refuses a device destination that is not device memory of `dev`, or whose allocation ends
/// before `need` bytes from `ptr` (the driver knows each allocation's range).
fn check_device_range(dev: &Arc<Device>, ptr: u64, need: usize) -> Result<()> {
    let _g = dev.push()?;
    let attr = |a: sys::CUpointer_attribute, out: *mut c_void, what: &str| -> Result<()> {
        // SAFETY: `out` points to a value of the size this attribute writes (chosen below).
        let r = unsafe { sys::cuPointerGetAttribute(out, a, ptr) };
        ck("cuPointerGetAttribute", r).map_err(|_| Error::arg(format!("dst 0x{ptr:x} is not CUDA device memory ({what} unknown)")))
    };
    use sys::CUpointer_attribute as A;
    let mut mem_type: u32 = 0;
    let mut ordinal: i32 = -1;
    let mut start: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    attr(A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, &mut mem_type as *mut u32 as *mut c_void, "memory type")?;
    attr(A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &mut ordinal as *mut i32 as *mut c_void, "device")?;
    attr(A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, &mut start as *mut sys::CUdeviceptr as *mut c_void, "allocation")?;
    attr(A::CU_POINTER_ATTRIBUTE_RANGE_SIZE, &mut size as *mut usize as *mut c_void, "allocation size")?;
    if mem_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        return Err(Error::arg(format!("dst 0x{ptr:x} is not device memory (memory type {mem_type})")));
    }
    if ordinal != dev.ordinal {
        return Err(Error::arg(format!("dst 0x{ptr:x} is on GPU {ordinal}, not GPU {}", dev.ordinal)));
    }
    let end = start.checked_add(size as u64);
    let want = ptr.checked_add(need as u64);
    if !matches!((end, want), (Some(e), Some(w)) if w <= e) {
        return Err(Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("dst's allocation ends {} bytes after dst; the conversion writes {need}", (start + size as u64).saturating_sub(ptr))));
    }
    Ok(())
}

/// Test hook: a kernel on `stream` that spins `cycles` clocks, then copies `n` bytes from `src`
/// to `dst` (device addresses on GPU `device`): the slow consumer of the stream hand-off tests.
#[cfg(feature = "test-hooks")]
pub fn spin_copy(device: i32, src: u64, dst: u64, n: u64, cycles: i64, stream: u64) -> std::result::Result<(), String> {
    let dev = super::device(device).map_err(|e| e.to_string())?;
    let k = kernels(&dev).map_err(|e| e.to_string())?;
    let _g = dev.push().map_err(|e| e.to_string())?;
    let (mut s, mut d, mut n, mut c) = (src, dst, n, cycles);
    let mut args = [&mut s as *mut u64 as *mut c_void, &mut d as *mut u64 as *mut c_void, &mut n as *mut u64 as *mut c_void, &mut c as *mut i64 as *mut c_void];
    // SAFETY: the kernel's four parameters are (u8*, u8*, u64, i64), given in order; the
    // caller (a test) owns both buffers of at least `n` bytes and the stream.
    ck("cuLaunchKernel(spin_copy)", unsafe {
        sys::cuLaunchKernel(k.spin_copy, 64, 1, 1, 256, 1, 1, 0, stream as sys::CUstream, args.as_mut_ptr(), std::ptr::null_mut())
    })
    .map_err(|e| e.to_string())
}

/// The bytes `convert_frame` needs for `f` with `spec` at `dst_pitch`.
pub(crate) fn required_size(f: &Frame, spec: &Spec, dst_pitch: usize) -> Result<usize> {
    let g = f.geom();
    Ok(Plan::new(spec, g.width, g.height, f.color_resolved())?.layout(dst_pitch)?.total)
}

/// `frames` converted into one tensor: item `i` at byte offset `i * stride` (0 = the size of one
/// item), each item packed as `convert_frame` writes it at pitch 0: planar formats give NCHW,
/// 8-bit formats NHWC. Every frame must convert to the same output size, and for a device
/// destination be a device frame of that GPU: all of that is checked before anything is written.
/// Device destinations: one launch per frame on `stream` (each after its frame's ready event),
/// no host wait. Host destinations: the bytes are there on return. Returns the item size.
pub(crate) fn convert_batch(frames: &[Arc<Frame>], spec: &Spec, dst: Dst, stride: usize, stream: u64) -> Result<usize> {
    let mut item: Option<((u32, u32), usize)> = None;
    for (i, f) in frames.iter().enumerate() {
        let g = f.geom();
        let at = |e: Error| Error { msg: format!("frames[{i}]: {}", e.msg), ..e };
        let plan = Plan::new(spec, g.width, g.height, f.color_resolved()).map_err(at)?;
        let total = plan.layout(0).map_err(at)?.total;
        let dims = (plan.out_w, plan.out_h);
        match item {
            None => item = Some((dims, total)),
            Some((d, _)) if d != dims => {
                return Err(Error::arg(format!(
                    "frames[{i}] converts to {}x{}, frames[0] to {}x{}: set the spec's width and height so every item has one size",
                    dims.0, dims.1, d.0, d.1
                )))
            }
            Some(_) => {}
        }
        if let Dst::Device { device, .. } = &dst {
            if f.memory() != MemoryKind::Device || f.device() != *device {
                return Err(Error::new(
                    NVCAM_E_UNSUPPORTED,
                    format!("frames[{i}] is not a device frame of GPU {device}: a device batch takes frames of its own GPU only"),
                ));
            }
        }
    }
    let Some((_, total)) = item else { return Err(Error::arg("an empty batch")) };
    let stride = if stride == 0 { total } else { stride };
    if stride < total {
        return Err(Error::arg(format!("dst_item_stride {stride} is less than one item's {total} bytes")));
    }
    let need = stride
        .checked_mul(frames.len() - 1)
        .and_then(|x| x.checked_add(total))
        .ok_or_else(|| Error::arg(format!("dst_item_stride {stride} x {} items overflows", frames.len())))?;
    let small = |have: usize| Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("destination holds {have} bytes, {} items {stride} bytes apart need {need}", frames.len()));
    match dst {
        Dst::Host(buf) => {
            if buf.len() < need {
                return Err(small(buf.len()));
            }
            for (i, f) in frames.iter().enumerate() {
                let at = i * stride;
                convert_frame(f, spec, Dst::Host(&mut buf[at..at + total]), 0, stream)
                    .map_err(|e| Error { msg: format!("frames[{i}]: {}", e.msg), ..e })?;
            }
        }
        Dst::Device { ptr, len, device } => {
            if len < need {
                return Err(small(len));
            }
            let a = spec.format.align();
            if stride % a != 0 {
                return Err(Error::arg(format!("{:?} needs dst_item_stride aligned to {a} bytes", spec.format)));
            }
            let dev = super::device(device)?;
            check_device_range(&dev, ptr, need)?;
            for (i, f) in frames.iter().enumerate() {
                let at = ptr + (i * stride) as u64;
                convert_frame(f, spec, Dst::Device { ptr: at, len: total, device }, 0, stream)
                    .map_err(|e| Error { msg: format!("frames[{i}]: {}", e.msg), ..e })?;
            }
        }
    }
    Ok(total)
}
