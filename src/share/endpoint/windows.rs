//! Windows: where a published camera is found, and the connections to it: a message-mode named
//! pipe `\\.\pipe\nvcam-<user>-NAME` (`<user>`: a hash of the user's SID, so two users' names
//! never meet), reachable from this machine only.
//!
//! - Who may connect is [`security`]'s: the pipe's name, its DACL (the publishing user's SID and
//!   no one else) and the check of a process's user. This file finds the process at the other end
//!   (the server's pid from `GetNamedPipeServerProcessId`, the client's from
//!   `GetNamedPipeClientProcessId`) and has both sides check it, as `SO_PEERCRED` is checked on
//!   Linux. The client connects with identification-level impersonation only.
//! - The name is held by its first pipe instance (`FILE_FLAG_FIRST_PIPE_INSTANCE`): a second
//!   publisher of it is refused, and the name is free again once the publisher's instances are
//!   gone (the system closes them when it dies). The publisher keeps one instance listening at
//!   all times, so no other process can take the name while it is published.
//! - Handles travel one way: the publisher duplicates a pool's handle into the attached process
//!   (which it opened with `PROCESS_DUP_HANDLE`) and sends the value in the message's header. The
//!   other direction would have the attached process open the publisher with
//!   `PROCESS_DUP_HANDLE`, which is the power to take any handle the publisher has (its writable
//!   pools, its sockets to the camera): the attached process is the less trusted side, and this
//!   way it gains one handle that can only map a pool for reading. A handle arriving from an
//!   attached process is refused (its value means nothing here).
//! - All I/O is overlapped: a send never waits (a write the pipe's buffer cannot take at once is
//!   cancelled and reported as a full queue, as a full socket buffer is on Linux; nothing is left
//!   in flight), and a receive waits at most its timeout.
//!
//! Each message on the pipe is an 8-byte header (the handle's value in the receiver, 0 for none,
//! little-endian) and the protocol's bytes.

mod security;

pub(crate) use security::pipe_name;

use crate::pool::OsHandle;
use crate::share::win32::*;
use crate::status::*;
use parking_lot::Mutex;
use security::{same_user, Security};
use std::ffi::c_void;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::{Duration, Instant};

/// Bytes before the protocol's in each pipe message: the handle's value.
const HEADER: usize = 8;
/// The pipe's buffers each way: room for hundreds of the protocol's messages.
const PIPE_BUFFER: u32 = 64 * 1024;

fn code(e: u32) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

fn last() -> u32 {
    // SAFETY: reads the calling thread's last-error value.
    unsafe { GetLastError() }
}

fn wait_ms(t: Duration) -> u32 {
    // Below INFINITE (u32::MAX): every wait here ends.
    t.as_millis().min(u32::MAX as u128 - 1) as u32
}

/// One overlapped operation's state: its OVERLAPPED (boxed: the system writes it until the
/// operation completes), its event and its buffer.
struct Io {
    ov: Box<OVERLAPPED>,
    event: OwnedHandle,
    buf: Vec<u8>,
    pending: bool,
}

// SAFETY: the OVERLAPPED's raw event handle is owned by `event`; the state moves between threads
// only under its connection's mutex.
unsafe impl Send for Io {}

impl Io {
    fn new() -> Result<Io> {
        // SAFETY: an unnamed manual-reset event, not signalled; owned below.
        let e = unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) };
        if e.is_null() {
            return Err(io("CreateEventW", last_error()));
        }
        // SAFETY: a new handle we own.
        let event = unsafe { OwnedHandle::from_raw_handle(e) };
        let ov = Box::new(OVERLAPPED { Internal: 0, InternalHigh: 0, Offset: 0, OffsetHigh: 0, hEvent: event.as_raw_handle() });
        Ok(Io { ov, event, buf: Vec::new(), pending: false })
    }

    /// Waits for the operation in flight (cancelled before, so this is prompt) to be done with
    /// the buffer.
    fn settle(&mut self, pipe: HANDLE) {
        if std::mem::take(&mut self.pending) {
            let mut n = 0u32;
            // SAFETY: the operation started on `pipe` with this OVERLAPPED; waits for its end.
            unsafe { GetOverlappedResult(pipe, &mut *self.ov, &mut n, 1) };
        }
    }
}

/// The other end's process and whether it runs as this user.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer {
    pub pid: i32,
    same: bool,
}

