//! One camera, many processes: a camera decoded once, its frames shared zero-copy with other
//! processes of the same user (or of a group the name names: `GROUP/NAME`), each of which sees
//! an ordinary camera (`nvcam://NAME`).
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

/// The most bytes a group's name may have in a published name (`GROUP/NAME`).
pub(crate) const GROUP_MAX: usize = 32;

/// Who may attach to a published camera, as its name says: `NAME` for the publishing user's own
/// processes (the default), `GROUP/NAME` for every process of that Unix group too: the wider
/// circle is explicit in the name, so the publisher and every attached process agree on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Circle<'a> {
    User,
    Group(&'a str),
}

/// Splits a published camera's name into its circle and its own name, checking both: the name
/// is 1 to [`NAME_MAX`] letters, digits, `.`, `_` or `-`, not starting with a dot (it becomes a
/// file name, and must not leave its folder); a group is 1 to [`GROUP_MAX`] of the same, or a
/// number.
pub(crate) fn parse_name(full: &str) -> Result<(Circle<'_>, &str)> {
    let plain = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && !s.starts_with('.') && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let (circle, name) = match full.split_once('/') {
        Some((g, n)) if plain(g, GROUP_MAX) => (Circle::Group(g), n),
        Some(_) => return Err(Error::arg(format!("a published camera's group is 1 to {GROUP_MAX} letters, digits, '.', '_' or '-' (GROUP/NAME)"))),
        None => (Circle::User, full),
    };
    if plain(name, NAME_MAX) {
        Ok((circle, name))
    } else {
        Err(Error::arg(format!(
            "a published camera's name is 1 to {NAME_MAX} letters, digits, '.', '_' or '-', not starting with '.' (after GROUP/ when a group may attach)"
        )))
    }
}

/// Checks a published camera's name (see [`parse_name`]).
pub(crate) fn check_name(name: &str) -> Result<()> {
    parse_name(name).map(|_| ())
}
