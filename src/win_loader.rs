//! Windows: nvcam.dll loads the FFmpeg DLLs from its own folder, whatever folder the host loaded it
//! from and however.
//!
//! Windows resolves a DLL's imports with the host's search order, which includes the folder of the
//! DLL being loaded only when the host asks for it (`LOAD_WITH_ALTERED_SEARCH_PATH`, as LabVIEW
//! does, or `LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR`, as Python's ctypes does): a plain
//! `LoadLibraryW(full path)` of a nvcam.dll that imported FFmpeg the usual way failed with error 126
//! unless the FFmpeg DLLs were also beside the .exe or on PATH. So nvcam links FFmpeg through
//! delay-load import libraries (scripts/build/build-ffmpeg-windows.sh makes them): loading nvcam.dll
//! loads nothing of FFmpeg, and the first call into each FFmpeg DLL goes through mingw's
//! `__delayLoadHelper2`, whose notify hook ([`notify_hook`]) loads that DLL by its full path in
//! nvcam.dll's folder, with the DLLs it imports searched in that folder too. The host's DLL search
//! path is not changed. A DLL that is not beside nvcam.dll is left to the helper's own
//! `LoadLibrary(name)`, the host's search order (a development build finds FFmpeg on PATH so).
//!
//! [`ensure_ffmpeg`] (nvcam_init, before nvcam's first FFmpeg call) loads each of those DLLs the
//! same way, checks every function nvcam imports from them and binds them all, so that a missing
//! or mismatched DLL is an error from nvcam_init rather than an exception inside a later call, and
//! no call goes through a delay-load thunk (its reasons are there).

use crate::status::*;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

type Hmodule = *mut c_void;

const GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT: u32 = 0x2;
const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;
/// The DLL's own folder for the DLLs it imports, then the application's folder and System32; not
/// the current directory or PATH, which could hold another FFmpeg build of the same names.
const LOAD_FLAGS: u32 = LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR | LOAD_LIBRARY_SEARCH_DEFAULT_DIRS;
const LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: u32 = 0x100;
const LOAD_LIBRARY_SEARCH_DEFAULT_DIRS: u32 = 0x1000;
const INVALID_FILE_ATTRIBUTES: u32 = u32::MAX;
const IMAGE_SCN_MEM_EXECUTE: usize = 0x2000_0000;
/// `dliNotePreLoadLibrary` of delayimp.h: the helper is about to load a DLL.
const DLI_NOTE_PRE_LOAD_LIBRARY: u32 = 1;

#[link(name = "kernel32")]
extern "system" {
    fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut Hmodule) -> i32;
    fn GetModuleFileNameW(module: Hmodule, name: *mut u16, size: u32) -> u32;
    fn GetFileAttributesW(name: *const u16) -> u32;
    fn LoadLibraryExW(name: *const u16, file: *mut c_void, flags: u32) -> Hmodule;
    fn GetProcAddress(module: Hmodule, name: *const c_char) -> *mut c_void;
    fn GetLastError() -> u32;
}

// mingw-w64's delay-load helper (libmingwex), the one the thunks call.
extern "system" {
    fn __delayLoadHelper2(descriptor: *const ImgDelayDescr, slot: *mut *const c_void) -> *const c_void;
}

/// The start of delayimp.h's `DelayLoadInfo` (x64 layout), as far as the hook reads it.
#[repr(C)]
struct DelayLoadInfo {
    cb: u32,
    pidd: *const c_void,
    ppfn: *mut c_void,
    sz_dll: *const c_char,
}

// The helper calls the hook through `__pfnDliNotifyHook2`, a pointer it takes from whichever object
// defines it first (mingw's own default, NULL, is the fallback in libmingwex). Defined in assembly
// because a `#[no_mangle]` static would be exported from nvcam.dll beside the C API.
std::arch::global_asm!(
    ".section .data,\"dw\"",
    ".globl __pfnDliNotifyHook2",
    ".balign 8",
    "__pfnDliNotifyHook2:",
    ".quad {hook}",
    ".text",
    hook = sym notify_hook,
);

