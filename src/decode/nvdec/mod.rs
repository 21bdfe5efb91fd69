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
//! margin of `parser::SURFACE_MARGIN` (at most 32); output (mapped) surfaces = `parser::OUTPUT_SURFACES`. The
//! parser's display delay (default [`DISPLAY_DELAY`], `NVCAM_NVDEC_DISPLAY_DELAY`) hands a
//! picture out only after that many later pictures were submitted, so the engine decodes ahead
//! and a map rarely waits for its picture. Each decoder has its own `CUvideoctxlock`, so one
//! camera's decoder create or destroy never waits for, or holds up, another camera's decode
//! (`session.rs` says why that is correct; `NVCAM_NVDEC_CTXLOCK=context` restores the old lock
//! shared per context, for measurements). A session's decoder outlives the session: it is parked
//! for the camera's next connection and adopted there when codec and size allow, so a reconnect
//! usually creates and destroys nothing (`reuse.rs`; `NVCAM_NVDEC_REUSE=0` turns it off).
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
//! A failed decode, map or unmap on one camera is reported for that camera (an [`Outcome`] of the
//! call that met it → its last error) and recovered by recreating its parser and decoder; decoding
//! resumes at the next key frame. Other cameras have their own decoders and never see it. More
//! than [`MAX_RECOVERIES`] recoveries within a minute end the session with the error (the camera
//! then reconnects as for any failure).

//!
//! # Files
//!
//! `sys` (the declarations), `api` (the library, loaded at run time, and one thin method per
//! call: the only place NVDEC is called), `session` (RAII owners: context lock, parser,
//! decoder, mapped picture), `parser` (the callbacks' state machine and the copy out of a
//! surface), `reuse` (the decoder kept across a reconnect), `caps` (what the engine takes),
//! `counters`, and `hooks` (test-only faults and
//! delays, compiled with the `test-hooks` feature).

mod caps;
mod counters;
pub(crate) mod hooks;
mod parser;
mod reuse;
mod session;

pub(crate) use caps::supports;
pub use counters::{counters, NvdecCounters};
pub(crate) use reuse::{DecoderSlot, Reuse};

use crate::decode::{pts_us, DecodeOpts, Decoder, DecoderKind, Outcome, Picture};
use crate::gpu::context::{Copy2D, Mem};
use crate::gpu::memory::device_slot;
use crate::gpu::timing::{self, Stage};
use crate::gpu::{stats, CamGpu, HwTicket};
use crate::pool::Lease;
use crate::status::*;
use counters::{count, ns, Timing, COUNTERS};
use ffmpeg_next as ff;
use crate::ffmpeg::annexb::AnnexB;
use parser::{copy_picture, Disp, State};
use session::Parser;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use crate::gpu::nvcuvid::{api, sys as cu};

/// Pictures the parser holds back before display in throughput mode (decode runs this far ahead
/// of mapping); low-latency cameras use 0.
pub(crate) const DISPLAY_DELAY: u32 = 2;
/// Recoveries within [`RECOVERY_WINDOW`] after which the error ends the session.
pub(crate) const MAX_RECOVERIES: usize = 5;
const RECOVERY_WINDOW: Duration = Duration::from_secs(60);

/// Errors a decoder recovers from by recreating its parser and decoder (an engine or driver
/// fault, or a broken invariant of ours); anything else (the stream refused, out of sessions,
/// a closed camera) ends the call.
fn recoverable(e: &Error) -> bool {
    e.kind.decoder_recovers()
}

/// A camera's direct-NVDEC decoder: parser, decoder and the queue of displayed pictures.
pub(crate) struct NvDecoder {
    cam: Arc<CamGpu>,
    /// Dropped before `st`, whose address its callbacks hold.
    parser: Option<Parser>,
    st: Box<State>,
    annexb: Option<AnnexB>,
    /// Annex B parameter sets fed to each new parser before the first packet.
    prime: Vec<u8>,
    time_base: ff::Rational,
    saw_pts: bool,
    current: Option<Disp>,
    timing: Timing,
    recoveries: VecDeque<Instant>,
    /// The session ended in more recoveries than allowed: its decoder is not kept.
    gave_up: bool,
    decode_errors: u64,
    last_decode_warning: Option<Instant>,
    /// The camera's slot: the last connection's decoder came from it, ours goes back into it.
    slot: Arc<DecoderSlot>,
    /// This session's share of the device's hardware-decoder cap; parked with the decoder.
    ticket: Option<HwTicket>,
}

