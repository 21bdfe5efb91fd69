//! One camera, many processes: a camera published by one process and attached by others
//! (`nvcam://NAME`), all of them real processes (`examples/share_peer.rs`), killed with SIGKILL
//! where the test says so (TerminateProcess on Windows). The CPU path; the GPU path's runs are in
//! tests/gpu_share.rs. On Windows (under Wine in the Windows step) the same tests run against the
//! named-pipe endpoint, except those scripts/ci/windows-test.sh skips with its reasons.

mod common;
#[path = "support/rtsp.rs"]
mod rtsp;

use common::*;
use nvcam::*;
use rtsp::{RtspServer, Stream};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn unique(what: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("t-{what}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn publish(cam: u64, name: &str, quota: u32) {
    let n = std::ffi::CString::new(name).unwrap();
    ok(unsafe { nvcam_camera_publish(cam, n.as_ptr(), quota, 0) }).expect("publish");
}

/// Descriptors (handles on Windows) this process has open.
fn fds() -> usize {
    open_handles()
}

/// The publisher keeps every frame an attached process holds, and the pool's slots count them:
/// this many slots are in use beyond the camera's own.
fn in_use(cam: u64) -> u32 {
    stats(cam).pool_slots_in_use
}

/// Eight processes attached to one published RTSP camera: the server sees one session (one
/// SETUP, decoded once), and every frame each process reads is one of the clip's pictures, byte
/// for byte, and the very frame the publisher decoded under that number (zero copy: no process
/// decodes or converts anything).
#[test]
fn eight_processes_read_one_rtsp_session_and_every_frame_is_exact() {
    let _g = serial();
    let clip = clip("share-320x240.mp4", "320x240", 150, "libx264", &["-g", "30", "-bf", "0"]);
    let reference: HashSet<u64> = reference_nv12(&clip, 320, 240).iter().map(|f| fnv(f)).collect();
    let srv = RtspServer::start(Stream::default().codec("h264").clip(&clip).not_shared());
    let name = unique("rtsp8");
    let mut publisher = Peer::start(&["publish", &srv.url(), &name, "--report"]);
    publisher.until("READY");
    let consumers: Vec<Peer> = (0..8).map(|_| Peer::start(&["consume", &name, "40", "--report", "--seconds", "30"])).collect();
    let mut all = Vec::new();
    for mut c in consumers {
        let (ok, lines) = c.finish();
        assert!(ok, "a consumer failed: {lines:?} {}", c.stderr());
        all.push(lines);
    }
    publisher.kill9();
    let published = frames_of(&publisher.lines);
    for (i, lines) in all.iter().enumerate() {
        let got = frames_of(lines);
        assert_eq!(got.len(), 40, "consumer {i}: {lines:?}");
        for (seq, h) in &got {
            assert!(reference.contains(h), "consumer {i}: frame {seq} is not one of the clip's pictures");
            if let Some(p) = published.get(seq) {
                assert_eq!(p, h, "consumer {i}: frame {seq} differs from the publisher's");
            }
        }
        let s = stats_line(lines);
        assert_eq!(s[1], 40, "consumer {i} delivered: {s:?}");
        assert_eq!(s[4], NVCAM_STATE_STREAMING as u64, "consumer {i} state: {s:?}");
        assert!(s[5] > 0, "consumer {i}: the source's own counters reach the attached process: {s:?}");
    }
    let setups = srv.setups();
    assert_eq!(setups.len(), 1, "one RTSP session for nine processes, the server saw SETUPs {setups:?}");
}

/// A process killed with SIGKILL while it holds frames and clones of them: within 1 s the
/// publisher has every slot back, and 100 such kills leave no slot, descriptor, thread or
/// shared-memory segment behind (a leaked hold per crash would starve the camera after a few).
#[test]
fn a_killed_consumers_holds_come_back_within_a_second_100_times() {
    let _g = serial();
    let cam = open("testsrc://160x120@60", &options(0)).expect("open");
    let name = unique("kill");
    publish(cam, &name, 4);
    let f = get_frame(cam, 5000).expect("a frame");
    release(f).unwrap();
    assert!(wait_until(Duration::from_secs(3), || stats(cam).pool_slots_total > 0));
    let (fds0, threads0) = (fds(), threads_named("nvcam-pub-peer"));
    let base = in_use(cam);
    let mut slowest = Duration::ZERO;
    for round in 0..100 {
        let mut c = Peer::start(&["consume", &name, "3", "--hold", "3", "--clones", "2", "--then-hold", "--seconds", "20"]);
        c.until("HOLDING");
        let held = in_use(cam);
        // Its 3 frames are 3 slots; the camera's own newest frame may be one of them.
        assert!(held >= 3, "round {round}: the consumer holds 3 frames, the pool shows {held} in use (base {base})");
        assert_eq!(stats(cam).consumers, 1, "round {round}");
        let t = Instant::now();
        c.kill9();
        let back = wait_until(Duration::from_secs(1), || in_use(cam) <= base + 1 && stats(cam).consumers == 0);
        assert!(back, "round {round}: {} slots still in use 1 s after the kill (base {base}), consumers {}", in_use(cam), stats(cam).consumers);
        slowest = slowest.max(t.elapsed());
    }
    eprintln!("slowest return of a killed process's holds: {slowest:?}");
    assert!(wait_until(Duration::from_secs(2), || threads_named("nvcam-pub-peer") == threads0), "reader threads left behind");
    let fds1 = fds();
    assert!(fds1 <= fds0 + 2, "descriptors: {fds0} before 100 kills, {fds1} after");
    assert_eq!(stats(cam).state, NVCAM_STATE_STREAMING);
    let f = get_frame(cam, 2000).expect("the camera still streams");
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// A process that stops (SIGSTOP: a debugger, a hung host) while it holds frames is cut off once
/// it has been silent for 5 s, and what it held comes back; when it runs again its camera finds
/// the connection gone and attaches anew.
#[test]
fn a_stopped_consumer_is_cut_off_after_its_silence_and_its_holds_come_back() {
    let _g = serial();
    let cam = open("testsrc://160x120@30", &options(0)).expect("open");
    let name = unique("stop");
    publish(cam, &name, 3);
    let f = get_frame(cam, 5000).expect("a frame");
    release(f).unwrap();
    let base = in_use(cam);
    let mut c = Peer::start(&["consume", &name, "3", "--hold", "3", "--then-hold", "--seconds", "30"]);
    c.until("HOLDING");
    assert!(in_use(cam) >= base + 3);
    suspend(&c, true);
    let t = std::time::Instant::now();
    let back = wait_until(Duration::from_secs(9), || in_use(cam) <= base + 1 && stats(cam).consumers == 0);
    let took = t.elapsed();
    suspend(&c, false);
    assert!(back, "a stopped process still holds {} slots after {took:?}", in_use(cam));
    assert!(took >= Duration::from_secs(4), "cut off after {took:?}, before its 5 s of silence");
    c.kill9();
    close(cam, 5000).unwrap();
}

/// A published stream that changes its picture size: the new pool reaches the attached camera
/// before its first frame, and a frame of the old size held across the change keeps its pixels
/// (its pool lives on while any process holds a frame of it).
#[test]
fn a_size_change_sends_the_new_pool_and_the_old_one_lives_while_held() {
    let _g = serial();
    let cam = open(size_change_clip().to_str().unwrap(), &options(NVCAM_OPEN_LOOP)).expect("open");
    let name = unique("resize");
    publish(cam, &name, 3);
    let att = open(&format!("nvcam://{name}"), &options(0)).expect("attach");
    let mut held = None;
    let mut sizes = HashSet::new();
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(15) && sizes.len() < 2 {
        let Ok(f) = get_frame(att, 2000) else { continue };
        let i = info(f).unwrap();
        sizes.insert((i.width, i.height));
        if held.is_none() && i.width == 96 {
            held = Some((f, pixels(f).unwrap()));
        } else {
            release(f).unwrap();
        }
    }
    assert_eq!(sizes, HashSet::from([(96, 64), (160, 64)]), "both sizes reach the attached camera");
    let (f, before) = held.expect("a 96x64 frame held");
    assert_eq!(pixels(f).unwrap(), before, "a frame of the old size keeps its pixels across the change");
    release(f).unwrap();
    close(att, 5000).unwrap();
    close(cam, 5000).unwrap();
}

/// The publisher killed with SIGKILL: frames an attached process holds keep their pixels, its
/// camera says RECONNECTING, and a new publisher of the name has it streaming within 1 s.
#[test]
fn a_killed_publishers_frames_stay_readable_and_a_new_publisher_is_found_within_a_second() {
    let _g = serial();
    let name = unique("pubkill");
    let mut publisher = Peer::start(&["publish", "testsrc://320x240@30", &name]);
    publisher.until("READY");
    let cam = open(&format!("nvcam://{name}"), &options(0)).expect("attach");
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_E_UNSUPPORTED, "an attached camera has no packets to record");
    let held: Vec<u64> = (0..2).map(|_| get_frame(cam, 5000).expect("a frame")).collect();
    let before: Vec<Vec<u8>> = held.iter().map(|&f| pixels(f).unwrap()).collect();
    publisher.kill9();
    assert!(
        wait_until(Duration::from_secs(1), || stats(cam).state == NVCAM_STATE_RECONNECTING),
        "state {} a second after the publisher died",
        stats(cam).state
    );
    std::thread::sleep(Duration::from_millis(300));
    for (i, &f) in held.iter().enumerate() {
        assert_eq!(pixels(f).unwrap(), before[i], "held frame {i} changed after its publisher died");
    }
    let mut again = Peer::start(&["publish", "testsrc://320x240@30", &name]);
    again.until("READY");
    let t = Instant::now();
    let f = get_frame(cam, 3000).expect("a frame from the new publisher");
    let took = t.elapsed();
    assert!(took <= Duration::from_secs(1), "first frame {took:?} after the new publisher was ready");
    assert_eq!(stats(cam).state, NVCAM_STATE_STREAMING);
    release(f).unwrap();
    for f in held {
        release(f).unwrap();
    }
    close(cam, 5000).unwrap();
}

/// A process that never releases what it takes holds its quota and then misses frames (counted
/// on its side), while the publisher's own host and another attached process keep the camera's
/// rate.
#[test]
fn a_consumer_that_never_releases_slows_no_one_else() {
    let _g = serial();
    let cam = open("testsrc://320x240@30", &options(0)).expect("open");
    let name = unique("hog");
    publish(cam, &name, 3);
    let mut hog = Peer::start(&["consume", &name, "100000", "--never-release", "--seconds", "6"]);
    let mut fair = Peer::start(&["consume", &name, "100000", "--report", "--seconds", "5"]);
    // The publisher's own host: every frame, for 4 s, from when both are attached.
    assert!(wait_until(Duration::from_secs(5), || stats(cam).consumers == 2), "both attach");
    let (t, mut own) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(4) {
        if let Ok(f) = get_frame(cam, 500) {
            own += 1;
            release(f).unwrap();
        }
    }
    let (ok_f, fair_lines) = fair.finish();
    let (ok_h, hog_lines) = hog.finish();
    assert!(ok_f && ok_h, "{fair_lines:?} {hog_lines:?}");
    assert!(own >= 100, "the publisher's host got {own} frames in 4 s at 30 fps");
    let fair_frames = frames_of(&fair_lines);
    let seqs: Vec<u64> = fair_frames.keys().copied().collect();
    let span = seqs.last().unwrap() - seqs.first().unwrap() + 1;
    assert!(seqs.len() as u64 * 100 >= span * 90, "the fair consumer got {} of {span} frames", seqs.len());
    let h = stats_line(&hog_lines);
    assert!(h[0] <= 4, "the hog was offered {} frames, past its quota", h[0]);
    assert!(h[2] >= 100, "the hog's missed frames are counted: {h:?}");
    close(cam, 5000).unwrap();
}

/// Stops (`true`) or resumes a peer process: SIGSTOP/SIGCONT, or all its threads on Windows.
fn suspend(p: &Peer, stop: bool) {
    #[cfg(target_os = "linux")]
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(p.child.id() as i32, if stop { libc::SIGSTOP } else { libc::SIGCONT })
    };
    #[cfg(windows)]
    {
        #[link(name = "ntdll")]
        extern "system" {
            fn NtSuspendProcess(process: *mut std::ffi::c_void) -> i32;
            fn NtResumeProcess(process: *mut std::ffi::c_void) -> i32;
        }
        let h = std::os::windows::io::AsRawHandle::as_raw_handle(&p.child);
        // SAFETY: our own child's process handle, open while `p` lives.
        let status = unsafe { if stop { NtSuspendProcess(h) } else { NtResumeProcess(h) } };
        assert!(status >= 0, "NtSuspendProcess/NtResumeProcess: 0x{status:08x}");
    }
}

