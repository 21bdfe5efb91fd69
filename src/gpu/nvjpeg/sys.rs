//! Run-time bindings to nvJPEG (`libnvjpeg.so.13` or `.12`; `nvjpeg64_13.dll` or `nvjpeg64_12.dll`
//! on Windows), the subset the hardware back end's decoder uses.
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

use std::ffi::{c_int, c_uchar, c_uint, c_void};
use std::sync::OnceLock;

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

/// The entry points used, resolved once. The library stays loaded for the process's life.
pub(crate) struct Nvjpeg {
    pub nvjpegGetProperty: unsafe extern "C" fn(c_int, *mut c_int) -> nvjpegStatus_t,
    pub nvjpegCreateEx: unsafe extern "C" fn(nvjpegBackend_t, *mut c_void, *mut c_void, c_uint, *mut nvjpegHandle_t) -> nvjpegStatus_t,
    pub nvjpegDestroy: unsafe extern "C" fn(nvjpegHandle_t) -> nvjpegStatus_t,
    pub nvjpegGetHardwareDecoderInfo: unsafe extern "C" fn(nvjpegHandle_t, *mut c_uint, *mut c_uint) -> nvjpegStatus_t,
    pub nvjpegJpegStateCreate: unsafe extern "C" fn(nvjpegHandle_t, *mut nvjpegJpegState_t) -> nvjpegStatus_t,
    pub nvjpegJpegStateDestroy: unsafe extern "C" fn(nvjpegJpegState_t) -> nvjpegStatus_t,
    pub nvjpegGetImageInfo:
        unsafe extern "C" fn(nvjpegHandle_t, *const c_uchar, usize, *mut c_int, *mut nvjpegChromaSubsampling_t, *mut c_int, *mut c_int) -> nvjpegStatus_t,
    pub nvjpegJpegStreamCreate: unsafe extern "C" fn(nvjpegHandle_t, *mut nvjpegJpegStream_t) -> nvjpegStatus_t,
    pub nvjpegJpegStreamDestroy: unsafe extern "C" fn(nvjpegJpegStream_t) -> nvjpegStatus_t,
    pub nvjpegJpegStreamParseHeader: unsafe extern "C" fn(nvjpegHandle_t, *const c_uchar, usize, nvjpegJpegStream_t) -> nvjpegStatus_t,
    pub nvjpegDecodeBatchedSupported: unsafe extern "C" fn(nvjpegHandle_t, nvjpegJpegStream_t, *mut c_int) -> nvjpegStatus_t,
    pub nvjpegDecodeBatchedInitialize: unsafe extern "C" fn(nvjpegHandle_t, nvjpegJpegState_t, c_int, c_int, nvjpegOutputFormat_t) -> nvjpegStatus_t,
    pub nvjpegDecodeBatched: unsafe extern "C" fn(
        nvjpegHandle_t,
        nvjpegJpegState_t,
        *const *const c_uchar,
        *const usize,
        *mut nvjpegImage_t,
        cudaStream_t,
    ) -> nvjpegStatus_t,
    /// (major, minor, patch) of the library loaded.
    pub version: (i32, i32, i32),
    pub path: String,
    _lib: libloading::Library,
}

/// The file names tried, newest first (the driver's CUDA version decides which one can run).
#[cfg(not(windows))]
const NAMES: &[&str] = &["libnvjpeg.so.13", "libnvjpeg.so.12"];
#[cfg(windows)]
const NAMES: &[&str] = &["nvjpeg64_13.dll", "nvjpeg64_12.dll"];