/// The delay-load helper's notify hook: on "pre load library" the DLL's handle loaded from our own
/// folder, otherwise NULL (the helper goes on as it would without a hook). Must not unwind: it runs
/// inside the helper, called from FFmpeg's import thunks.
unsafe extern "system" fn notify_hook(reason: u32, info: *const DelayLoadInfo) -> *mut c_void {
    if reason != DLI_NOTE_PRE_LOAD_LIBRARY || info.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the helper passes its DelayLoadInfo, whose `sz_dll` is the NUL-terminated DLL name
    // in our image's delay import table.
    let name = unsafe { (*info).sz_dll };
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: as above, `name` is NUL-terminated and lives as long as our image.
    let name = unsafe { CStr::from_ptr(name) };
    match load_beside_self(name) {
        Some(Ok(h)) => h,
        _ => std::ptr::null_mut(),
    }
}

/// Our module's handle: nvcam.dll, or the executable the rlib was linked into.
fn own_module() -> Option<Hmodule> {
    let mut h: Hmodule = std::ptr::null_mut();
    // SAFETY: FROM_ADDRESS takes an address inside this module (a function of ours) and
    // UNCHANGED_REFCOUNT adds no reference; `h` receives the handle.
    let ok = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
            own_module as *const u16,
            &mut h,
        )
    };
    (ok != 0 && !h.is_null()).then_some(h)
}

/// The full path of loaded module `h`, in UTF-16 (no NUL).
fn module_path(h: Hmodule) -> Option<Vec<u16>> {
    let mut buf = vec![0u16; 512];
    loop {
        // SAFETY: `buf` is writable for its length, which is what is passed.
        let n = unsafe { GetModuleFileNameW(h, buf.as_mut_ptr(), buf.len() as u32) } as usize;
        if n == 0 {
            return None;
        }
        if n < buf.len() {
            buf.truncate(n);
            return Some(buf);
        }
        // Truncated: a longer path than the buffer (long-path names reach 32767).
        if buf.len() >= 1 << 16 {
            return None;
        }
        buf.resize(buf.len() * 2, 0);
    }
}

/// The file of the loaded module that holds `addr` (for nvcam_init's check of its FFmpeg,
/// `crate::ffmpeg::own`).
pub(crate) fn module_file(addr: *const c_void) -> Option<String> {
    let mut h: Hmodule = std::ptr::null_mut();
    // SAFETY: FROM_ADDRESS with any address (no handle if no module holds it) and
    // UNCHANGED_REFCOUNT adds no reference; `h` receives the handle.
    let ok = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
            addr as *const u16,
            &mut h,
        )
    };
    if ok == 0 || h.is_null() {
        return None;
    }
    module_path(h).map(|p| String::from_utf16_lossy(&p))
}

/// The folder our module was loaded from, with its trailing separator, in UTF-16.
fn own_folder() -> Option<&'static [u16]> {
    static FOLDER: OnceLock<Option<Vec<u16>>> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let mut buf = module_path(own_module()?)?;
            let sep = buf.iter().rposition(|&c| c == u16::from(b'\\') || c == u16::from(b'/'))?;
            buf.truncate(sep + 1);
            Some(buf)
        })
        .as_deref()
}

/// `name` loaded from our own folder: None when it is not there (or our folder is unknown), else
/// the module or the error code of the load.
fn load_beside_self(name: &CStr) -> Option<std::result::Result<Hmodule, u32>> {
    let path = path_beside_self(name)?;
    // SAFETY: `path` is a NUL-terminated UTF-16 string.
    if unsafe { GetFileAttributesW(path.as_ptr()) } == INVALID_FILE_ATTRIBUTES {
        return None;
    }
    // SAFETY: as above; a full path, as LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR requires.
    let h = unsafe { LoadLibraryExW(path.as_ptr(), std::ptr::null_mut(), LOAD_FLAGS) };
    // SAFETY: no other call between the failed load and this.
    Some(if h.is_null() { Err(unsafe { GetLastError() }) } else { Ok(h) })
}

