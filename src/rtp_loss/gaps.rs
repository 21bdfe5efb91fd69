//! Lost RTP packets, as nvcam's patched FFmpeg reports them (scripts/build/ffmpeg-patches): the RTP
//! demuxer calls the format context's `control_message_cb` before it parses the first packet
//! after a gap in a stream's sequence numbers, whatever carries RTP (UDP, multicast, RTP inside
//! the RTSP TCP connection, the HTTP tunnel, TLS), with the timestamps of the packets on both
//! sides. Stock FFmpeg 5.1 says nothing of gaps inside a TCP connection, and on UDP only in a
//! log line.
//!
//! FFmpeg calls back on the thread that reads the stream, which is the camera's worker; the
//! reports wait in that thread's queue until the worker takes them after each read.

use super::sockets;
use ffmpeg_next::ffi;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::{c_int, c_void};

/// `MKBETAG(a, b, c, d)`, as FFmpeg builds message types.
const fn tag(t: &[u8; 4]) -> c_int {
    ((t[3] as u32) | (t[2] as u32) << 8 | (t[1] as u32) << 16 | (t[0] as u32) << 24) as c_int
}

/// A stream's RTP parser opened and will report its gaps.
const MSG_OPEN: c_int = tag(b"NVRO");
/// A gap; the data is an [`NvcamRtpGap`].
const MSG_GAP: c_int = tag(b"NVRG");
/// The session's UDP sockets (`sockets::NvcamRtpSockets`).
const MSG_SOCKETS: c_int = tag(b"NVRS");
/// A key-frame request was sent (`sockets::NvcamRtpKeyframeAsked`).
const MSG_KEYFRAME_ASKED: c_int = tag(b"NVRK");
/// The pts of a stream's first packet parsed (an [`NvcamRtpFirst`]).
const MSG_FIRST: c_int = tag(b"NVRF");

/// What a message that is not ours gets back: `AVERROR(ENOSYS)`, "not supported" (errno numbers
/// are the platform's: Linux 38, Windows' C runtime 40).
const NOT_OURS: c_int = ffi::AVERROR(if cfg!(windows) { 40 } else { 38 });

/// The patch's `NvcamRtpGap`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct NvcamRtpGap {
    pub size: u32,
    pub stream_index: i32,
    pub pts_before: i64,
    pub pts_after: i64,
    pub ts_before: u32,
    pub ts_after: u32,
    pub lost: u32,
    pub seq_before: u16,
    pub seq_after: u16,
    pub marker_before: u8,
    pub payload_after_len: u8,
    pub payload_after: [u8; 6],
}

/// Patch 0010's `NvcamRtpFirst`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct NvcamRtpFirst {
    size: u32,
    stream_index: i32,
    pts: i64,
}

/// One gap in a stream's RTP sequence numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtpGap {
    pub stream: i32,
    /// Packets missing.
    pub lost: u32,
    /// The pts (the stream's time base) of the packets before and after the gap; `None` before
    /// the demuxer had stamped a packet.
    pub pts_before: Option<i64>,
    pub pts_after: Option<i64>,
    /// The packet before the gap ended a picture (RTP marker bit).
    pub marker_before: bool,
    /// The first payload bytes of the packet after the gap (how many are valid, then the bytes).
    pub payload_after: (usize, [u8; 6]),
}

impl RtpGap {
    pub(crate) fn payload_after(&self) -> &[u8] {
        &self.payload_after.1[..self.payload_after.0]
    }
}

/// Reports kept between two reads; more in one read is a burst the camera treats as one loss
/// of unknown place (see [`take`]).
const KEPT: usize = 256;

thread_local! {
    static GAPS: RefCell<VecDeque<RtpGap>> = const { RefCell::new(VecDeque::new()) };
    /// Packets lost in gaps that did not fit in `GAPS`.
    static OVERFLOW: Cell<u64> = const { Cell::new(0) };
    /// An RTP parser opened on this thread since [`start`], and reports its gaps.
    static REPORTING: Cell<bool> = const { Cell::new(false) };
    /// The pts of each stream's first packet parsed since [`start`]: (stream, pts), the last
    /// report of a stream kept (a few streams at most: video, audio, metadata).
    static FIRST: RefCell<Vec<(i32, i64)>> = const { RefCell::new(Vec::new()) };
}

