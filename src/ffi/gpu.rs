//! GPU-wide calls: counters and the deferred-free queue.

use super::types::*;
use super::{boundary, marshal, sized_out, Ctx};
use std::time::Duration;

/// Fills `stats` (set its `struct_size` first) with the GPU counters of `device`, or summed over
/// all devices for -1. Callable before `nvcam_init` and without a GPU (`device_count` 0; a
/// device ordinal then is `NVCAM_E_NO_DEVICE`).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NO_DEVICE, NVCAM_E_PANIC
///
/// # Safety
/// `stats` is NULL or a writable `nvcam_gpu_stats_t` whose `struct_size` is set.
#[no_mangle]
pub unsafe extern "C" fn nvcam_gpu_stats(device: i32, stats: *mut nvcam_gpu_stats) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        // SAFETY: forwarded from this function's contract.
        let s = unsafe { sized_out(stats, "stats") }?;
        *s = marshal::gpu_stats(&crate::gpu::gpu_stats(device)?, s.struct_size);
        Ok(())
    })
}

/// Frees GPU buffers in the deferred-free queue whose fence events have completed and that were
/// retired at least `min_age_ms` ago (0 = all whose events completed). Never waits: events are
/// queried. Workers do this on their own with `gpu_free_min_age_ms`; call it to return memory
/// sooner, e.g. after closing cameras.
///
/// Returns: NVCAM_OK, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_gpu_drain(min_age_ms: u32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        crate::gpu::drain(Duration::from_millis(min_age_ms as u64));
        Ok(())
    })
}
