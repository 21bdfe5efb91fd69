//! A recording's writer thread: it writes the recording's packets, off the camera's thread, behind
//! a bounded queue (what it shares with the camera and the host: `shared.rs`; the handle:
//! `recorder.rs`).

use super::params::Params;
use super::muxer::Muxer;
use super::tally::{lost_to_error, Tally};
use super::packet::{Leading, Packet};
use super::shared::{Cut, Msg, Shared, State, STOP_GRACE};
use crate::status::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The writer thread's body: writes the pre-roll, then what comes, until the end, a stop, or an
/// error; splits into a new part when the stream's parameters change (a reconnect, a new size
/// inside a session).
pub(crate) fn write_loop(sh: Arc<Shared>, mut mux: Muxer, pre_roll: Vec<Arc<Packet>>, rx: Receiver<Msg>, mut cut: Option<Cut>) {
    let mut first_part = true;
    // Parts are named after the first file (`NAME-part3.EXT`, not `NAME-part2-part3.EXT`).
    let first = mux.path().to_path_buf();
    let mut tally = Tally::new();
    let mut stopped_early = false;
    let mut stop_seen: Option<Instant> = None;
    let result = (|| -> Result<()> {
        for p in &pre_roll {
            put(&sh, &mut mux, p, &first, &mut first_part, &mut cut, &mut tally)?;
        }
        drop(pre_roll);
        loop {
            let wait = sh.wall_left().min(Duration::from_millis(100));
            match rx.recv_timeout(wait) {
                Ok(Msg::Packet(p)) => {
                    sh.queued.fetch_sub(p.data.len(), Ordering::AcqRel);
                    put(&sh, &mut mux, &p, &first, &mut first_part, &mut cut, &mut tally)?;
                }
                Ok(Msg::End) | Err(RecvTimeoutError::Disconnected) => return Ok(()),
                // Stopped (by the host, a close, or a queue that overflowed): the camera's thread
                // sends the packets up to the pictures shown then and the end; a camera that
                // stalls meanwhile leaves the file with what was queued.
                Err(RecvTimeoutError::Timeout) if sh.stop.load(Ordering::Acquire) => {
                    if stop_seen.get_or_insert_with(Instant::now).elapsed() >= STOP_GRACE {
                        stopped_early = true;
                        return Ok(());
                    }
                }
                Err(RecvTimeoutError::Timeout) if sh.wall_left().is_zero() => {
                    log::info!("recording {}: no packets came until its end; finished with what it has", mux.path().display());
                    return Ok(());
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    })();
    let result = result.inspect_err(|_| lost_to_error(&sh, &mut tally, &rx));
    let stopped_early = stopped_early || sh.stop.load(Ordering::Acquire);
    if result.is_ok() && mux.bytes == 0 && sh.status.lock().frames == 0 {
        // Nothing came before the end (no key frame): a header-only file plays nowhere, so
        // none is left, and the status says why (or names the file that could not go).
        let part = super::muxer::part_path(mux.path());
        drop(mux);
        sh.no_picture.store(true, Ordering::Release);
        let why = "the recording ended before the camera sent a key frame: it holds no picture";
        let e = match std::fs::remove_file(&part) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                sh.status.lock().file = part.clone();
                Error::timeout(format!("{why}; its empty file '{}' could not be removed: {e}", part.display()))
            }
            _ => Error::timeout(format!("{why} and left no file")),
        };
        sh.fail(e);
        sh.mark_finished();
        return;
    }
    let done = result.and_then(|()| mux.finish().inspect_err(|_| lost_to_error(&sh, &mut tally, &rx)));
    {
        let mut s = sh.status.lock();
        let kept = kept_parts(&s.kept_parts);
        match done.map(|closed| closed.name()) {
            Ok(Ok(path)) => {
                if let Some(c) = cut.as_mut() {
                    c.kept.add(&c.plan, &path);
                }
                s.file = path;
                if s.state == State::Running {
                    s.state = if stopped_early { State::Stopped } else { State::Done };
                    if let Some(kept) = kept {
                        // Complete, but not every part under its name: the host is told where.
                        let e = Error::new(ErrorKind::Io, format!("the last part is complete in '{}'; {kept}", s.file.display()));
                        log::warn!("recording {}: {e}", s.file.display());
                        s.state = State::Failed;
                        s.error = Some(e);
                    }
                }
                log::info!(
                    "recording {}: {} ({} frames, {} bytes, seq {}..{})",
                    s.file.display(),
                    if s.state == State::Done { "complete" } else { "ended early" },
                    s.frames,
                    s.bytes,
                    s.first_seq,
                    s.last_seq
                );
            }
            // Complete, but not under its name (taken meanwhile, or the folder denies the
            // rename): the status describes the file that stays, and says where it is.
            Ok(Err((part, e))) => {
                if let Some(c) = cut.as_mut() {
                    c.kept.add(&c.plan, &part);
                }
                s.file = part;
                if s.state == State::Running {
                    let e = match kept {
                        Some(kept) => Error::new(e.kind, format!("{}; {kept}", e.msg)),
                        None => e,
                    };
                    log::warn!("recording {}: {e}", s.file.display());
                    s.state = State::Failed;
                    s.error = Some(e);
                }
            }
            Err(e) => {
                if s.state == State::Running {
                    log::warn!("recording {}: {e}", s.file.display());
                    s.state = State::Failed;
                    s.error = Some(e);
                }
            }
        }
    }
    sh.mark_finished();
}

/// What the recording's end says of its earlier parts that stay under their `.part` names
/// (`None`: there are none).
fn kept_parts(kept: &[std::path::PathBuf]) -> Option<String> {
    if kept.is_empty() {
        return None;
    }
    let names: Vec<String> = kept.iter().map(|p| format!("'{}'", p.display())).collect();
    Some(format!(
        "{} earlier part(s) are complete under their .part names (their names were taken or the rename was denied; a recording never replaces a file): {}",
        kept.len(),
        names.join(", ")
    ))
}

/// Writes one packet, opening the next part first when the packet is of another session.
fn put(sh: &Shared, mux: &mut Muxer, p: &Arc<Packet>, first: &Path, first_part: &mut bool, cut: &mut Option<Cut>, tally: &mut Tally) -> Result<()> {
    let new_session = !Arc::ptr_eq(mux.params(), &p.params);
    let due = cut.as_ref().is_some_and(|c| c.start_us.is_some_and(|s| p.clock_us - s >= c.plan.every_us));
    if new_session && mux.bytes == 0 {
        if !p.key {
            return Ok(());
        }
        // The file was opened with the stream's newest parameters, but its first packets (the
        // cache's oldest) are of the parameters before a change: it starts again with theirs.
        mux.restart(&p.params)?;
    } else if new_session || (due && p.key) {
        if !p.key {
            return Ok(()); // the new part starts at a key frame
        }
        next_part(sh, mux, first, &p.params, cut)?;
        tally.commit(sh);
        tally.part_start = true;
    }
    if tally.part_start {
        tally.leading = true;
    } else if tally.leading && p.leading == Leading::Skipped {
        // A leading picture of the part's first key frame that references pictures before it
        // (an open GOP): no decoder of this file shows it, so it is not written.
        return Ok(());
    } else if p.leading == Leading::No {
        tally.leading = false;
    }
    if let Some(c) = cut.as_mut() {
        c.start_us.get_or_insert(p.clock_us);
    }
    #[cfg(feature = "test-hooks")]
    match super::hooks::WRITE_DELAY_MS.load(Ordering::Relaxed) {
        0 => {}
        ms => std::thread::sleep(Duration::from_millis(ms)),
    }
    match mux.write(p) {
        Ok(true) => tally.commit(sh),
        Ok(false) => {}
        Err(e) => {
            // This packet is in no file either.
            tally.pending.push(p.clone());
            return Err(e);
        }
    }
    tally.pending.push(p.clone());
    p.written.store(true, Ordering::SeqCst);
    let seq = p.seq.load(Ordering::SeqCst);
    if seq != 0 {
        sh.note_seq(p, seq);
    }
    let mut s = sh.status.lock();
    if *first_part {
        s.first_pts_us = p.pts_us;
        *first_part = false;
    }
    if tally.part_start {
        // A new part's timestamps may start afresh (a reconnect): its span counts on its own.
        s.part_first_pts_us = p.pts_us;
        s.last_pts_us = p.pts_us;
        tally.part_start = false;
    }
    s.last_pts_us = s.last_pts_us.max(p.pts_us);
    s.frames += 1;
    s.bytes += p.data.len() as u64;
    if p.lost_before > 0 && s.frames > 1 {
        if s.loss_spans == 0 {
            s.first_loss_pts_us = p.pts_us;
        }
        s.lost_packets += p.lost_before;
        s.loss_spans += 1;
    }
    Ok(())
}

/// Finishes the current file and opens the next: `NAME-partN.EXT` for packets of new parameters
/// (the next number whose name and `.part` name are both free: an existing file is never
/// replaced), or the next segment of a segmented recording (then the oldest beyond its limits go).
fn next_part(sh: &Shared, mux: &mut Muxer, first: &Path, params: &Arc<Params>, cut: &mut Option<Cut>) -> Result<()> {
    let n = sh.status.lock().parts + 1;
    let path = match cut.as_mut() {
        Some(c) => c.plan.next_name(),
        None => free_part_name(first, n),
    };
    let next = Muxer::create(&path, params)?;
    let old = std::mem::replace(mux, next);
    let (from, to) = (old.params().size(), params.size());
    let done = match old.finish().inspect_err(|_| {
        // The new part is not written yet: it goes, and the recording ends with the error.
        let _ = std::fs::remove_file(super::muxer::part_path(&path));
    })?.name() {
        Ok(done) => done,
        Err((part, e)) => {
            // Complete under its `.part` name: the recording goes on; the log says where now,
            // and the recording's end names it (a segment is found by its folder's listing).
            log::warn!("recording: {e}");
            if cut.is_none() {
                sh.status.lock().kept_parts.push(part.clone());
            }
            part
        }
    };
    if let Some(c) = cut.as_mut() {
        c.start_us = None;
        let deleted = c.kept.add(&c.plan, &done);
        log::debug!("recording: segment {} done, {deleted} old one(s) deleted", done.display());
        let mut s = sh.status.lock();
        s.earlier_parts_us += s.last_pts_us - s.part_first_pts_us;
        s.parts = n;
        s.file = super::muxer::part_path(&path);
        return Ok(());
    }
    log::info!("recording {}: the stream changed ({from:?} -> {to:?}, or a reconnect); going on in {}", done.display(), path.display());
    let mut s = sh.status.lock();
    s.earlier_parts_us += s.last_pts_us - s.part_first_pts_us;
    s.parts = n;
    s.file = super::muxer::part_path(&path);
    Ok(())
}

/// `clip.mkv` → `clip-part2.mkv` (the stem cut short where the name would pass the
/// filesystem's limit: `muxer::fit_name`).
pub(crate) fn part_name(first: &Path, n: u32) -> PathBuf {
    let stem = first.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let ext = first.extension().map(|e| e.to_string_lossy().into_owned()).unwrap_or_default();
    first.with_file_name(super::muxer::fit_name(&stem, &format!("-part{n}"), &format!(".{ext}"), super::muxer::name_max(first)))
}

/// The part name for part `n`, or a later number where a file has that name or its `.part`
/// name (`Muxer::create` claims the `.part` name exclusively; the final rename never replaces).
fn free_part_name(first: &Path, n: u32) -> PathBuf {
    let mut k = n;
    loop {
        let p = part_name(first, k);
        if !p.exists() && !super::muxer::part_path(&p).exists() || k >= n.saturating_add(1000) {
            return p;
        }
        k += 1;
    }
}
