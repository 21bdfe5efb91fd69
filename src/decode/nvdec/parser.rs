//! The parser's side of a direct-NVDEC camera: the state its callbacks drive, and the copy of a
//! displayed picture out of the decoder into a pool slot.
//!
//! Callbacks run inside `cuvidParseVideoData`, on the camera's thread. Each is a one-line
//! trampoline into a method of [`State`], whose contract is written above it; an error (or a
//! panic) is kept in `State::error` for the parse's caller and fails the callback, so nothing
//! ever unwinds into the driver.

use super::caps::{caps, size_fits, surface_for, takes_layout, Surface};
use super::counters::{count, ns, Timing, COUNTERS};
use super::hooks::{self, Knobs};
use super::session::VideoDecoder;
use crate::gpu::nvcuvid::api::Nvcuvid;
use crate::gpu::nvcuvid::sys as cu;
use crate::gpu::context::{Copy2D, Mem};
use crate::gpu::memory::{device_slot, new_pool};
use crate::gpu::{sessions, stats, CamGpu};
use crate::frame::{Color, Range, Transfer};
use crate::pool::{Geometry, Lease};
use crate::status::*;
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::sync::Arc;
use crate::gpu::timing::{Mark, Stage};
use std::time::Instant;

/// Decode surfaces beyond `min_num_decode_surfaces` + the display delay.
pub(super) const SURFACE_MARGIN: u32 = 2;
/// Most decode surfaces NVDEC takes.
pub(super) const MAX_DECODE_SURFACES: u32 = 32;
/// Output surfaces that may be mapped at once (we map one at a time; the second lets the next
/// map's post-processing use another surface).
pub(super) const OUTPUT_SURFACES: u32 = 2;

/// The geometry of the sequence a picture belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SeqGeom {
    /// Displayed size (the SPS cropping window), what frames are.
    pub width: u32,
    pub height: u32,
    /// Offset of the displayed window in the decoded surface.
    left: u32,
    top: u32,
    /// Rows of the luma plane in the output surface (the decoder's target height); the chroma
    /// plane starts at `pitch * align2(surface_rows)`.
    surface_rows: u32,
    /// The sequence's colour description (its video signal description).
    pub color: Color,
    /// What the decoder writes (NV12, or P016 above 8 bits) and the stream's bits per sample.
    pub surface: Surface,
    pub bits: u32,
}

/// NVDEC's video signal description: byte 0 packs video_format (3 bits) and
/// video_full_range_flag (bit 3); byte 2 is transfer_characteristics, byte 3
/// matrix_coefficients. Without a description in the stream the parser reports 0 and 2
/// (unspecified), which resolve by size. JPEG carries none: its colours are JFIF's, at the
/// range FFmpeg's probe found. The parser does not report chroma siting: `probed` (the stream
/// as FFmpeg probed it) gives it.
fn seq_color(f: &cu::CUVIDEOFORMAT, probed: Color) -> Color {
    if f.codec == cu::cudaVideoCodec_JPEG {
        return Color::jpeg(probed.range != Range::Limited);
    }
    let v = f.video_signal_description;
    let described = v[3] != 0 && v[3] != 2;
    Color::from_h273(v[3] as u32, (described || v[0] & 0x08 != 0).then_some(v[0] & 0x08 != 0)).with(Transfer::from_h273(v[2] as u32), probed.siting)
}

/// A picture handed out by the parser in display order, not yet written.
pub(super) struct Disp {
    pub info: cu::CUVIDPARSERDISPINFO,
    pub geom: SeqGeom,
    /// The parser reused its surface before we mapped it: its pixels are gone (never expected
    /// with our surface margins; counted).
    pub stale: bool,
    /// Copied aside before a reconfigure released its surface.
    pub parked: Option<Lease>,
}

