//! Device pools another process can map: one VMM allocation per pool (`cuMemCreate` with a
//! shareable handle type), exported as an OS handle (a file descriptor on Linux, an NT handle on
//! Windows) that the publisher passes on, and imported and mapped by a consumer process.
//!
//! Both ends are [`DeviceStorage`]s over a [`Mapping`]: the same write events, consumer fences,
//! downloads and deferred free as the camera pools of `memory.rs`, only the memory differs. The
//! exporter keeps its allocation handle (each export makes a new OS handle from it); an importer
//! releases its handle right after mapping, since the mapping keeps the memory alive, even after
//! the exporter exits.
//!
//! There are no VMM events: across processes the order is the protocol's. The publisher
//! announces a frame only after its write completed; a consumer fences its own work on a slot
//! (`fence_after_stream`) and reports the slot released only once that completed (`reusable`).

use super::context::{Device, Stream};
use super::driver::{self, sys};
use super::memory::DeviceStorage;
use super::CamGpu;
use crate::pool::{Exported, Geometry, OsHandle, Pool};
use crate::status::*;
use std::ffi::c_void;
use std::sync::Arc;

/// The rows of an exportable pool's slots start at multiples of this (the pitch is ours to
/// choose; 512 suits the copies and kernels as the driver's own pitch does).
const ROW_ALIGN: usize = 512;

/// The OS handle type of this platform's exports.
fn handle_type() -> sys::CUmemAllocationHandleType {
    #[cfg(unix)]
    return sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    #[cfg(windows)]
    return sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_WIN32;
}

/// Fails with a named `Unsupported` error where the device cannot share memory through VMM and
/// this platform's handle type.
fn check_support(ordinal: i32) -> Result<()> {
    use sys::CUdevice_attribute as A;
    #[cfg(unix)]
    let (handles, what) = (A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, "file descriptor");
    #[cfg(windows)]
    let (handles, what) = (A::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, "Win32 handle");
    let d = driver::ctx::device_get(ordinal)?;
    if driver::ctx::device_attribute(d, A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)? == 0 {
        return Err(Error::new(ErrorKind::Unsupported, format!("GPU {ordinal} has no virtual memory management: its pools cannot be shared")));
    }
    if driver::ctx::device_attribute(d, handles)? == 0 {
        return Err(Error::new(ErrorKind::Unsupported, format!("GPU {ordinal} cannot export memory as a {what}: its pools cannot be shared")));
    }
    Ok(())
}

/// Windows' `OBJECT_ATTRIBUTES`, which `cuMemCreate` takes for an NT-handle export. Without a
/// security descriptor the handle gets the creator's default access (its own user): the
/// publisher moves it into a consumer with `DuplicateHandle`, which needs no wider access.
#[cfg(windows)]
#[repr(C)]
struct ObjectAttributes {
    length: u32,
    root_directory: *mut c_void,
    object_name: *mut c_void,
    attributes: u32,
    security_descriptor: *mut c_void,
    security_quality_of_service: *mut c_void,
}

/// Pinned device memory on `ordinal`, requesting this platform's shareable handle type.
/// `meta` is the Windows object attributes (null elsewhere), alive while `prop` is used.
fn prop(ordinal: i32, meta: *mut c_void) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: handle_type(),
        location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: ordinal },
        win32HandleMetaData: meta,
        // No compression, no GPUDirect RDMA, no usage hints.
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 { compressionType: 0, gpuDirectRDMACapable: 0, usage: 0, reserved: [0; 4] },
    }
}

/// An address range mapped read/write on one device, and (while we hold it) the physical
/// allocation behind it. Dropping it unmaps, frees the range and releases the handle at once:
/// the storage that owns a mapping hands it to the deferred queue instead, which drops it only
/// after the fences of its last use completed.
pub(crate) struct Mapping {
    dev: Arc<Device>,
    /// The reserved range's start; 0 before it is reserved.
    base: sys::CUdeviceptr,
    bytes: usize,
    mapped: bool,
    /// The exporter's allocation (kept to export it); `None` for an import (released once mapped).
    handle: Option<sys::CUmemGenericAllocationHandle>,
}

impl Mapping {
    /// A new allocation of at least `bytes` (rounded up to the granularity), mapped read/write.
    fn create(dev: &Arc<Device>, bytes: usize) -> Result<Mapping> {
        #[cfg(windows)]
        let mut attrs = ObjectAttributes {
            length: std::mem::size_of::<ObjectAttributes>() as u32,
            root_directory: std::ptr::null_mut(),
            object_name: std::ptr::null_mut(),
            attributes: 0,
            security_descriptor: std::ptr::null_mut(),
            security_quality_of_service: std::ptr::null_mut(),
        };
        #[cfg(windows)]
        let meta = &mut attrs as *mut ObjectAttributes as *mut c_void;
        #[cfg(not(windows))]
        let meta = std::ptr::null_mut();
        let p = prop(dev.ordinal, meta);
        let _g = dev.push()?;
        let gran = driver::vmm::granularity(&p)?;
        let size = bytes.checked_next_multiple_of(gran.max(1)).ok_or_else(|| Error::arg("pool too large"))?;
        let mut m = Mapping { dev: dev.clone(), base: 0, bytes: size, mapped: false, handle: None };
        m.handle = Some(driver::vmm::create(size, &p).map_err(|e| e.during("PINNED, shareable"))?);
        m.map()?;
        Ok(m)
    }

