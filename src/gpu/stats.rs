//! Process-wide GPU counters, per device, for `nvcam_gpu_stats`. Plain relaxed atomics: each is a
//! monotonic count or a gauge, read as a snapshot.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Devices with their own counters; higher ordinals share the last row.
pub(crate) const MAX_DEVICES: usize = 16;

#[derive(Default)]
pub(crate) struct DevCounters {
    pub device_allocs: AtomicU64,
    pub device_frees: AtomicU64,
    pub pinned_allocs: AtomicU64,
    pub pinned_frees: AtomicU64,
    pub syncs: AtomicU64,
    pub ready_waits: AtomicU64,
    pub hw_fallbacks: AtomicU64,
    /// Hardware decoders not made because the GPU's decode sessions were exhausted (a refused
    /// create, or a camera turned away at the observed limit: `sessions.rs`).
    pub sessions_exhausted: AtomicU64,
    /// AUTO cameras not given a hardware decoder because the engines' demand would pass the
    /// limit of their learned capacity (`load.rs`).
    pub load_refusals: AtomicU64,
    pub frames_copied: AtomicU64,
    pub bytes_in_pools: AtomicI64,
    pub bytes_deferred: AtomicI64,
    pub deferred_buffers: AtomicI64,
    pub hw_decoders: AtomicI64,
    pub upload_decoders: AtomicI64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: DevCounters = DevCounters {
    device_allocs: AtomicU64::new(0),
    device_frees: AtomicU64::new(0),
    pinned_allocs: AtomicU64::new(0),
    pinned_frees: AtomicU64::new(0),
    syncs: AtomicU64::new(0),
    ready_waits: AtomicU64::new(0),
    hw_fallbacks: AtomicU64::new(0),
    sessions_exhausted: AtomicU64::new(0),
    load_refusals: AtomicU64::new(0),
    frames_copied: AtomicU64::new(0),
    bytes_in_pools: AtomicI64::new(0),
    bytes_deferred: AtomicI64::new(0),
    deferred_buffers: AtomicI64::new(0),
    hw_decoders: AtomicI64::new(0),
    upload_decoders: AtomicI64::new(0),
};

static COUNTERS: [DevCounters; MAX_DEVICES] = [ZERO; MAX_DEVICES];

pub(crate) fn of(device: i32) -> &'static DevCounters {
    &COUNTERS[(device.max(0) as usize).min(MAX_DEVICES - 1)]
}

pub(crate) fn count_sync(device: i32) {
    of(device).syncs.fetch_add(1, Ordering::Relaxed);
}
pub(crate) fn count_pinned_alloc(device: i32) {
    of(device).pinned_allocs.fetch_add(1, Ordering::Relaxed);
}

/// A snapshot of the GPU counters (one device, or summed over all), and the memory of the
/// devices the library holds a context on.
#[derive(Clone, Debug, Default)]
pub(crate) struct GpuStats {
    /// The device asked for (-1 = all).
    pub device: i32,
    pub device_count: u32,
    pub contexts: u32,
    pub hw_decoders: u32,
    pub upload_decoders: u32,
    pub device_allocs: u64,
    pub device_frees: u64,
    pub pinned_allocs: u64,
    pub pinned_frees: u64,
    pub syncs: u64,
    pub ready_waits: u64,
    pub hw_fallbacks: u64,
    pub sessions_exhausted: u64,
    pub load_refusals: u64,
    /// The hardware cameras' demand as a share of the learned NVDEC capacity, percent (the
    /// busiest device for all; `load.rs`); None until learned.
    pub decoder_demand: Option<u32>,
    /// Sessions nvcam held when the driver refused one (summed over the devices where that
    /// happened; `crate::gpu::sessions`); 0 until then.
    pub session_limit: u32,
    /// The decoders' busy share over the driver's last sampling period, percent (the busiest
    /// device for all); None without NVML.
    pub decoder_load: Option<u32>,
    pub frames_copied: u64,
    pub bytes_in_pools: u64,
    pub bytes_deferred: u64,
    pub deferred_buffers: u64,
    pub mem_free: u64,
    pub mem_total: u64,
}

/// Sums of one device's counters, or of all (`device` < 0), into the snapshot's counter fields.
pub(crate) fn fill(device: i32, out: &mut GpuStats) {
    let rows: Vec<&DevCounters> = if device < 0 { COUNTERS.iter().collect() } else { vec![of(device)] };
    let r = Ordering::Relaxed;
    let pos = |v: i64| v.max(0) as u64;
    for c in rows {
        out.sessions_exhausted += c.sessions_exhausted.load(r);
        out.load_refusals += c.load_refusals.load(r);
        out.device_allocs += c.device_allocs.load(r);
        out.device_frees += c.device_frees.load(r);
        out.pinned_allocs += c.pinned_allocs.load(r);
        out.pinned_frees += c.pinned_frees.load(r);
        out.syncs += c.syncs.load(r);
        out.ready_waits += c.ready_waits.load(r);
        out.hw_fallbacks += c.hw_fallbacks.load(r);
        out.frames_copied += c.frames_copied.load(r);
        out.bytes_in_pools += pos(c.bytes_in_pools.load(r));
        out.bytes_deferred += pos(c.bytes_deferred.load(r));
        out.deferred_buffers += pos(c.deferred_buffers.load(r));
        out.hw_decoders += pos(c.hw_decoders.load(r)) as u32;
        out.upload_decoders += pos(c.upload_decoders.load(r)) as u32;
    }
}
