//! Direct NVDEC: NVIDIA's bitstream parser and hardware decoder (libnvcuvid, loaded at run time)
//! behind the [`Decoder`] seam, writing NV12 into the camera's device pool.
//!
//! Per camera (one worker thread):
//!
//! ```text
//! demuxed packet ─► Annex B (h264/hevc_mp4toannexb) ─► cuvidParseVideoData
//!     sequence callback: caps check, create / reconfigure the decoder, surfaces
//!     decode callback:   cuvidDecodePicture (the engine starts; nothing waits)
//!     display callback:  queue the picture index (display order)
//! receive()    ─► the next queued picture
//! write_into() ─► cuvidMapVideoFrame64 (post-processing on the camera's stream)
//!                 ─► cuMemcpy2DAsync Y, UV into the leased slot (same stream)
//!                 ─► cuEventRecord (the slot's last-use event) ─► cuvidUnmapVideoFrame64
//! ```
//!
//! Surfaces: decode surfaces = the sequence's `min_num_decode_surfaces` + the display delay + a
//! margin of [`SURFACE_MARGIN`] (at most 32); output (mapped) surfaces = [`OUTPUT_SURFACES`]. The
//! parser's display delay (default [`DISPLAY_DELAY`], `NVCAM_NVDEC_DISPLAY_DELAY`) hands a
//! picture out only after that many later pictures were submitted, so the engine decodes ahead
//! and a map rarely waits for its picture. One `CUvideoctxlock` per CUDA context is shared by all
//! decoders in it (`NVCAM_NVDEC_CTXLOCK=decoder|none` changes that, for measurements).
//!
//! # Why unmapping right after the copy is enqueued is safe
//!
//! `write_into` unmaps the output surface as soon as the two copies and the slot's event are
//! *enqueued*, without waiting for them. The copies read the surface later, on the GPU. That is
//! correct because every write to an output surface is ordered after our copies on one stream:
//!
//! 1. Output surfaces belong to the decoder from `cuvidCreateDecoder` to `cuvidDestroyDecoder` (or
//!    `cuvidReconfigureDecoder`); unmapping frees nothing, it returns the surface to the decoder's
//!    set of `ulNumOutputSurfaces`.
//! 2. The only thing that writes an output surface is the post-processing of a later
//!    `cuvidMapVideoFrame64`, which the driver enqueues on `CUVIDPROCPARAMS::output_stream`.
//!    We always pass the camera's stream there.
//! 3. Our copies out of the surface are enqueued on that same stream after the map returned.
//!    A stream runs its work in order, so the next map's post-processing into the surface
//!    (enqueued after our unmap, hence after our copies) starts only after the copies finished.
//! 4. The decoder's surfaces are released only by `cuvidDestroyDecoder` and reallocated only by
//!    `cuvidReconfigureDecoder`; before either we wait for the camera's stream (teardown and
//!    resolution changes only, never per frame).
//!
//! NVIDIA's own NvDecoder sample does the same with stream-ordered allocations (record an event,
//! unmap, no synchronize), and FFmpeg's nvdec hwaccel unmaps when a frame is unreffed, with the
//! copies on `hwctx->stream`. `tests/gpu_nvdec.rs` checks it rather than trusting it: with one
//! output surface (every map reuses the surface just unmapped) and a host function that stalls
//! the camera's stream for milliseconds before each copy, the next map and unmap happen long
//! before the copy runs, and every frame must still equal FFmpeg's software decode bit for bit,
//! under compute-sanitizer as well.
//!
//! # Errors
//!
//! A failed decode, map or unmap on one camera is reported for that camera ([`Decoder::
//! take_warning`] → its last error) and recovered by recreating its parser and decoder; decoding
//! resumes at the next key frame. Other cameras have their own decoders and never see it. More
//! than [`MAX_RECOVERIES`] recoveries within a minute end the session with the error (the camera
//! then reconnects as for any failure).

use super::context::{ck, Copy2D, Device, Mem};
use super::nvcuvid::{self as cu, Nvcuvid};
use super::pool::DeviceStorage;
use super::{stats, CamGpu, HwTicket};
use crate::decode::{pts_us, Decoder, Picture};
use crate::pool::{Geometry, Lease, Pool, Storage as _};
use crate::status::*;
use ff::ffi;
use ffmpeg_next as ff;
use ff::packet::{Mut as _, Ref as _};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Pictures the parser holds back before display (decode runs this far ahead of mapping).
pub const DISPLAY_DELAY: u32 = 2;
/// Decode surfaces beyond `min_num_decode_surfaces` + the display delay.
pub const SURFACE_MARGIN: u32 = 2;
/// Most decode surfaces NVDEC takes.
pub const MAX_DECODE_SURFACES: u32 = 32;
/// Output surfaces that may be mapped at once (we map one at a time; the second lets the next
/// map's post-processing use another surface).
pub const OUTPUT_SURFACES: u32 = 2;
/// Recoveries within [`RECOVERY_WINDOW`] after which the error ends the session.
pub const MAX_RECOVERIES: usize = 5;
const RECOVERY_WINDOW: Duration = Duration::from_secs(60);

/// The NVDEC codec for an FFmpeg codec id, for the codecs this backend takes.
pub fn cuda_codec(id: ff::codec::Id) -> Option<cu::cudaVideoCodec> {
    use ff::codec::Id;
    Some(match id {
        Id::H264 => cu::cudaVideoCodec_H264,
        Id::HEVC => cu::cudaVideoCodec_HEVC,
        Id::VP9 => cu::cudaVideoCodec_VP9,
        Id::AV1 => cu::cudaVideoCodec_AV1,
        Id::MJPEG => cu::cudaVideoCodec_JPEG,
        _ => return None,
    })
}

fn cu_err(call: &str, r: cu::CUresult) -> Error {
    let code = match r {
        2 => NVCAM_E_OUT_OF_MEMORY,
        801 => NVCAM_E_UNSUPPORTED,
        _ => NVCAM_E_CUDA,
    };
    Error::new(code, format!("{call} failed: {}", cu::result_name(r)))
}

fn cu_ck(call: &str, r: cu::CUresult) -> Result<()> {
    if r == cu::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(cu_err(call, r))
    }
}

// ---------------------------------------------------------------------------------------------
// Process-wide counters and per-frame timing (for stats, tests and the benchmark).

