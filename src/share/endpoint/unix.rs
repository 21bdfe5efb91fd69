//! Linux: where a published camera is found, and the connections to it: a `SOCK_SEQPACKET` Unix socket
//! in a folder only the publishing user can enter, with each side checking the other's
//! credentials (`SO_PEERCRED`), and handles to pool memory passed as `SCM_RIGHTS`.
//!
//! The folder is `/run/user/UID/nvcam` where the user has a runtime folder, else `/tmp/nvcam-UID`;
//! it must be the user's own with no access for anyone else, or nothing is published or attached
//! there (someone else could have made it to catch the socket). A name a group may attach to
//! (`GROUP/NAME`) lives in `/tmp/nvcam-gGID` instead: the group's folder, writable by the group
//! only and sticky (no member removes another's socket), owned by a member of the group or root;
//! there both sides admit a process of the same user or a member of the group, by its credentials
//! (`SO_PEERCRED` and `SO_PEERGROUPS`), and nobody else. A name is held by a lock on its
//! `NAME.lock` file for as long as the publisher lives, so a second publisher of the same name
//! is refused, and the socket of a publisher that died (`kill -9`) is replaced by the next one.

use crate::status::*;
use std::ffi::CString;
use std::os::unix::fs::OpenOptionsExt;
use crate::pool::OsHandle;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;

use super::super::{parse_name, Circle};

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn io(what: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{what}: {e}"))
}

fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// Who may attach to a name, resolved: the user's own processes, or a group's too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    User,
    Group(u32),
}

/// The scope and the plain name of a published camera's full name (`NAME` or `GROUP/NAME`).
fn resolve(full: &str) -> Result<(Scope, &str)> {
    let (circle, name) = parse_name(full)?;
    Ok(match circle {
        Circle::User => (Scope::User, name),
        Circle::Group(g) => (Scope::Group(gid_of(g)?), name),
    })
}

