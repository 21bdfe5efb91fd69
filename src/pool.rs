//! The per-camera frame pool: a fixed number of NV12 slots, allocated once per resolution.
//!
//! A slot is handed out as a [`Lease`]; while any frame (and so any clone) holds the lease, the slot
//! is not on the free list and can never be written. Dropping the last reference returns it. The
//! pool itself is shared by its leases, so when a camera switches resolution and drops its pool, the
//! old slots live on until their last clone is released, then the storage goes with the pool.
//!
//! Where the bytes live is the [`Storage`]'s business (host memory here, device memory on the GPU
//! path); the lifetime rules are the same for both.

use crate::status::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Where a frame's pixels are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryKind {
    Host,
    Device,
}

/// The layout of one NV12 image in a slot: Y rows then interleaved UV rows, all at one pitch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub width: u32,
    pub height: u32,
    pub pitch: usize,
    /// How wide a sample is: NV12's bytes or P016's 16-bit words.
    pub depth: Depth,
}

/// A slot's sample width. `Sixteen` is P016: two planes like NV12, each sample a little-endian
/// 16-bit word with the stream's 10 or 12 bits in its high bits (what NVDEC writes; P010 is the
/// 10-bit case of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Depth {
    #[default]
    Eight,
    Sixteen,
}

impl Depth {
    pub(crate) fn bytes(self) -> usize {
        match self {
            Depth::Eight => 1,
            Depth::Sixteen => 2,
        }
    }
}

impl Geometry {
    /// Row alignment of pool slots: 256 bytes suits both CPU SIMD and CUDA's pitched copies.
    pub(crate) const ALIGN: usize = 256;

    #[cfg(test)]
    pub(crate) fn nv12(width: u32, height: u32) -> Geometry {
        Self::new(width, height, Depth::Eight)
    }
    pub(crate) fn new(width: u32, height: u32, depth: Depth) -> Geometry {
        let row = Self::row_bytes_for(width, depth);
        Geometry { width, height, pitch: row.div_ceil(Self::ALIGN) * Self::ALIGN, depth }
    }
    fn row_bytes_for(width: u32, depth: Depth) -> usize {
        (width as usize).div_ceil(2) * 2 * depth.bytes()
    }
    /// Bytes of one row of the UV plane (the widest row).
    pub(crate) fn row_bytes(&self) -> usize {
        Self::row_bytes_for(self.width, self.depth)
    }
    /// Bytes of one row of the Y plane.
    pub(crate) fn y_row_bytes(&self) -> usize {
        self.width as usize * self.depth.bytes()
    }
    pub(crate) fn y_rows(&self) -> usize {
        self.height as usize
    }
    pub(crate) fn uv_rows(&self) -> usize {
        (self.height as usize).div_ceil(2)
    }
    pub(crate) fn uv_offset(&self) -> usize {
        self.pitch * self.y_rows()
    }
    pub(crate) fn slot_bytes(&self) -> usize {
        self.pitch * (self.y_rows() + self.uv_rows())
    }
    /// Bytes a caller buffer needs at `dst_pitch` (0 = tightly packed); `None` if that does not
    /// fit in a `usize` (a caller's absurd pitch must be refused, not wrap around).
    pub(crate) fn packed_size(&self, dst_pitch: usize) -> Option<usize> {
        let p = if dst_pitch == 0 { self.row_bytes() } else { dst_pitch };
        p.checked_mul(self.y_rows() + self.uv_rows())
    }
}

