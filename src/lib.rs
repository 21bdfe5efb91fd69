//! nvcam: camera frames decoded on NVIDIA GPUs (or the CPU), handed to C, C++, Python and
//! LabVIEW hosts through a C ABI that a foreign caller cannot turn into a crash.
//!
//! Layout: `ffi` is the whole exported surface (thin, unsafe, checked); under it, safe Rust:
//! `library` (init/shutdown), `camera` (worker and state machine), `input` (FFmpeg I/O with our own
//! deadlines), `decode`/`backend` (decoder seam and choice), `pool` and `frame` (slots and leases),
//! `registry` (clone handles per camera), `handle` (generational handle tables), `logging`, and
//! `gpu` (device contexts, NVDEC and upload decoders, device pools, the deferred-free queue).

pub mod api;
pub mod backend;
pub mod camera;
pub mod decode;
pub mod ffi;
pub mod frame;
pub mod gpu;
pub mod handle;
pub mod input;
pub mod library;
pub mod logging;
pub mod pin;
pub mod pool;
pub mod registry;
pub mod source;
pub mod status;

pub use api::*;
pub use ffi::*;
// Status codes only: `status::Result`/`Error` stay internal so a host's own names don't clash.
pub use status::{
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
    NVCAM_E_UNSUPPORTED,
    NVCAM_E_FFMPEG,
    NVCAM_E_CUDA,
    NVCAM_E_BAD_OPTION,
    NVCAM_E_FAILED,
    NVCAM_E_OUT_OF_MEMORY,
    NVCAM_E_NO_DEVICE,
    NVCAM_E_PANIC,
    NVCAM_E_INTERNAL,
};
