//! The RTSP demuxer's own sockets and key-frame requests, as nvcam's patched FFmpeg reports them
//! through the format context's `control_message_cb` (patch 0008), on the camera's thread:
//! - the RTP/RTCP UDP sockets of a session, once known, so the camera can read how many
//!   datagrams the kernel dropped at them (a receive buffer that overflowed because nvcam read
//!   too slowly), apart from what the network lost;
//! - each key-frame request (RTCP PLI and FIR) the demuxer sent for the camera.
//!
//! The sockets belong to the demuxer: they are read only on the thread that reads the session,
//! while its format context is open ([`drops`]), and forgotten at the next session's [`start`].

use std::cell::{Cell, RefCell};

/// The patch's `NvcamRtpSockets`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct NvcamRtpSockets {
    pub size: u32,
    pub count: i32,
    pub fds: [i32; 16],
}

/// The patch's `NvcamRtpKeyframeAsked`, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct NvcamRtpKeyframeAsked {
    pub size: u32,
    pub stream_index: i32,
    /// 0 sent; a negative AVERROR: the write failed.
    pub result: i32,
    pub tcp: i32,
}

thread_local! {
    static SOCKETS: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
    /// Key-frame requests sent since the last [`take_keyframes_asked`].
    static ASKED: Cell<u64> = const { Cell::new(0) };
    /// A request could not be sent since the last [`take_keyframes_asked`].
    static SEND_FAILED: Cell<bool> = const { Cell::new(false) };
}

pub(super) fn note_sockets(m: &NvcamRtpSockets) {
    let n = m.count.clamp(0, m.fds.len() as i32) as usize;
    let _ = SOCKETS.try_with(|s| *s.borrow_mut() = m.fds[..n].iter().copied().filter(|&fd| fd >= 0).collect());
}

pub(super) fn note_keyframe_asked(m: &NvcamRtpKeyframeAsked) {
    if m.result >= 0 {
        let _ = ASKED.try_with(|a| a.set(a.get() + 1));
    } else {
        let _ = SEND_FAILED.try_with(|f| f.set(true));
        log::debug!("a key-frame request (RTCP PLI/FIR) for stream {} could not be sent: {}", m.stream_index, ffmpeg_next::Error::from(m.result));
    }
}

/// Forgets an earlier session's sockets (closed with it).
pub(crate) fn start() {
    let _ = SOCKETS.try_with(|s| s.borrow_mut().clear());
    let _ = ASKED.try_with(|a| a.set(0));
    let _ = SEND_FAILED.try_with(|f| f.set(false));
}

/// Key-frame requests the demuxer sent since the last call, and whether one could not be sent
/// (the session then reconnects for key frames without waiting for answers).
pub(crate) fn take_keyframes_asked() -> (u64, bool) {
    (ASKED.try_with(|a| a.replace(0)).unwrap_or(0), SEND_FAILED.try_with(|f| f.replace(false)).unwrap_or(false))
}

/// Datagrams the kernel dropped at this session's UDP sockets since they opened; `None` without
/// UDP sockets (TCP, a file), or where it is not measured (not Linux).
///
/// Must be called on the thread that reads the session, while its input is open (the sockets are
/// its own; after it closes the numbers could name other sockets).
pub(crate) fn drops() -> Option<u64> {
    let fds = SOCKETS.try_with(|s| s.borrow().clone()).ok()?;
    if fds.is_empty() {
        return None;
    }
    fds.iter().map(|&fd| socket_drops(fd)).sum()
}

/// `SO_MEMINFO` (Linux 3.9): the socket's memory counters, `SK_MEMINFO_VARS` u32 of them; the
/// ninth, `SK_MEMINFO_DROPS` (Linux 4.7), counts datagrams dropped for a full receive buffer
/// (the same events as the system-wide `RcvbufErrors`, per socket).
#[cfg(target_os = "linux")]
fn socket_drops(fd: i32) -> Option<u64> {
    const SO_MEMINFO: libc::c_int = 55;
    const SK_MEMINFO_DROPS: usize = 8;
    let mut v = [0u32; 9];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: `v` and `len` are live locals; the kernel writes at most `len` bytes into `v` and
    // the length it wrote into `len`. `fd` is an open socket of the session's demuxer (see
    // `drops`); on anything else the call fails harmlessly.
    let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, SO_MEMINFO, v.as_mut_ptr().cast(), &mut len) };
    (r == 0 && len as usize >= (SK_MEMINFO_DROPS + 1) * 4).then(|| v[SK_MEMINFO_DROPS] as u64)
}

/// Windows: not measured (the counter stays 0).
#[cfg(not(target_os = "linux"))]
fn socket_drops(_fd: i32) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_structs_match_the_patch() {
        assert_eq!(std::mem::size_of::<NvcamRtpSockets>(), 4 + 4 + 16 * 4);
        assert_eq!(std::mem::size_of::<NvcamRtpKeyframeAsked>(), 16);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_udp_receive_buffer_shows_in_the_drop_count() {
        // A socket nobody reads, sent more than its smallest buffer holds: the kernel drops the
        // rest, and the count must say so (or the camera's figure would read 0 for ever).
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        use std::os::fd::AsRawFd;
        let fd = rx.as_raw_fd();
        let small: libc::c_int = 4096;
        // SAFETY: a live socket and a c_int option of its size.
        unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, (&small as *const libc::c_int).cast(), 4) };
        assert_eq!(socket_drops(fd), Some(0));
        for _ in 0..200 {
            tx.send_to(&[0u8; 1200], rx.local_addr().unwrap()).unwrap();
        }
        let m = NvcamRtpSockets { size: 72, count: 1, fds: [fd; 16] };
        note_sockets(&m);
        let d = drops().unwrap();
        assert!(d > 100, "the kernel dropped most of 200 datagrams at a 4 KB buffer, the count says {d}");
        start();
        assert_eq!(drops(), None);
    }
}
