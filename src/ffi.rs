//! Every exported function. This is the whole unsafe surface: each function checks its pointers,
//! runs its body inside [`boundary`] (panics caught, errors turned into status codes, recorded as
//! the thread's and the camera's last error, and logged where they happen), and calls safe Rust.

use crate::api::*;
use crate::camera::Options;
use crate::status::*;
use crate::{library, logging, registry};
use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

thread_local! {
    static LAST_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// What a call concerns, so its error is also kept where a host that hops threads finds it.
#[derive(Clone, Copy)]
enum Ctx {
    /// Library-level call: the error goes to the thread's last error and the log.
    Lib,
    /// A call on a camera: also recorded as that camera's last error.
    Camera(u64),
    /// A call on a frame: also recorded on the frame's camera, while the frame is still valid.
    Frame(u64),
    /// The log calls themselves: never logged, or a failing poll would refill the queue it drains.
    Quiet,
}

/// Runs an export's body: catches panics, records and logs errors, returns the status code.
/// LabVIEW may run the next call on another thread, so errors on a camera or frame are kept on
/// the camera too (`nvcam_camera_last_error`).
fn boundary(name: &str, ctx: Ctx, body: impl FnOnce() -> Result<()>) -> i32 {
    LAST_ERROR.with(|e| *e.borrow_mut() = None);
    let r = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::new(NVCAM_E_PANIC, format!("panic in {name}: {what}")))
        }
    };
    match r {
        Ok(()) => NVCAM_OK,
        Err(e) => {
            let e = Error::new(e.code, format!("{name}: {}", e.msg));
            match ctx {
                Ctx::Quiet => {}
                _ if e.code == NVCAM_E_TIMEOUT => log::debug!("{e}"),
                _ => log::warn!("{e}"),
            }
            let cam = match ctx {
                Ctx::Camera(c) => Some(c),
                Ctx::Frame(f) => registry::get(f).ok().map(|f| f.owner),
                Ctx::Lib | Ctx::Quiet => None,
            };
            if let Some(c) = cam.and_then(|c| library::camera(c).ok()) {
                c.shared.note_api_error(&e);
            }
            let code = e.code;
            LAST_ERROR.with(|l| *l.borrow_mut() = Some(e));
            code
        }
    }
}

unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    p.as_mut().ok_or_else(|| Error::null(what))
}

/// Reads a caller struct that starts with `struct_size`, requiring at least `min` bytes.
unsafe fn sized<'a, T>(p: *const T, what: &str) -> Result<Option<&'a T>> {
    if p.is_null() {
        return Ok(None);
    }
    let size = *(p as *const u32);
    if (size as usize) < std::mem::size_of::<T>() {
        return Err(Error::new(
            NVCAM_E_STRUCT_SIZE,
            format!("{what}.struct_size is {size}, expected {}", std::mem::size_of::<T>()),
        ));
    }
    Ok(Some(&*p))
}

unsafe fn sized_out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    let r = out(p, what)?;
    sized(r as *const T, what)?;
    Ok(r)
}

unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::null(what));
    }
    CStr::from_ptr(p).to_str().map_err(|_| Error::arg(format!("{what} is not valid UTF-8")))
}

/// Writes `s` NUL-terminated into `buf`, truncating at a character boundary if it does not fit.
unsafe fn write_text(buf: *mut c_char, len: i32, s: &str) -> Result<()> {
    if buf.is_null() {
        return Err(Error::null("buf"));
    }
    if len <= 0 {
        return Err(Error::new(NVCAM_E_BUFFER_TOO_SMALL, "buffer length must be positive"));
    }
    let cap = len as usize - 1;
    let mut n = s.len().min(cap);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
    *buf.add(n) = 0;
    if n < s.len() {
        Err(Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("text needs {} bytes", s.len() + 1)))
    } else {
        Ok(())
    }
}

fn ms(v: u32, default: u64) -> Duration {
    Duration::from_millis(if v == 0 { default } else { v as u64 })
}

/// The ABI major version of the loaded library (compare with `NVCAM_ABI_VERSION` from the header).
#[no_mangle]
pub extern "C" fn nvcam_abi_version() -> i32 {
    NVCAM_ABI_VERSION
}

