//! Which decoder a camera gets: the whole backend choice and fall-back order, in one place.
//!
//! - `Placement::Cpu`, or a GPU that is not usable (no libcuda, no device, ordinal out of range):
//!   FFmpeg's software decoder into host pools, with a logged reason, so the same host program
//!   runs everywhere. Only a policy that requires hardware turns a missing GPU into an error.
//! - On a GPU, by [`DecoderPolicy`]: `Software` uploads; `Nvdec` is direct NVDEC or an error;
//!   `FfmpegHw` is FFmpeg's CUDA hwaccel or an error; `Auto` takes direct NVDEC where libnvcuvid
//!   loads and the GPU's decoder supports the stream, then FFmpeg's CUDA hwaccel, while the
//!   per-device session cap and the GPU's decode sessions allow, else software plus upload
//!   (logged once per camera, counted in `hw_fallbacks`). Decode sessions are the driver's, a
//!   fixed number per GPU (`crate::gpu::sessions`): a create the driver refuses for want of one
//!   sends the camera to software + upload without trying FFmpeg's hwaccel (it would need one
//!   too), and from then on cameras past that count go there without trying. For MJPEG, `Auto`
//!   takes nvJPEG's hardware back end first where nvJPEG loads and the GPU has JPEG engines
//!   (the Huffman decode on the engines, not the host; the pictures of all cameras decoded in
//!   batches), else direct NVDEC, with one line saying why nvJPEG is not used. Under `Auto`, a hardware decoder that turns the stream down at its first
//!   picture (10-bit, a size the engine refuses, no session left) is replaced by the next in that
//!   order at run time ([`Fallback`]); nvJPEG gives way to direct NVDEC (a progressive JPEG, say).
//!
//! `Placement::AnyGpu` puts a camera's new connection on the GPU with the most decode sessions
//! left (`crate::gpu::placement`) and keeps it there while the stream is the same, so a
//! streaming camera (a rewound file, a reconnect to the same stream) never moves.
//!
//! Whatever runs, the camera learns it from [`Decoder::kind`] and gets its pools from the
//! session's [`Pools`], which stay on one device for the session (fall-backs never change it).

use crate::config::{DecoderPolicy, Options, Placement};
use crate::decode::software::SoftwareDecoder;
use crate::decode::{DecodeOpts, Decoder, DecoderKind, Outcome, Picture};
use crate::decode::hwdec::HwDecoder;
use crate::decode::nvdec::{DecoderSlot, NvDecoder};
use crate::decode::nvjpeg::decoder::NvjpegDecoder;
use crate::decode::upload::UploadDecoder;
use crate::gpu::load::Demand;
use crate::gpu::sessions::Load;
use crate::gpu::{self, CamGpu, HwTicket};
use crate::pool::{Geometry, Lease, Pool};
use crate::status::*;
use ffmpeg_next as ff;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A camera's backend state that outlives its connections (its GPU stream, created on first use,
/// and the direct-NVDEC decoder its last connection parked for the next one).
#[derive(Default)]
pub(crate) struct CameraBackend {
    gpu: Mutex<Option<Arc<CamGpu>>>,
    cpu_noted: AtomicBool,
    /// This camera's fall-back to software + upload was logged at warn (later ones at debug).
    fell_back: Arc<AtomicBool>,
    nvdec: Arc<DecoderSlot>,
    /// Under `Placement::AnyGpu`, the stream of the last connection (codec, width, height): a
    /// connection to the same stream stays on its GPU.
    placed: Mutex<Option<(i32, u32, u32)>>,
}

impl CameraBackend {
    /// Destroys the decoder a connection parked for the next (the camera closes, is down, or
    /// failed for good); on the caller's thread, waiting for the camera's own stream only.
    pub(crate) fn release_parked(&self) {
        self.nvdec.clear();
    }

