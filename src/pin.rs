//! Pins the library in the process on first init.
//!
//! LabVIEW unloads a DLL when the last VI that references it closes, while our camera threads may
//! still run; Rust's thread-local destructors also run code from this image when those threads
//! exit. An extra, never-released reference with RTLD_NODELETE (Linux) or the PIN flag (Windows)
//! keeps the code mapped until the process ends, whatever the host does.

use std::sync::Once;

static PIN: Once = Once::new();

pub(crate) fn pin_self() {
    PIN.call_once(|| {
        if imp::pin() {
            log::debug!("nvcam pinned in the process");
        } else {
            log::warn!("nvcam could not pin itself in the process; do not unload it while cameras run");
        }
    });
}

#[cfg(unix)]
mod imp {
    use std::ffi::{c_char, c_int, c_void};

    #[repr(C)]
    struct DlInfo {
        dli_fname: *const c_char,
        dli_fbase: *mut c_void,
        dli_sname: *const c_char,
        dli_saddr: *mut c_void,
    }
    extern "C" {
        fn dladdr(addr: *const c_void, info: *mut DlInfo) -> c_int;
        fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    }
    const RTLD_NOW: c_int = 2;
    const RTLD_NOLOAD: c_int = 4;
    const RTLD_NODELETE: c_int = 0x1000;

    pub(super) fn pin() -> bool {
        // SAFETY: dladdr fills `info` for an address inside this image; dlopen with NOLOAD only
        // adds a reference to an image already loaded; CStr reads the NUL-terminated path dladdr
        // returned, which stays valid while the image is loaded (it is: we are running in it).
        unsafe {
            let mut info = DlInfo {
                dli_fname: std::ptr::null(),
                dli_fbase: std::ptr::null_mut(),
                dli_sname: std::ptr::null(),
                dli_saddr: std::ptr::null_mut(),
            };
            if dladdr(pin as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
                return false;
            }
            if !dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE).is_null() {
                return true;
            }
            // Linked statically into the executable (the rlib): nothing can unload us.
            let me = std::ffi::CStr::from_ptr(info.dli_fname).to_string_lossy().into_owned();
            let exe = std::env::current_exe().ok().and_then(|p| p.canonicalize().ok());
            exe.is_some() && exe == std::fs::canonicalize(me).ok()
        }
    }
}

#[cfg(windows)]
mod imp {
    use std::ffi::c_void;
    const GET_MODULE_HANDLE_EX_FLAG_PIN: u32 = 0x1;
    const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;
    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut *mut c_void) -> i32;
    }
    pub(super) fn pin() -> bool {
        let mut h = std::ptr::null_mut();
        // SAFETY: FROM_ADDRESS takes an address inside this module (a function of ours); PIN adds
        // a reference that is never released; `h` receives the handle.
        unsafe {
            GetModuleHandleExW(
                GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN,
                pin as *const u16,
                &mut h,
            ) != 0
        }
    }
}