/// Our folder joined with `name` (an ASCII DLL name from the import table), NUL-terminated.
fn path_beside_self(name: &CStr) -> Option<Vec<u16>> {
    let folder = own_folder()?;
    let mut path = Vec::with_capacity(folder.len() + name.to_bytes().len() + 1);
    path.extend_from_slice(folder);
    path.extend(name.to_bytes().iter().map(|&b| u16::from(b)));
    path.push(0);
    Some(path)
}

/// delayimp.h's `ImgDelayDescr`: one per delay-loaded DLL, every field an RVA in our image except
/// the first and last.
#[repr(C)]
struct ImgDelayDescr {
    attributes: u32,
    dll_name: u32,
    module_handle: u32,
    iat: u32,
    int: u32,
    bound_iat: u32,
    unload_iat: u32,
    time_stamp: u32,
}

// The descriptors of the FFmpeg libraries nvcam calls (through ffmpeg-next's features: codec,
// format, device, software-scaling). GNU ld 2.40 does not fill the PE header's delay import
// directory, so they cannot be found from the image's headers; dlltool names each after its
// library file (libavcodec_nvcam.dll.a), and every library here is on the link line (ffmpeg-sys-next
// links them), so a name that no longer matched would fail the link, not the run.
extern "C" {
    #[link_name = "__DELAY_IMPORT_DESCRIPTOR_libavutil_nvcam_dll_a"]
    static AVUTIL: ImgDelayDescr;
    #[link_name = "__DELAY_IMPORT_DESCRIPTOR_libavcodec_nvcam_dll_a"]
    static AVCODEC: ImgDelayDescr;
    #[link_name = "__DELAY_IMPORT_DESCRIPTOR_libavformat_nvcam_dll_a"]
    static AVFORMAT: ImgDelayDescr;
    #[link_name = "__DELAY_IMPORT_DESCRIPTOR_libavdevice_nvcam_dll_a"]
    static AVDEVICE: ImgDelayDescr;
    #[link_name = "__DELAY_IMPORT_DESCRIPTOR_libswscale_nvcam_dll_a"]
    static SWSCALE: ImgDelayDescr;
}

/// A function imported from a delay-loaded DLL: by name or by ordinal, and its slot in our
/// delay-load import address table (IAT).
struct Import {
    name: Option<&'static CStr>,
    ordinal: u16,
    slot: *mut *const c_void,
}

impl Import {
    /// What `GetProcAddress` takes for it: the name, or the ordinal in the pointer's low word.
    fn proc_name(&self) -> *const c_char {
        self.name.map_or(self.ordinal as usize as *const c_char, CStr::as_ptr)
    }
    fn shown(&self) -> String {
        self.name.map_or_else(|| format!("#{}", self.ordinal), |n| n.to_string_lossy().into_owned())
    }
}

/// The DLLs our module delay-loads from FFmpeg: each descriptor with the DLL's name and the
/// functions imported from it.
fn delay_imports(base: *const u8) -> Vec<(&'static ImgDelayDescr, &'static CStr, Vec<Import>)> {
    // SAFETY: the descriptors are read-only data in our image, written by the linker.
    let descriptors = unsafe { [&AVUTIL, &AVCODEC, &AVFORMAT, &AVDEVICE, &SWSCALE] };
    let mut out = Vec::new();
    for d in descriptors {
        if d.dll_name == 0 || d.int == 0 || d.iat == 0 {
            continue;
        }
        // SAFETY: `base` is our own loaded image, and a descriptor's RVAs are relative to it and
        // stay valid while it is loaded (it is: we run in it). The name is NUL-terminated; the
        // name table (INT) is an array of 8-byte thunks ending with 0, each an ordinal (top bit
        // set) or the RVA of a 2-byte hint followed by the NUL-terminated function name; the IAT
        // has one 8-byte slot per INT entry, at the same index.
        unsafe {
            let dll = CStr::from_ptr(base.add(d.dll_name as usize) as *const c_char);
            let int = base.add(d.int as usize) as *const u64;
            let iat = base.add(d.iat as usize) as *mut *const c_void;
            let mut imports = Vec::new();
            for i in 0.. {
                let thunk = std::ptr::read_unaligned(int.add(i));
                if thunk == 0 {
                    break;
                }
                let by_ordinal = thunk >> 63 == 1;
                imports.push(Import {
                    name: (!by_ordinal)
                        .then(|| CStr::from_ptr(base.add((thunk & 0x7fff_ffff) as usize + 2) as *const c_char)),
                    ordinal: if by_ordinal { thunk as u16 } else { 0 },
                    slot: iat.add(i),
                });
            }
            out.push((d, dll, imports));
        }
    }
    out
}