/// Counters summed over every direct-NVDEC decoder in the process.
#[derive(Default)]
pub struct NvdecCounters {
    pub decoders_created: AtomicU64,
    pub reconfigures: AtomicU64,
    pub recoveries: AtomicU64,
    /// Pictures whose surface the parser reused before we mapped them (dropped; never expected).
    pub surface_hazards: AtomicU64,
    /// Pictures NVDEC reported as decoded with errors (cuvidGetDecodeStatus).
    pub decode_errors: AtomicU64,
    /// Pictures moved to a side buffer because a reconfigure was about to drop their surfaces.
    pub parked: AtomicU64,
    /// Frames whose output surface was unmapped while their copy out of it had not yet run
    /// (checked only under the ordering test's stream stall knob: one event query per frame).
    pub unmapped_before_copy_ran: AtomicU64,
    pub frames: AtomicU64,
    pub packets: AtomicU64,
    /// Nanoseconds spent in cuvidParseVideoData (bitstream filter included; the decode callback,
    /// hence cuvidDecodePicture, runs inside it).
    pub ns_parse: AtomicU64,
    /// In cuvidMapVideoFrame64 (waits for the picture's decode if it is not done yet).
    pub ns_map: AtomicU64,
    /// Enqueueing the two copies and recording the slot's event.
    pub ns_copy: AtomicU64,
    pub ns_unmap: AtomicU64,
}

static COUNTERS: NvdecCounters = NvdecCounters {
    decoders_created: AtomicU64::new(0),
    reconfigures: AtomicU64::new(0),
    recoveries: AtomicU64::new(0),
    surface_hazards: AtomicU64::new(0),
    decode_errors: AtomicU64::new(0),
    parked: AtomicU64::new(0),
    unmapped_before_copy_ran: AtomicU64::new(0),
    frames: AtomicU64::new(0),
    packets: AtomicU64::new(0),
    ns_parse: AtomicU64::new(0),
    ns_map: AtomicU64::new(0),
    ns_copy: AtomicU64::new(0),
    ns_unmap: AtomicU64::new(0),
};

pub fn counters() -> &'static NvdecCounters {
    &COUNTERS
}

/// Local timing, flushed into [`COUNTERS`] every few frames (keeps atomics off the hot path).
#[derive(Default)]
struct Timing {
    frames: u64,
    packets: u64,
    parse: u64,
    map: u64,
    copy: u64,
    unmap: u64,
}

impl Timing {
    fn flush(&mut self) {
        let c = &COUNTERS;
        let r = Ordering::Relaxed;
        c.frames.fetch_add(self.frames, r);
        c.packets.fetch_add(self.packets, r);
        c.ns_parse.fetch_add(self.parse, r);
        c.ns_map.fetch_add(self.map, r);
        c.ns_copy.fetch_add(self.copy, r);
        c.ns_unmap.fetch_add(self.unmap, r);
        *self = Timing::default();
    }
}

fn ns(t: Instant) -> u64 {
    t.elapsed().as_nanos() as u64
}

// ---------------------------------------------------------------------------------------------
// Test knobs (hidden): applied to decoders whose coded width matches, so one test can shape its
// own camera while other tests in the same process run untouched.

#[doc(hidden)]
pub mod testing {
    use parking_lot::Mutex;

    #[derive(Clone, Copy, Debug, Default)]
    pub struct Knobs {
        /// Applies to decoders of streams with this coded width.
        pub coded_width: u32,
        /// Output surfaces instead of the default (1: every map reuses the surface just unmapped).
        pub output_surfaces: u32,
        /// A host function sleeping this long is put on the camera's stream before each map, so
        /// the GPU runs far behind the CPU (ordering test).
        pub stream_delay_us: u32,
        /// The decode call with this number (from 1) fails as if the engine had (recovery test).
        pub fail_decode_at: u32,
    }

    pub(super) static KNOBS: Mutex<Vec<Knobs>> = Mutex::new(Vec::new());

    pub fn set(k: Knobs) {
        let mut v = KNOBS.lock();
        v.retain(|o| o.coded_width != k.coded_width);
        v.push(k);
    }

    pub fn clear() {
        KNOBS.lock().clear();
    }

    pub(super) fn for_width(w: u32) -> Option<Knobs> {
        KNOBS.lock().iter().find(|k| k.coded_width == w).copied()
    }
}

// ---------------------------------------------------------------------------------------------
// One CUvideoctxlock per CUDA context, shared by the decoders in it.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LockMode {
    PerContext,
    PerDecoder,
    None,
}

fn lock_mode() -> LockMode {
    static MODE: OnceLock<LockMode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("NVCAM_NVDEC_CTXLOCK").as_deref() {
        Ok("decoder") => LockMode::PerDecoder,
        Ok("none") => LockMode::None,
        _ => LockMode::PerContext,
    })
}

/// (context, lock, decoders using it)
static CTX_LOCKS: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());

struct CtxLock {
    lib: &'static Nvcuvid,
    ctx: usize,
    lock: cu::CUvideoctxlock,
    shared: bool,
}

unsafe impl Send for CtxLock {}

impl CtxLock {
    fn acquire(lib: &'static Nvcuvid, dev: &Device) -> Result<CtxLock> {
        let ctx = dev.cu_ctx() as usize;
        let create = || -> Result<cu::CUvideoctxlock> {
            let mut l: cu::CUvideoctxlock = std::ptr::null_mut();
            cu_ck("cuvidCtxLockCreate", unsafe { (lib.cuvidCtxLockCreate)(&mut l, ctx as cu::CUcontext) })?;
            Ok(l)
        };
        match lock_mode() {
            LockMode::None => Ok(CtxLock { lib, ctx, lock: std::ptr::null_mut(), shared: false }),
            LockMode::PerDecoder => Ok(CtxLock { lib, ctx, lock: create()?, shared: false }),
            LockMode::PerContext => {
                let mut v = CTX_LOCKS.lock();
                if let Some(e) = v.iter_mut().find(|e| e.0 == ctx) {
                    e.2 += 1;
                    return Ok(CtxLock { lib, ctx, lock: e.1 as cu::CUvideoctxlock, shared: true });
                }
                let l = create()?;
                v.push((ctx, l as usize, 1));
                Ok(CtxLock { lib, ctx, lock: l, shared: true })
            }
        }
    }
}