/// Slot memory of one pool. Implementations own the bytes and free them on drop (the GPU one
/// through its deferred-free queue).
pub(crate) trait Storage: Send + Sync {
    fn kind(&self) -> MemoryKind;
    /// CUDA device ordinal, or -1 for host memory.
    fn device(&self) -> i32;
    /// Address (host or device) of slot `i`'s first byte.
    fn slot_addr(&self, i: usize) -> u64;
    /// Total bytes this storage holds.
    fn bytes(&self) -> u64;
    /// Whether every asynchronous use of slot `i` has completed, so it may be written again.
    fn reusable(&self, _i: usize) -> bool {
        true
    }
    /// Returns once slot `i`'s last write has completed, so a frame handed to the host is
    /// readable at once from any stream or context (host memory: always).
    fn wait_ready(&self, _i: usize) -> Result<()> {
        Ok(())
    }
    /// Marks slot `i` as written by work just enqueued on the storage's own stream (device
    /// memory: records the slot's event, so reuse and frees wait for that work; host: nothing).
    fn mark_written(&self, _i: usize) -> Result<()> {
        Ok(())
    }
    /// Makes `stream` (a `CUstream` of the device's primary context, as a number; 0 is the legacy
    /// default stream) wait for slot `i`'s last write, without a host wait. Host memory: nothing
    /// to wait for.
    fn wait_on_stream(&self, _i: usize, _stream: u64) -> Result<()> {
        Ok(())
    }
    /// Fences slot `i` with the work enqueued on `stream` so far: the slot is not handed out
    /// again before that work completed, whenever its frame handles are released. Host memory:
    /// nothing (a host slot is read by the CPU, under the handle).
    fn fence_after_stream(&self, _i: usize, _stream: u64) -> Result<()> {
        Ok(())
    }
    /// Copies slot `i` (NV12 at `geom`) into a host buffer of `dst_pitch` rows; `dst` holds
    /// `geom.packed_size(dst_pitch)` bytes (checked by the caller).
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()>;
    /// Whether another process may map this storage ([`Storage::export`] gives it a handle).
    fn exportable(&self) -> bool {
        false
    }
    /// A new OS handle to the whole storage for another process to map (a shared-memory file or
    /// a VMM allocation), with the bytes it covers; `None` for storage that cannot be shared.
    /// Each call gives a handle of its own, which the caller closes after passing it on.
    fn export(&self) -> Option<Result<Exported>> {
        None
    }
}

/// An OS handle to memory another process can map: a file descriptor on Unix, an NT handle on
/// Windows. Owned: dropping it closes it.
#[cfg(unix)]
pub(crate) type OsHandle = std::os::fd::OwnedFd;
#[cfg(windows)]
pub(crate) type OsHandle = std::os::windows::io::OwnedHandle;

/// A storage's memory as another process maps it: the handle and the size of the allocation
/// behind it (at least `slot_bytes * slots`; a GPU allocation is rounded up to the driver's
/// granularity).
pub(crate) struct Exported {
    pub handle: OsHandle,
    pub alloc_bytes: u64,
}

/// Host slots: one allocation, written only through an exclusive [`Lease`].
pub(crate) struct HostStorage {
    base: *mut u8,
    slot_bytes: usize,
    slots: usize,
}

// SAFETY: the storage owns its allocation (freed once, on drop, from any thread).
unsafe impl Send for HostStorage {}
// SAFETY: the bytes are shared between the writer (holding the only lease of a slot) and readers
// (holding frames of other slots); a slot is never written while any frame references it.
unsafe impl Sync for HostStorage {}

impl HostStorage {
    pub(crate) fn new(geom: &Geometry, slots: usize) -> Result<HostStorage> {
        let slot_bytes = geom.slot_bytes();
        let total = slot_bytes.checked_mul(slots).ok_or_else(|| Error::arg("pool too large"))?;
        let mut v: Vec<u8> = Vec::new();
        v.try_reserve_exact(total)
            .map_err(|_| Error::new(ErrorKind::OutOfMemory, format!("cannot allocate {total} bytes for a pool")))?;
        v.resize(total, 0);
        let base = Box::into_raw(v.into_boxed_slice()) as *mut u8;
        Ok(HostStorage { base, slot_bytes, slots })
    }
    fn slot(&self, i: usize) -> *mut u8 {
        assert!(i < self.slots);
        // SAFETY: i < slots, so the offset stays inside the one allocation of slots * slot_bytes.
        unsafe { self.base.add(i * self.slot_bytes) }
    }
}

