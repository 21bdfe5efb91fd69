//! The clone registry: every frame handle the host holds, and every frame a process attached to a
//! published camera holds, each under its owner.
//!
//! One handle is one reference. `clone` adds a handle to the same frame, `release` removes exactly
//! one, so a double release is a stale-handle error rather than a silent extra decrement.
//! `force_release_owner` is the seed system's forceReleaseByOwner: it invalidates every handle a
//! camera's frames have outstanding, and the slots go back to their pools as soon as no call in
//! progress still holds them (the `Arc`s taken by in-flight calls keep them alive until then).
//!
//! A frame held by another process (see `crate::share`) is an entry whose owner is that process's
//! connection: the handle travels to the peer as the frame's name, comes back with its release,
//! and `force_release_peer` drops them all when the connection ends. The host's calls never see
//! those entries, nor the peer's messages the host's.

use crate::frame::Frame;
use crate::handle::{Kind, Table};
use crate::status::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Who holds a registry entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    /// The host, through a frame handle.
    Host,
    /// Another process, through the connection with this id.
    Peer(u64),
}

#[derive(Clone)]
struct Held {
    frame: Arc<Frame>,
    holder: Holder,
}

static FRAMES: Table<Held> = Table::new(Kind::Frame);

/// A peer's handle given to the host's calls (or the reverse) is not a handle of theirs: the same
/// error as a handle never issued.
fn not_yours(h: u64) -> Error {
    Error::new(ErrorKind::UnknownHandle, format!("handle 0x{h:016x} is not a frame handle of this caller"))
}

fn held_by(h: u64, holder: Holder) -> Result<Arc<Frame>> {
    let e = FRAMES.get(h)?;
    if e.holder != holder {
        return Err(not_yours(h));
    }
    Ok(e.frame)
}

/// Hands a frame to the host as a new handle.
pub(crate) fn publish(frame: Arc<Frame>) -> Result<u64> {
    FRAMES.insert(Held { frame, holder: Holder::Host })
}

/// The frame behind a host handle, kept alive for the duration of the caller's use.
pub(crate) fn get(h: u64) -> Result<Arc<Frame>> {
    held_by(h, Holder::Host)
}

/// A new handle to the same pixels.
pub(crate) fn clone(h: u64) -> Result<u64> {
    let f = get(h)?;
    publish(f)
}

/// Releases one host handle; the frame's slot returns to its pool when its last handle goes.
pub(crate) fn release(h: u64) -> Result<()> {
    get(h)?;
    let e = FRAMES.remove(h)?;
    drop(e); // outside the table lock
    Ok(())
}

/// Invalidates every host handle whose frame came from camera `owner`; returns how many.
pub(crate) fn force_release_owner(owner: u64) -> usize {
    let gone = FRAMES.remove_where(|e| e.holder == Holder::Host && e.frame.owner == owner);
    let n = gone.len();
    if n > 0 {
        log::info!("force-released {n} frame handle(s) of camera 0x{owner:016x}");
    }
    n
}

/// Records that the peer on connection `peer` holds `frame`; the handle names it in the peer's
/// release.
pub(crate) fn hold_for_peer(frame: Arc<Frame>, peer: u64) -> Result<u64> {
    FRAMES.insert(Held { frame, holder: Holder::Peer(peer) })
}

/// The peer on connection `peer` released the frame it was given as `h`. A handle that is not
/// one of this peer's is an error (the connection sent what it was never given).
pub(crate) fn release_for_peer(h: u64, peer: u64) -> Result<()> {
    held_by(h, Holder::Peer(peer))?;
    drop(FRAMES.remove(h)?);
    Ok(())
}

/// Drops every frame the peer on connection `peer` held (its process ended, or the connection
/// did); returns how many.
pub(crate) fn force_release_peer(peer: u64) -> usize {
    FRAMES.remove_where(|e| e.holder == Holder::Peer(peer)).len()
}

/// Invalidates every frame handle and peer hold (shutdown); returns how many the host had leaked.
pub(crate) fn force_release_all() -> usize {
    FRAMES.remove_where(|_| true).iter().filter(|e| e.holder == Holder::Host).count()
}

/// Live host handles per owning camera.
pub(crate) fn per_owner() -> BTreeMap<u64, u32> {
    let mut m = BTreeMap::new();
    for (_, e) in FRAMES.entries() {
        if e.holder == Holder::Host {
            *m.entry(e.frame.owner).or_insert(0) += 1;
        }
    }
    m
}

/// Live host handles.
pub(crate) fn live() -> usize {
    FRAMES.entries().iter().filter(|(_, e)| e.holder == Holder::Host).count()
}
