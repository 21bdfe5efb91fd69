//! GPU-side memory the library owns: a camera pool's device storage (one pitched allocation per
//! resolution, a last-use event per slot, a pinned staging buffer for host downloads) and pinned
//! host buffers. Neither frees anything itself: on drop each hands its memory to the
//! deferred-free queue with the events that fence its last use.
//!
//! A slot is handed out again only when no frame holds it (the pool's lease rules) *and* its
//! event has completed (`reusable`).

use super::context::{Copy2D, Device, Event, Mem, Stream};
use super::vmm::Mapping;
use super::{deferred, stats, CamGpu};
use crate::pool::{copy_planes, Depth, Exported, Geometry, Lease, MemoryKind, Pool, Storage};
use crate::status::*;
use super::driver::{self, sys};
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A device pool of `slots` slots for `geom`'s size on the camera's GPU (the driver picks the
/// pitch). Every GPU decoder's pools come from here.
pub(crate) fn new_pool(cam: &CamGpu, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
    let st = DeviceStorage::new(&cam.stream, geom.width, geom.height, geom.depth, slots)?;
    Ok(Pool::new(st.geom, slots, Box::new(st)))
}

/// The device address of `lease`'s slot, after the one check every GPU decoder makes before a
/// copy: the slot is device memory on `stream`'s GPU and (with `size`) has the picture's size.
pub(crate) fn device_slot(lease: &Lease, stream: &Stream, size: Option<(u32, u32)>) -> Result<u64> {
    let g = lease.pool().geom;
    if size.is_some_and(|wh| wh != (g.width, g.height)) {
        return Err(Error::internal("picture and slot sizes differ"));
    }
    let st = lease.pool().storage();
    if st.kind() != MemoryKind::Device {
        return Err(Error::internal("a GPU decoder needs a device pool"));
    }
    if st.device() != stream.dev.ordinal {
        return Err(Error::internal("pool and decoder on different GPUs"));
    }
    Ok(lease.addr())
}

/// How a device storage's memory was allocated, and so how the deferred queue frees it.
enum Memory {
    /// `cuMemAllocPitch`: freed with `cuMemFree`.
    Pitched(sys::CUdeviceptr),
    /// A VMM mapping, exportable or imported from another process: unmapped and released.
    Mapped(Mapping),
}

pub(crate) struct DeviceStorage {
    /// The camera's stream: every write into a slot is enqueued on it (an imported pool's own
    /// stream, for its downloads only).
    stream: Arc<Stream>,
    base: sys::CUdeviceptr,
    /// `None` once handed to the deferred queue (drop).
    memory: Option<Memory>,
    /// The bytes this storage holds on the device (counted in the stats while it lives).
    held: usize,
    /// False for a pool mapped from another process: its publisher writes it, never we.
    writer: bool,
    geom: Geometry,
    slot_bytes: usize,
    slots: usize,
    /// Recorded on the camera's stream after each write into the slot.
    events: Vec<Event>,
    /// Recorded on consumers' streams (`nvcam_frame_release_after_stream`, conversions on a
    /// caller's stream): the slot is reused only once their work on it completed.
    consumers: Vec<Event>,
    /// Serializes the chaining of consumer fences (wait on the previous, record the new), and
    /// holds the id of the stream each slot's consumer fence was last recorded on.
    fence_lock: Mutex<Vec<Option<u64>>>,
    /// Host downloads, one at a time per pool; allocated on the first.
    staging: Mutex<Option<PinnedBuf>>,
}

impl DeviceStorage {
    /// Allocates `slots` NV12 slots of `width`×`height` on the stream's device (once per
    /// resolution). The pitch is the driver's choice.
    fn new(stream: &Arc<Stream>, width: u32, height: u32, depth: Depth, slots: usize) -> Result<DeviceStorage> {
        let dev = &stream.dev;
        let shape = Geometry::new(width, height, depth);
        let rows = shape.y_rows() + shape.uv_rows();
        // The events first: a failure then leaves no allocation behind.
        let fences = Fences::new(dev, slots)?;
        let (base, pitch) = {
            let _g = dev.push()?;
            driver::memory::alloc_pitch(shape.row_bytes(), rows * slots, 16)
                .map_err(Error::from)
                .map_err(|e| Error::new(e.kind, format!("{} ({slots} slots of {width}x{height} NV12 on GPU {})", e.msg, dev.ordinal)))?
        };
        let geom = Geometry { width, height, pitch, depth };
        let slot_bytes = pitch * rows;
        Ok(Self::assemble(stream, geom, slot_bytes, slots, fences, Memory::Pitched(base), slot_bytes * slots, true))
    }

    /// A storage over a VMM mapping (`vmm.rs`): `slots` slots of `slot_bytes` at `geom`, inside
    /// the mapping (the caller checked). `writer` is false for a pool imported from another
    /// process.
    pub(crate) fn over_mapping(stream: &Arc<Stream>, geom: Geometry, slot_bytes: usize, slots: usize, m: Mapping, writer: bool) -> Result<DeviceStorage> {
        debug_assert!(slot_bytes.checked_mul(slots).is_some_and(|n| n <= m.bytes()));
        // A failure here drops the mapping at once: no work has used it.
        let fences = Fences::new(&stream.dev, slots)?;
        let held = m.bytes();
        Ok(Self::assemble(stream, geom, slot_bytes, slots, fences, Memory::Mapped(m), held, writer))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(stream: &Arc<Stream>, geom: Geometry, slot_bytes: usize, slots: usize, fences: Fences, memory: Memory, held: usize, writer: bool) -> DeviceStorage {
        let ordinal = stream.dev.ordinal;
        let base = match &memory {
            Memory::Pitched(p) => *p,
            Memory::Mapped(m) => m.base(),
        };
        let c = stats::of(ordinal);
        c.device_allocs.fetch_add(1, Ordering::Relaxed);
        c.bytes_in_pools.fetch_add(held as i64, Ordering::Relaxed);
        let how = match (&memory, writer) {
            (Memory::Pitched(_), _) => "",
            (Memory::Mapped(_), true) => " (shareable)",
            (Memory::Mapped(_), false) => " (mapped from another process)",
        };
        log::debug!("GPU {ordinal}: pool of {slots} x {}x{} NV12{how}, pitch {}, {held} bytes", geom.width, geom.height, geom.pitch);
        DeviceStorage {
            stream: stream.clone(),
            base,
            memory: Some(memory),
            held,
            writer,
            geom,
            slot_bytes,
            slots,
            events: fences.events,
            consumers: fences.consumers,
            fence_lock: Mutex::new(vec![None; slots]),
            staging: Mutex::new(None),
        }
    }
}

/// A storage's per-slot events: written (recorded on its stream) and consumed (on callers').
struct Fences {
    events: Vec<Event>,
    consumers: Vec<Event>,
}

impl Fences {
    fn new(dev: &Arc<Device>, slots: usize) -> Result<Fences> {
        let events = (0..slots).map(|_| Event::new(dev)).collect::<Result<Vec<_>>>()?;
        let consumers = (0..slots).map(|_| Event::fence(dev)).collect::<Result<Vec<_>>>()?;
        Ok(Fences { events, consumers })
    }
}

impl Drop for DeviceStorage {
    fn drop(&mut self) {
        let dev = self.stream.dev.clone();
        let bytes = self.held as u64;
        stats::of(dev.ordinal).bytes_in_pools.fetch_sub(bytes as i64, Ordering::Relaxed);
        let mut fences = std::mem::take(&mut self.events);
        fences.append(&mut self.consumers);
        let buf = match self.memory.take() {
            Some(Memory::Pitched(p)) => deferred::Buf::Device(p),
            Some(Memory::Mapped(m)) => deferred::Buf::Mapped(m),
            None => return,
        };
        deferred::retire(dev, buf, bytes, fences);
        // The staging buffer retires itself with its own fence.
        drop(self.staging.lock().take());
    }
}

impl Storage for DeviceStorage {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Device
    }
    fn device(&self) -> i32 {
        self.stream.dev.ordinal
    }
    fn slot_addr(&self, i: usize) -> u64 {
        assert!(i < self.slots);
        self.base + (i * self.slot_bytes) as u64
    }
    fn bytes(&self) -> u64 {
        self.held as u64
    }
    fn reusable(&self, i: usize) -> bool {
        // A failing query means a broken context; reuse cannot make that worse.
        self.events[i].query().unwrap_or(true) && self.consumers[i].query().unwrap_or(true)
    }
    fn wait_on_stream(&self, i: usize, stream: u64) -> Result<()> {
        let e = &self.events[i];
        let _g = e.dev.push()?;
        // A frame's ready event is recorded once, when its slot is written, and a slot a handle
        // references is never written again: once complete it stays complete while the caller
        // holds the frame, so the stream needs no wait (one command less on it per call).
        if e.query()? {
            return Ok(());
        }
        // SAFETY: our event, context current (guard); the stream is the caller's handle of this
        // device's primary context (the export's documented contract).
        Ok(unsafe { driver::stream::wait_event(stream as sys::CUstream, e.raw()) }.map_err(|e| e.during("frame ready"))?)
    }
    fn fence_after_stream(&self, i: usize, stream: u64) -> Result<()> {
        let e = &self.consumers[i];
        let mut last = self.fence_lock.lock();
        let _g = e.dev.push()?;
        let s = stream as sys::CUstream;
        let id = super::context::stream_id(s);
        // A pending fence recorded on this same stream is covered by the new record (stream
        // order); one from another stream (or of unknown origin) must be waited for first, so
        // that the one event per slot covers both consumers (no allocation). The id, not the
        // handle, decides: a destroyed stream's handle may come back for a new stream.
        if (id.is_none() || last[i] != id) && !e.query()? {
            // SAFETY: our event, context current (guard); the caller's stream (contract).
            unsafe { driver::stream::wait_event(s, e.raw()) }.map_err(|e| e.during("previous consumer"))?;
        }
        // SAFETY: our event and the caller's stream of the same context (contract), current.
        unsafe { driver::stream::event_record(e.raw(), s) }.map_err(|e| e.during("consumer fence"))?;
        last[i] = id;
        Ok(())
    }
    fn mark_written(&self, i: usize) -> Result<()> {
        if !self.writer {
            return Err(Error::internal("a pool mapped from another process is written by its publisher only"));
        }
        self.events[i].record(&self.stream)
    }
    fn wait_ready(&self, i: usize) -> Result<()> {
        // A mapped pool's frame is announced only after its write completed (in the publisher's
        // process, whose events we cannot see).
        if !self.writer {
            return Ok(());
        }
        let e = &self.events[i];
        if !e.query()? {
            stats::of(self.device()).ready_waits.fetch_add(1, Ordering::Relaxed);
            let _g = e.dev.push()?;
            // SAFETY: our event, context current (guard).
            unsafe { driver::stream::event_synchronize(e.raw()) }.map_err(|e| e.during("frame ready"))?;
        }
        Ok(())
    }
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        let packed = Geometry { pitch: geom.row_bytes(), ..*geom };
        let need = packed.slot_bytes();
        let mut st = self.staging.lock();
        if st.as_ref().is_none_or(|b| b.len() < need) {
            *st = Some(PinnedBuf::new(&self.stream.dev, need)?);
        }
        let buf = st.as_ref().expect("allocated above");
        let src = self.slot_addr(i);
        // SAFETY: the slot is ours and held by the caller's frame; the staging buffer holds
        // `need` bytes (Y then UV, packed) and is only reused after the wait below. The copies
        // are ordered after the slot's write on the same stream.
        unsafe {
            Copy2D { src: Mem::Device(src), src_pitch: self.geom.pitch, dst: Mem::Host(buf.ptr()), dst_pitch: packed.pitch, width_bytes: geom.y_row_bytes(), rows: geom.y_rows() }
                .enqueue(&self.stream)?;
            Copy2D {
                src: Mem::Device(src + self.geom.uv_offset() as u64),
                src_pitch: self.geom.pitch,
                dst: Mem::Host(buf.ptr().add(packed.uv_offset())),
                dst_pitch: packed.pitch,
                width_bytes: geom.row_bytes(),
                rows: geom.uv_rows(),
            }
            .enqueue(&self.stream)?;
        }
        buf.done().record(&self.stream)?;
        // The host asked for the bytes: this wait is the point of the call (counted).
        buf.done().synchronize()?;
        // SAFETY: the copies into the buffer completed (waited above); the lock on `staging`
        // makes this the only reference.
        let bytes = unsafe { buf.as_mut_slice() };
        copy_planes(&bytes[..need], &packed, dst, dst_pitch);
        Ok(())
    }
    fn exportable(&self) -> bool {
        self.writer && matches!(&self.memory, Some(Memory::Mapped(m)) if m.exporter())
    }
    fn export(&self) -> Option<Result<Exported>> {
        match &self.memory {
            Some(Memory::Mapped(m)) if self.writer && m.exporter() => Some(m.export()),
            _ => None,
        }
    }
}