impl Drop for HostStorage {
    fn drop(&mut self) {
        let len = self.slot_bytes * self.slots;
        // SAFETY: `base` came from Box::into_raw of a boxed slice of exactly `len` bytes, and is
        // freed once, here (no lease outlives the pool, which owns this storage).
        unsafe { drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.base, len))) };
    }
}

impl Storage for HostStorage {
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
        (self.slot_bytes * self.slots) as u64
    }
    fn download(&self, i: usize, geom: &Geometry, dst: &mut [u8], dst_pitch: usize) -> Result<()> {
        // SAFETY: slot i is inside our allocation; it is only read here, and it is written only
        // through an exclusive lease, which no frame the caller holds can coexist with.
        let src = unsafe { std::slice::from_raw_parts(self.slot(i), self.slot_bytes) };
        copy_planes(src, geom, dst, dst_pitch);
        Ok(())
    }
}

/// Copies NV12 rows from a pitched slot image into `dst` at `dst_pitch` (0 = packed).
pub(crate) fn copy_planes(src: &[u8], geom: &Geometry, dst: &mut [u8], dst_pitch: usize) {
    let dp = if dst_pitch == 0 { geom.row_bytes() } else { dst_pitch };
    let rows = geom.y_rows() + geom.uv_rows();
    for r in 0..rows {
        let n = if r < geom.y_rows() { geom.y_row_bytes() } else { geom.row_bytes() };
        dst[r * dp..r * dp + n].copy_from_slice(&src[r * geom.pitch..r * geom.pitch + n]);
    }
}

static LIVE_POOLS: AtomicUsize = AtomicUsize::new(0);
static LIVE_POOL_BYTES: AtomicU64 = AtomicU64::new(0);

/// Pools alive in the process and the bytes they hold (for stats and leak tests).
pub fn live_pools() -> (usize, u64) {
    (LIVE_POOLS.load(Ordering::Relaxed), LIVE_POOL_BYTES.load(Ordering::Relaxed))
}

/// A camera's slots at one resolution.
pub(crate) struct Pool {
    /// Unique in the process: names the pool to processes that map it.
    id: u64,
    pub geom: Geometry,
    storage: Box<dyn Storage>,
    free: Mutex<Vec<usize>>,
    slots: usize,
    in_use: AtomicUsize,
}

impl Pool {
    pub(crate) fn new(geom: Geometry, slots: usize, storage: Box<dyn Storage>) -> Arc<Pool> {
        LIVE_POOLS.fetch_add(1, Ordering::Relaxed);
        LIVE_POOL_BYTES.fetch_add(storage.bytes(), Ordering::Relaxed);
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Arc::new(Pool {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            geom,
            storage,
            free: Mutex::new((0..slots).rev().collect()),
            slots,
            in_use: AtomicUsize::new(0),
        })
    }

    pub(crate) fn host(geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        Ok(Pool::new(geom, slots, Box::new(HostStorage::new(&geom, slots)?)))
    }

    /// An exclusive lease on a free slot whose previous uses have all completed, or `None` when
    /// every slot is held (the caller drops the new frame and counts it).
    pub(crate) fn acquire(self: &Arc<Self>) -> Option<Lease> {
        let mut free = self.free.lock();
        let pos = free.iter().rposition(|&i| self.storage.reusable(i))?;
        let index = free.remove(pos);
        self.in_use.fetch_add(1, Ordering::Relaxed);
        Some(Lease { pool: self.clone(), index })
    }

