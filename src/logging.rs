//! Where the library's log goes: a file (through simplelog), stderr, a C callback for C/C++ hosts,
//! and a bounded queue that LabVIEW polls with `nvcam_log_pop` (a CLFN cannot take a callback).
//!
//! One `log::Log` is installed for the life of the process (the library is pinned, so that is safe)
//! and fans out to whatever sinks are configured now; reconfiguring never needs a second logger.

use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::Mutex;
use simplelog::{Config, SharedLogger, WriteLogger};
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The host's callback, wrapped by `ffi` (the C function pointer and its user data live there).
pub(crate) type Sink = Box<dyn Fn(Level, &CStr) + Send + Sync>;

struct Callback {
    f: Arc<Sink>,
    min: LevelFilter,
}

const QUEUE_CAP: usize = 1024;

struct Sinks {
    file: Option<Box<dyn SharedLogger>>,
    stderr: bool,
    level: LevelFilter,
    callback: Option<Callback>,
    queue: VecDeque<(Level, String)>,
}

static SINKS: Mutex<Sinks> =
    Mutex::new(Sinks { file: None, stderr: false, level: LevelFilter::Warn, callback: None, queue: VecDeque::new() });
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// A host callback that logs back into us must not recurse.
    static IN_CALLBACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

struct Fanout;
static FANOUT: Fanout = Fanout;

impl Log for Fanout {
    fn enabled(&self, m: &Metadata) -> bool {
        m.target().starts_with("nvcam") && m.level() <= log::max_level()
    }
    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let msg = format!("{}", r.args());
        let cb = {
            let mut s = SINKS.lock();
            if r.level() <= s.level {
                if let Some(f) = &s.file {
                    f.log(r);
                }
                if s.stderr {
                    eprintln!("[nvcam {:5}] {msg}", r.level());
                }
                if s.queue.len() == QUEUE_CAP {
                    s.queue.pop_front();
                }
                s.queue.push_back((r.level(), msg.clone()));
            }
            s.callback.as_ref().filter(|c| r.level() <= c.min).map(|c| c.f.clone())
        };
        // Never call the host with our lock held.
        if let Some(f) = cb {
            IN_CALLBACK.with(|busy| {
                if busy.replace(true) {
                    return;
                }
                if let Ok(c) = CString::new(msg.replace('\0', " ")) {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(r.level(), &c)));
                }
                busy.set(false);
            });
        }
    }
    fn flush(&self) {
        if let Some(f) = &SINKS.lock().file {
            f.flush();
        }
    }
}

fn install() {
    if !INSTALLED.swap(true, Ordering::AcqRel) && log::set_logger(&FANOUT).is_err() {
        // The host process already has a `log` logger (another Rust library): ours stays silent
        // except through the callback/queue, which we still feed from our own calls below.
        log::warn!("nvcam: another log::Log is installed; nvcam logs go to it");
    }
    recompute_max();
}

fn recompute_max() {
    let s = SINKS.lock();
    let cb = s.callback.as_ref().map(|c| c.min).unwrap_or(LevelFilter::Off);
    log::set_max_level(s.level.max(cb));
}

/// Sets the file/stderr sinks and the level. `path` "" = no file, "-" = stderr.
pub(crate) fn init(path: &str, level: LevelFilter) -> Result<(), String> {
    let file: Option<Box<dyn SharedLogger>> = match path {
        "" | "-" => None,
        p => {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("cannot open log file '{p}': {e}"))?;
            Some(WriteLogger::new(LevelFilter::Trace, Config::default(), f))
        }
    };
    {
        let mut s = SINKS.lock();
        s.file = file;
        s.stderr = path == "-";
        s.level = level;
    }
    install();
    Ok(())
}

pub(crate) fn set_callback(f: Option<Sink>, min: LevelFilter) {
    SINKS.lock().callback = f.map(|f| Callback { f: Arc::new(f), min });
    install();
}

/// Makes sure the queue collects at least warnings from the first call on.
pub(crate) fn ensure_installed() {
    install();
}

/// Pops the oldest queued message if it fits in `cap` bytes with its NUL; otherwise leaves it
/// queued and returns its level and length.
pub(crate) fn pop_if_fits(cap: usize) -> Result<Option<(Level, String)>, (Level, usize)> {
    let mut s = SINKS.lock();
    match s.queue.front() {
        None => Ok(None),
        Some((l, m)) if m.len() >= cap => Err((*l, m.len())),
        Some(_) => Ok(s.queue.pop_front()),
    }
}

/// Shutdown: the host's callback must not be called after `nvcam_shutdown` returns.
pub(crate) fn clear_callback() {
    SINKS.lock().callback = None;
    recompute_max();
}
