//! Where a camera thread's time goes, per stage: a log2 histogram of call durations for each
//! [`Stage`], process-wide, read and cleared by the churn benchmark (`nvcam::diag::stage_times`)
//! to say which call a late frame waited in. Off unless a benchmark turns it on
//! ([`enable`]): the histograms are shared by every camera thread, and their atomics on the
//! per-frame path would be cache-line traffic between cores for nothing in production; off,
//! a call costs one relaxed load.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A timed stage of a camera thread's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `avcodec_send_packet` on the FFmpeg hwaccel decoder (FFmpeg decodes and maps in it).
    HwSend,
    /// The send that made FFmpeg create its NVDEC decoder (first picture of a session).
    HwCreate,
    /// `avcodec_receive_frame` that returned a picture.
    HwReceive,
    /// Copy out of FFmpeg's surface into the pool slot, event recorded.
    HwWrite,
    /// Waiting for a held surface's copy (more than the allowed number were pending).
    HwWait,
    /// Unreffing a held FFmpeg frame (unmaps its surface).
    HwUnref,
    /// Making an FFmpeg hwaccel decoder (device context, codec open).
    HwNew,
    /// Dropping one (its NVDEC session is destroyed inside).
    HwDrop,
    /// `cuvidParseVideoData` (cuvidDecodePicture inside).
    NvParse,
    /// `cuvidDecodePicture` alone (inside `NvParse`).
    NvDecode,
    /// `cuvidMapVideoFrame64`.
    NvMap,
    /// Decode status read, copies enqueued, event recorded, surface unmapped.
    NvCopy,
    /// Making a direct-NVDEC decoder (parser; the NVDEC session is adopted or made at the first
    /// sequence header, inside `NvParse`).
    NvNew,
    /// Dropping one (parser destroyed; decoder parked or destroyed).
    NvDrop,
    /// Opening the input (connect, probe).
    Open,
    /// Choosing and making the decoder.
    Select,
    /// A steady session's packet read.
    Read,
    /// A steady session's send of a packet into the decoder.
    Send,
    /// A steady session's receive.
    Receive,
    /// A steady session's delivery (lease, write into the slot, publish).
    Deliver,
    /// How late a paced picture was at its due time (only late ones).
    Late,
    /// How much longer than asked a pacing sleep took.
    Oversleep,
}

const STAGES: usize = Stage::Oversleep as usize + 1;
const BUCKETS: usize = 32;

impl Stage {
    pub fn name(self) -> &'static str {
        use Stage::*;
        match self {
            HwSend => "hw.send",
            HwCreate => "hw.create",
            HwReceive => "hw.receive",
            HwWrite => "hw.write",
            HwWait => "hw.wait",
            HwUnref => "hw.unref",
            HwNew => "hw.new",
            HwDrop => "hw.drop",
            NvParse => "nv.parse",
            NvDecode => "nv.decode",
            NvMap => "nv.map",
            NvCopy => "nv.copy",
            NvNew => "nv.new",
            NvDrop => "nv.drop",
            Open => "open",
            Select => "select",
            Read => "read",
            Send => "send",
            Receive => "receive",
            Deliver => "deliver",
            Late => "late",
            Oversleep => "oversleep",
        }
    }

    fn all() -> [Stage; STAGES] {
        use Stage::*;
        [HwSend, HwCreate, HwReceive, HwWrite, HwWait, HwUnref, HwNew, HwDrop, NvParse, NvDecode, NvMap, NvCopy, NvNew, NvDrop, Open, Select, Read, Send, Receive, Deliver, Late, Oversleep]
    }
}