impl Peer {
    /// Whether this is a process of the same user as ours (its token's user SID is ours).
    pub(crate) fn same_user(&self) -> bool {
        self.same
    }

    /// The peer's user, for log lines.
    pub(crate) fn user(&self) -> String {
        if self.same { "this user" } else { "another user (or one whose token could not be read)" }.to_string()
    }
}

/// A published name: the pipe instance waiting for the next attached process. The name is held
/// while any of its instances is open (the connections' too).
pub(crate) struct Listener {
    name: Vec<u16>,
    security: Security,
    next: Mutex<Instance>,
}

struct Instance {
    pipe: OwnedHandle,
    io: Io,
}

fn new_instance(name: &[u16], security: &Security, first: bool) -> std::result::Result<OwnedHandle, u32> {
    let sa = security.attributes();
    let open = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | if first { FILE_FLAG_FIRST_PIPE_INSTANCE } else { 0 };
    let mode = PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_REJECT_REMOTE_CLIENTS;
    // SAFETY: a NUL-terminated name and security attributes that live for the call.
    let h = unsafe { CreateNamedPipeW(name.as_ptr(), open, mode, PIPE_UNLIMITED_INSTANCES, PIPE_BUFFER, PIPE_BUFFER, 0, &sa) };
    if h == INVALID_HANDLE_VALUE {
        return Err(last());
    }
    // SAFETY: a new handle we own.
    Ok(unsafe { OwnedHandle::from_raw_handle(h) })
}

impl Listener {
    /// Whether the process at the other end of a connection may attach: a process of this user
    /// (Windows has no group circle).
    pub(crate) fn admits(&self, _conn: &Conn, peer: &Peer) -> bool {
        peer.same_user()
    }

    pub(crate) fn bind(name: &str) -> Result<Listener> {
        let pipe_name = pipe_name(name)?;
        let wide_name = wide(&pipe_name);
        let security = Security::private()?;
        let taken = || Error::arg(format!("a camera is published as '{name}' already (by another process of this user, or this one)"));
        // FILE_FLAG_FIRST_PIPE_INSTANCE below is what holds the name on Windows; Wine 8 ignores
        // that flag, so a name that has a pipe already is refused first (a pipe that exists
        // answers the wait with anything but "not found").
        // SAFETY: a NUL-terminated name.
        if unsafe { WaitNamedPipeW(wide_name.as_ptr(), 1) } != 0 || last() != ERROR_FILE_NOT_FOUND {
            return Err(taken());
        }
        let pipe = new_instance(&wide_name, &security, true).map_err(|e| match e {
            ERROR_ACCESS_DENIED | ERROR_PIPE_BUSY => taken(),
            e => io(&format!("cannot make the pipe {pipe_name}"), code(e)),
        })?;
        Ok(Listener { name: wide_name, security, next: Mutex::new(Instance { pipe, io: Io::new()? }) })
    }

    /// The next connection, waiting up to `timeout`; `None` when none came.
    pub(crate) fn accept(&self, timeout: Duration) -> Result<Option<(Conn, Peer)>> {
        let mut inst = self.next.lock();
        let inst = &mut *inst;
        let pipe = inst.pipe.as_raw_handle();
        if !inst.io.pending {
            // SAFETY: our listening instance; its OVERLAPPED lives in the listener until the
            // operation completes (waited for below or at drop).
            let ok = unsafe { ConnectNamedPipe(pipe, &mut *inst.io.ov) };
            if ok == 0 {
                match last() {
                    ERROR_IO_PENDING => inst.io.pending = true,
                    ERROR_PIPE_CONNECTED => return self.take(inst).map(Some),
                    ERROR_NO_DATA => {
                        // A client that came and went before we looked: ready the instance again.
                        // SAFETY: our instance.
                        unsafe { DisconnectNamedPipe(pipe) };
                        return Ok(None);
                    }
                    e => return Err(io("ConnectNamedPipe", code(e))),
                }
            }
        }
        if inst.io.pending {
            // SAFETY: our event.
            if unsafe { WaitForSingleObject(inst.io.event.as_raw_handle(), wait_ms(timeout)) } != WAIT_OBJECT_0 {
                return Ok(None);
            }
            let mut n = 0u32;
            // SAFETY: the connect started above with this OVERLAPPED.
            let ok = unsafe { GetOverlappedResult(pipe, &mut *inst.io.ov, &mut n, 0) };
            if ok == 0 {
                let e = last();
                if e == ERROR_IO_INCOMPLETE {
                    return Ok(None);
                }
                inst.io.pending = false;
                // SAFETY: our instance.
                unsafe { DisconnectNamedPipe(pipe) };
                return Ok(None);
            }
            inst.io.pending = false;
        }
        self.take(inst).map(Some)
    }