/// # Safety
/// FFmpeg's `av_format_control_message` contract: `data` null or `data_size` readable bytes.
unsafe extern "C" fn on_message(_s: *mut ffi::AVFormatContext, ty: c_int, data: *mut c_void, data_size: usize) -> c_int {
    let r = std::panic::catch_unwind(|| match ty {
        MSG_OPEN => {
            let _ = REPORTING.try_with(|r| r.set(true));
            0
        }
        MSG_GAP if !data.is_null() && data_size >= std::mem::size_of::<NvcamRtpGap>() => {
            // SAFETY: the patch passes its NvcamRtpGap and its size, checked just above.
            let g = unsafe { data.cast::<NvcamRtpGap>().read_unaligned() };
            push(gap_of(&g));
            0
        }
        MSG_FIRST if !data.is_null() && data_size >= std::mem::size_of::<NvcamRtpFirst>() => {
            // SAFETY: the patch passes its NvcamRtpFirst and its size, checked just above.
            let f = unsafe { data.cast::<NvcamRtpFirst>().read_unaligned() };
            note_first(f.stream_index, f.pts);
            0
        }
        MSG_SOCKETS if !data.is_null() && data_size >= std::mem::size_of::<sockets::NvcamRtpSockets>() => {
            // SAFETY: the patch passes its NvcamRtpSockets and its size, checked just above.
            sockets::note_sockets(&unsafe { data.cast::<sockets::NvcamRtpSockets>().read_unaligned() });
            0
        }
        MSG_KEYFRAME_ASKED if !data.is_null() && data_size >= std::mem::size_of::<sockets::NvcamRtpKeyframeAsked>() => {
            // SAFETY: the patch passes its NvcamRtpKeyframeAsked and its size, checked just above.
            sockets::note_keyframe_asked(&unsafe { data.cast::<sockets::NvcamRtpKeyframeAsked>().read_unaligned() });
            0
        }
        // Devices' messages (avdevice) are not ours to answer.
        _ => NOT_OURS,
    });
    r.unwrap_or(0)
}

/// Hands a gap report to this thread's queue the way the patched demuxer does, through the
/// control-message callback (the fuzzers, `test-hooks`).
#[cfg(feature = "test-hooks")]
pub(crate) fn deliver(g: &NvcamRtpGap) {
    let mut g = *g;
    // SAFETY: `g` is a whole NvcamRtpGap on this stack, alive for the call; the callback reads
    // `size_of` bytes of it and ignores the format context.
    unsafe { on_message(std::ptr::null_mut(), MSG_GAP, (&mut g as *mut NvcamRtpGap).cast(), std::mem::size_of::<NvcamRtpGap>()) };
}

fn gap_of(g: &NvcamRtpGap) -> RtpGap {
    let pts = |p: i64| (p != ffi::AV_NOPTS_VALUE).then_some(p);
    RtpGap {
        stream: g.stream_index,
        lost: g.lost,
        pts_before: pts(g.pts_before),
        pts_after: pts(g.pts_after),
        marker_before: g.marker_before != 0,
        payload_after: ((g.payload_after_len as usize).min(6), g.payload_after),
    }
}

fn note_first(stream: i32, pts: i64) {
    let _ = FIRST.try_with(|f| {
        let mut f = f.borrow_mut();
        f.retain(|&(s, _)| s != stream);
        if f.len() < 8 {
            f.push((stream, pts));
        }
    });
}

/// The pts the demuxer gave the first packet of `stream` it parsed since [`start`] (the stream's
/// time base); `None` from an FFmpeg without nvcam's patch 0010, or before any packet.
pub(crate) fn first_pts(stream: i32) -> Option<i64> {
    FIRST.try_with(|f| f.borrow().iter().find(|&&(s, _)| s == stream).map(|&(_, p)| p)).ok().flatten().filter(|&p| p != ffi::AV_NOPTS_VALUE)
}

fn push(g: RtpGap) {
    let full = GAPS
        .try_with(|q| {
            let mut q = q.borrow_mut();
            if q.len() >= KEPT {
                return true;
            }
            q.push_back(g);
            false
        })
        .unwrap_or(true);
    if full {
        let _ = OVERFLOW.try_with(|o| o.set(o.get().saturating_add(g.lost as u64)));
    }
}

/// Asks `ctx`, not yet opened, to report its RTP gaps to this thread.
///
/// # Safety
/// `ctx` is a live format context that `avformat_open_input` has not been called on yet.
pub(crate) unsafe fn watch(ctx: *mut ffi::AVFormatContext) {
    // SAFETY: per the contract; the callback is a plain function that lives as long as the
    // process (the library is pinned).
    unsafe { (*ctx).control_message_cb = Some(on_message) };
}

/// Forgets what an earlier connection on this thread reported.
pub(crate) fn start() {
    sockets::start();
    let _ = GAPS.try_with(|q| q.borrow_mut().clear());
    let _ = OVERFLOW.try_with(|o| o.set(0));
    let _ = REPORTING.try_with(|r| r.set(false));
    let _ = FIRST.try_with(|f| f.borrow_mut().clear());
}

