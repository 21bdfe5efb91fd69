//! FFmpeg's software decoder: the CPU path, and the first half of software + upload.

use super::{received, DecodeOpts, Decoder, DecoderKind, Outcome, Picture};
use crate::pool::{Depth, Geometry, Lease};
use crate::status::*;
use ff::ffi;
use ffmpeg_next as ff;

/// AVERROR(ENOSYS)'s errno as ffmpeg_next reports it ("Function not implemented"), the same on
/// Linux and under mingw.
const ENOSYS: i32 = ff::util::error::ENOSYS;

/// FFmpeg's software decoder; converts whatever it outputs to NV12 with swscale, straight into the
/// slot (no intermediate frame).
pub(crate) struct SoftwareDecoder {
    dec: ff::decoder::Video,
    frame: ff::frame::Video,
    time_base: ff::Rational,
    sws: *mut ffi::SwsContext,
    /// The (width, height, source format, destination format) `sws` was made for.
    sws_key: (i32, i32, i32, i32),
    /// Deliver NV12 from 10- and 12-bit pictures too (`NVCAM_OPEN_8BIT`).
    eight_bit: bool,
    /// JPEG pictures: full-range BT.601 whatever the frame says (`Color::jpeg`).
    jpeg: bool,
    /// What the decoder was opened from, to open it afresh at a recovery point.
    params: ff::codec::Parameters,
    opts: DecodeOpts,
}

// SAFETY: the codec and SwsContext are owned by this decoder and used through `&mut self` only.
unsafe impl Send for SoftwareDecoder {}

impl SoftwareDecoder {
    pub(crate) fn new(stream: &ff::format::stream::Stream<'_>, o: DecodeOpts) -> Result<SoftwareDecoder> {
        Self::from_parameters(stream.parameters(), stream.time_base(), o)
    }

    /// At low latency the decoder threads split each picture (slice threads) instead of working
    /// on several pictures at once (frame threads, which hold one picture back per thread).
    pub(crate) fn from_parameters(params: ff::codec::Parameters, time_base: ff::Rational, o: DecodeOpts) -> Result<SoftwareDecoder> {
        let id = params.id();
        if software_codec(id).is_none() {
            return Err(unsupported(id, "this FFmpeg has no software decoder for it"));
        }
        let dec = Self::open_codec(&params, o)?;
        Ok(SoftwareDecoder {
            dec,
            frame: ff::frame::Video::empty(),
            time_base,
            sws: std::ptr::null_mut(),
            sws_key: (0, 0, -1, -1),
            eight_bit: o.eight_bit,
            jpeg: id == ff::codec::Id::MJPEG,
            params,
            opts: o,
        })
    }

    fn open_codec(params: &ff::codec::Parameters, o: DecodeOpts) -> Result<ff::decoder::Video> {
        let mut ctx = ff::codec::Context::from_parameters(params.clone()).map_err(|e| Error::ffmpeg("avcodec_parameters_to_context", e))?;
        let kind = if o.low_latency { ff::codec::threading::Type::Slice } else { ff::codec::threading::Type::Frame };
        ctx.set_threading(ff::codec::threading::Config { kind, count: o.threads, ..Default::default() });
        if o.low_latency {
            // SAFETY: an unopened context made from `params`.
            unsafe { super::set_low_delay(ctx.as_mut_ptr(), params) };
        }
        if params.id() == ff::codec::Id::MJPEG {
            // A JPEG whose Huffman codes do not decode is refused (the camera takes the packet
            // as corrupt) instead of coming out half grey and unmarked: FFmpeg otherwise only
            // logs the error and hands the picture out.
            // SAFETY: an unopened context we own.
            unsafe { (*ctx.as_mut_ptr()).err_recognition |= ffi::AV_EF_EXPLODE };
        }
        // SAFETY: an unopened context we own; `max_pixels` is a plain field FFmpeg reads when it
        // sets a picture size.
        unsafe { (*ctx.as_mut_ptr()).max_pixels = o.max_pixels.min(i64::MAX as u64) as i64 };
        let codec = software_codec(params.id()).ok_or_else(|| unsupported(params.id(), "this FFmpeg has no software decoder for it"))?;
        ctx.decoder().open_as(codec).and_then(|d| d.video()).map_err(|e| Error::ffmpeg("avcodec_open2", e))
    }