    /// The connected instance becomes a connection; a new instance listens in its place first,
    /// so that the name never goes unheld.
    fn take(&self, inst: &mut Instance) -> Result<(Conn, Peer)> {
        let fresh = new_instance(&self.name, &self.security, false).map_err(|e| io("another pipe instance", code(e)))?;
        let pipe = std::mem::replace(&mut inst.pipe, fresh);
        let mut pid = 0u32;
        // SAFETY: a connected server end; writes one u32.
        let got_pid = unsafe { GetNamedPipeClientProcessId(pipe.as_raw_handle(), &mut pid) } != 0;
        // The attached process: checked, and the target of the pools' handles.
        let process = if got_pid { open_process(pid, PROCESS_DUP_HANDLE | PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE) } else { None };
        let same = process.as_ref().is_some_and(same_user);
        let peer = Peer { pid: pid as i32, same };
        Ok((Conn::new(pipe, true, process)?, peer))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let inst = self.next.get_mut();
        let pipe = inst.pipe.as_raw_handle();
        if inst.io.pending {
            // SAFETY: our instance; cancels its pending connect, which settle waits for.
            unsafe { CancelIoEx(pipe, std::ptr::null_mut()) };
            inst.io.settle(pipe);
        }
    }
}

/// One connection between a publisher and an attached process.
pub(crate) struct Conn {
    /// Null once closed (by `shutdown`, under both I/O locks).
    pipe: AtomicPtr<c_void>,
    /// The publisher's end (it may send handles, never receive them).
    server: bool,
    /// The other end's process: to check that it lives, and (publisher) to put handles in.
    process: Option<OwnedHandle>,
    read: Mutex<Io>,
    write: Mutex<Io>,
    down: AtomicBool,
}

/// What a receive got.
pub(crate) enum Received {
    /// One message, and the handle that came with it.
    Message(Vec<u8>, Option<OsHandle>),
    /// Nothing within the timeout.
    Nothing,
    /// The other end closed (or died).
    Closed,
}

fn closed_error(e: u32) -> bool {
    matches!(e, ERROR_BROKEN_PIPE | ERROR_NO_DATA | ERROR_PIPE_NOT_CONNECTED)
}

impl Conn {
    fn new(pipe: OwnedHandle, server: bool, process: Option<OwnedHandle>) -> Result<Conn> {
        let (read, write) = (Io::new()?, Io::new()?);
        Ok(Conn {
            pipe: AtomicPtr::new(std::os::windows::io::IntoRawHandle::into_raw_handle(pipe)),
            server,
            process,
            read: Mutex::new(read),
            write: Mutex::new(write),
            down: AtomicBool::new(false),
        })
    }

