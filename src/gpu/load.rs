//! A GPU's NVDEC engines: what nvcam's hardware cameras ask of them, and what they can do,
//! learned from their measured load.
//!
//! Sessions are not the engines' limit for most streams: an H200 holds 288 decoders, but its
//! engines decode about 4,800 fps of a 1080p H.264 clip (160 cameras at 30 fps), and a camera
//! more than that slows every camera on the GPU (measured: 172 cameras of that clip, all on
//! NVDEC, each delivered 24.7 to 28 fps). So each hardware camera's *demand* is counted in
//! macroblocks per second (its coded size at its frame rate, from the stream as probed), and
//! the engines' *capacity* in the same unit is learned while they work: the macroblocks direct
//! NVDEC submitted over NVML's last sampling period, divided by the decoders' busy share NVML
//! reports for it (`nvml.rs`). Read four times a second by whichever camera thread submits a
//! picture then (one NVML call; no thread of its own), and at each admission; learned only from
//! 40 to 97 % busy, where the share is a fair measure (below, mostly idle time; above, saturated),
//! and smoothed (a quarter of one reading per quarter second, however many threads read), so one
//! noisy reading near the limit does not let a camera in and the next out. An
//! AUTO camera whose demand would take the GPU past [`limit_pct`] of that capacity is not given a
//! hardware decoder there (the next GPU, else software + upload): no streaming camera slows
//! because one more was opened.
//!
//! The capacity is per GPU, in the codec mix and bit rates it decoded when learned (an H.264
//! macroblock costs the engines about twice an HEVC one at these rates); other processes' work
//! on the engines lowers it, as it should.
//!
//! **Cameras opened together.** Decoders are made one at a time per GPU (about 20 a second on an
//! H200), so a burst of opens runs far ahead of the load the engines show: taken at once, every
//! camera of a burst got its ticket before the capacity was known (measured: 172 1080p H.264
//! cameras opened at once all got NVDEC, and all slowed to 24-28 fps). So an AUTO camera is let
//! in at the pace its GPU's decoders are made: while the capacity is unknown, no more than
//! [`WINDOW`] tickets wait for their decoder, and the rest wait their turn. And a reading taken
//! while decoders are being made runs low (new decoders start on their key frames, and making
//! one occupies the engines: 139 to 157 cameras' worth during that burst, 160 once settled), so a
//! camera that does not fit *while the GPU is ramping* (a ticket waiting for its decoder, or one
//! made within [`SETTLE`]) waits for the load to settle before it is refused. The waiting
//! camera's thread sleeps; it holds no lock, and its close ends the wait ([`Load::Patient`]).
//! Bounded by [`PATIENCE`]: then it is judged on what is known (an unknown capacity refuses
//! nothing). A streaming camera is never moved: judging cameras already let in against a
//! capacity learned during a burst sent far too many to software, so it is not done. JPEG on
//! direct NVDEC is not counted: under 64 such cameras on an H200 `nvidia-smi dmon` showed the JPEG
//! engines idle, and what it costs the NVDEC engines has not been measured.
//!
//! [`Load::Patient`]: super::sessions::Load::Patient

use super::nvml;
use super::stats::{self, MAX_DEVICES};
use crate::switches::Switch;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one camera asks of the engines, in macroblocks (16 × 16 luma samples) per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Demand(pub u64);

impl Demand {
    /// A stream of `width` × `height` at `fps` (a rate the probe did not find, or an absurd one,
    /// counts as 30); none for JPEG, which the NVDEC engines do not decode.
    pub(crate) fn of(jpeg: bool, width: u32, height: u32, fps: f64) -> Demand {
        if jpeg {
            return Demand(0);
        }
        let fps = if fps.is_finite() && (1.0..=240.0).contains(&fps) { fps } else { 30.0 };
        Demand((macroblocks(width, height) as f64 * fps).round() as u64)
    }
}

/// Macroblocks in one picture of `width` × `height`.
pub(crate) fn macroblocks(width: u32, height: u32) -> u64 {
    (width.div_ceil(16) as u64) * (height.div_ceil(16) as u64)
}

