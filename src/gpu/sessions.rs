//! A GPU's hardware decode sessions: nvcam's own count, the configured cap, and the driver's
//! limit where nvcam met it.
//!
//! The driver holds a fixed number of NVDEC decoders per GPU, whichever process holds them (288
//! on an H200 with driver 580.159.04, for every codec and size measured by
//! `scripts/gpu-machine/nvdec-session-probe.c`), and past it `cuvidCreateDecoder` fails with
//! `CUDA_ERROR_OUT_OF_MEMORY` while the device has gigabytes free. The driver offers no call
//! that tells the limit or the sessions left, so nvcam learns it from the first refusal: the
//! number of decoders nvcam held on that GPU then is remembered as the GPU's *observed limit*,
//! and later cameras get no ticket while nvcam holds that many, so they go to software + upload
//! (or another GPU) at once instead of each paying a failed create. Other processes may free
//! sessions later: once a [`RETRY`] after the last refusal one camera is let through to try, and
//! a create that succeeds above the limit forgets it.
//!
//! Every hardware decoder holds one [`HwTicket`] for its life (a parked NVDEC decoder keeps its
//! session's), so the tickets a device has out are the sessions nvcam holds or is about to make.
//! A ticket also holds its camera's demand on the engines (`load.rs`): an AUTO camera's ticket is
//! refused where that demand would pass the limit of the engines' learned capacity.

use super::context::Device;
use super::load::{self, Demand};
use super::stats::{self, MAX_DEVICES};
use crate::status::*;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// After a refusal, how long until one camera may try a new session above the observed limit.
pub(crate) const RETRY: Duration = Duration::from_secs(30);

static MAX_HW_PER_DEVICE: AtomicU32 = AtomicU32::new(0);

/// The configured cap on hardware decode sessions per device (0 = none).
pub(crate) fn set_cap(cap: u32) {
    MAX_HW_PER_DEVICE.store(cap, Ordering::Relaxed);
}

/// The per-device cap on hardware decode sessions (0 = none), for messages.
pub(crate) fn cap() -> u32 {
    MAX_HW_PER_DEVICE.load(Ordering::Relaxed)
}

/// One device's observed limit: sessions nvcam held when the driver last refused one (-1: never
/// refused, or forgotten), and when (milliseconds since [`epoch`]).
struct Limit {
    held_at_refusal: AtomicI64,
    refused_ms: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const UNKNOWN: Limit = Limit { held_at_refusal: AtomicI64::new(-1), refused_ms: AtomicU64::new(0) };
static LIMITS: [Limit; MAX_DEVICES] = [UNKNOWN; MAX_DEVICES];

fn limit_of(device: i32) -> &'static Limit {
    &LIMITS[(device.max(0) as usize).min(MAX_DEVICES - 1)]
}

fn epoch() -> Instant {
    static E: OnceLock<Instant> = OnceLock::new();
    *E.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// The sessions nvcam held on `device` when its driver last refused a new one; None until that
/// happens (or after a later create went past it).
pub(crate) fn observed_limit(device: i32) -> Option<u32> {
    u32::try_from(limit_of(device).held_at_refusal.load(Ordering::Relaxed)).ok()
}

/// The driver refused a new decoder on `device` (out of sessions) while nvcam held `held`
/// hardware decoders there: remembered as the device's limit, and counted.
pub(crate) fn note_exhausted(device: i32, held: u32) {
    let l = limit_of(device);
    l.held_at_refusal.store(held as i64, Ordering::Relaxed);
    l.refused_ms.store(now_ms(), Ordering::Relaxed);
    stats::of(device).sessions_exhausted.fetch_add(1, Ordering::Relaxed);
}

/// A decoder was created on `device` and nvcam now holds `held`: a limit below that was another
/// process's sessions, since freed, and is forgotten.
pub(crate) fn note_created(device: i32, held: u32) {
    let l = limit_of(device);
    let was = l.held_at_refusal.load(Ordering::Relaxed);
    if was >= 0 && (held as i64) > was {
        l.held_at_refusal.store(-1, Ordering::Relaxed);
        log::info!("GPU {device}: a decode session was created with {held} held, past the {was} where the driver refused one before; limit forgotten");
    }
}

/// One decoder create at a time per device. Measured on an H200 (308 paced 1080p HEVC cameras
/// opened together): `cuvidCreateDecoder` called from many camera threads at once returned
/// `CUDA_ERROR_OUT_OF_MEMORY` with only 21 to 123 decoders held and 135 GB free, which read as
/// exhausted sessions sent 91 cameras to software. The driver makes decoders one after another
/// anyway (about 70 ms each), so waiting here costs a burst nothing; decoding, mapping and
/// destroying never take this lock, so no streaming camera waits on another's create.
pub(crate) fn creating(device: i32) -> parking_lot::MutexGuard<'static, ()> {
    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
    static CREATE: [parking_lot::Mutex<()>; MAX_DEVICES] = [FREE; MAX_DEVICES];
    CREATE[(device.max(0) as usize).min(MAX_DEVICES - 1)].lock()
}

