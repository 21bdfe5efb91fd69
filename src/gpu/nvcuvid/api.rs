//! NVDEC's library and its entry points as the decoder calls them: libnvcuvid opened on first
//! use (`nvcuvid.dll` on Windows; the driver ships it), and one thin method per call returning
//! `Result<_, DriverError>` like the CUDA driver layer (`crate::gpu::driver`), whose error type
//! and conversion they share (NVDEC returns `CUresult`s). A sibling layer rather than part of
//! that one because libnvcuvid is a library of its own, loaded here rather than by cudarc; its
//! declarations are in [`super::sys`], the owners of what these calls make (context lock,
//! parser, decoder, mapped picture) in `crate::decode::nvdec::session`. This is the only place NVDEC's functions
//! are called (the table's fields are private to it).
//!
//! Nothing links against libnvcuvid, so the crate still loads and runs its CPU path on
//! machines without an NVIDIA driver. A missing library or symbol is an error with the reason,
//! never a panic.
//!
//! Every call needs the device's context current, except inside the parser's callbacks (which
//! run within `parse_video_data`, where it is).

use super::sys::*;
use crate::gpu::driver::{check_code, DriverError};
use crate::status::{Error, ErrorKind, Result};
use std::ffi::{c_int, c_uint};
use std::sync::OnceLock;

/// The entry points we use, resolved once from [`LIBRARY`]. The library stays loaded for
/// the life of the process (decoders and parsers may outlive any one owner).
// Each field is named as its symbol.
#[allow(non_snake_case)]
pub struct Nvcuvid {
    cuvidGetDecoderCaps: unsafe extern "C" fn(*mut CUVIDDECODECAPS) -> CUresult,
    cuvidCreateDecoder: unsafe extern "C" fn(*mut CUvideodecoder, *mut CUVIDDECODECREATEINFO) -> CUresult,
    cuvidReconfigureDecoder: unsafe extern "C" fn(CUvideodecoder, *mut CUVIDRECONFIGUREDECODERINFO) -> CUresult,
    cuvidDestroyDecoder: unsafe extern "C" fn(CUvideodecoder) -> CUresult,
    cuvidDecodePicture: unsafe extern "C" fn(CUvideodecoder, *mut CUVIDPICPARAMS) -> CUresult,
    cuvidGetDecodeStatus: unsafe extern "C" fn(CUvideodecoder, c_int, *mut CUVIDGETDECODESTATUS) -> CUresult,
    cuvidMapVideoFrame64:
        unsafe extern "C" fn(CUvideodecoder, c_int, *mut u64, *mut c_uint, *mut CUVIDPROCPARAMS) -> CUresult,
    cuvidUnmapVideoFrame64: unsafe extern "C" fn(CUvideodecoder, u64) -> CUresult,
    cuvidCtxLockCreate: unsafe extern "C" fn(*mut CUvideoctxlock, CUcontext) -> CUresult,
    cuvidCtxLockDestroy: unsafe extern "C" fn(CUvideoctxlock) -> CUresult,
    cuvidCreateVideoParser: unsafe extern "C" fn(*mut CUvideoparser, *mut CUVIDPARSERPARAMS) -> CUresult,
    cuvidParseVideoData: unsafe extern "C" fn(CUvideoparser, *mut CUVIDSOURCEDATAPACKET) -> CUresult,
    cuvidDestroyVideoParser: unsafe extern "C" fn(CUvideoparser) -> CUresult,
    _lib: libloading::Library,
}

/// The library's file name; the dynamic loader searches the usual paths (on Windows the driver
/// installs `nvcuvid.dll` in System32).
#[cfg(not(windows))]
pub(crate) const LIBRARY: &str = "libnvcuvid.so.1";
#[cfg(windows)]
pub(crate) const LIBRARY: &str = "nvcuvid.dll";

