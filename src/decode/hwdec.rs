//! FFmpeg's CUDA hwaccel (NVDEC) running in *our* context and on the camera's stream.
//!
//! The AVHWDeviceContext wraps the library's CUcontext and the camera's non-blocking stream
//! (FFmpeg never creates, flags or destroys a context of its own, and NVDEC's post-processing
//! runs on our stream). A decoded frame is a mapped NVDEC surface: it is copied into the leased
//! pool slot with cuMemcpy2DAsync on the same stream, an event is recorded, and the AVFrame (and
//! so the surface) is held until that event has completed, found by querying, never by waiting
//! on the hot path, then unreffed. `extra_hw_frames` covers exactly what is held.
//!
//! FFmpeg makes its NVDEC session lazily (at the first slice, through `get_format`), and makes a
//! new one whenever its h264 decoder re-initialises, which `avcodec_flush_buffers` forces. The
//! driver creates decoders one after another (about 75 ms each on an H100, seconds when dozens
//! queue), so a looped file goes on across its end in this decoder without a drain or a flush
//! ([`Decoder::continues_across_rewind`]): draining and flushing at every loop made cameras that
//! loop together queue for their new sessions (32 paced cameras of a 40-frame clip fell to 12 fps
//! with 1.5 s gaps). A new connection still gets a new decoder, hence a new session (a reconnect
//! must not carry pictures over; FFmpeg 5.1 cannot keep a session across a flush), so a burst of
//! reconnects on this backend waits for the driver; direct NVDEC keeps its decoder instead.

use crate::gpu::context::{Copy2D, Event, Mem};
use crate::gpu::memory::device_slot;
use crate::gpu::timing::{self, Stage};
use crate::gpu::{stats, CamGpu, HwTicket};
use crate::decode::{received, DecodeOpts, Decoder, DecoderKind, Outcome, Picture};
use crate::pool::Lease;
use crate::status::*;
use ff::ffi;
use ffmpeg_next as ff;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Copied-out frames whose copies may still run; beyond this the oldest is waited for (counted).
const MAX_PENDING: usize = 2;
/// Surfaces FFmpeg adds to the DPB for what we hold: the pending ones plus the picture received
/// and not yet written.
const EXTRA_HW_FRAMES: i32 = MAX_PENDING as i32 + 1;

/// What `get_format` saw; read after each call into the decoder.
#[derive(Default)]
struct FmtState {
    /// get_format was offered no CUDA format (FFmpeg's hwaccel init failed: session limit, out of
    /// memory, unsupported profile or size) or a software format we cannot copy as NV12.
    refused: AtomicBool,
    no_cuda: AtomicBool,
    sw_format: AtomicI32,
    /// Times get_format chose CUDA: each time FFmpeg (re)creates its NVDEC session.
    inits: AtomicU32,
    /// 10- and 12-bit 4:2:0 pictures are taken (as P010/P016): the codec has them on NVDEC
    /// (HEVC, VP9, AV1) and the camera did not ask for 8-bit frames (FFmpeg's hwaccel writes no
    /// NV12 from them; AUTO then decodes in software and rounds to NV12).
    high_depth: bool,
}

/// NVDEC sessions FFmpeg's hwaccel made in this process (each CUDA choice in get_format).
static SESSIONS_MADE: AtomicU64 = AtomicU64::new(0);

/// NVDEC sessions the FFmpeg hwaccel decoders made so far (tests: a looped file keeps its one).
pub fn sessions_made() -> u64 {
    SESSIONS_MADE.load(Ordering::Relaxed)
}

/// Whether FFmpeg's NVDEC hwaccel writes pictures of software format `f` as a pool takes them:
/// 8-bit 4:2:0 as NV12, 10- and 12-bit 4:2:0 as P010/P016 where `high_depth` (see
/// `FmtState::high_depth`).
fn takes_format(f: i32, high_depth: bool) -> bool {
    use crate::ffmpeg::pixfmt::{chroma_8bit, high_depth_420, Chroma};
    match chroma_8bit(f) {
        Some(Chroma::C420) => true,
        Some(_) => false,
        None => high_depth_420(f) && high_depth,
    }
}

