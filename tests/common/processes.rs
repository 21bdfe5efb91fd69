//! This process and the ones a test starts: its threads by name and resident memory, the built
//! cdylib and test binaries, and commands run with a time limit and a log.

use super::*;

/// Descriptors (Linux) or handles (Windows) this process has open: what a leak of either shows in.
#[cfg(not(windows))]
pub fn open_handles() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Descriptors (Linux) or handles (Windows) this process has open: what a leak of either shows in.
#[cfg(windows)]
pub fn open_handles() -> usize {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetCurrentProcess() -> *mut std::ffi::c_void;
        fn GetProcessHandleCount(process: *mut std::ffi::c_void, count: *mut u32) -> i32;
    }
    let mut n = 0u32;
    // SAFETY: the pseudo handle of this process; writes one u32.
    let ok = unsafe { GetProcessHandleCount(GetCurrentProcess(), &mut n) };
    assert!(ok != 0, "GetProcessHandleCount failed");
    n as usize
}

/// Threads of this process whose name starts with `prefix` (camera workers are `nvcam-cam-*`).
#[cfg(not(windows))]
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm")).map(|c| c.starts_with(prefix)).unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

/// Windows (and Wine): the process's threads from a Toolhelp snapshot, named by
/// GetThreadDescription (Rust's std names its threads with SetThreadDescription).
#[cfg(windows)]
pub fn threads_named(prefix: &str) -> usize {
    use std::ffi::c_void;
    #[repr(C)]
    struct ThreadEntry32 {
        size: u32,
        usage: u32,
        thread_id: u32,
        owner_process_id: u32,
        base_pri: i32,
        delta_pri: i32,
        flags: u32,
    }
    #[link(name = "kernel32")]
    extern "system" {
        fn CreateToolhelp32Snapshot(flags: u32, pid: u32) -> *mut c_void;
        fn Thread32First(snap: *mut c_void, e: *mut ThreadEntry32) -> i32;
        fn Thread32Next(snap: *mut c_void, e: *mut ThreadEntry32) -> i32;
        fn OpenThread(access: u32, inherit: i32, tid: u32) -> *mut c_void;
        fn GetThreadDescription(thread: *mut c_void, desc: *mut *mut u16) -> i32;
        fn LocalFree(mem: *mut c_void) -> *mut c_void;
        fn CloseHandle(h: *mut c_void) -> i32;
        fn GetCurrentProcessId() -> u32;
    }
    const TH32CS_SNAPTHREAD: u32 = 0x4;
    const THREAD_QUERY_LIMITED_INFORMATION: u32 = 0x0800;
    let mut n = 0;
    // SAFETY: Win32 calls with the documented argument types; the entry's size field is set before
    // Thread32First, every handle opened here is closed, and the description GetThreadDescription
    // allocates is a NUL-terminated UTF-16 string read up to its NUL and freed with LocalFree.
    unsafe {
        let snap = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snap as isize == -1 {
            return 0;
        }
        let me = GetCurrentProcessId();
        let mut e: ThreadEntry32 = std::mem::zeroed();
        e.size = std::mem::size_of::<ThreadEntry32>() as u32;
        let mut more = Thread32First(snap, &mut e) != 0;
        while more {
            if e.owner_process_id == me {
                let h = OpenThread(THREAD_QUERY_LIMITED_INFORMATION, 0, e.thread_id);
                if !h.is_null() {
                    let mut desc: *mut u16 = std::ptr::null_mut();
                    if GetThreadDescription(h, &mut desc) >= 0 && !desc.is_null() {
                        let len = (0..).take_while(|&i| *desc.add(i) != 0).count();
                        let name = String::from_utf16_lossy(std::slice::from_raw_parts(desc, len));
                        n += name.starts_with(prefix) as usize;
                        LocalFree(desc as *mut c_void);
                    }
                    CloseHandle(h);
                }
            }
            more = Thread32Next(snap, &mut e) != 0;
        }
        CloseHandle(snap);
    }
    n
}


/// Resident memory of this process (the working set on Windows).
#[cfg(not(windows))]
pub fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    s.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 4096
}

#[cfg(windows)]
pub fn rss_bytes() -> u64 {
    #[repr(C)]
    #[derive(Default)]
    struct Counters {
        cb: u32,
        page_fault_count: u32,
        peak_working_set: usize,
        working_set: usize,
        quota_peak_paged_pool: usize,
        quota_paged_pool: usize,
        quota_peak_non_paged_pool: usize,
        quota_non_paged_pool: usize,
        pagefile: usize,
        peak_pagefile: usize,
    }
    extern "system" {
        fn GetCurrentProcess() -> *mut std::ffi::c_void;
        fn K32GetProcessMemoryInfo(process: *mut std::ffi::c_void, counters: *mut Counters, cb: u32) -> i32;
    }
    let mut c = Counters { cb: std::mem::size_of::<Counters>() as u32, ..Default::default() };
    // SAFETY: the pseudo-handle of this process and a struct of the size we declare.
    let ok = unsafe { K32GetProcessMemoryInfo(GetCurrentProcess(), &mut c, c.cb) };
    assert!(ok != 0, "K32GetProcessMemoryInfo failed");
    c.working_set as u64
}


/// `<target>/<profile>/deps`: where this test binary and the cdylib cargo built for it live.
pub fn deps_dir() -> PathBuf {
    std::env::current_exe().expect("current_exe").parent().expect("deps dir").to_path_buf()
}

/// The cdylib this `cargo test` built (`libnvcam.so`, `nvcam.dll`), next to the test binaries.
pub fn cdylib() -> PathBuf {
    let name = format!("{}nvcam{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let p = deps_dir().join(name);
    assert!(p.is_file(), "{} not found: cargo builds the cdylib next to the test binaries", p.display());
    p
}

/// A finished command's status and output, for an assertion message.
pub fn show(o: &Output) -> String {
    format!("exit: {}\n--- stdout\n{}\n--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Runs `cmd` for at most `limit`, stdout and stderr interleaved into `log`; returns whether it
/// exited 0, and everything it printed with a last line saying how it ended.
pub fn run_logged(mut cmd: Command, log: &Path, limit: Duration) -> (bool, String) {
    let f = std::fs::File::create(log).expect("create log");
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(f.try_clone().expect("dup log"))
        .stderr(f)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut text = std::fs::read_to_string(log).unwrap_or_default();
    let ok = match status {
        Some(s) => {
            text.push_str(&format!("[exited: {s}, after {:.1} s]\n", t0.elapsed().as_secs_f64()));
            s.success()
        }
        None => {
            text.push_str(&format!("[KILLED: still running after {} s]\n", limit.as_secs()));
            false
        }
    };
    (ok, text)
}

/// Busy threads that spin until dropped, one per core: a machine whose every core is taken by
/// something else, as a loaded host or a camera beside an inference job.
pub struct CpuHog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl CpuHog {
    pub fn start() -> CpuHog {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    }
                    x
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The kernel's count of UDP datagrams dropped for a full receive buffer, all sockets of this
/// network namespace (`/proc/net/snmp`, `Udp: ... RcvbufErrors`).
#[cfg(target_os = "linux")]
pub fn udp_rcvbuf_errors() -> u64 {
    let t = std::fs::read_to_string("/proc/net/snmp").expect("/proc/net/snmp");
    let mut udp = t.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next().expect("Udp header"), udp.next().expect("Udp values"));
    let i = names.split_whitespace().position(|n| n == "RcvbufErrors").expect("RcvbufErrors");
    values.split_whitespace().nth(i).and_then(|v| v.parse().ok()).expect("RcvbufErrors value")
}