/// Writes the library version ("nvcam 0.1.0 (abi 1)") into `buf` of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_version_string(buf: *mut c_char, len: i32) -> i32 {
    boundary("nvcam_version_string", Ctx::Lib, || {
        write_text(buf, len, &format!("nvcam {} (abi {NVCAM_ABI_VERSION})", env!("CARGO_PKG_VERSION")))
    })
}

/// Initializes the library (NULL = defaults). Calling it again while initialized is a no-op;
/// after `nvcam_shutdown` it initializes afresh. Pins the library in the process on first call.
#[no_mangle]
pub unsafe extern "C" fn nvcam_init(config: *const nvcam_config) -> i32 {
    boundary("nvcam_init", Ctx::Lib, || {
        let c = sized(config, "config")?.copied().unwrap_or_default();
        library::init(library::Config {
            flags: c.flags,
            max_hw_decoders_per_device: c.max_hw_decoders_per_device,
            gpu_free_min_age_ms: if c.gpu_free_min_age_ms == 0 { 100 } else { c.gpu_free_min_age_ms },
        })
    })
}

/// Closes every camera, invalidates every frame handle (leaked ones included, and counted in the
/// log), joins every thread and frees all memory, within `timeout_ms`. Old handles return
/// `NVCAM_E_STALE_HANDLE` afterwards. `NVCAM_E_TIMEOUT` if a thread was still running at the end.
#[no_mangle]
pub extern "C" fn nvcam_shutdown(timeout_ms: u32) -> i32 {
    boundary("nvcam_shutdown", Ctx::Lib, || library::shutdown(Duration::from_millis(timeout_ms as u64)).map(|_| ()))
}

/// Writes "NAME: description" of a status code into `buf`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_status_text(code: i32, buf: *mut c_char, len: i32) -> i32 {
    boundary("nvcam_status_text", Ctx::Quiet, || {
        let text = match describe(code) {
            Some((n, d)) => format!("{n}: {d}"),
            None => format!("unknown status {code}"),
        };
        write_text(buf, len, &text)
    })
}

/// The last error of the calling thread's previous nvcam call ("" if it succeeded).
#[no_mangle]
pub unsafe extern "C" fn nvcam_last_error(buf: *mut c_char, len: i32) -> i32 {
    // Not through `boundary`: that would clear the very error being read.
    match catch_unwind(|| {
        let text = LAST_ERROR.with(|e| e.borrow().as_ref().map(|e| e.to_string()).unwrap_or_default());
        write_text(buf, len, &text)
    }) {
        Ok(Ok(())) => NVCAM_OK,
        Ok(Err(e)) => e.code,
        Err(_) => NVCAM_E_PANIC,
    }
}

/// The camera's last error, from its worker (connection, decode) or from a call on it.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_last_error(cam: u64, buf: *mut c_char, len: i32) -> i32 {
    boundary("nvcam_camera_last_error", Ctx::Quiet, || {
        let c = library::camera(cam)?;
        write_text(buf, len, &c.shared.last_error().map(|e| e.to_string()).unwrap_or_default())
    })
}

/// Fills `opts` with the defaults (and sets its `struct_size`).
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_options_init(opts: *mut nvcam_camera_options) -> i32 {
    boundary("nvcam_camera_options_init", Ctx::Lib, || {
        let o = out(opts, "opts")?;
        *o = nvcam_camera_options {
            struct_size: std::mem::size_of::<nvcam_camera_options>() as u32,
            flags: 0,
            pool_slots: 4,
            device: 0,
            decoder: NVCAM_DECODER_AUTO,
            open_timeout_ms: 5000,
            stall_timeout_ms: 5000,
            reconnect_min_ms: 250,
            reconnect_max_ms: 10_000,
            decode_threads: 0,
            ffmpeg_options: std::ptr::null(),
            reserved: [0; 4],
        };
        Ok(())
    })
}

