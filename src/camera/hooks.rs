//! A test hook, compiled only with the `test-hooks` feature: puts cameras back on the loss
//! handling that came before gap placement and the GOP-aware reconnect (a gap marks the packet
//! it was noticed at and everything after it; reconnect only after the fallback without a
//! recovery point), so one test run measures both.

use std::sync::atomic::{AtomicBool, Ordering};

static LEGACY: AtomicBool = AtomicBool::new(false);

/// Cameras opened from now on handle losses the earlier way (`true`) or this one (`false`, the
/// default), for as long as they live: a test opens one of each and runs them side by side.
pub fn set_legacy_loss_handling(on: bool) {
    LEGACY.store(on, Ordering::Relaxed);
}

pub(crate) fn legacy() -> bool {
    LEGACY.load(Ordering::Relaxed)
}
