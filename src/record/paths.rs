//! One recording per file: a path is claimed at the call that starts a recording and freed when
//! its writer has finished, so two recordings never write the same `NAME.part` (the first clip
//! would be lost without a word), and a recording never replaces a file already there.

use crate::status::*;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

static IN_USE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// A claimed path: free again when dropped.
pub(crate) struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(set) = IN_USE.lock().as_mut() {
            set.remove(&self.0);
        }
    }
}

/// Claims `path` for a new recording, or says why not: a folder (or a name ending in a
/// separator), a folder that does not exist, a file already there, a path a running recording
/// writes.
pub(crate) fn claim(path: &Path) -> Result<Claim> {
    let shown = path.display();
    let text = path.as_os_str().to_string_lossy();
    if text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR) || path.is_dir() {
        return Err(Error::arg(format!("'{shown}' is a folder: give a file name")));
    }
    let name = path.file_name().ok_or_else(|| Error::arg(format!("'{shown}' names no file")))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = parent.canonicalize().map_err(|e| Error::new(ErrorKind::Io, format!("the folder of '{shown}': {e}")))?;
    if !dir.is_dir() {
        return Err(Error::new(ErrorKind::Io, format!("the folder of '{shown}' is not a folder")));
    }
    let key = dir.join(name);
    if key.exists() {
        return Err(Error::arg(format!("'{shown}' exists: a recording never replaces a file")));
    }
    let mut set = IN_USE.lock();
    if !set.get_or_insert_with(HashSet::new).insert(key.clone()) {
        return Err(Error::arg(format!("'{shown}' is being written by another recording")));
    }
    Ok(Claim(key))
}
