//! nvJPEG's hardware back end: MJPEG cameras decoded by the GPU's JPEG engines (A100, H100 and
//! later) with the Huffman decode on the engine, not the CPU. Direct NVDEC takes JPEG too, but its
//! parser decodes the entropy-coded data on the host (3.3 ms of CPU per 1080p 4:2:2 picture on an
//! H100), so 64 1080p cameras cost ten cores there.
//!
//! One nvJPEG handle per GPU (made on first use, kept for the process) and one decode worker
//! ([`batch::Batcher`]) that decodes the pictures of all the GPU's nvJPEG cameras together, in
//! batched calls; each camera ([`decoder::NvjpegDecoder`]) reads its headers and packs its chroma. nvJPEG is a toolkit library, not part of the driver:
//! where it is missing, or its hardware back end is not (a GPU without JPEG engines), AUTO goes on
//! to direct NVDEC, and one line says why.

pub(crate) mod batch;
pub(crate) mod decoder;

use crate::gpu::context::Device;
use crate::gpu::nvjpeg::{api, sys};
use crate::status::*;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// One GPU's nvJPEG handle (hardware back end), its decode worker, and what its engines are.
pub(crate) struct Engine {
    /// The GPU's decode worker. Declared before `owner`: fields drop in order, so the worker
    /// (and its decode states) has stopped before the handle goes.
    pub batcher: batch::Batcher,
    owner: HandleOwner,
    /// Decoders (cameras) on this handle now.
    pub cameras: AtomicU32,
}

/// Destroys the handle when dropped (the device's context pushed).
struct HandleOwner {
    lib: &'static api::Nvjpeg,
    handle: sys::nvjpegHandle_t,
    dev: Arc<Device>,
}

impl Drop for HandleOwner {
    fn drop(&mut self) {
        if let Ok(_g) = self.dev.push() {
            // SAFETY: our handle, destroyed once, after every state made from it (the worker's
            // went before, the Engine's field order; a decoder holds the Engine).
            let _ = unsafe { self.lib.destroy(self.handle) };
        }
    }
}

// SAFETY: an nvJPEG handle may be used from any thread (nvJPEG's documentation: the handle is
// thread safe; each thread uses its own state).
unsafe impl Send for Engine {}
// SAFETY: as for Send.
unsafe impl Sync for Engine {}

impl Engine {
    fn open(dev: &Arc<Device>) -> Result<Engine> {
        let lib = api::lib().map_err(|e| unsupported(format!("nvJPEG not available: {e}")))?;
        let _g = dev.push()?;
        // The device's context is current (guard).
        let handle = lib
            .create_hardware()
            .map_err(|e| unsupported(format!("GPU {}: nvJPEG's hardware back end is not available ({})", dev.ordinal, sys::status_name(e.status))))?;
        // SAFETY: our handle, just made; the figures are only logged.
        let (n, cores) = unsafe { lib.hardware_decoder_info(handle) }.unwrap_or((0, 0));
        log::info!("GPU {}: nvJPEG {}.{} hardware back end, {n} JPEG engine(s) of {cores} core(s)", dev.ordinal, lib.version.0, lib.version.1);
        // Owned from here: destroyed on every path, a worker that fails to start included.
        let owner = HandleOwner { lib, handle, dev: dev.clone() };
        let batcher = batch::Batcher::start(lib, handle, dev)?;
        Ok(Engine { batcher, owner, cameras: AtomicU32::new(0) })
    }

    pub(crate) fn lib(&self) -> &'static api::Nvjpeg {
        self.owner.lib
    }

    /// The handle (live while the Engine is).
    pub(crate) fn handle(&self) -> sys::nvjpegHandle_t {
        self.owner.handle
    }
}

type Entry = (i32, Result<Arc<Engine>>);
static ENGINES: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// GPU `dev`'s nvJPEG engine, or why there is none (tried once per GPU).
pub(crate) fn engine(dev: &Arc<Device>) -> Result<Arc<Engine>> {
    let mut all = ENGINES.lock();
    if let Some(e) = all.iter().find(|e| e.0 == dev.ordinal) {
        return e.1.clone();
    }
    let e = Engine::open(dev).map(Arc::new);
    match &e {
        // A missing library was said once, where it was looked for.
        Err(why) if api::lib().is_ok() => log::info!("{}; MJPEG decodes on direct NVDEC", why.msg),
        _ => {}
    }
    all.push((dev.ordinal, e.clone()));
    e
}

/// Library shutdown, after every camera closed: the GPUs' nvJPEG handles go (each holds its
/// device, whose context would otherwise stay referenced; seen as "context still referenced"
/// after every session that used nvJPEG).
pub(crate) fn shutdown() {
    let engines: Vec<Entry> = ENGINES.lock().drain(..).collect();
    for (ordinal, e) in engines {
        if let Ok(e) = e {
            if Arc::strong_count(&e) > 1 {
                log::warn!("GPU {ordinal}: nvJPEG handle still in use at shutdown; destroyed when its last decoder goes");
            }
        }
    }
}

/// Whether nvJPEG takes this stream on `dev` at open: an MJPEG stream of 8 bits (any layout
/// but 4:1:1 and 4:1:0, which the hardware back end refuses) with 8-bit output; the engine
/// exists. Each picture is checked again when it comes ([`decoder`]).
pub(crate) fn supports(dev: &Arc<Device>, params: &ffmpeg_next::codec::Parameters) -> Result<Arc<Engine>> {
    use ffmpeg_next::ffi::AVPixelFormat::*;
    if params.id() != ffmpeg_next::codec::Id::MJPEG {
        return Err(unsupported(format!("nvJPEG does not take {:?}", params.id())));
    }
    // SAFETY: `params` owns a valid AVCodecParameters.
    let fmt = unsafe { (*params.as_ptr()).format };
    let refused = [AV_PIX_FMT_YUVJ411P, AV_PIX_FMT_YUV411P, AV_PIX_FMT_YUV410P];
    if refused.iter().any(|&f| f as i32 == fmt) || crate::ffmpeg::pixfmt::bit_depth(fmt) > 8 {
        return Err(unsupported(format!("nvJPEG's hardware back end does not take {}", crate::ffmpeg::pixfmt::name(fmt))));
    }
    engine(dev)
}

/// Why nvJPEG does not take a stream (or is not here): not this decoder's to give.
fn unsupported(why: String) -> Error {
    Error::new(ErrorKind::Unsupported, why)
}
