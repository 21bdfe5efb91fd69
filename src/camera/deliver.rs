//! Delivery: a decoded picture goes into a free slot of the camera's pool (a new pool when the
//! size or memory changed) and becomes the camera's newest frame.

use super::latency::wall_ns;
use super::shared::Shared;
use crate::rtp_loss::integrity::Integrity;
use crate::config::{IntegrityPolicy, DEFAULTS};
use crate::decode::{Decoder, Outcome, Picture};
use crate::frame::{Frame, TimeSource};
use crate::pool::{Geometry, Pool};
use crate::decode::select::Pools;
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pool for a picture of this size in the memory this session writes; a new one (the old
/// one lives on while frames use it) when either changed. `None`: the stream changed its size
/// too often lately, and the picture gets no pool (see `DEFAULTS.pool_churn_max`).
///
/// A published camera's pools can be mapped by other processes, with room for what each of them
/// may hold besides the camera's own slots; publishing or unpublishing starts a new pool.
fn pool_for(sh: &Shared, pools: &Pools, pic: &Picture) -> Result<Option<Arc<Pool>>> {
    let publication = sh.publication();
    let shared = publication.is_some();
    let mut p = sh.pools.lock();
    let size = (pic.width, pic.height, pic.depth);
    if let Some(cur) = p.current.as_ref().filter(|c| (c.geom.width, c.geom.height, c.geom.depth) == size && pools.holds(c) && (c.storage().exportable() == shared || (shared && p.no_export))) {
        return Ok(Some(cur.clone()));
    }
    let resized = p.current.as_ref().is_some_and(|c| (c.geom.width, c.geom.height, c.geom.depth) != size);
    if p.current.is_some() {
        // A change: at most `pool_churn_max` new pools in the window; pictures of another size
        // than the current pool's are dropped until the window has room again. The camera goes
        // on (no reconnect: a new session would only meet the same stream).
        let (max, window) = (DEFAULTS.pool_churn_max as usize, Duration::from_millis(DEFAULTS.pool_churn_window_ms as u64));
        let now = Instant::now();
        while p.replaced_at.front().is_some_and(|&t| now.saturating_duration_since(t) > window) {
            p.replaced_at.pop_front();
        }
        if p.replaced_at.len() >= max {
            log::debug!("camera {}: a {}x{} picture dropped: the stream changed its picture size {max} times within {} s", sh.name(), pic.width, pic.height, window.as_secs());
            return Ok(None);
        }
        p.replaced_at.push_back(now);
    }
    if let Some(o) = p.current.as_ref().filter(|_| resized) {
        log::info!(
            "camera {}: resolution {}x{} -> {}x{}; new pool, the old one lives until its last clone is released",
            sh.name(), o.geom.width, o.geom.height, pic.width, pic.height
        );
        sh.counters.stream_changes.fetch_add(1, Ordering::Relaxed);
    }
    // A size that changed inside the session (new parameter sets): refused before its pool.
    sh.opts.check_picture_size(pic.width, pic.height)?;
    p.retire();
    let geom = Geometry::new(pic.width, pic.height, pic.depth);
    let new = match &publication {
        None => pools.new_pool(geom, sh.opts.pool_slots)?,
        Some(pb) => {
            let t = pb.terms();
            let slots = sh.opts.pool_slots + (t.quota as usize) * (t.max_consumers as usize);
            match pools.new_exportable_pool(geom, slots) {
                Ok(pool) => pool,
                Err(e) => {
                    p.no_export = true;
                    // The camera goes on for its own host; attached processes miss its frames.
                    log::warn!("camera {}: a pool other processes can map could not be made ({}); published as '{}' without frames", sh.name(), e.msg, pb.name());
                    pools.new_pool(geom, sh.opts.pool_slots)?
                }
            }
        }
    };
    sh.stream.lock().size = (pic.width, pic.height);
    p.current = Some(new.clone());
    Ok(Some(new))
}

/// A picture that is not exact, under the camera's policy: counted, and (unless the host asked
/// for every frame) not published; a holding camera publishes its last exact frame again.
/// Returns whether the picture goes on to be published.
fn not_exact(sh: &Shared) -> bool {
    sh.counters.corrupt.fetch_add(1, Ordering::Relaxed);
    match sh.opts.integrity {
        IntegrityPolicy::MarkAll => true,
        IntegrityPolicy::ExactOnly => false,
        IntegrityPolicy::HoldLastExact => {
            if let Some(last) = sh.last_exact.lock().clone() {
                let mut m = sh.mailbox.lock();
                if !m.as_ref().is_some_and(|f| Arc::ptr_eq(f, &last)) {
                    *m = Some(last);
                    sh.mailbox_cv.notify_all();
                }
            }
            false
        }
    }
}

/// What a session lends each delivery: its camera, its decoder (which writes the picture into a
/// slot), its pools, and the judge of its pictures' integrity (see [`super::integrity`]).
pub(super) struct Ctx<'a> {
    pub(super) sh: &'a Arc<Shared>,
    pub(super) dec: &'a mut dyn Decoder,
    pub(super) pools: &'a Pools,
    pub(super) integrity: &'a mut Integrity,
    /// The session has ended and its decoder drains until then: a lossless camera waits for the
    /// host up to it (a kick no longer cuts the wait short), and not past it.
    pub(super) drain_by: Option<Instant>,
}

