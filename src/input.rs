//! Opening and reading a source through FFmpeg with waits we own.
//!
//! Every blocking FFmpeg call (open, probe, read) runs under an interrupt callback that checks a
//! deadline and a stop flag, so a server that accepts TCP and never answers can hold a worker for
//! at most the deadline, and `close` never waits on the network. FFmpeg 5.1 reports an interrupted
//! open as "Invalid data" rather than a timeout, so [`Interrupt::fired`] tells timeouts apart.

use crate::redact::redact_url;
use crate::source::Source;
use crate::config::DEFAULTS;
use crate::status::*;
use ffmpeg_next as ff;
use ff::ffi;
use crate::ffmpeg::dict::Dict;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Deadline and stop flag read by FFmpeg's interrupt callback.
pub(crate) struct Interrupt {
    base: Instant,
    /// Milliseconds after `base`; u64::MAX = no deadline.
    deadline_ms: AtomicU64,
    fired: AtomicBool,
    stop: AtomicBool,
    /// Set by a manual reconnect: abort the current read, then reopen.
    kick: AtomicBool,
    /// What `NVCAM_TRANSPORT_AUTO` learned about this camera's network (`AUTO_*`), or the default
    /// transport about its server (`DEFAULT_*`). It lives here, with the camera, because it must
    /// outlive each connection.
    auto: AtomicU8,
    /// While an `AUTO` open waits for its first packet over UDP: the context whose streams show
    /// whether one came (see `silence_ms`); null otherwise.
    watch: AtomicPtr<ffi::AVFormatContext>,
    /// Milliseconds after `base` by which a packet must have come over UDP; u64::MAX = no check.
    silence_ms: AtomicU64,
    /// Whether the last open ended because no packet came over UDP by `silence_ms`.
    silent: AtomicBool,
    /// Whether the last open ended because the server refused the transport asked for (SETUP
    /// answered 461 Unsupported Transport, or 400 Bad Request).
    refused: AtomicBool,
    /// An input is closing: only the deadline aborts, not a stop or a kick, so FFmpeg's close
    /// gets to send its TEARDOWN (a stop or kick is what ends most sessions).
    closing: AtomicBool,
}

/// `NVCAM_TRANSPORT_AUTO` is off (the camera's transport is fixed by its options).
const AUTO_OFF: u8 = 0;
/// `AUTO`: the next open tries UDP first.
const AUTO_UDP: u8 = 1;
/// `AUTO`: UDP failed and TCP worked; later opens of this camera go straight to TCP.
const AUTO_TCP: u8 = 2;
/// `DEFAULT`: the next open tries TCP first, UDP if the server refuses TCP.
const DEFAULT_TCP: u8 = 3;
/// `DEFAULT`: the server refused TCP and UDP worked; later opens of this camera try UDP first.
const DEFAULT_UDP: u8 = 4;

