//! The decoder seam, and the FFmpeg software decoder behind it.
//!
//! A decoder turns packets into pictures and writes each picture as NV12 into a pool slot it is
//! given. The camera worker knows nothing else about it, so the GPU backends (FFmpeg's CUDA
//! hwaccel, direct NVDEC) plug in here with their own memory kind and the same lifetime rules.

use crate::pool::{Geometry, Lease, Pool};
use crate::status::*;
use ffmpeg_next as ff;
use ff::ffi;
use std::sync::Arc;

/// A picture the decoder holds until `write_into` or the next `receive`.
#[derive(Clone, Copy, Debug)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// Microseconds on the stream's clock, i64::MIN if the stream has none.
    pub pts_us: i64,
}

pub trait Decoder: Send {
    /// Short name shown in stats and logs ("ffmpeg-sw", "ffmpeg-cuda", "nvdec").
    fn name(&self) -> &'static str;
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<()>;
    fn send_eof(&mut self) -> Result<()>;
    /// The next decoded picture, if one is ready.
    fn receive(&mut self) -> Result<Option<Picture>>;
    /// Writes the picture last received, as NV12, into `lease`'s slot.
    fn write_into(&mut self, lease: &mut Lease) -> Result<()>;
    /// A pool of `slots` slots of `geom`'s size in the memory this decoder writes (the storage
    /// may choose another pitch).
    fn new_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>>;
    /// The device ordinal of the pools this decoder writes (-1: host memory), so a camera whose
    /// decoder changed kind gets a new pool.
    fn pool_device(&self) -> i32 {
        -1
    }
    /// Makes the decoder ready for a rewound stream after end of file (keeping its sessions and
    /// buffers). False if it cannot, and the caller makes a new one.
    fn reset(&mut self) -> bool {
        false
    }
    /// An error the decoder met and recovered from by itself (for example by recreating its
    /// hardware session), for the camera to report; taken once. After a failed `write_into`, a
    /// pending warning means "recovered, this one frame is dropped" rather than a failed session.
    fn take_warning(&mut self) -> Option<crate::status::Error> {
        None
    }
}

/// FFmpeg's software decoder; converts whatever it outputs to NV12 with swscale, straight into the
/// slot (no intermediate frame).
pub struct SoftwareDecoder {
    dec: ff::decoder::Video,
    frame: ff::frame::Video,
    time_base: ff::Rational,
    sws: *mut ffi::SwsContext,
}

// SAFETY: the SwsContext is owned by this decoder and used from one thread at a time.
unsafe impl Send for SoftwareDecoder {}

impl SoftwareDecoder {
    pub fn new(stream: &ff::format::stream::Stream<'_>, threads: usize) -> Result<SoftwareDecoder> {
        Self::from_parameters(stream.parameters(), stream.time_base(), threads)
    }