    /// The camera's stream on `device`: the one it has, or a new one (the camera's first
    /// connection, or one placed on another GPU; the old stream lives on in its pools and
    /// frames until they go).
    fn gpu(&self, device: i32) -> Result<Arc<CamGpu>> {
        let mut g = self.gpu.lock();
        if let Some(c) = g.as_ref().filter(|c| c.ordinal() == device) {
            return Ok(c.clone());
        }
        let c = Arc::new(CamGpu::new(device)?);
        *g = Some(c.clone());
        Ok(c)
    }
}

/// Where a session's frames are allocated.
#[derive(Clone)]
pub(crate) enum Pools {
    Host,
    Device(Arc<CamGpu>),
}

impl Pools {
    pub(crate) fn new_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        match self {
            Pools::Host => Pool::host(geom, slots),
            Pools::Device(cam) => gpu::memory::new_pool(cam, geom, slots),
        }
    }
    /// A pool of the same kind that other processes can map (a published camera's).
    pub(crate) fn new_exportable_pool(&self, geom: Geometry, slots: usize) -> Result<Arc<Pool>> {
        match self {
            Pools::Host => crate::share::memory::host_pool(geom, slots),
            Pools::Device(cam) => gpu::shared_pool::new_exportable_pool(cam, geom, slots),
        }
    }
    /// Whether `pool` is memory of this kind, on this device (else the camera makes a new pool).
    pub(crate) fn holds(&self, pool: &Pool) -> bool {
        let d = pool.storage().device();
        match self {
            Pools::Host => d < 0,
            Pools::Device(cam) => d == cam.ordinal(),
        }
    }
}

/// A session's decoder and the memory it writes.
pub(crate) struct Chosen {
    pub decoder: Box<dyn Decoder>,
    pub pools: Pools,
}

/// A stream whose codec FFmpeg 5.1 knows only by its container's tag (codec id none): named by
/// the tag where nvcam knows it, so the camera fails at once saying what the stream is, instead
/// of "codec none". H.266/VVC: FFmpeg 5.1 has no VVC demuxer support or decoder, and NVDEC none.
fn codec_without_id(p: &ff::codec::Parameters) -> Option<Error> {
    if p.id() != ff::codec::Id::None {
        return None;
    }
    // SAFETY: `p` wraps the stream's valid codec parameters.
    let tag = unsafe { (*p.as_ptr()).codec_tag }.to_le_bytes();
    let what = match &tag {
        // ISO/IEC 14496-15 sample entries (MP4, MOV).
        b"vvc1" | b"vvi1" => "H.266/VVC",
        _ => return None,
    };
    Some(Error::new(
        ErrorKind::Unsupported,
        format!("the stream is {what} (codec tag '{}'), which nvcam cannot decode: FFmpeg 5.1 has no {what} decoder and NVDEC none", String::from_utf8_lossy(&tag)),
    ))
}

/// The decoder for a new connection to `stream`, by the camera's options.
/// `low_latency` is the camera's resolved latency mode (see `LatencyMode::is_low`); `stop()`:
/// the camera is closing (ends a wait for the engines, `gpu::load`).
pub(crate) fn decoder_for(
    opts: &Options,
    stream: &ff::format::stream::Stream<'_>,
    backend: &CameraBackend,
    low_latency: bool,
    stop: &dyn Fn() -> bool,
) -> Result<Chosen> {
    // A stream that claims a picture over the camera's limit gets no decoder (whose buffers
    // would follow the claim) and no pool.
    let p = stream.parameters();
    if let Some(e) = codec_without_id(&p) {
        return Err(e);
    }
    // SAFETY: `p` wraps the stream's valid codec parameters.
    let (w, h) = unsafe { ((*p.as_ptr()).width.max(0) as u32, (*p.as_ptr()).height.max(0) as u32) };
    opts.check_picture_size(w, h)?;
    let software = || -> Result<Chosen> {
        Ok(Chosen { decoder: Box::new(SoftwareDecoder::new(stream, decode_opts(opts, low_latency))?), pools: Pools::Host })
    };
    let (device, placed) = match opts.placement {
        Placement::Cpu => return software(),
        Placement::Gpu(d) => (d, Ok(None)),
        Placement::AnyGpu => match place(backend, stream, demand_of(stream), stop) {
            Ok((d, t)) => (d, Ok(t)),
            Err(e) => (-1, Err(e)),
        },
    };
    let (cam, pre) = match placed.and_then(|t| Ok((backend.gpu(device)?, t))) {
        Ok(c) => c,
        Err(e) if opts.decoder.requires_hardware() => {
            return Err(Error::new(ErrorKind::NoDevice, format!("a hardware decoder was required, but there is no usable GPU: {}", e.msg)));
        }
        Err(e) => {
            if !backend.cpu_noted.swap(true, Ordering::Relaxed) {
                let which = if opts.placement == Placement::AnyGpu { "any GPU".to_string() } else { format!("GPU {device}") };
                log::warn!("{which} requested but not usable ({}): decoding on the CPU into host memory", e.msg);
            }
            return software();
        }
    };
    let decoder = gpu_decoder(&cam, opts, stream, low_latency, backend, pre, stop)?;
    Ok(Chosen { decoder, pools: Pools::Device(cam) })
}