impl Nvcuvid {
    /// Opens `path` and resolves every entry point; any failure is an error
    /// (`ErrorKind::Unsupported`: this GPU path is not available here), not a panic.
    pub fn open(path: &str) -> Result<Nvcuvid> {
        let unsupported = |why: String| Error::new(ErrorKind::Unsupported, why);
        // SAFETY: libnvcuvid's initializers are the driver's; loading it has no other effects.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| unsupported(format!("cannot load {path}: {e}")))?;
        macro_rules! sym {
            ($name:ident) => {{
                // SAFETY: the type is the header's prototype for this symbol.
                let s = unsafe { lib.get(concat!(stringify!($name), "\0").as_bytes()) }
                    .map_err(|e| unsupported(format!("{path} has no {}: {e}", stringify!($name))))?;
                *s
            }};
        }
        Ok(Nvcuvid {
            cuvidGetDecoderCaps: sym!(cuvidGetDecoderCaps),
            cuvidCreateDecoder: sym!(cuvidCreateDecoder),
            cuvidReconfigureDecoder: sym!(cuvidReconfigureDecoder),
            cuvidDestroyDecoder: sym!(cuvidDestroyDecoder),
            cuvidDecodePicture: sym!(cuvidDecodePicture),
            cuvidGetDecodeStatus: sym!(cuvidGetDecodeStatus),
            cuvidMapVideoFrame64: sym!(cuvidMapVideoFrame64),
            cuvidUnmapVideoFrame64: sym!(cuvidUnmapVideoFrame64),
            cuvidCtxLockCreate: sym!(cuvidCtxLockCreate),
            cuvidCtxLockDestroy: sym!(cuvidCtxLockDestroy),
            cuvidCreateVideoParser: sym!(cuvidCreateVideoParser),
            cuvidParseVideoData: sym!(cuvidParseVideoData),
            cuvidDestroyVideoParser: sym!(cuvidDestroyVideoParser),
            _lib: lib,
        })
    }
}

static LIB: OnceLock<Result<Nvcuvid>> = OnceLock::new();

/// The process's libnvcuvid, loaded on first use; why it is unavailable otherwise.
pub fn lib() -> Result<&'static Nvcuvid> {
    LIB.get_or_init(|| Nvcuvid::open(LIBRARY)).as_ref().map_err(Clone::clone)
}

/// Whether libnvcuvid could be loaded (loads it on first call).
pub fn available() -> bool {
    lib().is_ok()
}

impl Nvcuvid {
    /// `cuvidGetDecoderCaps`: fills `c` for the codec, chroma format and depth it names.
    pub(crate) fn get_decoder_caps(&self, c: &mut CUVIDDECODECAPS) -> std::result::Result<(), DriverError> {
        // SAFETY: fills the struct we own.
        check_code("cuvidGetDecoderCaps", unsafe { (self.cuvidGetDecoderCaps)(c) })
    }

    /// `cuvidCtxLockCreate` for `ctx`.
    ///
    /// # Safety
    /// `ctx` is a live context that outlives the lock.
    pub(crate) unsafe fn ctx_lock_create(&self, ctx: CUcontext) -> std::result::Result<CUvideoctxlock, DriverError> {
        let mut l: CUvideoctxlock = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check_code("cuvidCtxLockCreate", unsafe { (self.cuvidCtxLockCreate)(&mut l, ctx) })?;
        Ok(l)
    }

