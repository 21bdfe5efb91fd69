//! Windows: who may connect to a published camera. The pipe a user publishes under, the pipe's
//! security descriptor and the check of a peer's process token all rest on one fact, the user's
//! SID (the user a process runs as, read from its token):
//!
//! - the pipe's name holds a hash of the user's SID, so two users' names never meet;
//! - the pipe's DACL grants that SID and no one else (not SYSTEM or Administrators either: a
//!   service that needs the frames runs as the user, or the user publishes for it), so the system
//!   refuses another user's open before any byte moves;
//! - each side then checks the other's process: its token's user SID must be ours, as
//!   `SO_PEERCRED` is checked on Linux (the DACL is the publisher's: it cannot stop a process of
//!   another user that made a pipe of this name first from answering the attached side).
//!
//! The connection itself (which process is at the other end, the pipe's I/O) is the parent's;
//! this file knows no pipe handle and no connection.

use crate::share::win32::*;
use crate::share::{parse_name, Circle};
use crate::status::*;
use std::ffi::c_void;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::sync::OnceLock;

/// The SID of the user a process runs as (its token's user), as bytes.
fn sid_of_process(process: HANDLE) -> Result<Vec<u8>> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: `process` is an open process handle with query access; `token` receives a handle.
    if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
        return Err(io("OpenProcessToken", last_error()));
    }
    // SAFETY: a new handle we own.
    let token = unsafe { OwnedHandle::from_raw_handle(token) };
    // u64s: the TOKEN_USER at its start holds a pointer, so it is 8-byte aligned.
    let mut buf = vec![0u64; 64];
    let mut need = 0u32;
    loop {
        let len = (buf.len() * 8) as u32;
        // SAFETY: a buffer of `len` bytes for TokenUser; `need` receives the size it takes.
        if unsafe { GetTokenInformation(token.as_raw_handle(), TOKEN_USER_CLASS, buf.as_mut_ptr() as *mut c_void, len, &mut need) } != 0 {
            break;
        }
        if need as usize <= buf.len() * 8 || need > 64 * 1024 {
            return Err(io("GetTokenInformation", last_error()));
        }
        buf.resize((need as usize).div_ceil(8), 0);
    }
    let start = buf.as_ptr() as *const u8;
    let end = start as usize + buf.len() * 8;
    // SAFETY: the buffer starts with a TOKEN_USER, whose first field points at the SID inside
    // the same buffer.
    let sid = unsafe { *(buf.as_ptr() as *const *const u8) };
    if (sid as usize) < start as usize || sid as usize + 8 > end {
        return Err(Error::internal("a token's user SID outside its buffer"));
    }
    // SAFETY: inside the buffer (checked above); a SID is 8 bytes and 4 per sub-authority.
    let count = unsafe { *sid.add(1) } as usize;
    let len = 8 + 4 * count;
    if sid as usize + len > end {
        return Err(Error::internal("a token's user SID outside its buffer"));
    }
    // SAFETY: `len` bytes inside the buffer (checked above).
    Ok(unsafe { std::slice::from_raw_parts(sid, len) }.to_vec())
}

/// This process's user SID (read once).
fn my_sid() -> Result<&'static [u8]> {
    static SID: OnceLock<std::result::Result<Vec<u8>, String>> = OnceLock::new();
    // SAFETY: the pseudo handle of this process (needs no closing).
    let me = || sid_of_process(unsafe { GetCurrentProcess() }).map_err(|e| e.msg);
    match SID.get_or_init(me) {
        Ok(s) => Ok(s),
        Err(e) => Err(Error::new(ErrorKind::Auth, format!("this process's user cannot be read: {e}"))),
    }
}

/// A SID's text form (`S-1-5-21-…`).
fn sid_string(sid: &[u8]) -> String {
    let auth = sid[2..8].iter().fold(0u64, |a, &b| (a << 8) | b as u64);
    let mut s = format!("S-{}-{auth}", sid[0]);
    for c in sid[8..].chunks_exact(4) {
        s.push_str(&format!("-{}", u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
    }
    s
}

/// The pipe of the camera this user publishes as `name`. A name that admits a group
/// (`GROUP/NAME`) is Unix's: refused here.
pub(crate) fn pipe_name(name: &str) -> Result<String> {
    if let (Circle::Group(_), _) = parse_name(name)? {
        return Err(Error::new(ErrorKind::Unsupported, "a published name with a group (GROUP/NAME) is for Unix groups: on Windows only the user's own processes attach"));
    }
    let user = sid_string(my_sid()?);
    // FNV-1a: short, and the same in every process of the user.
    let h = user.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
    Ok(format!(r"\\.\pipe\nvcam-{h:016x}-{name}"))
}

/// Whether `process` (opened with `PROCESS_QUERY_LIMITED_INFORMATION`) runs as this user; `false`
/// when either user cannot be read.
pub(super) fn same_user(process: &OwnedHandle) -> bool {
    match (sid_of_process(process.as_raw_handle()), my_sid()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A security descriptor from `ConvertStringSecurityDescriptorToSecurityDescriptorW`, freed on
/// drop.
pub(super) struct Security(*mut c_void);

// SAFETY: an immutable block of memory of ours, freed once.
unsafe impl Send for Security {}
// SAFETY: as above; only read.
unsafe impl Sync for Security {}

impl Security {
    /// Access for this user's SID only (protected: nothing inherited).
    pub(super) fn private() -> Result<Security> {
        let sddl = wide(&format!("D:P(A;;GA;;;{})", sid_string(my_sid()?)));
        let mut sd: *mut c_void = std::ptr::null_mut();
        // SAFETY: a NUL-terminated SDDL string; `sd` receives memory we free with LocalFree.
        if unsafe { ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl.as_ptr(), SDDL_REVISION_1, &mut sd, std::ptr::null_mut()) } == 0 {
            return Err(io("the pipe's security descriptor", last_error()));
        }
        Ok(Security(sd))
    }

    /// Security attributes that give an object this descriptor (valid while `self` lives), its
    /// handle not inherited.
    pub(super) fn attributes(&self) -> SECURITY_ATTRIBUTES {
        SECURITY_ATTRIBUTES { nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32, lpSecurityDescriptor: self.0, bInheritHandle: 0 }
    }
}

impl Drop for Security {
    fn drop(&mut self) {
        // SAFETY: memory the conversion allocated, freed once.
        unsafe { LocalFree(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_namespace_are_refused() {
        for bad in ["", ".hidden", "../x", r"a\b", "a/b", "a b", "x\0"] {
            assert!(pipe_name(bad).is_err(), "{bad:?}");
        }
        let p = pipe_name("cam1").unwrap();
        assert!(p.starts_with(r"\\.\pipe\nvcam-") && p.ends_with("-cam1"), "{p}");
    }

    /// The DACL names the user by this text: a wrong form (the authority's bytes in the wrong
    /// order, a sub-authority read big-endian) would grant the pipe to no one, or to another SID.
    #[test]
    fn a_sid_reads_as_windows_writes_it() {
        // S-1-5-18 (LocalSystem): revision 1, one sub-authority, authority 5 (big-endian), 18.
        assert_eq!(sid_string(&[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]), "S-1-5-18");
        // S-1-5-21-4294967295: two sub-authorities, little-endian each.
        assert_eq!(sid_string(&[1, 2, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), "S-1-5-21-4294967295");
        let me = sid_string(my_sid().unwrap());
        assert!(me.starts_with("S-1-"), "{me}");
        let this = open_process(std::process::id(), PROCESS_QUERY_LIMITED_INFORMATION).expect("this process");
        assert!(same_user(&this), "this process runs as its own user");
    }
}