/// Learned only from a reading at least this busy: below it NVML's share is mostly idle time.
const LEARN_FROM_PCT: u32 = 40;
/// Nor from one busier than this: saturated, the share no longer grows with the work asked (an
/// H200 at 100 % with 161 1080p H.264 cameras read 3 % over the capacity settled below it, and
/// let 7 cameras too many in).
const LEARN_UP_TO_PCT: u32 = 97;
/// The shortest span a rate is measured over (NVML may sample faster).
const MIN_SPAN: Duration = Duration::from_millis(250);
/// Readings older than this are not used.
const MAX_AGE: Duration = Duration::from_secs(4);
/// How often the camera threads read the engines' load.
const EVERY_MS: u64 = 250;
/// While the capacity is unknown, at most this many AUTO tickets wait for their decoder: enough
/// to keep a GPU's one-at-a-time decoder creation busy, few enough that its load shows a burst
/// while the burst is let in.
pub(crate) const WINDOW: u32 = 8;
/// The engines' load counts as settled this long after the last decoder was made there: NVML's
/// period and the smoothing (a quarter per reading, four a second) have forgotten the ramp. A
/// ticket waiting this long for its decoder (a camera waiting for its first key frame) no longer
/// paces the others.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);
/// The longest an AUTO camera waits for admission: a burst of 300 opens at 20 decoders a second
/// is let in within it. The camera's `open_timeout` bounds its wait further (its `stop`).
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);
/// How often a camera waiting for admission asks again.
const ASK_EVERY: Duration = Duration::from_millis(50);

/// The one wait for admission: calls `attempt(patient)` until it answers (`Some`), again every
/// [`ASK_EVERY`] while it says "later" (`None`); `patient`: the camera may still wait (`stop()`
/// does not say it is closing, and [`PATIENCE`] is not spent). The camera's own thread sleeps,
/// holding no lock. An attempt told it may not wait answers.
pub(crate) fn patiently<T>(stop: &dyn Fn() -> bool, mut attempt: impl FnMut(bool) -> Option<T>) -> T {
    let t0 = Instant::now();
    loop {
        let patient = t0.elapsed() < PATIENCE && !stop();
        if let Some(r) = attempt(patient) {
            return r;
        }
        debug_assert!(patient, "an attempt told it may not wait answers");
        std::thread::sleep(ASK_EVERY);
    }
}

/// The default of [`limit_pct`]: the 95 % of the raw rate a fleet is sized for. On an H200 with
/// 1080p H.264 the capacity learned settled 1 to 3 % above `nvdec_bench`'s raw rate (the clip's
/// cameras ran 30.6 fps where their demand counts 30), 152 cameras read 93-94 % of it (NVML 96 %
/// busy, every camera at its rate), and 162 let in during a burst at 96 % read 98 % (NVML 100 %,
/// 19 cameras under 29.4 fps): 95 keeps the first in and the second out.
pub(crate) const DEFAULT_LIMIT_PCT: u32 = 95;

/// How much of the learned capacity AUTO cameras may ask for (`NVCAM_DECODE_LOAD_LIMIT`,
/// percent; 0 turns the check off). Read at each admission (a camera's open or reconnect, not
/// per frame), so a test can lower it for a while.
pub(crate) fn limit_pct() -> u32 {
    Switch::DecodeLoadLimit.var().ok().and_then(|v| v.trim().parse().ok()).unwrap_or(DEFAULT_LIMIT_PCT)
}

struct Engines {
    /// The demand of the hardware decoders nvcam holds (their tickets).
    demand: AtomicU64,
    /// Macroblocks direct NVDEC submitted so far.
    decoded: AtomicU64,
    /// Learned macroblocks per second at 100 % busy; 0 until learned.
    capacity: AtomicU64,
    /// (when, `decoded` then), newest last, at least 100 ms apart.
    readings: Mutex<VecDeque<(Instant, u64)>>,
    /// When a camera thread reads the load next (ms since [`epoch`]).
    next_ms: AtomicU64,
    /// When each ticket with demand whose decoder is not made yet was taken (ms since [`epoch`]).
    pending: Mutex<Vec<u64>>,
    /// When a hardware decoder was last made here (ms since [`epoch`]; 0: never).
    made_ms: AtomicU64,
    /// When the capacity last learned from a reading (ms since [`epoch`]).
    learned_ms: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const IDLE: Engines = Engines {
    demand: AtomicU64::new(0),
    decoded: AtomicU64::new(0),
    capacity: AtomicU64::new(0),
    readings: Mutex::new(VecDeque::new()),
    next_ms: AtomicU64::new(0),
    pending: Mutex::new(Vec::new()),
    made_ms: AtomicU64::new(0),
    learned_ms: AtomicU64::new(0),
};
static ENGINES: [Engines; MAX_DEVICES] = [IDLE; MAX_DEVICES];

fn of(device: i32) -> &'static Engines {
    &ENGINES[(device.max(0) as usize).min(MAX_DEVICES - 1)]
}

