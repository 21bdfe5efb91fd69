//! "Any GPU": which device a camera's new connection goes to.
//!
//! The measure is the engines' free capacity for the camera's stream: its demand (coded size at
//! its rate) added to what the hardware cameras there already ask, as a share of the capacity
//! learned from the engines' measured load (`load.rs`); a GPU that can take the camera within
//! that limit and within its decode sessions comes before one that cannot. Where the capacity is
//! not learned yet (under 40 % busy) the GPU counts as idle. Then decode sessions left, by nvcam's
//! own count: the sessions it holds on each GPU (its tickets out) against the configured cap and
//! the driver's limit where nvcam met it (`sessions.rs`); a GPU whose limit is not known yet is
//! taken to have the largest limit met on any of them (the GPUs of one box are alike), else no
//! limit. Ties go to the GPU with fewer sessions held, then fewer software + upload cameras (their
//! uploads and the pools' copies), then the lower ordinal. Demand is nvcam's own sum, not NVML's
//! share, so cameras opened together (faster than NVML samples) spread at once; other processes'
//! work lowers the learned capacity.
//!
//! A ticket on the chosen GPU is taken under one lock with the choice, so cameras opened
//! together spread evenly rather than all seeing the same counts.

use super::load::{self, Demand};
use super::sessions::{self, HwTicket};
use super::stats;
use crate::status::*;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;

/// One GPU's standing for placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Standing {
    pub ordinal: i32,
    /// Sessions nvcam holds there.
    pub held: u32,
    /// Sessions nvcam held when its driver refused one, if it did.
    pub limit: Option<u32>,
    /// Cameras decoding in software and uploading there.
    pub uploads: u32,
    /// The hardware cameras' demand there with this camera's added, percent of the learned
    /// capacity (None: not learned).
    pub share: Option<u32>,
}

/// Sessions left on `s` by the cap and the limit (a GPU without a known limit is taken to have
/// `assumed`, the largest met elsewhere; u32::MAX where none is known).
fn left(s: &Standing, cap: u32, assumed: Option<u32>) -> u32 {
    let mut room = u32::MAX;
    if cap != 0 {
        room = room.min(cap.saturating_sub(s.held));
    }
    if let Some(l) = s.limit.or(assumed) {
        room = room.min(l.saturating_sub(s.held));
    }
    room
}

/// The GPUs best first: those that can take the camera (a session left, the engines' share
/// within `limit`), then the lowest share, most sessions left, fewest held, fewest uploads,
/// lowest ordinal.
pub(crate) fn rank(table: &[Standing], cap: u32, limit: u32) -> Vec<i32> {
    let assumed = table.iter().filter_map(|s| s.limit).max();
    let takes = |s: &Standing| left(s, cap, assumed) > 0 && (limit == 0 || s.share.is_none_or(|p| p <= limit));
    let mut v: Vec<&Standing> = table.iter().collect();
    v.sort_by_key(|s| (!takes(s), s.share.unwrap_or(0), std::cmp::Reverse(left(s, cap, assumed)), s.held, s.uploads, s.ordinal));
    v.into_iter().map(|s| s.ordinal).collect()
}

static PLACING: Mutex<()> = Mutex::new(());

/// The GPU for a camera's new connection asking `demand` of the engines, with a decode-session
/// ticket there where one is left and the engines can take it (None: every GPU is full, and the
/// camera decodes in software + upload on the one with the fewest uploads). An error where there
/// is no usable GPU. While a GPU is letting in a burst of cameras (`load.rs`) and none takes this
/// one at once, it asks again shortly, outside the lock, as long as `stop()` allows and within
/// the engines' patience.
pub(crate) fn place(demand: Demand, stop: &dyn Fn() -> bool) -> Result<(i32, Option<HwTicket>)> {
    load::patiently(stop, |patient| match place_once(demand, patient) {
        Ok(Placed::Later) => None,
        Ok(Placed::Now(d, t)) => Some(Ok((d, t))),
        Err(e) => Some(Err(e)),
    })
}

enum Placed {
    Now(i32, Option<HwTicket>),
    /// A GPU would take the camera once its load shows the cameras it is letting in.
    Later,
}