/// A raw peer of the protocol: the publisher's endpoint, spoken to by hand.
#[cfg(target_os = "linux")]
mod raw {
    use super::*;
    pub type RawConn = std::os::fd::OwnedFd;

    /// Connects to the socket at `path` (never waiting: a full backlog is no connection).
    pub fn connect_path(path: &std::path::Path) -> Option<RawConn> {
        use std::os::fd::FromRawFd;
        // SAFETY: a new socket, owned below.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
        assert!(fd >= 0);
        // SAFETY: a new fd we own.
        let s = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        a.sun_family = libc::AF_UNIX as _;
        for (d, &b) in a.sun_path.iter_mut().zip(path.as_os_str().as_encoded_bytes()) {
            *d = b as _;
        }
        let len = std::mem::size_of::<libc::sa_family_t>() + path.as_os_str().len() + 1;
        // SAFETY: a valid sockaddr_un.
        let r = unsafe { libc::connect(fd, &a as *const _ as *const libc::sockaddr, len as _) };
        (r == 0).then_some(s)
    }

    /// Connects to the camera this user publishes as `name`.
    pub fn connect(name: &str) -> Option<RawConn> {
        connect_path(&nvcam::fuzz_entry::share_socket(name).expect("socket path"))
    }

    /// Sends one datagram, with a descriptor (of /dev/null) attached if `handle`; never blocks.
    pub fn send(s: &RawConn, b: &[u8], handle: bool) {
        use std::os::fd::AsRawFd;
        static DEVNULL: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
        let fd = handle.then(|| DEVNULL.get_or_init(|| std::fs::File::open("/dev/null").unwrap()).as_raw_fd());
        let mut iov = libc::iovec { iov_base: b.as_ptr() as *mut _, iov_len: b.len() };
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        let space = unsafe { libc::CMSG_SPACE(4) } as usize;
        let mut control = vec![0u8; space];
        if let Some(fd) = fd {
            h.msg_control = control.as_mut_ptr() as *mut _;
            h.msg_controllen = space as _;
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&h);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(4) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut i32, fd);
            }
        }
        unsafe { libc::sendmsg(s.as_raw_fd(), &h, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    }

    /// Whether the publisher answered on `s` within `wait` (a welcome), or closed it.
    pub fn answered(s: &RawConn, wait: Duration) -> Option<bool> {
        use std::os::fd::AsRawFd;
        let mut p = libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        if unsafe { libc::poll(&mut p, 1, wait.as_millis() as i32) } <= 0 {
            return None;
        }
        let mut b = [0u8; 512];
        let n = unsafe { libc::recv(s.as_raw_fd(), b.as_mut_ptr() as *mut _, b.len(), libc::MSG_DONTWAIT) };
        Some(n > 0)
    }
}

