//! NVDEC's entry points as the decoder calls them: one thin method per call, returning
//! `Result<_, DriverError>` like the CUDA driver layer (`crate::gpu::driver`), whose error type
//! and conversion they share (NVDEC returns `CUresult`s). A sibling layer rather than part of
//! that one because libnvcuvid is a library of its own, opened by [`super::sys`] on first use;
//! the owners of what these calls make (context lock, parser, decoder, mapped picture) are in
//! `session.rs`. This is the only place NVDEC's functions are called.
//!
//! Every call needs the device's context current, except inside the parser's callbacks (which
//! run within `parse_video_data`, where it is).

use super::sys::*;
use crate::gpu::driver::{check_code, DriverError};
use std::ffi::c_int;

impl Nvcuvid {
    /// `cuvidGetDecoderCaps`: fills `c` for the codec, chroma format and depth it names.
    pub(crate) fn get_decoder_caps(&self, c: &mut CUVIDDECODECAPS) -> Result<(), DriverError> {
        // SAFETY: fills the struct we own.
        check_code("cuvidGetDecoderCaps", unsafe { (self.cuvidGetDecoderCaps)(c) })
    }

    /// `cuvidCtxLockCreate` for `ctx`.
    ///
    /// # Safety
    /// `ctx` is a live context that outlives the lock.
    pub(crate) unsafe fn ctx_lock_create(&self, ctx: CUcontext) -> Result<CUvideoctxlock, DriverError> {
        let mut l: CUvideoctxlock = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check_code("cuvidCtxLockCreate", unsafe { (self.cuvidCtxLockCreate)(&mut l, ctx) })?;
        Ok(l)
    }

    /// `cuvidCtxLockDestroy`.
    ///
    /// # Safety
    /// `l` is a lock of ours, destroyed once, that no live decoder uses.
    pub(crate) unsafe fn ctx_lock_destroy(&self, l: CUvideoctxlock) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidCtxLockDestroy", unsafe { (self.cuvidCtxLockDestroy)(l) })
    }

    /// `cuvidCreateVideoParser`.
    ///
    /// # Safety
    /// `params` is fully written; its `pUserData` is what the callbacks expect and stays valid
    /// (and unaliased while a parse runs) until the parser is destroyed.
    pub(crate) unsafe fn create_video_parser(&self, params: &mut CUVIDPARSERPARAMS) -> Result<CUvideoparser, DriverError> {
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
    pub(crate) unsafe fn parse_video_data(&self, p: CUvideoparser, pkt: &mut CUVIDSOURCEDATAPACKET) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidParseVideoData", unsafe { (self.cuvidParseVideoData)(p, pkt) })
    }

    /// `cuvidDestroyVideoParser`.
    ///
    /// # Safety
    /// `p` is a parser of ours, destroyed once, not parsing.
    pub(crate) unsafe fn destroy_video_parser(&self, p: CUvideoparser) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDestroyVideoParser", unsafe { (self.cuvidDestroyVideoParser)(p) })
    }

    /// `cuvidCreateDecoder`.
    ///
    /// # Safety
    /// `ci` is fully written, and its `vidLock` (null or a lock of ours) outlives the decoder.
    pub(crate) unsafe fn create_decoder(&self, ci: &mut CUVIDDECODECREATEINFO) -> Result<CUvideodecoder, DriverError> {
        let mut d: CUvideodecoder = std::ptr::null_mut();
        // SAFETY: the caller's contract; writes one handle.
        check_code("cuvidCreateDecoder", unsafe { (self.cuvidCreateDecoder)(&mut d, ci) })?;
        Ok(d)
    }

    /// `cuvidReconfigureDecoder`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours whose surfaces nothing reads any more.
    pub(crate) unsafe fn reconfigure_decoder(&self, d: CUvideodecoder, ri: &mut CUVIDRECONFIGUREDECODERINFO) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidReconfigureDecoder", unsafe { (self.cuvidReconfigureDecoder)(d, ri) })
    }

    /// `cuvidDestroyDecoder`.
    ///
    /// # Safety
    /// `d` is a decoder of ours, destroyed once, whose surfaces nothing reads any more.
    pub(crate) unsafe fn destroy_decoder(&self, d: CUvideodecoder) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDestroyDecoder", unsafe { (self.cuvidDestroyDecoder)(d) })
    }

    /// `cuvidDecodePicture`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours; `p` is the parser's picture parameters for this call.
    pub(crate) unsafe fn decode_picture(&self, d: CUvideodecoder, p: &mut CUVIDPICPARAMS) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidDecodePicture", unsafe { (self.cuvidDecodePicture)(d, p) })
    }

    /// `cuvidGetDecodeStatus` of picture `index`.
    ///
    /// # Safety
    /// `d` is a live decoder of ours.
    pub(crate) unsafe fn get_decode_status(&self, d: CUvideodecoder, index: c_int) -> Result<cuvidDecodeStatus, DriverError> {
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
    pub(crate) unsafe fn map_video_frame(&self, d: CUvideodecoder, index: c_int, pp: &mut CUVIDPROCPARAMS) -> Result<(u64, u32), DriverError> {
        let (mut ptr, mut pitch) = (0u64, 0u32);
        // SAFETY: the caller's contract; writes the surface's address and pitch.
        check_code("cuvidMapVideoFrame64", unsafe { (self.cuvidMapVideoFrame64)(d, index, &mut ptr, &mut pitch, pp) })?;
        Ok((ptr, pitch))
    }

    /// `cuvidUnmapVideoFrame64`.
    ///
    /// # Safety
    /// `ptr` is a surface `d` mapped, unmapped once.
    pub(crate) unsafe fn unmap_video_frame(&self, d: CUvideodecoder, ptr: u64) -> Result<(), DriverError> {
        // SAFETY: the caller's contract.
        check_code("cuvidUnmapVideoFrame64", unsafe { (self.cuvidUnmapVideoFrame64)(d, ptr) })
    }
}
