//! A published camera's side: the endpoint other processes attach to, each attached process as
//! a connection with its own holds, and the frames offered to them.
//!
//! - Each frame the camera publishes is offered to every connection: a small message naming the
//!   pool, the slot and the hold (a registry entry owned by that connection). The pool itself goes
//!   once per connection, as a handle, before its first frame.
//! - A connection holds at most `quota` frames; past that, or when its queue is full (a reader
//!   that fell behind), it misses the frame (counted, and told) and no one else waits.
//! - When a connection ends for any reason (the process exited or was killed, it fell silent past
//!   the deadline, it sent a malformed message or released what it did not hold), every frame it
//!   held is released at once, here: `registry::force_release_peer`.
//! - Nothing here waits on a connection: sends never block, and each connection's messages are
//!   read by its own thread.

use super::endpoint::{Conn, Listener, Peer, Received};
use super::wire::{FrameMsg, Msg, PoolDesc, StatusMsg, MAX_LEN};
use crate::frame::Frame;
use crate::registry;
use crate::status::*;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How a camera is published.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terms {
    /// Frames one attached process may hold at once.
    pub quota: u32,
    /// Processes attached at once; more are refused.
    pub max_consumers: u32,
    /// Each side sends something at least this often.
    pub heartbeat: Duration,
    /// A connection heard from for this long is ended (a stopped or hung process).
    pub silence: Duration,
}

/// The publisher's counters and state, read for each status message.
pub(crate) type StatusFn = Box<dyn Fn() -> StatusMsg + Send + Sync>;

static NEXT_PEER: AtomicU64 = AtomicU64::new(1);

struct PeerState {
    /// Pools this connection has mapped (by id).
    pools: HashSet<u64>,
    holds: u32,
    missed: u64,
}

struct Connection {
    id: u64,
    conn: Conn,
    peer: Peer,
    state: Mutex<PeerState>,
    last_heard: Mutex<Instant>,
    ended: AtomicBool,
    reader: Mutex<Option<JoinHandle<()>>>,
}

impl Connection {
    /// Ends the connection once (the first reason is the one logged) and releases its holds.
    fn end(&self, camera: &str, why: &str) {
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        self.conn.shutdown();
        let n = registry::force_release_peer(self.id);
        log::info!("published camera {camera}: process {} detached ({why}); {n} frame(s) it held released", self.peer.pid);
    }

    fn send(&self, m: &Msg, camera: &str) -> bool {
        match self.conn.send(&m.encode(), None) {
            Ok(sent) => sent,
            Err(e) => {
                self.end(camera, &format!("send: {}", e.msg));
                false
            }
        }
    }

    /// Offers `frame` (of the pool `pool_id`, already written) to this connection.
    fn offer(&self, frame: &Arc<Frame>, pool_id: u64, quota: u32, camera: &str) {
        if self.ended.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.state.lock();
        if st.holds >= quota {
            st.missed += 1;
            return;
        }
        if !st.pools.contains(&pool_id) {
            let storage = frame.storage();
            let exported = match storage.export() {
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    log::warn!("published camera {camera}: its pool cannot be exported ({}); process {} misses its frames", e.msg, self.peer.pid);
                    st.missed += 1;
                    return;
                }
                None => {
                    st.missed += 1;
                    return;
                }
            };
            let g = *frame.geom();
            let slots = frame.pool_slots() as u64;
            let desc = PoolDesc {
                id: pool_id,
                memory: storage.kind(),
                device: storage.device(),
                geom: g,
                slots: slots as u32,
                slot_bytes: g.slot_bytes() as u64,
                alloc_bytes: exported.alloc_bytes,
            };
            match self.conn.send(&Msg::Pool(desc).encode(), Some(&exported.handle)) {
                Ok(true) => {
                    st.pools.insert(pool_id);
                }
                Ok(false) => {
                    st.missed += 1;
                    return;
                }
                Err(e) => {
                    drop(st);
                    self.end(camera, &format!("send: {}", e.msg));
                    return;
                }
            }
        }
        let hold = match registry::hold_for_peer(frame.clone(), self.id) {
            Ok(h) => h,
            Err(_) => {
                st.missed += 1;
                return;
            }
        };
        let m = Msg::Frame(FrameMsg {
            hold,
            pool: pool_id,
            slot: frame.slot() as u32,
            seq: frame.seq,
            pts_us: frame.pts_us,
            wallclock_ns: frame.wallclock_ns,
            capture_ns: frame.capture_ns,
            time_source: frame.time_source,
            color: frame.color,
            bits: frame.bits,
            integrity: frame.integrity,
            missed: st.missed,
        });
        // Counted before the send: the reader thread's release of this hold waits for the lock.
        st.holds += 1;
        match self.conn.send(&m.encode(), None) {
            Ok(true) => {}
            Ok(false) => {
                st.holds -= 1;
                st.missed += 1;
                let _ = registry::release_for_peer(hold, self.id);
            }
            Err(e) => {
                st.holds -= 1;
                let _ = registry::release_for_peer(hold, self.id);
                drop(st);
                self.end(camera, &format!("send: {}", e.msg));
            }
        }
    }
}