/// Whether `addr` lies in an executable section of `module`: an exported function, not data.
fn in_code_section(module: Hmodule, addr: *const c_void) -> bool {
    let base = module as *const u8;
    let rva = (addr as usize).wrapping_sub(base as usize);
    // SAFETY: `module` is a loaded image, mapped as the PE format lays it out: the DOS header's
    // e_lfanew (offset 0x3c) leads to the 4-byte signature and the 20-byte file header (section
    // count at 2, optional header size at 16), then the optional header, then the section table,
    // 40 bytes a section (virtual size at 8, RVA at 12, characteristics at 36).
    unsafe {
        let rd32 = |off: usize| std::ptr::read_unaligned(base.add(off) as *const u32) as usize;
        let rd16 = |off: usize| std::ptr::read_unaligned(base.add(off) as *const u16) as usize;
        let file_header = rd32(0x3c) + 4;
        let sections = file_header + 20 + rd16(file_header + 16);
        (0..rd16(file_header + 2)).any(|i| {
            let s = sections + 40 * i;
            let (size, start) = (rd32(s + 8), rd32(s + 12));
            rva >= start && rva - start < size && rd32(s + 36) & IMAGE_SCN_MEM_EXECUTE != 0
        })
    }
}

/// Loads every DLL our module delay-loads from FFmpeg (from our own folder where it is there, as
/// the hook does), checks that each function imported from it exists and is code, then binds them
/// all, before nvcam's first call into FFmpeg. Checked first, because the helper raises an SEH
/// exception where a DLL or a function is missing, which would take the host down. Bound here,
/// because mingw's delay-load thunks (binutils 2.40) save the integer argument registers around the
/// helper but not xmm0-xmm3: the first call of a function through its thunk would lose a floating
/// point argument; bound, no call goes through a thunk. Data cannot be delay-loaded (the program
/// would read the thunk's code), hence the check that every import is code.
///
/// Succeeds once; a failure is retried by the next call (the DLLs may have been put in place since).
pub(crate) fn ensure_ffmpeg() -> Result<()> {
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.load(Ordering::Acquire) {
        return Ok(());
    }
    let base = own_module().ok_or_else(|| Error::internal("GetModuleHandleExW on nvcam's own module failed"))?;
    let folder = own_folder().map(String::from_utf16_lossy).unwrap_or_else(|| "?".into());
    let all = delay_imports(base as *const u8);
    for (_, dll, imports) in &all {
        let shown = dll.to_string_lossy();
        let h = match load_beside_self(dll) {
            Some(Ok(h)) => h,
            Some(Err(code)) => {
                return Err(Error::new(
                    ErrorKind::Ffmpeg,
                    format!("{shown} in {folder} could not be loaded: Windows error {code}{}", hint(code)),
                ))
            }
            None => {
                let wide: Vec<u16> = dll.to_bytes().iter().map(|&b| u16::from(b)).chain([0]).collect();
                // SAFETY: `wide` is a NUL-terminated UTF-16 name; flags 0 is the host's search order,
                // what the helper's own LoadLibrary would use.
                let h = unsafe { LoadLibraryExW(wide.as_ptr(), std::ptr::null_mut(), 0) };
                if h.is_null() {
                    // SAFETY: no other call between the failed load and this.
                    let code = unsafe { GetLastError() };
                    return Err(Error::new(
                        ErrorKind::Ffmpeg,
                        format!(
                            "{shown} is not in {folder} (keep the FFmpeg DLLs beside nvcam.dll), and loading it from the \
                             DLL search path failed: Windows error {code}"
                        ),
                    ));
                }
                h
            }
        };
        for f in imports {
            // SAFETY: `h` is a loaded module (we hold a reference, never released); the name is
            // NUL-terminated or an ordinal, as GetProcAddress takes either.
            let p = unsafe { GetProcAddress(h, f.proc_name()) };
            if p.is_null() {
                return Err(Error::new(
                    ErrorKind::Ffmpeg,
                    format!(
                        "{shown} (from {folder} or the DLL search path) has no function {}: not the FFmpeg build \
                         nvcam was built with",
                        f.shown()
                    ),
                ));
            }
            if !in_code_section(h, p) {
                return Err(Error::internal(format!(
                    "nvcam imports {} from {shown}, which is data there: data cannot be delay-loaded",
                    f.shown()
                )));
            }
        }
    }
    for (d, _, imports) in &all {
        for f in imports {
            // SAFETY: the helper's contract: a delay-load descriptor of our image and one of its IAT
            // slots. Every DLL and function was found above, so it does not raise; it loads the DLL
            // through our hook (the module we hold) and writes the function's address to the slot.
            unsafe { __delayLoadHelper2(*d, f.slot) };
        }
    }
    log::debug!(
        "FFmpeg DLLs loaded and bound ({}: {} functions), each from {folder} where it is there",
        all.iter().map(|(_, d, _)| d.to_string_lossy()).collect::<Vec<_>>().join(", "),
        all.iter().map(|(_, _, i)| i.len()).sum::<usize>()
    );
    DONE.store(true, Ordering::Release);
    Ok(())
}