/// A raw peer of the protocol: the publisher's pipe, spoken to by hand. Each pipe message is the
/// endpoint's 8-byte header (a handle's value, 0 for none) and the protocol's bytes.
#[cfg(windows)]
mod raw {
    use std::ffi::c_void;
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    pub type RawConn = OwnedHandle;

    #[link(name = "kernel32")]
    extern "system" {
        fn CreateFileW(name: *const u16, access: u32, share: u32, sa: *const c_void, disposition: u32, flags: u32, template: *mut c_void) -> *mut c_void;
        fn SetNamedPipeHandleState(pipe: *mut c_void, mode: *const u32, max_collection: *const u32, timeout: *const u32) -> i32;
        fn WriteFile(h: *mut c_void, buf: *const c_void, len: u32, written: *mut u32, ov: *mut c_void) -> i32;
    }

    /// Connects to the camera this user publishes as `name` (synchronous I/O: the messages here
    /// are far smaller than the pipe's buffer, so a write never waits for the publisher).
    pub fn connect(name: &str) -> Option<RawConn> {
        let path: Vec<u16> = nvcam::fuzz_entry::share_pipe(name).expect("pipe name").encode_utf16().chain([0]).collect();
        // SAFETY: a NUL-terminated name; GENERIC_READ | GENERIC_WRITE, OPEN_EXISTING.
        let h = unsafe { CreateFileW(path.as_ptr(), 0x8000_0000 | 0x4000_0000, 0, std::ptr::null(), 3, 0, std::ptr::null_mut()) };
        if h as isize == -1 {
            return None;
        }
        // SAFETY: a new handle we own.
        let h = unsafe { OwnedHandle::from_raw_handle(h) };
        // SAFETY: our pipe handle; PIPE_READMODE_MESSAGE.
        unsafe { SetNamedPipeHandleState(h.as_raw_handle(), &2, std::ptr::null(), std::ptr::null()) };
        Some(h)
    }

