//! A rename that never replaces a file: a recording's `.part` takes its final name only if no
//! file has it (another program may have made one there while the recording ran).

use std::io;
use std::path::Path;

/// Renames `from` to `to`; fails with `AlreadyExists` if `to` exists, leaving both as they are.
pub(crate) fn rename(from: &Path, to: &Path) -> io::Result<()> {
    imp::rename(from, to)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::io;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    pub(super) fn rename(from: &Path, to: &Path) -> io::Result<()> {
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput));
        let (f, t) = (c(from)?, c(to)?);
        // SAFETY: both are NUL-terminated paths that live across the call; AT_FDCWD makes them
        // relative to the working folder like rename(2).
        let r = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // A filesystem (or kernel) without RENAME_NOREPLACE: a hard link is made only
            // where no file is, then the old name goes.
            Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => super::link_then_unlink(from, to),
            _ => Err(e),
        }
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
mod imp {
    pub(super) fn rename(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        super::link_then_unlink(from, to)
    }
}

#[cfg(windows)]
mod imp {
    use std::io;
    use std::os::windows::ffi::OsStrExt;
    use std::path::Path;

    #[link(name = "kernel32")]
    extern "system" {
        fn MoveFileExW(existing: *const u16, new: *const u16, flags: u32) -> i32;
    }
    /// Without MOVEFILE_REPLACE_EXISTING: an existing file at the new name fails the move.
    const MOVEFILE_WRITE_THROUGH: u32 = 0x8;

    pub(super) fn rename(from: &Path, to: &Path) -> io::Result<()> {
        let w = |p: &Path| p.as_os_str().encode_wide().chain(Some(0)).collect::<Vec<u16>>();
        let (f, t) = (w(from), w(to));
        // SAFETY: both are NUL-terminated wide strings that live across the call.
        if unsafe { MoveFileExW(f.as_ptr(), t.as_ptr(), MOVEFILE_WRITE_THROUGH) } != 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        // ERROR_ALREADY_EXISTS (183) and ERROR_FILE_EXISTS (80) read as AlreadyExists.
        match e.raw_os_error() {
            Some(80) | Some(183) => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            _ => Err(e),
        }
    }
}

#[cfg(unix)]
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to)?;
    if let Err(e) = std::fs::remove_file(from) {
        // Both names are the complete file: the final one stays.
        log::warn!("recording: '{}' is complete, but its temporary name '{}' could not be removed: {e}", to.display(), from.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The final rename once replaced a file another program made at the recording's name.
    #[test]
    fn a_rename_never_replaces_a_file() {
        let d = std::env::temp_dir().join(format!("nvcam-noreplace-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a.part"), d.join("a"));
        std::fs::write(&a, b"ours").unwrap();
        std::fs::write(&b, b"theirs").unwrap();
        assert_eq!(rename(&a, &b).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&b).unwrap(), b"theirs");
        assert_eq!(std::fs::read(&a).unwrap(), b"ours");
        std::fs::remove_file(&b).unwrap();
        rename(&a, &b).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"ours");
        assert!(!a.exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