impl Drop for CtxLock {
    fn drop(&mut self) {
        if self.lock.is_null() {
            return;
        }
        let destroy = if self.shared {
            let mut v = CTX_LOCKS.lock();
            match v.iter().position(|e| e.0 == self.ctx) {
                Some(i) => {
                    v[i].2 -= 1;
                    if v[i].2 == 0 {
                        v.swap_remove(i);
                        true
                    } else {
                        false
                    }
                }
                None => false,
            }
        } else {
            true
        };
        if destroy {
            // The last decoder of this context is gone (destroyed before this drop).
            let r = unsafe { (self.lib.cuvidCtxLockDestroy)(self.lock) };
            if r != cu::CUDA_SUCCESS {
                log::warn!("cuvidCtxLockDestroy failed: {}", cu::result_name(r));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Capabilities, cached per (device, codec).

static CAPS: Mutex<Vec<(i32, cu::cudaVideoCodec, Option<cu::CUVIDDECODECAPS>)>> = Mutex::new(Vec::new());

/// NVDEC's capabilities for 8-bit 4:2:0 `codec` on `dev` (None: not supported, or the query
/// failed). The library must be loadable.
pub fn caps(dev: &Device, codec: cu::cudaVideoCodec) -> Option<cu::CUVIDDECODECAPS> {
    if let Some(e) = CAPS.lock().iter().find(|e| e.0 == dev.ordinal && e.1 == codec) {
        return e.2;
    }
    let lib = cu::lib().ok()?;
    let mut c = cu::CUVIDDECODECAPS {
        eCodecType: codec,
        eChromaFormat: cu::cudaVideoChromaFormat_420,
        nBitDepthMinus8: 0,
        ..Default::default()
    };
    let r = match dev.push() {
        Ok(_g) => unsafe { (lib.cuvidGetDecoderCaps)(&mut c) },
        Err(_) => 999,
    };
    let v = (r == cu::CUDA_SUCCESS && c.bIsSupported != 0 && c.nOutputFormatMask & 1 != 0).then_some(c);
    if r != cu::CUDA_SUCCESS {
        log::warn!("GPU {}: cuvidGetDecoderCaps(codec {codec}) failed: {}", dev.ordinal, cu::result_name(r));
    }
    CAPS.lock().push((dev.ordinal, codec, v));
    v
}

/// Whether the direct NVDEC backend can take this stream on `dev`: libnvcuvid loads, the codec
/// is one it handles, its pixel format (when FFmpeg knows it) is 8-bit 4:2:0, and the GPU's
/// decoder supports the codec at this size. The reason otherwise.
pub fn supports(dev: &Device, params: &ff::codec::Parameters) -> std::result::Result<cu::cudaVideoCodec, String> {
    let lib_ok = cu::lib();
    if let Err(e) = lib_ok {
        return Err(format!("libnvcuvid unavailable: {e}"));
    }
    let id = params.id();
    let codec = cuda_codec(id).ok_or_else(|| format!("direct NVDEC does not take {id:?}"))?;
    let (fmt, w, h) = unsafe {
        let p = &*params.as_ptr();
        (p.format, p.width, p.height)
    };
    use ffi::AVPixelFormat::*;
    let ok_fmts = [AV_PIX_FMT_NONE as i32, AV_PIX_FMT_YUV420P as i32, AV_PIX_FMT_YUVJ420P as i32, AV_PIX_FMT_NV12 as i32];
    if !ok_fmts.contains(&fmt) {
        return Err(format!("pixel format {fmt} is not 8-bit 4:2:0"));
    }
    let c = caps(dev, codec).ok_or_else(|| format!("GPU {} has no NVDEC support for {id:?} 8-bit 4:2:0", dev.ordinal))?;
    if w > 0 && h > 0 && (w as u32 > c.nMaxWidth || h as u32 > c.nMaxHeight || (w as u32) < c.nMinWidth as u32 || (h as u32) < c.nMinHeight as u32) {
        return Err(format!("{w}x{h} is outside NVDEC's {}x{}..{}x{} for {id:?}", c.nMinWidth, c.nMinHeight, c.nMaxWidth, c.nMaxHeight));
    }
    Ok(codec)
}

// ---------------------------------------------------------------------------------------------
// Annex B conversion with FFmpeg's bitstream filters.

/// `h264_mp4toannexb` / `hevc_mp4toannexb` for streams whose extradata is avcC/hvcC (MP4, MKV);
/// streams that are Annex B already (RTSP, MPEG-TS, raw) pass through untouched.
struct AnnexB {
    bsf: *mut ffi::AVBSFContext,
    out: ff::Packet,
}

unsafe impl Send for AnnexB {}

fn is_annexb(x: &[u8]) -> bool {
    x.starts_with(&[0, 0, 1]) || x.starts_with(&[0, 0, 0, 1])
}

impl AnnexB {
    /// The filter for `params` if it needs one, and the Annex B parameter sets to prime a parser
    /// with (SPS/PPS/VPS), if any.
    fn new(params: &ff::codec::Parameters, tb: ff::Rational) -> Result<(Option<AnnexB>, Vec<u8>)> {
        let (extradata, id) = unsafe {
            let p = &*params.as_ptr();
            let x = if p.extradata.is_null() || p.extradata_size <= 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(p.extradata, p.extradata_size as usize)
            };
            (x.to_vec(), params.id())
        };
        let name = match id {
            ff::codec::Id::H264 => "h264_mp4toannexb\0",
            ff::codec::Id::HEVC => "hevc_mp4toannexb\0",
            _ => return Ok((None, Vec::new())),
        };
        if extradata.is_empty() || is_annexb(&extradata) {
            return Ok((None, extradata));
        }
        unsafe {
            let f = ffi::av_bsf_get_by_name(name.as_ptr() as *const _);
            if f.is_null() {
                return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("FFmpeg has no {} bitstream filter", name.trim_end_matches('\0'))));
            }
            let mut bsf: *mut ffi::AVBSFContext = std::ptr::null_mut();
            let r = ffi::av_bsf_alloc(f, &mut bsf);
            if r < 0 {
                return Err(Error::ffmpeg("av_bsf_alloc", ff::Error::from(r)));
            }
            let me = AnnexB { bsf, out: ff::Packet::empty() };
            let r = ffi::avcodec_parameters_copy((*bsf).par_in, params.as_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
            }
            (*bsf).time_base_in = tb.into();
            let r = ffi::av_bsf_init(bsf);
            if r < 0 {
                return Err(Error::ffmpeg("av_bsf_init (mp4toannexb)", ff::Error::from(r)));
            }
            let po = &*(*bsf).par_out;
            let prime = if !po.extradata.is_null() && po.extradata_size > 0 {
                let x = std::slice::from_raw_parts(po.extradata, po.extradata_size as usize);
                if is_annexb(x) {
                    x.to_vec()
                } else {
                    Vec::new()
                }
            } else {
                Vec::new()
            };
            Ok((Some(me), prime))
        }
    }

    fn send(&mut self, pkt: &ff::Packet) -> Result<()> {
        unsafe {
            let mut tmp = ff::Packet::empty();
            let r = ffi::av_packet_ref(tmp.as_mut_ptr(), pkt.as_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("av_packet_ref", ff::Error::from(r)));
            }
            let r = ffi::av_bsf_send_packet(self.bsf, tmp.as_mut_ptr());
            if r < 0 {
                return Err(Error::ffmpeg("av_bsf_send_packet", ff::Error::from(r)));
            }
        }
        Ok(())
    }