unsafe fn options_from(p: *const nvcam_camera_options) -> Result<Options> {
    let mut o = Options::default();
    let Some(c) = sized(p, "options")? else {
        o.device = 0;
        return Ok(o);
    };
    if c.flags & !NVCAM_OPEN_ALL != 0 {
        return Err(Error::arg(format!("unknown flag bits 0x{:x}", c.flags & !NVCAM_OPEN_ALL)));
    }
    if c.decoder > NVCAM_DECODER_SOFTWARE {
        return Err(Error::arg(format!("decoder {} is not an NVCAM_DECODER_* value", c.decoder)));
    }
    if c.device < -1 {
        return Err(Error::arg(format!("device {} (use -1 for the CPU or a GPU ordinal)", c.device)));
    }
    if c.pool_slots == 1 || c.pool_slots > 64 {
        return Err(Error::arg(format!("pool_slots {} (2..64, 0 = 4)", c.pool_slots)));
    }
    o.flags = c.flags;
    o.pool_slots = if c.pool_slots == 0 { 4 } else { c.pool_slots as usize };
    o.device = c.device;
    o.decoder = c.decoder;
    o.open_timeout = ms(c.open_timeout_ms, 5000);
    o.stall_timeout = ms(c.stall_timeout_ms, 5000);
    o.reconnect_min = ms(c.reconnect_min_ms, 250);
    o.reconnect_max = ms(c.reconnect_max_ms, 10_000).max(o.reconnect_min);
    o.decode_threads = c.decode_threads as usize;
    if !c.ffmpeg_options.is_null() {
        o.ffmpeg = crate::source::parse_options(c_str(c.ffmpeg_options, "ffmpeg_options")?)?;
    }
    Ok(o)
}

/// Opens a camera: `url` is `rtsp://…`, another FFmpeg URL, a file path, or `testsrc://WxH@FPS`
/// (a built-in test pattern). Without `NVCAM_OPEN_ASYNC` it returns once the source is open (or
/// with the reason it could not be: `NVCAM_E_IO`, `NVCAM_E_TIMEOUT`, `NVCAM_E_AUTH`,
/// `NVCAM_E_BAD_OPTION`, `NVCAM_E_UNSUPPORTED`), leaving nothing behind on failure.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_open(url: *const c_char, options: *const nvcam_camera_options, cam: *mut u64) -> i32 {
    boundary("nvcam_camera_open", Ctx::Lib, || {
        let out_cam = out(cam, "cam")?;
        let url = c_str(url, "url")?;
        let opts = options_from(options)?;
        *out_cam = library::open_camera(url, opts)?;
        Ok(())
    })
}

/// `nvcam_camera_open` with the FFmpeg options as a separate string (NULL or "" = none), which
/// overrides `options->ffmpeg_options`. For hosts that cannot put a string pointer into a struct,
/// like LabVIEW.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_open_ex(
    url: *const c_char,
    ffmpeg_options: *const c_char,
    options: *const nvcam_camera_options,
    cam: *mut u64,
) -> i32 {
    boundary("nvcam_camera_open_ex", Ctx::Lib, || {
        let out_cam = out(cam, "cam")?;
        let url = c_str(url, "url")?;
        let mut opts = options_from(options)?;
        if !ffmpeg_options.is_null() {
            opts.ffmpeg = crate::source::parse_options(c_str(ffmpeg_options, "ffmpeg_options")?)?;
        }
        *out_cam = library::open_camera(url, opts)?;
        Ok(())
    })
}

/// Closes a camera: stops it, waits up to `timeout_ms` for in-flight work, invalidates every frame
/// handle it has outstanding, then stops its thread. The handle is released even when the thread
/// outlives the timeout (`NVCAM_E_TIMEOUT`; it exits on its own).
#[no_mangle]
pub extern "C" fn nvcam_camera_close(cam: u64, timeout_ms: u32) -> i32 {
    boundary("nvcam_camera_close", Ctx::Lib, || library::close_camera(cam, Duration::from_millis(timeout_ms as u64)))
}

/// Drops the current connection and reconnects at once, in any state (also after a failure).
/// Frame handles stay valid unless the camera was opened with
/// `NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT`.
#[no_mangle]
pub extern "C" fn nvcam_camera_reconnect(cam: u64) -> i32 {
    boundary("nvcam_camera_reconnect", Ctx::Camera(cam), || library::camera(cam)?.reconnect())
}

/// Waits up to `timeout_ms` for the newest frame not yet handed out and returns a new frame handle
/// in `*frame` (release it with `nvcam_frame_release`). Frames the host was too slow to take are
/// skipped and counted. `NVCAM_E_TIMEOUT` if none came; `NVCAM_E_FAILED`/`NVCAM_E_CLOSED` if none
/// will.
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_get_frame(cam: u64, timeout_ms: u32, frame: *mut u64) -> i32 {
    boundary("nvcam_camera_get_frame", Ctx::Camera(cam), || {
        let out_frame = out(frame, "frame")?;
        let c = library::camera(cam)?;
        let f = c.get_frame(Duration::from_millis(timeout_ms as u64))?;
        let h = registry::publish(f)?;
        // A close that ran between taking the frame and registering it has already force-released
        // the camera's handles; this one must not outlive it.
        if c.shared.state() == crate::camera::state::CLOSED {
            let _ = registry::release(h);
            return Err(Error::new(NVCAM_E_CLOSED, "camera closed while the frame was handed out"));
        }
        *out_frame = h;
        Ok(())
    })
}