    /// Converts the picture last received to NV12 at `g` (Y rows, then UV rows, at `g.pitch`)
    /// into `dst`, which holds at least `g.slot_bytes()`. The samples keep their range (see
    /// [`same_range_scaler`]): 4:2:0 input is only interleaved, luma copied; JPEG's 4:2:2, 4:4:0
    /// and 4:4:4 chroma (MJPEG cameras) is box-averaged as NVDEC's JPEG engine does
    /// ([`super::chroma_box`]), so every decoder gives a JPEG camera the same NV12; other 4:2:2
    /// and 4:4:4 streams take swscale's bicubic; gray gets neutral chroma (128).
    pub(crate) fn convert_into(&mut self, dst: &mut [u8], g: &Geometry) -> Result<()> {
        let (w, h) = (self.frame.width() as i32, self.frame.height() as i32);
        if (w as u32, h as u32) != (g.width, g.height) {
            return Err(Error::internal("picture and slot sizes differ"));
        }
        if dst.len() < g.slot_bytes() {
            return Err(Error::internal("conversion target too small"));
        }
        // SAFETY: the decoder's frame is a valid AVFrame holding the picture last received.
        let f = unsafe { &*self.frame.as_ptr() };
        if self.jpeg && f.format == ffi::AVPixelFormat::AV_PIX_FMT_GRAY8 as i32 {
            // Gray JPEG: luma as decoded (full range, as its frames report), neutral chroma.
            let (y, uv) = dst.split_at_mut(g.uv_offset());
            for r in 0..h as usize {
                // SAFETY: row r of the frame's only plane holds `w` bytes at `linesize[0]` apart.
                let src = unsafe { std::slice::from_raw_parts(f.data[0].offset(r as isize * f.linesize[0] as isize), w as usize) };
                y[r * g.pitch..r * g.pitch + w as usize].copy_from_slice(src);
            }
            uv[..g.pitch * (h as usize).div_ceil(2)].fill(128);
            return Ok(());
        }
        if self.jpeg && g.depth == Depth::Eight {
            let forward = f.linesize[..3].iter().all(|&l| l > 0);
            if let (Some(sub), true) = (super::chroma_box::Sub::of(f.format), forward) {
                // SAFETY: the frame's planes: luma `h` rows of `w`, chroma `ceil(h / sub.y)` rows
                // of `ceil(w / sub.x)`, at their linesizes (positive for decoded pictures).
                unsafe { write_boxed(f, sub, dst, g) };
                return Ok(());
            }
        }
        // P016 slots: 10-bit pictures as P010 (the value << 6), 12-bit as P016 (<< 4), exact.
        use ffi::AVPixelFormat::*;
        let to = match g.depth {
            Depth::Eight => AV_PIX_FMT_NV12,
            Depth::Sixteen if crate::ffmpeg::pixfmt::bit_depth(f.format) > 10 => AV_PIX_FMT_P016LE,
            Depth::Sixteen => AV_PIX_FMT_P010LE,
        } as i32;
        if self.sws.is_null() || self.sws_key != (w, h, f.format, to) {
            // SAFETY: null or the context this decoder made; replaced below.
            unsafe { ffi::sws_freeContext(self.sws) };
            self.sws = same_range_scaler(w, h, f.format, to);
            self.sws_key = (w, h, f.format, to);
        }
        if self.sws.is_null() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("no conversion from pixel format {} to {}", crate::ffmpeg::pixfmt::name(f.format), crate::ffmpeg::pixfmt::name(to)),
            ));
        }
        let (y, uv) = dst.split_at_mut(g.uv_offset());
        let dst_planes = [y.as_mut_ptr(), uv.as_mut_ptr(), std::ptr::null_mut(), std::ptr::null_mut()];
        let dst_strides = [g.pitch as i32, g.pitch as i32, 0, 0];
        // SAFETY: the source planes are the frame's own; the destination planes hold h rows (Y)
        // and (h + 1) / 2 rows (UV) at `g.pitch`, which `dst.len() >= g.slot_bytes()` covers.
        let r = unsafe {
            ffi::sws_scale(
                self.sws, f.data.as_ptr() as *const *const u8, f.linesize.as_ptr(), 0, h,
                dst_planes.as_ptr(), dst_strides.as_ptr(),
            )
        };
        if r < 0 {
            return Err(Error::ffmpeg("sws_scale", ff::Error::from(r)));
        }
        Ok(())
    }

    /// avcodec_flush_buffers: back to a clean state after end of file, same codec session.
    pub(crate) fn flush(&mut self) {
        self.dec.flush();
    }

    /// A new codec session, for a recovery point: a flush leaves FFmpeg 5.1's H.264 decoder with
    /// state that spoils the next IDR after a damaged picture (see
    /// `Decoder::before_recovery_point`); a fresh one decodes it as a clean stream would. If it
    /// cannot be opened (it opened before), the old one goes on, flushed.
    pub(crate) fn reopen(&mut self) {
        match Self::open_codec(&self.params, self.opts) {
            Ok(d) => self.dec = d,
            Err(e) => {
                log::warn!("reopening the decoder at a recovery point: {e}; flushing it instead");
                self.dec.flush();
            }
        }
    }
}