fn epoch() -> Instant {
    static E: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *E.get_or_init(Instant::now)
}

/// A picture of `macroblocks` submitted to `device`'s engines (direct NVDEC, per picture); every
/// [`EVERY_MS`] the one camera thread that wins the turn reads the engines' load.
pub(crate) fn submitted(device: i32, macroblocks: u64) {
    let e = of(device);
    e.decoded.fetch_add(macroblocks, Ordering::Relaxed);
    let now = epoch().elapsed().as_millis() as u64;
    let next = e.next_ms.load(Ordering::Relaxed);
    if now >= next && e.next_ms.compare_exchange(next, now + EVERY_MS, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
        learn(device);
    }
}

/// Capacity from a rate and NVML's busy share over the same span, where the share is fair.
pub(crate) fn capacity_from(rate_mb_s: f64, busy_pct: u32) -> Option<u64> {
    ((LEARN_FROM_PCT..=LEARN_UP_TO_PCT).contains(&busy_pct) && rate_mb_s > 0.0).then(|| (rate_mb_s * 100.0 / busy_pct as f64) as u64)
}

/// Reads the engines' load now and learns their capacity from it where it can; the capacity
/// known after (0: not yet).
fn learn(device: i32) -> u64 {
    read(device).0
}

/// [`learn`], and the busy share NVML reported (None without NVML).
fn read(device: i32) -> (u64, Option<u32>) {
    let e = of(device);
    let now = Instant::now();
    let decoded = e.decoded.load(Ordering::Relaxed);
    let Some((busy, period)) = nvml::decoder_load_over(device) else { return (e.capacity.load(Ordering::Relaxed), None) };
    let span = period.max(MIN_SPAN);
    let base = {
        let mut r = e.readings.lock();
        while r.front().is_some_and(|x| now.duration_since(x.0) > MAX_AGE) {
            r.pop_front();
        }
        // The newest reading at least one span old: the rate over about NVML's own window.
        let base = r.iter().rev().find(|x| now.duration_since(x.0) >= span).copied();
        if r.back().is_none_or(|x| now.duration_since(x.0) >= Duration::from_millis(100)) {
            r.push_back((now, decoded));
        }
        base
    };
    let learned = match base {
        Some((t0, d0)) => capacity_from(decoded.saturating_sub(d0) as f64 / now.duration_since(t0).as_secs_f64(), busy),
        // No reading of our own in the window (the first camera in a while): a steady GPU
        // decodes what its cameras ask, so their demand is the rate, while it is not saturated
        // and no ticket waits for its decoder (it asks, but decodes nothing yet).
        None if busy < 95 && e.pending.lock().is_empty() => capacity_from(e.demand.load(Ordering::Relaxed) as f64, busy),
        None => None,
    };
    // At most one reading per turn is learned from, however many threads read (cameras waiting
    // for admission ask often): the smoothing is per time, not per caller.
    let now_ms = epoch().elapsed().as_millis() as u64;
    let last = e.learned_ms.load(Ordering::Relaxed);
    let turn = last == 0 || now_ms.saturating_sub(last) >= EVERY_MS;
    if let Some(c) = learned.filter(|_| turn && e.learned_ms.compare_exchange(last, now_ms.max(1), Ordering::AcqRel, Ordering::Relaxed).is_ok()) {
        let old = e.capacity.load(Ordering::Relaxed);
        e.capacity.store(if old == 0 { c } else { (old * 3 + c) / 4 }, Ordering::Relaxed);
    }
    (e.capacity.load(Ordering::Relaxed), Some(busy))
}