impl Interrupt {
    pub(crate) fn new() -> Arc<Interrupt> {
        Arc::new(Interrupt {
            base: Instant::now(),
            deadline_ms: AtomicU64::new(u64::MAX),
            fired: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            kick: AtomicBool::new(false),
            auto: AtomicU8::new(AUTO_OFF),
            watch: AtomicPtr::new(std::ptr::null_mut()),
            silence_ms: AtomicU64::new(u64::MAX),
            silent: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            closing: AtomicBool::new(false),
        })
    }
    /// Makes this camera's RTSP opens choose their transport (`NVCAM_TRANSPORT_AUTO`).
    pub(crate) fn set_auto_transport(&self) {
        self.auto.store(AUTO_UDP, Ordering::Release);
    }
    /// Makes this camera's RTSP opens use TCP, or UDP where the server refuses TCP
    /// (`NVCAM_TRANSPORT_DEFAULT` without `rtsp_transport` among the FFmpeg options).
    pub(crate) fn set_tcp_then_udp(&self) {
        self.auto.store(DEFAULT_TCP, Ordering::Release);
    }
    /// A manual reconnect of an `AUTO` camera that settled on TCP tries UDP again: the host asks
    /// for a fresh start, and the network may have changed. Automatic reconnects stay on TCP.
    pub(crate) fn retry_udp(&self) {
        let _ = self.auto.compare_exchange(AUTO_TCP, AUTO_UDP, Ordering::AcqRel, Ordering::Acquire);
    }
    /// Starts a new bounded wait of `d`.
    pub(crate) fn arm(&self, d: Duration) {
        let at = self.base.elapsed() + d;
        self.fired.store(false, Ordering::Relaxed);
        self.deadline_ms.store(at.as_millis() as u64, Ordering::Release);
    }
    pub(crate) fn disarm(&self) {
        self.deadline_ms.store(u64::MAX, Ordering::Release);
    }
    /// Whether the last wait ended because its deadline passed (not because of an error).
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
    pub(crate) fn kick(&self) {
        self.kick.store(true, Ordering::Release);
    }
    pub(crate) fn take_kick(&self) -> bool {
        self.kick.swap(false, Ordering::AcqRel)
    }
    pub(crate) fn kicked(&self) -> bool {
        self.kick.load(Ordering::Acquire)
    }
    /// Starts closing an input under its own deadline; the guard ends it.
    fn closing(&self, d: Duration) -> Closing<'_> {
        self.arm(d);
        self.closing.store(true, Ordering::Release);
        Closing(self)
    }
    fn should_abort(&self) -> bool {
        let now = self.base.elapsed().as_millis() as u64;
        if self.closing.load(Ordering::Acquire) {
            let d = self.deadline_ms.load(Ordering::Acquire);
            return d != u64::MAX && now >= d;
        }
        if self.stopping() || self.kicked() {
            return true;
        }
        let q = self.silence_ms.load(Ordering::Acquire);
        if q != u64::MAX && now >= q {
            let ctx = self.watch.load(Ordering::Acquire);
            // SAFETY: `watch` is set only while `open_with` runs avformat_find_stream_info on
            // that context, and FFmpeg calls us from inside that call, on the same thread.
            if !ctx.is_null() && unsafe { any_packet(ctx) } {
                self.silence_ms.store(u64::MAX, Ordering::Release);
            } else {
                self.silent.store(true, Ordering::Release);
                return true;
            }
        }
        let d = self.deadline_ms.load(Ordering::Acquire);
        if d != u64::MAX && now >= d {
            self.fired.store(true, Ordering::Release);
            return true;
        }
        false
    }
}

/// Whether the demuxer has read a packet of any stream of `ctx` (FFmpeg sets
/// `AVSTREAM_EVENT_FLAG_NEW_PACKETS` on a stream for each packet it reads and never clears it;
/// nothing else here clears it either).
///
/// # Safety
/// `ctx` is an open format context, not used by another thread meanwhile.
unsafe fn any_packet(ctx: *const ffi::AVFormatContext) -> bool {
    const NEW_PACKETS: c_int = 2; // AVSTREAM_EVENT_FLAG_NEW_PACKETS (libavformat/avformat.h)
    // SAFETY: the caller's context: `streams` holds `nb_streams` valid stream pointers.
    unsafe {
        let n = (*ctx).nb_streams as usize;
        let streams = (*ctx).streams;
        !streams.is_null()
            && (0..n).any(|i| {
                let st = *streams.add(i);
                !st.is_null() && (*st).event_flags & NEW_PACKETS != 0
            })
    }
}

extern "C" fn interrupt_cb(opaque: *mut c_void) -> c_int {
    // Never unwind into FFmpeg: a panic here would abort the host.
    std::panic::catch_unwind(|| {
        // SAFETY: `opaque` is the Interrupt that `open` stored, kept alive by the Input that owns
        // the format context calling us.
        let irq = unsafe { &*(opaque as *const Interrupt) };
        irq.should_abort() as c_int
    })
    .unwrap_or(1)
}