    /// The next filtered packet (valid until the next call), or None.
    fn receive(&mut self) -> Result<Option<&ff::Packet>> {
        unsafe {
            ffi::av_packet_unref(self.out.as_mut_ptr());
            let r = ffi::av_bsf_receive_packet(self.bsf, self.out.as_mut_ptr());
            if r == 0 {
                return Ok(Some(&self.out));
            }
            if r == ffi::AVERROR(ffi::EAGAIN) || r == ffi::AVERROR_EOF {
                return Ok(None);
            }
            Err(Error::ffmpeg("av_bsf_receive_packet", ff::Error::from(r)))
        }
    }

    fn flush(&mut self) {
        unsafe {
            ffi::av_packet_unref(self.out.as_mut_ptr());
            ffi::av_bsf_flush(self.bsf);
        }
    }
}

impl Drop for AnnexB {
    fn drop(&mut self) {
        unsafe { ffi::av_bsf_free(&mut self.bsf) };
    }
}

// ---------------------------------------------------------------------------------------------
// The parser's callback state.

/// The geometry of the sequence a picture belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SeqGeom {
    /// Displayed size (the SPS cropping window), what frames are.
    width: u32,
    height: u32,
    /// Offset of the displayed window in the decoded surface.
    left: u32,
    top: u32,
    /// Rows of the luma plane in the output surface (the decoder's target height); the chroma
    /// plane starts at `pitch * align2(surface_rows)`.
    surface_rows: u32,
}

/// A picture handed out by the parser in display order, not yet written.
struct Disp {
    info: cu::CUVIDPARSERDISPINFO,
    geom: SeqGeom,
    /// The parser reused its surface before we mapped it: its pixels are gone (never expected
    /// with our surface margins; counted).
    stale: bool,
    /// Copied aside before a reconfigure released its surface.
    parked: Option<Lease>,
}

struct State {
    lib: &'static Nvcuvid,
    cam: Arc<CamGpu>,
    ctx_lock: CtxLock,
    codec: cu::cudaVideoCodec,
    decoder: cu::CUvideodecoder,
    /// The format the decoder was made for.
    fmt: Option<cu::CUVIDEOFORMAT>,
    /// Decode surfaces of the current decoder.
    surfaces: u32,
    /// The coded size the decoder was made for (`ulMaxWidth`/`ulMaxHeight`).
    max_w: u32,
    max_h: u32,
    geom: Option<SeqGeom>,
    display_delay: u32,
    queue: VecDeque<Disp>,
    /// An error a callback met (returned by cuvidParseVideoData as a failure).
    error: Option<Error>,
    /// The stream cannot be decoded here (format, caps, no session): fall back, don't retry.
    refused: bool,
    knobs: Option<testing::Knobs>,
    decodes: u32,
}

unsafe impl Send for State {}

impl State {
    fn stream(&self) -> cu::CUstream {
        self.cam.stream.raw() as cu::CUstream
    }

    fn destroy_decoder(&mut self) {
        if self.decoder.is_null() {
            return;
        }
        // Copies may still read its surfaces: wait for the camera's stream (teardown, resolution
        // change or recovery only).
        if let Err(e) = self.cam.stream.synchronize() {
            log::warn!("before cuvidDestroyDecoder: {e}");
        }
        let _g = self.cam.stream.dev.push();
        let r = unsafe { (self.lib.cuvidDestroyDecoder)(self.decoder) };
        if r != cu::CUDA_SUCCESS {
            log::warn!("cuvidDestroyDecoder failed: {}", cu::result_name(r));
        }
        self.decoder = std::ptr::null_mut();
        self.fmt = None;
        stats::of(self.cam.stream.dev.ordinal).hw_decoders.fetch_sub(1, Ordering::Relaxed);
    }

    fn sequence(&mut self, f: &cu::CUVIDEOFORMAT) -> Result<c_int> {
        let dev = self.cam.stream.dev.ordinal;
        if f.chroma_format != cu::cudaVideoChromaFormat_420 || f.bit_depth_luma_minus8 != 0 || f.bit_depth_chroma_minus8 != 0 {
            self.refused = true;
            return Err(Error::new(
                NVCAM_E_UNSUPPORTED,
                format!(
                    "stream is chroma format {} at {} bits; direct NVDEC writes 8-bit 4:2:0 (NV12) only",
                    f.chroma_format,
                    8 + f.bit_depth_luma_minus8 as u32
                ),
            ));
        }
        let caps = caps(&self.cam.stream.dev, f.codec);
        let ok = caps.is_some_and(|c| {
            f.coded_width <= c.nMaxWidth
                && f.coded_height <= c.nMaxHeight
                && (f.coded_width >> 4) * (f.coded_height >> 4) <= c.nMaxMBCount
                && f.coded_width >= c.nMinWidth as u32
                && f.coded_height >= c.nMinHeight as u32
        });
        if !ok {
            self.refused = true;
            return Err(Error::new(
                NVCAM_E_UNSUPPORTED,
                format!("GPU {dev}: NVDEC cannot decode codec {} at {}x{}", f.codec, f.coded_width, f.coded_height),
            ));
        }
        if self.knobs.is_none() {
            self.knobs = testing::for_width(f.coded_width);
        }
        let d = &f.display_area;
        let geom = SeqGeom {
            width: (d.right - d.left).max(0) as u32,
            height: (d.bottom - d.top).max(0) as u32,
            left: d.left.max(0) as u32,
            top: d.top.max(0) as u32,
            surface_rows: f.coded_height,
        };
        if geom.width == 0 || geom.height == 0 {
            return Err(Error::new(NVCAM_E_FFMPEG, "sequence with an empty display area"));
        }
        let want = (f.min_num_decode_surfaces as u32 + self.display_delay + SURFACE_MARGIN).clamp(1, MAX_DECODE_SURFACES);
        if let Some(old) = self.fmt {
            let same_size = (old.coded_width, old.coded_height) == (f.coded_width, f.coded_height);
            if old.codec == f.codec && same_size && want <= self.surfaces {
                // Same surfaces; at most the display window moved (pictures carry their own).
                self.geom = Some(geom);
                return Ok(self.surfaces as c_int);
            }
            // The surfaces are about to change: move queued pictures of the old sequence aside.
            self.park_queue()?;
            let fits = f.coded_width <= self.max_w && f.coded_height <= self.max_h;
            if old.codec == f.codec && want <= self.surfaces && fits && self.reconfigure(f, &geom).is_ok() {
                return Ok(self.surfaces as c_int);
            }
            self.destroy_decoder();
        }
        self.create(f, want)?;
        self.geom = Some(geom);
        Ok(self.surfaces as c_int)
    }