/// The decoder that decodes `id` on the CPU: the first FFmpeg registered for it (its own order
/// puts the one it prefers first: libdav1d before its native AV1 decoder) that does the work
/// itself. Left out: hardware wrappers (`AV_CODEC_CAP_HARDWARE`) and FFmpeg 5.1's native `av1`
/// decoder, which only drives a hardware accelerator (every packet: ENOSYS); that one stays for
/// the CUDA hwaccel (`super::hwdec`).
pub(crate) fn software_codec(id: ff::codec::Id) -> Option<ff::Codec> {
    decoders_of(id).find(|c| {
        // SAFETY: a registered codec, static.
        let caps = unsafe { (*c.as_ptr()).capabilities };
        caps & ffi::AV_CODEC_CAP_HARDWARE as i32 == 0 && !(id == ff::codec::Id::AV1 && c.name() == "av1")
    })
}

/// Every decoder FFmpeg has for `id`, in its registry order.
pub(crate) fn decoders_of(id: ff::codec::Id) -> impl Iterator<Item = ff::Codec> {
    let want: ffi::AVCodecID = id.into();
    let mut it: *mut std::ffi::c_void = std::ptr::null_mut();
    std::iter::from_fn(move || {
        // SAFETY: `it` is the iteration state av_codec_iterate keeps; it returns static codecs
        // and null after the last.
        let c = unsafe { ffi::av_codec_iterate(&mut it) };
        (!c.is_null()).then_some(c)
    })
    // SAFETY: registered codecs are static and valid.
    .filter(move |&c| unsafe { ffi::av_codec_is_decoder(c) != 0 && (*c).id == want })
    // SAFETY: as above; `Codec::wrap` only holds the pointer.
    .map(|c| unsafe { ff::Codec::wrap(c) })
}

/// The error for a stream of codec `id` the CPU path cannot decode (permanent: the camera fails
/// once instead of reconnecting to the same stream).
fn unsupported(id: ff::codec::Id, why: &str) -> Error {
    let codec = format!("{id:?}").to_lowercase();
    Error::new(ErrorKind::Unsupported, format!("codec {codec} cannot be decoded in software (the CPU path, and software + upload on a GPU): {why}"))
}

/// Writes 8-bit planar picture `f` (chroma subsampled by `sub`) as NV12 into `dst` at `g`: luma
/// copied, chroma by the box rule.
///
/// # Safety
/// `f` is a decoded 8-bit planar picture of `g`'s size whose planes hold what `sub` says, at
/// positive linesizes; `dst` holds at least `g.slot_bytes()`.
unsafe fn write_boxed(f: &ffi::AVFrame, sub: super::chroma_box::Sub, dst: &mut [u8], g: &Geometry) {
    use super::chroma_box::{chroma_to_nv12, Plane};
    let (w, h) = (g.width as usize, g.height as usize);
    let (cw, ch) = (w.div_ceil(sub.x), h.div_ceil(sub.y));
    // SAFETY: the caller's contract: plane i holds its rows at `linesize[i]`, the last row at
    // least its width.
    let plane = |i: usize, width: usize, rows: usize| unsafe {
        let stride = f.linesize[i] as usize;
        Plane { data: std::slice::from_raw_parts(f.data[i], stride * (rows - 1) + width), stride, width, rows }
    };
    let (y, uv) = dst.split_at_mut(g.uv_offset());
    let luma = plane(0, w, h);
    for r in 0..h {
        y[r * g.pitch..r * g.pitch + w].copy_from_slice(&luma.data[r * luma.stride..r * luma.stride + w]);
    }
    chroma_to_nv12(&plane(1, cw, ch), &plane(2, cw, ch), sub, w, h, uv, g.pitch);
}