/// Why a device gives no ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Full {
    /// `max_hw_decoders_per_device`.
    Cap(u32),
    /// The driver's sessions ran out at this many held by nvcam.
    Exhausted(u32),
    /// The engines would be asked for this share of their learned capacity, percent.
    Busy(u32),
    /// Decoders are being made on this GPU and its engines' load does not show them yet: a
    /// camera that cannot wait goes elsewhere (`load.rs`).
    Ramping,
}

impl Full {
    pub(crate) fn why(self) -> String {
        match self {
            Full::Cap(n) => format!("hardware decoder cap ({n} per device) reached"),
            Full::Exhausted(n) => {
                format!("decode sessions exhausted (the driver refused a new one while nvcam held {n}; its limit is per GPU, across all processes)")
            }
            Full::Busy(p) => format!(
                "NVDEC engines full (this camera would take them to {p} % of the capacity measured, past the limit of {} %)",
                load::limit_pct()
            ),
            Full::Ramping => "NVDEC engines' load still settling after new decoders".to_string(),
        }
    }

    /// The camera's error where hardware was required: the cap is a setting (`NVCAM_E_NO_DEVICE`,
    /// as before); exhausted sessions are a full table that may empty (`NVCAM_E_OUT_OF_MEMORY`,
    /// and the camera retries).
    pub(crate) fn error(self, device: i32) -> Error {
        match self {
            Full::Cap(n) => Error::new(ErrorKind::NoDevice, format!("GPU {device}: all {n} hardware decoder(s) allowed per device are in use")),
            Full::Exhausted(_) | Full::Busy(_) | Full::Ramping => Error::new(ErrorKind::OutOfMemory, format!("GPU {device}: NVDEC {}", self.why())),
        }
    }
}

/// Whether one more session may be tried with `held` out: within the cap, and below the
/// observed limit unless a retry is due.
pub(crate) fn admits(held: u32, cap: u32, limit: Option<u32>, retry_due: bool) -> std::result::Result<(), Full> {
    if cap != 0 && held >= cap {
        return Err(Full::Cap(cap));
    }
    match limit {
        Some(l) if held >= l && !retry_due => Err(Full::Exhausted(l)),
        _ => Ok(()),
    }
}

/// One hardware decode session counted against the device's cap and observed limit, and its
/// camera's demand on the engines.
pub(crate) struct HwTicket {
    dev: Arc<Device>,
    demand: Demand,
    /// Its decoder is not made yet: when it was taken (`load.rs`' pending tickets).
    pending: Option<u64>,
}

/// Whether a ticket's demand is checked against the engines' capacity.
#[derive(Clone, Copy)]
pub(crate) enum Load<'a> {
    /// AUTO at run time (a fall-back): refused where the engines are full or still ramping (the
    /// camera goes elsewhere at once).
    Checked,
    /// AUTO choosing a new connection's decoder: may wait, up to `load::PATIENCE`, while a
    /// burst of cameras is let in, unless `stop()` says the camera is closing.
    Patient(&'a dyn Fn() -> bool),
    /// The host asked for hardware: taken whatever the load.
    Required,
}

impl HwTicket {
    /// A session for a camera asking `demand` of the engines.
    pub(crate) fn take(dev: &Arc<Device>, demand: Demand, load: Load<'_>) -> std::result::Result<HwTicket, Full> {
        let stop: &dyn Fn() -> bool = match load {
            Load::Patient(stop) => stop,
            _ => &|| true,
        };
        load::patiently(stop, |patient| match Self::try_take(dev, demand, !matches!(load, Load::Required), patient) {
            Err(Full::Ramping) if patient => None,
            r => Some(r),
        })
    }

    /// One attempt at [`HwTicket::take`], the engines' load checked or not; with `patient` a GPU
    /// letting a burst in answers [`Full::Ramping`] where it would otherwise refuse or pace.
    pub(crate) fn try_take(dev: &Arc<Device>, demand: Demand, check: bool, patient: bool) -> std::result::Result<HwTicket, Full> {
        let mut t = Self::session(dev)?;
        match load::take(dev.ordinal, demand, check, patient) {
            Ok(pending) => {
                t.demand = demand;
                t.pending = pending;
                Ok(t)
            }
            // `t` (no demand yet) gives its session back.
            Err(load::NotTaken::Busy(pct)) => Err(Full::Busy(pct)),
            Err(load::NotTaken::Later) => Err(Full::Ramping),
        }
    }