/// While an input closes: the interrupt waits on the close's deadline only.
struct Closing<'a>(&'a Interrupt);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.closing.store(false, Ordering::Release);
        self.0.disarm();
    }
}

/// An open FFmpeg input. The format context is closed (in `drop`) before the interrupt state its
/// callback points at is released.
pub(crate) struct Input {
    pub ctx: std::mem::ManuallyDrop<ff::format::context::Input>,
    pub irq: Arc<Interrupt>,
    pub video_index: usize,
    /// An RTSP session, whose sender reports give the source's capture clock.
    rtsp: bool,
    /// Key-frame requests made of the demuxer (its option counts them).
    keyframe_requests: i64,
}

/// Bound on closing an input. RTSP sends TEARDOWN then, so the server stops streaming to a
/// session nobody reads (a camera that limits its sessions would count it for a minute or more).
/// The write goes to the RTSP connection's socket and no answer is awaited, so it takes
/// microseconds unless the server is hung with its receive window full: then the deadline ends it.
/// A stop or a kick does not cut it short (they are what end most sessions).
const CLOSE_TIMEOUT: Duration = Duration::from_millis(500);

impl Drop for Input {
    fn drop(&mut self) {
        let _closing = self.irq.closing(CLOSE_TIMEOUT);
        // SAFETY: the context is dropped here once and never used again (`self` is going).
        unsafe { std::mem::ManuallyDrop::drop(&mut self.ctx) };
    }
}

static DEVICES: std::sync::Once = std::sync::Once::new();

/// Opens `src` with `opts` within `timeout`; every option must be consumed by FFmpeg.
///
/// An RTSP camera with `NVCAM_TRANSPORT_AUTO` (see [`Interrupt::set_auto_transport`]) opens over
/// UDP first. If no packet has come over UDP `DEFAULTS.udp_fallback_ms` after the open began (a
/// firewall or NAT that drops the server's UDP), or the UDP setup fails (a server without UDP),
/// it opens again over TCP in the time left of `timeout`. Once TCP worked that way, the camera's
/// later opens (its reconnects) go straight to TCP: the network that dropped UDP is still there,
/// and retrying UDP would add the fallback time to every reconnect. A manual reconnect
/// ([`Interrupt::retry_udp`]) tries UDP again.
///
/// A camera on the default transport (see [`Interrupt::set_tcp_then_udp`]) opens over TCP. If the
/// server refuses it (SETUP answered 461 Unsupported Transport or 400, as UDP-only cameras and
/// servers do), it opens again over UDP in the time left, says so once, and its later opens try
/// UDP first (and TCP if a changed server refuses UDP).
pub(crate) fn open(src: &Source, opts: &[(String, String)], irq: &Arc<Interrupt>, timeout: Duration) -> Result<Input> {
    let auto = irq.auto.load(Ordering::Acquire);
    if auto == AUTO_OFF || !src.is_rtsp() {
        return open_with(src, opts, irq, timeout, timeout, None);
    }
    let over = |t: &str| {
        let mut v = opts.to_vec();
        v.push(("rtsp_transport".into(), t.into()));
        v
    };
    if auto == DEFAULT_TCP || auto == DEFAULT_UDP {
        return open_refusable(src, irq, timeout, if auto == DEFAULT_TCP { ["tcp", "udp"] } else { ["udp", "tcp"] }, over);
    }
    if auto == AUTO_TCP {
        return open_with(src, &over("tcp"), irq, timeout, timeout, None);
    }
    let t0 = Instant::now();
    let fallback = Duration::from_millis(DEFAULTS.udp_fallback_ms as u64);
    let udp_err = match open_with(src, &over("udp"), irq, timeout, timeout, Some(t0 + fallback)) {
        Ok(input) => return Ok(input),
        Err(e) => e,
    };
    // Credentials, options, a close, a reconnect or the deadline: TCP would not fix them.
    let silent = irq.silent.load(Ordering::Acquire);
    let refused = irq.refused.load(Ordering::Acquire);
    if !silent && !refused && (udp_err.kind != ErrorKind::Io || irq.stopping() || irq.kicked()) {
        return Err(udp_err);
    }
    let left = timeout.saturating_sub(t0.elapsed());
    if left.is_zero() {
        return Err(udp_err);
    }
    let (target, _) = src.ffmpeg_target();
    let why = if silent { format!("no packet over UDP within {} ms", fallback.as_millis()) } else { format!("UDP failed ({})", udp_err.msg) };
    let input = open_with(src, &over("tcp"), irq, timeout, left, None).inspect_err(|e| {
        log::debug!("'{}': {why}; TCP failed too: {}", redact_url(&target), e.msg);
    })?;
    irq.auto.store(AUTO_TCP, Ordering::Release);
    log::info!(
        "'{}': {why}, opened over TCP instead after {} ms; this camera stays on TCP (NVCAM_TRANSPORT_AUTO; nvcam_camera_reconnect tries UDP again)",
        redact_url(&target),
        t0.elapsed().as_millis()
    );
    Ok(input)
}