/// A swscale context from `w`x`h` pictures of `fmt` to `to` (NV12, P010 or P016) of the same size
/// that leaves a Y'CbCr source's sample values' range alone (null if swscale has no such
/// conversion). RGB and gray sources keep swscale's defaults: limited-range BT.601 Y'CbCr, what
/// their frames are then taken to be (unflagged, resolved as limited).
///
/// Why: swscale takes the `yuvj` formats (JPEG, and H.264/HEVC flagged full range) as full range
/// and NV12 as limited, and by default squeezes 0..255 into 16..235. The hardware decoders
/// write the samples as decoded, and frames report the stream's range, so the CPU path must
/// write them as decoded too, or one camera's colours would depend on its decoder.
fn same_range_scaler(w: i32, h: i32, fmt: i32, to: i32) -> *mut ffi::SwsContext {
    // SAFETY: allocation only.
    let c = unsafe { ffi::sws_alloc_context() };
    if c.is_null() {
        return c;
    }
    // swscale's own name for a `yuvj` format's layout (what its `handle_jpeg` does, without the
    // "deprecated pixel format" warning per camera): the range is set below.
    use ffi::AVPixelFormat::*;
    let layout = [(AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P), (AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV422P), (AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUV444P), (AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUV440P), (AV_PIX_FMT_YUVJ411P, AV_PIX_FMT_YUV411P)]
        .iter()
        .find(|(j, _)| *j as i32 == fmt)
        .map_or(fmt, |(_, p)| *p as i32);
    let keep = crate::ffmpeg::pixfmt::is_ycbcr(layout);
    let opts: [(&std::ffi::CStr, i64); 9] = [
        (c"srcw", w as i64),
        (c"srch", h as i64),
        (c"src_format", layout as i64),
        (c"dstw", w as i64),
        (c"dsth", h as i64),
        (c"dst_format", to as i64),
        (c"sws_flags", ffi::SWS_BICUBIC as i64),
        // Both full: swscale keeps the yuvj formats' full range, and equal ranges convert nothing.
        (c"src_range", keep as i64),
        (c"dst_range", keep as i64),
    ];
    for (k, v) in opts {
        // SAFETY: `c` is a fresh SwsContext (an AVOptions object); `k` is NUL-terminated.
        if unsafe { ffi::av_opt_set_int(c as *mut std::ffi::c_void, k.as_ptr(), v, 0) } < 0 {
            // SAFETY: the context made above, freed once.
            unsafe { ffi::sws_freeContext(c) };
            return std::ptr::null_mut();
        }
    }
    // SAFETY: every option of the context is set; no filters.
    if unsafe { ffi::sws_init_context(c, std::ptr::null_mut(), std::ptr::null_mut()) } < 0 {
        // SAFETY: as above.
        unsafe { ffi::sws_freeContext(c) };
        return std::ptr::null_mut();
    }
    c
}

impl Drop for SoftwareDecoder {
    fn drop(&mut self) {
        // SAFETY: null or the context we made; freed once.
        unsafe { ffi::sws_freeContext(self.sws) };
    }
}

impl Decoder for SoftwareDecoder {
    fn kind(&self) -> DecoderKind {
        DecoderKind::Software
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        match self.dec.send_packet(pkt) {
            Ok(()) => Ok(Outcome::Clean),
            // A corrupt packet is the stream's fault, not a reason to drop the camera.
            Err(ff::Error::InvalidData) => {
                log::debug!("decoder skipped a corrupt packet");
                Ok(Outcome::Corrupt(None))
            }
            // A decoder that opened but does not decode this stream (one that only drives a
            // hardware accelerator): a new session would open it again.
            Err(e @ ff::Error::Other { errno: ENOSYS }) => {
                Err(unsupported(self.params.id(), &format!("decoder '{}': avcodec_send_packet: {e}", self.dec.codec().map_or("?".into(), |c| c.name().to_string()))))
            }
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet", e)),
        }
    }
    fn send_eof(&mut self) -> Result<Outcome> {
        match self.dec.send_eof() {
            Ok(()) => Ok(Outcome::Clean),
            // The last packets' decode fails here (frame threads): as it would mid-stream.
            Err(ff::Error::InvalidData) => {
                log::debug!("decoder met a corrupt packet at the end of the stream");
                Ok(Outcome::Corrupt(None))
            }
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet(NULL)", e)),
        }
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        let r = self.dec.receive_frame(&mut self.frame);
        let pic = received(r, &self.frame, self.time_base, "avcodec_receive_frame", self.jpeg)?;
        // swscale writes P010 or P016 exactly; NV12 for an 8-bit camera, rounded (dithered).
        Ok(pic.map(|p| if self.eight_bit { Picture { depth: Depth::Eight, bits: 8, ..p } } else { p }))
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        let g = lease.pool().geom;
        let dst = lease.host_bytes_mut().ok_or_else(|| Error::internal("software decoder needs a host pool"))?;
        self.convert_into(dst, &g)?;
        Ok(Outcome::Clean)
    }
    fn reset(&mut self) -> bool {
        self.flush();
        true
    }
    fn restarts_at_recovery_point(&self) -> bool {
        true
    }
    fn before_recovery_point(&mut self) {
        // Pictures still inside (frame threads) are lost: they came before the recovery point,
        // in a stream already suspect.
        self.reopen();
    }
}