/// Whether `add` more demand would take the engines past `limit` percent of `capacity` with
/// `demand` already there (always yes while the capacity is unknown, 0, or the limit is off).
pub(crate) fn fits(demand: u64, add: u64, capacity: u64, limit: u32) -> bool {
    capacity == 0 || limit == 0 || add == 0 || (demand + add) as u128 * 100 <= capacity as u128 * limit as u128
}

/// What an AUTO camera's admission comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Take,
    /// Not yet: the window is full, or the GPU is ramping and the camera does not fit.
    Wait,
    Refuse,
}

/// An AUTO camera asking `add` where `demand` is taken and `pending` tickets taken within
/// [`SETTLE`] wait for their decoder (`ramping`: one does, or a decoder was made within
/// [`SETTLE`]); `patient`: it may still wait ([`PATIENCE`] not spent).
pub(crate) fn judge(demand: u64, add: u64, capacity: u64, limit: u32, pending: u32, ramping: bool, patient: bool) -> Verdict {
    if fits(demand, add, capacity, limit) {
        let paced = capacity == 0 && limit != 0 && add != 0;
        return if paced && pending >= WINDOW && patient { Verdict::Wait } else { Verdict::Take };
    }
    if ramping && patient {
        Verdict::Wait
    } else {
        Verdict::Refuse
    }
}

/// Why [`take`] gave nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// Past the limit: the share of the capacity it would have taken, percent.
    Busy(u32),
    /// Ask again shortly ([`Verdict::Wait`]).
    Later,
}

/// Takes `d` of `device`'s engines for a hardware decoder if it fits under the limit (`check`),
/// or unconditionally (a camera that asked for hardware, or one already decoding there).
/// `patient`: a camera that may still wait for a burst's load to show ([`judge`]). Ok: when it
/// was taken, for [`settled`] (None: no demand, nothing pending).
pub(crate) fn take(device: i32, d: Demand, check: bool, patient: bool) -> Result<Option<u64>, NotTaken> {
    let e = of(device);
    let now_ms = epoch().elapsed().as_millis() as u64;
    let pend = |e: &Engines| {
        if d.0 != 0 {
            e.pending.lock().push(now_ms);
        }
        (d.0 != 0).then_some(now_ms)
    };
    if !check || d.0 == 0 {
        e.demand.fetch_add(d.0, Ordering::Relaxed);
        return Ok(pend(e));
    }
    let (cap, limit) = (learn(device), limit_pct());
    let settle = SETTLE.as_millis() as u64;
    let young = e.pending.lock().iter().filter(|&&t| now_ms.saturating_sub(t) < settle).count() as u32;
    let made = e.made_ms.load(Ordering::Relaxed);
    let ramping = young > 0 || (made != 0 && now_ms.saturating_sub(made) < settle);
    let mut verdict = Verdict::Refuse;
    let r = e.demand.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
        verdict = judge(now, d.0, cap, limit, young, ramping, patient);
        (verdict == Verdict::Take).then_some(now + d.0)
    });
    match r {
        Ok(_) => Ok(pend(e)),
        Err(_) if verdict == Verdict::Wait => Err(NotTaken::Later),
        Err(now) => {
            stats::of(device).load_refusals.fetch_add(1, Ordering::Relaxed);
            Err(NotTaken::Busy(((now + d.0) as u128 * 100 / cap.max(1) as u128) as u32))
        }
    }
}

/// The ticket [`take`] gave at `taken` (its `Ok`) no longer waits for its decoder: made
/// (`made`), or given up.
pub(crate) fn settled(device: i32, taken: u64, made: bool) {
    let e = of(device);
    let mut p = e.pending.lock();
    if let Some(i) = p.iter().position(|&t| t == taken) {
        p.swap_remove(i);
    }
    if made {
        e.made_ms.store(epoch().elapsed().as_millis().max(1) as u64, Ordering::Relaxed);
    }
}

/// Gives back what [`take`] took.
pub(crate) fn give_back(device: i32, d: Demand) {
    let _ = of(device).demand.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| Some(now.saturating_sub(d.0)));
}

/// `device`'s demand as a share of its learned capacity, percent, with `add` more (None: not
/// learned yet).
pub(crate) fn share_pct(device: i32, add: Demand) -> Option<u32> {
    let e = of(device);
    let cap = e.capacity.load(Ordering::Relaxed);
    (cap > 0).then(|| ((e.demand.load(Ordering::Relaxed) + add.0) as u128 * 100 / cap as u128) as u32)
}

