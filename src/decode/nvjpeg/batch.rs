//! One decode worker per GPU: the pictures of every nvJPEG camera decoded together, in batched
//! `nvjpegDecodeBatched` calls on the GPU's JPEG engines.
//!
//! One picture per call and one decode state per camera did not scale: at about 25 cameras the
//! engines were busy, each call took tens of milliseconds of host time, and making a camera's
//! decode state took seconds (camera opens timed out). The hardware back end is built for
//! batches: here the cameras hand their pictures to the GPU's worker ([`Batcher::decode`]), which
//! takes whatever is waiting (at most [`MAX_BATCH`]) into one call on its own stream, from one of
//! two decode states in turn (the host staging of one batch overlaps the engines' work on the
//! last).
//!
//! Ordering is by events, as for NVDEC: a camera records `ready` on its stream (its previous
//! picture's kernels have read the planes the batch writes), the worker's stream waits on it,
//! and after the batch the worker records the camera's `decoded` event, which the camera's
//! stream waits on before packing chroma. A camera waits on the host only until its batch is
//! enqueued: at most the batch in flight and its own, never another camera's open, close or
//! error. Each camera has at most one picture queued, so the queue is bounded by the cameras. A
//! batch the library refuses as a whole is decoded again one picture at a time, so a damaged
//! picture fails alone.

use crate::gpu::nvjpeg::api::{Nvjpeg, NvjpegError};
use crate::gpu::nvjpeg::sys::{self, cudaStream_t, nvjpegImage_t};
use crate::gpu::context::{Device, Stream};
use crate::gpu::driver::{self, sys as cu};
use crate::status::*;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;

/// The most pictures in one call (the H100 has 7 engines; larger batches only add latency).
pub(crate) const MAX_BATCH: usize = 32;

/// One picture to decode: the camera's bitstream and planes, and its two events.
pub(crate) struct Job {
    pub data: *const u8,
    pub len: usize,
    pub out: nvjpegImage_t,
    /// Recorded on the camera's stream: the batch waits for it.
    pub ready: cu::CUevent,
    /// Recorded by the worker on its stream after the batch.
    pub decoded: cu::CUevent,
    reply: Arc<Reply>,
    answered: bool,
}

impl Job {
    fn answer(&mut self, r: std::result::Result<(), NvjpegError>) {
        *self.reply.done.lock() = Some(r);
        self.reply.cv.notify_one();
        self.answered = true;
    }
}

impl Drop for Job {
    /// A job dropped unanswered (the worker unwinding from a panic, or stopped with jobs queued)
    /// still answers, so no camera waits for ever.
    fn drop(&mut self) {
        if !self.answered {
            self.answer(Err(NvjpegError { call: "nvJPEG worker (stopped)", status: sys::NVJPEG_STATUS_EXECUTION_FAILED }));
        }
    }
}

// SAFETY: the pointers are the submitting camera's, valid until its reply (it waits for it); the
// events are driver handles usable from any thread.
unsafe impl Send for Job {}

/// Where the worker leaves one job's outcome.
#[derive(Default)]
pub(crate) struct Reply {
    done: Mutex<Option<std::result::Result<(), NvjpegError>>>,
    cv: Condvar,
}

struct Queue {
    jobs: VecDeque<Job>,
    stop: bool,
}

struct Shared {
    q: Mutex<Queue>,
    cv: Condvar,
}

/// A GPU's decode worker (a thread and its states), stopped and joined when dropped.
pub(crate) struct Batcher {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The handle as the worker holds it.
#[derive(Clone, Copy)]
struct Handle(sys::nvjpegHandle_t);
// SAFETY: an nvJPEG handle is thread safe (nvJPEG's documentation).
unsafe impl Send for Handle {}

impl Batcher {
    /// Starts GPU `dev`'s worker on `handle` (which must outlive the Batcher).
    pub(crate) fn start(lib: &'static Nvjpeg, handle: sys::nvjpegHandle_t, dev: &Arc<Device>) -> Result<Batcher> {
        let stream = Stream::new(dev)?;
        let mut states = Vec::new();
        {
            let _g = dev.push()?;
            for _ in 0..2 {
                // SAFETY: a live handle (the caller's contract).
                match unsafe { lib.state_create(handle) } {
                    Ok(s) => states.push(State { raw: s, n: 0 }),
                    Err(e) => {
                        drop_states(lib, &mut states);
                        return Err(e.into());
                    }
                }
            }
        }
        let shared = Arc::new(Shared { q: Mutex::new(Queue { jobs: VecDeque::new(), stop: false }), cv: Condvar::new() });
        let w = Worker { lib, handle: Handle(handle), stream, states, shared: shared.clone(), args: Args::default(), batches: 0, pictures: 0 };
        let thread = std::thread::Builder::new()
            .name(format!("nvcam-jpeg{}", dev.ordinal))
            .spawn(move || w.run())
            .map_err(|e| Error::internal(format!("nvJPEG worker thread: {e}")))?;
        Ok(Batcher { shared, thread: Some(thread) })
    }

