//! RAII owners of NVDEC's handles: the context lock, the parser, the decoder, and a mapped
//! picture that unmaps when it goes. Nothing here is destroyed by hand elsewhere.

use super::caps::Surface;
use super::counters::{count, COUNTERS};
use crate::gpu::nvcuvid::api::Nvcuvid;
use crate::gpu::nvcuvid::sys as cu;
use crate::gpu::context::Device;
use crate::gpu::driver::{self, DriverError};
use crate::gpu::{stats, CamGpu};
use crate::status::*;
use parking_lot::Mutex;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

// ---------------------------------------------------------------------------------------------
// The context lock: one per decoder (the default), or one per CUDA context shared by its decoders.
//
// NVDEC takes a decoder's `vidLock` around the work it does in the context on the caller's
// behalf (create, decode, map, unmap, destroy). A lock shared by every decoder of a context makes
// one camera's `cuvidCreateDecoder`/`cuvidDestroyDecoder` (tens to hundreds of milliseconds)
// wait out, and hold up, every other camera's decode and map: measured on an H200, 8 cameras
// reconnecting in a loop left 32 steady ones at 13.8-18 fps with 593 ms gaps. Nothing needs the
// sharing: the lock exists for applications that hand one *floating* context between threads
// (NVIDIA's NvDecoder sample makes one lock per decoder, FFmpeg's nvdec passes none). Ours is
// the device's primary context, made current by push/pop on each thread that uses it (a context
// may be current on many threads at once), each decoder is used by one camera thread only, and a
// decoder's map, unmap and destroy go through that decoder's own lock. So a lock per decoder
// serializes exactly what must be (one decoder's calls) and nothing across cameras.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LockMode {
    PerContext,
    PerDecoder,
    None,
}

/// `NVCAM_NVDEC_CTXLOCK=context|none` changes the default (`decoder`), for measurements of the
/// old behaviour.
fn lock_mode() -> LockMode {
    static MODE: OnceLock<LockMode> = OnceLock::new();
    *MODE.get_or_init(|| match crate::switches::Switch::NvdecCtxlock.var().as_deref() {
        Ok("context") => LockMode::PerContext,
        Ok("none") => LockMode::None,
        _ => LockMode::PerDecoder,
    })
}

/// (context, lock, decoders using it)
static CTX_LOCKS: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());

/// A decoder's context lock (its own, or its share of the context's; the last share destroys it).
pub(super) struct CtxLock {
    lib: &'static Nvcuvid,
    ctx: usize,
    lock: cu::CUvideoctxlock,
    shared: bool,
}

// SAFETY: a driver handle (or null) usable from any thread; the registry is behind a mutex.
unsafe impl Send for CtxLock {}