    /// An exclusive lease on slot `index` exactly, or `None` when it is held or out of range.
    /// For a pool mapped from another process, whose writer chose the slot.
    pub(crate) fn acquire_slot(self: &Arc<Self>, index: usize) -> Option<Lease> {
        let mut free = self.free.lock();
        let pos = free.iter().position(|&i| i == index)?;
        free.remove(pos);
        self.in_use.fetch_add(1, Ordering::Relaxed);
        Some(Lease { pool: self.clone(), index })
    }

    pub(crate) fn slots(&self) -> usize {
        self.slots
    }
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
    pub(crate) fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.storage.bytes()
    }
    pub(crate) fn storage(&self) -> &dyn Storage {
        &*self.storage
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        LIVE_POOLS.fetch_sub(1, Ordering::Relaxed);
        LIVE_POOL_BYTES.fetch_sub(self.storage.bytes(), Ordering::Relaxed);
    }
}

/// One slot, held. Exclusive while only the writer has it (`&mut`); shared once wrapped in a frame.
/// Dropping it puts the slot back on the free list.
pub(crate) struct Lease {
    pool: Arc<Pool>,
    index: usize,
}

impl Lease {
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
    pub(crate) fn index(&self) -> usize {
        self.index
    }
    pub(crate) fn addr(&self) -> u64 {
        self.pool.storage.slot_addr(self.index)
    }
    /// The slot's bytes for writing, host pools only. `&mut self` makes the writer exclusive: once
    /// the lease is inside a shared frame nobody can get here again.
    pub(crate) fn host_bytes_mut(&mut self) -> Option<&mut [u8]> {
        if self.pool.storage.kind() != MemoryKind::Host {
            return None;
        }
        let n = self.pool.geom.slot_bytes();
        // SAFETY: a host slot of `n` bytes, and `&mut self` on the only lease of it: no other
        // reference to these bytes exists while the returned borrow lives.
        Some(unsafe { std::slice::from_raw_parts_mut(self.addr() as *mut u8, n) })
    }
    /// Host pools only: the slot's bytes for reading.
    pub(crate) fn host_bytes(&self) -> Option<&[u8]> {
        if self.pool.storage.kind() != MemoryKind::Host {
            return None;
        }
        // SAFETY: a host slot; shared reads only (writes need `&mut` on this lease).
        Some(unsafe { std::slice::from_raw_parts(self.addr() as *const u8, self.pool.geom.slot_bytes()) })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.in_use.fetch_sub(1, Ordering::Relaxed);
        self.pool.free.lock().push(self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_slot_is_never_handed_out_again() {
        let pool = Pool::host(Geometry::nv12(64, 48), 3).unwrap();
        let a = pool.acquire().unwrap();
        let b = pool.acquire().unwrap();
        let c = pool.acquire().unwrap();
        assert!(pool.acquire().is_none(), "exhausted pool must refuse, not overwrite");
        let held = b.index();
        drop(a);
        let d = pool.acquire().unwrap();
        assert_ne!(d.index(), held);
        assert_ne!(d.index(), c.index());
        assert_eq!(pool.in_use(), 3);
    }

    #[test]
    fn pool_outlives_its_camera_while_leased() {
        let pool = Pool::host(Geometry::nv12(32, 32), 2).unwrap();
        let weak = Arc::downgrade(&pool);
        let mut l = pool.acquire().unwrap();
        l.host_bytes_mut().unwrap()[0] = 42;
        drop(pool);
        assert!(weak.upgrade().is_some());
        assert_eq!(l.host_bytes().unwrap()[0], 42);
        drop(l);
        assert!(weak.upgrade().is_none(), "last lease frees the pool");
    }

    #[test]
    fn odd_sizes_round_chroma_up() {
        let g = Geometry::nv12(33, 17);
        assert_eq!(g.row_bytes(), 34);
        assert_eq!(g.uv_rows(), 9);
        assert_eq!(g.packed_size(0), Some(34 * 26));
        assert_eq!(g.packed_size(1 << 62), None, "a pitch that wraps is refused");
        assert_eq!(g.pitch % Geometry::ALIGN, 0);
    }
}