/// Fills `stats` (set its `struct_size` first).
#[no_mangle]
pub unsafe extern "C" fn nvcam_camera_stats(cam: u64, stats: *mut nvcam_camera_stats) -> i32 {
    boundary("nvcam_camera_stats", Ctx::Camera(cam), || {
        let s = sized_out(stats, "stats")?;
        let size = s.struct_size;
        *s = library::camera(cam)?.stats(cam);
        s.struct_size = size;
        Ok(())
    })
}

/// A new handle to the same frame; the pixels stay valid (and their slot unwritten) until every
/// handle to them is released.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_clone(frame: u64, clone: *mut u64) -> i32 {
    boundary("nvcam_frame_clone", Ctx::Frame(frame), || {
        let out_clone = out(clone, "clone")?;
        *out_clone = registry::clone(frame)?;
        Ok(())
    })
}

/// Releases one frame handle. A second release of the same handle is `NVCAM_E_STALE_HANDLE`.
#[no_mangle]
pub extern "C" fn nvcam_frame_release(frame: u64) -> i32 {
    boundary("nvcam_frame_release", Ctx::Frame(frame), || registry::release(frame))
}

/// Fills `info` (set its `struct_size` first).
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_info(frame: u64, info: *mut nvcam_frame_info) -> i32 {
    boundary("nvcam_frame_info", Ctx::Frame(frame), || {
        let i = sized_out(info, "info")?;
        let size = i.struct_size;
        let f = registry::get(frame)?;
        let g = *f.geom();
        *i = nvcam_frame_info {
            struct_size: size,
            width: g.width,
            height: g.height,
            format: NVCAM_FORMAT_NV12,
            memory: f.memory() as u32,
            device: f.device(),
            pitch: g.pitch as u64,
            y_ptr: f.y_addr(),
            uv_ptr: f.uv_addr(),
            nv12_size: g.packed_size(0) as u64,
            seq: f.seq,
            pts_us: f.pts_us,
            wallclock_ns: f.wallclock_ns,
            camera: f.owner,
            reserved: [0; 4],
        };
        Ok(())
    })
}

/// Copies the frame as NV12 into a host buffer: Y rows then UV rows, `dst_pitch` bytes apart
/// (0 = packed, `nv12_size` bytes in all). Works for host and device frames (the LabVIEW way:
/// pass an initialized U8 array as an Array Data Pointer and its size).
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_copy_nv12(frame: u64, dst: *mut u8, dst_pitch: u64, dst_size: u64) -> i32 {
    boundary("nvcam_frame_copy_nv12", Ctx::Frame(frame), || {
        if dst.is_null() {
            return Err(Error::null("dst"));
        }
        let f = registry::get(frame)?;
        let dst = std::slice::from_raw_parts_mut(dst, dst_size as usize);
        f.copy_nv12(dst, dst_pitch as usize)
    })
}

/// Invalidates every frame handle that camera `cam` has outstanding (its clones included) and
/// writes how many into `*released` (may be NULL). The memory returns to the pool once no call in
/// progress still uses it. Works on a closed camera's handle value too.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_force_release_owner(cam: u64, released: *mut u32) -> i32 {
    boundary("nvcam_registry_force_release_owner", Ctx::Lib, || {
        crate::handle::decode(cam, crate::handle::Kind::Camera)?;
        let n = registry::force_release_owner(cam) as u32;
        if let Some(r) = released.as_mut() {
            *r = n;
        }
        Ok(())
    })
}

/// Live frame handles: of camera `cam` into `*for_camera` (cam 0 = none), of all cameras into
/// `*total`. Either pointer may be NULL.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_stats(cam: u64, for_camera: *mut u32, total: *mut u64) -> i32 {
    boundary("nvcam_registry_stats", Ctx::Lib, || {
        if cam != 0 {
            crate::handle::decode(cam, crate::handle::Kind::Camera)?;
        }
        let m = registry::per_owner();
        if let Some(p) = for_camera.as_mut() {
            *p = m.get(&cam).copied().unwrap_or(0);
        }
        if let Some(p) = total.as_mut() {
            *p = m.values().map(|&v| v as u64).sum();
        }
        Ok(())
    })
}

