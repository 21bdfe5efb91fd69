//! The Win32 calls that sharing makes (kernel32 and advapi32), declared as the Windows SDK
//! declares them for x64, and the few helpers every Windows file of sharing uses around them.

#![allow(non_snake_case, clippy::upper_case_acronyms)]

use std::ffi::c_void;
use std::os::windows::io::{FromRawHandle, OwnedHandle};

pub(super) type HANDLE = *mut c_void;
pub(super) type BOOL = i32;

pub(super) const INVALID_HANDLE_VALUE: HANDLE = -1isize as HANDLE;

pub(super) const ERROR_FILE_NOT_FOUND: u32 = 2;
pub(super) const ERROR_ACCESS_DENIED: u32 = 5;
pub(super) const ERROR_BROKEN_PIPE: u32 = 109;
pub(super) const ERROR_PIPE_BUSY: u32 = 231;
pub(super) const ERROR_NO_DATA: u32 = 232;
pub(super) const ERROR_PIPE_NOT_CONNECTED: u32 = 233;
pub(super) const ERROR_MORE_DATA: u32 = 234;
pub(super) const ERROR_PIPE_CONNECTED: u32 = 535;
pub(super) const ERROR_OPERATION_ABORTED: u32 = 995;
pub(super) const ERROR_IO_INCOMPLETE: u32 = 996;
pub(super) const ERROR_IO_PENDING: u32 = 997;

pub(super) const WAIT_OBJECT_0: u32 = 0;

pub(super) const GENERIC_READ: u32 = 0x8000_0000;
pub(super) const GENERIC_WRITE: u32 = 0x4000_0000;
pub(super) const OPEN_EXISTING: u32 = 3;
pub(super) const FILE_FLAG_OVERLAPPED: u32 = 0x4000_0000;
pub(super) const FILE_FLAG_FIRST_PIPE_INSTANCE: u32 = 0x0008_0000;
pub(super) const SECURITY_SQOS_PRESENT: u32 = 0x0010_0000;
pub(super) const SECURITY_IDENTIFICATION: u32 = 0x0001_0000;
pub(super) const PIPE_ACCESS_DUPLEX: u32 = 3;
pub(super) const PIPE_TYPE_MESSAGE: u32 = 4;
pub(super) const PIPE_READMODE_MESSAGE: u32 = 2;
pub(super) const PIPE_REJECT_REMOTE_CLIENTS: u32 = 8;
pub(super) const PIPE_UNLIMITED_INSTANCES: u32 = 255;

pub(super) const SYNCHRONIZE: u32 = 0x0010_0000;
pub(super) const PROCESS_DUP_HANDLE: u32 = 0x0040;
pub(super) const PROCESS_QUERY_LIMITED_INFORMATION: u32 = 0x1000;
pub(super) const TOKEN_QUERY: u32 = 0x0008;
pub(super) const TOKEN_USER_CLASS: u32 = 1;
pub(super) const DUPLICATE_CLOSE_SOURCE: u32 = 1;
pub(super) const DUPLICATE_SAME_ACCESS: u32 = 2;
pub(super) const SDDL_REVISION_1: u32 = 1;

pub(super) const PAGE_READWRITE: u32 = 0x04;
pub(super) const FILE_MAP_WRITE: u32 = 0x0002;
pub(super) const FILE_MAP_READ: u32 = 0x0004;

#[repr(C)]
pub(super) struct OVERLAPPED {
    pub Internal: usize,
    pub InternalHigh: usize,
    pub Offset: u32,
    pub OffsetHigh: u32,
    pub hEvent: HANDLE,
}

#[repr(C)]
pub(super) struct SECURITY_ATTRIBUTES {
    pub nLength: u32,
    pub lpSecurityDescriptor: *mut c_void,
    pub bInheritHandle: BOOL,
}