/// Picks CUDA when it is offered for an 8-bit 4:2:0 stream; otherwise notes why and refuses, so
/// that FFmpeg's silent fall back to its software decoder inside a "hardware" decoder can never
/// happen: the camera falls back itself, with a reason, to software decode plus upload.
///
/// # Safety
/// FFmpeg's `get_format` contract: `ctx` is the decoder's context, whose `opaque` we set to this
/// decoder's `FmtState`; `fmts` is an AV_PIX_FMT_NONE-terminated list.
unsafe extern "C" fn get_format_cuda(ctx: *mut ffi::AVCodecContext, fmts: *const ffi::AVPixelFormat) -> ffi::AVPixelFormat {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut has_cuda = false;
        let mut p = fmts;
        // SAFETY: `fmts` is terminated by AV_PIX_FMT_NONE (FFmpeg's contract); we stop there.
        while let Some(&f) = unsafe { p.as_ref() }.filter(|&&f| f != ffi::AVPixelFormat::AV_PIX_FMT_NONE) {
            has_cuda |= f == ffi::AVPixelFormat::AV_PIX_FMT_CUDA;
            // SAFETY: `f` was not the terminator, so the next element exists.
            p = unsafe { p.add(1) };
        }
        // SAFETY: `ctx` is the decoder's live context (FFmpeg's contract).
        let (sw, opaque) = unsafe { ((*ctx).sw_pix_fmt, (*ctx).opaque as *const FmtState) };
        // SAFETY: `opaque` is null or the FmtState boxed in the HwDecoder that owns this codec
        // context, which outlives every call into it.
        let st = unsafe { opaque.as_ref() };
        if has_cuda && takes_format(sw as i32, st.is_some_and(|s| s.high_depth)) {
            if let Some(st) = st {
                st.inits.fetch_add(1, Ordering::Relaxed);
            }
            SESSIONS_MADE.fetch_add(1, Ordering::Relaxed);
            return ffi::AVPixelFormat::AV_PIX_FMT_CUDA;
        }
        if let Some(st) = st {
            st.no_cuda.store(!has_cuda, Ordering::Relaxed);
            st.sw_format.store(sw as i32, Ordering::Relaxed);
            st.refused.store(true, Ordering::Release);
        }
        ffi::AVPixelFormat::AV_PIX_FMT_NONE
    }))
    .unwrap_or(ffi::AVPixelFormat::AV_PIX_FMT_NONE)
}

/// Our reference on the AVHWDeviceContext.
struct HwDevRef(*mut ffi::AVBufferRef);
// SAFETY: a reference-counted FFmpeg buffer we own; unreffed once, from any thread.
unsafe impl Send for HwDevRef {}
impl Drop for HwDevRef {
    fn drop(&mut self) {
        // SAFETY: our reference (null-safe; av_buffer_unref nulls it).
        unsafe { ffi::av_buffer_unref(&mut self.0) };
    }
}

/// The decoder for `id` with a CUDA hwaccel: not always the one FFmpeg prefers for the codec
/// (libdav1d comes before the native AV1 decoder, which is the one that drives NVDEC).
fn cuda_codec(id: ff::codec::Id) -> Option<ff::Codec> {
    crate::decode::software::decoders_of(id).find(has_cuda)
}

/// Whether the decoder has a CUDA hwaccel (hw_device_ctx method).
fn has_cuda(codec: &ff::Codec) -> bool {
    (0..)
        // SAFETY: a registered codec; returns a static config or null past the last index.
        .map(|i| unsafe { ffi::avcodec_get_hw_config(codec.as_ptr(), i).as_ref() })
        .take_while(Option::is_some)
        .flatten()
        .any(|cfg| {
            cfg.device_type == ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_CUDA
                && cfg.methods & ffi::AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX as i32 != 0
        })
}

pub(crate) struct HwDecoder {
    cam: Arc<CamGpu>,
    dec: Option<ff::decoder::Video>,
    /// The picture last received, until written (or replaced by the next receive).
    frame: ff::frame::Video,
    has_frame: bool,
    /// Copied-out frames and the events after their copies, oldest first.
    pending: VecDeque<(ff::frame::Video, Event)>,
    spare_frames: Vec<ff::frame::Video>,
    spare_events: Vec<Event>,
    time_base: ff::Rational,
    fmt: Box<FmtState>,
    codec: String,
    hw_dev: Option<HwDevRef>,
    /// FFmpeg's NVDEC session (re)creations seen so far (each timed as `HwCreate`).
    inits_seen: u32,
    _ticket: HwTicket,
}

