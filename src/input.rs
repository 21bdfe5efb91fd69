//! Opening and reading a source through FFmpeg with waits we own.
//!
//! Every blocking FFmpeg call (open, probe, read) runs under an interrupt callback that checks a
//! deadline and a stop flag, so a server that accepts TCP and never answers can hold a worker for
//! at most the deadline, and `close` never waits on the network. FFmpeg 5.1 reports an interrupted
//! open as "Invalid data" rather than a timeout, so [`Interrupt::fired`] tells timeouts apart.

use crate::source::Source;
use crate::status::*;
use ffmpeg_next as ff;
use ff::ffi;
use std::ffi::{c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Deadline and stop flag read by FFmpeg's interrupt callback.
pub struct Interrupt {
    base: Instant,
    /// Milliseconds after `base`; u64::MAX = no deadline.
    deadline_ms: AtomicU64,
    fired: AtomicBool,
    stop: AtomicBool,
    /// Set by a manual reconnect: abort the current read, then reopen.
    kick: AtomicBool,
}

impl Interrupt {
    pub fn new() -> Arc<Interrupt> {
        Arc::new(Interrupt {
            base: Instant::now(),
            deadline_ms: AtomicU64::new(u64::MAX),
            fired: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            kick: AtomicBool::new(false),
        })
    }
    /// Starts a new bounded wait of `d`.
    pub fn arm(&self, d: Duration) {
        let at = self.base.elapsed() + d;
        self.fired.store(false, Ordering::Relaxed);
        self.deadline_ms.store(at.as_millis() as u64, Ordering::Release);
    }
    pub fn disarm(&self) {
        self.deadline_ms.store(u64::MAX, Ordering::Release);
    }
    /// Whether the last wait ended because its deadline passed (not because of an error).
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
    pub fn kick(&self) {
        self.kick.store(true, Ordering::Release);
    }
    pub fn take_kick(&self) -> bool {
        self.kick.swap(false, Ordering::AcqRel)
    }
    pub fn kicked(&self) -> bool {
        self.kick.load(Ordering::Acquire)
    }
    fn should_abort(&self) -> bool {
        if self.stopping() || self.kicked() {
            return true;
        }
        let d = self.deadline_ms.load(Ordering::Acquire);
        if d != u64::MAX && self.base.elapsed().as_millis() as u64 >= d {
            self.fired.store(true, Ordering::Release);
            return true;
        }
        false
    }
}

extern "C" fn interrupt_cb(opaque: *mut c_void) -> c_int {
    // Never unwind into FFmpeg: a panic here would abort the host.
    std::panic::catch_unwind(|| {
        let irq = unsafe { &*(opaque as *const Interrupt) };
        irq.should_abort() as c_int
    })
    .unwrap_or(1)
}

/// An open FFmpeg input. Field order matters: the format context is closed before the interrupt
/// state its callback points at is released.
pub struct Input {
    pub ctx: ff::format::context::Input,
    pub irq: Arc<Interrupt>,
    pub video_index: usize,
    /// A read whose deadline passed still returned a packet (FFmpeg flushes its parser on the
    /// error): the stall is reported by the next read, without waiting a second stall period.
    stalled: Option<Error>,
}

/// Bound on closing an input (RTSP sends TEARDOWN to a server that may be hung).
const CLOSE_TIMEOUT: Duration = Duration::from_millis(1000);

impl Drop for Input {
    fn drop(&mut self) {
        // Runs before the fields drop: the context closes under this deadline.
        self.irq.arm(CLOSE_TIMEOUT);
    }
}

static DEVICES: std::sync::Once = std::sync::Once::new();

/// Opens `src` with `opts` within `timeout`; every option must be consumed by FFmpeg.
pub fn open(src: &Source, opts: &[(String, String)], irq: &Arc<Interrupt>, timeout: Duration) -> Result<Input> {
    DEVICES.call_once(|| unsafe { ffi::avdevice_register_all() });
    let (target, fmt_name) = src.ffmpeg_target();
    let c_target = CString::new(target.clone()).map_err(|_| Error::arg("URL contains a NUL byte"))?;
    let mut dict: *mut ffi::AVDictionary = std::ptr::null_mut();
    for (k, v) in opts {
        let (ck, cv) = (
            CString::new(k.as_str()).map_err(|_| Error::arg("option contains NUL"))?,
            CString::new(v.as_str()).map_err(|_| Error::arg("option contains NUL"))?,
        );
        unsafe { ffi::av_dict_set(&mut dict, ck.as_ptr(), cv.as_ptr(), 0) };
    }
    let fmt = match fmt_name {
        Some(n) => {
            let cn = CString::new(n).unwrap();
            let f = unsafe { ffi::av_find_input_format(cn.as_ptr()) };
            if f.is_null() {
                unsafe { ffi::av_dict_free(&mut dict) };
                return Err(Error::new(NVCAM_E_UNSUPPORTED, format!("FFmpeg has no '{n}' input format")));
            }
            f
        }
        None => std::ptr::null(),
    };
    unsafe {
        let mut ps = ffi::avformat_alloc_context();
        if ps.is_null() {
            ffi::av_dict_free(&mut dict);
            return Err(Error::new(NVCAM_E_OUT_OF_MEMORY, "avformat_alloc_context"));
        }
        (*ps).interrupt_callback = ffi::AVIOInterruptCB {
            callback: Some(interrupt_cb),
            opaque: Arc::as_ptr(irq) as *mut c_void,
        };
        irq.arm(timeout);
        let r = ffi::avformat_open_input(&mut ps, c_target.as_ptr(), fmt as _, &mut dict);
        let leftover = dict_keys(dict);
        ffi::av_dict_free(&mut dict);
        if r < 0 {
            irq.disarm();
            // avformat_open_input frees the context on failure.
            return Err(open_error(&target, r, irq, timeout));
        }
        let mut ctx = ff::format::context::Input::wrap(ps);
        if !leftover.is_empty() {
            irq.disarm();
            return Err(Error::new(
                NVCAM_E_BAD_OPTION,
                format!("FFmpeg did not use option(s) {} for '{target}' (misspelled, or not an option of this protocol/format)", leftover.join(", ")),
            ));
        }
        let r = ffi::avformat_find_stream_info(ctx.as_mut_ptr(), std::ptr::null_mut());
        if r < 0 {
            irq.disarm();
            return Err(open_error(&target, r, irq, timeout));
        }
        irq.disarm();
        let video_index = ctx
            .streams()
            .best(ff::media::Type::Video)
            .map(|s| s.index())
            .ok_or_else(|| Error::new(NVCAM_E_UNSUPPORTED, format!("'{target}' has no video stream")))?;
        Ok(Input { ctx, irq: irq.clone(), video_index, stalled: None })
    }
}

unsafe fn dict_keys(d: *mut ffi::AVDictionary) -> Vec<String> {
    let mut out = Vec::new();
    let mut e: *mut ffi::AVDictionaryEntry = std::ptr::null_mut();
    let empty = c"";
    loop {
        e = ffi::av_dict_get(d, empty.as_ptr(), e, ffi::AV_DICT_IGNORE_SUFFIX);
        if e.is_null() {
            break;
        }
        out.push(CStr::from_ptr((*e).key).to_string_lossy().into_owned());
    }
    out
}

/// Turns an FFmpeg open failure into an error that names the cause.
fn open_error(target: &str, r: c_int, irq: &Interrupt, timeout: Duration) -> Error {
    if irq.stopping() {
        return Error::new(NVCAM_E_CLOSED, "open aborted: camera closing");
    }
    if irq.kicked() {
        return Error::new(NVCAM_E_IO, "open aborted: reconnect requested");
    }
    if irq.fired() {
        return Error::timeout(format!("timeout after {} ms opening '{}'", timeout.as_millis(), redact(target)));
    }
    let fe = ff::Error::from(r);
    let text = fe.to_string();
    let code = match r {
        x if x == ffi::AVERROR(libc_errno::ECONNREFUSED) => {
            return Error::new(NVCAM_E_IO, format!("connection refused by '{}'", redact(target)))
        }
        x if x == ffi::AVERROR(libc_errno::ENOENT) => NVCAM_E_IO,
        x if x == ffi::AVERROR(libc_errno::ETIMEDOUT) => NVCAM_E_TIMEOUT,
        x if x == ffi::AVERROR_HTTP_UNAUTHORIZED => {
            return Error::new(NVCAM_E_AUTH, format!("401 Unauthorized from '{}'", redact(target)))
        }
        x if x == ffi::AVERROR_HTTP_FORBIDDEN => NVCAM_E_AUTH,
        x if x == ffi::AVERROR_PROTOCOL_NOT_FOUND || x == ffi::AVERROR_DEMUXER_NOT_FOUND => NVCAM_E_UNSUPPORTED,
        _ => NVCAM_E_IO,
    };
    Error::new(code, format!("cannot open '{}': {text}", redact(target)))
}

/// A URL without its password, for logs and error texts.
pub fn redact(url: &str) -> String {
    if let Some(i) = url.find("://") {
        let rest = &url[i + 3..];
        let host_end = rest.find('/').unwrap_or(rest.len());
        if let Some(at) = rest[..host_end].rfind('@').filter(|&at| rest[..at].contains(':')) {
            let user = rest[..at].split(':').next().unwrap_or("");
            return format!("{}://{}:***@{}", &url[..i], user, &rest[at + 1..]);
        }
    }
    url.to_string()
}

/// errno values FFmpeg wraps (Linux numbering; FFmpeg uses the platform's own values).
mod libc_errno {
    pub const ENOENT: i32 = 2;
    #[cfg(not(windows))]
    pub const ECONNREFUSED: i32 = 111;
    #[cfg(windows)]
    pub const ECONNREFUSED: i32 = 107;
    #[cfg(not(windows))]
    pub const ETIMEDOUT: i32 = 110;
    #[cfg(windows)]
    pub const ETIMEDOUT: i32 = 138;
}

/// What a read produced.
pub enum Read {
    Packet(ff::Packet),
    Eof,
}

impl Input {
    /// Reads the next packet of the video stream, waiting at most `stall`.
    pub fn read_video(&mut self, stall: Duration) -> Result<Read> {
        if let Some(e) = self.stalled.take() {
            return Err(e);
        }
        loop {
            let mut pkt = ff::Packet::empty();
            self.irq.arm(stall);
            let r = pkt.read(&mut self.ctx);
            self.irq.disarm();
            if r.is_ok() && self.irq.fired() && !self.irq.stopping() && !self.irq.kicked() {
                self.stalled = Some(Error::timeout(format!("stalled: no packet for {} ms", stall.as_millis())));
            }
            match r {
                Ok(()) if pkt.stream() == self.video_index => return Ok(Read::Packet(pkt)),
                Ok(()) if self.stalled.is_some() => return Err(self.stalled.take().unwrap()),
                Ok(()) => continue,
                Err(ff::Error::Eof) => return Ok(Read::Eof),
                Err(_) if self.irq.stopping() => return Err(Error::new(NVCAM_E_CLOSED, "read aborted: camera closing")),
                Err(_) if self.irq.kicked() => return Err(Error::new(NVCAM_E_IO, "read aborted: reconnect requested")),
                Err(_) if self.irq.fired() => {
                    return Err(Error::timeout(format!("stalled: no packet for {} ms", stall.as_millis())))
                }
                Err(e) => return Err(Error::ffmpeg("av_read_frame", e)),
            }
        }
    }

    pub fn stream(&self) -> ff::format::stream::Stream<'_> {
        self.ctx.stream(self.video_index).expect("video stream exists")
    }

    /// Rewinds a file to its start (for looping).
    pub fn rewind(&mut self) -> Result<()> {
        self.ctx.seek(0, ..).map_err(|e| Error::ffmpeg("av_seek_frame", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn passwords_never_reach_logs() {
        assert_eq!(redact("rtsp://admin:secret@10.0.0.1/s"), "rtsp://admin:***@10.0.0.1/s");
        assert_eq!(redact("rtsp://10.0.0.1/a@b"), "rtsp://10.0.0.1/a@b");
        assert_eq!(redact("testsrc://1280x720@30"), "testsrc://1280x720@30");
    }
}
