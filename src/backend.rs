//! Which decoder a camera gets: the policy between the GPU backends and FFmpeg's software decoder.
//!
//! The CPU path is always there. A camera that asks for a GPU (`device >= 0`) on a machine or build
//! without one falls back to it with a logged reason, so the same host program runs everywhere.

use crate::camera::Options;
use crate::decode::Decoder;
use crate::status::*;
use ffmpeg_next as ff;

use crate::api::{NVCAM_DECODER_FFMPEG_HW, NVCAM_DECODER_NVDEC, NVCAM_DECODER_SOFTWARE};

/// The `NVCAM_DECODER_*` value of a decoder, by its name.
pub fn policy_of(name: &str) -> u32 {
    match name {
        "nvdec" => NVCAM_DECODER_NVDEC,
        "ffmpeg-cuda" => NVCAM_DECODER_FFMPEG_HW,
        _ => NVCAM_DECODER_SOFTWARE,
    }
}

/// A GPU decoder for this camera, or `None` for the software path.
pub fn make_decoder(opts: &Options, _stream: &ff::format::stream::Stream<'_>) -> Result<Option<Box<dyn Decoder>>> {
    if opts.device < 0 || opts.decoder == NVCAM_DECODER_SOFTWARE {
        return Ok(None);
    }
    if matches!(opts.decoder, NVCAM_DECODER_NVDEC | NVCAM_DECODER_FFMPEG_HW) {
        return Err(Error::new(NVCAM_E_NO_DEVICE, "a hardware decoder was required but this build has no GPU path"));
    }
    log::info!("device {} requested; no GPU path in this build: decoding on the CPU", opts.device);
    Ok(None)
}

/// Library init: probe for GPUs (nothing to do on the CPU-only build).
pub fn init(_cfg: &crate::library::Config) {}

/// Library shutdown: drain GPU memory and destroy contexts (nothing on the CPU-only build).
pub fn shutdown(_timeout: std::time::Duration) {}