/// The default transport's open: over `order[0]`, then over `order[1]` in the time left when the
/// server refuses the first. The one that worked goes first at the camera's next open.
fn open_refusable(src: &Source, irq: &Arc<Interrupt>, timeout: Duration, order: [&str; 2], over: impl Fn(&str) -> Vec<(String, String)>) -> Result<Input> {
    let t0 = Instant::now();
    let first = match open_with(src, &over(order[0]), irq, timeout, timeout, None) {
        Ok(input) => return Ok(input),
        Err(e) => e,
    };
    if !irq.refused.load(Ordering::Acquire) {
        return Err(first);
    }
    // The refused session is gone; a server that shares one pipeline between its clients takes a
    // moment to tear it down, and answers a DESCRIBE meanwhile with 503 (GStreamer's does).
    let until = Instant::now() + REFUSED_PAUSE;
    while Instant::now() < until && !irq.stopping() && !irq.kicked() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left = timeout.saturating_sub(t0.elapsed());
    if irq.stopping() || irq.kicked() || left.is_zero() {
        return Err(first);
    }
    let (target, _) = src.ffmpeg_target();
    let input = match open_with(src, &over(order[1]), irq, timeout, left, None) {
        Ok(input) => input,
        Err(_) if irq.refused.load(Ordering::Acquire) => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!("'{}' refused RTP over both TCP and UDP (SETUP answered 461 Unsupported Transport or 400)", redact_url(&target)),
            ))
        }
        Err(e) => return Err(e),
    };
    irq.auto.store(if order[1] == "udp" { DEFAULT_UDP } else { DEFAULT_TCP }, Ordering::Release);
    log::info!(
        "'{}': the server refused RTP over {}, opened over {} instead; this camera's reconnects try {} first",
        redact_url(&target),
        transport_name(order[0]),
        transport_name(order[1]),
        transport_name(order[1]),
    );
    Ok(input)
}

/// Whether an RTSP open's transport may be UDP (`rtsp_transport` names it, or is not given:
/// FFmpeg then tries UDP first).
fn over_udp(opts: &[(String, String)]) -> bool {
    opts.iter().rev().find(|(k, _)| k == "rtsp_transport").is_none_or(|(_, v)| v.contains("udp"))
}

/// The receive buffer an RTP socket over UDP asks for: `DEFAULTS.udp_receive_buffer_bytes`.
/// Linux grants at most `net.core.rmem_max` (and reports twice what it granted); FFmpeg warns at
/// every open when the report is below the ask, so where `rmem_max` is lower the ask is twice it.
/// A buffer smaller than the default is said once, at INFO.
fn udp_receive_buffer() -> u32 {
    static SIZE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SIZE.get_or_init(|| {
        let want = DEFAULTS.udp_receive_buffer_bytes;
        let max = std::fs::read_to_string("/proc/sys/net/core/rmem_max").ok().and_then(|s| s.trim().parse::<u32>().ok());
        match max {
            Some(m) if m < want => {
                log::info!(
                    "UDP receive buffers get {} KB, not {} KB: net.core.rmem_max is {m} (raise it to {want} for cameras over UDP to ride out a slow decode or a burst)",
                    m / 1024,
                    want / 1024,
                );
                want.min(m.saturating_mul(2))
            }
            _ => want,
        }
    })
}