    /// Sends one message, with a made-up handle value in its header if `handle`.
    pub fn send(s: &RawConn, b: &[u8], handle: bool) {
        let mut m = if handle { 0x1234u64 } else { 0 }.to_le_bytes().to_vec();
        m.extend_from_slice(b);
        let mut n = 0u32;
        // SAFETY: a buffer of m.len() bytes; synchronous.
        unsafe { WriteFile(s.as_raw_handle(), m.as_ptr() as *const c_void, m.len() as u32, &mut n, std::ptr::null_mut()) };
    }
}

/// A process of another user cannot attach: not through the name (the user's sharing folder
/// keeps it out), and not by connecting to the socket itself (the publisher checks the peer's
/// credentials and closes without a welcome). Run as root, the test plays the other user.
#[test]
fn another_users_process_cannot_attach_either_way() {
    #[cfg(not(target_os = "linux"))]
    panic!("runs processes as another uid (Linux); Wine runs every process as one user");
    #[cfg(target_os = "linux")]
    another_user_linux();
}

#[cfg(target_os = "linux")]
fn another_user_linux() {
    let _g = serial();
    // SAFETY: getuid has no preconditions.
    assert_eq!(unsafe { libc::getuid() }, 0, "this test runs processes as another user (uid 65534): it must run as root, as CI does");
    let cam = open("testsrc://160x120@30", &options(0)).expect("open");
    let name = unique("uid");
    publish(cam, &name, 0);
    let mut other = Peer::start_as(&["consume", &name, "1", "--seconds", "5"], Some(65534));
    let (ok, lines) = other.finish();
    let err = other.stderr();
    assert!(!ok, "a process of uid 65534 attached to root's camera: {lines:?}");
    assert!(err.contains("NVCAM_E_AUTH") || err.contains("-8"), "refused with a named error: {err}");
    assert_eq!(stats(cam).consumers, 0);
    close(cam, 5000).unwrap();

    // The other way: uid 65534 publishes; root connects to its socket directly.
    let name = unique("uid2");
    let mut publisher = Peer::start_as(&["publish", "testsrc://160x120@30", &name], Some(65534));
    publisher.until("READY");
    let path = std::path::PathBuf::from(format!("/tmp/nvcam-65534/{name}.sock"));
    let s = raw::connect_path(&path).expect("root reaches the socket");
    let hello = nvcam::fuzz_entry::share_samples().remove(0);
    raw::send(&s, &hello, false);
    assert_eq!(raw::answered(&s, Duration::from_secs(3)), Some(false), "the publisher closes on a process of another user without a welcome");
}