/// What the parser's callbacks share with the decoder that owns them.
pub(super) struct State {
    pub lib: &'static Nvcuvid,
    pub cam: Arc<CamGpu>,
    pub codec: cu::cudaVideoCodec,
    /// The decoder (with its own context lock). At a session's start it may be the camera's
    /// parked decoder of the last connection (`reuse.rs`), adopted or replaced at the first
    /// sequence header.
    pub decoder: Option<VideoDecoder>,
    /// `decoder` came from the last connection and no sequence header has been seen yet.
    adopting: bool,
    pub geom: Option<SeqGeom>,
    pub display_delay: u32,
    pub queue: VecDeque<Disp>,
    /// An error a callback met (returned by cuvidParseVideoData as a failure).
    pub error: Option<Error>,
    /// The stream cannot be decoded here (format, caps, no session): fall back, don't retry.
    pub refused: bool,
    /// Refused because the GPU's decode sessions are exhausted (FFmpeg's hwaccel would be too).
    pub exhausted: bool,
    pub knobs: Option<Knobs>,
    /// The camera asked for 8-bit output: NVDEC writes NV12 from 10- and 12-bit streams too.
    pub eight_bit: bool,
    /// The camera's picture size limit, width and height: a sequence whose displayed picture is
    /// larger gets no decoder and no pool.
    pub max_picture: (u32, u32),
    /// The stream's colours as FFmpeg probed them (NVDEC's parser reports no chroma siting, and
    /// no range for JPEG).
    pub probed: Color,
    decodes: u32,
}

impl State {
    pub(super) fn new(lib: &'static Nvcuvid, cam: &Arc<CamGpu>, codec: cu::cudaVideoCodec, display_delay: u32, parked: Option<VideoDecoder>) -> State {
        State {
            lib,
            cam: cam.clone(),
            codec,
            adopting: parked.is_some(),
            decoder: parked,
            geom: None,
            display_delay,
            queue: VecDeque::new(),
            error: None,
            refused: false,
            exhausted: false,
            knobs: None,
            eight_bit: false,
            max_picture: (u32::MAX, u32::MAX),
            probed: Color::default(),
            decodes: 0,
        }
    }

    fn stream(&self) -> cu::CUstream {
        self.cam.stream.raw() as cu::CUstream
    }

    fn refuse(&mut self, why: String) -> Error {
        self.refused = true;
        Error::new(ErrorKind::Unsupported, why)
    }

