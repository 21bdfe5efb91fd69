//! Whether this process has a GPU path: the CUDA driver loaded and its devices counted, once, before
//! any other CUDA call; and the driver's version that probe read.

use super::driver;
use crate::status::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

static PROBE: OnceLock<Result<i32>> = OnceLock::new();
/// The driver's CUDA version (e.g. 13000), set by the probe.
static DRIVER_VERSION: AtomicU32 = AtomicU32::new(0);

/// Whether the CUDA driver is loadable and has devices: `Ok(count)` or why there is no GPU path
/// (`ErrorKind::NoDevice`, whatever the driver said). Checked once per process, before any other
/// CUDA call (cudarc panics on a missing library: [`driver::library_present`] first).
/// `NVCAM_DISABLE_GPU=1` forces the CPU path.
pub(crate) fn probe() -> Result<i32> {
    let none = |why: String| Error::new(ErrorKind::NoDevice, why);
    PROBE
        .get_or_init(|| {
            if crate::switches::Switch::DisableGpu.var().is_ok_and(|v| !v.is_empty() && v != "0") {
                return Err(none("GPU path disabled by NVCAM_DISABLE_GPU".into()));
            }
            std::panic::catch_unwind(|| {
                if !driver::library_present() {
                    return Err(none("the CUDA driver library (libcuda) is not installed".into()));
                }
                driver::init().map_err(|e| none(e.to_string()))?;
                let n = driver::ctx::device_count().map_err(|e| none(e.to_string()))?;
                if n <= 0 {
                    return Err(none("no CUDA device".into()));
                }
                let v = driver::driver_version().unwrap_or(0);
                DRIVER_VERSION.store(v.max(0) as u32, Ordering::Relaxed);
                log::info!("CUDA driver {}.{}: {n} device(s)", v / 1000, (v % 1000) / 10);
                Ok(n)
            })
            .unwrap_or_else(|_| Err(none("probing the CUDA driver panicked".into())))
        })
        .clone()
}

/// The driver's CUDA version as `1000 * major + 10 * minor` (0 before a successful probe).
pub(crate) fn driver_version() -> u32 {
    DRIVER_VERSION.load(Ordering::Relaxed)
}
