//! One MJPEG camera on nvJPEG's hardware back end, writing into the camera's device pool.
//!
//! Each packet's header is read on the host (`nvjpegJpegStreamParseHeader`, a few microseconds);
//! a JPEG the engine does not take (progressive, 4:1:1, 12-bit) turns the decoder down, and AUTO
//! falls back to direct NVDEC, then software + upload, with the reason logged. At `write_into`
//! the GPU's decode worker ([`super::batch`]) decodes the picture with other cameras' in one
//! batch, luma straight into the slot's Y plane and chroma at its own subsampling into scratch
//! planes of this decoder; the camera's stream waits for that batch, then `nvcam_jpeg_pack_uv`
//! (kernels/nvcam_jpeg.cu) box-averages the chroma into the slot's UV plane, the rule of every
//! JPEG decoder here. The slot's event is recorded after the kernel, like NVDEC's copy; the
//! scratch is reused only in stream order and freed after `done`.

use super::batch::Reply;
use crate::gpu::nvjpeg::sys;
use super::Engine;
use crate::decode::{DecoderKind, Decoder, Outcome, Picture};
use crate::frame::{Color, Range};
use crate::gpu::context::Event;
use crate::gpu::driver::{self, sys as cu};
use crate::gpu::memory::device_slot;
use crate::gpu::params::JpegPackParams;
use crate::gpu::{deferred, stats, CamGpu};
use crate::pool::{Depth, Lease};
use crate::status::*;
use ffmpeg_next as ff;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What the header of the packet last sent says.
#[derive(Clone, Copy, Debug)]
struct Header {
    pts_us: i64,
    width: u32,
    height: u32,
    /// Decoded chroma samples per NV12 chroma sample on each axis (1 or 2); `fx` 0: gray.
    fx: u32,
    fy: u32,
    /// The decoded chroma planes' size.
    cw: u32,
    ch: u32,
}

/// Device memory for the decoded chroma planes, retired through the deferred queue.
struct Scratch {
    ptr: cu::CUdeviceptr,
    len: usize,
}

pub(crate) struct NvjpegDecoder {
    engine: Arc<Engine>,
    cam: Arc<CamGpu>,
    jstream: sys::nvjpegJpegStream_t,
    pack: cu::CUfunction,
    time_base: ff::Rational,
    color: Color,
    /// The packet last sent (its bytes stay until it is written), and its header.
    data: Vec<u8>,
    sent: Option<Header>,
    current: Option<Header>,
    scratch: Option<Scratch>,
    /// Recorded on the camera's stream after each picture's last work: the scratch is freed
    /// after it.
    done: Event,
    /// Recorded on the camera's stream before a picture goes to the worker (its batch waits for
    /// it), and by the worker after the batch (the camera's stream waits for it).
    ready: Event,
    decoded: Event,
    reply: Arc<Reply>,
    /// The engine turned the stream down (a JPEG it does not take): AUTO falls back.
    hw_failed: bool,
    /// Pictures decoded, and the host time the camera waited for their batches (total,
    /// longest), logged when the decoder goes.
    calls: (u64, std::time::Duration, std::time::Duration),
    /// Counted in the engine's cameras (once ready).
    counted: bool,
}

// SAFETY: the nvJPEG stream is this decoder's own, used through `&mut self` only; the handle is
// thread safe.
unsafe impl Send for NvjpegDecoder {}

impl NvjpegDecoder {
    pub(crate) fn new(cam: &Arc<CamGpu>, engine: Arc<Engine>, params: &ff::codec::Parameters, time_base: ff::Rational) -> Result<NvjpegDecoder> {
        let dev = &cam.stream.dev;
        let t0 = std::time::Instant::now();
        let pack = crate::gpu::kernels::kernels(dev)?.function(c"nvcam_jpeg_pack_uv")?;
        let lib = engine.lib();
        let _g = dev.push()?;
        // SAFETY: the engine's handle (alive while `engine` is).
        let jstream = unsafe { lib.stream_create(engine.handle()) }?;
        // The decoder owns it from here (Drop frees it).
        let mut d = NvjpegDecoder {
            engine: engine.clone(),
            cam: cam.clone(),
            jstream,
            pack,
            time_base,
            color: Color::jpeg(crate::decode::probed_color(params).range != Range::Limited),
            data: Vec::new(),
            sent: None,
            current: None,
            scratch: None,
            done: Event::fence(dev)?,
            ready: Event::fence(dev)?,
            decoded: Event::fence(dev)?,
            reply: Arc::default(),
            hw_failed: false,
            calls: (0, std::time::Duration::ZERO, std::time::Duration::ZERO),
            counted: false,
        };
        let n = d.engine.cameras.fetch_add(1, Ordering::Relaxed) + 1;
        d.counted = true;
        log::info!("GPU {}: nvJPEG decoder ready in {:.1} ms ({n} on this GPU)", dev.ordinal, t0.elapsed().as_secs_f64() * 1e3);
        Ok(d)
    }