    /// The ticket's decoder is made: it no longer holds a burst's admissions back, and the
    /// engines' load is taken as ramping for a while (`load.rs`).
    pub(crate) fn made(&mut self) {
        if let Some(at) = self.pending.take() {
            load::settled(self.dev.ordinal, at, true);
        }
    }

    fn session(dev: &Arc<Device>) -> std::result::Result<HwTicket, Full> {
        let cap = cap();
        let l = limit_of(dev.ordinal);
        let limit = observed_limit(dev.ordinal);
        let last = l.refused_ms.load(Ordering::Relaxed);
        let now = now_ms();
        let due = now.saturating_sub(last) >= RETRY.as_millis() as u64;
        let mut why = None;
        let ok = dev.hw_sessions.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| match admits(n, cap, limit, due) {
            Ok(()) => Some(n + 1),
            Err(w) => {
                why = Some(w);
                None
            }
        });
        match ok {
            Ok(n) => {
                // Above the limit on a due retry: only this camera tries until the next RETRY.
                if limit.is_some_and(|l| n >= l) && l.refused_ms.compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                    dev.hw_sessions.fetch_sub(1, Ordering::AcqRel);
                    return Err(Full::Exhausted(limit.unwrap_or(0)));
                }
                Ok(HwTicket { dev: dev.clone(), demand: Demand(0), pending: None })
            }
            Err(_) => {
                let w = why.unwrap_or(Full::Cap(cap));
                if matches!(w, Full::Exhausted(_)) {
                    stats::of(dev.ordinal).sessions_exhausted.fetch_add(1, Ordering::Relaxed);
                }
                Err(w)
            }
        }
    }
}

impl Drop for HwTicket {
    fn drop(&mut self) {
        if let Some(at) = self.pending.take() {
            load::settled(self.dev.ordinal, at, false);
        }
        load::give_back(self.dev.ordinal, self.demand);
        self.dev.hw_sessions.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Sessions nvcam holds on `dev` now (its tickets out).
pub(crate) fn held(dev: &Device) -> u32 {
    dev.hw_sessions.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_and_the_observed_limit_each_refuse_a_ticket() {
        assert_eq!(admits(0, 0, None, false), Ok(()));
        assert_eq!(admits(1000, 0, None, false), Ok(()), "no cap, no limit met: the driver decides");
        assert_eq!(admits(2, 2, None, false), Err(Full::Cap(2)));
        assert_eq!(admits(1, 2, None, false), Ok(()));
        // At the limit the camera goes to software without a failed create...
        assert_eq!(admits(288, 0, Some(288), false), Err(Full::Exhausted(288)));
        assert_eq!(admits(287, 0, Some(288), false), Ok(()), "a session freed: the next camera gets it");
        // ...except the one retry after RETRY, in case another process let sessions go.
        assert_eq!(admits(288, 0, Some(288), true), Ok(()));
        // The cap is the host's word and wins even on a retry.
        assert_eq!(admits(4, 4, Some(2), true), Err(Full::Cap(4)));
    }

    #[test]
    fn a_refusal_is_remembered_and_a_create_past_it_forgets_it() {
        // The last row is shared by ordinals past MAX_DEVICES - 1 and used by no test with a GPU.
        let d = (MAX_DEVICES - 1) as i32;
        assert_eq!(observed_limit(d), None);
        let before = stats::of(d).sessions_exhausted.load(Ordering::Relaxed);
        note_exhausted(d, 288);
        assert_eq!(observed_limit(d), Some(288));
        assert_eq!(stats::of(d).sessions_exhausted.load(Ordering::Relaxed), before + 1);
        note_created(d, 288);
        assert_eq!(observed_limit(d), Some(288), "a create at the limit (a session freed and taken) keeps it");
        note_created(d, 289);
        assert_eq!(observed_limit(d), None, "another process let sessions go: the limit was not the driver's");
    }

    #[test]
    fn exhaustion_is_out_of_memory_and_the_cap_no_device() {
        let e = Full::Exhausted(288).error(0);
        assert_eq!(e.kind, ErrorKind::OutOfMemory);
        assert!(e.msg.contains("exhausted") && e.msg.contains("288"), "{e}");
        assert!(!e.kind.is_permanent(), "sessions may free up: the camera retries");
        assert_eq!(Full::Cap(2).error(0).kind, ErrorKind::NoDevice);
    }
}
