//! Which decoder a camera gets: the policy between the GPU backends and FFmpeg's software decoder.
//!
//! The CPU path is always there. A camera that asks for a GPU (`device >= 0`) on a machine without
//! a usable one (no libcuda, no device, ordinal out of range) falls back to it with a logged
//! reason, so the same host program runs everywhere; only an explicit hardware policy turns that
//! into an error.

use crate::camera::Options;
use crate::decode::Decoder;
use crate::gpu::{self, CamGpu};
use crate::status::*;
use ffmpeg_next as ff;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::api::{NVCAM_DECODER_FFMPEG_HW, NVCAM_DECODER_NVDEC, NVCAM_DECODER_SOFTWARE};

/// The `NVCAM_DECODER_*` value of a decoder, by its name.
pub fn policy_of(name: &str) -> u32 {
    match name {
        "nvdec" => NVCAM_DECODER_NVDEC,
        "ffmpeg-cuda" => NVCAM_DECODER_FFMPEG_HW,
        _ => NVCAM_DECODER_SOFTWARE,
    }
}

/// A camera's backend state that outlives its connections (its GPU stream), created on first use.
#[derive(Default)]
pub struct CameraSlot {
    gpu: Mutex<Option<Arc<CamGpu>>>,
    cpu_noted: AtomicBool,
}

impl CameraSlot {
    fn gpu(&self, device: i32) -> Result<Arc<CamGpu>> {
        let mut g = self.gpu.lock();
        if let Some(c) = g.as_ref() {
            return Ok(c.clone());
        }
        let c = Arc::new(CamGpu::new(device)?);
        *g = Some(c.clone());
        Ok(c)
    }
}

/// A GPU decoder for this camera, or `None` for the software path into host memory.
pub fn make_decoder(opts: &Options, stream: &ff::format::stream::Stream<'_>, slot: &CameraSlot) -> Result<Option<Box<dyn Decoder>>> {
    if opts.device < 0 {
        return Ok(None);
    }
    let cam = match slot.gpu(opts.device) {
        Ok(c) => c,
        Err(e) => {
            if matches!(opts.decoder, NVCAM_DECODER_NVDEC | NVCAM_DECODER_FFMPEG_HW) {
                return Err(Error::new(NVCAM_E_NO_DEVICE, format!("a hardware decoder was required, but there is no usable GPU: {}", e.msg)));
            }
            if !slot.cpu_noted.swap(true, Ordering::Relaxed) {
                log::warn!("GPU {} requested but not usable ({}): decoding on the CPU into host memory", opts.device, e.msg);
            }
            return Ok(None);
        }
    };
    if opts.decoder == NVCAM_DECODER_NVDEC {
        return Err(Error::new(
            NVCAM_E_UNSUPPORTED,
            "the direct NVDEC backend is not part of this build; use NVCAM_DECODER_AUTO or NVCAM_DECODER_FFMPEG_HW",
        ));
    }
    gpu::make_decoder(&cam, opts, stream).map(Some)
}

/// Library init: settings and a probe for GPUs (logged either way).
pub fn init(cfg: &crate::library::Config) {
    gpu::init(cfg);
}

/// The camera workers' housekeeping: frees deferred GPU buffers that are ready (never waits).
pub fn maintain() {
    gpu::deferred::maintain();
}

/// Library shutdown: drain GPU memory (waiting on its events only) and release contexts, last.
pub fn shutdown(timeout: std::time::Duration) {
    gpu::shutdown(timeout);
}