    /// Decodes one picture with the others waiting: returns once its batch is enqueued on the
    /// worker's stream and `decoded` recorded after it (or the picture failed).
    pub(crate) fn decode(&self, data: &[u8], out: nvjpegImage_t, ready: cu::CUevent, decoded: cu::CUevent, reply: &Arc<Reply>) -> std::result::Result<(), Error> {
        *reply.done.lock() = None;
        {
            let mut q = self.shared.q.lock();
            if q.stop {
                return Err(Error::new(ErrorKind::Closed, "nvJPEG worker stopped"));
            }
            q.jobs.push_back(Job { data: data.as_ptr(), len: data.len(), out, ready, decoded, reply: reply.clone(), answered: false });
        }
        self.shared.cv.notify_one();
        let mut d = reply.done.lock();
        loop {
            if let Some(r) = d.take() {
                return r.map_err(Error::from);
            }
            reply.cv.wait(&mut d);
        }
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        self.shared.q.lock().stop = true;
        self.shared.cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct State {
    raw: sys::nvjpegJpegState_t,
    /// The batch size it is initialized for (0: not yet).
    n: usize,
}

fn drop_states(lib: &Nvjpeg, states: &mut Vec<State>) {
    for s in states.drain(..) {
        // SAFETY: our states, destroyed once; the caller waited for their work (the worker's
        // stream is synchronized first) and holds the context.
        let _ = unsafe { lib.state_destroy(s.raw) };
    }
}

/// Closes a worker's queue when the worker ends: later submissions fail at once, and jobs
/// still queued are answered (dropped, [`Job`]'s Drop).
struct Closing(Arc<Shared>);

impl Drop for Closing {
    fn drop(&mut self) {
        let left: Vec<Job> = {
            let mut q = self.0.q.lock();
            q.stop = true;
            q.jobs.drain(..).collect()
        };
        drop(left);
    }
}

struct Worker {
    lib: &'static Nvjpeg,
    handle: Handle,
    stream: Stream,
    states: Vec<State>,
    shared: Arc<Shared>,
    args: Args,
    batches: u64,
    pictures: u64,
}

/// The jobs of the batch in hand and the arrays `nvjpegDecodeBatched` takes, refilled for each
/// batch: sized by the first batches (at most [`MAX_BATCH`]), then never allocated again.
#[derive(Default)]
struct Args {
    jobs: Vec<Job>,
    results: Vec<std::result::Result<(), NvjpegError>>,
    ptrs: Vec<*const u8>,
    lens: Vec<usize>,
    outs: Vec<nvjpegImage_t>,
}

// SAFETY: the states are used by the worker's thread alone (moved there at start); the handle
// is thread safe; the stream and device are Send.
unsafe impl Send for Worker {}

impl Worker {
    fn run(mut self) {
        // However the loop ends (a panic included), the queue is closed and what is left in it
        // answered.
        let _closing = Closing(self.shared.clone());
        let mut k = 0;
        let mut took = std::time::Duration::ZERO;
        let mut jobs = std::mem::take(&mut self.args.jobs);
        let mut results = std::mem::take(&mut self.args.results);
        loop {
            {
                let mut q = self.shared.q.lock();
                while q.jobs.is_empty() && !q.stop {
                    self.shared.cv.wait(&mut q);
                }
                // Stopped: jobs still queued (none can be: the Batcher goes with the last
                // camera) are decoded first.
                let n = q.jobs.len().min(MAX_BATCH);
                if n == 0 {
                    break;
                }
                jobs.extend(q.jobs.drain(..n));
            }
            let t = std::time::Instant::now();
            self.batch(&jobs, k, &mut results);
            took += t.elapsed();
            k = (k + 1) % self.states.len();
            self.batches += 1;
            self.pictures += jobs.len() as u64;
            for (j, r) in jobs.iter_mut().zip(results.drain(..)) {
                j.answer(r);
            }
            jobs.clear();
        }
        if self.batches > 0 {
            log::info!(
                "nvJPEG worker: {} pictures in {} batches ({:.1} a batch), {:.3} ms host time a batch",
                self.pictures,
                self.batches,
                self.pictures as f64 / self.batches as f64,
                took.as_secs_f64() * 1e3 / self.batches as f64
            );
        }
        let _ = self.stream.synchronize();
        if let Ok(_g) = self.stream.dev.push() {
            drop_states(self.lib, &mut self.states);
        }
    }

    /// Enqueues `jobs` in one call from state `k`, each picture alone where the call fails;
    /// each job's outcome into `results`. Every job's `decoded` is recorded before this returns,
    /// so before any camera hears its answer and waits for it.
    fn batch(&mut self, jobs: &[Job], k: usize, results: &mut Vec<std::result::Result<(), NvjpegError>>) {
        let fail = |results: &mut Vec<_>, status| results.extend(jobs.iter().map(|_| Err(NvjpegError { call: "nvJPEG worker", status })));
        let Ok(_g) = self.stream.dev.push() else { return fail(results, sys::NVJPEG_STATUS_EXECUTION_FAILED) };
        let s = self.stream.raw();
        for j in jobs {
            // SAFETY: our stream, context current (guard); the camera's live event, recorded
            // before it submitted the job.
            if unsafe { driver::stream::wait_event(s, j.ready) }.is_err() {
                return fail(results, sys::NVJPEG_STATUS_EXECUTION_FAILED);
            }
        }
        if self.call(jobs, k).is_ok() {
            results.extend(jobs.iter().map(|_| Ok(())));
        } else {
            // One damaged picture fails the call for all: decode each alone.
            for j in jobs {
                let r = self.call(std::slice::from_ref(j), k);
                results.push(r);
            }
        }
        for j in jobs {
            // SAFETY: the camera's live event and our stream, context current.
            let _ = unsafe { driver::stream::event_record(j.decoded, s) };
        }
    }

    fn call(&mut self, jobs: &[Job], k: usize) -> std::result::Result<(), NvjpegError> {
        let h = self.handle.0;
        let st = &mut self.states[k];
        if st.n != jobs.len() {
            st.n = 0;
            // SAFETY: our handle and state; the state's previous batches are ordered before on
            // our stream (nvJPEG synchronizes its own buffers).
            unsafe { self.lib.batched_initialize(h, st.raw, jobs.len()) }?;
            st.n = jobs.len();
        }
        let a = &mut self.args;
        a.ptrs.clear();
        a.lens.clear();
        a.outs.clear();
        a.ptrs.extend(jobs.iter().map(|j| j.data));
        a.lens.extend(jobs.iter().map(|j| j.len));
        a.outs.extend(jobs.iter().map(|j| j.out));
        // SAFETY: our handle and state, initialized for this many pictures; each bitstream is
        // valid (its camera waits for the reply) and each camera's planes are device memory of
        // this context with room for its picture, not reused before `decoded` completes.
        unsafe { self.lib.decode_batched(h, st.raw, &a.ptrs, &a.lens, &mut a.outs, self.stream.raw() as cudaStream_t) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A camera waits for its job's answer with no time limit: a job the worker drops without
    /// answering (unwinding from a panic, or the queue closed under it) must answer with an
    /// error, or the camera's thread would hang for good.
    #[test]
    fn a_job_dropped_unanswered_answers_with_an_error() {
        let reply = Arc::new(Reply::default());
        let job = |answered| Job {
            data: std::ptr::null(),
            len: 0,
            out: nvjpegImage_t::default(),
            ready: std::ptr::null_mut(),
            decoded: std::ptr::null_mut(),
            reply: reply.clone(),
            answered,
        };
        drop(job(false));
        assert!(matches!(reply.done.lock().take(), Some(Err(_))));
        let mut j = job(false);
        j.answer(Ok(()));
        drop(j);
        assert!(matches!(reply.done.lock().take(), Some(Ok(()))), "an answered job keeps its answer");
        let shared = Arc::new(Shared { q: Mutex::new(Queue { jobs: VecDeque::from([job(false)]), stop: false }), cv: Condvar::new() });
        drop(Closing(shared.clone()));
        assert!(shared.q.lock().stop && shared.q.lock().jobs.is_empty());
        assert!(matches!(reply.done.lock().take(), Some(Err(_))), "a job left queued when the worker ends is answered");
    }
}