/// Between a transport the server refused and the other one.
const REFUSED_PAUSE: Duration = Duration::from_millis(250);

/// How a message names FFmpeg's `rtsp_transport` value.
fn transport_name(t: &str) -> String {
    match t {
        "tcp" => "TCP".into(),
        "udp" => "UDP".into(),
        "udp_multicast" => "UDP multicast".into(),
        "http" => "the HTTP tunnel".into(),
        other => format!("rtsp_transport={other}"),
    }
}

/// One open attempt within `budget` (`timeout` is the whole open's, for messages). With
/// `udp_by`, the probe is cut short when no packet has arrived by then ([`Interrupt::silent`]).
fn open_with(src: &Source, opts: &[(String, String)], irq: &Arc<Interrupt>, timeout: Duration, budget: Duration, udp_by: Option<Instant>) -> Result<Input> {
    // SAFETY: registers FFmpeg's static device list; idempotent, once per process.
    DEVICES.call_once(|| unsafe { ffi::avdevice_register_all() });
    let (target, fmt_name) = src.ffmpeg_target();
    let c_target = CString::new(target.clone()).map_err(|_| Error::arg("URL contains a NUL byte"))?;
    crate::ffmpeg::optcheck::check_values(opts)?;
    let mut pairs = opts.to_vec();
    if src.is_rtsp() && !opts.iter().any(|(k, _)| k == "buffer_size") && over_udp(opts) {
        pairs.push(("buffer_size".into(), udp_receive_buffer().to_string()));
    }
    if src.is_rtsp() && !opts.iter().any(|(k, _)| k == "max_delay") {
        // FFmpeg's own default too, but over TCP it kept no reorder window (nvcam's FFmpeg patch
        // gives it one whenever max_delay is set).
        pairs.push(("max_delay".into(), (u64::from(DEFAULTS.rtp_reorder_window_ms) * 1000).to_string()));
    }
    if !opts.iter().any(|(k, _)| k == "protocol_whitelist") {
        pairs.push(("protocol_whitelist".into(), src.protocol_whitelist().into()));
    }
    let mut dict = Dict::from_pairs(&pairs)?;
    let fmt = match fmt_name {
        Some(n) => {
            // SAFETY: a NUL-terminated name; returns a static format description or null.
            let f = unsafe { ffi::av_find_input_format(n.as_ptr()) };
            if f.is_null() {
                return Err(Error::new(ErrorKind::Unsupported, format!("FFmpeg has no {n:?} input format")));
            }
            f
        }
        None => std::ptr::null(),
    };
    // SAFETY: allocation only; checked below.
    let mut ps = unsafe { ffi::avformat_alloc_context() };
    if ps.is_null() {
        return Err(Error::new(ErrorKind::OutOfMemory, "avformat_alloc_context"));
    }
    // SAFETY: `ps` is a fresh context. The callback's opaque is the Interrupt, which the Input
    // (holding an Arc to it) outlives the context it is stored in (field order of `Input`). On
    // failure avformat_open_input frees `ps` itself.
    let r = unsafe {
        (*ps).interrupt_callback = ffi::AVIOInterruptCB { callback: Some(interrupt_cb), opaque: Arc::as_ptr(irq) as *mut c_void };
        crate::rtp_loss::gaps::watch(ps);
        irq.silent.store(false, Ordering::Release);
        irq.refused.store(false, Ordering::Release);
        irq.arm(budget);
        ffi::avformat_open_input(&mut ps, c_target.as_ptr(), fmt as _, dict.as_mut_ptr())
    };
    if r < 0 {
        irq.disarm();
        if src.is_rtsp() && refusal(r) && !irq.stopping() && !irq.kicked() && !irq.fired() {
            irq.refused.store(true, Ordering::Release);
            let asked = opts.iter().rev().find(|(k, _)| k == "rtsp_transport").map_or("TCP or UDP".into(), |(_, v)| transport_name(v));
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "'{}' refused RTP over {asked} ({})",
                    redact_url(&target),
                    if r == ffi::AVERROR_HTTP_BAD_REQUEST { "400 Bad Request, to its SETUP or a request before it" } else { "SETUP answered 461 Unsupported Transport" }
                ),
            ));
        }
        return Err(open_error(&target, r, irq, timeout));
    }
    // SAFETY: an opened context, owned from here by the wrapper, which the Input closes on drop
    // (under the close's deadline, TEARDOWN included, whatever ends the open from here).
    let ctx = unsafe { ff::format::context::Input::wrap(ps) };
    let mut input = Input { ctx: std::mem::ManuallyDrop::new(ctx), irq: irq.clone(), video_index: 0, rtsp: src.is_rtsp(), keyframe_requests: 0 };
    let leftover = dict.keys();
    if !leftover.is_empty() {
        irq.disarm();
        return Err(Error::new(
            ErrorKind::BadOption,
            format!("FFmpeg did not use option(s) {} for '{}' (misspelled, or not an option of this protocol/format)", leftover.join(", "), redact_url(&target)),
        ));
    }
    if let Some(by) = udp_by {
        // The first packets come during the probe. A handshake that took most of the wait still
        // leaves UDP a quarter of it.
        let quarter = Duration::from_millis(DEFAULTS.udp_fallback_ms as u64 / 4);
        let by = by.max(Instant::now() + quarter);
        let at = irq.base.elapsed() + by.saturating_duration_since(Instant::now());
        // SAFETY: only the pointer is taken; the callback reads it during the probe below.
        irq.watch.store(unsafe { input.ctx.as_mut_ptr() }, Ordering::Release);
        irq.silence_ms.store(at.as_millis() as u64, Ordering::Release);
    }
    // SAFETY: an opened context; no options.
    let r = unsafe { ffi::avformat_find_stream_info(input.ctx.as_mut_ptr(), std::ptr::null_mut()) };
    irq.silence_ms.store(u64::MAX, Ordering::Release);
    irq.watch.store(std::ptr::null_mut(), Ordering::Release);
    irq.disarm();
    if irq.silent.load(Ordering::Acquire) {
        return Err(Error::new(ErrorKind::Io, format!("no packet over UDP from '{}'", redact_url(&target))));
    }
    if r < 0 {
        return Err(open_error(&target, r, irq, timeout));
    }
    input.video_index = input
        .ctx
        .streams()
        .best(ff::media::Type::Video)
        .map(|s| s.index())
        .ok_or_else(|| Error::new(ErrorKind::Unsupported, format!("'{}' has no video stream", redact_url(&target))))?;
    Ok(input)
}

