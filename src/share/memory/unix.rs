//! Linux: a sealed `memfd`, mapped shared.

use crate::pool::OsHandle;
use crate::status::*;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

fn os(what: &str) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {}", std::io::Error::last_os_error()))
}

/// A shared mapping of `len` bytes, unmapped on drop.
pub(super) struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by its storage and unmapped once; its bytes follow the pool's
// lease rules (see the storages' Sync notes).
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: &OwnedFd, len: usize, writable: bool) -> Result<Mapping> {
        let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh shared mapping of a file we hold open; the kernel picks the address.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(os("mmap of a shared pool"));
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
        // SAFETY: our own mapping, unmapped once; no lease outlives the pool that owns it.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// The publisher's shared memory: one sealed memfd.
pub(super) struct Shared {
    fd: OwnedFd,
}

impl Shared {
    /// `len` bytes of zeroed shared memory, and its read-write mapping here.
    pub(super) fn create(len: usize) -> Result<(Shared, Mapping)> {
        // SAFETY: a NUL-terminated name; the fd is owned below.
        let fd = unsafe { libc::memfd_create(c"nvcam-pool".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if fd < 0 {
            return Err(os("memfd_create"));
        }
        // SAFETY: a new fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: sizing our own memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(os("sizing a shared pool"));
        }
        // Attached processes map it: its size may never change under them (a shrink would turn
        // their reads into SIGBUS).
        // SAFETY: fcntl on our own memfd.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL) } != 0 {
            return Err(os("sealing a shared pool"));
        }
        let map = Mapping::new(&fd, len, true)?;
        Ok((Shared { fd }, map))
    }

    /// A new descriptor of the memfd for another process (it maps it read-only: the seals, not
    /// the descriptor, keep it from growing or shrinking).
    pub(super) fn export(&self) -> Result<OsHandle> {
        self.fd.try_clone().map_err(|e| Error::new(ErrorKind::Io, format!("dup of a shared pool: {e}")))
    }
}

/// Maps `len` bytes of another process's memfd read-only, once it is sealed against shrinking
/// and at least that long.
pub(super) fn map_read_only(fd: OsHandle, len: usize) -> Result<Mapping> {
    // SAFETY: fcntl on an fd we own.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
        return Err(Error::new(ErrorKind::Io, "the publisher's pool is not sealed against shrinking: not mapped"));
    }
    // SAFETY: stat is plain data, written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an fd we own.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(os("fstat of a shared pool"));
    }
    if (st.st_size as u64) < len as u64 {
        return Err(Error::new(ErrorKind::Io, "the publisher's pool is smaller than its description: not mapped"));
    }
    Mapping::new(&fd, len, false)
    // the descriptor closes here: the mapping keeps the memory
}