/// A name that names a group (`GROUP/NAME`) admits the group's members and no one else: a member
/// of another user attaches and gets frames, a process outside the group is kept out by the
/// group's folder, and a process that reaches the socket anyway (root) is closed on without a
/// welcome, because the publisher checks the peer's groups, not only the folder. Run as root,
/// the test plays three users; the group is a number no account has (so the members are made
/// only by this test), and its folder is made the way an administrator would (root's, 1770).
#[cfg(target_os = "linux")]
#[test]
fn a_group_in_the_name_admits_its_members_and_no_one_else() {
    let _g = serial();
    // SAFETY: getuid has no preconditions.
    assert_eq!(unsafe { libc::getuid() }, 0, "this test runs processes as other users: it must run as root, as CI does");
    let gid = 47_113u32;
    let dir = std::path::PathBuf::from(format!("/tmp/nvcam-g{gid}"));
    let _ = std::fs::create_dir(&dir);
    std::os::unix::fs::chown(&dir, Some(0), Some(gid)).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o1770)).unwrap();
    let name = format!("{gid}/{}", unique("grp"));
    let mut publisher = Peer::start_in(&["publish", "testsrc://160x120@30", &name], Some(65534), &[gid]);
    publisher.until("READY");

    let mut member = Peer::start_in(&["consume", &name, "10", "--seconds", "10", "--report"], Some(1), &[gid]);
    let (ok, lines) = member.finish();
    assert!(ok, "a member of the group (uid 1) could not attach: {lines:?} {}", member.stderr());
    assert_eq!(frames_of(&lines).len(), 10, "the member got its 10 frames: {lines:?}");

    let mut outsider = Peer::start_in(&["consume", &name, "1", "--seconds", "5"], Some(2), &[]);
    let (ok, lines) = outsider.finish();
    let err = outsider.stderr();
    assert!(!ok, "a process outside the group (uid 2) attached: {lines:?}");
    assert!(err.contains("NVCAM_E_AUTH") || err.contains("-8"), "refused with a named error: {err}");

    let s = raw::connect_path(&dir.join(format!("{}.sock", name.split_once('/').unwrap().1))).expect("root reaches the socket");
    let hello = nvcam::fuzz_entry::share_samples().remove(0);
    raw::send(&s, &hello, false);
    assert_eq!(raw::answered(&s, Duration::from_secs(3)), Some(false), "the publisher closes on a process outside its group without a welcome");
}