impl Nvjpeg {
    fn open(path: &str) -> Result<Nvjpeg, String> {
        // SAFETY: nvJPEG's initializers register nothing beyond its own state.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load {path}: {e}"))?;
        macro_rules! sym {
            ($name:ident) => {{
                // SAFETY: the type is nvjpeg.h's prototype for this symbol.
                let s = unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes()) }.map_err(|e| format!("{path} has no {}: {e}", stringify!($name)))?;
                *s
            }};
        }
        let mut n = Nvjpeg {
            nvjpegGetProperty: sym!(nvjpegGetProperty),
            nvjpegCreateEx: sym!(nvjpegCreateEx),
            nvjpegDestroy: sym!(nvjpegDestroy),
            nvjpegGetHardwareDecoderInfo: sym!(nvjpegGetHardwareDecoderInfo),
            nvjpegJpegStateCreate: sym!(nvjpegJpegStateCreate),
            nvjpegJpegStateDestroy: sym!(nvjpegJpegStateDestroy),
            nvjpegGetImageInfo: sym!(nvjpegGetImageInfo),
            nvjpegJpegStreamCreate: sym!(nvjpegJpegStreamCreate),
            nvjpegJpegStreamDestroy: sym!(nvjpegJpegStreamDestroy),
            nvjpegJpegStreamParseHeader: sym!(nvjpegJpegStreamParseHeader),
            nvjpegDecodeBatchedSupported: sym!(nvjpegDecodeBatchedSupported),
            nvjpegDecodeBatchedInitialize: sym!(nvjpegDecodeBatchedInitialize),
            nvjpegDecodeBatched: sym!(nvjpegDecodeBatched),
            version: (0, 0, 0),
            path: path.to_string(),
            _lib: lib,
        };
        let prop = |p: c_int| {
            let mut v = 0;
            // SAFETY: writes one int.
            unsafe { (n.nvjpegGetProperty)(p, &mut v) };
            v
        };
        n.version = (prop(MAJOR_VERSION), prop(MINOR_VERSION), prop(PATCH_LEVEL));
        if n.version.0 < 11 {
            return Err(format!("{path} is nvJPEG {}.{}: the hardware back end needs 11 or newer", n.version.0, n.version.1));
        }
        Ok(n)
    }
}

/// Where CUDA toolkits keep their libraries: `CUDA_PATH` (Windows' installer sets it) and the
/// usual Linux prefix.
fn toolkit_dirs() -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Some(p) = std::env::var_os("CUDA_PATH") {
        let p = std::path::PathBuf::from(p);
        v.push(p.join(if cfg!(windows) { "bin" } else { "lib64" }));
    }
    if cfg!(not(windows)) {
        v.push("/usr/local/cuda/lib64".into());
        v.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    }
    v
}

static LIB: OnceLock<Result<Nvjpeg, String>> = OnceLock::new();

/// The process's nvJPEG, loaded on first use (`NVCAM_NVJPEG_LIBRARY`, else [`NAMES`] in turn), or
/// why there is none (logged once, at info: most hosts have no nvJPEG and need none).
pub(crate) fn lib() -> Result<&'static Nvjpeg, String> {
    LIB.get_or_init(|| {
        let r = match std::env::var("NVCAM_NVJPEG_LIBRARY") {
            Ok(p) if !p.is_empty() => Nvjpeg::open(&p),
            _ => {
                let mut why = Vec::new();
                let mut found = None;
                // The loader's path first, then the CUDA toolkit's own folders (a toolkit
                // install seldom puts its libraries on the loader path).
                let mut names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
                for dir in toolkit_dirs() {
                    names.extend(NAMES.iter().map(|n| dir.join(n).to_string_lossy().into_owned()));
                }
                for name in &names {
                    match Nvjpeg::open(name) {
                        Ok(n) => {
                            found = Some(n);
                            break;
                        }
                        Err(e) => why.push(e),
                    }
                }
                found.ok_or_else(|| why.join("; "))
            }
        };
        match &r {
            Ok(n) => log::info!("nvJPEG {}.{}.{} loaded from {}", n.version.0, n.version.1, n.version.2, n.path),
            Err(e) => log::info!("nvJPEG not available ({e}): JPEG cameras decode on NVDEC or in software"),
        }
        r
    })
    .as_ref()
    .map_err(Clone::clone)
}
