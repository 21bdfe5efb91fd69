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
pub use status::*;