/// `Placement::AnyGpu`: the camera's GPU for this connection, and a session ticket taken there
/// when the GPU had one. The same stream as last time stays on its GPU (a streaming camera never
/// moves); a new or changed stream goes where the engines have the most room for `demand`, then
/// the most decode sessions are left (`gpu::placement`).
fn place(backend: &CameraBackend, stream: &ff::format::stream::Stream<'_>, demand: Demand, stop: &dyn Fn() -> bool) -> Result<(i32, Option<HwTicket>)> {
    let p = stream.parameters();
    // SAFETY: `p` wraps the stream's valid codec parameters.
    let key = unsafe { ((*p.as_ptr()).codec_id as i32, (*p.as_ptr()).width as u32, (*p.as_ptr()).height as u32) };
    let mut last = backend.placed.lock();
    let current = backend.gpu.lock().as_ref().map(|c| c.ordinal());
    if let (Some(d), true) = (current, *last == Some(key)) {
        return Ok((d, None));
    }
    let (d, t) = gpu::placement::place(demand, stop)?;
    *last = Some(key);
    if current.is_some_and(|c| c != d) {
        log::info!("camera's stream changed: placed on GPU {d} (was GPU {})", current.unwrap_or(-1));
    }
    Ok((d, t))
}

/// What `stream` asks of a GPU's NVDEC engines (its coded size at its frame rate).
fn demand_of(stream: &ff::format::stream::Stream<'_>) -> Demand {
    let p = stream.parameters();
    // SAFETY: `p` wraps the stream's valid codec parameters.
    let (w, h) = unsafe { ((*p.as_ptr()).width.max(0) as u32, (*p.as_ptr()).height.max(0) as u32) };
    let rate = stream.avg_frame_rate();
    let rate = if rate.numerator() > 0 && rate.denominator() > 0 { rate } else { stream.rate() };
    let fps = if rate.denominator() > 0 { rate.numerator() as f64 / rate.denominator() as f64 } else { 0.0 };
    Demand::of(p.id() == ff::codec::Id::MJPEG, w, h, fps)
}

/// What a GPU decoder is made from, kept for a fall-back at run time.
#[derive(Clone)]
struct Stream {
    params: ff::codec::Parameters,
    time_base: ff::Rational,
    o: DecodeOpts,
    demand: Demand,
}

fn decode_opts(opts: &Options, low_latency: bool) -> DecodeOpts {
    // FFmpeg checks its buffers' padded sizes (rows aligned up to 64 bytes, coded sizes to
    // macroblocks and CTBs): the margin keeps a stream at the limit decoding, and the exact
    // limit is the camera's own check (the pool's size).
    let max_pixels = (opts.max_picture.0 as u64 + 128) * (opts.max_picture.1 as u64 + 128);
    DecodeOpts { threads: opts.decode_threads, low_latency, eight_bit: opts.flags.eight_bit, max_pixels, max_picture: opts.max_picture }
}

