//! Library lifetime: init, the camera table, shutdown, and the pin that keeps our code mapped.
//!
//! The handle tables are process-wide statics that are never reset: shutdown removes every entry
//! (bumping its generation), so a handle from before a shutdown stays stale after a re-init rather
//! than aliasing a new object.

use crate::camera::{Camera, CameraState, Closed};
use crate::config::{Config, Options};
use crate::handle::{Kind, Table};
use crate::instances;
use crate::registry;
use crate::status::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

static CAMERAS: Table<Arc<Camera>> = Table::new(Kind::Camera);
static INITIALIZED: AtomicBool = AtomicBool::new(false);
/// Serializes init and shutdown against each other.
static LIFECYCLE: Mutex<()> = Mutex::new(());
/// Camera workers that did not exit within their close timeout; shutdown joins them.
static LINGERING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

pub(crate) fn init(cfg: Config) -> Result<()> {
    let _g = LIFECYCLE.lock();
    crate::pin::pin_self();
    crate::logging::ensure_installed();
    if INITIALIZED.load(Ordering::Acquire) {
        log::info!("nvcam_init: already initialized");
        return Ok(());
    }
    // Before the first FFmpeg call: a DLL that cannot be loaded is an error here, not a crash there.
    #[cfg(windows)]
    crate::win_loader::ensure_ffmpeg()?;
    // Never on another FFmpeg than nvcam's (one the host loaded): it would lack nvcam's patches.
    crate::ffmpeg::own::check()?;
    ffmpeg_next::init().map_err(|e| Error::ffmpeg("av_register", e))?;
    // FFmpeg's warnings and errors, through our log (its level and sinks decide what is kept).
    ffmpeg_next::util::log::set_level(ffmpeg_next::util::log::Level::Warning);
    crate::ffmpeg::log::install();
    crate::gpu::init(&cfg);
    INITIALIZED.store(true, Ordering::Release);
    log::info!("nvcam {} initialized ({cfg:?})", env!("CARGO_PKG_VERSION"));
    Ok(())
}

fn require_init() -> Result<()> {
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::NotInitialized, "call nvcam_init first"))
    }
}

pub(crate) fn open_camera(url: &str, opts: Options) -> Result<u64> {
    require_init()?;
    let cam = Camera::new(url, opts)?;
    let h = CAMERAS.insert(cam.clone())?;
    // A shutdown that ran between the check above and the insert has already emptied the table
    // (it clears INITIALIZED first): this camera must not outlive it.
    let started = if INITIALIZED.load(Ordering::SeqCst) {
        // Published before the worker starts: its first pool is one other processes can map.
        match cam.publish_as_opened() {
            Ok(()) => cam.start(h),
            Err(e) => Err(e),
        }
    } else {
        Err(Error::new(ErrorKind::NotInitialized, "nvcam_shutdown ran while the camera was being opened"))
    };
    if let Err(e) = started {
        let _ = CAMERAS.remove(h);
        adopt(cam.close(Duration::from_millis(2000)));
        return Err(e);
    }
    log::info!("camera 0x{h:016x} opened: {}", crate::redact::redact_url(url));
    Ok(h)
}

pub(crate) fn camera(h: u64) -> Result<Arc<Camera>> {
    CAMERAS.get(h)
}

/// Waits for camera `h`'s newest frame and hands it to the host as a new frame handle.
pub(crate) fn get_frame(h: u64, timeout: Duration) -> Result<u64> {
    hand_out(&camera(h)?, timeout, None)
}

/// [`get_frame`] as a wait of LabVIEW node instance `inst` (see [`crate::instances`]): that
/// instance's Abort wakes it with `ErrorKind::Cancelled`.
pub(crate) fn get_frame_in(h: u64, timeout: Duration, inst: u64) -> Result<u64> {
    let instance = instances::get(inst)?;
    let c = camera(h)?;
    let wait = instance.begin(c.clone());
    hand_out(&c, timeout, Some(wait.abort()))
}

/// Cancels every wait in progress on camera `h` (see [`Camera::cancel_waits`]).
pub(crate) fn cancel_waits(h: u64) -> Result<()> {
    let c = camera(h)?;
    if c.state() == CameraState::Closed {
        return Err(Error::new(ErrorKind::Closed, "camera is closed"));
    }
    c.cancel_waits();
    Ok(())
}

/// What [`get_frames`] got: one frame handle (or 0) per camera, and the call's status.
pub(crate) struct Batch {
    pub frames: Vec<u64>,
    pub status: Result<()>,
}

