//! nvJPEG's library and its entry points as the decoder calls them: opened on first use, and one
//! thin method per call returning `Result<_, NvjpegError>`, as `crate::gpu::nvcuvid::api` does for
//! libnvcuvid. This is the only place nvJPEG's functions are called (the table's fields are
//! private to it); its declarations are in [`super::sys`].
//!
//! Every call needs the handle's device context current.
// Each field is named as its symbol.
#![allow(non_snake_case)]

use super::sys::*;
use crate::status::Error;
use std::ffi::{c_int, c_uchar, c_uint, c_void};
use std::sync::OnceLock;

/// A failed nvJPEG call: its name and status (raw: a value a later library adds must stay valid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NvjpegError {
    pub call: &'static str,
    pub status: nvjpegStatus_t,
}

impl From<NvjpegError> for Error {
    fn from(e: NvjpegError) -> Error {
        super::error(e.call, e.status)
    }
}

fn check(call: &'static str, status: nvjpegStatus_t) -> Result<(), NvjpegError> {
    if status == NVJPEG_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(NvjpegError { call, status })
    }
}

/// The entry points used, resolved once. The library stays loaded for the process's life.
pub(crate) struct Nvjpeg {
    nvjpegGetProperty: unsafe extern "C" fn(c_int, *mut c_int) -> nvjpegStatus_t,
    nvjpegCreateEx: unsafe extern "C" fn(nvjpegBackend_t, *mut c_void, *mut c_void, c_uint, *mut nvjpegHandle_t) -> nvjpegStatus_t,
    nvjpegDestroy: unsafe extern "C" fn(nvjpegHandle_t) -> nvjpegStatus_t,
    nvjpegGetHardwareDecoderInfo: unsafe extern "C" fn(nvjpegHandle_t, *mut c_uint, *mut c_uint) -> nvjpegStatus_t,
    nvjpegJpegStateCreate: unsafe extern "C" fn(nvjpegHandle_t, *mut nvjpegJpegState_t) -> nvjpegStatus_t,
    nvjpegJpegStateDestroy: unsafe extern "C" fn(nvjpegJpegState_t) -> nvjpegStatus_t,
    nvjpegGetImageInfo:
        unsafe extern "C" fn(nvjpegHandle_t, *const c_uchar, usize, *mut c_int, *mut nvjpegChromaSubsampling_t, *mut c_int, *mut c_int) -> nvjpegStatus_t,
    nvjpegJpegStreamCreate: unsafe extern "C" fn(nvjpegHandle_t, *mut nvjpegJpegStream_t) -> nvjpegStatus_t,
    nvjpegJpegStreamDestroy: unsafe extern "C" fn(nvjpegJpegStream_t) -> nvjpegStatus_t,
    nvjpegJpegStreamParseHeader: unsafe extern "C" fn(nvjpegHandle_t, *const c_uchar, usize, nvjpegJpegStream_t) -> nvjpegStatus_t,
    nvjpegDecodeBatchedSupported: unsafe extern "C" fn(nvjpegHandle_t, nvjpegJpegStream_t, *mut c_int) -> nvjpegStatus_t,
    nvjpegDecodeBatchedInitialize: unsafe extern "C" fn(nvjpegHandle_t, nvjpegJpegState_t, c_int, c_int, nvjpegOutputFormat_t) -> nvjpegStatus_t,
    nvjpegDecodeBatched: unsafe extern "C" fn(
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
    if let Some(p) = crate::switches::Switch::CudaPath.var_os() {
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
        let r = match crate::switches::Switch::NvjpegLibrary.var() {
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


impl Nvjpeg {
    /// `nvjpegCreateEx` with the hardware back end and the default allocators.
    pub(crate) fn create_hardware(&self) -> Result<nvjpegHandle_t, NvjpegError> {
        let mut h: nvjpegHandle_t = std::ptr::null_mut();
        // SAFETY: default allocators (null); writes one handle.
        check("nvjpegCreateEx", unsafe { (self.nvjpegCreateEx)(NVJPEG_BACKEND_HARDWARE, std::ptr::null_mut(), std::ptr::null_mut(), 0, &mut h) })?;
        Ok(h)
    }

    /// `nvjpegGetHardwareDecoderInfo`: (engines, cores per engine).
    ///
    /// # Safety
    /// `h` is a live handle of this library.
    pub(crate) unsafe fn hardware_decoder_info(&self, h: nvjpegHandle_t) -> Result<(u32, u32), NvjpegError> {
        let (mut n, mut cores) = (0, 0);
        // SAFETY: the caller's contract; writes two integers.
        check("nvjpegGetHardwareDecoderInfo", unsafe { (self.nvjpegGetHardwareDecoderInfo)(h, &mut n, &mut cores) })?;
        Ok((n, cores))
    }

    /// `nvjpegDestroy`.
    ///
    /// # Safety
    /// `h` is a live handle, destroyed once, after every state and stream made from it.
    pub(crate) unsafe fn destroy(&self, h: nvjpegHandle_t) -> Result<(), NvjpegError> {
        // SAFETY: the caller's contract.
        check("nvjpegDestroy", unsafe { (self.nvjpegDestroy)(h) })
    }

    /// `nvjpegJpegStateCreate`.
    ///
    /// # Safety
    /// `h` is a live handle of this library.
    pub(crate) unsafe fn state_create(&self, h: nvjpegHandle_t) -> Result<nvjpegJpegState_t, NvjpegError> {
        let mut s: nvjpegJpegState_t = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check("nvjpegJpegStateCreate", unsafe { (self.nvjpegJpegStateCreate)(h, &mut s) })?;
        Ok(s)
    }

    /// `nvjpegJpegStateDestroy`.
    ///
    /// # Safety
    /// `s` is a live state, destroyed once, its work complete.
    pub(crate) unsafe fn state_destroy(&self, s: nvjpegJpegState_t) -> Result<(), NvjpegError> {
        // SAFETY: the caller's contract.
        check("nvjpegJpegStateDestroy", unsafe { (self.nvjpegJpegStateDestroy)(s) })
    }

    /// `nvjpegJpegStreamCreate`.
    ///
    /// # Safety
    /// `h` is a live handle of this library.
    pub(crate) unsafe fn stream_create(&self, h: nvjpegHandle_t) -> Result<nvjpegJpegStream_t, NvjpegError> {
        let mut s: nvjpegJpegStream_t = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check("nvjpegJpegStreamCreate", unsafe { (self.nvjpegJpegStreamCreate)(h, &mut s) })?;
        Ok(s)
    }

    /// `nvjpegJpegStreamDestroy`.
    ///
    /// # Safety
    /// `s` is a live JPEG stream, destroyed once.
    pub(crate) unsafe fn stream_destroy(&self, s: nvjpegJpegStream_t) -> Result<(), NvjpegError> {
        // SAFETY: the caller's contract.
        check("nvjpegJpegStreamDestroy", unsafe { (self.nvjpegJpegStreamDestroy)(s) })
    }

    /// `nvjpegJpegStreamParseHeader` of `data` into `s`.
    ///
    /// # Safety
    /// `h` and `s` are live (`s` made from `h`).
    pub(crate) unsafe fn parse_header(&self, h: nvjpegHandle_t, data: &[u8], s: nvjpegJpegStream_t) -> Result<(), NvjpegError> {
        // SAFETY: the caller's contract; `data` is valid for its length.
        check("nvjpegJpegStreamParseHeader", unsafe { (self.nvjpegJpegStreamParseHeader)(h, data.as_ptr(), data.len(), s) })
    }

    /// `nvjpegDecodeBatchedSupported`: whether the hardware back end decodes the picture parsed
    /// into `s`.
    ///
    /// # Safety
    /// As [`Nvjpeg::parse_header`], `s` parsed.
    pub(crate) unsafe fn batched_supported(&self, h: nvjpegHandle_t, s: nvjpegJpegStream_t) -> Result<bool, NvjpegError> {
        let mut unsupported = 1;
        // SAFETY: the caller's contract; writes one int (0: supported).
        check("nvjpegDecodeBatchedSupported", unsafe { (self.nvjpegDecodeBatchedSupported)(h, s, &mut unsupported) })?;
        Ok(unsupported == 0)
    }

    /// `nvjpegGetImageInfo`: (components, subsampling, widths, heights) of `data`.
    ///
    /// # Safety
    /// `h` is a live handle of this library.
    pub(crate) unsafe fn image_info(&self, h: nvjpegHandle_t, data: &[u8]) -> Result<(c_int, nvjpegChromaSubsampling_t, [c_int; 4], [c_int; 4]), NvjpegError> {
        let (mut n, mut css, mut w, mut hh) = (0, 0, [0; 4], [0; 4]);
        // SAFETY: the caller's contract; `data` is valid for its length; writes the component
        // count, the layout and four sizes on each axis.
        check("nvjpegGetImageInfo", unsafe { (self.nvjpegGetImageInfo)(h, data.as_ptr(), data.len(), &mut n, &mut css, w.as_mut_ptr(), hh.as_mut_ptr()) })?;
        Ok((n, css, w, hh))
    }

    /// `nvjpegDecodeBatchedInitialize`: `n` pictures per call, one host thread, planar output.
    ///
    /// # Safety
    /// `h` and `st` are live (`st` made from `h`), no call on `st` running.
    pub(crate) unsafe fn batched_initialize(&self, h: nvjpegHandle_t, st: nvjpegJpegState_t, n: usize) -> Result<(), NvjpegError> {
        // SAFETY: the caller's contract.
        check("nvjpegDecodeBatchedInitialize", unsafe { (self.nvjpegDecodeBatchedInitialize)(h, st, n as c_int, 1, NVJPEG_OUTPUT_YUV) })
    }

    /// `nvjpegDecodeBatched` of the pictures `data[i]` (`len[i]` bytes each) into `out[i]`,
    /// enqueued on `stream`.
    ///
    /// # Safety
    /// `h` and `st` are live and initialized for `data.len()` pictures
    /// ([`Nvjpeg::batched_initialize`]); `len` and `out` are as long as `data`; each `data[i]` is
    /// valid for `len[i]` bytes until the call returns (nvJPEG stages it); every plane of `out`
    /// is device memory of the current context with room for its picture at its pitch, valid
    /// until the work on `stream` (a live stream of that context) has run.
    pub(crate) unsafe fn decode_batched(&self, h: nvjpegHandle_t, st: nvjpegJpegState_t, data: &[*const u8], len: &[usize], out: &mut [nvjpegImage_t], stream: cudaStream_t) -> Result<(), NvjpegError> {
        debug_assert!(len.len() == data.len() && out.len() == data.len());
        // SAFETY: the caller's contract.
        check("nvjpegDecodeBatched", unsafe { (self.nvjpegDecodeBatched)(h, st, data.as_ptr(), len.as_ptr(), out.as_mut_ptr(), stream) })
    }
}