    /// Whether the engine turned the stream down (AUTO then falls back).
    pub(crate) fn hw_failed(&self) -> bool {
        self.hw_failed
    }

    fn refuse(&mut self, why: String) -> Error {
        self.hw_failed = true;
        Error::new(ErrorKind::Unsupported, format!("nvJPEG's hardware back end does not take this JPEG: {why}"))
    }

    /// Reads `data`'s header: its size and layout, or why it cannot be decoded here (`Err`: the
    /// engine does not take it; `Ok(Err)`: the header is damaged).
    fn header(&mut self, data: &[u8], pts_us: i64) -> Result<std::result::Result<Header, Error>> {
        let (lib, h) = (self.engine.lib(), self.engine.handle());
        // SAFETY: the engine's handle and our stream, made from it.
        match unsafe { lib.parse_header(h, data, self.jstream) } {
            Ok(()) => {}
            Err(e) if e.status == sys::NVJPEG_STATUS_JPEG_NOT_SUPPORTED => return Err(self.refuse(sys::status_name(e.status).into())),
            Err(e) => return Ok(Err(e.into())),
        }
        // SAFETY: as above, the stream just parsed.
        let status = match unsafe { lib.batched_supported(h, self.jstream) } {
            Ok(true) => None,
            Ok(false) => Some(sys::NVJPEG_STATUS_SUCCESS),
            Err(e) => Some(e.status),
        };
        if let Some(r) = status {
            return Err(self.refuse(format!("nvjpegDecodeBatchedSupported says no ({}; progressive or an unusual layout)", sys::status_name(r))));
        }
        // SAFETY: the engine's handle.
        let (n, css, w, hh) = match unsafe { lib.image_info(h, data) } {
            Ok(i) => i,
            Err(e) => return Ok(Err(e.into())),
        };
        let (fx, fy) = match (n, css) {
            (1, _) | (_, sys::NVJPEG_CSS_GRAY) => (0, 0),
            (3, sys::NVJPEG_CSS_444) => (2, 2),
            (3, sys::NVJPEG_CSS_422) => (1, 2),
            (3, sys::NVJPEG_CSS_440) => (2, 1),
            (3, sys::NVJPEG_CSS_420) => (1, 1),
            _ => return Err(self.refuse(format!("{n} components, subsampling {css}"))),
        };
        if w[0] <= 0 || hh[0] <= 0 {
            return Ok(Err(Error::new(ErrorKind::Cuda, "a JPEG of no size")));
        }
        let (cw, ch) = if fx == 0 { (0, 0) } else { (w[1].max(1) as u32, hh[1].max(1) as u32) };
        Ok(Ok(Header { pts_us, width: w[0] as u32, height: hh[0] as u32, fx, fy, cw, ch }))
    }

    /// Scratch for two `cw` x `ch` planes at a 256-byte pitch; (pointer, pitch).
    fn scratch(&mut self, hd: &Header) -> Result<(u64, usize)> {
        let pitch = (hd.cw as usize).div_ceil(256) * 256;
        let need = 2 * pitch * hd.ch as usize;
        if self.scratch.as_ref().is_none_or(|s| s.len < need) {
            self.retire_scratch();
            let dev = &self.cam.stream.dev;
            let _g = dev.push()?;
            // Our context is current (guard).
            let ptr = driver::memory::alloc(need).map_err(|e| e.during("nvJPEG chroma"))?;
            stats::of(dev.ordinal).device_allocs.fetch_add(1, Ordering::Relaxed);
            self.scratch = Some(Scratch { ptr, len: need });
        }
        Ok((self.scratch.as_ref().map_or(0, |s| s.ptr), pitch))
    }

    fn retire_scratch(&mut self) {
        if let Some(s) = self.scratch.take() {
            let dev = self.cam.stream.dev.clone();
            // Its last reader is the kernel before `done`.
            let fence = Event::fence(&dev).and_then(|e| e.record(&self.cam.stream).map(|_| e));
            deferred::retire(dev, deferred::Buf::Device(s.ptr), s.len as u64, fence.into_iter().collect());
        }
    }
}

impl Drop for NvjpegDecoder {
    fn drop(&mut self) {
        if self.counted {
            self.engine.cameras.fetch_sub(1, Ordering::Relaxed);
        }
        if self.calls.0 > 0 {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            log::info!("nvJPEG decoder: {} pictures, waited for their batches {:.3} ms mean, {:.3} ms max (host time)", self.calls.0, ms(self.calls.1) / self.calls.0 as f64, ms(self.calls.2));
        }
        self.retire_scratch();
        let lib = self.engine.lib();
        if let Ok(_g) = self.cam.stream.dev.push() {
            // SAFETY: our stream handle, destroyed once (host memory only: no device work).
            let _ = unsafe { lib.stream_destroy(self.jstream) };
        }
    }
}