    /// `cuvidCtxLockDestroy`.
    ///
    /// # Safety
    /// `l` is a lock of ours, destroyed once, that no live decoder uses.
    pub(crate) unsafe fn ctx_lock_destroy(&self, l: CUvideoctxlock) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidCtxLockDestroy", unsafe { (self.cuvidCtxLockDestroy)(l) })
    }

    /// `cuvidCreateVideoParser`.
    ///
    /// # Safety
    /// `params` is fully written; its `pUserData` is what the callbacks expect and stays valid
    /// (and unaliased while a parse runs) until the parser is destroyed.
    pub(crate) unsafe fn create_video_parser(&self, params: &mut CUVIDPARSERPARAMS) -> std::result::Result<CUvideoparser, DriverError> {
        let mut p: CUvideoparser = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check_code("cuvidCreateVideoParser", unsafe { (self.cuvidCreateVideoParser)(&mut p, params) })?;
        Ok(p)
    }

    /// `cuvidParseVideoData`: the parser's callbacks run inside, on this thread.
    ///
    /// # Safety
    /// `p` is a live parser of ours, not parsing on another thread; `pkt` points at a payload
    /// that stays alive for the call.
    pub(crate) unsafe fn parse_video_data(&self, p: CUvideoparser, pkt: &mut CUVIDSOURCEDATAPACKET) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidParseVideoData", unsafe { (self.cuvidParseVideoData)(p, pkt) })
    }

    /// `cuvidDestroyVideoParser`.
    ///
    /// # Safety
    /// `p` is a parser of ours, destroyed once, not parsing.
    pub(crate) unsafe fn destroy_video_parser(&self, p: CUvideoparser) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDestroyVideoParser", unsafe { (self.cuvidDestroyVideoParser)(p) })
    }

    /// `cuvidCreateDecoder`.
    ///
    /// # Safety
    /// `ci` is fully written, and its `vidLock` (null or a lock of ours) outlives the decoder.
    pub(crate) unsafe fn create_decoder(&self, ci: &mut CUVIDDECODECREATEINFO) -> std::result::Result<CUvideodecoder, DriverError> {
        let mut d: CUvideodecoder = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check_code("cuvidCreateDecoder", unsafe { (self.cuvidCreateDecoder)(&mut d, ci) })?;
        Ok(d)
    }

    /// `cuvidReconfigureDecoder`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours whose surfaces nothing reads any more.
    pub(crate) unsafe fn reconfigure_decoder(&self, d: CUvideodecoder, ri: &mut CUVIDRECONFIGUREDECODERINFO) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidReconfigureDecoder", unsafe { (self.cuvidReconfigureDecoder)(d, ri) })
    }

    /// `cuvidDestroyDecoder`.
    ///
    /// # Safety
    /// `d` is a decoder of ours, destroyed once, whose surfaces nothing reads any more.
    pub(crate) unsafe fn destroy_decoder(&self, d: CUvideodecoder) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDestroyDecoder", unsafe { (self.cuvidDestroyDecoder)(d) })
    }

    /// `cuvidDecodePicture`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours; `p` is the parser's picture parameters for this call.
    pub(crate) unsafe fn decode_picture(&self, d: CUvideodecoder, p: &mut CUVIDPICPARAMS) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDecodePicture", unsafe { (self.cuvidDecodePicture)(d, p) })
    }

    /// `cuvidGetDecodeStatus` of picture `index`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours.
    pub(crate) unsafe fn get_decode_status(&self, d: CUvideodecoder, index: c_int) -> std::result::Result<cuvidDecodeStatus, DriverError> {
        let mut ds = CUVIDGETDECODESTATUS { decodeStatus: 0, reserved: [0; 31], pReserved: [std::ptr::null_mut(); 8] };
        // SAFETY: the caller's contract; fills the struct we own.
        check_code("cuvidGetDecodeStatus", unsafe { (self.cuvidGetDecodeStatus)(d, index, &mut ds) })?;
        Ok(ds.decodeStatus)
    }

    /// `cuvidMapVideoFrame64`: the mapped output surface's (address, pitch).
    ///
    /// # Safety
    /// `d` is a live decoder of ours and `index` a picture its parser handed out; the surface is
    /// unmapped once ([`Nvcuvid::unmap_video_frame`]).
    pub(crate) unsafe fn map_video_frame(&self, d: CUvideodecoder, index: c_int, pp: &mut CUVIDPROCPARAMS) -> std::result::Result<(u64, u32), DriverError> {
        let (mut ptr, mut pitch) = (0u64, 0u32);
        // SAFETY: the caller's contract; writes the surface's address and pitch.
        check_code("cuvidMapVideoFrame64", unsafe { (self.cuvidMapVideoFrame64)(d, index, &mut ptr, &mut pitch, pp) })?;
        Ok((ptr, pitch))
    }

    /// `cuvidUnmapVideoFrame64`.
    ///
    /// # Safety
    /// `ptr` is a surface `d` mapped, unmapped once.
    pub(crate) unsafe fn unmap_video_frame(&self, d: CUvideodecoder, ptr: u64) -> std::result::Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidUnmapVideoFrame64", unsafe { (self.cuvidUnmapVideoFrame64)(d, ptr) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_an_error_not_a_panic() {
        let r = Nvcuvid::open("libnvcuvid-does-not-exist.so.1");
        let e = r.err().expect("a library that is not there cannot load");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.msg.contains("cannot load"), "{e}");
    }

    #[test]
    fn a_library_without_the_symbols_is_an_error() {
        // libc (kernel32 on Windows) is always there and has none of NVDEC's entry points.
        let other = if cfg!(windows) { "kernel32.dll" } else { "libc.so.6" };
        let e = Nvcuvid::open(other).err().expect("libc is not libnvcuvid");
        assert!(e.msg.contains("has no cuvid"), "{e}");
    }

    #[test]
    fn lib_answers_either_way() {
        // On a machine without the driver this is Err with a reason; with it, Ok. Never a panic.
        match lib() {
            Ok(_) => {}
            Err(e) => assert!(!e.msg.is_empty()),
        }
    }
}