    fn create(&mut self, f: &cu::CUVIDEOFORMAT, surfaces: u32) -> Result<()> {
        let outputs = self.knobs.map(|k| k.output_surfaces).filter(|&n| n > 0).unwrap_or(OUTPUT_SURFACES);
        let mut ci = cu::CUVIDDECODECREATEINFO {
            ulWidth: f.coded_width as _,
            ulHeight: f.coded_height as _,
            ulNumDecodeSurfaces: surfaces as _,
            CodecType: f.codec,
            ChromaFormat: f.chroma_format,
            ulCreationFlags: cu::cudaVideoCreate_PreferCUVID,
            bitDepthMinus8: 0,
            ulIntraDecodeOnly: 0,
            ulMaxWidth: f.coded_width as _,
            ulMaxHeight: f.coded_height as _,
            Reserved1: 0,
            // Zero: the whole coded picture; we crop to the display window in the copy.
            display_area: cu::ShortRect::default(),
            OutputFormat: cu::cudaVideoSurfaceFormat_NV12,
            // No deinterlacing: interlaced content stays woven, as FFmpeg's software decode outputs it.
            DeinterlaceMode: cu::cudaVideoDeinterlaceMode_Weave,
            ulTargetWidth: f.coded_width as _,
            ulTargetHeight: f.coded_height as _,
            ulNumOutputSurfaces: outputs as _,
            vidLock: self.ctx_lock.lock,
            target_rect: cu::ShortRect::default(),
            enableHistogram: 0,
            Reserved2: [0; 4],
        };
        let mut dec: cu::CUvideodecoder = std::ptr::null_mut();
        let r = unsafe { (self.lib.cuvidCreateDecoder)(&mut dec, &mut ci) };
        if r != cu::CUDA_SUCCESS {
            // Out of sessions or memory, or a size the engine refuses: not ours to retry.
            self.refused = true;
            return Err(cu_err(&format!("cuvidCreateDecoder ({}x{}, {surfaces} surfaces)", f.coded_width, f.coded_height), r));
        }
        self.decoder = dec;
        self.fmt = Some(*f);
        self.surfaces = surfaces;
        (self.max_w, self.max_h) = (f.coded_width, f.coded_height);
        let dev = self.cam.stream.dev.ordinal;
        stats::of(dev).hw_decoders.fetch_add(1, Ordering::Relaxed);
        COUNTERS.decoders_created.fetch_add(1, Ordering::Relaxed);
        log::info!(
            "GPU {dev}: NVDEC decoder codec {} {}x{} (display {}x{}), {surfaces} decode / {outputs} output surfaces, display delay {}",
            f.codec,
            f.coded_width,
            f.coded_height,
            f.display_area.right - f.display_area.left,
            f.display_area.bottom - f.display_area.top,
            self.display_delay
        );
        Ok(())
    }

    /// Resizes the decoder in place (the new coded size fits the size it was made for).
    fn reconfigure(&mut self, f: &cu::CUVIDEOFORMAT, geom: &SeqGeom) -> Result<()> {
        // Copies may still read the old surfaces.
        self.cam.stream.synchronize()?;
        let mut ri = cu::CUVIDRECONFIGUREDECODERINFO {
            ulWidth: f.coded_width,
            ulHeight: f.coded_height,
            ulTargetWidth: f.coded_width,
            ulTargetHeight: f.coded_height,
            ulNumDecodeSurfaces: self.surfaces,
            reserved1: [0; 12],
            display_area: cu::ShortRect::default(),
            target_rect: cu::ShortRect::default(),
            reserved2: [0; 11],
        };
        let r = unsafe { (self.lib.cuvidReconfigureDecoder)(self.decoder, &mut ri) };
        if r != cu::CUDA_SUCCESS {
            log::info!("cuvidReconfigureDecoder failed ({}); making a new decoder", cu::result_name(r));
            return Err(cu_err("cuvidReconfigureDecoder", r));
        }
        self.fmt = Some(*f);
        self.geom = Some(*geom);
        COUNTERS.reconfigures.fetch_add(1, Ordering::Relaxed);
        log::info!(
            "GPU {}: NVDEC decoder reconfigured to {}x{} (display {}x{})",
            self.cam.stream.dev.ordinal,
            f.coded_width,
            f.coded_height,
            geom.width,
            geom.height
        );
        Ok(())
    }

