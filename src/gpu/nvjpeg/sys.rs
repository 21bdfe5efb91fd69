//! nvJPEG's declarations (`libnvjpeg.so.13` or `.12`; `nvjpeg64_13.dll` or `nvjpeg64_12.dll` on
//! Windows), the subset the hardware back end's decoder uses; [`super::api`] opens the library
//! and is the only caller of its functions.
//!
//! nvJPEG ships with the CUDA toolkit and NVIDIA's `nvidia-nvjpeg-cu12` / `nvidia-nvjpeg` Python
//! wheels, not with the driver, so most hosts have none: nothing links against it, it is opened
//! with `dlopen` when a JPEG camera first asks, and a missing library is one log line and the
//! decoders that do not need it. `NVCAM_NVJPEG_LIBRARY` names a file to load instead (a wheel's
//! copy, say). Declarations are from `nvjpeg.h` of nvJPEG 12.4 (the `nvidia-nvjpeg-cu12` 12.4.0.76
//! wheel); the API kept these prototypes and values from CUDA 11 through 13.
//!
//! Status codes stay raw `i32`: a value a later library adds must not become an invalid enum.
#![allow(non_snake_case, non_camel_case_types, dead_code)]

use std::ffi::{c_int, c_uchar, c_void};

pub(crate) type nvjpegStatus_t = c_int;
pub(crate) const NVJPEG_STATUS_SUCCESS: nvjpegStatus_t = 0;
pub(crate) const NVJPEG_STATUS_BAD_JPEG: nvjpegStatus_t = 3;
pub(crate) const NVJPEG_STATUS_JPEG_NOT_SUPPORTED: nvjpegStatus_t = 4;
pub(crate) const NVJPEG_STATUS_ALLOCATOR_FAILURE: nvjpegStatus_t = 5;
pub(crate) const NVJPEG_STATUS_EXECUTION_FAILED: nvjpegStatus_t = 6;
pub(crate) const NVJPEG_STATUS_ARCH_MISMATCH: nvjpegStatus_t = 7;
pub(crate) const NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: nvjpegStatus_t = 9;
pub(crate) const NVJPEG_STATUS_INCOMPLETE_BITSTREAM: nvjpegStatus_t = 10;

/// The header's name of status `s`.
pub(crate) fn status_name(s: nvjpegStatus_t) -> &'static str {
    match s {
        0 => "NVJPEG_STATUS_SUCCESS",
        1 => "NVJPEG_STATUS_NOT_INITIALIZED",
        2 => "NVJPEG_STATUS_INVALID_PARAMETER",
        3 => "NVJPEG_STATUS_BAD_JPEG",
        4 => "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
        5 => "NVJPEG_STATUS_ALLOCATOR_FAILURE",
        6 => "NVJPEG_STATUS_EXECUTION_FAILED",
        7 => "NVJPEG_STATUS_ARCH_MISMATCH",
        8 => "NVJPEG_STATUS_INTERNAL_ERROR",
        9 => "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
        10 => "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
        _ => "unknown nvJPEG status",
    }
}

/// `nvjpegChromaSubsampling_t`.
pub(crate) type nvjpegChromaSubsampling_t = c_int;
pub(crate) const NVJPEG_CSS_444: nvjpegChromaSubsampling_t = 0;
pub(crate) const NVJPEG_CSS_422: nvjpegChromaSubsampling_t = 1;
pub(crate) const NVJPEG_CSS_420: nvjpegChromaSubsampling_t = 2;
pub(crate) const NVJPEG_CSS_440: nvjpegChromaSubsampling_t = 3;
pub(crate) const NVJPEG_CSS_411: nvjpegChromaSubsampling_t = 4;
pub(crate) const NVJPEG_CSS_410: nvjpegChromaSubsampling_t = 5;
pub(crate) const NVJPEG_CSS_GRAY: nvjpegChromaSubsampling_t = 6;

/// `nvjpegOutputFormat_t`: planar Y'CbCr at the picture's own subsampling.
pub(crate) type nvjpegOutputFormat_t = c_int;
pub(crate) const NVJPEG_OUTPUT_YUV: nvjpegOutputFormat_t = 1;

/// `nvjpegBackend_t`.
pub(crate) type nvjpegBackend_t = c_int;
pub(crate) const NVJPEG_BACKEND_HARDWARE: nvjpegBackend_t = 3;

/// `libraryPropertyType`.
pub(crate) const MAJOR_VERSION: c_int = 0;
pub(crate) const MINOR_VERSION: c_int = 1;
pub(crate) const PATCH_LEVEL: c_int = 2;

pub(crate) const NVJPEG_MAX_COMPONENT: usize = 4;

/// `nvjpegImage_t`: one plane pointer and pitch per component.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct nvjpegImage_t {
    pub channel: [*mut c_uchar; NVJPEG_MAX_COMPONENT],
    pub pitch: [usize; NVJPEG_MAX_COMPONENT],
}

impl Default for nvjpegImage_t {
    fn default() -> Self {
        nvjpegImage_t { channel: [std::ptr::null_mut(); NVJPEG_MAX_COMPONENT], pitch: [0; NVJPEG_MAX_COMPONENT] }
    }
}

pub(crate) type nvjpegHandle_t = *mut c_void;
pub(crate) type nvjpegJpegState_t = *mut c_void;
pub(crate) type nvjpegJpegStream_t = *mut c_void;
pub(crate) type cudaStream_t = *mut c_void;