    /// Sequence callback: a new or changed sequence header. Makes, reconfigures or keeps the
    /// decoder, and returns the decode surfaces the parser may use. A stream the engine cannot
    /// take is refused (the camera may fall back), never retried. The first header of a session
    /// that holds its camera's parked decoder goes the same way: kept as is, reconfigured within
    /// its creation size, or destroyed and replaced (`reuse.rs`).
    fn sequence(&mut self, f: &cu::CUVIDEOFORMAT) -> Result<c_int> {
        let dev = self.cam.ordinal();
        let adopting = std::mem::take(&mut self.adopting);
        let bits = 8 + f.bit_depth_luma_minus8 as u32;
        // The displayed size, as the camera's own check (the pool's) sees it: coded sizes are
        // aligned up (1080 rows code as 1088), so a stream at the limit still decodes. Not a
        // refusal of the engine's (no fall-back: every decoder refuses it).
        let d = &f.display_area;
        let (w, h) = ((d.right - d.left).max(0) as u32, (d.bottom - d.top).max(0) as u32);
        let (max_w, max_h) = self.max_picture;
        if w > max_w || h > max_h {
            return Err(Error::picture_refused(format!(
                "the stream's picture {w}x{h} is larger than this camera's limit {max_w}x{max_h} (max_picture_width/height of its options)"
            )));
        }
        if !takes_layout(f.codec, f.chroma_format, bits) || f.bit_depth_chroma_minus8 != f.bit_depth_luma_minus8 {
            return Err(self.refuse(format!(
                "stream is chroma format {} at {bits} bits; direct NVDEC takes 4:2:0 at 8, 10 or 12 bits, and 8-bit JPEG of any layout",
                f.chroma_format
            )));
        }
        let c = caps(&self.cam.stream.dev, f.codec, f.chroma_format, bits)
            .filter(|c| size_fits(c, f.coded_width, f.coded_height) && (f.coded_width >> 4) * (f.coded_height >> 4) <= c.nMaxMBCount);
        let Some(surface) = c.and_then(|c| surface_for(&c, bits, self.eight_bit)) else {
            return Err(self.refuse(format!(
                "GPU {dev}: NVDEC cannot decode codec {} chroma format {} at {bits} bits, {}x{}, into {}",
                f.codec,
                f.chroma_format,
                f.coded_width,
                f.coded_height,
                if bits == 8 || self.eight_bit { "NV12" } else { "P016" }
            )));
        };
        if self.knobs.is_none() {
            self.knobs = hooks::for_width(f.coded_width);
        }
        let d = &f.display_area;
        let geom = SeqGeom {
            width: (d.right - d.left).max(0) as u32,
            height: (d.bottom - d.top).max(0) as u32,
            left: d.left.max(0) as u32,
            top: d.top.max(0) as u32,
            surface_rows: f.coded_height,
            color: seq_color(f, self.probed),
            surface,
            bits,
        };
        if geom.width == 0 || geom.height == 0 {
            return Err(Error::new(ErrorKind::Ffmpeg, "sequence with an empty display area"));
        }
        let want = (f.min_num_decode_surfaces as u32 + self.display_delay + SURFACE_MARGIN).clamp(1, MAX_DECODE_SURFACES);
        if let Some(dec) = &self.decoder {
            let old = dec.fmt;
            let same_size = (old.coded_width, old.coded_height) == (f.coded_width, f.coded_height);
            let same_kind = old.codec == f.codec
                && old.chroma_format == f.chroma_format
                && old.bit_depth_luma_minus8 == f.bit_depth_luma_minus8
                && dec.surface == surface;
            if same_kind && same_size && want <= dec.surfaces {
                // Same surfaces; at most the display window moved (pictures carry their own).
                if adopting {
                    count(&COUNTERS.decoders_adopted);
                    log::debug!("GPU {dev}: NVDEC decoder of the last connection kept ({}x{})", f.coded_width, f.coded_height);
                }
                self.geom = Some(geom);
                return Ok(dec.surfaces as c_int);
            }
            // The surfaces are about to change: move queued pictures of the old sequence aside.
            self.park_queue()?;
            let dec = self.decoder.as_mut().expect("checked above");
            let fits = f.coded_width <= dec.max_w && f.coded_height <= dec.max_h;
            if same_kind && want <= dec.surfaces && fits && dec.reconfigure(f) {
                if adopting {
                    count(&COUNTERS.decoders_adopted);
                }
                log::info!("GPU {dev}: NVDEC decoder reconfigured to {}x{} (display {}x{})", f.coded_width, f.coded_height, geom.width, geom.height);
                self.geom = Some(geom);
                return Ok(dec.surfaces as c_int);
            }
            if adopting {
                log::info!(
                    "GPU {dev}: NVDEC decoder of the last connection ({} {}x{}, {} surfaces) does not fit codec {} {}x{} ({want} surfaces); making a new one",
                    old.codec,
                    old.coded_width,
                    old.coded_height,
                    dec.surfaces,
                    f.codec,
                    f.coded_width,
                    f.coded_height
                );
            }
            self.decoder = None;
        }
        let outputs = self.knobs.map(|k| k.output_surfaces).filter(|&n| n > 0).unwrap_or(OUTPUT_SURFACES);
        let dec = VideoDecoder::create(self.lib, &self.cam, f, surface, want, outputs).map_err(|e| {
            // Out of sessions or memory, or a size the engine refuses: not ours to retry.
            self.refused = true;
            if e.kind == ErrorKind::OutOfMemory {
                self.exhausted = true;
                return exhausted(&self.cam, e);
            }
            e
        })?;
        log::info!(
            "GPU {dev}: NVDEC decoder codec {} {}x{} (display {}x{}), {want} decode / {outputs} output surfaces, display delay {}",
            f.codec,
            f.coded_width,
            f.coded_height,
            geom.width,
            geom.height,
            self.display_delay
        );
        self.decoder = Some(dec);
        self.geom = Some(geom);
        Ok(want as c_int)
    }

    /// Copies the queued (displayed, not yet written) pictures into a side pool, because the
    /// surfaces they live in are about to be released. Resolution changes only.
    fn park_queue(&mut self) -> Result<()> {
        let n = self.queue.iter().filter(|d| !d.stale && d.parked.is_none()).count();
        let Some(dec) = self.decoder.as_ref().filter(|_| n > 0) else { return Ok(()) };
        let g = self.queue.iter().find(|d| !d.stale && d.parked.is_none()).map(|d| d.geom).expect("n > 0");
        let pool = new_pool(&self.cam, Geometry::new(g.width, g.height, g.surface.depth()), n)?;
        let stream = self.stream();
        for d in self.queue.iter_mut().filter(|d| !d.stale && d.parked.is_none()) {
            let mut lease = pool.acquire().ok_or_else(|| Error::internal("side pool exhausted"))?;
            copy_picture(dec, stream, &self.cam, &d.info, &d.geom, &mut lease, &mut Timing::default(), false)?;
            d.parked = Some(lease);
            count(&COUNTERS.parked);
        }
        Ok(())
    }