struct Hist {
    count: AtomicU64,
    sum_ns: AtomicU64,
    /// The calling threads' CPU time in the calls (stages timed with a [`Mark`] only).
    cpu_ns: AtomicU64,
    max_ns: AtomicU64,
    /// Bucket b: [2^b, 2^(b+1)) microseconds (bucket 0 also holds < 1 µs).
    buckets: [AtomicU64; BUCKETS],
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO_HIST: Hist = Hist {
    count: AtomicU64::new(0),
    sum_ns: AtomicU64::new(0),
    cpu_ns: AtomicU64::new(0),
    max_ns: AtomicU64::new(0),
    buckets: [const { AtomicU64::new(0) }; BUCKETS],
};

static HISTS: [Hist; STAGES] = [ZERO_HIST; STAGES];

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the stage timings on or off (process-wide; off by default).
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Adds one call of `stage` that took `d` (nothing while the timings are off).
pub(crate) fn record(stage: Stage, d: Duration) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let ns = d.as_nanos().min(u64::MAX as u128) as u64;
    let us = ns / 1000;
    let b = (63 - us.max(1).leading_zeros() as usize).min(BUCKETS - 1);
    let h = &HISTS[stage as usize];
    let r = Ordering::Relaxed;
    h.count.fetch_add(1, r);
    h.sum_ns.fetch_add(ns, r);
    h.max_ns.fetch_max(ns, r);
    h.buckets[b].fetch_add(1, r);
}

/// A timed call's start: the wall clock (one read, also for the caller's own use: [`Mark::started`]),
/// and the thread's CPU clock while the timings are on, so a stage says how much of its time was
/// the process's CPU (the driver's calls for most of it) and not waiting.
pub(crate) struct Mark {
    wall: Instant,
    cpu_ns: Option<u64>,
}

impl Mark {
    pub(crate) fn now() -> Mark {
        let on = ENABLED.load(Ordering::Relaxed);
        Mark { wall: Instant::now(), cpu_ns: if on { thread_cpu_ns() } else { None } }
    }
    /// When the call started.
    pub(crate) fn started(&self) -> Instant {
        self.wall
    }
    /// Records the call under `stage` (nothing while the timings are off).
    pub(crate) fn end(&self, stage: Stage) {
        if !ENABLED.load(Ordering::Relaxed) {
            return;
        }
        record(stage, self.wall.elapsed());
        if let (Some(c0), Some(c1)) = (self.cpu_ns, thread_cpu_ns()) {
            HISTS[stage as usize].cpu_ns.fetch_add(c1.saturating_sub(c0), Ordering::Relaxed);
        }
    }
}

/// The calling thread's CPU time, nanoseconds (Linux; elsewhere not measured).
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: writes the struct we own; the C library's call, with Linux's clock id.
    (unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0).then(|| ts.sec as u64 * 1_000_000_000 + ts.nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ns() -> Option<u64> {
    None
}

/// One stage's calls since the last [`take`].
#[derive(Clone, Debug)]
pub struct StageTimes {
    pub stage: Stage,
    pub count: u64,
    pub mean_us: f64,
    /// Mean CPU time of the calling thread per call (stages timed with a CPU clock; else 0).
    pub mean_cpu_us: f64,
    pub max_us: f64,
    buckets: [u64; BUCKETS],
}

impl StageTimes {
    /// The upper edge of the bucket holding quantile `q` (a factor-of-two bound), microseconds.
    pub fn quantile_us(&self, q: f64) -> f64 {
        let want = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return ((2u64 << b) as f64).min(self.max_us.max(1.0));
            }
        }
        self.max_us
    }
    /// Calls that took at least `us` microseconds (by bucket: those in buckets from 2^⌊log2 us⌋).
    pub fn at_least_us(&self, us: u64) -> u64 {
        let b = (63 - us.max(1).leading_zeros() as usize).min(BUCKETS - 1);
        self.buckets[b..].iter().sum()
    }
}

/// Every stage with calls since the last take, and clears them.
pub fn take() -> Vec<StageTimes> {
    let r = Ordering::Relaxed;
    Stage::all()
        .into_iter()
        .filter_map(|stage| {
            let h = &HISTS[stage as usize];
            let count = h.count.swap(0, r);
            let sum = h.sum_ns.swap(0, r);
            let cpu = h.cpu_ns.swap(0, r);
            let max = h.max_ns.swap(0, r);
            let mut buckets = [0u64; BUCKETS];
            for (o, b) in buckets.iter_mut().zip(&h.buckets) {
                *o = b.swap(0, r);
            }
            (count > 0).then(|| StageTimes { stage, count, mean_us: sum as f64 / count as f64 / 1e3, mean_cpu_us: cpu as f64 / count as f64 / 1e3, max_us: max as f64 / 1e3, buckets })
        })
        .collect()
}