/// Whether an RTSP open failed because the server refused the transport: FFmpeg turns a 461
/// Unsupported Transport to the SETUP of the only transport it was given into EPROTONOSUPPORT,
/// and a 400 Bad Request into its own code (servers that do not know the transport say 400).
fn refusal(r: c_int) -> bool {
    r == ffi::AVERROR(libc_errno::EPROTONOSUPPORT) || r == ffi::AVERROR_HTTP_BAD_REQUEST
}

/// Turns an FFmpeg open failure into an error that names the cause.
fn open_error(target: &str, r: c_int, irq: &Interrupt, timeout: Duration) -> Error {
    if irq.stopping() {
        return Error::new(ErrorKind::Closed, "open aborted: camera closing");
    }
    if irq.kicked() {
        return Error::new(ErrorKind::Io, "open aborted: reconnect requested");
    }
    if irq.fired() {
        return Error::timeout(format!("timeout after {} ms opening '{}'", timeout.as_millis(), redact_url(target)));
    }
    if r == ffi::AVERROR_PROTOCOL_NOT_FOUND {
        if let Some((scheme, protocol, what)) = missing_protocol(target) {
            // FFmpeg says only "Protocol not found", about a scheme nvcam lists as supported.
            return Error::new(
                ErrorKind::Unsupported,
                format!("cannot open '{}': {scheme}:// needs {what}, and the FFmpeg nvcam runs on has none (no '{}' protocol)", redact_url(target), protocol.to_string_lossy()),
            );
        }
    }
    if crate::ffmpeg::srt::passphrase_refused(r) {
        return Error::new(
            ErrorKind::Auth,
            format!("SRT listener '{}' refused the passphrase (wrong, missing, or given where it expects none; pbkeylen must match too)", redact_url(target)),
        );
    }
    if let Some(why) = crate::ffmpeg::rtsp_limits::refusal(r) {
        return Error::new(ErrorKind::Io, format!("cannot open '{}': {why}", redact_url(target)));
    }
    if let Some(why) = crate::ffmpeg::tls::refusal(r) {
        return Error::new(ErrorKind::TlsVerify, format!("certificate of '{}' refused: {why}", redact_url(target)));
    }
    if let Some(why) = crate::ffmpeg::tls::connection_refusal(r) {
        return Error::new(ErrorKind::TlsVerify, format!("TLS connection to '{}' refused: {why}", redact_url(target)));
    }
    let fe = ff::Error::from(r);
    let text = fe.to_string();
    let kind = match r {
        x if x == ffi::AVERROR(libc_errno::ECONNREFUSED) => {
            return Error::new(ErrorKind::Io, format!("connection refused by '{}'", redact_url(target)))
        }
        x if x == ffi::AVERROR(libc_errno::ENOENT) => ErrorKind::Io,
        x if x == ffi::AVERROR(libc_errno::ETIMEDOUT) => ErrorKind::TimedOut,
        x if x == ffi::AVERROR_HTTP_UNAUTHORIZED => {
            return Error::new(ErrorKind::Auth, format!("401 Unauthorized from '{}'", redact_url(target)))
        }
        x if x == ffi::AVERROR_HTTP_FORBIDDEN => ErrorKind::Auth,
        x if x == ffi::AVERROR_PROTOCOL_NOT_FOUND || x == ffi::AVERROR_DEMUXER_NOT_FOUND => ErrorKind::Unsupported,
        _ => ErrorKind::Io,
    };
    Error::new(kind, format!("cannot open '{}': {text}", redact_url(target)))
}

