//! Camera pools other processes can map: a publisher's, in one exportable VMM allocation
//! ([`super::vmm::Mapping`]), and its import in an attached process, both over the same device
//! storage as every camera pool ([`super::memory::DeviceStorage`]).

use super::context::Stream;
use super::memory::DeviceStorage;
use super::vmm::{check_support, Mapping, ROW_ALIGN};
use super::CamGpu;
use crate::pool::{Geometry, OsHandle, Pool};
use crate::status::*;
use std::sync::Arc;

/// What a consumer is told of a publisher's pool, beside its OS handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ImportDesc {
    pub geom: Geometry,
    pub slots: usize,
    /// Bytes from one slot's start to the next's.
    pub slot_bytes: usize,
    /// The allocation's size, as the publisher's export gave it.
    pub alloc_bytes: u64,
}

impl ImportDesc {
    /// Refuses a description whose slots would reach past the allocation or past each other, or
    /// whose sizes overflow: a peer's word is checked before anything is mapped. Returns the
    /// allocation's size as a `usize`.
    fn check(&self) -> Result<usize> {
        let bad = |why: &str| Err(Error::arg(format!("shared pool description refused: {why} ({self:?})")));
        let g = &self.geom;
        if g.width == 0 || g.height == 0 || self.slots == 0 {
            return bad("empty");
        }
        if g.pitch < g.row_bytes() {
            return bad("pitch shorter than a row");
        }
        let Some(image) = g.pitch.checked_mul(g.y_rows() + g.uv_rows()) else { return bad("image size overflows") };
        if self.slot_bytes < image {
            return bad("slot smaller than its image");
        }
        let Ok(alloc) = usize::try_from(self.alloc_bytes) else { return bad("allocation size overflows") };
        match self.slot_bytes.checked_mul(self.slots) {
            Some(n) if n <= alloc => Ok(alloc),
            Some(_) => bad("slots past the allocation's end"),
            None => bad("pool size overflows"),
        }
    }
}

/// A device pool like [`super::memory::new_pool`]'s, in one VMM allocation another process can
/// map ([`crate::pool::Storage::export`]). Fails with `Unsupported` where the device cannot share
/// memory.
pub(crate) fn new_exportable_pool(cam: &CamGpu, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
    let dev = &cam.stream.dev;
    check_support(dev.ordinal)?;
    let row = Geometry::new(geom.width, geom.height, geom.depth).row_bytes();
    let pitch = row.div_ceil(ROW_ALIGN) * ROW_ALIGN;
    let geom = Geometry { pitch, ..geom };
    let slot_bytes = geom.slot_bytes();
    let total = slot_bytes.checked_mul(slots).filter(|&n| n > 0).ok_or_else(|| Error::arg("pool size overflows or is empty"))?;
    let m = Mapping::create(dev, total).map_err(|e| {
        Error::new(e.kind, format!("{} ({slots} shareable slots of {}x{} on GPU {})", e.msg, geom.width, geom.height, dev.ordinal))
    })?;
    let st = DeviceStorage::over_mapping(&cam.stream, geom, slot_bytes, slots, m, true)?;
    Ok(Pool::new(geom, slots, Box::new(st)))
}

/// A publisher's pool in this process: maps the allocation behind `handle` (closed here either
/// way) on GPU `device` after checking `desc`. Its storage is read-only for us: no write events
/// (`wait_ready` returns at once: a frame is announced after its write completed), consumer
/// fences as on any device pool, downloads through a staging buffer of its own stream.
pub(crate) fn import_pool(device: i32, handle: OsHandle, desc: ImportDesc) -> Result<Arc<Pool>> {
    let alloc = desc.check()?;
    let dev = super::device(device)?;
    check_support(device)?;
    let stream = Arc::new(Stream::new(&dev)?);
    let m = Mapping::import(&dev, handle, alloc)?;
    let st = DeviceStorage::over_mapping(&stream, desc.geom, desc.slot_bytes, desc.slots, m, false)?;
    Ok(Pool::new(desc.geom, desc.slots, Box::new(st)))
}

/// The shareable pools as the GPU tests drive them (`test-hooks`): a publisher's pool they
/// write and export, and its import in another process, through the same entries the
/// cross-process sharing uses.
#[cfg(all(feature = "test-hooks", unix))]
pub mod hooks {
    use super::super::context::{Copy2D, Mem};
    use super::*;
    use std::os::fd::OwnedFd;
    use std::result::Result;

    /// A pool of either end, kept with the camera stream a publisher writes on.
    pub struct SharedPool {
        pool: Arc<Pool>,
        cam: Option<CamGpu>,
    }

