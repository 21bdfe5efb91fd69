//! nvcam: camera frames decoded on NVIDIA GPUs (or the CPU), handed to C, C++, Python and
//! LabVIEW hosts through a C ABI that a foreign caller cannot turn into a crash.
//!
//! Layers, each importing only from those below it:
//!
//! ```text
//! ffi           the C surface: exports, #[repr(C)] types, conversions (the only unsafe boundary
//!               with the host's pointers)
//! library       init/shutdown, the camera table
//! instances     LabVIEW node instances (which waits an Abort wakes)
//! camera        worker, sessions, delivery
//! record        a camera's packet cache and recordings to files (the camera's thread feeds it)
//! decode        every decoder (software, direct NVDEC, nvJPEG, FFmpeg's CUDA hwaccel, software
//!               plus upload) and `select`, which one a camera gets and the fall-back order
//! convert       every conversion: the plan both back ends share, the CPU twin, the GPU routes
//!               (device memory, staging, host downloads, launches) and `dispatch` between them
//! gpu           the device layer: driver calls, contexts, device memory, deferred frees,
//!               the kernels and their parameter blocks, counters
//! bitstream     reading packets without decoding them: NAL units, recovery points, frame_num
//!               gaps, whole JPEGs
//! input, source, ffmpeg   FFmpeg I/O under our deadlines; URLs; small FFmpeg owners
//! registry, frame, pool, handle   frame handles, frames, slots and leases, generational tables
//! config, logging, pin, status, workers, switches    options and defaults; log sinks; self-pin;
//!               error kinds; the worker threads calls split their work over; the environment
//!               switches
//! win_loader    Windows: the FFmpeg DLLs loaded from nvcam.dll's own folder
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, unreachable_pub)]

mod bitstream;
mod camera;
mod config;
mod convert;
mod decode;
pub mod ffi;
mod ffmpeg;
mod frame;
/// nvcam's parsers of camera and host bytes, for the fuzzers (`test-hooks`).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod fuzz_entry;
mod gpu;
mod handle;
mod input;
mod instances;
mod library;
mod logging;
mod pin;
mod pool;
mod record;
mod redact;
mod registry;
mod share;
mod rtp_loss;
mod source;
mod switches;
mod status;
#[cfg(windows)]
mod win_loader;
mod workers;

pub use ffi::camera::*;
pub use ffi::frame::*;
pub use ffi::gpu::*;
pub use ffi::library::*;
pub use ffi::log::*;
pub use ffi::lv::*;
pub use ffi::record::*;
pub use ffi::constants::*;
pub use ffi::types::*;
// Status codes only: `status::Result`/`Error` stay internal so a host's own names don't clash.
pub use ffi::status::{
    NVCAM_OK,
    NVCAM_E_NULL_POINTER,
    NVCAM_E_INVALID_ARGUMENT,
    NVCAM_E_BUFFER_TOO_SMALL,
    NVCAM_E_STRUCT_SIZE,
    NVCAM_E_NOT_INITIALIZED,
    NVCAM_E_NULL_HANDLE,
    NVCAM_E_INVALID_HANDLE,
    NVCAM_E_WRONG_HANDLE_TYPE,
    NVCAM_E_STALE_HANDLE,
    NVCAM_E_CLOSED,
    NVCAM_E_TIMEOUT,
    NVCAM_E_IO,
    NVCAM_E_AUTH,
    NVCAM_E_TLS_VERIFY,
    NVCAM_E_UNSUPPORTED,
    NVCAM_E_FFMPEG,
    NVCAM_E_CUDA,
    NVCAM_E_BAD_OPTION,
    NVCAM_E_FAILED,
    NVCAM_E_CANCELLED,
    NVCAM_E_OUT_OF_MEMORY,
    NVCAM_E_NO_DEVICE,
    NVCAM_E_PANIC,
    NVCAM_E_INTERNAL,
};

/// What the integration tests and benchmarks read beside the C API: process-wide counters and
/// the NVDEC bindings' self-checks. Not part of the C surface.
#[doc(hidden)]
pub mod diag {
    pub use crate::gpu::nvcuvid::api::{available as nvcuvid_available, lib as nvcuvid_lib};
    pub use crate::gpu::nvcuvid::sys::layout_report as nvcuvid_layout_report;
    pub use crate::decode::nvdec::{counters as nvdec_counters, NvdecCounters};
    pub use crate::decode::hwdec::sessions_made as ffmpeg_hw_sessions_made;
    pub use crate::gpu::timing::{enable as enable_stage_times, take as stage_times, Stage, StageTimes};
    pub use crate::instances::live as lv_instances_live;
    pub use crate::pool::live_pools;
    /// IEEE half bits → f32 (reading fp16 conversions).
    pub fn f16_to_f32(h: u16) -> f32 {
        crate::convert::cpu::f16_to_f32(h)
    }
    /// The CPU conversion of a packed NV12 or P016 image (`frame_format`: `nvcam_frame_info_t`'s
    /// `format`, `NVCAM_FORMAT_NV12` or `NVCAM_FORMAT_P016`, as `nvcam_frame_copy_nv12` packs
    /// it) whose stream colours are `(color_matrix, color_range, chroma_siting)` as
    /// `nvcam_frame_info_t` reports them (see `ffi::marshal::cpu_reference`).
    pub fn convert_cpu(
        pixels: &[u8],
        frame_format: u32,
        width: u32,
        height: u32,
        spec: &crate::ffi::types::nvcam_convert,
        color: (u32, u32, u32),
        dst_pitch: usize,
    ) -> Result<Vec<u8>, String> {
        crate::ffi::marshal::cpu_reference(pixels, frame_format, width, height, spec, color, dst_pitch).map_err(|e| e.to_string())
    }
    /// The test-only spin-then-copy kernel (stream hand-off tests).
    #[cfg(feature = "test-hooks")]
    pub use crate::gpu::kernels::spin_copy;
    /// Conversion kernel launches so far (a device batch of up to 32 frames is one).
    #[cfg(feature = "test-hooks")]
    pub use crate::convert::launch::convert_launches;
    /// Host-download variants (benchmark) and counts by path (tests).
    #[cfg(feature = "test-hooks")]
    pub use crate::convert::staging::{paths as download_paths, set_knobs as set_download_knobs};
    /// Staging areas made on a GPU (they are made only for concurrent conversions).
    #[cfg(feature = "test-hooks")]
    pub use crate::convert::staging::made as staging_areas;
    /// NVDEC fault and delay hooks (the `test-hooks` feature).
    #[cfg(feature = "test-hooks")]
    pub mod hooks {
        pub use crate::decode::nvdec::hooks::{clear, set, Knobs};
    }
    /// A slow disk under the recordings (`test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub use crate::record::hooks as record_hooks;
    /// Shareable device pools, exported and imported across processes (`test-hooks`).
    #[cfg(all(feature = "test-hooks", unix))]
    pub use crate::gpu::shared_pool::hooks as shared_pool;
    /// The loss handling before gap placement and the GOP-aware reconnect (`test-hooks`).
    #[cfg(feature = "test-hooks")]
    pub use crate::camera::hooks::{panic_in_session, set_legacy_loss_handling, set_no_decoder_reports, set_no_keyframe_requests};
}