    /// Copies the queued (displayed, not yet written) pictures into a side pool, because the
    /// surfaces they live in are about to be released. Resolution changes only.
    fn park_queue(&mut self) -> Result<()> {
        let n = self.queue.iter().filter(|d| !d.stale && d.parked.is_none()).count();
        if n == 0 || self.decoder.is_null() {
            return Ok(());
        }
        let g = self.queue.iter().find(|d| !d.stale && d.parked.is_none()).map(|d| d.geom).expect("n > 0");
        let pool = super::new_pool(&self.cam, Geometry::nv12(g.width, g.height), n)?;
        let (lib, dec, stream) = (self.lib, self.decoder, self.stream());
        let cam = self.cam.clone();
        for d in self.queue.iter_mut().filter(|d| !d.stale && d.parked.is_none()) {
            let mut lease = pool.acquire().ok_or_else(|| Error::internal("side pool exhausted"))?;
            let mut t = Timing::default();
            copy_picture(lib, dec, stream, &cam, &d.info, &d.geom, &mut lease, None, &mut t, false)?;
            d.parked = Some(lease);
            COUNTERS.parked.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn decode(&mut self, p: &mut cu::CUVIDPICPARAMS) -> Result<()> {
        if self.decoder.is_null() {
            return Err(Error::internal("decode callback before any sequence"));
        }
        self.decodes = self.decodes.wrapping_add(1);
        let idx = p.CurrPicIdx;
        for d in self.queue.iter_mut() {
            if d.info.picture_index == idx && !d.stale && d.parked.is_none() {
                d.stale = true;
                COUNTERS.surface_hazards.fetch_add(1, Ordering::Relaxed);
                log::warn!("NVDEC surface {idx} reused before its picture was written; that picture is dropped");
            }
        }
        if let Some(k) = self.knobs.as_mut() {
            if k.fail_decode_at != 0 && self.decodes == k.fail_decode_at {
                k.fail_decode_at = 0;
                return Err(cu_err("cuvidDecodePicture (injected fault)", 999));
            }
        }
        cu_ck("cuvidDecodePicture", unsafe { (self.lib.cuvidDecodePicture)(self.decoder, p) })
    }

    fn display(&mut self, info: &cu::CUVIDPARSERDISPINFO) -> Result<()> {
        let geom = self.geom.ok_or_else(|| Error::internal("display callback before any sequence"))?;
        self.queue.push_back(Disp { info: *info, geom, stale: false, parked: None });
        Ok(())
    }
}

/// Runs `f` on the state behind a callback's user pointer; an error or panic is kept for
/// `cuvidParseVideoData`'s caller and fails the callback (never unwinds into the driver).
unsafe fn callback<T>(user: *mut c_void, fail: c_int, f: impl FnOnce(&mut State) -> Result<T>) -> std::result::Result<T, c_int> {
    let st = &mut *(user as *mut State);
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(st))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            if st.error.is_none() {
                st.error = Some(e);
            }
            Err(fail)
        }
        Err(_) => {
            st.error = Some(Error::new(NVCAM_E_PANIC, "panic in an NVDEC parser callback"));
            Err(fail)
        }
    }
}

unsafe extern "C" fn on_sequence(user: *mut c_void, f: *mut cu::CUVIDEOFORMAT) -> c_int {
    callback(user, 0, |st| st.sequence(&*f)).unwrap_or_else(|e| e)
}

unsafe extern "C" fn on_decode(user: *mut c_void, p: *mut cu::CUVIDPICPARAMS) -> c_int {
    callback(user, 0, |st| st.decode(&mut *p).map(|_| 1)).unwrap_or_else(|e| e)
}

unsafe extern "C" fn on_display(user: *mut c_void, d: *mut cu::CUVIDPARSERDISPINFO) -> c_int {
    if d.is_null() {
        return 1; // end of stream (CUVID_PKT_NOTIFY_EOS)
    }
    callback(user, 0, |st| st.display(&*d).map(|_| 1)).unwrap_or_else(|e| e)
}

unsafe extern "C" fn delay_host_fn(user: *mut c_void) {
    std::thread::sleep(Duration::from_micros(user as usize as u64));
}

/// Maps `info`'s picture, enqueues its copy into `lease` on the camera's stream, records the
/// slot's event, and unmaps (see the module's ordering argument). `status` gets NVDEC's decode
/// status where it reports one.
#[allow(clippy::too_many_arguments)]
fn copy_picture(
    lib: &'static Nvcuvid,
    dec: cu::CUvideodecoder,
    stream: cu::CUstream,
    cam: &CamGpu,
    info: &cu::CUVIDPARSERDISPINFO,
    g: &SeqGeom,
    lease: &mut Lease,
    status: Option<&mut cu::cuvidDecodeStatus>,
    t: &mut Timing,
    probe_order: bool,
) -> Result<()> {
    let slot_geom = lease.pool().geom;
    let s = &cam.stream;
    let st = super::pool::target(lease, s, Some((g.width, g.height)))?;
    let t0 = Instant::now();
    let mut pp = cu::proc_params(info, stream);
    let (mut src, mut pitch) = (0u64, 0u32);
    cu_ck("cuvidMapVideoFrame64", unsafe { (lib.cuvidMapVideoFrame64)(dec, info.picture_index, &mut src, &mut pitch, &mut pp) })?;
    t.map += ns(t0);
    if let Some(out) = status {
        let mut ds = cu::CUVIDGETDECODESTATUS { decodeStatus: 0, reserved: [0; 31], pReserved: [std::ptr::null_mut(); 8] };
        if unsafe { (lib.cuvidGetDecodeStatus)(dec, info.picture_index, &mut ds) } == cu::CUDA_SUCCESS {
            *out = ds.decodeStatus;
        }
    }
    let t1 = Instant::now();
    let pitch = pitch as usize;
    let dst = lease.addr();
    let luma = src + g.top as u64 * pitch as u64 + g.left as u64;
    let chroma = src + (pitch * (g.surface_rows as usize).next_multiple_of(2)) as u64 + (g.top / 2) as u64 * pitch as u64 + g.left as u64;
    let r = (|| {
        Copy2D { src: Mem::Device(luma), src_pitch: pitch, dst: Mem::Device(dst), dst_pitch: slot_geom.pitch, width_bytes: g.width as usize, rows: slot_geom.y_rows() }
            .enqueue(s)?;
        Copy2D {
            src: Mem::Device(chroma),
            src_pitch: pitch,
            dst: Mem::Device(dst + slot_geom.uv_offset() as u64),
            dst_pitch: slot_geom.pitch,
            width_bytes: slot_geom.row_bytes(),
            rows: slot_geom.uv_rows(),
        }
        .enqueue(s)?;
        st.record_write(lease.index(), s)
    })();
    t.copy += ns(t1);
    // Unmap at once, copies enqueued or not: the copies are ordered before any later write to
    // the surface by the stream (module docs).
    let t2 = Instant::now();
    let ur = unsafe { (lib.cuvidUnmapVideoFrame64)(dec, src) };
    t.unmap += ns(t2);
    r?;
    if probe_order && !st.reusable(lease.index()) {
        // The slot's event (recorded after the copy) is still pending: this surface is back with
        // the decoder while the copy out of it has not run.
        COUNTERS.unmapped_before_copy_ran.fetch_add(1, Ordering::Relaxed);
    }
    cu_ck("cuvidUnmapVideoFrame64", ur)
}

// ---------------------------------------------------------------------------------------------
// The decoder.