/// The engines' busy share NVML reports for `device` now, percent (None without NVML); the
/// reading is also learned from, so a host polling the stats keeps the capacity fresh.
pub(crate) fn busy_pct(device: i32) -> Option<u32> {
    read(device).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_camera_that_would_overload_the_engines_does_not_fit() {
        // An H200 learned ~39.3 M macroblocks/s (1080p H.264 at 4,821 fps); a 1080p30 camera
        // asks 244,800 (120 × 68 macroblocks × 30).
        let cam = Demand::of(false, 1920, 1080, 30.0).0;
        assert_eq!(cam, 244_800);
        let cap = 8160 * 4821;
        let fit = (0..400).take_while(|&n| fits(n * cam, cam, cap, DEFAULT_LIMIT_PCT)).count() as u64;
        // 0.95 × 4,821 / 30 = 152 cameras must fit; past the raw rate (160.7) none may.
        assert!((152..=160).contains(&fit), "{fit} cameras fit");
        assert!(fits(10 * cam, cam, 0, 99), "an unknown capacity refuses nothing");
        assert!(fits(1000 * cam, cam, cap, 0), "a limit of 0 is off");
        assert!(fits(1000 * cam, 0, cap, 99), "a JPEG camera asks nothing of the NVDEC engines");
    }

    #[test]
    fn a_burst_of_opens_is_let_in_no_faster_than_the_load_can_show_it() {
        let cam = Demand::of(false, 1920, 1080, 30.0).0;
        let cap = 8160 * 4821;
        // Capacity unknown: the window's worth wait for their decoders, the next camera waits...
        assert_eq!(judge(0, cam, 0, 96, WINDOW - 1, true, true), Verdict::Take);
        assert_eq!(judge(0, cam, 0, 96, WINDOW, true, true), Verdict::Wait);
        // ...until its patience is spent: an unknown capacity refuses nothing.
        assert_eq!(judge(0, cam, 0, 96, WINDOW, true, false), Verdict::Take);
        // Known: the window no longer paces (the limit does).
        assert_eq!(judge(10 * cam, cam, cap, 96, 50, true, true), Verdict::Take);
        // Past the limit while ramping (a reading then runs low): wait for the load to settle...
        assert_eq!(judge(155 * cam, cam, cap, 96, 0, true, true), Verdict::Wait);
        // ...settled, or out of patience: refused.
        assert_eq!(judge(155 * cam, cam, cap, 96, 0, false, true), Verdict::Refuse);
        assert_eq!(judge(155 * cam, cam, cap, 96, 3, true, false), Verdict::Refuse);
        // The limit off, or a JPEG camera: never paced, never refused.
        assert_eq!(judge(0, cam, 0, 0, 1000, true, true), Verdict::Take);
        assert_eq!(judge(0, 0, 0, 96, 1000, true, true), Verdict::Take);
    }

    #[test]
    fn a_closing_camera_stops_waiting_for_admission_at_once() {
        // Patient: asked again until it answers.
        let mut asked = Vec::new();
        let r = patiently(&|| false, |p| {
            asked.push(p);
            (asked.len() == 3).then_some(7)
        });
        assert_eq!((r, asked), (7, vec![true, true, true]));
        // Closing: one attempt, told it may not wait.
        let mut asked = Vec::new();
        let r = patiently(&|| true, |p| {
            asked.push(p);
            Some(p)
        });
        assert_eq!((r, asked), (false, vec![false]));
    }

    #[test]
    fn capacity_is_learned_only_from_a_busy_reading() {
        assert_eq!(capacity_from(1000.0, 50), Some(2000));
        assert_eq!(capacity_from(1000.0, 39), None, "mostly idle: not a fair measure");
        assert_eq!(capacity_from(1000.0, 98), None, "saturated: the share understates the work");
        assert_eq!(capacity_from(0.0, 80), None);
        assert_eq!(Demand::of(false, 1920, 1080, f64::NAN), Demand::of(false, 1920, 1080, 30.0), "no rate: 30 fps");
        assert_eq!(Demand::of(true, 1920, 1080, 30.0), Demand(0));
    }
}