/// Sends the log to a file (`path`), to stderr (`"-"`), or only to the callback and the poll
/// queue (NULL or ""), at `level` (`NVCAM_LOG_*`). Callable before `nvcam_init`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_init(path: *const c_char, level: i32) -> i32 {
    boundary("nvcam_log_init", Ctx::Lib, || {
        let path = if path.is_null() { "" } else { c_str(path, "path")? };
        let lvl = logging::filter_from(level).ok_or_else(|| Error::arg(format!("log level {level} (0..5)")))?;
        logging::init(path, lvl).map_err(|m| Error::new(NVCAM_E_IO, m))
    })
}

/// Sets (or with NULL clears) a callback that receives every message at `min_level` or more
/// severe. Called from any thread, never with nvcam's locks held; cleared by `nvcam_shutdown`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_set_callback(callback: nvcam_log_fn, user: *mut c_void, min_level: i32) -> i32 {
    boundary("nvcam_log_set_callback", Ctx::Lib, || {
        let lvl = logging::filter_from(min_level).ok_or_else(|| Error::arg(format!("log level {min_level} (0..5)")))?;
        logging::set_callback(callback, user, lvl);
        Ok(())
    })
}

/// Pops the oldest queued log message (for hosts that poll, like LabVIEW): `*level` gets its
/// level, `buf` its text, `*msg_len` its length in bytes, 0 when the queue is empty. A message that
/// does not fit in `len` bytes (with its NUL) stays queued: the call returns
/// `NVCAM_E_BUFFER_TOO_SMALL` with `*msg_len` set, so the host can grow its buffer and call again.
/// The queue keeps the newest 1024 messages at the `nvcam_log_init` level (default warnings).
#[no_mangle]
pub unsafe extern "C" fn nvcam_log_pop(level: *mut i32, buf: *mut c_char, len: i32, msg_len: *mut i32) -> i32 {
    boundary("nvcam_log_pop", Ctx::Quiet, || {
        let lvl = out(level, "level")?;
        let n = out(msg_len, "msg_len")?;
        if buf.is_null() {
            return Err(Error::null("buf"));
        }
        logging::ensure_installed();
        match logging::pop_if_fits(len.max(0) as usize) {
            Ok(Some((l, m))) => {
                *lvl = l;
                *n = m.len() as i32;
                write_text(buf, len, &m)
            }
            Ok(None) => {
                *lvl = 0;
                *n = 0;
                write_text(buf, len, "")
            }
            Err((l, needed)) => {
                *lvl = l;
                *n = needed as i32;
                let _ = write_text(buf, len, "");
                Err(Error::new(NVCAM_E_BUFFER_TOO_SMALL, format!("the next log message needs {} bytes", needed + 1)))
            }
        }
    })
}

/// Fills `stats` (set its `struct_size` first) with the GPU counters of `device`, or summed over
/// all devices for -1. Callable before `nvcam_init` and without a GPU (`device_count` 0; a
/// device ordinal then is `NVCAM_E_NO_DEVICE`).
#[no_mangle]
pub unsafe extern "C" fn nvcam_gpu_stats(device: i32, stats: *mut nvcam_gpu_stats) -> i32 {
    boundary("nvcam_gpu_stats", Ctx::Lib, || {
        let s = sized_out(stats, "stats")?;
        let size = s.struct_size;
        *s = crate::gpu::gpu_stats(device)?;
        s.struct_size = size;
        Ok(())
    })
}

/// Frees GPU buffers in the deferred-free queue whose fence events have completed and that were
/// retired at least `min_age_ms` ago (0 = all whose events completed). Never waits: events are
/// queried. Workers do this on their own with `gpu_free_min_age_ms`; call it to return memory
/// sooner, e.g. after closing cameras.
#[no_mangle]
pub extern "C" fn nvcam_gpu_drain(min_age_ms: u32) -> i32 {
    boundary("nvcam_gpu_drain", Ctx::Lib, || {
        crate::gpu::deferred::drain(Duration::from_millis(min_age_ms as u64));
        Ok(())
    })
}
