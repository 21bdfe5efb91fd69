//! The NVDEC engines' measured load, from NVML (`libnvidia-ml.so.1`, `nvml.dll` on Windows: the
//! driver ships it), opened on first use like libnvcuvid, so nothing links against it and a
//! machine without it only lacks the figure.
//!
//! `nvmlDeviceGetDecoderUtilization` is the share of time the GPU's decoders were busy over the
//! driver's last sampling period (NVML says how long). It is reported in `nvcam_gpu_stats`, and the
//! engines' capacity is learned from it (`load.rs`); placement does not rank by the share itself:
//! it lags a burst of opens by that period, and cameras opened together would all see the same
//! idle GPU.

use super::driver::ctx;
use parking_lot::Mutex;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::OnceLock;

type NvmlDevice = *mut c_void;

struct Nvml {
    by_pci: unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int,
    decoder_utilization: unsafe extern "C" fn(NvmlDevice, *mut c_uint, *mut c_uint) -> c_int,
    _lib: libloading::Library,
}

#[cfg(not(windows))]
const LIBRARY: &str = "libnvidia-ml.so.1";
#[cfg(windows)]
const LIBRARY: &str = "nvml.dll";

fn open() -> Option<Nvml> {
    try_open().map_err(|w| log::debug!("NVML not used ({w}): nvcam_gpu_stats reports no decoder load")).ok()
}

fn try_open() -> Result<Nvml, String> {
    // SAFETY: NVML's initializers are the driver's; loading it has no other effects.
    let lib = unsafe { libloading::Library::new(LIBRARY) }.map_err(|e| format!("cannot load {LIBRARY}: {e}"))?;
    macro_rules! sym {
        ($name:literal, $ty:ty) => {
            // SAFETY: the type is NVML's prototype for this symbol (nvml.h).
            *unsafe { lib.get::<$ty>(concat!($name, "\0").as_bytes()) }.map_err(|e| format!("{LIBRARY} has no {}: {e}", $name))?
        };
    }
    let init = sym!("nvmlInit_v2", unsafe extern "C" fn() -> c_int);
    let by_pci = sym!("nvmlDeviceGetHandleByPciBusId_v2", unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int);
    let decoder_utilization = sym!("nvmlDeviceGetDecoderUtilization", unsafe extern "C" fn(NvmlDevice, *mut c_uint, *mut c_uint) -> c_int);
    // SAFETY: takes no arguments; initialized once for the process (never shut down: the
    // library stays loaded for its life).
    let r = unsafe { init() };
    if r != 0 {
        return Err(format!("nvmlInit_v2 returned {r}"));
    }
    Ok(Nvml { by_pci, decoder_utilization, _lib: lib })
}

/// NVML's handle of each CUDA ordinal, found once by PCI address (NVML numbers devices its own way).
static HANDLES: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

fn handle(nvml: &Nvml, ordinal: i32) -> Option<NvmlDevice> {
    let mut h = HANDLES.lock();
    if let Some(&(_, d)) = h.iter().find(|e| e.0 == ordinal) {
        return Some(d as NvmlDevice);
    }
    let pci = CString::new(ctx::pci_bus_id(ctx::device_get(ordinal).ok()?).ok()?).ok()?;
    let mut d: NvmlDevice = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PCI address; writes one handle.
    if unsafe { (nvml.by_pci)(pci.as_ptr(), &mut d) } != 0 || d.is_null() {
        return None;
    }
    h.push((ordinal, d as usize));
    Some(d)
}

/// The decoders' busy share of GPU `ordinal` over the driver's last sampling period, percent, and
/// that period; None without NVML (or where it does not know the device).
pub(crate) fn decoder_load_over(ordinal: i32) -> Option<(u32, std::time::Duration)> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    let nvml = NVML.get_or_init(open).as_ref()?;
    let d = handle(nvml, ordinal)?;
    let (mut util, mut period) = (0 as c_uint, 0 as c_uint);
    // SAFETY: a handle NVML gave us (valid for the process); writes two integers.
    (unsafe { (nvml.decoder_utilization)(d, &mut util, &mut period) } == 0).then_some((util, std::time::Duration::from_micros(period as u64)))
}
