//! LabVIEW node instances: which waits an Abort must wake.
//!
//! LabVIEW gives every Call Library Function Node instance (each node, and each dataspace of a
//! reentrant VI) a pointer-sized slot, passes it to the node's Reserve, Unreserve and Abort
//! callbacks and, when a parameter is configured as "Instance Data Pointer", to the function. The
//! slot holds one of our generational handles (kind `Instance`), never a pointer of ours: a NULL,
//! garbage or stale slot is an error code, never a dereference. An instance records the waits in
//! progress that were begun from it; its Abort sets their flags and wakes their cameras, so exactly
//! those waits return `ErrorKind::Cancelled` and every other wait on the same cameras goes on.

use crate::camera::Camera;
use crate::handle::{Kind, Table};
use crate::status::*;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

static INSTANCES: Table<Arc<Instance>> = Table::new(Kind::Instance);
static NEXT_WAIT: AtomicU64 = AtomicU64::new(1);

struct Pending {
    id: u64,
    abort: Arc<AtomicBool>,
    camera: Arc<Camera>,
}

/// One node instance: its waits in progress.
#[derive(Default)]
pub(crate) struct Instance {
    waits: Mutex<Vec<Pending>>,
}

/// A wait in progress, registered with its instance until dropped.
pub(crate) struct Wait<'a> {
    instance: &'a Instance,
    id: u64,
    abort: Arc<AtomicBool>,
}

impl Wait<'_> {
    /// The flag the camera's wait checks.
    pub(crate) fn abort(&self) -> &AtomicBool {
        &self.abort
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.instance.waits.lock().retain(|p| p.id != self.id);
    }
}

impl Instance {
    /// Registers a wait on `camera` begun from this instance.
    pub(crate) fn begin(&self, camera: Arc<Camera>) -> Wait<'_> {
        let id = NEXT_WAIT.fetch_add(1, Ordering::Relaxed);
        let abort = Arc::new(AtomicBool::new(false));
        self.waits.lock().push(Pending { id, abort: abort.clone(), camera });
        Wait { instance: self, id, abort }
    }

    /// Cancels the waits in progress; returns how many there were.
    fn abort_waits(&self) -> usize {
        // Flags first, then the wake-ups outside our lock (a camera's wake takes its mailbox lock).
        let cams: Vec<Arc<Camera>> = self
            .waits
            .lock()
            .iter()
            .map(|p| {
                p.abort.store(true, Ordering::Release);
                p.camera.clone()
            })
            .collect();
        for c in &cams {
            c.wake_waits();
        }
        cams.len()
    }
}

/// A new instance's handle (what Reserve stores in the slot).
pub(crate) fn reserve() -> Result<u64> {
    INSTANCES.insert(Arc::new(Instance::default()))
}

/// The instance behind `h`.
pub(crate) fn get(h: u64) -> Result<Arc<Instance>> {
    INSTANCES.get(h)
}

/// Whether `h` names a live instance.
pub(crate) fn is_live(h: u64) -> bool {
    INSTANCES.get(h).is_ok()
}

/// Releases instance `h` (its handle turns stale) and cancels any wait still in progress on it.
pub(crate) fn unreserve(h: u64) -> Result<()> {
    let inst = INSTANCES.remove(h)?;
    let n = inst.abort_waits();
    if n > 0 {
        log::info!("nvcam_lv_unreserve: cancelled {n} wait(s) still in progress");
    }
    Ok(())
}

/// LabVIEW's Abort: cancels the waits in progress begun from instance `h`.
pub(crate) fn abort(h: u64) -> Result<()> {
    let n = get(h)?.abort_waits();
    log::debug!("nvcam_lv_abort: cancelled {n} wait(s)");
    Ok(())
}

/// Live instances (for tests through `nvcam::diag`: Unreserve must release them).
pub fn live() -> usize {
    INSTANCES.live()
}