#[link(name = "kernel32")]
extern "system" {
    pub(super) fn GetLastError() -> u32;
    pub(super) fn CloseHandle(h: HANDLE) -> BOOL;
    pub(super) fn GetCurrentProcess() -> HANDLE;
    pub(super) fn OpenProcess(access: u32, inherit: BOOL, pid: u32) -> HANDLE;
    pub(super) fn DuplicateHandle(src_process: HANDLE, src: HANDLE, dst_process: HANDLE, dst: *mut HANDLE, access: u32, inherit: BOOL, options: u32) -> BOOL;
    pub(super) fn WaitForSingleObject(h: HANDLE, ms: u32) -> u32;
    pub(super) fn CreateEventW(sa: *const SECURITY_ATTRIBUTES, manual_reset: BOOL, initial: BOOL, name: *const u16) -> HANDLE;
    pub(super) fn CreateNamedPipeW(
        name: *const u16,
        open_mode: u32,
        pipe_mode: u32,
        max_instances: u32,
        out_buffer: u32,
        in_buffer: u32,
        default_timeout_ms: u32,
        sa: *const SECURITY_ATTRIBUTES,
    ) -> HANDLE;
    pub(super) fn ConnectNamedPipe(pipe: HANDLE, ov: *mut OVERLAPPED) -> BOOL;
    pub(super) fn DisconnectNamedPipe(pipe: HANDLE) -> BOOL;
    pub(super) fn WaitNamedPipeW(name: *const u16, timeout_ms: u32) -> BOOL;
    pub(super) fn SetNamedPipeHandleState(pipe: HANDLE, mode: *const u32, max_collection: *const u32, timeout: *const u32) -> BOOL;
    pub(super) fn GetNamedPipeClientProcessId(pipe: HANDLE, pid: *mut u32) -> BOOL;
    pub(super) fn GetNamedPipeServerProcessId(pipe: HANDLE, pid: *mut u32) -> BOOL;
    pub(super) fn CreateFileW(name: *const u16, access: u32, share: u32, sa: *const SECURITY_ATTRIBUTES, disposition: u32, flags: u32, template: HANDLE) -> HANDLE;
    pub(super) fn ReadFile(h: HANDLE, buf: *mut c_void, len: u32, read: *mut u32, ov: *mut OVERLAPPED) -> BOOL;
    pub(super) fn WriteFile(h: HANDLE, buf: *const c_void, len: u32, written: *mut u32, ov: *mut OVERLAPPED) -> BOOL;
    pub(super) fn GetOverlappedResult(h: HANDLE, ov: *mut OVERLAPPED, bytes: *mut u32, wait: BOOL) -> BOOL;
    pub(super) fn CancelIoEx(h: HANDLE, ov: *mut OVERLAPPED) -> BOOL;
    pub(super) fn LocalFree(p: *mut c_void) -> *mut c_void;
    pub(super) fn CreateFileMappingW(file: HANDLE, sa: *const SECURITY_ATTRIBUTES, protect: u32, size_high: u32, size_low: u32, name: *const u16) -> HANDLE;
    pub(super) fn MapViewOfFile(mapping: HANDLE, access: u32, offset_high: u32, offset_low: u32, bytes: usize) -> *mut c_void;
    pub(super) fn UnmapViewOfFile(base: *const c_void) -> BOOL;
}

#[link(name = "advapi32")]
extern "system" {
    pub(super) fn OpenProcessToken(process: HANDLE, access: u32, token: *mut HANDLE) -> BOOL;
    pub(super) fn GetTokenInformation(token: HANDLE, class: u32, info: *mut c_void, len: u32, needed: *mut u32) -> BOOL;
    pub(super) fn ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl: *const u16, revision: u32, sd: *mut *mut c_void, len: *mut u32) -> BOOL;
}

/// The calling thread's last error as an I/O error (its text is the system's).
pub(super) fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// A failed call as the library's I/O error: `what` and the system's text.
pub(super) fn io(what: &str, e: std::io::Error) -> crate::status::Error {
    crate::status::Error::new(crate::status::ErrorKind::Io, format!("{what}: {e}"))
}

/// `s` as a NUL-terminated UTF-16 string.
pub(super) fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// The process `pid`, opened with `access`; `None` when it is gone or refuses that access.
pub(super) fn open_process(pid: u32, access: u32) -> Option<OwnedHandle> {
    // SAFETY: OpenProcess returns a new handle or null.
    let h = unsafe { OpenProcess(access, 0, pid) };
    // SAFETY: a new handle we own.
    (!h.is_null()).then(|| unsafe { OwnedHandle::from_raw_handle(h) })
}