impl Decoder for NvjpegDecoder {
    fn kind(&self) -> DecoderKind {
        DecoderKind::Nvjpeg
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        let Some(data) = pkt.data().filter(|d| !d.is_empty()) else { return Ok(Outcome::Clean) };
        let pts_us = crate::decode::pts_us(pkt.pts().or(pkt.dts()), self.time_base);
        match self.header(data, pts_us)? {
            Ok(h) => {
                self.data.clear();
                self.data.extend_from_slice(data);
                self.sent = Some(h);
                Ok(Outcome::Clean)
            }
            // A header nvJPEG cannot read: the picture is lost, as FFmpeg loses it.
            Err(e) => Ok(Outcome::Corrupt(Some(e))),
        }
    }
    fn send_eof(&mut self) -> Result<Outcome> {
        Ok(Outcome::Clean)
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        let Some(h) = self.sent.take() else { return Ok(None) };
        self.current = Some(h);
        Ok(Some(Picture { width: h.width, height: h.height, pts_us: h.pts_us, color: self.color, depth: Depth::Eight, bits: 8, damaged: false }))
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        let hd = self.current.take().ok_or_else(|| Error::internal("write_into without a received picture"))?;
        let s = self.cam.stream.clone();
        let dst = device_slot(lease, &s, Some((hd.width, hd.height)))?;
        let g = lease.pool().geom;
        if g.depth != Depth::Eight {
            return Err(Error::internal("nvJPEG writes 8-bit slots only"));
        }
        let (scratch, c_pitch) = if hd.fx == 0 { (0, 0) } else { self.scratch(&hd)? };
        let mut out = sys::nvjpegImage_t::default();
        out.channel[0] = dst as *mut u8;
        out.pitch[0] = g.pitch;
        if hd.fx != 0 {
            out.channel[1] = scratch as *mut u8;
            out.channel[2] = (scratch + (c_pitch * hd.ch as usize) as u64) as *mut u8;
            out.pitch[1] = c_pitch;
            out.pitch[2] = c_pitch;
        }
        let _g = s.dev.push()?;
        let t_call = std::time::Instant::now();
        // The batch writes the scratch only after this picture's last kernel read it.
        self.ready.record(&s)?;
        // The slot's Y plane holds `height` rows at `g.pitch` and the scratch two planes of `ch`
        // rows at `c_pitch`, all on this GPU; `self.data` stays until the call returns.
        let r = self.engine.batcher.decode(&self.data, out, self.ready.raw(), self.decoded.raw(), &self.reply);
        // Whatever the outcome, the worker recorded `decoded` after its batch: the camera's
        // later work (the kernel, `done`, the slot's event) follows the batch's writes.
        // SAFETY: the camera's stream and our event, context current (guard).
        unsafe { driver::stream::wait_event(s.raw(), self.decoded.raw()) }.map_err(|e| e.during("nvJPEG batch"))?;
        let took = t_call.elapsed();
        self.calls = (self.calls.0 + 1, self.calls.1 + took, self.calls.2.max(took));
        let outcome = if let Err(e) = r {
            // A picture the engine could not decode (a damaged scan): the slot is not the picture.
            Outcome::Corrupt(Some(e))
        } else {
            let mut p = JpegPackParams {
                u: scratch,
                v: scratch + (c_pitch * hd.ch as usize) as u64,
                c_pitch: c_pitch as u32,
                cw: hd.cw,
                ch: hd.ch,
                fx: hd.fx,
                fy: hd.fy,
                _pad: 0,
                uv: dst + g.uv_offset() as u64,
                uv_pitch: g.pitch as u32,
                ow: hd.width.div_ceil(2),
                oh: hd.height.div_ceil(2),
            };
            let mut args = [&mut p as *mut JpegPackParams as *mut std::ffi::c_void];
            // SAFETY: the kernel takes one `JpegPackParams` by value (its layout asserted for both
            // compilers); it reads the scratch planes nvJPEG wrote before it on this stream and
            // writes the slot's UV plane (`oh` rows of `2 * ow` bytes at `g.pitch`). The driver
            // copies the parameters.
            unsafe { driver::launch_kernel(self.pack, (p.ow.div_ceil(32), p.oh.div_ceil(8), 1), (32, 8, 1), 0, s.raw(), &mut args) }
                .map_err(|e| e.during("nvcam_jpeg_pack_uv"))?;
            Outcome::Clean
        };
        lease.pool().storage().mark_written(lease.index())?;
        self.done.record(&s)?;
        stats::of(s.dev.ordinal).frames_copied.fetch_add(1, Ordering::Relaxed);
        Ok(outcome)
    }
    fn reset(&mut self) -> bool {
        self.sent = None;
        self.current = None;
        true
    }
}