fn place_once(demand: Demand, patient: bool) -> Result<Placed> {
    let n = super::probe()?;
    if n <= 0 {
        return Err(Error::new(ErrorKind::NoDevice, "no GPU"));
    }
    let _one = PLACING.lock();
    let table: Vec<Standing> = (0..n)
        .map(|d| Standing {
            ordinal: d,
            held: super::open_device(d).map(|dev| sessions::held(&dev)).unwrap_or(0),
            limit: sessions::observed_limit(d),
            uploads: stats::of(d).upload_decoders.load(Ordering::Relaxed).max(0) as u32,
            // The capacity as the camera threads last learned it (4 times a second).
            share: load::share_pct(d, demand),
        })
        .collect();
    let order = rank(&table, sessions::cap(), load::limit_pct());
    let mut last_err = None;
    let mut usable = Vec::new();
    let mut later = false;
    for &d in &order {
        match super::device(d) {
            // One attempt each: the wait is in `place`, without the lock, and asks every GPU again.
            Ok(dev) => match HwTicket::try_take(&dev, demand, true, patient) {
                Ok(t) => return Ok(Placed::Now(d, Some(t))),
                Err(f) => {
                    later |= f == sessions::Full::Ramping;
                    usable.push(d)
                }
            },
            Err(e) => last_err = Some(e),
        }
    }
    if later && patient {
        return Ok(Placed::Later);
    }
    // Every GPU is full: software + upload where the fewest cameras upload already.
    match table.iter().filter(|s| usable.contains(&s.ordinal)).min_by_key(|s| (s.uploads, s.ordinal)) {
        Some(s) => Ok(Placed::Now(s.ordinal, None)),
        None => Err(last_err.unwrap_or_else(|| Error::new(ErrorKind::NoDevice, "no usable GPU"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(ordinal: i32, held: u32, limit: Option<u32>, uploads: u32) -> Standing {
        Standing { ordinal, held, limit, uploads, share: None }
    }

    #[test]
    fn a_new_camera_goes_where_the_most_sessions_are_left() {
        // Nothing known: the GPU with fewer sessions held, so cameras alternate.
        assert_eq!(rank(&[gpu(0, 5, None, 0), gpu(1, 4, None, 0)], 0, 99), vec![1, 0]);
        assert_eq!(rank(&[gpu(0, 4, None, 0), gpu(1, 4, None, 0)], 0, 99), vec![0, 1], "a tie: the lower ordinal");
        // GPU 0 met its limit: GPU 1, of the same kind, is taken to have the same one.
        assert_eq!(rank(&[gpu(0, 288, Some(288), 0), gpu(1, 200, None, 0)], 0, 99), vec![1, 0]);
        // Another process holds sessions on GPU 1 (it refused at 100 held by nvcam): fewer left there.
        assert_eq!(rank(&[gpu(0, 150, Some(288), 0), gpu(1, 90, Some(100), 0)], 0, 99), vec![0, 1]);
        // The cap counts like a limit.
        assert_eq!(rank(&[gpu(0, 3, None, 0), gpu(1, 1, None, 0)], 4, 99), vec![1, 0]);
    }

    #[test]
    fn a_new_camera_goes_where_the_engines_have_the_most_room() {
        let with = |ordinal, held, share| Standing { share, ..gpu(ordinal, held, None, 0) };
        // Fewer sessions held on GPU 0, but its cameras ask more of its engines (bigger streams).
        assert_eq!(rank(&[with(0, 40, Some(80)), with(1, 60, Some(50))], 0, 99), vec![1, 0]);
        // Past the limit on GPU 1: GPU 0 takes it, though busier by sessions.
        assert_eq!(rank(&[with(0, 100, Some(98)), with(1, 10, Some(101))], 0, 99), vec![0, 1]);
        // Not learned yet: counted as idle.
        assert_eq!(rank(&[with(0, 10, Some(30)), with(1, 20, None)], 0, 99), vec![1, 0]);
        // The limit off: only sessions count as full.
        assert_eq!(rank(&[with(0, 10, Some(120)), with(1, 20, Some(130))], 0, 0), vec![0, 1]);
    }

    #[test]
    fn with_every_gpu_full_the_fewest_uploads_come_first() {
        assert_eq!(rank(&[gpu(0, 288, Some(288), 9), gpu(1, 288, Some(288), 3)], 0, 99), vec![1, 0]);
    }
}
