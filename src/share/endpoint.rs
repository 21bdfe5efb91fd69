//! Where a published camera is found, and the connections to it, behind one small interface that
//! the publisher and the attached side share:
//!
//! - `Listener::bind(name)` holds the name (a second publisher of it is refused) and
//!   `Listener::accept(timeout)` gives each connection with its `Peer` (process id, and whether
//!   it is a process of this user, as the OS recorded it);
//! - `Conn::connect(name)` reaches the publisher, refusing one of another user;
//! - `Conn::send(message, handle)` never waits (`false`: the other end's queue is full),
//!   `Conn::recv(timeout, max)` gives one whole message and the handle that came with it,
//!   `Conn::shutdown()` ends the connection both ways, `Conn::peer_alive()` says whether the other
//!   end's process still runs.
//!
//! Linux: a `SOCK_SEQPACKET` Unix socket in the user's private folder, `SO_PEERCRED`, handles as
//! `SCM_RIGHTS`. Windows: a message-mode named pipe whose DACL admits only the user's SID, the
//! peer's token checked both ways, handles duplicated into the attached process.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;