struct Inner {
    name: String,
    camera: String,
    terms: Terms,
    listener: Listener,
    conns: Mutex<Vec<Arc<Connection>>>,
    stop: AtomicBool,
    status: StatusFn,
}

/// A camera published under a name, until dropped or stopped.
pub(crate) struct Publication {
    inner: Arc<Inner>,
    service: Mutex<Option<JoinHandle<()>>>,
}

impl Publication {
    /// Publishes as `name` (refused when the name is taken); `camera` names the camera in log
    /// lines (its redacted URL), `status` reads its counters.
    pub(crate) fn start(name: &str, camera: String, terms: Terms, status: StatusFn) -> Result<Arc<Publication>> {
        let listener = Listener::bind(name)?;
        let inner = Arc::new(Inner { name: name.to_string(), camera, terms, listener, conns: Mutex::new(Vec::new()), stop: AtomicBool::new(false), status });
        let i = inner.clone();
        let service = std::thread::Builder::new()
            .name(format!("nvcam-pub-{}", &name[..name.len().min(6)]))
            .spawn(move || serve(&i))
            .map_err(|e| Error::internal(format!("cannot start the publisher's thread: {e}")))?;
        log::info!("camera {} published as '{name}'", inner.camera);
        Ok(Arc::new(Publication { inner, service: Mutex::new(Some(service)) }))
    }

    pub(crate) fn name(&self) -> &str {
        &self.inner.name
    }

    pub(crate) fn terms(&self) -> Terms {
        self.inner.terms
    }

    /// Processes attached now.
    pub(crate) fn consumers(&self) -> u32 {
        self.inner.conns.lock().iter().filter(|c| !c.ended.load(Ordering::Acquire)).count() as u32
    }

    /// Offers a frame the camera just published to every attached process. Returns at once
    /// (after the frame's own write completed: a frame is announced only once it is readable).
    pub(crate) fn announce(&self, frame: &Arc<Frame>) {
        let conns: Vec<Arc<Connection>> = self.inner.conns.lock().clone();
        if conns.is_empty() || self.inner.stop.load(Ordering::Acquire) {
            return;
        }
        if frame.wait_ready().is_err() {
            return;
        }
        let pool_id = frame.pool_id();
        for c in &conns {
            c.offer(frame, pool_id, self.inner.terms.quota, &self.inner.camera);
        }
    }

    /// Ends the publication: every attached process is told and detached, its holds released,
    /// the name freed. Waits for the publisher's threads at most `timeout`.
    pub(crate) fn stop(&self, timeout: Duration) {
        let end = Instant::now() + timeout;
        if self.inner.stop.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(t) = self.service.lock().take() {
            join_until(t, end);
        }
        let conns: Vec<Arc<Connection>> = std::mem::take(&mut *self.inner.conns.lock());
        for c in &conns {
            let _ = c.conn.send(&Msg::Bye.encode(), None);
            c.end(&self.inner.camera, "the camera is no longer published");
        }
        for c in &conns {
            if let Some(t) = c.reader.lock().take() {
                join_until(t, end);
            }
        }
        log::info!("camera {}: no longer published as '{}'", self.inner.camera, self.inner.name);
    }
}

impl Drop for Publication {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(1));
    }
}

fn join_until(t: JoinHandle<()>, end: Instant) {
    while !t.is_finished() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(2));
    }
    if t.is_finished() {
        let _ = t.join();
    }
}

/// How long the service and reader threads wait at most before they look at the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// The publisher's thread: accepts connections, sends each the status every heartbeat, ends the
/// silent ones.
fn serve(inner: &Arc<Inner>) {
    let mut last_status = Instant::now() - inner.terms.heartbeat;
    while !inner.stop.load(Ordering::Acquire) {
        match inner.listener.accept(TICK) {
            Ok(Some((conn, peer))) => admit(inner, conn, peer),
            Ok(None) => {}
            Err(e) => {
                log::warn!("published camera {}: {}", inner.camera, e.msg);
                std::thread::sleep(TICK);
            }
        }
        let now = Instant::now();
        let mut conns = inner.conns.lock();
        conns.retain(|c| {
            if c.ended.load(Ordering::Acquire) {
                // Its reader has finished or is about to: joined where it is.
                let mut reader = c.reader.lock();
                match reader.take() {
                    Some(t) if t.is_finished() => {
                        let _ = t.join();
                    }
                    Some(t) => {
                        *reader = Some(t);
                        return true;
                    }
                    None => {}
                }
                return false;
            }
            true
        });
        if now.duration_since(last_status) >= inner.terms.heartbeat {
            last_status = now;
            let mut s = (inner.status)();
            s.consumers = conns.iter().filter(|c| !c.ended.load(Ordering::Acquire)).count() as u32;
            for c in conns.iter() {
                let heard = *c.last_heard.lock();
                if now.saturating_duration_since(heard) > inner.terms.silence {
                    c.end(&inner.camera, &format!("silent for {} ms", inner.terms.silence.as_millis()));
                } else {
                    let missed = c.state.lock().missed;
                    c.send(&Msg::Status(StatusMsg { missed, ..s }), &inner.camera);
                }
            }
        }
    }
}