    /// Maps the allocation behind `os_handle` (closed here, whatever the outcome): its first
    /// `bytes`, which the driver refuses where they pass the allocation's end.
    fn import(dev: &Arc<Device>, os_handle: OsHandle, bytes: usize) -> Result<Mapping> {
        let _g = dev.push()?;
        #[cfg(unix)]
        let raw = std::os::fd::AsRawFd::as_raw_fd(&os_handle) as isize as *mut c_void;
        #[cfg(windows)]
        let raw = std::os::windows::io::AsRawHandle::as_raw_handle(&os_handle);
        // SAFETY: an open handle of this platform's type, owned by `os_handle` until it drops
        // below; the driver does not take it over.
        let h = unsafe { driver::vmm::import(raw, handle_type()) };
        drop(os_handle);
        let mut m = Mapping { dev: dev.clone(), base: 0, bytes, mapped: false, handle: Some(h?) };
        m.map()?;
        // The mapping keeps the memory alive; holding the handle would only delay its free.
        if let Some(h) = m.handle.take() {
            // SAFETY: our handle from the import above, released once (taken).
            unsafe { driver::vmm::release(h) }?;
        }
        Ok(m)
    }

    /// Reserves `bytes` of address space and maps the allocation there, read/write for the
    /// device. On failure `drop` undoes what was done.
    fn map(&mut self) -> Result<()> {
        let h = self.handle.expect("an allocation to map");
        let _g = self.dev.push()?;
        self.base = driver::vmm::address_reserve(self.bytes)?;
        // SAFETY: the whole range just reserved, nothing mapped in it; `h` is live (held).
        unsafe { driver::vmm::map(self.base, self.bytes, h) }?;
        self.mapped = true;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: self.dev.ordinal },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range mapped above.
        unsafe { driver::vmm::set_access(self.base, self.bytes, &access) }?;
        Ok(())
    }

    pub(crate) fn base(&self) -> sys::CUdeviceptr {
        self.base
    }
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
    /// Whether this is our own allocation (which can be exported), not an import.
    pub(crate) fn exporter(&self) -> bool {
        self.handle.is_some()
    }

    /// A new OS handle to the allocation, for another process to import; the caller owns it.
    pub(crate) fn export(&self) -> Result<Exported> {
        let Some(h) = self.handle else { return Err(Error::internal("an imported pool cannot be exported again")) };
        let _g = self.dev.push()?;
        #[cfg(unix)]
        let handle = {
            let mut fd: std::ffi::c_int = -1;
            // SAFETY: our live allocation, made with the file-descriptor type; writes one int.
            unsafe { driver::vmm::export(&mut fd as *mut std::ffi::c_int as *mut c_void, h, handle_type()) }?;
            // SAFETY: the driver made this descriptor for us; nothing else owns it.
            unsafe { <OsHandle as std::os::fd::FromRawFd>::from_raw_fd(fd) }
        };
        #[cfg(windows)]
        let handle = {
            let mut nt: *mut c_void = std::ptr::null_mut();
            // SAFETY: our live allocation, made with the Win32 type; writes one HANDLE.
            unsafe { driver::vmm::export(&mut nt as *mut *mut c_void as *mut c_void, h, handle_type()) }?;
            // SAFETY: the driver made this handle for us; nothing else owns it.
            unsafe { <OsHandle as std::os::windows::io::FromRawHandle>::from_raw_handle(nt) }
        };
        Ok(Exported { handle, alloc_bytes: self.bytes as u64 })
    }

    /// Unmaps, frees the address range and releases the allocation (whichever of those were
    /// done); returns whether every step succeeded (a failure is logged). The caller vouches that
    /// no work reads or writes the range any more.
    pub(crate) fn free(&mut self) -> bool {
        let Ok(_g) = self.dev.push().inspect_err(|e| log::error!("VMM free skipped: {e}")) else { return false };
        let mut ok = true;
        if std::mem::take(&mut self.mapped) {
            // SAFETY: our mapping, unmapped once (flag taken); nothing uses it (the caller's word).
            ok &= driver::ok_or_logged(unsafe { driver::vmm::unmap(self.base, self.bytes) });
        }
        if self.base != 0 {
            // SAFETY: our reservation exactly as reserved, now empty, freed once (zeroed below).
            ok &= driver::ok_or_logged(unsafe { driver::vmm::address_free(self.base, self.bytes) });
            self.base = 0;
        }
        if let Some(h) = self.handle.take() {
            // SAFETY: our allocation handle, released once (taken).
            ok &= driver::ok_or_logged(unsafe { driver::vmm::release(h) });
        }
        ok
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        self.free();
    }
}

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
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // used by sharing, Linux only
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
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // used by sharing, Linux only
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