    /// Decode callback: submits a picture to the engine (nothing waits). A surface the parser
    /// reuses while a picture in it is still queued marks that picture stale.
    fn decode(&mut self, p: &mut cu::CUVIDPICPARAMS) -> Result<c_int> {
        let Some(dec) = self.decoder.as_ref() else { return Err(Error::internal("decode callback before any sequence")) };
        self.decodes = self.decodes.wrapping_add(1);
        let idx = p.CurrPicIdx;
        for d in self.queue.iter_mut().filter(|d| d.info.picture_index == idx && !d.stale && d.parked.is_none()) {
            d.stale = true;
            count(&COUNTERS.surface_hazards);
            log::warn!("NVDEC surface {idx} reused before its picture was written; that picture is dropped");
        }
        if let Some(k) = self.knobs.as_mut().filter(|k| k.fail_decode_at != 0 && k.fail_decode_at == self.decodes) {
            k.fail_decode_at = 0;
            return Err(crate::gpu::driver::DriverError::new("cuvidDecodePicture (injected fault)", crate::gpu::driver::UNKNOWN).into());
        }
        let mark = Mark::now();
        dec.decode(p)?;
        mark.end(Stage::NvDecode);
        if self.codec != cu::cudaVideoCodec_JPEG {
            // What the engines were asked for, to learn their capacity (`gpu::load`).
            crate::gpu::load::submitted(self.cam.ordinal(), crate::gpu::load::macroblocks(dec.fmt.coded_width, dec.fmt.coded_height));
        }
        Ok(1)
    }

    /// Display callback: queues a picture in display order, with its sequence's geometry.
    fn display(&mut self, info: &cu::CUVIDPARSERDISPINFO) -> Result<c_int> {
        let geom = self.geom.ok_or_else(|| Error::internal("display callback before any sequence"))?;
        self.queue.push_back(Disp { info: *info, geom, stale: false, parked: None });
        Ok(1)
    }
}

/// `cuvidCreateDecoder`'s `CUDA_ERROR_OUT_OF_MEMORY`: with device memory to spare this is the
/// driver's per-GPU session limit (measured: 288 decoders per H200 of any codec and size, while
/// over 100 GiB were free), so it is reported, remembered and counted as exhausted sessions.
fn exhausted(cam: &CamGpu, e: Error) -> Error {
    let dev = cam.ordinal();
    let held = stats::of(dev).hw_decoders.load(std::sync::atomic::Ordering::Relaxed).max(0) as u32;
    sessions::note_exhausted(dev, held);
    let free = cam.stream.dev.mem_info().map(|(f, _)| format!("{} MiB", f >> 20)).unwrap_or_else(|_| "unknown".into());
    Error::new(
        ErrorKind::OutOfMemory,
        format!("{}: GPU {dev}'s NVDEC decode sessions are exhausted (nvcam holds {held}; device memory free: {free}; the driver's limit is per GPU, across all processes)", e.msg),
    )
}

/// Runs `f` on the state behind a callback's user pointer; an error or panic is kept for
/// `cuvidParseVideoData`'s caller and fails the callback (returns 0).
///
/// # Safety
/// `user` is the `State` the parser was created with, alive and not otherwise borrowed while the
/// parse that calls back runs (the decoder owns both and parses through `&mut self`).
unsafe fn callback(user: *mut c_void, f: impl FnOnce(&mut State) -> Result<c_int>) -> c_int {
    // SAFETY: this function's contract.
    let st = unsafe { &mut *(user as *mut State) };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(st))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            st.error.get_or_insert(e);
            0
        }
        Err(_) => {
            st.error = Some(Error::new(ErrorKind::Panic, "panic in an NVDEC parser callback"));
            0
        }
    }
}

