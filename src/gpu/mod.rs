//! The GPU path: decode with NVDEC (FFmpeg's CUDA hwaccel) or in software plus upload, into
//! per-camera NV12 pools in device memory, with event-ordered lifetimes.
//!
//! - [`context`]: one primary context per device (via cudarc, loaded at run time), the push/pop
//!   guard around every call, streams, events, pinned buffers.
//! - [`pool`]: the device storage behind a camera's pool (pitched, allocated once per resolution,
//!   per-slot events).
//! - [`deferred`]: the deferred-free queue (events completed + minimum age).
//! - [`hwdec`], [`upload`]: the two decoders that write device pools; [`GpuDecoder`] chooses and
//!   falls back between them.
//! - [`stats`]: process-wide counters for `nvcam_gpu_stats`.
//!
//! Without libcuda (or a GPU) nothing here runs: [`probe`] says why once and cameras decode on
//! the CPU.

pub mod context;
pub mod deferred;
pub mod hwdec;
pub mod pool;
pub mod stats;
pub mod upload;

use crate::api::*;
use crate::camera::Options;
use crate::decode::{Decoder, Picture};
use crate::pool::{Geometry, Lease, Pool};
use crate::status::*;
use context::{Device, Stream};
use ffmpeg_next as ff;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

static PROBE: OnceLock<std::result::Result<i32, String>> = OnceLock::new();
static DEVICES: Mutex<Vec<Option<Arc<Device>>>> = Mutex::new(Vec::new());
static MAX_HW_PER_DEVICE: AtomicU32 = AtomicU32::new(0);

/// Whether the CUDA driver is loadable and has devices: `Ok(count)` or the reason there is no GPU
/// path. Checked once per process, before any other CUDA call (cudarc panics on a missing
/// library). `NVCAM_DISABLE_GPU=1` forces the CPU path.
pub fn probe() -> std::result::Result<i32, String> {
    PROBE
        .get_or_init(|| {
            if std::env::var("NVCAM_DISABLE_GPU").is_ok_and(|v| !v.is_empty() && v != "0") {
                return Err("GPU path disabled by NVCAM_DISABLE_GPU".into());
            }
            std::panic::catch_unwind(|| unsafe {
                use cudarc::driver::sys;
                if !sys::is_culib_present() {
                    return Err("the CUDA driver library (libcuda) is not installed".to_string());
                }
                let r = sys::cuInit(0);
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(format!("cuInit failed: {r:?}"));
                }
                let mut n = 0;
                let r = sys::cuDeviceGetCount(&mut n);
                if r != sys::CUresult::CUDA_SUCCESS {
                    return Err(format!("cuDeviceGetCount failed: {r:?}"));
                }
                if n <= 0 {
                    return Err("no CUDA device".to_string());
                }
                let mut v = 0;
                let _ = sys::cuDriverGetVersion(&mut v);
                log::info!("CUDA driver {}.{}: {n} device(s)", v / 1000, (v % 1000) / 10);
                Ok(n)
            })
            .unwrap_or_else(|_| Err("probing the CUDA driver panicked".into()))
        })
        .clone()
}

/// Library init: settings, and one probe with its result in the log.
pub fn init(cfg: &crate::library::Config) {
    MAX_HW_PER_DEVICE.store(cfg.max_hw_decoders_per_device, Ordering::Relaxed);
    deferred::set_min_age(if cfg.gpu_free_min_age_ms == 0 { 100 } else { cfg.gpu_free_min_age_ms });
    match probe() {
        Ok(n) => log::info!(
            "GPU path available: {n} device(s); hardware decoders per device: {}",
            match cfg.max_hw_decoders_per_device {
                0 => "no cap".to_string(),
                c => c.to_string(),
            }
        ),
        Err(why) => log::info!("GPU path unavailable ({why}); cameras decode on the CPU"),
    }
}