/// A new connection: checked, greeted, and given its reader thread.
fn admit(inner: &Arc<Inner>, conn: Conn, peer: Peer) {
    if !inner.listener.admits(&conn, &peer) {
        log::warn!("published camera {}: process {} of {} refused (only this user's processes, or those of the group its name names, may attach)", inner.camera, peer.pid, peer.user());
        return;
    }
    let live = inner.conns.lock().iter().filter(|c| !c.ended.load(Ordering::Acquire)).count();
    if live >= inner.terms.max_consumers as usize {
        log::warn!("published camera {}: process {} refused: {live} processes are attached, the most this camera admits", inner.camera, peer.pid);
        let _ = conn.send(&Msg::Bye.encode(), None);
        return;
    }
    // The first message must be a Hello, within the heartbeat.
    match conn.recv(Duration::from_millis(500), MAX_LEN) {
        Ok(Received::Message(b, None)) => match Msg::decode(&b) {
            Ok(Msg::Hello { .. }) => {}
            Ok(m) => return log::info!("published camera {}: process {} refused: it began with a {} message", inner.camera, peer.pid, m.name()),
            Err(e) => return log::info!("published camera {}: process {} refused: {}", inner.camera, peer.pid, e.0),
        },
        Ok(_) => return log::info!("published camera {}: process {} refused: no greeting", inner.camera, peer.pid),
        Err(e) => return log::info!("published camera {}: process {} refused: {}", inner.camera, peer.pid, e.msg),
    }
    let welcome = Msg::Welcome { quota: inner.terms.quota, heartbeat_ms: inner.terms.heartbeat.as_millis() as u32 };
    if !matches!(conn.send(&welcome.encode(), None), Ok(true)) {
        return;
    }
    let c = Arc::new(Connection {
        id: NEXT_PEER.fetch_add(1, Ordering::Relaxed),
        conn,
        peer,
        state: Mutex::new(PeerState { pools: HashSet::new(), holds: 0, missed: 0 }),
        last_heard: Mutex::new(Instant::now()),
        ended: AtomicBool::new(false),
        reader: Mutex::new(None),
    });
    let (i, r) = (inner.clone(), c.clone());
    match std::thread::Builder::new().name("nvcam-pub-peer".into()).spawn(move || read(&i, &r)) {
        Ok(t) => *c.reader.lock() = Some(t),
        Err(e) => return log::warn!("published camera {}: cannot start a reader thread: {e}", inner.camera),
    }
    log::info!("published camera {}: process {} attached", inner.camera, peer.pid);
    // A status at once: the attached camera learns the source's state without waiting a beat.
    let mut s = (inner.status)();
    s.consumers = 1 + inner.conns.lock().len() as u32;
    c.send(&Msg::Status(s), &inner.camera);
    inner.conns.lock().push(c);
}

/// A connection's reader: releases and heartbeats until the connection ends.
fn read(inner: &Inner, c: &Connection) {
    let why = loop {
        if inner.stop.load(Ordering::Acquire) || c.ended.load(Ordering::Acquire) {
            return;
        }
        match c.conn.recv(TICK, MAX_LEN) {
            Ok(Received::Nothing) => continue,
            Ok(Received::Closed) => break "its connection closed".to_string(),
            Ok(Received::Message(_, Some(_))) => break "it sent a handle".to_string(),
            Err(e) => break e.msg,
            Ok(Received::Message(b, None)) => {
                *c.last_heard.lock() = Instant::now();
                match Msg::decode(&b) {
                    Ok(Msg::Release { hold }) => {
                        let mut st = c.state.lock();
                        if registry::release_for_peer(hold, c.id).is_err() {
                            break format!("it released a frame it did not hold (0x{hold:016x})");
                        }
                        st.holds = st.holds.saturating_sub(1);
                    }
                    Ok(Msg::Ping) => {}
                    Ok(m) => break format!("it sent a {} message, which only a publisher sends", m.name()),
                    Err(e) => break format!("a malformed message: {}", e.0),
                }
            }
        }
    };
    c.end(&inner.camera, &why);
}
