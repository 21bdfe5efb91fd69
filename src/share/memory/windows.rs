//! Windows: a pagefile-backed file mapping (no name: it is reached only through handles), mapped
//! as a view. Its size is fixed when it is created, so a view can never outlast the memory behind
//! it; the handle other processes get can map it for reading only.

use super::super::win32::*;
use crate::pool::OsHandle;
use crate::status::*;
use std::os::windows::io::{AsRawHandle, FromRawHandle};

fn os(what: &str) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {}", last_error()))
}

/// A view of a file mapping, unmapped on drop.
pub(super) struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the view is owned by its storage and unmapped once; its bytes follow the pool's lease
// rules (see the storages' Sync notes).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(section: &OsHandle, len: usize, access: u32) -> Result<Mapping> {
        // SAFETY: a view of the whole of `len` bytes of a section we hold a handle to; the system
        // picks the address and refuses a length past the section's end.
        let p = unsafe { MapViewOfFile(section.as_raw_handle(), access, 0, 0, len) };
        if p.is_null() {
            return Err(os("mapping a shared pool (smaller than its description, or not mappable)"));
        }
        Ok(Mapping { base: p as *mut u8, len })
    }
    pub(super) fn base(&self) -> *mut u8 {
        self.base
    }
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own view, unmapped once; no lease outlives the pool that owns it.
        unsafe { UnmapViewOfFile(self.base as *const std::ffi::c_void) };
    }
}

/// The publisher's shared memory: one file mapping backed by the paging file.
pub(super) struct Shared {
    section: OsHandle,
}

impl Shared {
    /// `len` bytes of zeroed shared memory, and its read-write view here.
    pub(super) fn create(len: usize) -> Result<(Shared, Mapping)> {
        let n = len as u64;
        // SAFETY: a new unnamed section backed by the paging file (INVALID_HANDLE_VALUE), with
        // the default security (the creator's); the handle is owned below.
        let h = unsafe { CreateFileMappingW(INVALID_HANDLE_VALUE, std::ptr::null(), PAGE_READWRITE, (n >> 32) as u32, n as u32, std::ptr::null()) };
        if h.is_null() {
            return Err(os("CreateFileMappingW"));
        }
        // SAFETY: a new handle we own.
        let section = unsafe { OsHandle::from_raw_handle(h) };
        let map = Mapping::new(&section, len, FILE_MAP_READ | FILE_MAP_WRITE)?;
        Ok((Shared { section }, map))
    }

    /// A new handle to the section that can map it for reading only (the endpoint duplicates it
    /// into the attached process): whatever that process does, it cannot write the frames.
    pub(super) fn export(&self) -> Result<OsHandle> {
        let mut out: HANDLE = std::ptr::null_mut();
        // SAFETY: duplicating our own section handle within this process, with less access.
        let ok = unsafe { DuplicateHandle(GetCurrentProcess(), self.section.as_raw_handle(), GetCurrentProcess(), &mut out, FILE_MAP_READ, 0, 0) };
        if ok == 0 {
            return Err(os("duplicating a shared pool's handle"));
        }
        // SAFETY: a new handle we own.
        Ok(unsafe { OsHandle::from_raw_handle(out) })
    }
}

/// Maps `len` bytes of another process's section read-only (refused by the system when the
/// section is smaller); the handle is closed here, the view keeps the memory.
pub(super) fn map_read_only(section: OsHandle, len: usize) -> Result<Mapping> {
    Mapping::new(&section, len, FILE_MAP_READ)
}