/// # Safety
/// Called by the parser with the user pointer it was created with and a valid format.
pub(super) unsafe extern "C" fn on_sequence(user: *mut c_void, f: *mut cu::CUVIDEOFORMAT) -> c_int {
    // SAFETY: the parser's contract (see `callback`); `f` is valid for the call.
    unsafe { callback(user, |st| st.sequence(&*f)) }
}

/// # Safety
/// As `on_sequence`.
pub(super) unsafe extern "C" fn on_decode(user: *mut c_void, p: *mut cu::CUVIDPICPARAMS) -> c_int {
    // SAFETY: the parser's contract (see `callback`); `p` is valid for the call.
    unsafe { callback(user, |st| st.decode(&mut *p)) }
}

/// # Safety
/// As `on_sequence`; `d` is null at the end of the stream.
pub(super) unsafe extern "C" fn on_display(user: *mut c_void, d: *mut cu::CUVIDPARSERDISPINFO) -> c_int {
    if d.is_null() {
        return 1; // end of stream (CUVID_PKT_NOTIFY_EOS)
    }
    // SAFETY: the parser's contract (see `callback`); `d` is valid for the call.
    unsafe { callback(user, |st| st.display(&*d)) }
}

/// Maps `info`'s picture, enqueues its copy into `lease` on the camera's stream, marks the slot
/// written, and unmaps (see the module's ordering argument). Returns NVDEC's decode status where
/// it reports one. The caller holds a context guard.
#[allow(clippy::too_many_arguments)]
pub(super) fn copy_picture(
    dec: &VideoDecoder,
    stream: cu::CUstream,
    cam: &CamGpu,
    info: &cu::CUVIDPARSERDISPINFO,
    g: &SeqGeom,
    lease: &mut Lease,
    t: &mut Timing,
    probe_order: bool,
) -> Result<Option<cu::cuvidDecodeStatus>> {
    let slot = lease.pool().geom;
    let s = &cam.stream;
    let dst = device_slot(lease, s, Some((g.width, g.height)))?;
    let mark = Mark::now();
    let m = dec.map(info, stream)?;
    t.map += ns(mark.started());
    mark.end(Stage::NvMap);
    let mark = Mark::now();
    let status = dec.decode_status(info.picture_index);
    let t1 = Instant::now();
    // The display window's left edge in bytes (P016 samples are two).
    let left = g.left as u64 * g.surface.depth().bytes() as u64;
    let luma = m.ptr + g.top as u64 * m.pitch as u64 + left;
    let chroma = m.ptr + (m.pitch * (g.surface_rows as usize).next_multiple_of(2)) as u64 + (g.top / 2) as u64 * m.pitch as u64 + left;
    // SAFETY: the mapped surface holds the picture at `m.pitch`; the copies are enqueued on the
    // camera's stream, which is also the surface's post-processing stream, so any later write to
    // the surface runs after them (module docs); the slot is ours (lease) and has the picture's
    // size (checked).
    let r = unsafe {
        Copy2D { src: Mem::Device(luma), src_pitch: m.pitch, dst: Mem::Device(dst), dst_pitch: slot.pitch, width_bytes: slot.y_row_bytes(), rows: slot.y_rows() }
            .enqueue(s)
            .and_then(|_| {
                Copy2D {
                    src: Mem::Device(chroma),
                    src_pitch: m.pitch,
                    dst: Mem::Device(dst + slot.uv_offset() as u64),
                    dst_pitch: slot.pitch,
                    width_bytes: slot.row_bytes(),
                    rows: slot.uv_rows(),
                }
                .enqueue(s)
            })
            .and_then(|_| lease.pool().storage().mark_written(lease.index()))
    };
    t.copy += ns(t1);
    // Unmap at once, copies enqueued or not: the copies are ordered before any later write to
    // the surface by the stream (module docs).
    let t2 = Instant::now();
    let ur = m.unmap();
    t.unmap += ns(t2);
    mark.end(Stage::NvCopy);
    r?;
    if probe_order && !lease.pool().storage().reusable(lease.index()) {
        // The slot's event (recorded after the copy) is still pending: this surface is back with
        // the decoder while the copy out of it has not run.
        count(&COUNTERS.unmapped_before_copy_ran);
    }
    ur?;
    Ok(status)
}
