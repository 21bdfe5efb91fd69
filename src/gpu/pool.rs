//! Device memory for a camera's pool: one pitched allocation per resolution holding every slot,
//! a last-use event per slot, and a pinned staging buffer for host downloads.
//!
//! A slot is handed out again only when no frame holds it (the pool's lease rules) *and* its
//! event has completed (`reusable`). Dropping the storage (the camera's last reference and the
//! last clone gone) retires the allocation to the deferred-free queue with the slot events as its
//! fences; nothing is freed here.

use super::context::{ck, Copy2D, Device, Event, Mem, PinnedBuf, Stream};
use super::{deferred, stats};
use crate::pool::{copy_planes, Geometry, Lease, MemoryKind, Storage};
use crate::status::*;
use cudarc::driver::sys;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The device storage a GPU decoder writes `lease` into, checked to live on `stream`'s GPU and
/// (with `size`) to have the picture's size: the one check every GPU decoder makes before a copy.
pub fn target<'a>(lease: &'a Lease, stream: &Stream, size: Option<(u32, u32)>) -> Result<&'a DeviceStorage> {
    let g = lease.pool().geom;
    if size.is_some_and(|wh| wh != (g.width, g.height)) {
        return Err(Error::internal("picture and slot sizes differ"));
    }
    let st = lease
        .pool()
        .storage()
        .as_any()
        .downcast_ref::<DeviceStorage>()
        .ok_or_else(|| Error::internal("a GPU decoder needs a device pool"))?;
    if st.dev().ordinal != stream.dev.ordinal {
        return Err(Error::internal("pool and decoder on different GPUs"));
    }
    Ok(st)
}

pub struct DeviceStorage {
    stream: Arc<Stream>,
    base: sys::CUdeviceptr,
    geom: Geometry,
    slot_bytes: usize,
    slots: usize,
    /// Recorded on the camera's stream after each write into the slot.
    events: Vec<Event>,
    /// Host downloads, one at a time per pool; allocated on the first.
    staging: Mutex<Option<PinnedBuf>>,
}

impl DeviceStorage {
    /// Allocates `slots` NV12 slots of `width`×`height` on the stream's device (once per
    /// resolution). The pitch is the driver's choice.
    pub fn new(stream: &Arc<Stream>, width: u32, height: u32, slots: usize) -> Result<DeviceStorage> {
        let dev = &stream.dev;
        let shape = Geometry::nv12(width, height);
        let rows = shape.y_rows() + shape.uv_rows();
        let events = (0..slots).map(|_| Event::new(dev)).collect::<Result<Vec<_>>>()?;
        let (mut base, mut pitch) = (0 as sys::CUdeviceptr, 0usize);
        {
            let _g = dev.push()?;
            ck("cuMemAllocPitch", unsafe { sys::cuMemAllocPitch_v2(&mut base, &mut pitch, shape.row_bytes(), rows * slots, 16) })
                .map_err(|e| Error::new(e.code, format!("{} ({slots} slots of {width}x{height} NV12 on GPU {})", e.msg, dev.ordinal)))?;
        }
        let geom = Geometry { width, height, pitch };
        let slot_bytes = pitch * rows;
        let c = stats::of(dev.ordinal);
        c.device_allocs.fetch_add(1, Ordering::Relaxed);
        c.bytes_in_pools.fetch_add((slot_bytes * slots) as i64, Ordering::Relaxed);
        log::debug!("GPU {}: pool of {slots} x {width}x{height} NV12, pitch {pitch}, {} bytes", dev.ordinal, slot_bytes * slots);
        Ok(DeviceStorage { stream: stream.clone(), base, geom, slot_bytes, slots, events, staging: Mutex::new(None) })
    }

    pub fn geom(&self) -> Geometry {
        self.geom
    }

    pub fn dev(&self) -> &Arc<Device> {
        &self.stream.dev
    }

    /// Marks slot `i` written by work just enqueued on `s` (the camera's stream).
    pub fn record_write(&self, i: usize, s: &Stream) -> Result<()> {
        self.events[i].record(s)
    }
}

impl Drop for DeviceStorage {
    fn drop(&mut self) {
        let dev = self.stream.dev.clone();
        let bytes = (self.slot_bytes * self.slots) as u64;
        stats::of(dev.ordinal).bytes_in_pools.fetch_sub(bytes as i64, Ordering::Relaxed);
        let fences = std::mem::take(&mut self.events);
        deferred::retire(dev, deferred::Buf::Device(self.base), bytes, fences);
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
        (self.slot_bytes * self.slots) as u64
    }
    fn reusable(&self, i: usize) -> bool {
        // A failing query means a broken context; reuse cannot make that worse.
        self.events[i].query().unwrap_or(true)
    }
    fn wait_ready(&self, i: usize) -> Result<()> {
        let e = &self.events[i];
        if !e.query()? {
            stats::of(self.device()).ready_waits.fetch_add(1, Ordering::Relaxed);
            let _g = e.dev.push()?;
            ck("cuEventSynchronize(frame ready)", unsafe { sys::cuEventSynchronize(e.raw()) })?;
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
        // The copy is ordered after the slot's write on the same stream.
        Copy2D {
            src: Mem::Device(src),
            src_pitch: self.geom.pitch,
            dst: Mem::Host(buf.ptr()),
            dst_pitch: packed.pitch,
            width_bytes: geom.width as usize,
            rows: geom.y_rows(),
        }
        .enqueue(&self.stream)?;
        Copy2D {
            src: Mem::Device(src + self.geom.uv_offset() as u64),
            src_pitch: self.geom.pitch,
            dst: Mem::Host(unsafe { buf.ptr().add(packed.uv_offset()) }),
            dst_pitch: packed.pitch,
            width_bytes: geom.row_bytes(),
            rows: geom.uv_rows(),
        }
        .enqueue(&self.stream)?;
        buf.done().record(&self.stream)?;
        // The host asked for the bytes: this wait is the point of the call (counted).
        buf.done().synchronize()?;
        let bytes = unsafe { buf.as_mut_slice() };
        copy_planes(&bytes[..need], &packed, dst, dst_pitch);
        Ok(())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