impl CtxLock {
    pub(super) fn acquire(lib: &'static Nvcuvid, dev: &Device) -> Result<CtxLock> {
        let ctx = dev.cu_ctx() as usize;
        let create = || -> Result<cu::CUvideoctxlock> {
            // SAFETY: our retained context, which outlives every decoder's lock (the decoders
            // hold the device).
            Ok(unsafe { lib.ctx_lock_create(ctx as cu::CUcontext) }?)
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

    pub(super) fn raw(&self) -> cu::CUvideoctxlock {
        self.lock
    }
}

impl Drop for CtxLock {
    fn drop(&mut self) {
        if self.lock.is_null() {
            return;
        }
        let last = !self.shared || {
            let mut v = CTX_LOCKS.lock();
            match v.iter().position(|e| e.0 == self.ctx) {
                Some(i) => {
                    v[i].2 -= 1;
                    let last = v[i].2 == 0;
                    if last {
                        v.swap_remove(i);
                    }
                    last
                }
                None => false,
            }
        };
        if last {
            // SAFETY: the last share of this lock; its decoders were destroyed before their
            // shares dropped.
            driver::ok_or_logged(unsafe { self.lib.ctx_lock_destroy(self.lock) });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The parser.

/// NVIDIA's bitstream parser. Its callbacks receive `user`, which must outlive it.
pub(super) struct Parser {
    lib: &'static Nvcuvid,
    dev: Arc<Device>,
    raw: cu::CUvideoparser,
}

// SAFETY: a driver handle used by one camera thread at a time (`&mut self`).
unsafe impl Send for Parser {}

impl Parser {
    /// # Safety
    /// `params.pUserData` is what the callbacks expect and stays valid (and unaliased while a
    /// parse runs) until this parser is dropped.
    pub(super) unsafe fn new(lib: &'static Nvcuvid, dev: &Arc<Device>, params: &mut cu::CUVIDPARSERPARAMS) -> Result<Parser> {
        // SAFETY: `params` is fully written; the user pointer's lifetime is the caller's contract.
        let p = unsafe { lib.create_video_parser(params) }?;
        Ok(Parser { lib, dev: dev.clone(), raw: p })
    }

    /// Feeds one packet; the callbacks run inside, on this thread. Returns the parser's result
    /// (inside: the caller looks at what the callbacks reported first).
    pub(super) fn parse(&mut self, pkt: &mut cu::CUVIDSOURCEDATAPACKET) -> Result<std::result::Result<(), DriverError>> {
        let _g = self.dev.push()?;
        // SAFETY: our parser, the device's context current (guard), not parsing elsewhere (we
        // hold `&mut`); `pkt` points at a payload the caller keeps alive for the call.
        Ok(unsafe { self.lib.parse_video_data(self.raw, pkt) })
    }
}

impl Drop for Parser {
    fn drop(&mut self) {
        let _g = self.dev.push();
        // SAFETY: our parser, destroyed once; no parse runs (we hold `&mut`).
        driver::ok_or_logged(unsafe { self.lib.destroy_video_parser(self.raw) });
    }
}

// ---------------------------------------------------------------------------------------------
// The decoder.

/// One NVDEC decode session, its surfaces and its context lock. Dropping it waits for the
/// camera's stream (copies may still read its surfaces), then destroys it: teardown, resolution
/// change, recovery, or a parked decoder the next connection cannot use (`reuse.rs`).
pub(super) struct VideoDecoder {
    lib: &'static Nvcuvid,
    pub(super) cam: Arc<CamGpu>,
    raw: cu::CUvideodecoder,
    /// The `vidLock` it was created with: it must outlive the decoder (a field, so it drops
    /// after `Drop::drop` destroyed the decoder), and it travels with it when the decoder is
    /// parked for the camera's next connection.
    _lock: CtxLock,
    /// A decode, map, unmap or reconfigure of this decoder failed: it is never parked for reuse.
    faulted: AtomicBool,
    /// The format it was made (or last reconfigured) for.
    pub fmt: cu::CUVIDEOFORMAT,
    /// What it writes (NV12 or P016).
    pub surface: Surface,
    pub surfaces: u32,
    /// The coded size it was made for (`ulMaxWidth`/`ulMaxHeight`).
    pub max_w: u32,
    pub max_h: u32,
}

// SAFETY: a driver handle used by one camera thread at a time.
unsafe impl Send for VideoDecoder {}

impl VideoDecoder {
    pub(super) fn create(
        lib: &'static Nvcuvid,
        cam: &Arc<CamGpu>,
        f: &cu::CUVIDEOFORMAT,
        surface: Surface,
        surfaces: u32,
        outputs: u32,
    ) -> Result<VideoDecoder> {
        let lock = CtxLock::acquire(lib, &cam.stream.dev)?;
        let mut ci = cu::CUVIDDECODECREATEINFO {
            ulWidth: f.coded_width as _,
            ulHeight: f.coded_height as _,
            ulNumDecodeSurfaces: surfaces as _,
            CodecType: f.codec,
            ChromaFormat: f.chroma_format,
            ulCreationFlags: cu::cudaVideoCreate_PreferCUVID,
            bitDepthMinus8: f.bit_depth_luma_minus8 as _,
            ulIntraDecodeOnly: 0,
            ulMaxWidth: f.coded_width as _,
            ulMaxHeight: f.coded_height as _,
            Reserved1: 0,
            // Zero: the whole coded picture; we crop to the display window in the copy.
            display_area: cu::ShortRect::default(),
            OutputFormat: surface.cuda(),
            // No deinterlacing: interlaced content stays woven, as FFmpeg's software decode outputs it.
            DeinterlaceMode: cu::cudaVideoDeinterlaceMode_Weave,
            ulTargetWidth: f.coded_width as _,
            ulTargetHeight: f.coded_height as _,
            ulNumOutputSurfaces: outputs as _,
            vidLock: lock.raw(),
            target_rect: cu::ShortRect::default(),
            enableHistogram: 0,
            Reserved2: [0; 4],
        };
        let _g = cam.stream.dev.push()?;
        let one = crate::gpu::sessions::creating(cam.ordinal());
        // SAFETY: `ci` is fully written; the context is current (guard); its lock is a field of
        // the decoder, dropped after it.
        let mut r = unsafe { lib.create_decoder(&mut ci) };
        drop(one);
        if r.as_ref().is_err_and(|e| e.code == crate::gpu::driver::OUT_OF_MEMORY) {
            // Once more after a pause: only a refusal that lasts is taken for exhausted sessions.
            // The pause is outside the create lock: another camera's create does not wait it out.
            std::thread::sleep(std::time::Duration::from_millis(50));
            let _one = crate::gpu::sessions::creating(cam.ordinal());
            // SAFETY: as above.
            r = unsafe { lib.create_decoder(&mut ci) };
        }
        let dec = r.map_err(|e| e.named(format!("cuvidCreateDecoder ({}x{}, {surfaces} surfaces)", f.coded_width, f.coded_height)))?;
        let held = stats::of(cam.ordinal()).hw_decoders.fetch_add(1, Ordering::Relaxed) + 1;
        crate::gpu::sessions::note_created(cam.ordinal(), held.max(0) as u32);
        count(&COUNTERS.decoders_created);
        Ok(VideoDecoder {
            lib,
            cam: cam.clone(),
            raw: dec,
            _lock: lock,
            faulted: AtomicBool::new(false),
            fmt: *f,
            surface,
            surfaces,
            max_w: f.coded_width,
            max_h: f.coded_height,
        })
    }

    /// Whether a call on it failed (then it is destroyed rather than reused by another connection).
    pub(super) fn faulted(&self) -> bool {
        self.faulted.load(Ordering::Relaxed)
    }

    /// Records a failed call's result as a fault of this decoder.
    fn note<T>(&self, r: std::result::Result<T, DriverError>) -> Result<T> {
        if r.is_err() {
            self.faulted.store(true, Ordering::Relaxed);
        }
        Ok(r?)
    }

    /// Resizes the decoder in place (the new coded size fits the size it was made for); false
    /// where it could not (the caller makes a new decoder, so this failure is no error).
    pub(super) fn reconfigure(&mut self, f: &cu::CUVIDEOFORMAT) -> bool {
        // Copies may still read the old surfaces.
        if self.cam.stream.synchronize().is_err() {
            return false;
        }
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
        let Ok(_g) = self.cam.stream.dev.push() else { return false };
        // SAFETY: our decoder; no copy reads its surfaces any more (stream synchronized above).
        if let Err(e) = unsafe { self.lib.reconfigure_decoder(self.raw, &mut ri) } {
            self.faulted.store(true, Ordering::Relaxed);
            log::info!("cuvidReconfigureDecoder failed ({}); making a new decoder", e.name());
            return false;
        }
        self.fmt = *f;
        count(&COUNTERS.reconfigures);
        true
    }

    /// Submits one picture (inside the parser's decode callback, so the context is current).
    pub(super) fn decode(&self, p: &mut cu::CUVIDPICPARAMS) -> Result<()> {
        // SAFETY: our decoder; `p` is the parser's picture parameters for this call.
        self.note(unsafe { self.lib.decode_picture(self.raw, p) })
    }

    /// Maps picture `info` with its post-processing on `stream`; the caller holds a context guard.
    pub(super) fn map(&self, info: &cu::CUVIDPARSERDISPINFO, stream: cu::CUstream) -> Result<Mapped<'_>> {
        let mut pp = cu::proc_params(info, stream);
        // SAFETY: our decoder and a picture index the parser handed out. The Mapped value
        // unmaps it.
        let (ptr, pitch) = self.note(unsafe { self.lib.map_video_frame(self.raw, info.picture_index, &mut pp) })?;
        Ok(Mapped { dec: self, ptr, pitch: pitch as usize, unmapped: false })
    }

    /// NVDEC's status for a decoded picture, where it reports one.
    pub(super) fn decode_status(&self, picture_index: i32) -> Option<cu::cuvidDecodeStatus> {
        // SAFETY: our decoder.
        unsafe { self.lib.get_decode_status(self.raw, picture_index) }.ok()
    }
}

impl Drop for VideoDecoder {
    fn drop(&mut self) {
        // Copies may still read its surfaces: wait for the camera's stream.
        if let Err(e) = self.cam.stream.synchronize() {
            log::warn!("before cuvidDestroyDecoder: {e}");
        }
        let _g = self.cam.stream.dev.push();
        // SAFETY: our decoder, destroyed once; nothing reads its surfaces (stream synchronized).
        driver::ok_or_logged(unsafe { self.lib.destroy_decoder(self.raw) });
        stats::of(self.cam.ordinal()).hw_decoders.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A mapped output surface; unmapped by [`Mapped::unmap`] (which reports the result) or on drop.
pub(super) struct Mapped<'a> {
    dec: &'a VideoDecoder,
    pub ptr: u64,
    pub pitch: usize,
    unmapped: bool,
}

impl Mapped<'_> {
    pub(super) fn unmap(mut self) -> Result<()> {
        self.unmapped = true;
        // SAFETY: a surface this decoder mapped, unmapped once.
        self.dec.note(unsafe { self.dec.lib.unmap_video_frame(self.dec.raw, self.ptr) })
    }
}

impl Drop for Mapped<'_> {
    fn drop(&mut self) {
        if !self.unmapped {
            // SAFETY: as in `unmap`; reached only on an early return before it.
            let _ = self.dec.note(unsafe { self.dec.lib.unmap_video_frame(self.dec.raw, self.ptr) });
        }
    }
}

/// For the hooks' host function: sleeps `user` microseconds on the stream's callback thread.
#[cfg(feature = "test-hooks")]
pub(super) unsafe extern "C" fn delay_host_fn(user: *mut c_void) {
    std::thread::sleep(std::time::Duration::from_micros(user as usize as u64));
}

#[cfg(not(feature = "test-hooks"))]
#[allow(dead_code)]
fn _unused(_: *mut c_void) {}
