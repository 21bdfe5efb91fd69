//! FFmpeg's software decoder: the CPU path, and the first half of software + upload.

use super::{received, Decoder, DecoderKind, Outcome, Picture};
use crate::pool::{Geometry, Lease};
use crate::status::*;
use ff::ffi;
use ffmpeg_next as ff;

/// FFmpeg's software decoder; converts whatever it outputs to NV12 with swscale, straight into the
/// slot (no intermediate frame).
pub(crate) struct SoftwareDecoder {
    dec: ff::decoder::Video,
    frame: ff::frame::Video,
    time_base: ff::Rational,
    sws: *mut ffi::SwsContext,
    /// JPEG pictures: full-range BT.601 whatever the frame says (`Color::jpeg`).
    jpeg: bool,
}

// SAFETY: the codec and SwsContext are owned by this decoder and used through `&mut self` only.
unsafe impl Send for SoftwareDecoder {}

impl SoftwareDecoder {
    pub(crate) fn new(stream: &ff::format::stream::Stream<'_>, threads: usize, low_latency: bool) -> Result<SoftwareDecoder> {
        Self::from_parameters(stream.parameters(), stream.time_base(), threads, low_latency)
    }

    /// At low latency the decoder threads split each picture (slice threads) instead of working
    /// on several pictures at once (frame threads, which hold one picture back per thread).
    pub(crate) fn from_parameters(params: ff::codec::Parameters, time_base: ff::Rational, threads: usize, low_latency: bool) -> Result<SoftwareDecoder> {
        let id = params.id();
        if ff::decoder::find(id).is_none() {
            return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("codec {id:?} not supported on this path (no FFmpeg decoder)")));
        }
        let mut ctx = ff::codec::Context::from_parameters(params.clone()).map_err(|e| Error::ffmpeg("avcodec_parameters_to_context", e))?;
        let kind = if low_latency { ff::codec::threading::Type::Slice } else { ff::codec::threading::Type::Frame };
        ctx.set_threading(ff::codec::threading::Config { kind, count: threads, ..Default::default() });
        if low_latency {
            // SAFETY: an unopened context made from `params`.
            unsafe { super::set_low_delay(ctx.as_mut_ptr(), &params) };
        }
        let dec = ctx.decoder().video().map_err(|e| Error::ffmpeg("avcodec_open2", e))?;
        Ok(SoftwareDecoder { dec, frame: ff::frame::Video::empty(), time_base, sws: std::ptr::null_mut(), jpeg: id == ff::codec::Id::MJPEG })
    }

    /// Converts the picture last received to NV12 at `g` (Y rows, then UV rows, at `g.pitch`)
    /// into `dst`, which holds at least `g.slot_bytes()`. 4:2:0 input is only interleaved; 4:2:2
    /// and 4:4:4 chroma (MJPEG cameras) is filtered with swscale's bicubic, the filter of
    /// FFmpeg's own `-pix_fmt nv12`, so frames equal FFmpeg's conversion byte for byte.
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
        // SAFETY: `f.format` is a pixel format FFmpeg's decoder set (a valid AVPixelFormat value);
        // `self.sws` is null or the context this function made before.
        self.sws = unsafe {
            ffi::sws_getCachedContext(
                self.sws, w, h, std::mem::transmute::<i32, ffi::AVPixelFormat>(f.format),
                w, h, ffi::AVPixelFormat::AV_PIX_FMT_NV12,
                ffi::SWS_BICUBIC, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null(),
            )
        };
        if self.sws.is_null() {
            return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("no conversion from pixel format {} to NV12", crate::ffmpeg::pixfmt::name(f.format))));
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
                Ok(Outcome::Clean)
            }
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet", e)),
        }
    }
    fn send_eof(&mut self) -> Result<()> {
        self.dec.send_eof().map_err(|e| Error::ffmpeg("avcodec_send_packet(NULL)", e))
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        let r = self.dec.receive_frame(&mut self.frame);
        received(r, &self.frame, self.time_base, "avcodec_receive_frame", self.jpeg)
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
}