/// Pinned host memory (page-locked, *not* write-combined: the CPU reads downloads back) with the
/// event that fences its last copy. Dropping it hands both to the deferred-free queue.
pub(crate) struct PinnedBuf {
    dev: Arc<Device>,
    ptr: *mut u8,
    len: usize,
    /// Recorded after each copy that reads or writes the buffer.
    done: Option<Event>,
}

// SAFETY: the buffer is owned by this value; the driver's pinned memory may be used from any
// thread.
unsafe impl Send for PinnedBuf {}
// SAFETY: shared access hands out only the pointer and the event; the bytes are reached through
// the unsafe `as_mut_slice`, whose contract makes the caller exclusive.
unsafe impl Sync for PinnedBuf {}

impl PinnedBuf {
    pub(crate) fn new(dev: &Arc<Device>, len: usize) -> Result<PinnedBuf> {
        let done = Event::new(dev)?;
        let _g = dev.push()?;
        let p = driver::memory::host_alloc_portable(len.max(1)).map_err(|e| e.during("PORTABLE"))?;
        stats::count_pinned_alloc(dev.ordinal);
        Ok(PinnedBuf { dev: dev.clone(), ptr: p as *mut u8, len, done: Some(done) })
    }
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }
    pub(crate) fn len(&self) -> usize {
        self.len
    }
    pub(crate) fn done(&self) -> &Event {
        self.done.as_ref().expect("event lives until drop")
    }
    /// # Safety
    /// No GPU copy may be using the buffer (`done` completed), and no other reference to the
    /// bytes may exist.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: `len` bytes at `ptr` are ours; exclusivity is the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PinnedBuf {
    fn drop(&mut self) {
        let fences = self.done.take().into_iter().collect();
        deferred::retire(self.dev.clone(), deferred::Buf::Host(self.ptr), self.len as u64, fences);
    }
}

/// A page-locked destination: the device address the kernel may write it through, where the
/// driver maps it (asked only when the kernel is to write it).
pub(crate) struct PageLocked {
    pub dev_ptr: Option<u64>,
}

/// Whether `len` bytes at `p` lie inside one page-locked host allocation the driver knows
/// (allocated or registered through CUDA, in any context of this process): the first and the
/// last byte are host memory of the same allocation (buffer id), or of one range that covers
/// both. Anything else, pageable memory included, is `None` (never an error).
pub(crate) fn page_locked(dev: &Arc<Device>, p: *mut u8, len: usize, want_dev_ptr: bool) -> Result<Option<PageLocked>> {
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
    Ok(Some(PageLocked { dev_ptr }))
}