impl HwDecoder {
    pub(crate) fn new(cam: &Arc<CamGpu>, params: &ff::codec::Parameters, time_base: ff::Rational, ticket: HwTicket, o: DecodeOpts) -> Result<HwDecoder> {
        let low_latency = o.low_latency;
        let id = params.id();
        let codec = format!("{id:?}").to_lowercase();
        let Some(cuda) = cuda_codec(id) else {
            return Err(Error::new(ErrorKind::Unsupported, format!("FFmpeg has no CUDA hwaccel for {codec}")));
        };
        // Refused at open, as direct NVDEC refuses it: a stream whose probed format is not 8-bit
        // 4:2:0 (10-bit, 4:2:2) would otherwise open and fail at its first picture.
        // SAFETY: `params` owns a valid AVCodecParameters.
        let fmt = unsafe { (*params.as_ptr()).format };
        if id == ff::codec::Id::MJPEG {
            // Its frames came out wrong (up to 255 levels, p99 up to 255 on some clips) when
            // compute-sanitizer slowed the GPU's work down, while direct NVDEC and software decode
            // stayed exact: a frame whose pixels depend on timing is not handed out. JPEG goes to
            // direct NVDEC, or software + upload (AUTO's order without this step).
            return Err(Error::new(
                ErrorKind::Unsupported,
                "mjpeg on FFmpeg's CUDA hwaccel is not offered (its frames were found timing-dependent); direct NVDEC or software decode take JPEG",
            ));
        }
        let high_depth = matches!(id, ff::codec::Id::HEVC | ff::codec::Id::VP9 | ff::codec::Id::AV1) && !o.eight_bit;
        if fmt != ffi::AVPixelFormat::AV_PIX_FMT_NONE as i32 && !takes_format(fmt, high_depth) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "{codec} in pixel format {}: FFmpeg's CUDA hwaccel here takes 8-bit 4:2:0, and 10/12-bit 4:2:0 HEVC, VP9 and AV1 (without NVCAM_OPEN_8BIT)",
                    crate::ffmpeg::pixfmt::name(fmt)
                ),
            ));
        }
        let t_new = timing::Mark::now();
        let dev = &cam.stream.dev;
        let _g = dev.push()?;
        // SAFETY: allocation only; checked below.
        let r = unsafe { ffi::av_hwdevice_ctx_alloc(ffi::AVHWDeviceType::AV_HWDEVICE_TYPE_CUDA) };
        if r.is_null() {
            return Err(Error::new(ErrorKind::OutOfMemory, "av_hwdevice_ctx_alloc(CUDA) failed"));
        }
        let hw_dev = HwDevRef(r);
        // SAFETY: a fresh CUDA device context, not initialized yet: its hwctx is an
        // AVCUDADeviceContext whose context and stream we may set. Both are ours and outlive
        // the decoder (it holds `cam`).
        let e = unsafe {
            let devctx = (*r).data as *mut ffi::AVHWDeviceContext;
            let cu = (*devctx).hwctx as *mut ffi::AVCUDADeviceContext;
            (*cu).cuda_ctx = dev.cu_ctx() as ffi::CUcontext;
            (*cu).stream = cam.stream.raw() as ffi::CUstream;
            ffi::av_hwdevice_ctx_init(r)
        };
        if e < 0 {
            let err = Error::ffmpeg("av_hwdevice_ctx_init(CUDA, our context)", ff::Error::from(e));
            log::warn!("{err}");
            return Err(err);
        }
        let fmt = Box::new(FmtState { high_depth, ..Default::default() });
        let mut ctx = ff::codec::Context::from_parameters(params.clone()).map_err(|e| Error::ffmpeg("avcodec_parameters_to_context", e))?;
        // SAFETY: an unopened codec context we own. `fmt` is boxed, so the opaque pointer stays
        // valid while the decoder (which holds both) lives.
        let hw_ref = unsafe {
            let p = ctx.as_mut_ptr();
            (*p).hw_device_ctx = ffi::av_buffer_ref(hw_dev.0);
            (*p).get_format = Some(get_format_cuda);
            (*p).opaque = &*fmt as *const FmtState as *mut std::ffi::c_void;
            (*p).extra_hw_frames = EXTRA_HW_FRAMES;
            // Frame threads only add surfaces with NVDEC.
            (*p).thread_count = 1;
            // The camera's size limit, checked by FFmpeg before it sets up surfaces.
            (*p).max_pixels = o.max_pixels.min(i64::MAX as u64) as i64;
            if low_latency {
                crate::decode::set_low_delay(p, params);
            }
            (*p).hw_device_ctx
        };
        if hw_ref.is_null() {
            return Err(Error::new(ErrorKind::OutOfMemory, "av_buffer_ref failed"));
        }
        let dec = ctx.decoder().open_as(cuda).and_then(|d| d.video()).map_err(|e| {
            let err = Error::ffmpeg("avcodec_open2 (CUDA hwaccel)", e);
            log::warn!("{err}");
            err
        })?;
        stats::of(dev.ordinal).hw_decoders.fetch_add(1, Ordering::Relaxed);
        log::info!("GPU {}: FFmpeg CUDA hwaccel decoder for {codec} (our context, camera stream)", dev.ordinal);
        t_new.end(Stage::HwNew);
        Ok(HwDecoder {
            cam: cam.clone(),
            dec: Some(dec),
            frame: ff::frame::Video::empty(),
            has_frame: false,
            pending: VecDeque::new(),
            spare_frames: Vec::new(),
            spare_events: Vec::new(),
            time_base,
            fmt,
            codec,
            hw_dev: Some(hw_dev),
            inits_seen: 0,
            _ticket: {
                // FFmpeg makes its NVDEC session at the first packet: counted as made now.
                let mut t = ticket;
                t.made();
                t
            },
        })
    }

    fn dec(&mut self) -> &mut ff::decoder::Video {
        self.dec.as_mut().expect("decoder lives until drop")
    }

    /// Whether NVDEC could not take this stream (so the camera may fall back to software).
    pub(crate) fn hw_failed(&self) -> bool {
        self.fmt.refused.load(Ordering::Acquire)
    }

    fn refusal(&self) -> Error {
        let sw = self.fmt.sw_format.load(Ordering::Relaxed);
        let why = if self.fmt.no_cuda.load(Ordering::Relaxed) {
            "NVDEC could not start a session (FFmpeg's hwaccel init failed: session limit, out of memory, or unsupported profile/size; see FFmpeg's log)".to_string()
        } else {
            format!("stream's pixel format {} is not 8-bit 4:2:0; NVDEC would not output NV12", crate::ffmpeg::pixfmt::name(sw))
        };
        Error::new(ErrorKind::Unsupported, format!("{} on GPU {}: {why}", self.codec, self.cam.stream.dev.ordinal))
    }

    fn check_refused(&self) -> Result<()> {
        if self.hw_failed() {
            Err(self.refusal())
        } else {
            Ok(())
        }
    }

    /// Unrefs held frames whose copies have completed (queried). Waits for the oldest only if
    /// more than MAX_PENDING are held, which means the GPU is far behind (counted as a sync).
    fn reap(&mut self) -> Result<()> {
        while let Some((_, ev)) = self.pending.front() {
            if !ev.query()? {
                if self.pending.len() <= MAX_PENDING {
                    break;
                }
                let t0 = timing::Mark::now();
                ev.synchronize()?;
                t0.end(Stage::HwWait);
            }
            let (mut f, ev) = self.pending.pop_front().expect("front exists");
            let t0 = timing::Mark::now();
            let _g = self.cam.stream.dev.push()?;
            // SAFETY: our frame; its copy completed (event), so the NVDEC surface may go back.
            unsafe { ffi::av_frame_unref(f.as_mut_ptr()) };
            t0.end(Stage::HwUnref);
            self.spare_frames.push(f);
            self.spare_events.push(ev);
        }
        Ok(())
    }
}