/// For a URL whose scheme this FFmpeg cannot serve: the scheme, the protocol and what it is.
fn missing_protocol(url: &str) -> Option<(&str, &'static std::ffi::CStr, &'static str)> {
    let (scheme, _) = url.split_once("://")?;
    crate::ffmpeg::protocols::missing_for(scheme).map(|(p, what)| (scheme, p, what))
}

/// errno values FFmpeg wraps (Linux numbering; FFmpeg uses the platform's own values).
mod libc_errno {
    pub(super) const ENOENT: i32 = 2;
    #[cfg(not(windows))]
    pub(super) const EPROTONOSUPPORT: i32 = 93;
    #[cfg(windows)]
    pub(super) const EPROTONOSUPPORT: i32 = 135;
    #[cfg(not(windows))]
    pub(super) const ECONNREFUSED: i32 = 111;
    #[cfg(windows)]
    pub(super) const ECONNREFUSED: i32 = 107;
    #[cfg(not(windows))]
    pub(super) const ETIMEDOUT: i32 = 110;
    #[cfg(windows)]
    pub(super) const ETIMEDOUT: i32 = 138;
}

/// What a read produced.
pub(crate) enum Read {
    Packet(ff::Packet),
    Eof,
}

impl Input {
    /// Reads the next packet of the video stream, waiting at most `stall`.
    ///
    /// A read the interrupt cut short (deadline, reconnect, close) is discarded even when FFmpeg
    /// returned a packet: on the error FFmpeg flushes what its parser held, a truncated access
    /// unit ("Invalid NAL unit size", "missing picture in access unit"), and no decoder may see
    /// it. The read then ends with the interrupt's reason.
    pub(crate) fn read_video(&mut self, stall: Duration) -> Result<Read> {
        loop {
            let mut pkt = ff::Packet::empty();
            self.irq.arm(stall);
            let r = pkt.read(&mut self.ctx);
            self.irq.disarm();
            if let Some(e) = self.interrupted(stall) {
                if r.is_ok() {
                    log::debug!("discarding a packet of {} bytes that an interrupted read returned", pkt.size());
                }
                return Err(e);
            }
            match r {
                Ok(()) if pkt.stream() == self.video_index => return Ok(Read::Packet(pkt)),
                Ok(()) => continue,
                Err(ff::Error::Eof) => return Ok(Read::Eof),
                Err(e) => return Err(Error::ffmpeg("av_read_frame", e)),
            }
        }
    }