fn upload(cam: &Arc<CamGpu>, s: &Stream) -> Result<Box<dyn Decoder>> {
    Ok(Box::new(UploadDecoder::new(cam, s.params.clone(), s.time_base, s.o)?))
}

fn gpu_decoder(
    cam: &Arc<CamGpu>,
    opts: &Options,
    stream: &ff::format::stream::Stream<'_>,
    low_latency: bool,
    backend: &CameraBackend,
    pre: Option<HwTicket>,
    stop: &dyn Fn() -> bool,
) -> Result<Box<dyn Decoder>> {
    let slot = &backend.nvdec;
    // The last connection's NVDEC decoder, moved out of the camera's slot: a new direct-NVDEC
    // decoder adopts it; any other choice (or a failure on the way) drops it here.
    let mut reuse = slot.begin(cam);
    if let Some(t) = pre {
        reuse.give(t);
    }
    let s = Stream { params: stream.parameters().clone(), time_base: stream.time_base(), o: decode_opts(opts, low_latency), demand: demand_of(stream) };
    let dev = &cam.stream.dev;
    let fixed = |hw: Hw| -> Result<Box<dyn Decoder>> { Ok(Box::new(Fallback { hw, cam: cam.clone(), next: None, slot: slot.clone(), noted: backend.fell_back.clone() })) };
    match opts.decoder {
        DecoderPolicy::Software => upload(cam, &s),
        DecoderPolicy::Nvjpeg => {
            let engine = crate::decode::nvjpeg::supports(dev, &s.params)?;
            fixed(Hw::Nvjpeg(NvjpegDecoder::new(cam, engine, &s.params, s.time_base)?))
        }
        DecoderPolicy::Auto => auto(cam, s, reuse, backend, stop),
        DecoderPolicy::Nvdec => {
            let t = reuse.ticket(dev, s.demand, Load::Required).map_err(|f| f.error(cam.ordinal()))?;
            fixed(Hw::Nvdec(NvDecoder::new(cam, &s.params, s.time_base, t, s.o, reuse)?))
        }
        DecoderPolicy::FfmpegHw => {
            let t = reuse.ticket(dev, s.demand, Load::Required).map_err(|f| f.error(cam.ordinal()))?;
            drop(reuse);
            fixed(Hw::Ffmpeg(HwDecoder::new(cam, &s.params, s.time_base, t, s.o)?))
        }
    }
}

/// AUTO on a GPU: nvJPEG for MJPEG where it takes the stream, then direct NVDEC where it takes
/// the stream, then FFmpeg's CUDA hwaccel, within the per-device session cap and the GPU's
/// decode sessions, else software plus upload.
fn auto(cam: &Arc<CamGpu>, s: Stream, mut reuse: crate::decode::nvdec::Reuse, backend: &CameraBackend, stop: &dyn Fn() -> bool) -> Result<Box<dyn Decoder>> {
    let dev = &cam.stream.dev;
    let slot = &backend.nvdec;
    let hw = |hw: Hw, s: Stream| -> Result<Box<dyn Decoder>> {
        Ok(Box::new(Fallback { hw, cam: cam.clone(), next: Some(s), slot: slot.clone(), noted: backend.fell_back.clone() }))
    };
    if s.params.id() == ff::codec::Id::MJPEG {
        // Why nvJPEG is absent (no library, no engines) was logged once, where it was found.
        match crate::decode::nvjpeg::supports(dev, &s.params).and_then(|e| NvjpegDecoder::new(cam, e, &s.params, s.time_base)) {
            Ok(n) => return hw(Hw::Nvjpeg(n), s),
            Err(e) if e.kind == ErrorKind::Unsupported => log::debug!("GPU {}: {}", dev.ordinal, e.msg),
            Err(e) => log::warn!("GPU {}: nvJPEG: {}; trying direct NVDEC", dev.ordinal, e.msg),
        }
    }
    let mut why = Vec::new();
    match reuse.ticket(dev, s.demand, Load::Patient(stop)) {
        // Exhausted sessions: FFmpeg's hwaccel would need one too.
        Err(full) => why.push(full.why()),
        Ok(t) => {
            match crate::decode::nvdec::supports(dev, &s.params, s.o.eight_bit) {
                Ok(_) => match NvDecoder::new(cam, &s.params, s.time_base, t, s.o, reuse) {
                    Ok(n) => return hw(Hw::Nvdec(n), s),
                    Err(e) => why.push(format!("direct NVDEC: {}", e.msg)),
                },
                Err(w) => {
                    // Neither the ticket nor a parked NVDEC decoder is of use now.
                    drop(t);
                    drop(reuse);
                    log::info!("GPU {}: direct NVDEC not used ({}); trying FFmpeg's CUDA hwaccel", dev.ordinal, w.msg);
                }
            }
            match HwTicket::take(dev, s.demand, Load::Patient(stop)).map(|t| HwDecoder::new(cam, &s.params, s.time_base, t, s.o)) {
                Ok(Ok(h)) => return hw(Hw::Ffmpeg(h), s),
                Ok(Err(e)) => why.push(format!("FFmpeg CUDA hwaccel: {}", e.msg)),
                Err(full) => why.push(full.why()),
            }
        }
    }
    note_fallback(&backend.fell_back, dev.ordinal, &why.join("; "));
    upload(cam, &s)
}

