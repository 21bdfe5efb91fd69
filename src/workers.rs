//! The library's one small pool of worker threads (`nvcam-work-N`), for work a call splits into
//! parts and waits for: the CPU conversion's bands of rows and the copies out of pinned staging
//! of a host download. The threads start on first use (never per call) and are joined by
//! [`stop`] at `nvcam_shutdown`, so no nvcam thread outlives it; a later call starts them again.
//!
//! A call hands over `n` tasks and runs them itself too: tasks are claimed in order from one
//! counter by the caller and whichever workers are free, so a call never waits for a worker (a
//! busy pool, or one being stopped, only means the caller does more of its own tasks), and one
//! camera's call never waits for another's.

use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// The most threads one call uses, the caller included (the pool has one fewer).
pub(crate) const MAX_PARALLEL: usize = 8;

/// How many threads a call may use, the caller included: the cores, at most [`MAX_PARALLEL`].
pub(crate) fn parallelism() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, MAX_PARALLEL)
}

/// The task, its lifetime erased: valid until every claimed task finished (the caller waits for
/// that before it returns, see [`for_each`]).
struct TaskRef(*const (dyn Fn(usize) + Sync));

// SAFETY: the pointee is `Sync` and outlives every use (the caller of `for_each` waits).
unsafe impl Send for TaskRef {}
// SAFETY: as for Send.
unsafe impl Sync for TaskRef {}

/// One call's tasks.
struct Job {
    task: TaskRef,
    n: usize,
    /// The next task to claim (may run past `n`: nothing left).
    next: AtomicUsize,
    /// Tasks finished (run or panicked).
    done: AtomicUsize,
    panicked: AtomicBool,
    caller: Thread,
}

impl Job {
    /// Claims and runs tasks until none is left. Returns whether it ran the last one to finish.
    fn work(&self) -> bool {
        let mut finished_last = false;
        loop {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            if i >= self.n {
                return finished_last;
            }
            // SAFETY: task `i` was claimed before `done` reached `n`, so the caller of `for_each`
            // is still waiting and the closure is alive (see `TaskRef`).
            let task = unsafe { &*self.task.0 };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(i))).is_err() {
                self.panicked.store(true, Ordering::Relaxed);
            }
            finished_last = self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.n;
        }
    }
}

struct Shared {
    jobs: Mutex<VecDeque<Arc<Job>>>,
    wake: Condvar,
}

static SHARED: Shared = Shared { jobs: Mutex::new(VecDeque::new()), wake: Condvar::new() };
/// The running threads (empty: none started, or stopped).
static THREADS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());
/// Bumped by [`stop`]: a worker runs while the generation it started in is current.
static GENERATION: AtomicU64 = AtomicU64::new(0);

fn start_if_needed() {
    let want = parallelism() - 1;
    let mut t = THREADS.lock();
    if !t.is_empty() || want == 0 {
        return;
    }
    let gen = GENERATION.load(Ordering::Acquire);
    for i in 0..want {
        match std::thread::Builder::new().name(format!("nvcam-work-{i}")).spawn(move || worker(gen)) {
            Ok(h) => t.push(h),
            // Fewer workers only means callers do more of their own tasks.
            Err(e) => log::warn!("could not start worker thread {i}: {e}"),
        }
    }
}

fn worker(gen: u64) {
    let current = || GENERATION.load(Ordering::Acquire) == gen;
    loop {
        let job = {
            let mut q = SHARED.jobs.lock();
            loop {
                if !current() {
                    return;
                }
                // Jobs whose tasks are all claimed leave the queue.
                while q.front().is_some_and(|j| j.next.load(Ordering::Acquire) >= j.n) {
                    q.pop_front();
                }
                if let Some(j) = q.front() {
                    break j.clone();
                }
                SHARED.wake.wait(&mut q);
            }
        };
        if job.work() {
            job.caller.unpark();
        }
    }
}

/// Runs `task(0)` … `task(n - 1)` on the pool's threads and the caller's, and returns once every
/// one finished. Tasks are claimed in index order. A task that panicked makes this an error (the
/// others still run).
pub(crate) fn for_each(n: usize, task: &(dyn Fn(usize) + Sync)) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if n == 1 {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(0))).map_err(|_| Error::internal("a worker task panicked"));
    }
    start_if_needed();
    // SAFETY (of the erasure): this function returns only after `done == n`, i.e. after every
    // claimed task returned; later claims find nothing and never touch the pointer.
    let erased: *const (dyn Fn(usize) + Sync + '_) = task;
    // SAFETY: only the lifetime changes (same fat pointer); see the comment above.
    let erased: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(erased) };
    let job = Arc::new(Job {
        task: TaskRef(erased),
        n,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        caller: std::thread::current(),
    });
    {
        SHARED.jobs.lock().push_back(job.clone());
        // Wake as many workers as there are tasks beyond the caller's first.
        for _ in 1..n {
            if !SHARED.wake.notify_one() {
                break;
            }
        }
    }
    job.work();
    // Whatever workers claimed is running now: wait for it (a task is short and bounded; the
    // park may wake spuriously, hence the loop). The job leaves the queue on the next look.
    while job.done.load(Ordering::Acquire) < n {
        std::thread::park_timeout(Duration::from_millis(5));
    }
    if job.panicked.load(Ordering::Relaxed) {
        return Err(Error::internal("a worker task panicked"));
    }
    Ok(())
}

/// Shutdown: stops the workers and joins them by `deadline` (an idle worker exits at once; a
/// busy one after its task). Returns whether none is left.
pub(crate) fn stop(deadline: Instant) -> bool {
    let threads: Vec<JoinHandle<()>> = {
        let mut t = THREADS.lock();
        // Bumped under the lock: a start racing with this one starts threads of the new
        // generation (which keep running), never ones that exit at once.
        GENERATION.fetch_add(1, Ordering::AcqRel);
        std::mem::take(&mut *t)
    };
    if threads.is_empty() {
        return true;
    }
    {
        let _q = SHARED.jobs.lock();
        SHARED.wake.notify_all();
    }
    let mut all = true;
    for h in threads {
        while !h.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        if h.is_finished() {
            let _ = h.join();
        } else {
            all = false;
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every index runs exactly once, borrowed data included, and the pool survives a stop.
    #[test]
    fn every_task_runs_once_and_the_pool_restarts_after_stop() {
        for round in 0..3 {
            let hits: Vec<AtomicUsize> = (0..37).map(|_| AtomicUsize::new(0)).collect();
            for_each(hits.len(), &|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "round {round}");
            assert!(stop(Instant::now() + Duration::from_secs(5)), "workers did not stop");
        }
    }

    /// A panicking task is an error for its caller, not a dead pool.
    #[test]
    fn a_panicking_task_is_reported_and_the_pool_keeps_working() {
        let r = for_each(8, &|i| {
            if i == 3 {
                panic!("task 3");
            }
        });
        assert!(r.is_err());
        let sum = AtomicUsize::new(0);
        for_each(8, &|i| {
            sum.fetch_add(i, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(sum.load(Ordering::Relaxed), 28);
    }
}