/// Windows has no group circle: a name with a group is refused by name, never published as if
/// it were the user's own (which would admit fewer than the host meant, or, worse, read as more).
#[cfg(windows)]
#[test]
fn a_group_in_the_name_is_refused_on_windows() {
    let _g = serial();
    let cam = open("testsrc://160x120@30", &options(0)).expect("open");
    let n = std::ffi::CString::new(format!("staff/{}", unique("grp"))).unwrap();
    assert_eq!(unsafe { nvcam_camera_publish(cam, n.as_ptr(), 0, 0) }, NVCAM_E_UNSUPPORTED);
    assert_eq!(stats(cam).consumers, 0);
    close(cam, 5000).unwrap();
}

/// Hundreds of connections sending garbage (mutated and cut messages, releases of frames they
/// never held, handles attached, floods) end only their own connections: the camera, its own
/// host and a well-behaved attached process stream on, and nothing is left held.
#[test]
fn garbage_from_attached_processes_ends_only_their_connections() {
    let _g = serial();
    let cam = open("testsrc://320x240@30", &options(0)).expect("open");
    let name = unique("fuzz");
    publish(cam, &name, 3);
    let f = get_frame(cam, 5000).expect("a frame");
    release(f).unwrap();
    let mut good = Peer::start(&["consume", &name, "100000", "--seconds", "6"]);
    let samples = nvcam::fuzz_entry::share_samples();
    let stop = Arc::new(AtomicBool::new(false));
    let own = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Acquire) {
                if let Ok(f) = get_frame(cam, 500) {
                    n += 1;
                    release(f).unwrap();
                }
            }
            n
        })
    };
    let mut rng = Rng(0x5eed_5a7e);
    let (t, mut conns) = (Instant::now(), 0u32);
    while t.elapsed() < Duration::from_secs(4) {
        let Some(s) = raw::connect(&name) else { continue };
        conns += 1;
        if rng.chance(2) {
            raw::send(&s, &samples[0], false); // a proper hello first, to reach the reader
        }
        for _ in 0..rng.below(20) {
            let mut m = rng.pick(&samples).clone();
            match rng.below(6) {
                0 => {
                    let i = rng.below(m.len() as u64) as usize;
                    m[i] ^= 1 << rng.below(8);
                }
                1 => m.truncate(rng.below(m.len() as u64) as usize),
                2 => m.extend((0..rng.below(600)).map(|_| rng.next() as u8)),
                3 => {
                    // A release of some hold: a made-up one, or a frame handle of this process.
                    let hold = if rng.chance(2) { rng.next() } else { f };
                    let mut r = samples[5].clone();
                    let at = r.len() - 8;
                    r[at..].copy_from_slice(&hold.to_le_bytes());
                    m = r;
                }
                _ => {}
            }
            raw::send(&s, &m, rng.chance(4));
        }
        if rng.chance(3) {
            std::thread::sleep(Duration::from_millis(rng.below(20)));
        }
    }
    let (ok, lines) = good.finish();
    stop.store(true, Ordering::Release);
    let own = own.join().unwrap();
    assert!(ok, "the well-behaved process failed: {lines:?}");
    let s = stats_line(&lines);
    assert!(s[1] >= 150, "the well-behaved process got {} frames in 6 s beside {conns} garbage connections", s[1]);
    assert!(own >= 150, "the publisher's host got {own} frames beside {conns} garbage connections");
    assert_eq!(stats(cam).state, NVCAM_STATE_STREAMING);
    assert!(
        wait_until(Duration::from_secs(3), || stats(cam).consumers == 0 && in_use(cam) <= 1),
        "left held: {} slots, {} consumers",
        in_use(cam),
        stats(cam).consumers
    );
    eprintln!("{conns} garbage connections");
    close(cam, 5000).unwrap();
}