/// Counts a camera's fall-back to software + upload, and logs it: at warn the first time for the
/// camera, at debug after that (a camera reconnecting at a GPU's session limit would otherwise
/// say it at every reconnect).
fn note_fallback(noted: &AtomicBool, device: i32, why: &str) {
    gpu::stats::of(device).hw_fallbacks.fetch_add(1, Ordering::Relaxed);
    if noted.swap(true, Ordering::Relaxed) {
        log::debug!("GPU {device}: {why}; decoding in software and uploading to the GPU");
    } else {
        log::warn!("GPU {device}: {why}; decoding in software and uploading to the GPU");
    }
}

/// The hardware decoder in use, or what replaced it.
enum Hw {
    Nvjpeg(NvjpegDecoder),
    Nvdec(NvDecoder),
    Ffmpeg(HwDecoder),
    Upload(Box<dyn Decoder>),
    /// Only between dropping a failed decoder and making the next (its session goes back first).
    Empty,
}

/// A hardware decoder with the run-time half of the AUTO order: when the decoder turns the stream
/// down at its first picture, direct NVDEC gives way to FFmpeg's CUDA hwaccel, and that to
/// software plus upload, into the same device pools. With a fixed policy (`next` is None) the
/// refusal is the camera's error.
struct Fallback {
    hw: Hw,
    cam: Arc<CamGpu>,
    next: Option<Stream>,
    /// The camera's NVDEC slot, for nvJPEG's fall-back to direct NVDEC.
    slot: Arc<DecoderSlot>,
    /// The camera's fall-back to software was logged (`note_fallback`).
    noted: Arc<AtomicBool>,
}

