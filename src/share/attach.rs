//! An attached process's side of one connection to a published camera: the greeting, the pools
//! it maps, the frames it is offered, and the releases it sends back.
//!
//! A frame's slot is leased from the mapped pool exactly as the publisher chose it, and comes with
//! a [`Ticket`]: dropping the frame's last handle drops the ticket, which tells the publisher the
//! slot is free, once this process's own GPU work on it (`release_after_stream`, conversions on
//! the host's stream) completed. A frame still held when the publisher goes stays mapped and
//! readable until released.

use super::endpoint::{Conn, Received};
use super::wire::{FrameMsg, Msg, PoolDesc, StatusMsg, MAX_LEN};
use crate::pool::{Lease, MemoryKind, OsHandle, Pool};
use crate::status::*;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Maps a device pool another process exported; `None` where this build cannot (no GPU path).
pub(crate) type DeviceImport = fn(&PoolDesc, OsHandle) -> Result<Arc<Pool>>;

/// The connection as the frames' tickets reach it.
struct Link {
    conn: Conn,
    open: AtomicBool,
    /// Releases waiting for this process's work on their slot, or for room in the queue.
    pending: Mutex<Vec<(Arc<Pool>, usize, u64)>>,
}

impl Link {
    /// Sends what can be sent of the pending releases.
    fn flush(&self) -> Result<()> {
        let mut p = self.pending.lock();
        let mut err = None;
        p.retain(|(pool, slot, hold)| {
            if err.is_some() || !pool.storage().reusable(*slot) {
                return true;
            }
            match self.conn.send(&Msg::Release { hold: *hold }.encode(), None) {
                Ok(sent) => !sent,
                Err(e) => {
                    err = Some(e);
                    true
                }
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Dropped with the frame (after its lease): the publisher may write the slot again.
pub(crate) struct Ticket {
    link: Arc<Link>,
    pool: Arc<Pool>,
    slot: usize,
    hold: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.link.open.load(Ordering::Acquire) {
            return; // the publisher is gone, and its holds with it
        }
        self.link.pending.lock().push((self.pool.clone(), self.slot, self.hold));
        let _ = self.link.flush();
    }
}

/// What the connection gave.
pub(crate) enum Event {
    /// A frame: its slot, leased here, its ticket, and what the publisher said of it.
    Frame(Lease, Ticket, FrameMsg),
    Status(StatusMsg),
    Nothing,
}

/// One connection to a published camera.
pub(crate) struct Attached {
    link: Arc<Link>,
    pools: HashMap<u64, Arc<Pool>>,
    heartbeat: Duration,
    last_heard: Instant,
    last_sent: Instant,
    device: Option<DeviceImport>,
}

impl Attached {
    /// Connects to the camera published as `name` and waits up to `timeout` for its welcome.
    pub(crate) fn connect(name: &str, timeout: Duration, device: Option<DeviceImport>) -> Result<Attached> {
        let conn = Conn::connect(name)?;
        conn.send(&Msg::Hello { version: super::wire::VERSION }.encode(), None)?;
        let end = Instant::now() + timeout;
        let heartbeat = loop {
            let left = end.saturating_duration_since(Instant::now());
            match conn.recv(left, MAX_LEN)? {
                Received::Message(b, None) => match Msg::decode(&b) {
                    Ok(Msg::Welcome { heartbeat_ms, .. }) => break Duration::from_millis(heartbeat_ms.clamp(50, 60_000) as u64),
                    Ok(Msg::Bye) => {
                        return Err(Error::new(ErrorKind::Io, format!("the camera published as '{name}' admits no more processes now (as many as its publisher allows are attached)")))
                    }
                    Ok(m) => return Err(Error::new(ErrorKind::Io, format!("the publisher of '{name}' began with a {} message", m.name()))),
                    Err(e) => return Err(Error::new(ErrorKind::Io, format!("the publisher of '{name}': {}", e.0))),
                },
                Received::Message(..) => return Err(Error::new(ErrorKind::Io, format!("the publisher of '{name}' sent a handle unasked"))),
                Received::Closed => {
                    return Err(Error::new(ErrorKind::Io, format!("the publisher of '{name}' refused this process (see its log: another user, or too many attached)")))
                }
                Received::Nothing if left.is_zero() => return Err(Error::timeout(format!("no welcome from the publisher of '{name}'"))),
                Received::Nothing => {}
            }
        };
        let now = Instant::now();
        Ok(Attached {
            link: Arc::new(Link { conn, open: AtomicBool::new(true), pending: Mutex::new(Vec::new()) }),
            pools: HashMap::new(),
            heartbeat,
            last_heard: now,
            last_sent: now,
            device,
        })
    }

    /// The next thing the publisher sent, waiting up to `wait`. An error ends the connection:
    /// the publisher is gone (closed, silent past the deadline), or it sent what is not allowed.
    pub(crate) fn next(&mut self, wait: Duration) -> Result<Event> {
        let now = Instant::now();
        if now.duration_since(self.last_sent) >= self.heartbeat {
            self.link.conn.send(&Msg::Ping.encode(), None)?;
            self.last_sent = now;
        }
        if now.duration_since(self.last_heard) > self.heartbeat * 5 {
            return Err(Error::timeout(format!("the publisher sent nothing for {} ms", self.heartbeat.as_millis() * 5)));
        }
        // Releases held back for this process's own GPU work: sent as soon as it completed.
        let waiting = !self.link.pending.lock().is_empty();
        if waiting {
            self.link.flush()?;
        }
        let wait = if waiting { wait.min(Duration::from_millis(5)) } else { wait.min(self.heartbeat) };
        let (bytes, fd) = match self.link.conn.recv(wait, MAX_LEN)? {
            Received::Nothing => return Ok(Event::Nothing),
            Received::Closed => return Err(Error::new(ErrorKind::Io, "the publisher closed the connection (it exited or stopped publishing)")),
            Received::Message(b, fd) => (b, fd),
        };
        self.last_heard = Instant::now();
        let msg = Msg::decode(&bytes).map_err(|e| Error::new(ErrorKind::Io, format!("the publisher sent a malformed message: {}", e.0)))?;
        match (msg, fd) {
            (Msg::Pool(desc), Some(fd)) => {
                let pool = match desc.memory {
                    MemoryKind::Host => super::memory::map_host_pool(fd, desc.geom, desc.slots as usize, desc.slot_bytes as usize, desc.alloc_bytes)?,
                    MemoryKind::Device => match self.device {
                        Some(import) => import(&desc, fd)?,
                        None => return Err(Error::new(ErrorKind::Unsupported, "the publisher shares GPU memory, and this process has no GPU path")),
                    },
                };
                // A pool replaced here stays mapped while frames of it are held.
                self.pools.insert(desc.id, pool);
                Ok(Event::Nothing)
            }
            (m, Some(_)) => Err(Error::new(ErrorKind::Io, format!("the publisher sent a handle with a {} message", m.name()))),
            (Msg::Frame(f), None) => {
                let pool = self.pools.get(&f.pool).ok_or_else(|| Error::new(ErrorKind::Io, "the publisher sent a frame of a pool it never sent"))?.clone();
                // Only slots of this process's own mapping; one that is held here cannot be a
                // new frame (the publisher never writes it).
                let lease = pool.acquire_slot(f.slot as usize).ok_or_else(|| Error::new(ErrorKind::Io, format!("the publisher sent slot {} twice, or one out of range", f.slot)))?;
                let ticket = Ticket { link: self.link.clone(), pool, slot: f.slot as usize, hold: f.hold };
                Ok(Event::Frame(lease, ticket, f))
            }
            (Msg::Status(s), None) => Ok(Event::Status(s)),
            (Msg::Ping, None) => Ok(Event::Nothing),
            (Msg::Bye, None) => Err(Error::new(ErrorKind::Io, "the camera is no longer published")),
            (m, None) => Err(Error::new(ErrorKind::Io, format!("the publisher sent a {} message, which only an attached process sends", m.name()))),
        }
    }
}

impl Attached {
    /// Whether the publisher's process still runs (not exited, not a zombie). A frame this
    /// process holds stays exact after its connection ends only if no one can write its slot
    /// again: when the publisher died. A publisher that lives on (it stopped publishing, or ended
    /// this connection) reuses the slots it was holding for us.
    pub(crate) fn publisher_alive(&self) -> bool {
        self.link.conn.peer_alive()
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        // Frames held here keep their mappings; their releases have no one to go to.
        self.link.open.store(false, Ordering::Release);
        self.link.conn.shutdown();
    }
}
