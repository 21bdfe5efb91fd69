//! The clone registry: every frame handle the host holds, keyed by the camera that made it.
//!
//! One handle is one reference. `clone` adds a handle to the same frame, `release` removes exactly
//! one, so a double release is a stale-handle error rather than a silent extra decrement.
//! `force_release_owner` is the seed system's forceReleaseByOwner: it invalidates every handle a
//! camera's frames have outstanding, and the slots go back to their pools as soon as no call in
//! progress still holds them (the `Arc`s taken by in-flight calls keep them alive until then).

use crate::frame::Frame;
use crate::handle::{Kind, Table};
use crate::status::*;
use std::collections::BTreeMap;
use std::sync::Arc;

static FRAMES: Table<Arc<Frame>> = Table::new(Kind::Frame);

/// Hands a frame to the host as a new handle.
pub(crate) fn publish(frame: Arc<Frame>) -> Result<u64> {
    FRAMES.insert(frame)
}

/// The frame behind a handle, kept alive for the duration of the caller's use.
pub(crate) fn get(h: u64) -> Result<Arc<Frame>> {
    FRAMES.get(h)
}

/// A new handle to the same pixels.
pub(crate) fn clone(h: u64) -> Result<u64> {
    let f = FRAMES.get(h)?;
    FRAMES.insert(f)
}

/// Releases one handle; the frame's slot returns to its pool when its last handle goes.
pub(crate) fn release(h: u64) -> Result<()> {
    let f = FRAMES.remove(h)?;
    drop(f); // outside the table lock
    Ok(())
}

/// Invalidates every handle whose frame came from camera `owner`; returns how many.
pub(crate) fn force_release_owner(owner: u64) -> usize {
    let gone = FRAMES.remove_where(|f| f.owner == owner);
    let n = gone.len();
    if n > 0 {
        log::info!("force-released {n} frame handle(s) of camera 0x{owner:016x}");
    }
    n
}

/// Invalidates every frame handle (shutdown); returns how many the host had leaked.
pub(crate) fn force_release_all() -> usize {
    FRAMES.remove_where(|_| true).len()
}

/// Live handles per owning camera.
pub(crate) fn per_owner() -> BTreeMap<u64, u32> {
    let mut m = BTreeMap::new();
    for (_, f) in FRAMES.entries() {
        *m.entry(f.owner).or_insert(0) += 1;
    }
    m
}

pub(crate) fn live() -> usize {
    FRAMES.live()
}
