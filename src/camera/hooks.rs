//! Test hooks, compiled only with the `test-hooks` feature. One puts cameras back on the loss
//! handling that came before gap placement and the GOP-aware reconnect (a gap marks the packet
//! it was noticed at and everything after it; reconnect only after the fallback without a
//! recovery point), so one test run measures both.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static LEGACY: AtomicBool = AtomicBool::new(false);
static NO_KEYFRAME_REQUESTS: AtomicBool = AtomicBool::new(false);
static NO_DECODER_REPORTS: AtomicBool = AtomicBool::new(false);

/// Cameras opened from now on take no notice of their decoder's own error reports (`true`), so
/// the marks are the loss tracker's alone, as on NVDEC, which reports nothing for a slice with
/// a piece cut out of it; FFmpeg's software decoder reports many (`false`, the default).
pub fn set_no_decoder_reports(on: bool) {
    NO_DECODER_REPORTS.store(on, Ordering::Relaxed);
}

pub(crate) fn no_decoder_reports() -> bool {
    NO_DECODER_REPORTS.load(Ordering::Relaxed)
}

/// Cameras opened from now on ask for key frames after a loss only by reconnecting (`true`), as
/// before RTCP PLI/FIR, or first with PLI/FIR (`false`, the default): to measure both.
pub fn set_no_keyframe_requests(on: bool) {
    NO_KEYFRAME_REQUESTS.store(on, Ordering::Relaxed);
}

pub(crate) fn no_keyframe_requests() -> bool {
    NO_KEYFRAME_REQUESTS.load(Ordering::Relaxed)
}

/// Cameras opened from now on handle losses the earlier way (`true`) or this one (`false`, the
/// default), for as long as they live: a test opens one of each and runs them side by side.
pub fn set_legacy_loss_handling(on: bool) {
    LEGACY.store(on, Ordering::Relaxed);
}

pub(crate) fn legacy() -> bool {
    LEGACY.load(Ordering::Relaxed)
}

/// The camera whose next delivered picture panics inside its session (0: none).
static PANIC_IN: AtomicU64 = AtomicU64::new(0);

/// The next picture camera `handle` delivers panics inside its session, once: how a test makes
/// the bug a hostile stream could reach.
pub fn panic_in_session(handle: u64) {
    PANIC_IN.store(handle, Ordering::Release);
}

/// Whether the camera `handle` is to panic now (once).
pub(crate) fn take_session_panic(handle: u64) -> bool {
    handle != 0 && PANIC_IN.compare_exchange(handle, 0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
}