/// The device's context, retained on first use.
pub fn device(ordinal: i32) -> Result<Arc<Device>> {
    let n = probe().map_err(|why| Error::new(NVCAM_E_NO_DEVICE, why))?;
    if ordinal < 0 || ordinal >= n {
        return Err(Error::new(NVCAM_E_NO_DEVICE, format!("GPU {ordinal} does not exist ({n} found)")));
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

/// Library shutdown, after every camera closed and every frame was released: frees the deferred
/// queue (waiting on its events only, until the deadline), then releases the contexts last.
pub fn shutdown(timeout: Duration) {
    let deadline = Instant::now() + timeout;
    if !deferred::drain_wait(deadline) {
        log::warn!("nvcam_shutdown: GPU memory still in use by unfinished work; contexts kept until it is freed");
    }
    let devs: Vec<Arc<Device>> = DEVICES.lock().drain(..).flatten().collect();
    for d in devs {
        if Arc::strong_count(&d) > 1 {
            log::warn!("GPU {}: context still referenced (a camera thread outlived shutdown); released when that ends", d.ordinal);
        }
        drop(d);
    }
}

/// A camera's GPU resources that outlive its connections: the device and its stream.
pub struct CamGpu {
    pub stream: Arc<Stream>,
}

impl CamGpu {
    pub fn new(ordinal: i32) -> Result<CamGpu> {
        let dev = device(ordinal)?;
        Ok(CamGpu { stream: Arc::new(Stream::new(&dev)?) })
    }
}

/// A device pool for `geom`'s size (the driver picks the pitch).
pub fn new_pool(cam: &Arc<CamGpu>, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
    let st = pool::DeviceStorage::new(&cam.stream, geom.width, geom.height, slots)?;
    Ok(Pool::new(st.geom(), slots, Box::new(st)))
}

/// One hardware decode session counted against `max_hw_decoders_per_device`.
pub struct HwTicket {
    dev: Arc<Device>,
}

impl HwTicket {
    pub fn take(dev: &Arc<Device>) -> Option<HwTicket> {
        let cap = MAX_HW_PER_DEVICE.load(Ordering::Relaxed);
        let ok = dev
            .hw_sessions
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| if cap == 0 || n < cap { Some(n + 1) } else { None })
            .is_ok();
        ok.then(|| HwTicket { dev: dev.clone() })
    }
}

impl Drop for HwTicket {
    fn drop(&mut self) {
        self.dev.hw_sessions.fetch_sub(1, Ordering::AcqRel);
    }
}

enum Inner {
    Hw(hwdec::HwDecoder),
    Up(upload::UploadDecoder),
}

/// The GPU camera's decoder: NVDEC, or software plus upload, with the fall back between them
/// (AUTO policy only) when NVDEC turns the stream down at its first picture.
pub struct GpuDecoder {
    inner: Inner,
    cam: Arc<CamGpu>,
    fallback: Option<(ff::codec::Parameters, ff::Rational, usize)>,
}

impl GpuDecoder {
    fn fall_back(&mut self, why: &Error) -> Result<()> {
        let (params, tb, threads) = self.fallback.take().expect("checked");
        let dev = self.cam.stream.dev.ordinal;
        log::warn!("GPU {dev}: {}; decoding in software and uploading to the GPU instead", why.msg);
        stats::of(dev).hw_fallbacks.fetch_add(1, Ordering::Relaxed);
        self.inner = Inner::Up(upload::UploadDecoder::new(&self.cam, params, tb, threads)?);
        Ok(())
    }
    fn can_fall_back(&self) -> bool {
        matches!(&self.inner, Inner::Hw(h) if h.hw_failed()) && self.fallback.is_some()
    }
    fn inner(&mut self) -> &mut dyn Decoder {
        match &mut self.inner {
            Inner::Hw(h) => h,
            Inner::Up(u) => u,
        }
    }
}

impl Decoder for GpuDecoder {
    fn name(&self) -> &'static str {
        match &self.inner {
            Inner::Hw(h) => h.name(),
            Inner::Up(u) => u.name(),
        }
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<()> {
        match self.inner().send_packet(pkt) {
            Err(e) if self.can_fall_back() => {
                self.fall_back(&e)?;
                self.inner().send_packet(pkt)
            }
            r => r,
        }
    }
    fn send_eof(&mut self) -> Result<()> {
        self.inner().send_eof()
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        match self.inner().receive() {
            Err(e) if self.can_fall_back() => {
                // The packets NVDEC turned down are gone; software picks up at the next keyframe.
                self.fall_back(&e)?;
                Ok(None)
            }
            r => r,
        }
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<()> {
        self.inner().write_into(lease)
    }
    fn new_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        new_pool(&self.cam, geom, slots)
    }
    fn pool_device(&self) -> i32 {
        self.cam.stream.dev.ordinal
    }
    fn reset(&mut self) -> bool {
        self.inner().reset()
    }
}

/// A decoder writing `cam`'s device pools, by policy: SOFTWARE uploads; FFMPEG_HW is NVDEC or an
/// error; AUTO is NVDEC while the per-device cap allows and NVDEC takes the stream, else software
/// plus upload (logged, and counted in `hw_fallbacks`).
pub fn make_decoder(cam: &Arc<CamGpu>, opts: &Options, stream: &ff::format::stream::Stream<'_>) -> Result<Box<dyn Decoder>> {
    let params = stream.parameters().clone();
    let tb = stream.time_base();
    let threads = opts.decode_threads;
    let dev = &cam.stream.dev;
    let upload = |params| -> Result<Box<dyn Decoder>> { Ok(Box::new(upload::UploadDecoder::new(cam, params, tb, threads)?)) };
    match opts.decoder {
        NVCAM_DECODER_SOFTWARE => upload(params),
        NVCAM_DECODER_FFMPEG_HW => {
            let t = HwTicket::take(dev).ok_or_else(|| {
                Error::new(
                    NVCAM_E_NO_DEVICE,
                    format!("GPU {}: all {} hardware decoder(s) allowed per device are in use", dev.ordinal, MAX_HW_PER_DEVICE.load(Ordering::Relaxed)),
                )
            })?;
            let h = hwdec::HwDecoder::new(cam, &params, tb, t)?;
            Ok(Box::new(GpuDecoder { inner: Inner::Hw(h), cam: cam.clone(), fallback: None }))
        }
        _ => {
            let why = match HwTicket::take(dev) {
                None => format!("hardware decoder cap ({} per device) reached", MAX_HW_PER_DEVICE.load(Ordering::Relaxed)),
                Some(t) => match hwdec::HwDecoder::new(cam, &params, tb, t) {
                    Ok(h) => {
                        return Ok(Box::new(GpuDecoder {
                            inner: Inner::Hw(h),
                            cam: cam.clone(),
                            fallback: Some((params, tb, threads)),
                        }))
                    }
                    Err(e) => e.msg,
                },
            };
            log::warn!("GPU {}: {why}; decoding in software and uploading to the GPU", dev.ordinal);
            stats::of(dev.ordinal).hw_fallbacks.fetch_add(1, Ordering::Relaxed);
            upload(params)
        }
    }
}

/// `nvcam_gpu_stats`: counters of one device or of all (`device` < 0), and its memory.
pub fn gpu_stats(device: i32) -> Result<nvcam_gpu_stats> {
    let mut s = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, device, ..Default::default() };
    let n = probe().unwrap_or(0);
    s.device_count = n as u32;
    if device >= n || device < -1 {
        return Err(Error::new(NVCAM_E_NO_DEVICE, format!("GPU {device} does not exist ({n} found)")));
    }
    stats::fill(device, &mut s);
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