/// The newest frame of each camera in `cams` ("latest of N"). Checks every handle first
/// (nothing is taken when one is bad or repeated); then waits for each camera in turn against one
/// deadline, `timeout` from now (a camera after the deadline is only polled); then polls the
/// cameras whose frame was taken earlier once more and swaps in a newer frame that arrived
/// meanwhile (the older handle is released; never for a lossless camera). A camera with no frame gets 0. The status is `Ok`
/// when every camera has a frame; otherwise the first hard error in array order (closed, failed,
/// end of file, ...), else `ErrorKind::Cancelled` when a wait was cancelled (the remaining cameras are
/// then only polled), else `ErrorKind::TimedOut`. Whatever the status, every non-zero entry is a live
/// handle the caller owns.
pub(crate) fn get_frames(cams: &[u64], timeout: Duration) -> Result<Batch> {
    let mut seen = std::collections::HashSet::with_capacity(cams.len());
    let mut cs = Vec::with_capacity(cams.len());
    for (i, &h) in cams.iter().enumerate() {
        let c = camera(h).map_err(|e| Error { msg: format!("cams[{i}]: {}", e.msg), ..e })?;
        if !seen.insert(h) {
            return Err(Error::arg(format!("cams[{i}] repeats camera 0x{h:016x}: each camera at most once")));
        }
        cs.push(c);
    }
    let deadline = Instant::now() + timeout;
    let mut frames = vec![0u64; cs.len()];
    let mut hard: Option<Error> = None;
    let mut cancelled: Option<Error> = None;
    for (i, c) in cs.iter().enumerate() {
        let left = if cancelled.is_some() { Duration::ZERO } else { deadline.saturating_duration_since(Instant::now()) };
        match hand_out(c, left, None) {
            Ok(f) => frames[i] = f,
            Err(e) if e.kind == ErrorKind::TimedOut => {}
            Err(e) if e.kind == ErrorKind::Cancelled => {
                cancelled.get_or_insert(Error { msg: format!("cams[{i}]: {}", e.msg), ..e });
            }
            Err(e) => {
                hard.get_or_insert(Error { msg: format!("cams[{i}]: {}", e.msg), ..e });
            }
        }
    }
    // Frames taken early in the wait: a newer one may have come while later cameras were waited
    // for. (The last camera's frame is as new as it gets; a lossless camera hands out every
    // frame in order, so its frame is never swapped.)
    let last = frames.iter().rposition(|&f| f != 0);
    for (i, c) in cs.iter().enumerate() {
        if frames[i] == 0 || Some(i) == last || c.lossless() {
            continue;
        }
        if let Ok(newer) = hand_out(c, Duration::ZERO, None) {
            let _ = registry::release(frames[i]);
            frames[i] = newer;
        }
    }
    let missing = frames.iter().filter(|&&f| f == 0).count();
    let status = match (hard, cancelled) {
        (Some(e), _) => Err(e),
        (None, Some(e)) => Err(e),
        (None, None) if missing > 0 => Err(Error::new(
            ErrorKind::TimedOut,
            format!("{missing} of {} cameras had no new frame within {} ms", cs.len(), timeout.as_millis()),
        )),
        _ => Ok(()),
    };
    Ok(Batch { frames, status })
}

fn hand_out(c: &Arc<Camera>, timeout: Duration, abort: Option<&AtomicBool>) -> Result<u64> {
    let f = c.get_frame(timeout, abort)?;
    let fh = registry::publish(f)?;
    // A close that ran between taking the frame and registering it has already force-released
    // the camera's handles; this one must not outlive it.
    if c.state() == CameraState::Closed {
        let _ = registry::release(fh);
        return Err(Error::new(ErrorKind::Closed, "camera closed while the frame was handed out"));
    }
    Ok(fh)
}

fn adopt(c: Closed) -> bool {
    match c {
        Closed::Done => true,
        Closed::TimedOut(w) => {
            LINGERING.lock().extend(w);
            false
        }
    }
}

/// Removes the handle first (so no new call can reach the camera), then closes it.
pub(crate) fn close_camera(h: u64, timeout: Duration) -> Result<()> {
    let cam = CAMERAS.remove(h)?;
    if adopt(cam.close(timeout)) {
        Ok(())
    } else {
        Err(Error::timeout(format!(
            "camera closed, but its worker did not exit within {} ms; it finishes on its own",
            timeout.as_millis()
        )))
    }
}

/// Closes every camera, invalidates every frame handle, joins every thread, frees all memory.
/// Returns the number of frame handles the host had leaked.
pub(crate) fn shutdown(timeout: Duration) -> Result<usize> {
    let _g = LIFECYCLE.lock();
    if !INITIALIZED.swap(false, Ordering::SeqCst) {
        return Err(Error::new(ErrorKind::NotInitialized, "nvcam_shutdown without nvcam_init"));
    }
    let end = Instant::now() + timeout;
    let cams = CAMERAS.remove_where(|_| true);
    // Count the host's handles now: each camera's close below releases its own.
    let held = registry::live();
    // Stop them all first, so their closes overlap instead of adding up.
    for c in &cams {
        c.stop();
    }
    let mut all_closed = true;
    for c in &cams {
        all_closed &= adopt(c.close(end.saturating_duration_since(Instant::now())));
    }
    drop(cams);
    crate::record::release_all();
    // What the closes left (handles of no live camera) was counted in `held` already.
    let leaked = held.max(registry::force_release_all());
    if leaked > 0 {
        log::warn!("nvcam_shutdown: the host leaked {leaked} frame handle(s); all released");
    }
    let lingering: Vec<_> = LINGERING.lock().drain(..).collect();
    for w in lingering {
        // JoinHandle has no timed join: poll is_finished within what is left of the timeout.
        while !w.is_finished() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        if w.is_finished() {
            let _ = w.join();
        } else {
            all_closed = false;
            LINGERING.lock().push(w);
        }
    }
    // What uses the devices stops before the device layer frees their memory and contexts: the
    // conversions' staging areas and kernels, then the nvJPEG engines.
    let gpu_left = end.saturating_duration_since(Instant::now());
    crate::convert::gpu::shutdown();
    crate::decode::nvjpeg::shutdown();
    crate::gpu::shutdown(gpu_left);
    if !crate::workers::stop(end) {
        log::warn!("nvcam_shutdown: a worker thread did not stop in time; it ends on its own");
    }
    crate::logging::clear_callback();
    log::info!("nvcam shut down ({leaked} leaked handle(s) released)");
    if all_closed {
        Ok(leaked)
    } else {
        Err(Error::timeout(format!("shutdown: some camera threads still running after {} ms", timeout.as_millis())))
    }
}
