//! NVIDIA's JPEG library (libnvjpeg, from the CUDA toolkit or NVIDIA's wheels, opened when a JPEG
//! camera first asks): its declarations ([`sys`]) and the one thin `Result` layer that calls them
//! ([`api`]). The nvJPEG decoder and its batch worker built on them are `crate::decode::nvjpeg`.

pub(crate) mod api;
pub(crate) mod sys;

use crate::status::{Error, ErrorKind};

/// An nvJPEG failure as the library's error.
pub(crate) fn error(call: &str, r: sys::nvjpegStatus_t) -> Error {
    let kind = match r {
        sys::NVJPEG_STATUS_ALLOCATOR_FAILURE => ErrorKind::OutOfMemory,
        sys::NVJPEG_STATUS_JPEG_NOT_SUPPORTED | sys::NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED | sys::NVJPEG_STATUS_ARCH_MISMATCH => ErrorKind::Unsupported,
        _ => ErrorKind::Cuda,
    };
    Error::new(kind, format!("{call}: {} ({r})", sys::status_name(r)))
}
