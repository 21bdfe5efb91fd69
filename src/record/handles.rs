//! The host's handles to recordings: generational, like the frames' and cameras', so a stale or
//! double release is an error.

use super::recorder::Recording;
use crate::handle::{Kind, Table};
use crate::status::Result;
use std::sync::Arc;

static RECORDINGS: Table<Arc<Recording>> = Table::new(Kind::Recording);

/// Hands a recording to the host as a handle.
pub(crate) fn register(r: Arc<Recording>) -> Result<u64> {
    RECORDINGS.insert(r)
}

pub(crate) fn get(h: u64) -> Result<Arc<Recording>> {
    RECORDINGS.get(h)
}

/// Releases a handle; a recording still running is stopped (its file is finished in the
/// background).
pub(crate) fn release(h: u64) -> Result<()> {
    let r = RECORDINGS.remove(h)?;
    r.stop();
    Ok(())
}

/// Shutdown: every recording handle goes (the cameras' closes have finished the files).
pub(crate) fn release_all() -> usize {
    let gone = RECORDINGS.remove_where(|_| true);
    for r in &gone {
        r.stop();
    }
    gone.len()
}
