//! One camera, many processes: a camera decoded once, its frames shared zero-copy with other
//! processes of the same user, each of which sees an ordinary camera (`nvcam://NAME`).
//!
//! - [`wire`]: the messages and their byte layout (frames travel as pool, slot and hold, never
//!   as pixels).
//! - [`endpoint`]: where a name is found, the connections, the peer's credentials, handles
//!   passed between processes.
//! - [`memory`]: host pools that other processes map (the GPU's exportable pools are in `gpu`).
//! - [`publisher`]: the publishing camera's side: connections, holds per connection, quotas.
//! - [`attach`]: the attached process's side: mapped pools, frames, releases.
//!
//! The camera room drives both sides; nothing here knows a camera. Only `endpoint` and `memory`
//! differ by platform (Linux: Unix sockets and memfd; Windows: named pipes and file mappings);
//! the publisher and the attached side are the same code on both.

pub(crate) mod wire;

pub(crate) mod attach;
pub(crate) mod endpoint;
pub(crate) mod memory;
pub(crate) mod publisher;
#[cfg(windows)]
mod win32;

use crate::status::*;

/// The most bytes a published camera's name may have.
pub(crate) const NAME_MAX: usize = 64;

/// Checks a published camera's name: 1 to [`NAME_MAX`] letters, digits, `.`, `_` or `-`, not
/// starting with a dot (it becomes a file name, and must not leave its folder).
pub(crate) fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::arg(format!(
            "a published camera's name is 1 to {NAME_MAX} letters, digits, '.', '_' or '-', not starting with '.'"
        )))
    }
}