impl NvDecoder {
    /// A decoder for `params`' stream on the camera's device. The NVDEC session itself is made
    /// at the first sequence header; its failure then shows as [`NvDecoder::hw_failed`].
    /// At low latency the parser hands each picture out as soon as its display order allows
    /// (display delay 0), else [`DISPLAY_DELAY`] later so the engine decodes ahead;
    /// `NVCAM_NVDEC_DISPLAY_DELAY` overrides both, for measurements.
    /// `reuse` brings the camera's decoder of its last connection, if one was parked; the first
    /// sequence header adopts or replaces it (`reuse.rs`).
    pub(crate) fn new(
        cam: &Arc<CamGpu>,
        params: &ff::codec::Parameters,
        time_base: ff::Rational,
        ticket: HwTicket,
        o: DecodeOpts,
        reuse: Reuse,
    ) -> Result<NvDecoder> {
        let low_latency = o.low_latency;
        let t_new = timing::Mark::now();
        let dev = &cam.stream.dev;
        let codec = supports(dev, params, o.eight_bit)?;
        let lib = api::lib()?;
        let (annexb, prime) = AnnexB::new(params, time_base)?;
        let (slot, parked) = reuse.split();
        let display_delay = crate::switches::Switch::NvdecDisplayDelay.var().ok().and_then(|v| v.parse().ok()).unwrap_or(if low_latency { 0 } else { DISPLAY_DELAY }).min(8);
        let mut me = NvDecoder {
            cam: cam.clone(),
            parser: None,
            st: Box::new(State::new(lib, cam, codec, display_delay, parked)),
            annexb,
            prime,
            time_base,
            saw_pts: false,
            current: None,
            timing: Timing::default(),
            recoveries: VecDeque::new(),
            gave_up: false,
            decode_errors: 0,
            last_decode_warning: None,
            slot,
            ticket: Some(ticket),
        };
        me.st.probed = crate::decode::probed_color(params);
        me.st.eight_bit = o.eight_bit;
        me.st.max_picture = o.max_picture;
        me.new_parser()?;
        log::info!("GPU {}: direct NVDEC decoder for {:?} (parser on the camera thread)", dev.ordinal, params.id());
        t_new.end(Stage::NvNew);
        Ok(me)
    }

    /// Whether NVDEC cannot take this stream (format, size, no session), so AUTO may fall back.
    pub(crate) fn hw_failed(&self) -> bool {
        self.st.refused
    }

    /// Whether the refusal was the GPU's decode sessions running out (so FFmpeg's CUDA hwaccel,
    /// which needs one too, is not tried).
    pub(crate) fn sessions_exhausted(&self) -> bool {
        self.st.exhausted
    }