/// Whether the FFmpeg that opened this thread's stream reports gaps (nvcam's patched build).
pub(crate) fn reporting() -> bool {
    REPORTING.try_with(|r| r.get()).unwrap_or(false)
}

/// Moves the gaps reported since the last call into `out`; returns the packets lost in gaps
/// whose reports did not fit (0 normally).
pub(crate) fn take(out: &mut Vec<RtpGap>) -> u64 {
    let _ = GAPS.try_with(|q| out.extend(q.borrow_mut().drain(..)));
    OVERFLOW.try_with(|o| o.replace(0)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_struct_matches_the_patch() {
        // The patch's NvcamRtpGap: 2 x 4 + 2 x 8 + 3 x 4 + 2 x 2 + 2 + 6 bytes.
        assert_eq!(std::mem::size_of::<NvcamRtpGap>(), 48);
        assert_eq!(std::mem::offset_of!(NvcamRtpGap, pts_before), 8);
        assert_eq!(std::mem::offset_of!(NvcamRtpGap, lost), 32);
        assert_eq!(std::mem::offset_of!(NvcamRtpGap, marker_before), 40);
        assert_eq!(std::mem::offset_of!(NvcamRtpGap, payload_after), 42);
        let patch = include_str!("../../scripts/build/ffmpeg-patches/0001-rtpdec-report-sequence-gaps.patch");
        assert!(patch.contains("MKBETAG('N','V','R','G')") && patch.contains("MKBETAG('N','V','R','O')"));
        assert_eq!(MSG_GAP, i32::from_be_bytes(*b"NVRG"));
        // Patch 0010's NvcamRtpFirst: 2 x 4 + 8 bytes.
        assert_eq!(std::mem::size_of::<NvcamRtpFirst>(), 16);
        assert_eq!(std::mem::offset_of!(NvcamRtpFirst, pts), 8);
        let first = include_str!("../../scripts/build/ffmpeg-patches/0010-rtpdec-report-the-first-packets-pts.patch");
        assert!(first.contains("MKBETAG('N','V','R','F')") && first.contains("int64_t  pts;"));
    }

    #[test]
    fn the_first_packets_pts_is_kept_per_stream_until_the_next_start() {
        start();
        assert_eq!(first_pts(0), None);
        let mut f = NvcamRtpFirst { size: 16, stream_index: 0, pts: 456_093 };
        // SAFETY: a live struct of the size given.
        unsafe {
            assert_eq!(on_message(std::ptr::null_mut(), MSG_FIRST, (&mut f as *mut NvcamRtpFirst).cast(), 16), 0);
            f.stream_index = 1;
            f.pts = 7;
            assert_eq!(on_message(std::ptr::null_mut(), MSG_FIRST, (&mut f as *mut NvcamRtpFirst).cast(), 16), 0);
            // Too short: ignored.
            assert_eq!(on_message(std::ptr::null_mut(), MSG_FIRST, (&mut f as *mut NvcamRtpFirst).cast(), 12), NOT_OURS);
        }
        assert_eq!((first_pts(0), first_pts(1), first_pts(2)), (Some(456_093), Some(7), None));
        start();
        assert_eq!(first_pts(0), None);
    }

    #[test]
    fn a_gap_report_reaches_this_threads_queue_and_unknown_messages_are_refused() {
        start();
        let mut g = NvcamRtpGap {
            size: 48,
            stream_index: 0,
            pts_before: 9000,
            pts_after: ffi::AV_NOPTS_VALUE,
            ts_before: 1,
            ts_after: 2,
            lost: 3,
            seq_before: 10,
            seq_after: 14,
            marker_before: 1,
            payload_after_len: 2,
            payload_after: [0x7c, 0x85, 0, 0, 0, 0],
        };
        // SAFETY: a live struct of the size given.
        unsafe {
            assert_eq!(on_message(std::ptr::null_mut(), MSG_OPEN, std::ptr::null_mut(), 0), 0);
            assert_eq!(on_message(std::ptr::null_mut(), MSG_GAP, (&mut g as *mut NvcamRtpGap).cast(), 48), 0);
            assert_ne!(on_message(std::ptr::null_mut(), tag(b"PAUS"), std::ptr::null_mut(), 0), 0);
            // Too short for a report: ignored, not read past its end.
            assert_eq!(on_message(std::ptr::null_mut(), MSG_GAP, (&mut g as *mut NvcamRtpGap).cast(), 40), NOT_OURS);
        }
        assert!(reporting());
        let mut out = Vec::new();
        assert_eq!(take(&mut out), 0);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].lost, out[0].pts_before, out[0].pts_after, out[0].marker_before), (3, Some(9000), None, true));
        assert_eq!(out[0].payload_after(), &[0x7c, 0x85]);
        start();
        assert!(!reporting());
    }
}
