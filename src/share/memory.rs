//! Host pools another process can map: a sealed `memfd` shared with every attached process
//! (the publisher writes it, the others map it read-only), and the mapping an attached process
//! makes of one.
//!
//! The lifetime rules are the pool's: a slot that any lease (in any process, through the
//! publisher's holds) references is never written. A mapping keeps the memory alive after the
//! other side closed its descriptor or died, so a frame an attached process holds stays readable
//! whatever happens to its publisher.

use crate::pool::{copy_planes, Exported, Geometry, MemoryKind, Pool, Storage};
use crate::status::*;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

fn os(what: &str) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {}", std::io::Error::last_os_error()))
}

/// A shared mapping of `len` bytes of `fd`, unmapped on drop.
struct Mapping {
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
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once; no lease outlives the pool that owns it.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// The publisher's host pool: one sealed memfd, mapped read-write.
struct MemfdStorage {
    fd: OwnedFd,
    map: Mapping,
    slot_bytes: usize,
    slots: usize,
}

impl MemfdStorage {
    fn slot(&self, i: usize) -> *mut u8 {
        assert!(i < self.slots);
        // SAFETY: i < slots: inside the mapping of slots * slot_bytes.
        unsafe { self.map.base.add(i * self.slot_bytes) }
    }
}

impl Storage for MemfdStorage {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Host
    }
    fn device(&self) -> i32 {
        -1
    }
    fn slot_addr(&self, i: usize) -> u64 {
        self.slot(i) as u64
    }
    fn bytes(&self) -> u64 {
        self.map.len as u64
    }
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        // SAFETY: slot i is inside the mapping, read under a frame that keeps it from being written.
        let src = unsafe { std::slice::from_raw_parts(self.slot(i), self.slot_bytes) };
        copy_planes(src, geom, dst, dst_pitch);
        Ok(())
    }
    fn exportable(&self) -> bool {
        true
    }
    fn export(&self) -> Option<Result<Exported>> {
        Some(self.fd.try_clone().map_err(|e| Error::new(ErrorKind::Io, format!("dup of a shared pool: {e}"))).map(|handle| Exported { handle, alloc_bytes: self.map.len as u64 }))
    }
}

/// A host pool of `slots` slots for `geom` that attached processes can map.
pub(crate) fn host_pool(geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
    let slot_bytes = geom.slot_bytes();
    let len = slot_bytes.checked_mul(slots).filter(|&n| n > 0).ok_or_else(|| Error::arg("pool too large"))?;
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
    // Attached processes map it: its size may never change under them (a shrink would turn their
    // reads into SIGBUS).
    // SAFETY: fcntl on our own memfd.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL) } != 0 {
        return Err(os("sealing a shared pool"));
    }
    let map = Mapping::new(&fd, len, true)?;
    Ok(Pool::new(geom, slots, Box::new(MemfdStorage { fd, map, slot_bytes, slots })))
}

/// Another process's host pool, mapped read-only.
struct MappedStorage {
    map: Mapping,
    slot_bytes: usize,
    slots: usize,
}

impl Storage for MappedStorage {
    fn kind(&self) -> MemoryKind {
        MemoryKind::Host
    }
    fn device(&self) -> i32 {
        -1
    }
    fn slot_addr(&self, i: usize) -> u64 {
        assert!(i < self.slots);
        self.map.base as u64 + (i * self.slot_bytes) as u64
    }
    fn bytes(&self) -> u64 {
        self.map.len as u64
    }
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        // SAFETY: slot i is inside the mapping; the publisher never writes a slot this process holds.
        let src = unsafe { std::slice::from_raw_parts(self.slot_addr(i) as *const u8, self.slot_bytes) };
        copy_planes(src, geom, dst, dst_pitch);
        Ok(())
    }
}

/// Maps a publisher's host pool (`fd`, at least `alloc_bytes` long and sealed against shrinking)
/// as `slots` slots of `slot_bytes` for `geom`; the sizes were checked against each other by the
/// message's parser.
pub(crate) fn map_host_pool(fd: OwnedFd, geom: Geometry, slots: usize, slot_bytes: usize, alloc_bytes: u64) -> Result<Arc<Pool>> {
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
    let len = usize::try_from(alloc_bytes).map_err(|_| Error::arg("pool size"))?;
    if (st.st_size as u64) < alloc_bytes || slots.checked_mul(slot_bytes).is_none_or(|n| n > len) {
        return Err(Error::new(ErrorKind::Io, "the publisher's pool is smaller than its description: not mapped"));
    }
    let map = Mapping::new(&fd, len, false)?;
    drop(fd); // the mapping keeps the memory
    Ok(Pool::new(geom, slots, Box::new(MappedStorage { map, slot_bytes, slots })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the publisher writes into a slot is what the other mapping reads, and the other
    /// mapping still reads it after the publisher's pool (and descriptor) are gone.
    #[test]
    fn a_mapped_pool_reads_the_publishers_bytes_and_outlives_it() {
        let g = Geometry::nv12(64, 48);
        let pool = host_pool(g, 3).unwrap();
        let mut l = pool.acquire().unwrap();
        l.host_bytes_mut().unwrap()[..4].copy_from_slice(b"nvcs");
        let ex = pool.storage().export().unwrap().unwrap();
        let mapped = map_host_pool(ex.handle, g, 3, g.slot_bytes(), ex.alloc_bytes).unwrap();
        let i = l.index();
        drop(l);
        drop(pool);
        let m = mapped.acquire_slot(i).unwrap();
        assert_eq!(&m.host_bytes().unwrap()[..4], b"nvcs");
        assert!(mapped.acquire_slot(i).is_none(), "a slot held here is not leased twice");
    }

    /// A description larger than the memory behind it is refused before anything is mapped
    /// (reading past the file's end would kill the process with SIGBUS).
    #[test]
    fn a_pool_smaller_than_its_description_is_not_mapped() {
        let g = Geometry::nv12(64, 48);
        let pool = host_pool(g, 2).unwrap();
        let ex = pool.storage().export().unwrap().unwrap();
        assert!(map_host_pool(ex.handle, g, 3, g.slot_bytes(), ex.alloc_bytes + g.slot_bytes() as u64).is_err());
    }
}