pub struct NvDecoder {
    cam: Arc<CamGpu>,
    lib: &'static Nvcuvid,
    st: Box<State>,
    parser: cu::CUvideoparser,
    annexb: Option<AnnexB>,
    /// Annex B parameter sets fed to each new parser before the first packet.
    prime: Vec<u8>,
    time_base: ff::Rational,
    saw_pts: bool,
    current: Option<Disp>,
    timing: Timing,
    recoveries: VecDeque<Instant>,
    warning: Option<Error>,
    decode_errors: u64,
    last_decode_warning: Option<Instant>,
    _ticket: HwTicket,
}

unsafe impl Send for NvDecoder {}

impl NvDecoder {
    /// A decoder for `params`' stream on the camera's device. The NVDEC session itself is made
    /// at the first sequence header; its failure then shows as [`NvDecoder::hw_failed`].
    pub fn new(cam: &Arc<CamGpu>, params: &ff::codec::Parameters, time_base: ff::Rational, ticket: HwTicket) -> Result<NvDecoder> {
        let dev = &cam.stream.dev;
        let codec = supports(dev, params).map_err(|why| Error::new(NVCAM_E_UNSUPPORTED, why))?;
        let lib = cu::lib().map_err(|e| Error::new(NVCAM_E_UNSUPPORTED, e))?;
        let (annexb, prime) = AnnexB::new(params, time_base)?;
        let ctx_lock = CtxLock::acquire(lib, dev)?;
        let display_delay = std::env::var("NVCAM_NVDEC_DISPLAY_DELAY").ok().and_then(|v| v.parse().ok()).unwrap_or(DISPLAY_DELAY).min(8);
        let st = Box::new(State {
            lib,
            cam: cam.clone(),
            ctx_lock,
            codec,
            decoder: std::ptr::null_mut(),
            fmt: None,
            surfaces: 0,
            max_w: 0,
            max_h: 0,
            geom: None,
            display_delay,
            queue: VecDeque::new(),
            error: None,
            refused: false,
            knobs: None,
            decodes: 0,
        });
        let mut me = NvDecoder {
            cam: cam.clone(),
            lib,
            st,
            parser: std::ptr::null_mut(),
            annexb,
            prime,
            time_base,
            saw_pts: false,
            current: None,
            timing: Timing::default(),
            recoveries: VecDeque::new(),
            warning: None,
            decode_errors: 0,
            last_decode_warning: None,
            _ticket: ticket,
        };
        me.new_parser()?;
        log::info!("GPU {}: direct NVDEC decoder for {:?} (parser on the camera thread)", dev.ordinal, params.id());
        Ok(me)
    }

    /// Whether NVDEC cannot take this stream (format, size, no session), so AUTO may fall back.
    pub fn hw_failed(&self) -> bool {
        self.st.refused
    }

    fn new_parser(&mut self) -> Result<()> {
        let mut pp = cu::CUVIDPARSERPARAMS {
            CodecType: self.st.codec,
            // The sequence callback's return value sets the real count.
            ulMaxNumDecodeSurfaces: 1,
            ulClockRate: 0,
            ulErrorThreshold: 0,
            ulMaxDisplayDelay: self.st.display_delay,
            bAnnexb_uReserved: 0,
            uReserved1: [0; 4],
            pUserData: &mut *self.st as *mut State as *mut c_void,
            pfnSequenceCallback: Some(on_sequence),
            pfnDecodePicture: Some(on_decode),
            pfnDisplayPicture: Some(on_display),
            pfnGetOperatingPoint: None,
            pvReserved2: [std::ptr::null_mut(); 6],
            pExtVideoInfo: std::ptr::null_mut(),
        };
        let mut p: cu::CUvideoparser = std::ptr::null_mut();
        cu_ck("cuvidCreateVideoParser", unsafe { (self.lib.cuvidCreateVideoParser)(&mut p, &mut pp) })?;
        self.parser = p;
        if !self.prime.is_empty() {
            let prime = std::mem::take(&mut self.prime);
            let r = self.parse(&prime, None, 0);
            self.prime = prime;
            r?;
        }
        Ok(())
    }

    fn destroy_parser(&mut self) {
        if !self.parser.is_null() {
            let _g = self.cam.stream.dev.push();
            let r = unsafe { (self.lib.cuvidDestroyVideoParser)(self.parser) };
            if r != cu::CUDA_SUCCESS {
                log::warn!("cuvidDestroyVideoParser failed: {}", cu::result_name(r));
            }
            self.parser = std::ptr::null_mut();
        }
    }

    /// Feeds one chunk of Annex B bitstream (a whole picture when `pts` is known) to the parser.
    fn parse(&mut self, data: &[u8], pts: Option<i64>, extra_flags: std::ffi::c_ulong) -> Result<()> {
        let mut pkt = cu::CUVIDSOURCEDATAPACKET {
            flags: extra_flags | if pts.is_some() { cu::CUVID_PKT_TIMESTAMP } else { 0 },
            payload_size: data.len() as _,
            payload: if data.is_empty() { std::ptr::null() } else { data.as_ptr() },
            timestamp: pts.unwrap_or(0),
        };
        let _g = self.cam.stream.dev.push()?;
        let t0 = Instant::now();
        let r = unsafe { (self.lib.cuvidParseVideoData)(self.parser, &mut pkt) };
        self.timing.parse += ns(t0);
        if let Some(e) = self.st.error.take() {
            return Err(e);
        }
        cu_ck("cuvidParseVideoData", r)
    }

    fn parse_packet(&mut self, data: &[u8], pts: Option<i64>) -> Result<()> {
        self.timing.packets += 1;
        if pts.is_some() {
            self.saw_pts = true;
        }
        // Demuxed packets hold exactly one picture: the parser may decode it without waiting for
        // the next start code.
        self.parse(data, pts, cu::CUVID_PKT_ENDOFPICTURE)
    }

    /// A decode, map or unmap failed: report it, recreate parser and decoder, carry on.
    fn recover(&mut self, e: Error) -> Result<()> {
        if self.st.refused {
            return Err(e);
        }
        let now = Instant::now();
        self.recoveries.retain(|t| now.duration_since(*t) < RECOVERY_WINDOW);
        if self.recoveries.len() >= MAX_RECOVERIES {
            return Err(Error::new(e.code, format!("{} (after {MAX_RECOVERIES} NVDEC recoveries within a minute)", e.msg)));
        }
        self.recoveries.push_back(now);
        COUNTERS.recoveries.fetch_add(1, Ordering::Relaxed);
        log::warn!("GPU {}: NVDEC error: {}; recreating this camera's decoder (resumes at the next key frame)", self.cam.stream.dev.ordinal, e.msg);
        self.warning = Some(Error::new(e.code, format!("{}; NVDEC decoder recreated", e.msg)));
        self.destroy_parser();
        self.st.queue.clear();
        self.current = None;
        self.st.destroy_decoder();
        self.st.geom = None;
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        self.new_parser()
    }

