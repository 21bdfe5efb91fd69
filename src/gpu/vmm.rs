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

use super::context::Device;
use super::driver::{self, sys};
use crate::pool::{Exported, OsHandle};
use crate::status::*;
use std::ffi::c_void;
use std::sync::Arc;

/// The rows of an exportable pool's slots start at multiples of this (the pitch is ours to
/// choose; 512 suits the copies and kernels as the driver's own pitch does).
pub(super) const ROW_ALIGN: usize = 512;

/// The OS handle type of this platform's exports.
fn handle_type() -> sys::CUmemAllocationHandleType {
    #[cfg(unix)]
    return sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    #[cfg(windows)]
    return sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_WIN32;
}

/// Fails with a named `Unsupported` error where the device cannot share memory through VMM and
/// this platform's handle type.
pub(super) fn check_support(ordinal: i32) -> Result<()> {
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
    pub(super) fn create(dev: &Arc<Device>, bytes: usize) -> Result<Mapping> {
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
    pub(super) fn import(dev: &Arc<Device>, os_handle: OsHandle, bytes: usize) -> Result<Mapping> {
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