    /// Connects to the camera published as `name` by a process of this user.
    pub(crate) fn connect(name: &str) -> Result<Conn> {
        let wide_name = wide(&pipe_name(name)?);
        let end = Instant::now() + Duration::from_secs(2);
        let pipe = loop {
            // SAFETY: a NUL-terminated name; the handle is owned below. Identification only: the
            // server may learn who we are, never act as us.
            let h = unsafe {
                CreateFileW(
                    wide_name.as_ptr(),
                    GENERIC_READ | GENERIC_WRITE,
                    0,
                    std::ptr::null(),
                    OPEN_EXISTING,
                    FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
                    std::ptr::null_mut(),
                )
            };
            if h != INVALID_HANDLE_VALUE {
                // SAFETY: a new handle we own.
                break unsafe { OwnedHandle::from_raw_handle(h) };
            }
            match last() {
                ERROR_FILE_NOT_FOUND => return Err(Error::new(ErrorKind::Io, format!("no camera is published as '{name}'"))),
                ERROR_ACCESS_DENIED => return Err(Error::new(ErrorKind::Auth, format!("the camera published as '{name}' is not this user's to attach"))),
                // Every instance taken for a moment (the publisher is making the next one).
                ERROR_PIPE_BUSY if Instant::now() < end => {
                    // SAFETY: a NUL-terminated name.
                    unsafe { WaitNamedPipeW(wide_name.as_ptr(), 200) };
                }
                e => return Err(io(&format!("cannot connect to the camera published as '{name}'"), code(e))),
            }
        };
        let mode = PIPE_READMODE_MESSAGE;
        // SAFETY: our pipe handle; one u32 mode.
        if unsafe { SetNamedPipeHandleState(pipe.as_raw_handle(), &mode, std::ptr::null(), std::ptr::null()) } == 0 {
            return Err(io("SetNamedPipeHandleState", last_error()));
        }
        let mut pid = 0u32;
        // SAFETY: a connected client end; writes one u32.
        if unsafe { GetNamedPipeServerProcessId(pipe.as_raw_handle(), &mut pid) } == 0 {
            return Err(io("GetNamedPipeServerProcessId", last_error()));
        }
        let process = open_process(pid, PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE)
            .ok_or_else(|| Error::new(ErrorKind::Auth, format!("the process serving '{name}' (pid {pid}) cannot be checked: not attached")))?;
        if !same_user(&process) {
            return Err(Error::new(ErrorKind::Auth, format!("the camera published as '{name}' is served by another user's process (pid {pid}): not attached")));
        }
        Conn::new(pipe, false, Some(process))
    }

    /// Whether the process at the other end still runs.
    pub(crate) fn peer_alive(&self) -> bool {
        // SAFETY: a process handle we own, opened with SYNCHRONIZE; a wait of 0 ms.
        self.process.as_ref().is_some_and(|p| unsafe { WaitForSingleObject(p.as_raw_handle(), 0) } != WAIT_OBJECT_0)
    }

    fn gone() -> Error {
        Error::new(ErrorKind::Io, "send: the connection is closed")
    }

    /// Closes a handle this process duplicated into the other one, whose message never left.
    fn close_in_peer(&self, value: u64) {
        if let Some(p) = &self.process {
            // SAFETY: a handle value we made in that process (DuplicateHandle below); closed there.
            unsafe { DuplicateHandle(p.as_raw_handle(), value as usize as HANDLE, std::ptr::null_mut(), std::ptr::null_mut(), 0, 0, DUPLICATE_CLOSE_SOURCE) };
        }
    }

    /// Sends one message (with a handle, publisher only), never waiting: `false` when the other
    /// end's queue is full (a reader that fell behind), an error when the connection is gone.
    pub(crate) fn send(&self, msg: &[u8], handle: Option<&OsHandle>) -> Result<bool> {
        let mut w = self.write.lock();
        let pipe = self.pipe.load(Ordering::Acquire);
        if self.down.load(Ordering::Acquire) || pipe.is_null() {
            return Err(Self::gone());
        }
        let value = match (handle, self.server, &self.process) {
            (None, ..) => 0u64,
            (Some(h), true, Some(p)) => {
                let mut out: HANDLE = std::ptr::null_mut();
                // SAFETY: our own handle, duplicated into the attached process (opened with
                // PROCESS_DUP_HANDLE) with the access it has (read-only for host pools).
                if unsafe { DuplicateHandle(GetCurrentProcess(), h.as_raw_handle(), p.as_raw_handle(), &mut out, 0, 0, DUPLICATE_SAME_ACCESS) } == 0 {
                    return Err(io("putting a pool's handle into the attached process", last_error()));
                }
                out as usize as u64
            }
            (Some(_), ..) => return Err(Error::internal("only the publisher sends handles")),
        };
        let Io { buf, ov, .. } = &mut *w;
        buf.clear();
        buf.extend_from_slice(&value.to_le_bytes());
        buf.extend_from_slice(msg);
        // SAFETY: the buffer and OVERLAPPED stay in this connection, untouched, until the write
        // completed (below: it never outlives this call).
        let ok = unsafe { WriteFile(pipe, buf.as_ptr() as *const c_void, buf.len() as u32, std::ptr::null_mut(), &mut **ov) };
        let e = if ok != 0 { return Ok(true) } else { last() };
        let e = if e == ERROR_IO_PENDING {
            // The pipe's buffer is full (a reader that fell behind): the write is taken back
            // instead of waiting, so nothing is ever left in flight (the system would cancel it
            // anyway when the thread that started it ends, losing a frame the publisher counts
            // as held). Unless the reader took it meanwhile, it counts as not sent.
            let mut n = 0u32;
            // SAFETY: the write just started with this OVERLAPPED; cancelled, then waited for
            // (a cancelled pipe write completes at once).
            let done = unsafe {
                CancelIoEx(pipe, &mut **ov);
                GetOverlappedResult(pipe, &mut **ov, &mut n, 1)
            };
            if done != 0 {
                return Ok(true);
            }
            match last() {
                ERROR_OPERATION_ABORTED => {
                    if value != 0 {
                        self.close_in_peer(value);
                    }
                    return Ok(false);
                }
                e => e,
            }
        } else {
            e
        };
        if value != 0 {
            self.close_in_peer(value);
        }
        Err(if closed_error(e) { Self::gone() } else { io("send", code(e)) })
    }