    fn new_parser(&mut self) -> Result<()> {
        self.parser = None;
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
            pfnSequenceCallback: Some(parser::on_sequence),
            pfnDecodePicture: Some(parser::on_decode),
            pfnDisplayPicture: Some(parser::on_display),
            pfnGetOperatingPoint: None,
            pvReserved2: [std::ptr::null_mut(); 6],
            pExtVideoInfo: std::ptr::null_mut(),
        };
        // SAFETY: the user pointer is our boxed State: its address is stable, it outlives the
        // parser (field order, and Drop below), and it is only touched by callbacks during our
        // own parse calls, which take `&mut self`.
        self.parser = Some(unsafe { Parser::new(self.st.lib, &self.cam.stream.dev, &mut pp) }?);
        if !self.prime.is_empty() {
            let prime = std::mem::take(&mut self.prime);
            let r = self.parse(&prime, None, 0);
            self.prime = prime;
            r?;
        }
        Ok(())
    }

    /// Feeds one chunk of Annex B bitstream (a whole picture when `pts` is known) to the parser.
    fn parse(&mut self, data: &[u8], pts: Option<i64>, extra_flags: std::ffi::c_ulong) -> Result<()> {
        let mut pkt = cu::CUVIDSOURCEDATAPACKET {
            flags: extra_flags | if pts.is_some() { cu::CUVID_PKT_TIMESTAMP } else { 0 },
            payload_size: data.len() as _,
            payload: if data.is_empty() { std::ptr::null() } else { data.as_ptr() },
            timestamp: pts.unwrap_or(0),
        };
        let parser = self.parser.as_mut().ok_or_else(|| Error::internal("no NVDEC parser"))?;
        let mark = timing::Mark::now();
        let r = parser.parse(&mut pkt);
        self.timing.parse += ns(mark.started());
        mark.end(Stage::NvParse);
        if let Some(e) = self.st.error.take() {
            return Err(e);
        }
        r??;
        Ok(())
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

    fn send(&mut self, pkt: &ff::Packet) -> Result<()> {
        let Some(a) = self.annexb.as_mut() else {
            let data = pkt.data().unwrap_or(&[]);
            return if data.is_empty() { Ok(()) } else { self.parse_packet(data, pkt.pts()) };
        };
        a.send(pkt)?;
        loop {
            let a = self.annexb.as_mut().expect("checked");
            let Some(p) = a.receive()? else { return Ok(()) };
            let (pts, ptr, len) = (p.pts(), p.data().map(|d| d.as_ptr()), p.size());
            let Some(ptr) = ptr else { continue };
            // SAFETY: the packet lives in `annexb.out` until the next receive, which comes after
            // this parse returns; the parser copies what it keeps.
            let data = unsafe { std::slice::from_raw_parts(ptr, len) };
            self.parse_packet(data, pts)?;
        }
    }

    /// An engine error: report it, recreate parser and decoder (decoding resumes at the next key
    /// frame), carry on. The returned error is what the camera reports; too many recoveries in
    /// a minute, or a stream NVDEC refused, end the session instead.
    fn recover(&mut self, e: Error) -> Result<Error> {
        if self.st.refused {
            return Err(e);
        }
        let now = Instant::now();
        self.recoveries.retain(|t| now.duration_since(*t) < RECOVERY_WINDOW);
        if self.recoveries.len() >= MAX_RECOVERIES {
            self.gave_up = true;
            return Err(Error::new(e.kind, format!("{} (after {MAX_RECOVERIES} NVDEC recoveries within a minute)", e.msg)));
        }
        self.recoveries.push_back(now);
        count(&COUNTERS.recoveries);
        log::warn!("GPU {}: NVDEC error: {}; recreating this camera's decoder (resumes at the next key frame)", self.cam.ordinal(), e.msg);
        self.parser = None;
        self.st.queue.clear();
        self.current = None;
        self.st.decoder = None;
        self.st.geom = None;
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        self.new_parser()?;
        Ok(Error::new(e.kind, format!("{}; NVDEC decoder recreated", e.msg)))
    }

    /// Applies the test hooks' stream delay (no-op without the `test-hooks` feature).
    #[cfg(feature = "test-hooks")]
    fn delay_stream(&self) -> Result<bool> {
        let Some(us) = self.st.knobs.map(|k| k.stream_delay_us).filter(|&us| us > 0) else { return Ok(false) };
        let s = &self.cam.stream;
        let _g = s.dev.push()?;
        // SAFETY: a live stream of the current context; the host function only sleeps.
        unsafe { crate::gpu::driver::stream::launch_host_func(s.raw(), session::delay_host_fn, us as usize as *mut c_void) }?;
        Ok(true)
    }

    #[cfg(not(feature = "test-hooks"))]
    fn delay_stream(&self) -> Result<bool> {
        Ok(false)
    }

    /// A picture NVDEC decoded with errors is corrupt (the camera marks it, and by its policy
    /// holds it back); the camera's last error hears of it at most every few seconds.
    fn note_decode_status(&mut self, status: Option<cu::cuvidDecodeStatus>) -> Outcome {
        let Some(status) = status else { return Outcome::Clean };
        if status != cu::cuvidDecodeStatus_Error && status != cu::cuvidDecodeStatus_Error_Concealed {
            return Outcome::Clean;
        }
        count(&COUNTERS.decode_errors);
        self.decode_errors += 1;
        if self.last_decode_warning.is_some_and(|t| t.elapsed() < Duration::from_secs(5)) {
            return Outcome::Corrupt(None);
        }
        self.last_decode_warning = Some(Instant::now());
        Outcome::Corrupt(Some(Error::new(
            ErrorKind::Io,
            format!(
                "NVDEC reported a picture decoded with errors ({}; {} so far on this camera): corrupt or lost bitstream data",
                if status == cu::cuvidDecodeStatus_Error { "not concealed" } else { "concealed" },
                self.decode_errors
            ),
        )))
    }
}

impl Drop for NvDecoder {
    fn drop(&mut self) {
        // Parser first (its callbacks point at `st`), then the pictures (none is mapped: maps
        // live inside one `write_into`), then the decoder: parked for the camera's next
        // connection when it is sound (`reuse.rs`), else destroyed with its context lock.
        let t0 = timing::Mark::now();
        self.parser = None;
        self.current = None;
        self.st.queue.clear();
        if let (Some(d), Some(t)) = (self.st.decoder.take(), self.ticket.take()) {
            let healthy = !self.st.refused && !self.gave_up && self.st.error.is_none();
            self.slot.park(d, t, healthy);
        }
        self.timing.flush();
        t0.end(Stage::NvDrop);
    }
}