    /// Why the interrupt cut the last read short, if it did.
    fn interrupted(&self, stall: Duration) -> Option<Error> {
        if self.irq.stopping() {
            Some(Error::new(ErrorKind::Closed, "read aborted: camera closing"))
        } else if self.irq.kicked() {
            Some(Error::new(ErrorKind::Io, "read aborted: reconnect requested"))
        } else if self.irq.fired() {
            Some(Error::timeout(format!("stalled: no packet for {} ms", stall.as_millis())))
        } else {
            None
        }
    }

    /// The source's wall clock at timestamp 0 of the video stream, µs since the Unix epoch, once
    /// the source said it, so a picture at `pts_us` was captured at this + `pts_us` on the
    /// camera's clock. FFmpeg's RTSP demuxer sets `start_time_realtime` from the first RTCP sender
    /// report: its NTP time less the report's RTP offset from the stream's first RTP timestamp,
    /// which is where FFmpeg's pts count from (live cameras answer PLAY with `npt=now-` or 0; a
    /// recording served from a later start would add that start to every capture time).
    pub(crate) fn source_clock_us(&self) -> Option<i64> {
        /// 2000-01-01: anything earlier is a sender whose reports do not carry wall-clock time.
        const PLAUSIBLE_US: i64 = 946_684_800_000_000;
        if !self.rtsp {
            return None;
        }
        // SAFETY: reads one field of our open format context.
        let t = unsafe { (*self.ctx.as_ptr()).start_time_realtime };
        (t != ffi::AV_NOPTS_VALUE && t > PLAUSIBLE_US).then_some(t)
    }

    /// Asks the camera for a key frame without a new session: nvcam's patched RTSP demuxer
    /// (patch 0008) sends RTCP PLI and FIR to each video stream's sender before its next read,
    /// and reports each one sent (`rtp_loss::sockets::take_keyframes_asked`). False where it
    /// cannot: not RTSP, or an FFmpeg without the patch (no such option).
    pub(crate) fn request_keyframe(&mut self) -> bool {
        if !self.rtsp {
            return false;
        }
        let n = self.keyframe_requests + 1;
        // SAFETY: our open format context; the option is the RTSP demuxer's (its private data, a
        // child of the context), an int it reads on this thread at its next read.
        let r = unsafe { ffi::av_opt_set_int(self.ctx.as_mut_ptr().cast(), c"nvcam_keyframe_request".as_ptr(), n, ffi::AV_OPT_SEARCH_CHILDREN) };
        if r >= 0 {
            self.keyframe_requests = n;
        }
        r >= 0
    }

    pub(crate) fn stream(&self) -> ff::format::stream::Stream<'_> {
        self.ctx.stream(self.video_index).expect("video stream exists")
    }

    /// Rewinds a file to its start (for looping).
    pub(crate) fn rewind(&mut self) -> Result<()> {
        self.ctx.seek(0, ..).map_err(|e| Error::ffmpeg("av_seek_frame", e))
    }
}