/// A picture's place in time: its number in the camera's sequence, when its packet was read
/// (`since`, for the decode latency), and its capture time and where that is from.
pub(super) struct Stamp {
    pub(super) seq: u64,
    pub(super) since: Instant,
    pub(super) capture: (u64, TimeSource),
}

/// Copies a decoded picture into a free slot and publishes it as the camera's latest frame. A
/// full pool drops the newest frame (counted), unless the camera is lossless. What the integrity
/// judge finds not exact goes by the camera's [`IntegrityPolicy`].
pub(super) fn deliver(cx: Ctx<'_>, pic: Picture, stamp: Stamp) -> Result<()> {
    let Ctx { sh, dec, pools, integrity, drain_by } = cx;
    let Stamp { seq, since, capture } = stamp;
    let mut marks = integrity.picture(pic.pts_us, pic.damaged && !no_decoder_reports(sh), Instant::now());
    log::trace!("camera {}: picture pts {} {marks:?}", sh.name(), pic.pts_us);
    // Not exact already: no copy at all unless the host wants it.
    if !marks.exact() && !not_exact(sh) {
        return Ok(());
    }
    #[cfg(feature = "test-hooks")]
    if super::hooks::take_session_panic(sh.handle()) {
        panic!("test hook: a panic inside the camera's session");
    }
    let Some(pool) = pool_for(sh, pools, &pic)? else {
        sh.counters.pictures_refused.fetch_add(1, Ordering::Relaxed);
        return Ok(());
    };
    let lossless = sh.opts.flags.lossless;
    let interrupted = || {
        sh.irq.stopping()
            || match drain_by {
                Some(by) => Instant::now() >= by,
                None => sh.irq.kicked(),
            }
    };
    if lossless {
        // Wait for the host to take the previous frame (bounded by stop and kick).
        let mut m = sh.mailbox.lock();
        while m.is_some() && !interrupted() {
            sh.mailbox_cv.wait_for(&mut m, Duration::from_millis(50));
        }
    }
    let mut lease = loop {
        match pool.acquire() {
            Some(l) => break l,
            None if lossless && !interrupted() => std::thread::sleep(Duration::from_millis(2)),
            None => {
                sh.counters.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
        }
    };
    let written = dec.write_into(&mut lease)?;
    if let Outcome::Corrupt(_) = &written {
        // The decoder's own report (NVDEC's decode status) comes with the copy.
        let was_exact = marks.exact();
        marks.corrupt = true;
        integrity.damaged(pic.pts_us, Instant::now());
        if was_exact && !not_exact(sh) {
            sh.report(written);
            return Ok(()); // the slot goes back to the pool; its copy is fenced like any other
        }
    }
    if sh.report(written) {
        return Ok(()); // the decoder recovered; this picture is lost (counted)
    }
    let frame = Arc::new(
        Frame::new(lease, sh.handle(), seq, pic.pts_us, wall_ns(), capture).with_color(pic.color, pic.bits).with_integrity(marks),
    );
    if marks.exact() {
        // The source works: the reconnect back-off starts over, before the host can see the frame
        // (and the stats). A corrupt picture does not reset it: a source of garbage would be
        // reopened at once, again and again.
        sh.counters.exact.fetch_add(1, Ordering::Relaxed);
        sh.counters.attempt.store(0, Ordering::Relaxed);
        sh.counters.next_retry_ms.store(0, Ordering::Relaxed);
    }
    if marks.exact() && sh.opts.integrity == IntegrityPolicy::HoldLastExact {
        *sh.last_exact.lock() = Some(frame.clone());
    }
    if let Some(pb) = sh.publication() {
        pb.announce(&frame);
    }
    let replaced = {
        let mut m = sh.mailbox.lock();
        let old = m.replace(frame);
        sh.mailbox_cv.notify_all();
        old
    };
    let now = Instant::now();
    sh.latency.lock().add(now, now.saturating_duration_since(since));
    if replaced.is_some() {
        sh.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Whether a test made this camera ignore its decoder's error reports (`test-hooks` only).
fn no_decoder_reports(_sh: &Shared) -> bool {
    #[cfg(feature = "test-hooks")]
    return _sh.no_decoder_reports;
    #[cfg(not(feature = "test-hooks"))]
    false
}