    fn flush_timing(&mut self) {
        if self.timing.frames >= 64 || self.timing.packets >= 64 {
            self.timing.flush();
        }
    }
}

impl Drop for NvDecoder {
    fn drop(&mut self) {
        self.destroy_parser();
        self.current = None;
        self.st.queue.clear();
        self.st.destroy_decoder();
        self.timing.flush();
        // The context lock goes with `st`, after its decoder.
    }
}

impl Decoder for NvDecoder {
    fn name(&self) -> &'static str {
        "nvdec"
    }

    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<()> {
        let r = (|| -> Result<()> {
            match self.annexb.as_mut() {
                None => {
                    let data = pkt.data().unwrap_or(&[]);
                    if !data.is_empty() {
                        self.parse_packet(data, pkt.pts())?;
                    }
                }
                Some(a) => {
                    a.send(pkt)?;
                    loop {
                        let a = self.annexb.as_mut().expect("checked");
                        let Some(p) = a.receive()? else { break };
                        let (pts, ptr, len) = (p.pts(), p.data().map(|d| d.as_ptr()), p.size());
                        let Some(ptr) = ptr else { continue };
                        // SAFETY: the packet lives in `annexb.out` until the next receive.
                        let data = unsafe { std::slice::from_raw_parts(ptr, len) };
                        self.parse_packet(data, pts)?;
                    }
                }
            }
            Ok(())
        })();
        self.flush_timing();
        match r {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.code, NVCAM_E_CUDA | NVCAM_E_INTERNAL | NVCAM_E_PANIC | NVCAM_E_OUT_OF_MEMORY) => self.recover(e),
            Err(e) => Err(e),
        }
    }

    fn send_eof(&mut self) -> Result<()> {
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        match self.parse(&[], None, cu::CUVID_PKT_ENDOFSTREAM) {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.code, NVCAM_E_CUDA | NVCAM_E_INTERNAL) => self.recover(e),
            Err(e) => Err(e),
        }
    }

    fn receive(&mut self) -> Result<Option<Picture>> {
        // A picture received and not written (the pool was full) is simply dropped.
        self.current = None;
        while let Some(d) = self.st.queue.pop_front() {
            if d.stale {
                continue;
            }
            let ts = d.info.timestamp;
            let pic = Picture {
                width: d.geom.width,
                height: d.geom.height,
                pts_us: if self.saw_pts { pts_us(Some(ts), self.time_base) } else { i64::MIN },
            };
            self.current = Some(d);
            return Ok(Some(pic));
        }
        Ok(None)
    }

    fn write_into(&mut self, lease: &mut Lease) -> Result<()> {
        let d = self.current.take().ok_or_else(|| Error::internal("write_into without a received picture"))?;
        let s = &self.cam.stream;
        if let Some(parked) = d.parked.as_ref() {
            // Copied aside at a resolution change: one device-to-device copy from there.
            let (src, sg) = (parked.addr(), parked.pool().geom);
            let g = lease.pool().geom;
            let st = super::pool::target(lease, s, None)?;
            Copy2D { src: Mem::Device(src), src_pitch: sg.pitch, dst: Mem::Device(lease.addr()), dst_pitch: g.pitch, width_bytes: g.width as usize, rows: g.y_rows() + g.uv_rows() }
                .enqueue(s)?;
            st.record_write(lease.index(), s)?;
            // The side slot's last use is that copy: its event fences the side pool's free.
            if let Some(pst) = parked.pool().storage().as_any().downcast_ref::<DeviceStorage>() {
                pst.record_write(parked.index(), s)?;
            }
            return Ok(());
        }
        if let Some(k) = self.st.knobs {
            if k.stream_delay_us > 0 {
                let _g = s.dev.push()?;
                ck("cuLaunchHostFunc", unsafe {
                    cudarc::driver::sys::cuLaunchHostFunc(s.raw(), Some(delay_host_fn), k.stream_delay_us as usize as *mut c_void)
                })?;
            }
        }
        let _g = s.dev.push()?;
        let mut status = cu::cuvidDecodeStatus_Invalid;
        let probe = self.st.knobs.is_some_and(|k| k.stream_delay_us > 0);
        let r = copy_picture(self.lib, self.st.decoder, self.st.stream(), &self.cam, &d.info, &d.geom, lease, Some(&mut status), &mut self.timing, probe);
        if status == cu::cuvidDecodeStatus_Error || status == cu::cuvidDecodeStatus_Error_Concealed {
            // A corrupt bitstream: the picture is delivered as NVDEC decoded (and concealed) it,
            // and the camera hears of it, at most every few seconds.
            COUNTERS.decode_errors.fetch_add(1, Ordering::Relaxed);
            self.decode_errors += 1;
            if self.warning.is_none() && self.last_decode_warning.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
                self.last_decode_warning = Some(Instant::now());
                self.warning = Some(Error::new(
                    NVCAM_E_IO,
                    format!(
                        "NVDEC reported a picture decoded with errors ({}; {} so far on this camera): corrupt or lost bitstream data",
                        if status == cu::cuvidDecodeStatus_Error { "not concealed" } else { "concealed" },
                        self.decode_errors
                    ),
                ));
            }
        }
        self.timing.frames += 1;
        stats::of(s.dev.ordinal).frames_copied.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(()) => Ok(()),
            Err(e) if e.code == NVCAM_E_INTERNAL => {
                // Not recovered: no warning may be pending, or the camera would take this for a
                // recovered, dropped frame (Decoder::take_warning).
                self.warning = None;
                Err(e)
            }
            Err(e) => {
                drop(_g);
                // The slot may hold a partial picture: an error with a warning pending tells the
                // camera the decoder recovered and this one frame is dropped.
                self.recover(e.clone())?;
                Err(e)
            }
        }
    }

    fn new_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        super::new_pool(&self.cam, geom, slots)
    }

    fn pool_device(&self) -> i32 {
        self.cam.stream.dev.ordinal
    }

    fn reset(&mut self) -> bool {
        // A rewound file: a fresh parser (the old one saw end of stream); the decoder and its
        // surfaces stay and are reused at the same sequence.
        self.destroy_parser();
        self.st.queue.clear();
        self.current = None;
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        self.new_parser().is_ok()
    }

    fn take_warning(&mut self) -> Option<Error> {
        self.warning.take()
    }
}