impl Drop for HwDecoder {
    fn drop(&mut self) {
        // Teardown: wait for our own copies (events only), then release the surfaces, then the
        // NVDEC session, all inside our context.
        let t0 = timing::Mark::now();
        let _g = self.cam.stream.dev.push();
        for (f, ev) in self.pending.drain(..) {
            if !ev.query().unwrap_or(true) {
                let _ = ev.synchronize();
            }
            drop(f);
        }
        // SAFETY: our frame, never copied from (or its copies were waited for above).
        unsafe { ffi::av_frame_unref(self.frame.as_mut_ptr()) };
        self.spare_frames.clear();
        drop(self.dec.take());
        drop(self.hw_dev.take());
        stats::of(self.cam.stream.dev.ordinal).hw_decoders.fetch_sub(1, Ordering::Relaxed);
        t0.end(Stage::HwDrop);
    }
}

impl Decoder for HwDecoder {
    fn kind(&self) -> DecoderKind {
        DecoderKind::FfmpegCuda
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        self.reap()?;
        let t0 = timing::Mark::now();
        let r = self.dec().send_packet(pkt);
        let inits = self.fmt.inits.load(Ordering::Relaxed);
        if inits != self.inits_seen {
            self.inits_seen = inits;
            t0.end(Stage::HwCreate);
        } else {
            t0.end(Stage::HwSend);
        }
        self.check_refused()?;
        match r {
            Ok(()) => Ok(Outcome::Clean),
            Err(ff::Error::InvalidData) => {
                log::debug!("decoder skipped a corrupt packet");
                Ok(Outcome::Corrupt(None))
            }
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet (CUDA hwaccel)", e)),
        }
    }
    fn send_eof(&mut self) -> Result<Outcome> {
        match self.dec().send_eof() {
            Ok(()) => Ok(Outcome::Clean),
            // As mid-stream: a corrupt packet is the stream's fault.
            Err(ff::Error::InvalidData) => Ok(Outcome::Corrupt(None)),
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet(NULL)", e)),
        }
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        self.reap()?;
        // receive_frame unrefs a picture that was received but never written (dropped).
        let mut f = std::mem::replace(&mut self.frame, ff::frame::Video::empty());
        let t0 = timing::Mark::now();
        let r = self.dec().receive_frame(&mut f);
        if r.is_ok() {
            t0.end(Stage::HwReceive);
        }
        self.frame = f;
        self.has_frame = false;
        self.check_refused()?;
        let Some(pic) = received(r, &self.frame, self.time_base, "avcodec_receive_frame (CUDA hwaccel)", false)? else {
            return Ok(None);
        };
        // SAFETY: our frame, just filled by the decoder.
        let fmt = unsafe { (*self.frame.as_ptr()).format };
        if fmt != ffi::AVPixelFormat::AV_PIX_FMT_CUDA as i32 {
            self.fmt.refused.store(true, Ordering::Release);
            return Err(Error::new(ErrorKind::Unsupported, format!("hardware decoder returned a software frame ({})", crate::ffmpeg::pixfmt::name(fmt))));
        }
        // SAFETY: a CUDA frame carries its frames context (FFmpeg's contract for hardware frames).
        let sw = unsafe {
            let fc = (*self.frame.as_ptr()).hw_frames_ctx;
            if fc.is_null() {
                -1
            } else {
                (*((*fc).data as *const ffi::AVHWFramesContext)).sw_format as i32
            }
        };
        use ffi::AVPixelFormat::*;
        let want = if pic.depth == crate::pool::Depth::Eight { [AV_PIX_FMT_NV12, AV_PIX_FMT_NV12] } else { [AV_PIX_FMT_P010LE, AV_PIX_FMT_P016LE] };
        if !want.iter().any(|&f| f as i32 == sw) {
            self.fmt.refused.store(true, Ordering::Release);
            return Err(Error::new(ErrorKind::Unsupported, format!("hardware decoder wrote {} surfaces, not NV12, P010 or P016", crate::ffmpeg::pixfmt::name(sw))));
        }
        self.has_frame = true;
        Ok(Some(pic))
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        if !self.has_frame {
            return Err(Error::internal("write_into without a received picture"));
        }
        let t0 = timing::Mark::now();
        let g = lease.pool().geom;
        let s = &self.cam.stream;
        let dst = device_slot(lease, s, Some((self.frame.width(), self.frame.height())))?;
        // SAFETY: our frame, a decoded CUDA frame (checked in receive).
        let (src_y, pitch_y, src_uv, pitch_uv) = unsafe {
            let f = &*self.frame.as_ptr();
            (f.data[0] as u64, f.linesize[0] as usize, f.data[1] as u64, f.linesize[1] as usize)
        };
        if src_y == 0 || src_uv == 0 {
            return Err(Error::internal("CUDA frame without planes"));
        }
        // SAFETY: the source planes are the frame's NVDEC surface, which we hold (in `pending`)
        // until the event recorded after these copies completes; the slot is ours (lease) and has
        // the frame's size (checked).
        unsafe {
            Copy2D { src: Mem::Device(src_y), src_pitch: pitch_y, dst: Mem::Device(dst), dst_pitch: g.pitch, width_bytes: g.y_row_bytes(), rows: g.y_rows() }
                .enqueue(s)?;
            Copy2D {
                src: Mem::Device(src_uv),
                src_pitch: pitch_uv,
                dst: Mem::Device(dst + g.uv_offset() as u64),
                dst_pitch: g.pitch,
                width_bytes: g.row_bytes(),
                rows: g.uv_rows(),
            }
            .enqueue(s)?;
        }
        lease.pool().storage().mark_written(lease.index())?;
        let ev = match self.spare_events.pop() {
            Some(e) => e,
            None => Event::new(&s.dev)?,
        };
        ev.record(s)?;
        let shell = self.spare_frames.pop().unwrap_or_else(ff::frame::Video::empty);
        let held = std::mem::replace(&mut self.frame, shell);
        self.has_frame = false;
        self.pending.push_back((held, ev));
        stats::of(s.dev.ordinal).frames_copied.fetch_add(1, Ordering::Relaxed);
        t0.end(Stage::HwWrite);
        Ok(Outcome::Clean)
    }
    fn continues_across_rewind(&self) -> bool {
        // A flush (reset) makes FFmpeg's h264 decoder re-initialise at its next slice, and that
        // destroys and re-creates its NVDEC session: cuvidCreateDecoder, which the driver runs one
        // at a time, so cameras that loop together (paced files opened together) queue for
        // seconds. `NVCAM_HW_LOOP_FLUSH=1` restores drain + flush at every loop, for measurements.
        !crate::switches::Switch::HwLoopFlush.var().is_ok_and(|v| v == "1")
    }
    fn reset(&mut self) -> bool {
        // Held surfaces keep their own references; they are reaped as their copies complete.
        // SAFETY: our frame, not copied from (a written frame moved to `pending`).
        unsafe { ffi::av_frame_unref(self.frame.as_mut_ptr()) };
        self.has_frame = false;
        self.dec().flush();
        true
    }
}

#[cfg(test)]
mod tests {
    /// With libdav1d in the build, FFmpeg prefers it for AV1; it has no hwaccel, so the CUDA
    /// decoder would have lost AV1 had it taken FFmpeg's preferred decoder, and the CPU path had
    /// no AV1 while it took the native one.
    #[test]
    fn av1_goes_to_the_native_decoder_on_cuda_and_to_libdav1d_on_the_cpu() {
        ffmpeg_next::init().unwrap();
        let id = ffmpeg_next::codec::Id::AV1;
        assert_eq!(super::cuda_codec(id).map(|c| c.name().to_string()).as_deref(), Some("av1"));
        let sw = crate::decode::software::software_codec(id);
        assert_eq!(sw.map(|c| c.name().to_string()).as_deref(), Some("libdav1d"));
        for id in [ffmpeg_next::codec::Id::H264, ffmpeg_next::codec::Id::HEVC, ffmpeg_next::codec::Id::VP9] {
            let (cuda, sw) = (super::cuda_codec(id).map(|c| c.name().to_string()), crate::decode::software::software_codec(id).map(|c| c.name().to_string()));
            assert!(cuda.is_some() && cuda == sw, "{id:?}: one native decoder for both: {cuda:?} {sw:?}");
        }
    }
}