    pub fn from_parameters(params: ff::codec::Parameters, time_base: ff::Rational, threads: usize) -> Result<SoftwareDecoder> {
        let id = params.id();
        if ff::decoder::find(id).is_none() {
            return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("codec {id:?} not supported on this path (no FFmpeg decoder)")));
        }
        let mut ctx = ff::codec::Context::from_parameters(params).map_err(|e| Error::ffmpeg("avcodec_parameters_to_context", e))?;
        ctx.set_threading(ff::codec::threading::Config { kind: ff::codec::threading::Type::Frame, count: threads, ..Default::default() });
        let dec = ctx.decoder().video().map_err(|e| Error::ffmpeg("avcodec_open2", e))?;
        Ok(SoftwareDecoder { dec, frame: ff::frame::Video::empty(), time_base, sws: std::ptr::null_mut() })
    }

    /// Converts the picture last received to NV12 at `g` (Y rows, then UV rows, at `g.pitch`)
    /// into `dst`, which holds at least `g.slot_bytes()`.
    pub fn convert_into(&mut self, dst: &mut [u8], g: &Geometry) -> Result<()> {
        let (w, h) = (self.frame.width() as i32, self.frame.height() as i32);
        if (w as u32, h as u32) != (g.width, g.height) {
            return Err(Error::internal("picture and slot sizes differ"));
        }
        if dst.len() < g.slot_bytes() {
            return Err(Error::internal("conversion target too small"));
        }
        let f = unsafe { &*self.frame.as_ptr() };
        unsafe {
            self.sws = ffi::sws_getCachedContext(
                self.sws, w, h, std::mem::transmute::<i32, ffi::AVPixelFormat>(f.format),
                w, h, ffi::AVPixelFormat::AV_PIX_FMT_NV12,
                ffi::SWS_POINT as i32, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null(),
            );
            if self.sws.is_null() {
                return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("no conversion from pixel format {} to NV12", f.format)));
            }
            let dst_planes = [dst.as_mut_ptr(), dst.as_mut_ptr().add(g.uv_offset()), std::ptr::null_mut(), std::ptr::null_mut()];
            let dst_strides = [g.pitch as i32, g.pitch as i32, 0, 0];
            let r = ffi::sws_scale(
                self.sws, f.data.as_ptr() as *const *const u8, f.linesize.as_ptr(), 0, h,
                dst_planes.as_ptr(), dst_strides.as_ptr(),
            );
            if r < 0 {
                return Err(Error::ffmpeg("sws_scale", ff::Error::from(r)));
            }
        }
        Ok(())
    }

    /// avcodec_flush_buffers: back to a clean state after end of file, same codec session.
    pub fn flush(&mut self) {
        self.dec.flush();
    }
}

impl Drop for SoftwareDecoder {
    fn drop(&mut self) {
        unsafe { ffi::sws_freeContext(self.sws) };
    }
}

/// What `avcodec_receive_frame` returned, for a [`Decoder::receive`]: the picture in `frame`
/// (`Some`), none ready yet or the end (`None`, also for a corrupt picture FFmpeg skipped), or a
/// real failure of `call`.
pub fn received(
    r: std::result::Result<(), ff::Error>,
    frame: &ff::frame::Video,
    time_base: ff::Rational,
    call: &str,
) -> Result<Option<Picture>> {
    match r {
        Ok(()) => Ok(Some(Picture { width: frame.width(), height: frame.height(), pts_us: pts_us(frame.timestamp(), time_base) })),
        Err(ff::Error::Eof) | Err(ff::Error::InvalidData) => Ok(None),
        Err(ff::Error::Other { errno }) if errno == ff::util::error::EAGAIN => Ok(None),
        Err(e) => Err(Error::ffmpeg(call, e)),
    }
}

/// Stream timestamp → microseconds.
pub fn pts_us(pts: Option<i64>, tb: ff::Rational) -> i64 {
    match pts {
        Some(p) if tb.denominator() != 0 => {
            (p as i128 * tb.numerator() as i128 * 1_000_000 / tb.denominator() as i128) as i64
        }
        _ => i64::MIN,
    }
}

impl Decoder for SoftwareDecoder {
    fn name(&self) -> &'static str {
        "ffmpeg-sw"
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<()> {
        match self.dec.send_packet(pkt) {
            Ok(()) => Ok(()),
            // A corrupt packet is the stream's fault, not a reason to drop the camera.
            Err(ff::Error::InvalidData) => {
                log::debug!("decoder skipped a corrupt packet");
                Ok(())
            }
            Err(e) => Err(Error::ffmpeg("avcodec_send_packet", e)),
        }
    }
    fn send_eof(&mut self) -> Result<()> {
        self.dec.send_eof().map_err(|e| Error::ffmpeg("avcodec_send_packet(NULL)", e))
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        let r = self.dec.receive_frame(&mut self.frame);
        received(r, &self.frame, self.time_base, "avcodec_receive_frame")
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<()> {
        let g = lease.pool().geom;
        let dst = lease.host_bytes_mut().ok_or_else(|| Error::internal("software decoder needs a host pool"))?;
        self.convert_into(dst, &g)
    }
    fn new_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        Pool::host(geom, slots)
    }
}