/// A group's id, from its name (or its number).
fn gid_of(group: &str) -> Result<u32> {
    if let Ok(n) = group.parse::<u32>() {
        return Ok(n);
    }
    let c = CString::new(group).map_err(|_| Error::arg("a group name with NUL"))?;
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: group is plain data; all zeroes is a valid value.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: a NUL-terminated name, a result struct and a buffer of buf.len() bytes, all live for the call.
    let r = unsafe { libc::getgrnam_r(c.as_ptr(), &mut grp, buf.as_mut_ptr() as *mut libc::c_char, buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return Err(Error::arg(format!("no group '{group}' on this system")));
    }
    Ok(grp.gr_gid)
}

/// Whether this process is a member of group `g` (its effective group or a supplementary one).
fn self_in_group(g: u32) -> bool {
    // SAFETY: getegid has no preconditions.
    if unsafe { libc::getegid() } == g {
        return true;
    }
    let mut gs = vec![0 as libc::gid_t; 4096];
    // SAFETY: a buffer of gs.len() gids.
    let n = unsafe { libc::getgroups(gs.len() as libc::c_int, gs.as_mut_ptr()) };
    n > 0 && gs[..n as usize].contains(&g)
}

/// Whether user `who` is a member of group `g` (its primary group or a listed one).
fn user_in_group(who: u32, g: u32) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    // SAFETY: passwd is plain data; all zeroes is a valid value.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: a result struct and a buffer of buf.len() bytes, live for the call.
    let r = unsafe { libc::getpwuid_r(who, &mut pw, buf.as_mut_ptr() as *mut libc::c_char, buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return false;
    }
    if pw.pw_gid == g {
        return true;
    }
    let mut gs = vec![0 as libc::gid_t; 4096];
    let mut n = gs.len() as libc::c_int;
    // SAFETY: pw_name is the NUL-terminated name getpwuid_r wrote into `buf` (still live); `gs`
    // holds n gids.
    let r = unsafe { libc::getgrouplist(pw.pw_name, pw.pw_gid, gs.as_mut_ptr(), &mut n) };
    r >= 0 && gs[..n.max(0) as usize].contains(&g)
}

/// The sharing folder of a scope, made if missing; refused when it is not what it must be: the
/// user's own private folder, or the group's folder (group `g`, mode 1770, owned by root or a
/// member of the group).
fn folder(scope: Scope, create: bool) -> Result<PathBuf> {
    let me = uid();
    let base = match scope {
        Scope::User => {
            let run = PathBuf::from(format!("/run/user/{me}"));
            match std::fs::metadata(&run) {
                Ok(m) if std::os::unix::fs::MetadataExt::uid(&m) == me && m.is_dir() => run.join("nvcam"),
                _ => PathBuf::from(format!("/tmp/nvcam-{me}")),
            }
        }
        Scope::Group(g) => PathBuf::from(format!("/tmp/nvcam-g{g}")),
    };
    if create {
        match std::fs::DirBuilder::new().mode_private().create(&base) {
            Ok(()) => {
                if let Scope::Group(g) = scope {
                    // Made private first, then given to the group: never open to anyone else
                    // on the way.
                    let c = CString::new(base.as_os_str().as_encoded_bytes()).map_err(|_| Error::internal("folder path with NUL"))?;
                    // SAFETY: a NUL-terminated path; the folder is ours (we just made it).
                    if unsafe { libc::chown(c.as_ptr(), u32::MAX, g) } != 0 || unsafe { libc::chmod(c.as_ptr(), 0o1770) } != 0 {
                        return Err(io(&format!("cannot give the sharing folder {} to group {g}", base.display()), errno()));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(&format!("cannot make the sharing folder {}", base.display()), e)),
        }
    }
    let m = std::fs::symlink_metadata(&base).map_err(|e| io(&format!("sharing folder {}", base.display()), e))?;
    use std::os::unix::fs::MetadataExt;
    let (ok, want) = match scope {
        Scope::User => (m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0, "this user's own private folder".to_string()),
        Scope::Group(g) => (
            m.is_dir() && m.gid() == g && m.mode() & 0o7777 == 0o1770 && (m.uid() == me || m.uid() == 0 || user_in_group(m.uid(), g)),
            format!("group {g}'s sharing folder (group {g}, mode 1770, owned by root or a member)"),
        ),
    };
    if !ok {
        return Err(Error::new(
            ErrorKind::Auth,
            format!(
                "the sharing folder {} is not {want} (owner uid {}, group {}, mode {:o}): nothing is published or attached through it",
                base.display(),
                m.uid(),
                m.gid(),
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(base)
}

trait PrivateDir {
    fn mode_private(&mut self) -> &mut Self;
}
impl PrivateDir for std::fs::DirBuilder {
    fn mode_private(&mut self) -> &mut Self {
        std::os::unix::fs::DirBuilderExt::mode(self, 0o700)
    }
}

fn sockaddr(path: &std::path::Path) -> Result<(libc::sockaddr_un, libc::socklen_t)> {
    let bytes = path.as_os_str().as_encoded_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= a.sun_path.len() {
        return Err(Error::arg(format!("socket path {} is too long", path.display())));
    }
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &s) in a.sun_path.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((a, len as libc::socklen_t))
}

fn seqpacket() -> Result<OwnedFd> {
    // SAFETY: plain socket creation; the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io("socket", errno()));
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Waits up to `timeout` for `fd` to be readable (or hung up); true if it is.
fn readable(fd: RawFd, timeout: Duration) -> Result<bool> {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd, valid for the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = errno();
        if e.kind() == std::io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(io("poll", e));
    }
    Ok(n > 0)
}

/// The other end's process and user, as the kernel recorded them at connect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

impl Peer {
    /// Whether this is a process of the same user as ours.
    pub(crate) fn same_user(&self) -> bool {
        self.uid == uid()
    }

    /// The peer's user, for log lines.
    pub(crate) fn user(&self) -> String {
        format!("uid {}", self.uid)
    }
}

/// Where the socket of the camera published as `full` (`NAME` or `GROUP/NAME`) is.
pub(crate) fn socket_path(full: &str) -> Result<PathBuf> {
    let (scope, name) = resolve(full)?;
    Ok(folder(scope, false)?.join(format!("{name}.sock")))
}

/// `SO_PEERGROUPS` (Linux 4.13): the peer's supplementary groups, as the kernel recorded them at
/// connect. The libc crate does not name it; 59 on every architecture nvcam builds for.
const SO_PEERGROUPS: libc::c_int = 59;

/// A published name: the socket that attached processes connect to, and the lock that holds the
/// name. Dropping it removes the socket.
pub(crate) struct Listener {
    sock: OwnedFd,
    path: PathBuf,
    scope: Scope,
    _lock: std::fs::File,
}

impl Listener {
    pub(crate) fn bind(full: &str) -> Result<Listener> {
        let (scope, name) = resolve(full)?;
        if let Scope::Group(g) = scope {
            if !self_in_group(g) {
                return Err(Error::new(ErrorKind::Auth, format!("this process is not a member of group {g}: it cannot publish to it")));
            }
        }
        let dir = folder(scope, true)?;
        let (file_mode, group) = match scope {
            Scope::User => (0o600, None),
            Scope::Group(g) => (0o660, Some(g)),
        };
        let lock_path = dir.join(format!("{name}.lock"));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(file_mode)
            .open(&lock_path)
            .map_err(|e| io(&format!("cannot open {}", lock_path.display()), e))?;
        if let Some(g) = group {
            // The group's next publisher of this name must be able to open the lock (and finds
            // it held while we live). Not ours to change when another member made it.
            // SAFETY: fchown on a file we opened.
            unsafe { libc::fchown(lock.as_raw_fd(), u32::MAX, g) };
        }
        // SAFETY: flock on an fd we own; the lock is released when it closes (also at a crash).
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::arg(format!("a camera is published as '{name}' already (by another process of this user, or this one)")));
        }
        let path = dir.join(format!("{name}.sock"));
        // A socket left by a publisher that died: the lock says no one serves it.
        let _ = std::fs::remove_file(&path);
        let sock = seqpacket()?;
        let (addr, len) = sockaddr(&path)?;
        // SAFETY: a valid sockaddr_un of `len` bytes.
        if unsafe { libc::bind(sock.as_raw_fd(), &addr as *const _ as *const libc::sockaddr, len) } != 0 {
            return Err(io(&format!("cannot bind {}", path.display()), errno()));
        }
        // The folder already keeps others out; the socket's own mode says the same (connecting
        // needs write permission on it: the group's members get it for a group's name).
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Error::internal("socket path with NUL"))?;
        // SAFETY: a NUL-terminated path to the socket we just bound.
        unsafe {
            if let Some(g) = group {
                libc::chown(c.as_ptr(), u32::MAX, g);
            }
            libc::chmod(c.as_ptr(), file_mode);
        }
        // SAFETY: a bound socket we own.
        if unsafe { libc::listen(sock.as_raw_fd(), 64) } != 0 {
            return Err(io("listen", errno()));
        }
        Ok(Listener { sock, path, scope, _lock: lock })
    }

    /// Whether the process at the other end of `conn` may attach: a process of this user, or a
    /// member of the name's group.
    pub(crate) fn admits(&self, conn: &Conn, peer: &Peer) -> bool {
        peer.same_user() || matches!(self.scope, Scope::Group(g) if conn.peer_in_group(peer, g))
    }

    /// The next connection, waiting up to `timeout`; `None` when none came.
    pub(crate) fn accept(&self, timeout: Duration) -> Result<Option<(Conn, Peer)>> {
        if !readable(self.sock.as_raw_fd(), timeout)? {
            return Ok(None);
        }
        // SAFETY: accept4 on our listening socket; no address wanted.
        let fd = unsafe { libc::accept4(self.sock.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
        if fd < 0 {
            let e = errno();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR | libc::ECONNABORTED) => Ok(None),
                _ => Err(io("accept", e)),
            };
        }
        // SAFETY: a new fd we own.
        let conn = Conn { sock: unsafe { OwnedFd::from_raw_fd(fd) } };
        let peer = conn.peer()?;
        Ok(Some((conn, peer)))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // We hold the name's lock: the socket at the path is ours.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One connection between a publisher and an attached process.
pub(crate) struct Conn {
    sock: OwnedFd,
}

/// What a receive got.
pub(crate) enum Received {
    /// One datagram, and the handle that came with it.
    Message(Vec<u8>, Option<OsHandle>),
    /// Nothing within the timeout.
    Nothing,
    /// The other end closed (or died).
    Closed,
}

impl Conn {
    /// Connects to the camera published as `full` by a process of this user (or, for
    /// `GROUP/NAME`, of a member of the group).
    pub(crate) fn connect(full: &str) -> Result<Conn> {
        let (scope, plain) = resolve(full)?;
        let name = full;
        let dir = folder(scope, false).map_err(|e| match e.kind {
            ErrorKind::Io => Error::new(ErrorKind::Io, format!("no camera is published as '{name}' (no process publishes one there)")),
            _ => e,
        })?;
        let path = dir.join(format!("{plain}.sock"));
        let sock = seqpacket()?;
        let (addr, len) = sockaddr(&path)?;
        // SAFETY: a valid sockaddr_un of `len` bytes.
        if unsafe { libc::connect(sock.as_raw_fd(), &addr as *const _ as *const libc::sockaddr, len) } != 0 {
            let e = errno();
            return Err(match e.raw_os_error() {
                Some(libc::ENOENT | libc::ECONNREFUSED) => Error::new(ErrorKind::Io, format!("no camera is published as '{name}'")),
                Some(libc::EACCES | libc::EPERM) => Error::new(ErrorKind::Auth, format!("the camera published as '{name}' is not this user's to attach")),
                _ => io(&format!("cannot connect to the camera published as '{name}'"), e),
            });
        }
        let conn = Conn { sock };
        let peer = conn.peer()?;
        let admitted = match scope {
            Scope::User => peer.same_user(),
            Scope::Group(g) => peer.same_user() || conn.peer_in_group(&peer, g),
        };
        if !admitted {
            return Err(Error::new(ErrorKind::Auth, format!("the camera published as '{name}' is served by a process of uid {} outside its circle: not attached", peer.uid)));
        }
        Ok(conn)
    }

    /// Whether the process at the other end is a member of group `g`: its group at connect, or
    /// one of its supplementary groups (`SO_PEERGROUPS`; false where the kernel cannot say).
    fn peer_in_group(&self, peer: &Peer, g: u32) -> bool {
        if peer.gid == g {
            return true;
        }
        let mut gs = vec![0 as libc::gid_t; 4096];
        let mut len = (gs.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
        // SAFETY: SO_PEERGROUPS writes at most `len` bytes of gids into `gs`.
        let r = unsafe { libc::getsockopt(self.sock.as_raw_fd(), libc::SOL_SOCKET, SO_PEERGROUPS, gs.as_mut_ptr() as *mut libc::c_void, &mut len) };
        r == 0 && gs[..(len as usize / std::mem::size_of::<libc::gid_t>()).min(gs.len())].contains(&g)
    }

    /// The process at the other end, as the kernel saw it connect.
    pub(crate) fn peer(&self) -> Result<Peer> {
        // SAFETY: ucred is plain data.
        let mut c: libc::ucred = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: SO_PEERCRED writes one ucred of `len` bytes.
        let r = unsafe { libc::getsockopt(self.sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_PEERCRED, &mut c as *mut _ as *mut libc::c_void, &mut len) };
        if r != 0 {
            return Err(io("SO_PEERCRED", errno()));
        }
        Ok(Peer { pid: c.pid, uid: c.uid, gid: c.gid })
    }

    /// Sends one message (with a handle), never waiting: `false` when the other end's queue is
    /// full (a reader that fell behind), an error when the connection is gone.
    pub(crate) fn send(&self, msg: &[u8], fd: Option<&OsHandle>) -> Result<bool> {
        let mut iov = libc::iovec { iov_base: msg.as_ptr() as *mut libc::c_void, iov_len: msg.len() };
        // SAFETY: msghdr is plain data; zeroed is "no name, no control".
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        // SAFETY: CMSG_SPACE is a size computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        let mut control = vec![0u8; space];
        if let Some(fd) = fd {
            h.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = space as _;
            // SAFETY: the control buffer holds one cmsg of one fd (CMSG_SPACE above).
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&h);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd.as_raw_fd());
            }
        }
        // SAFETY: a valid msghdr whose buffers live for the call.
        let n = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &h, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = errno();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) => Ok(false),
                _ => Err(io("send", e)),
            };
        }
        Ok(true)
    }

    /// Receives one message, waiting up to `timeout`. A datagram longer than `max` or with more
    /// than one handle is an error (the handles that came are closed).
    pub(crate) fn recv(&self, timeout: Duration, max: usize) -> Result<Received> {
        if !readable(self.sock.as_raw_fd(), timeout)? {
            return Ok(Received::Nothing);
        }
        let mut buf = vec![0u8; max + 1];
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        // Room for a few handles, so that extra ones arrive (and are closed) instead of staying
        // in the kernel's queue.
        // SAFETY: CMSG_SPACE is a size computation.
        let space = unsafe { libc::CMSG_SPACE((4 * std::mem::size_of::<RawFd>()) as u32) } as usize;
        let mut control = vec![0u8; space];
        // SAFETY: msghdr is plain data.
        let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
        h.msg_iov = &mut iov;
        h.msg_iovlen = 1;
        h.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        h.msg_controllen = space as _;
        // SAFETY: a valid msghdr whose buffers live for the call; received fds are close-on-exec.
        let n = unsafe { libc::recvmsg(self.sock.as_raw_fd(), &mut h, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = errno();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR) => Ok(Received::Nothing),
                Some(libc::ECONNRESET) => Ok(Received::Closed),
                _ => Err(io("receive", e)),
            };
        }
        let mut fds: Vec<OwnedFd> = Vec::new();
        // SAFETY: walking the control messages the kernel wrote into `control` (bounded by
        // msg_controllen); each SCM_RIGHTS payload is whole fds, which we take ownership of.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c) as *const RawFd;
                    let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                    for i in 0..count {
                        fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                    }
                }
                c = libc::CMSG_NXTHDR(&h, c);
            }
        }
        if n == 0 && fds.is_empty() {
            return Ok(Received::Closed);
        }
        if h.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 || n as usize > max {
            return Err(Error::new(ErrorKind::Io, "a message longer than any of the protocol's"));
        }
        if fds.len() > 1 {
            return Err(Error::new(ErrorKind::Io, format!("a message with {} handles (the most is one)", fds.len())));
        }
        buf.truncate(n as usize);
        Ok(Received::Message(buf, fds.pop()))
    }

    /// Whether the process at the other end still runs (not exited, not a zombie).
    pub(crate) fn peer_alive(&self) -> bool {
        let Ok(peer) = self.peer() else { return false };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", peer.pid)) else { return false };
        // The state follows the command name, which is in parentheses and may hold any byte.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        !matches!(state, None | Some('Z') | Some('X') | Some('x'))
    }

    /// Ends the connection both ways now (a thread blocked in a receive on it returns).
    pub(crate) fn shutdown(&self) {
        // SAFETY: shutdown on a socket we own.
        unsafe { libc::shutdown(self.sock.as_raw_fd(), libc::SHUT_RDWR) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::{check_name, NAME_MAX};

    #[test]
    fn names_that_could_leave_the_folder_are_refused() {
        for bad in ["", ".hidden", "../x", "a/b/c", "/x", "a/", ".g/x", "a b", "x\0", &"n".repeat(NAME_MAX + 1), "caméra"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["cam1", "line-3.top_view", &"n".repeat(NAME_MAX), "video/cam1", "44/cam1"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }

    /// A second publisher of a name in use is refused; once the first is gone (its lock with it),
    /// the name is free again, even with the old socket file left behind.
    #[test]
    fn a_name_is_published_once_and_freed_with_its_publisher() {
        let name = format!("unit-{}", std::process::id());
        let a = Listener::bind(&name).unwrap();
        assert!(Listener::bind(&name).is_err());
        let c = Conn::connect(&name).unwrap();
        let (s, peer) = a.accept(Duration::from_secs(2)).unwrap().expect("the connection");
        assert!(peer.same_user());
        assert_eq!(peer.pid as u32, std::process::id());
        assert!(c.send(b"hello", None).unwrap());
        match s.recv(Duration::from_secs(2), 16).unwrap() {
            Received::Message(m, None) => assert_eq!(m, b"hello"),
            _ => panic!("no message"),
        }
        drop(c);
        assert!(matches!(s.recv(Duration::from_secs(2), 16).unwrap(), Received::Closed));
        drop(a);
        let _b = Listener::bind(&name).unwrap();
    }
}
