//! A session of an attached camera (`nvcam://NAME`): frames another process of this user
//! publishes, mapped here and handed to the host like any camera's. Nothing is decoded.
//!
//! When the connection ends, frames the host still holds stay valid if the publisher died (no one
//! can write their slots again); if it lives on, it reuses the slots it held for this process, so
//! the host's handles of them are released here first (as `NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT`
//! does), and the host never reads a slot that is being written.

use super::latency::wall_ns;
use super::session::{FirstOpen, SessionEnd};
use super::shared::{CameraState, Shared};
use crate::frame::Frame;
use crate::registry;
use crate::share::attach::{Attached, Event, Ticket};
use crate::gpu::shared_pool::ImportDesc;
use crate::pool::{Lease, OsHandle, Pool};
use crate::share::wire::{FrameMsg, PoolDesc, StatusMsg};
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Runs one connection to the camera published as `name`.
pub(super) fn session(sh: &Arc<Shared>, name: &str, first: &mut FirstOpen, connected: &mut bool) -> Result<SessionEnd> {
    let mut a = Attached::connect(name, sh.opts.open_timeout, Some(import_device))?;
    if let Some(tx) = first.take() {
        let _ = tx.send(Ok(()));
    }
    *connected = true;
    sh.set_state(CameraState::Streaming);
    // The publisher counts what it did not send to this connection from 0.
    let missed_before = sh.counters.dropped.load(Ordering::Relaxed);
    let end = loop {
        if sh.irq.stopping() {
            break Ok(SessionEnd::Stop);
        }
        if sh.irq.kicked() {
            break Ok(SessionEnd::Kicked);
        }
        // Mapped device pools this process let go of are unmapped by the deferred queue.
        crate::gpu::maintain();
        match a.next(Duration::from_millis(100)) {
            Ok(Event::Nothing) => {}
            Ok(Event::Status(s)) => {
                sh.counters.dropped.store(missed_before + s.missed, Ordering::Relaxed);
                source_status(sh, s);
            }
            Ok(Event::Frame(lease, ticket, f)) => {
                sh.counters.dropped.store(missed_before + f.missed, Ordering::Relaxed);
                deliver(sh, lease, ticket, &f);
            }
            Err(e) => break Err(e),
        }
    };
    if a.publisher_alive() {
        let n = registry::force_release_owner(sh.handle());
        drop(sh.mailbox.lock().take());
        if n > 0 {
            log::info!("camera {}: the publisher lives on and reuses its slots: {n} frame handle(s) of it released", sh.name());
        }
    }
    drop(a);
    *sh.source_status.lock() = None;
    end
}

/// Maps a publisher's device pool (exported VMM memory) on its GPU.
fn import_device(desc: &PoolDesc, handle: OsHandle) -> Result<Arc<Pool>> {
    let d = ImportDesc { geom: desc.geom, slots: desc.slots as usize, slot_bytes: desc.slot_bytes as usize, alloc_bytes: desc.alloc_bytes };
    crate::gpu::shared_pool::import_pool(desc.device, handle, d)
}

/// The publisher's report: kept for the stats; the camera's state follows its source's while
/// attached (a source that reconnects is a camera that reconnects).
fn source_status(sh: &Shared, s: StatusMsg) {
    let mirrored = match CameraState::from_code(s.state) {
        Some(CameraState::Streaming) => CameraState::Streaming,
        Some(CameraState::Stalled) => CameraState::Stalled,
        _ => CameraState::Reconnecting,
    };
    sh.set_state(mirrored);
    sh.counters.fps_milli.store(s.fps_milli, Ordering::Relaxed);
    *sh.source_status.lock() = Some(s);
}

/// Hands a frame the publisher offered to the host as the camera's newest.
fn deliver(sh: &Shared, lease: Lease, ticket: Ticket, f: &FrameMsg) {
    {
        let mut pools = sh.pools.lock();
        if !pools.current.as_ref().is_some_and(|c| Arc::ptr_eq(c, lease.pool())) {
            pools.retire();
            pools.current = Some(lease.pool().clone());
            sh.stream.lock().size = (lease.pool().geom.width, lease.pool().geom.height);
        }
    }
    sh.counters.decoded.fetch_add(1, Ordering::Relaxed);
    let frame = Frame::new(lease, sh.handle(), f.seq, f.pts_us, f.wallclock_ns, (f.capture_ns, f.time_source))
        .with_color(f.color, f.bits)
        .with_integrity(f.integrity)
        .with_ticket(Box::new(ticket));
    if f.integrity.exact() {
        sh.counters.exact.fetch_add(1, Ordering::Relaxed);
    } else {
        sh.counters.corrupt.fetch_add(1, Ordering::Relaxed);
    }
    sh.counters.attempt.store(0, Ordering::Relaxed);
    if sh.opts.flags.lossless {
        // Every frame in order: wait for the host to take the last one (the publisher meanwhile
        // counts what this process's quota could not take as missed).
        let mut m = sh.mailbox.lock();
        while m.is_some() && !sh.irq.stopping() && !sh.irq.kicked() {
            sh.mailbox_cv.wait_for(&mut m, Duration::from_millis(50));
        }
    }
    let replaced = {
        let mut m = sh.mailbox.lock();
        let old = m.replace(Arc::new(frame));
        sh.mailbox_cv.notify_all();
        old
    };
    if replaced.is_some() {
        sh.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }
    // Publish to here: the latency the stats report for an attached camera.
    let now = std::time::Instant::now();
    let ns = wall_ns().saturating_sub(f.wallclock_ns);
    sh.latency.lock().add(now, Duration::from_nanos(ns));
    sh.note_packet();
}