    /// Receives one message, waiting up to `timeout`. A message longer than `max`, shorter than
    /// the header, or with a handle sent to the publisher is an error.
    pub(crate) fn recv(&self, timeout: Duration, max: usize) -> Result<Received> {
        let mut r = self.read.lock();
        let pipe = self.pipe.load(Ordering::Acquire);
        if self.down.load(Ordering::Acquire) || pipe.is_null() {
            return Ok(Received::Closed);
        }
        if !r.pending {
            let Io { buf, ov, .. } = &mut *r;
            buf.clear();
            buf.resize(HEADER + max + 1, 0);
            // SAFETY: the buffer and OVERLAPPED stay in this connection, untouched, until the
            // read completed (waited for below, or in shutdown).
            let ok = unsafe { ReadFile(pipe, buf.as_mut_ptr() as *mut c_void, buf.len() as u32, std::ptr::null_mut(), &mut **ov) };
            if ok == 0 {
                match last() {
                    ERROR_IO_PENDING | ERROR_MORE_DATA => {}
                    e if closed_error(e) => return Ok(Received::Closed),
                    e => return Err(io("receive", code(e))),
                }
            }
            r.pending = true;
        }
        // SAFETY: our event.
        if unsafe { WaitForSingleObject(r.event.as_raw_handle(), wait_ms(timeout)) } != WAIT_OBJECT_0 {
            return Ok(Received::Nothing);
        }
        let mut n = 0u32;
        // SAFETY: the read started above with this OVERLAPPED.
        let ok = unsafe { GetOverlappedResult(pipe, &mut *r.ov, &mut n, 0) };
        if ok == 0 {
            let e = last();
            if e == ERROR_IO_INCOMPLETE {
                return Ok(Received::Nothing);
            }
            r.pending = false;
            return match e {
                ERROR_MORE_DATA => Err(Error::new(ErrorKind::Io, "a message longer than any of the protocol's")),
                ERROR_OPERATION_ABORTED if self.down.load(Ordering::Acquire) => Ok(Received::Closed),
                // The thread that started the read ended and the system cancelled it: read again.
                ERROR_OPERATION_ABORTED => Ok(Received::Nothing),
                e if closed_error(e) => Ok(Received::Closed),
                e => Err(io("receive", code(e))),
            };
        }
        r.pending = false;
        let n = n as usize;
        if n < HEADER {
            return Err(Error::new(ErrorKind::Io, format!("a message of {n} bytes, shorter than its header")));
        }
        if n - HEADER > max {
            return Err(Error::new(ErrorKind::Io, "a message longer than any of the protocol's"));
        }
        let value = u64::from_le_bytes(r.buf[..HEADER].try_into().expect("8 bytes"));
        let bytes = r.buf[HEADER..n].to_vec();
        let handle = match value {
            0 => None,
            // Its value names nothing of ours: an attached process cannot put handles here.
            _ if self.server => return Err(Error::new(ErrorKind::Io, "a message with a handle (only the publisher sends them)")),
            // SAFETY: the publisher (a process of this user, checked at connect) duplicated this
            // handle into this process for us; it is ours to own and close.
            v => Some(unsafe { OsHandle::from_raw_handle(v as usize as HANDLE) }),
        };
        Ok(Received::Message(bytes, handle))
    }

