//! One connection: open the source, pick the decoder, then read, decode, pace and deliver until
//! the stream ends, fails, stalls, or the camera is stopped or kicked.

use super::deliver::deliver;
use super::shared::{CameraState, Shared};
use crate::input::{self, Read};
use crate::select::{self, Chosen};
use crate::status::*;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) enum SessionEnd {
    Stop,
    Eof,
    Kicked,
}

/// The first session's result goes back to a synchronous open.
pub(super) type FirstOpen = Option<Sender<Result<()>>>;

/// A new codec starts a new pool: another decoder may write another kind of memory.
fn note_codec(sh: &Shared, input: &input::Input) {
    let codec = format!("{:?}", input.stream().parameters().id()).to_lowercase();
    let mut st = sh.stream.lock();
    if !st.codec.is_empty() && st.codec != codec {
        log::info!(
            "camera {}: codec changed {} -> {codec}; new pool, the old one lives until its last clone is released",
            sh.name(),
            st.codec
        );
        sh.counters.stream_changes.fetch_add(1, Ordering::Relaxed);
        sh.pools.lock().retire();
    }
    st.codec = codec;
}

/// Records the decoder in use (logged when it changes: a new session's choice or a fall-back).
fn note_decoder(sh: &Shared, kind: crate::decode::DecoderKind) {
    let mut st = sh.stream.lock();
    if st.decoder != Some(kind) {
        log::info!("camera {}: decoding with {}", sh.name(), kind.name());
        st.decoder = Some(kind);
    }
}

/// Wall-clock pacing of files and the test source to their timestamps.
struct Pacer {
    clock: Option<(Instant, i64)>,
}

impl Pacer {
    /// Sleeps until the picture at `pts_us` is due (re-anchoring after a timestamp jump).
    fn wait(&mut self, sh: &Shared, pts_us: i64) {
        if pts_us == i64::MIN {
            return;
        }
        let (t0, p0) = *self.clock.get_or_insert((Instant::now(), pts_us));
        let due = t0 + Duration::from_micros((pts_us - p0).max(0) as u64);
        let now = Instant::now();
        if due > now + Duration::from_millis(1) {
            if due - now > Duration::from_secs(2) {
                self.clock = Some((now, pts_us)); // timestamp jump: re-anchor
            } else {
                sh.sleep_interruptible(due - now);
            }
        }
    }
}

pub(super) fn session(sh: &Arc<Shared>, first: &mut FirstOpen, attempt: &mut u32, connected: &mut bool) -> Result<SessionEnd> {
    let o = &sh.opts;
    let mut input = input::open(&sh.source, &o.ffmpeg, &sh.irq, o.open_timeout)?;
    let Chosen { decoder: mut dec, pools } = select::decoder_for(o, &input.stream(), &sh.backend)?;
    note_codec(sh, &input);
    let mut kind = dec.kind();
    note_decoder(sh, kind);
    if let Some(tx) = first.take() {
        let _ = tx.send(Ok(()));
    }
    *connected = true;
    sh.note_packet();
    sh.set_state(CameraState::Streaming);
    sh.gate.set_playing(true);

    let paced = !o.flags.no_pacing && !sh.is_network();
    let mut pacer = Pacer { clock: None };
    let mut seq = sh.counters.decoded.load(Ordering::Relaxed);
    let mut fps_window = (Instant::now(), 0u64);
    let mut eof = false;
    loop {
        if sh.irq.stopping() {
            return Ok(SessionEnd::Stop);
        }
        if sh.irq.kicked() {
            return Ok(SessionEnd::Kicked);
        }
        if !eof {
            match input.read_video(o.stall_timeout) {
                Ok(Read::Packet(p)) => {
                    sh.note_packet();
                    sh.report(dec.send_packet(&p)?);
                }
                Ok(Read::Eof) => {
                    dec.send_eof()?;
                    eof = true;
                }
                Err(_) if sh.irq.kicked() => return Ok(SessionEnd::Kicked),
                Err(e) if e.code == NVCAM_E_CLOSED => return Ok(SessionEnd::Stop),
                Err(e) => {
                    if e.code == NVCAM_E_TIMEOUT {
                        sh.set_state(CameraState::Stalled);
                    }
                    return Err(e);
                }
            }
        }
        let mut got_any = false;
        while let Some(pic) = dec.receive()? {
            got_any = true;
            seq += 1;
            sh.counters.decoded.store(seq, Ordering::Relaxed);
            *attempt = 0;
            sh.counters.attempt.store(0, Ordering::Relaxed);
            sh.counters.next_retry_ms.store(0, Ordering::Relaxed);
            if paced {
                pacer.wait(sh, pic.pts_us);
            }
            let Some(_in_flight) = sh.gate.enter() else { return Ok(SessionEnd::Stop) };
            deliver(sh, &mut *dec, &pools, pic, seq)?;
            // A GPU decoder may have fallen back to another (same device, same pools); the
            // shared record is touched only when that happens, not per frame.
            if dec.kind() != kind {
                kind = dec.kind();
                note_decoder(sh, kind);
            }
            fps_window.1 += 1;
            let el = fps_window.0.elapsed();
            if el >= Duration::from_secs(1) {
                sh.counters.fps_milli.store(fps_window.1 * 1_000_000 / el.as_millis().max(1) as u64, Ordering::Relaxed);
                fps_window = (Instant::now(), 0);
            }
        }
        crate::gpu::maintain();
        if eof && !got_any {
            if !sh.source.is_live() && o.flags.loop_file {
                input.rewind()?;
                if !dec.reset() {
                    dec = select::decoder_for(o, &input.stream(), &sh.backend)?.decoder;
                }
                pacer.clock = None;
                eof = false;
                continue;
            }
            return Ok(SessionEnd::Eof);
        }
    }
}