    /// What a consumer is told beside the handle ([`ImportDesc`] in plain numbers).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Desc {
        pub width: u32,
        pub height: u32,
        pub pitch: usize,
        pub slots: usize,
        pub slot_bytes: usize,
        pub alloc_bytes: u64,
    }

    /// An exportable NV12 pool of `slots` slots on GPU `device` (a camera stream of its own).
    pub fn exportable(device: i32, width: u32, height: u32, slots: usize) -> Result<SharedPool, String> {
        let cam = CamGpu::new(device).map_err(|e| e.to_string())?;
        let pool = new_exportable_pool(&cam, Geometry::new(width, height, crate::pool::Depth::Eight), slots).map_err(|e| e.to_string())?;
        Ok(SharedPool { pool, cam: Some(cam) })
    }

    /// [`import_pool`].
    pub fn import(device: i32, fd: OwnedFd, d: Desc) -> Result<SharedPool, String> {
        let geom = Geometry { width: d.width, height: d.height, pitch: d.pitch, depth: crate::pool::Depth::Eight };
        let desc = ImportDesc { geom, slots: d.slots, slot_bytes: d.slot_bytes, alloc_bytes: d.alloc_bytes };
        let pool = import_pool(device, fd, desc).map_err(|e| e.to_string())?;
        Ok(SharedPool { pool, cam: None })
    }

    impl SharedPool {
        pub fn desc(&self) -> Desc {
            let g = self.pool.geom;
            Desc { width: g.width, height: g.height, pitch: g.pitch, slots: self.pool.slots(), slot_bytes: g.slot_bytes(), alloc_bytes: self.pool.bytes() }
        }
        pub fn exportable(&self) -> bool {
            self.pool.storage().exportable()
        }
        /// A new descriptor for the pool's memory, and the allocation's size.
        pub fn export(&self) -> Result<(OwnedFd, u64), String> {
            let e = self.pool.storage().export().ok_or("not exportable")?.map_err(|e| e.to_string())?;
            Ok((e.handle, e.alloc_bytes))
        }
        /// The device address of slot `i`.
        pub fn slot_addr(&self, i: usize) -> u64 {
            self.pool.storage().slot_addr(i)
        }
        /// Writes packed NV12 into slot `i` as a decoder does (under the slot's lease, on the
        /// camera's stream, then `mark_written`) and waits for it. Publisher only.
        pub fn write(&self, i: usize, packed: &[u8]) -> Result<(), String> {
            let cam = self.cam.as_ref().ok_or("an imported pool is not written here")?;
            let lease = self.pool.acquire_slot(i).ok_or("slot held")?;
            let g = self.pool.geom;
            let row = g.row_bytes();
            if packed.len() != row * (g.y_rows() + g.uv_rows()) {
                return Err("not a packed NV12 image of the pool's size".into());
            }
            let src = packed.as_ptr() as *mut u8;
            // SAFETY: the slot is ours (lease) and inside the pool; `packed` holds both planes at
            // pitch `row` and outlives the copies, which `wait_ready` below waits for.
            unsafe {
                Copy2D { src: Mem::Host(src), src_pitch: row, dst: Mem::Device(lease.addr()), dst_pitch: g.pitch, width_bytes: g.y_row_bytes(), rows: g.y_rows() }
                    .enqueue(&cam.stream)
                    .map_err(|e| e.to_string())?;
                Copy2D {
                    src: Mem::Host(src.add(row * g.y_rows())),
                    src_pitch: row,
                    dst: Mem::Device(lease.addr() + g.uv_offset() as u64),
                    dst_pitch: g.pitch,
                    width_bytes: row,
                    rows: g.uv_rows(),
                }
                .enqueue(&cam.stream)
                .map_err(|e| e.to_string())?;
            }
            let st = self.pool.storage();
            st.mark_written(i).map_err(|e| e.to_string())?;
            st.wait_ready(i).map_err(|e| e.to_string())
        }
        /// `mark_written` on slot `i` (refused for an import).
        pub fn mark_written(&self, i: usize) -> Result<(), String> {
            self.pool.storage().mark_written(i).map_err(|e| e.to_string())
        }
        /// Slot `i` packed, through the storage's download (its staging buffer).
        pub fn read(&self, i: usize) -> Result<Vec<u8>, String> {
            let g = self.pool.geom;
            let st = self.pool.storage();
            st.wait_ready(i).map_err(|e| e.to_string())?;
            let mut out = vec![0u8; g.packed_size(0).ok_or("size")?];
            st.download(i, &g, &mut out, 0).map_err(|e| e.to_string())?;
            Ok(out)
        }
        /// Fences slot `i` with the work enqueued so far on `stream` (a consumer's), as a
        /// consumer's release does; then whether the slot may be handed out again.
        pub fn fence_after_stream(&self, i: usize, stream: u64) -> Result<(), String> {
            self.pool.storage().fence_after_stream(i, stream).map_err(|e| e.to_string())
        }
        pub fn reusable(&self, i: usize) -> bool {
            self.pool.storage().reusable(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Depth;

    /// A peer's description is checked before anything is mapped: a slot range past the
    /// allocation, or sizes that wrap around, would otherwise be an out-of-bounds mapping.
    #[test]
    fn a_description_reaching_past_the_allocation_is_refused_before_mapping() {
        let geom = Geometry { width: 1920, height: 1080, pitch: 2048, depth: Depth::Eight };
        let slot_bytes = geom.slot_bytes();
        let ok = ImportDesc { geom, slots: 4, slot_bytes, alloc_bytes: (4 * slot_bytes) as u64 };
        assert_eq!(ok.check().unwrap(), 4 * slot_bytes);
        let refused = [
            ImportDesc { slots: 5, ..ok },
            ImportDesc { alloc_bytes: ok.alloc_bytes - 1, ..ok },
            ImportDesc { slot_bytes: slot_bytes - 1, ..ok },
            ImportDesc { slot_bytes: usize::MAX / 2 + 1, slots: 2, ..ok },
            ImportDesc { geom: Geometry { pitch: 1918, ..geom }, ..ok },
            ImportDesc { geom: Geometry { pitch: usize::MAX / 4, ..geom }, ..ok },
            ImportDesc { geom: Geometry { width: 0, ..geom }, ..ok },
            ImportDesc { slots: 0, ..ok },
        ];
        for d in refused {
            let e = d.check().unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidArgument, "{d:?}: {e}");
        }
    }
}
