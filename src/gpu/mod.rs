//! The device layer: per-camera NV12 pools in device memory with event-ordered lifetimes, and
//! what every user of a GPU shares (the decoders in `crate::decode`, the conversions in
//! `crate::convert`).
//!
//! - [`driver`]: the one thin layer of CUDA driver calls (libcuda via cudarc, loaded at run
//!   time), their typed error and its conversion into the library's.
//! - [`nvcuvid`], [`nvjpeg`]: the same for NVIDIA's video decoder and JPEG libraries (opened at
//!   run time), on which `crate::decode`'s NVDEC and nvJPEG decoders are built.
//! - [`context`]: one primary context per device, the push/pop guard around every call,
//!   streams, events, 2D copies.
//! - [`memory`]: the device storage behind a camera's pool (pitched, allocated once per
//!   resolution, per-slot events) and pinned host buffers.
//! - [`vmm`]: device pools another process maps (one VMM allocation exported as an OS handle)
//!   and their imports, over the same storage as `memory`'s.
//! - [`deferred`]: the deferred-free queue (events completed + minimum age).
//! - [`kernels`]: the embedded CUDA kernels, loaded once per device; [`params`] their
//!   parameter blocks.
//! - [`probe`]: whether there is a GPU path at all, checked once.
//! - [`nvml`]: the decoders' measured load (NVML, opened at run time), for the stats.
//! - [`placement`]: which GPU a camera placed on "any GPU" goes to.
//! - [`sessions`]: hardware decode sessions per device: nvcam's count, the configured cap, the
//!   driver's limit where nvcam met it.
//! - [`stats`]: process-wide counters for `nvcam_gpu_stats`; [`timing`] per-stage call timings.
//!
//! Without libcuda (or a GPU) nothing here runs: [`probe`] says why once and cameras decode on
//! the CPU.

pub(crate) mod context;
pub(crate) mod deferred;
pub(crate) mod driver;
pub(crate) mod kernels;
pub(crate) mod load;
pub(crate) mod memory;
pub(crate) mod nvcuvid;
pub(crate) mod nvjpeg;
pub(crate) mod nvml;
pub(crate) mod params;
pub(crate) mod placement;
pub(crate) mod probe;
pub(crate) mod sessions;
pub(crate) mod shared_pool;
pub(crate) mod stats;
pub(crate) mod timing;
pub(crate) mod vmm;

pub(crate) use probe::probe;
pub(crate) use sessions::{Full, HwTicket};
pub(crate) use stats::GpuStats;

use crate::config::Config;
use crate::status::*;
use context::{Device, Stream};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

static DEVICES: Mutex<Vec<Option<Arc<Device>>>> = Mutex::new(Vec::new());

/// Library init: settings, and one probe with its result in the log.
pub(crate) fn init(cfg: &Config) {
    sessions::set_cap(cfg.max_hw_decoders_per_device.unwrap_or(0));
    deferred::set_min_age(cfg.gpu_free_min_age);
    match probe() {
        Ok(n) => log::info!(
            "GPU path available: {n} device(s); hardware decoders per device: {}",
            match cfg.max_hw_decoders_per_device {
                None => "no cap".to_string(),
                Some(c) => c.to_string(),
            }
        ),
        Err(why) => log::info!("GPU path unavailable ({}); cameras decode on the CPU", why.msg),
    }
}

/// The device's context, retained on first use.
pub(crate) fn device(ordinal: i32) -> Result<Arc<Device>> {
    let n = probe()?;
    if ordinal < 0 || ordinal >= n {
        return Err(Error::new(ErrorKind::NoDevice, format!("GPU {ordinal} does not exist ({n} found)")));
    }
    let mut d = DEVICES.lock();
    if d.len() < n as usize {
        d.resize(n as usize, None);
    }
    if let Some(dev) = &d[ordinal as usize] {
        return Ok(dev.clone());
    }
    let dev = Arc::new(Device::open(ordinal)?);
    d[ordinal as usize] = Some(dev.clone());
    Ok(dev)
}

fn open_device(ordinal: i32) -> Option<Arc<Device>> {
    DEVICES.lock().get(ordinal.max(0) as usize).cloned().flatten()
}

/// Library shutdown, after every camera closed and every frame was released and after the
/// conversions and nvJPEG let go of theirs: frees the deferred queue (waiting on its events only,
/// until the deadline), then releases the contexts last.
pub(crate) fn shutdown(timeout: Duration) {
    let deadline = Instant::now() + timeout;
    if !deferred::drain_wait(deadline) {
        log::warn!("nvcam_shutdown: GPU memory still in use by unfinished work; contexts kept until it is freed");
    }
    if !deferred::stop_freer(deadline) {
        log::warn!("nvcam_shutdown: the GPU freeing thread did not stop in time; it ends on its own");
    }
    let devs: Vec<Arc<Device>> = DEVICES.lock().drain(..).flatten().collect();
    for d in devs {
        if Arc::strong_count(&d) > 1 {
            log::warn!("GPU {}: context still referenced (a camera thread outlived shutdown); released when that ends", d.ordinal);
        }
        drop(d);
    }
}

/// The workers' housekeeping: frees deferred GPU buffers that are ready (never waits).
pub(crate) fn maintain() {
    deferred::maintain();
}

/// `nvcam_gpu_drain`: frees what is ready and at least `min_age` old; never waits.
pub(crate) fn drain(min_age: Duration) {
    deferred::drain(min_age);
}

/// A camera's GPU resources that outlive its connections: the device and its stream.
pub(crate) struct CamGpu {
    pub stream: Arc<Stream>,
}

impl CamGpu {
    pub(crate) fn new(ordinal: i32) -> Result<CamGpu> {
        let dev = device(ordinal)?;
        Ok(CamGpu { stream: Arc::new(Stream::new(&dev)?) })
    }
    pub(crate) fn ordinal(&self) -> i32 {
        self.stream.dev.ordinal
    }
}

/// `nvcam_gpu_stats`: counters of one device or of all (`device` < 0), and its memory.
pub(crate) fn gpu_stats(device: i32) -> Result<GpuStats> {
    let mut s = GpuStats { device, ..Default::default() };
    let n = probe().unwrap_or(0);
    s.device_count = n as u32;
    if device >= n || device < -1 {
        return Err(Error::new(ErrorKind::NoDevice, format!("GPU {device} does not exist ({n} found)")));
    }
    stats::fill(device, &mut s);
    let ordinals = if device < 0 { 0..n } else { device..device + 1 };
    s.session_limit = ordinals.clone().filter_map(sessions::observed_limit).sum();
    // One NVML reading per device, also learned from (`load.rs`).
    s.decoder_load = ordinals.clone().filter_map(load::busy_pct).max();
    s.decoder_demand = ordinals.filter_map(|d| load::share_pct(d, load::Demand(0))).max();
    let devs: Vec<Arc<Device>> = if device < 0 { (0..n).filter_map(open_device).collect() } else { open_device(device).into_iter().collect() };
    s.contexts = devs.len() as u32;
    for d in devs {
        if let Ok((free, total)) = d.mem_info() {
            s.mem_free += free;
            s.mem_total += total;
        }
    }
    Ok(s)
}