impl Decoder for NvDecoder {
    fn kind(&self) -> DecoderKind {
        DecoderKind::Nvdec
    }

    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        let r = self.send(pkt);
        if self.st.decoder.is_some() {
            // The session's decoder exists (made at the first sequence header, or adopted): the
            // camera no longer holds a burst's admissions back (`gpu::load`).
            if let Some(t) = self.ticket.as_mut() {
                t.made();
            }
        }
        self.timing.maybe_flush();
        match r {
            Ok(()) => Ok(Outcome::Clean),
            Err(e) if recoverable(&e) => self.recover(e).map(Outcome::Reported),
            Err(e) => Err(e),
        }
    }

    fn send_eof(&mut self) -> Result<Outcome> {
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        match self.parse(&[], None, cu::CUVID_PKT_ENDOFSTREAM) {
            Ok(()) => Ok(Outcome::Clean),
            Err(e) if recoverable(&e) => self.recover(e).map(|w| {
                log::debug!("at end of stream: {w}");
                Outcome::Clean
            }),
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
            let pic = Picture {
                width: d.geom.width,
                height: d.geom.height,
                pts_us: if self.saw_pts { pts_us(Some(d.info.timestamp), self.time_base) } else { i64::MIN },
                color: d.geom.color,
                depth: d.geom.surface.depth(),
                bits: if d.geom.surface.depth() == crate::pool::Depth::Eight { 8 } else { d.geom.bits },
                // NVDEC's status comes with the copy (`write_into`).
                damaged: false,
            };
            self.current = Some(d);
            return Ok(Some(pic));
        }
        Ok(None)
    }

    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        let d = self.current.take().ok_or_else(|| Error::internal("write_into without a received picture"))?;
        let s = &self.cam.stream;
        if let Some(parked) = d.parked.as_ref() {
            // Copied aside at a resolution change: one device-to-device copy from there.
            let (src, sg) = (parked.addr(), parked.pool().geom);
            let g = lease.pool().geom;
            let dst = device_slot(lease, s, Some((sg.width, sg.height)))?;
            // SAFETY: both slots are ours (the parked lease and the caller's) on this GPU with
            // the same size; the events marked right after fence both.
            unsafe {
                Copy2D { src: Mem::Device(src), src_pitch: sg.pitch, dst: Mem::Device(dst), dst_pitch: g.pitch, width_bytes: g.row_bytes(), rows: g.y_rows() + g.uv_rows() }
                    .enqueue(s)?;
            }
            lease.pool().storage().mark_written(lease.index())?;
            // The side slot's last use is that copy: its event fences the side pool's free.
            parked.pool().storage().mark_written(parked.index())?;
            return Ok(Outcome::Clean);
        }
        let probe = self.delay_stream()?;
        let Some(dec) = self.st.decoder.as_ref() else { return Err(Error::internal("a picture without a decoder")) };
        let _g = s.dev.push()?;
        let r = copy_picture(dec, s.raw() as cu::CUstream, &self.cam, &d.info, &d.geom, lease, &mut self.timing, probe);
        drop(_g);
        self.timing.frames += 1;
        stats::of(s.dev.ordinal).frames_copied.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(status) => Ok(self.note_decode_status(status)),
            // Not an engine fault (a slot of the wrong size or memory): the session's error.
            Err(e) if e.kind == ErrorKind::Internal => Err(e),
            // The slot may hold a partial picture: the decoder recovers and this frame is lost.
            Err(e) => self.recover(e).map(Outcome::Dropped),
        }
    }

    fn continues_across_rewind(&self) -> bool {
        // The parser takes the rewound file's first key frame as it takes any key frame: its
        // display delay goes on, so the engine stays that far ahead across the loop (a fresh
        // parser started from nothing, and its first map waited out the engine's whole queue:
        // up to 95-123 ms gaps at the loop points of 96 steady cameras while 32 others
        // reconnected), and no parser is made or destroyed per loop.
        true
    }

    fn reset(&mut self) -> bool {
        // A rewound file: a fresh parser (the old one saw end of stream); the decoder and its
        // surfaces stay and are reused at the same sequence.
        self.parser = None;
        self.st.queue.clear();
        self.current = None;
        if let Some(a) = self.annexb.as_mut() {
            a.flush();
        }
        self.new_parser().is_ok()
    }
}
