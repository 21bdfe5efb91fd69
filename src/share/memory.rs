//! Host pools another process can map: `host_pool(geom, slots)` makes the publisher's (writable
//! here, exported as a handle that other processes map read-only) and `map_host_pool(handle, …)`
//! maps another process's.
//!
//! The storages are the same on every platform; what differs is below them, in one small
//! interface (`Shared::create`, `Shared::export`, `map_read_only`, `Mapping`):
//! - Linux: a sealed `memfd` (it can never shrink under a reader, which would be SIGBUS);
//! - Windows: a pagefile-backed file mapping (its size is fixed at creation), exported as a
//!   duplicate handle with map-for-reading access only.
//!
//! The lifetime rules are the pool's: a slot that any lease (in any process, through the
//! publisher's holds) references is never written. A mapping keeps the memory alive after the
//! other side closed its handle or died, so a frame an attached process holds stays readable
//! whatever happens to its publisher.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

use crate::pool::{copy_planes, Exported, Geometry, MemoryKind, OsHandle, Pool, Storage};
use crate::status::*;
use imp::{map_read_only, Mapping, Shared};
use std::sync::Arc;

/// The publisher's host pool: the shared memory object, mapped read-write.
struct SharedStorage {
    shared: Shared,
    map: Mapping,
    slot_bytes: usize,
    slots: usize,
}

impl SharedStorage {
    fn slot(&self, i: usize) -> *mut u8 {
        assert!(i < self.slots);
        // SAFETY: i < slots: inside the mapping of at least slots * slot_bytes.
        unsafe { self.map.base().add(i * self.slot_bytes) }
    }
}

impl Storage for SharedStorage {
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
        self.map.len() as u64
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
        Some(self.shared.export().map(|handle| Exported { handle, alloc_bytes: self.map.len() as u64 }))
    }
}

/// A host pool of `slots` slots for `geom` that attached processes can map.
pub(crate) fn host_pool(geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
    let slot_bytes = geom.slot_bytes();
    let len = slot_bytes.checked_mul(slots).filter(|&n| n > 0).ok_or_else(|| Error::arg("pool too large"))?;
    let (shared, map) = Shared::create(len)?;
    Ok(Pool::new(geom, slots, Box::new(SharedStorage { shared, map, slot_bytes, slots })))
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
        self.map.base() as u64 + (i * self.slot_bytes) as u64
    }
    fn bytes(&self) -> u64 {
        self.map.len() as u64
    }
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        // SAFETY: slot i is inside the mapping; the publisher never writes a slot this process holds.
        let src = unsafe { std::slice::from_raw_parts(self.slot_addr(i) as *const u8, self.slot_bytes) };
        copy_planes(src, geom, dst, dst_pitch);
        Ok(())
    }
}

/// Maps a publisher's host pool (`handle`, at least `alloc_bytes` long, which the platform part
/// checks before mapping) as `slots` slots of `slot_bytes` for `geom`; the sizes were checked
/// against each other by the message's parser. The handle is closed here: the mapping keeps the
/// memory.
pub(crate) fn map_host_pool(handle: OsHandle, geom: Geometry, slots: usize, slot_bytes: usize, alloc_bytes: u64) -> Result<Arc<Pool>> {
    let len = usize::try_from(alloc_bytes).map_err(|_| Error::arg("pool size"))?;
    if slots.checked_mul(slot_bytes).is_none_or(|n| n > len) {
        return Err(Error::new(ErrorKind::Io, "the publisher's pool is smaller than its description: not mapped"));
    }
    let map = map_read_only(handle, len)?;
    Ok(Pool::new(geom, slots, Box::new(MappedStorage { map, slot_bytes, slots })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the publisher writes into a slot is what the other mapping reads, and the other
    /// mapping still reads it after the publisher's pool (and handle) are gone.
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
    /// (reading past the memory's end would kill the process).
    #[test]
    fn a_pool_smaller_than_its_description_is_not_mapped() {
        let g = Geometry::nv12(64, 48);
        let pool = host_pool(g, 2).unwrap();
        let ex = pool.storage().export().unwrap().unwrap();
        assert!(map_host_pool(ex.handle, g, 3, g.slot_bytes(), ex.alloc_bytes + g.slot_bytes() as u64).is_err());
    }
}