impl Fallback {
    fn fall_back(&mut self, why: &Error) -> Result<()> {
        let s = self.next.clone().expect("checked by can_fall_back");
        let dev = self.cam.stream.dev.clone();
        let from_nvdec = matches!(self.hw, Hw::Nvdec(_));
        let exhausted = matches!(&self.hw, Hw::Nvdec(n) if n.sessions_exhausted());
        let from_nvjpeg = matches!(self.hw, Hw::Nvjpeg(_));
        // The failed decoder goes first, so its session and its ticket are free again.
        self.hw = Hw::Empty;
        if from_nvjpeg {
            log::warn!("GPU {}: {}; trying direct NVDEC", dev.ordinal, why.msg);
            let mut reuse = self.slot.begin(&self.cam);
            if let Ok(t) = reuse.ticket(&dev, s.demand, Load::Checked) {
                let n = crate::decode::nvdec::supports(&dev, &s.params, s.o.eight_bit)
                    .and_then(|_| NvDecoder::new(&self.cam, &s.params, s.time_base, t, s.o, reuse));
                match n {
                    Ok(n) => {
                        self.hw = Hw::Nvdec(n);
                        return Ok(());
                    }
                    Err(e) => log::warn!("GPU {}: direct NVDEC: {}", dev.ordinal, e.msg),
                }
            }
        } else if from_nvdec && !exhausted {
            log::warn!("GPU {}: direct NVDEC: {}; trying FFmpeg's CUDA hwaccel", dev.ordinal, why.msg);
            match HwTicket::take(&dev, s.demand, Load::Checked).map(|t| HwDecoder::new(&self.cam, &s.params, s.time_base, t, s.o)) {
                Ok(Ok(h)) => {
                    self.hw = Hw::Ffmpeg(h);
                    return Ok(());
                }
                Ok(Err(e)) => log::warn!("GPU {}: FFmpeg CUDA hwaccel: {}", dev.ordinal, e.msg),
                Err(full) => log::warn!("GPU {}: FFmpeg CUDA hwaccel: {}", dev.ordinal, full.why()),
            }
        }
        self.next = None;
        // Exhausted sessions were said (and remembered) where the driver refused: FFmpeg's
        // hwaccel, which needs a session too, is not tried.
        note_fallback(&self.noted, dev.ordinal, &why.msg);
        self.hw = Hw::Upload(upload(&self.cam, &s)?);
        Ok(())
    }

    fn can_fall_back(&self) -> bool {
        self.next.is_some()
            && match &self.hw {
                Hw::Nvjpeg(n) => n.hw_failed(),
                Hw::Nvdec(n) => n.hw_failed(),
                Hw::Ffmpeg(h) => h.hw_failed(),
                _ => false,
            }
    }

    fn inner(&mut self) -> Result<&mut dyn Decoder> {
        match &mut self.hw {
            Hw::Nvjpeg(n) => Ok(n),
            Hw::Nvdec(n) => Ok(n),
            Hw::Ffmpeg(h) => Ok(h),
            Hw::Upload(u) => Ok(u.as_mut()),
            Hw::Empty => Err(Error::internal("no decoder after a failed fall back")),
        }
    }
}

impl Decoder for Fallback {
    fn kind(&self) -> DecoderKind {
        match &self.hw {
            Hw::Nvjpeg(n) => n.kind(),
            Hw::Nvdec(n) => n.kind(),
            Hw::Ffmpeg(h) => h.kind(),
            Hw::Upload(u) => u.kind(),
            Hw::Empty => DecoderKind::SoftwareUpload,
        }
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        // Each fall-back goes one step down the order (at most nvJPEG → NVDEC → FFmpeg's hwaccel
        // → upload); the next decoder may refuse the same packet (FFmpeg's hwaccel finds no
        // session either), and then it falls back in turn rather than failing the camera.
        let mut r = self.inner()?.send_packet(pkt);
        while let Err(e) = &r {
            if !self.can_fall_back() {
                break;
            }
            self.fall_back(e)?;
            r = self.inner()?.send_packet(pkt);
        }
        r
    }
    fn send_eof(&mut self) -> Result<Outcome> {
        self.inner()?.send_eof()
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        match self.inner()?.receive() {
            Err(e) if self.can_fall_back() => {
                // The packets NVDEC turned down are gone; the next decoder picks up at the next keyframe.
                self.fall_back(&e)?;
                Ok(None)
            }
            r => r,
        }
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        self.inner()?.write_into(lease)
    }
    fn reset(&mut self) -> bool {
        self.inner().map(|d| d.reset()).unwrap_or(false)
    }
    fn continues_across_rewind(&self) -> bool {
        match &self.hw {
            Hw::Nvjpeg(n) => n.continues_across_rewind(),
            Hw::Nvdec(n) => n.continues_across_rewind(),
            Hw::Ffmpeg(h) => h.continues_across_rewind(),
            Hw::Upload(u) => u.continues_across_rewind(),
            Hw::Empty => false,
        }
    }
}