fn hint(code: u32) -> &'static str {
    match code {
        126 => " (a DLL it imports is missing)",
        193 => " (not a 64-bit Windows DLL)",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[link(name = "kernel32")]
    extern "system" {
        fn GetModuleHandleA(name: *const c_char) -> Hmodule;
    }

    /// The module that holds `addr`, without a reference.
    fn owner(addr: *const c_void) -> Hmodule {
        let mut h: Hmodule = std::ptr::null_mut();
        // SAFETY: FROM_ADDRESS with any address (NULL result if no module holds it); `h` receives it.
        unsafe {
            GetModuleHandleExW(
                GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                addr as *const u16,
                &mut h,
            )
        };
        h
    }

    #[test]
    fn every_ffmpeg_import_is_bound_to_its_dll_after_ensure_ffmpeg() {
        ensure_ffmpeg().unwrap();
        let all = delay_imports(own_module().unwrap() as *const u8);
        let names: Vec<_> = all.iter().map(|(_, d, _)| d.to_string_lossy().into_owned()).collect();
        assert_eq!(all.len(), 5, "{names:?}");
        for (_, dll, imports) in &all {
            assert!(!imports.is_empty(), "nothing imported from {dll:?}");
            // SAFETY: a NUL-terminated name; no reference is taken.
            let h = unsafe { GetModuleHandleA(dll.as_ptr()) };
            assert!(!h.is_null(), "{dll:?} is not loaded");
            for f in imports {
                // SAFETY: the slot is in our image's delay-load IAT, readable while we run.
                let p = unsafe { std::ptr::read_volatile(f.slot) };
                assert_eq!(owner(p), h, "{} from {dll:?} is not bound (the slot points at {p:?})", f.shown());
                assert!(in_code_section(h, p), "{} from {dll:?}", f.shown());
            }
        }
        // A second call is the cached success.
        ensure_ffmpeg().unwrap();
    }

    #[test]
    fn code_and_data_are_told_apart() {
        static DATA: [u8; 4] = [1, 2, 3, 4];
        let me = own_module().unwrap();
        assert!(in_code_section(me, own_module as *const c_void));
        assert!(!in_code_section(me, DATA.as_ptr() as *const c_void));
        assert!(!in_code_section(me, std::ptr::null()));
    }
}