    /// Ends the connection both ways now: what is in flight is cancelled, the pipe closed (the
    /// other end sees it broken; a thread waiting in a receive on it returns).
    pub(crate) fn shutdown(&self) {
        if self.down.swap(true, Ordering::AcqRel) {
            return;
        }
        let pipe = self.pipe.load(Ordering::Acquire);
        if pipe.is_null() {
            return;
        }
        // SAFETY: our pipe, still open (closed only below); cancels every operation on it, which
        // wakes a receive waiting for its event.
        unsafe { CancelIoEx(pipe, std::ptr::null_mut()) };
        let mut r = self.read.lock();
        let mut w = self.write.lock();
        r.settle(pipe);
        w.settle(pipe); // (a write never stays in flight; settled all the same)
        let pipe = self.pipe.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !pipe.is_null() {
            // SAFETY: our pipe handle, closed once (swapped out); no operation on it is in flight.
            unsafe { CloseHandle(pipe) };
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second publisher of a name in use is refused; once the first is gone the name is free
    /// again; each side sees the other as this user's process; a message and a handle arrive
    /// whole, and the handle works in the receiver.
    #[test]
    fn a_name_is_published_once_and_freed_with_its_publisher() {
        let name = format!("unit-{}", std::process::id());
        let a = Listener::bind(&name).unwrap();
        assert!(Listener::bind(&name).is_err());
        let c = Conn::connect(&name).unwrap();
        let (s, peer) = a.accept(Duration::from_secs(2)).unwrap().expect("the connection");
        assert!(peer.same_user());
        assert_eq!(peer.pid as u32, std::process::id());
        assert!(c.peer_alive() && s.peer_alive());
        assert!(c.send(b"hello", None).unwrap());
        match s.recv(Duration::from_secs(2), 16).unwrap() {
            Received::Message(m, None) => assert_eq!(m, b"hello"),
            _ => panic!("no message"),
        }
        // SAFETY: a new unnamed manual-reset event, owned below.
        let ev = unsafe { OsHandle::from_raw_handle(CreateEventW(std::ptr::null(), 1, 0, std::ptr::null())) };
        assert!(s.send(b"pool", Some(&ev)).unwrap());
        assert!(c.send(b"x", Some(&ev)).is_err(), "an attached process sends no handles");
        match c.recv(Duration::from_secs(2), 16).unwrap() {
            Received::Message(m, Some(h)) => {
                assert_eq!(m, b"pool");
                assert_ne!(h.as_raw_handle(), ev.as_raw_handle(), "a handle of its own");
            }
            _ => panic!("no message with a handle"),
        }
        assert!(matches!(s.recv(Duration::from_millis(50), 16).unwrap(), Received::Nothing));
        drop(c);
        assert!(matches!(s.recv(Duration::from_secs(2), 16).unwrap(), Received::Closed));
        drop(s);
        drop(a);
        let _b = Listener::bind(&name).unwrap();
    }

    /// A reader that stops reading never makes the publisher wait: once the pipe's buffer is
    /// full, sends say so at once, and what was sent arrives whole and in order (a write taken
    /// back leaves no torn message behind).
    #[test]
    fn a_reader_that_stops_reading_never_makes_a_send_wait() {
        let name = format!("unit-full-{}", std::process::id());
        let a = Listener::bind(&name).unwrap();
        let c = Conn::connect(&name).unwrap();
        let (s, _) = a.accept(Duration::from_secs(2)).unwrap().expect("the connection");
        let t = Instant::now();
        let (mut sent, mut refused) = (0u32, 0u32);
        for i in 0..1000u32 {
            let mut m = vec![7u8; 1000];
            m[..4].copy_from_slice(&i.to_le_bytes());
            if s.send(&m, None).unwrap() {
                sent += 1;
            } else {
                refused += 1;
            }
        }
        assert!(t.elapsed() < Duration::from_secs(5), "1000 sends took {:?}", t.elapsed());
        assert!(sent > 0 && refused > 0, "sent {sent}, refused {refused}: 1 MB into a 64 KiB pipe");
        let (mut got, mut last) = (0u32, None);
        loop {
            match c.recv(Duration::from_millis(300), 2000).unwrap() {
                Received::Message(m, None) => {
                    assert_eq!(m.len(), 1000, "a whole message");
                    let i = u32::from_le_bytes(m[..4].try_into().unwrap());
                    assert!(last < Some(i), "in order: {i} after {last:?}");
                    last = Some(i);
                    got += 1;
                }
                Received::Nothing => break,
                _ => panic!("the connection ended"),
            }
        }
        assert_eq!(got, sent, "every message a send reported sent arrived");
    }
}
