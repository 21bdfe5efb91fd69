//! A camera keeps its NVDEC decoder across a reconnect.
//!
//! `cuvidCreateDecoder` takes about 70 ms and the driver runs them one at a time, so a burst of
//! 32 reconnects (each destroying and creating its decoder) took 2.3-2.7 s until every camera
//! had a frame again (H100, docs/BENCHMARKS.md). A reconnect of the same camera almost always
//! brings back the same stream, so a session's decoder is not destroyed when the session ends:
//! it is *parked* in the camera's [`DecoderSlot`], and the next session's first sequence header
//! adopts it where it fits (`parser.rs` `State::sequence`, the same rules as a size change
//! within a session):
//!
//! - same codec, coded size and enough decode surfaces: used as is;
//! - same codec, a coded size within the size it was created for (`ulMaxWidth`/`ulMaxHeight`)
//!   and enough surfaces: `cuvidReconfigureDecoder` (NVIDIA's documented limits: same codec,
//!   chroma format and bit depth, size within the creation maximum);
//! - else it is destroyed and a new one created.
//!
//! Chroma format and bit depth need no check: a decoder exists only for 8-bit 4:2:0 (the
//! sequence callback refuses anything else before it makes or keeps one).
//!
//! Why this is safe:
//! - **One user at a time.** The slot is a `Mutex<Option<_>>` and a session *moves* the decoder
//!   out ([`DecoderSlot::begin`]) before it makes its parser; only the camera's own worker thread
//!   parks and takes, one session after another. A decoder is never in the slot and in a
//!   session at once.
//! - **Nothing of the old session is in flight.** A session parks its decoder when it ends
//!   (`NvDecoder`'s drop): its parser is destroyed first (no more callbacks), its queued
//!   pictures dropped, no picture is mapped (maps live inside one `write_into`), and the
//!   camera's own stream is waited for (copies out of the output surfaces, post-processing of
//!   its maps), never the device or the context. The next session's new parser numbers its
//!   pictures afresh, exactly as after a rewound file (`reset`, which always kept the decoder).
//! - **Frames the host holds are untouched.** Frames are copies in the camera's pool, never
//!   NVDEC surfaces, so reusing or reconfiguring the surfaces changes no delivered pixel.
//! - **Same stream, same device.** A parked decoder is adopted only by a session of the camera
//!   that parked it, on the same `CamGpu` (checked), so the ordering argument of `mod.rs` (maps
//!   and copies on the camera's one stream) carries over.
//! - **Never a faulted decoder.** A decoder whose decode, map, unmap or reconfigure failed, or
//!   that NVDEC refused for the stream, or whose session ended in too many recoveries, is
//!   destroyed, not parked.
//! - **Within the cap.** A parked decoder keeps its session's `HwTicket` (the per-device cap on
//!   hardware decode sessions) and hands it to the next session, so parked decoders never push
//!   the device past its cap, and a reconnect never loses its hardware decoder to the cap.
//! - **Bounded, and freed.** One parked decoder per camera at most. Dropping the slot destroys
//!   it, then returns its ticket (RAII); the camera's worker empties it when the camera closes,
//!   when a reconnect attempt fails (a camera that is down holds no decoder) and when it fails
//!   for good, and a new session that takes another decoder (AUTO's fall-backs, another policy)
//!   drops it. A file that ended (no LOOP) keeps it, for the reconnect that replays the file.
//!
//! `NVCAM_NVDEC_REUSE=0` turns reuse off (every session creates and destroys its decoder, as
//! before), for measurements and as a way out.

use super::counters::{count, COUNTERS};
use super::session::VideoDecoder;
use crate::gpu::context::Device;
use crate::gpu::load::Demand;
use crate::gpu::sessions::Load;
use crate::gpu::{CamGpu, Full, HwTicket};
use parking_lot::Mutex;
use std::sync::Arc;

/// Whether decoders are kept across reconnects (`NVCAM_NVDEC_REUSE=0` turns it off). Read at
/// each session's start and end, not per frame.
pub(crate) fn enabled() -> bool {
    !matches!(crate::switches::Switch::NvdecReuse.var().as_deref(), Ok("0") | Ok("off") | Ok("false"))
}

/// A parked decoder and the hardware-session ticket it holds (destroyed first, then returned).
type Parked = (VideoDecoder, HwTicket);

/// A camera's parked NVDEC decoder (at most one), owned by the camera's backend state.
#[derive(Default)]
pub(crate) struct DecoderSlot {
    parked: Mutex<Option<Parked>>,
}

impl DecoderSlot {
    /// A new session's share: the parked decoder, moved out of the slot (so no other session can
    /// ever see it), and the way back in when the session ends. A decoder of another device
    /// stream is dropped here.
    pub(crate) fn begin(self: &Arc<Self>, cam: &Arc<CamGpu>) -> Reuse {
        let taken = self.parked.lock().take();
        let (decoder, ticket) = match taken.filter(|(d, _)| Arc::ptr_eq(&d.cam, cam) && enabled()) {
            Some((d, t)) => (Some(d), Some(t)),
            None => (None, None),
        };
        Reuse { slot: self.clone(), decoder, ticket }
    }

    /// Destroys the parked decoder, if any (the camera closes, is down, or failed for good).
    /// Runs on the caller's thread (the camera's worker): it waits for the camera's stream only.
    pub(crate) fn clear(&self) {
        let d = self.parked.lock().take();
        drop(d);
    }
}

/// What a new session gets of its camera's slot: the decoder it may adopt and the slot to park
/// its own decoder in at the end. Dropped unused (another backend chosen), it destroys the decoder.
/// (Fields drop in order: the decoder is destroyed before its ticket is returned.)
pub(crate) struct Reuse {
    slot: Arc<DecoderSlot>,
    decoder: Option<VideoDecoder>,
    ticket: Option<HwTicket>,
}

impl Reuse {
    /// The hardware-session ticket for the new session: the parked decoder's (its session goes
    /// on), or one taken for it already (placement on any GPU), else a new one within the
    /// device's cap and observed session limit (`crate::gpu::sessions`).
    pub(crate) fn ticket(&mut self, dev: &Arc<Device>, demand: Demand, load: Load) -> std::result::Result<HwTicket, Full> {
        match self.ticket.take() {
            Some(t) => Ok(t),
            None => HwTicket::take(dev, demand, load),
        }
    }

    /// A ticket taken for this session beforehand; dropped if the parked decoder brings one.
    pub(crate) fn give(&mut self, t: HwTicket) {
        if self.ticket.is_none() {
            self.ticket = Some(t);
        }
    }

    /// (the camera's slot, the decoder parked by its last session).
    pub(super) fn split(self) -> (Arc<DecoderSlot>, Option<VideoDecoder>) {
        (self.slot, self.decoder)
    }
}

impl DecoderSlot {
    /// Parks `d` for the camera's next session, or destroys it: when reuse is off, when it is
    /// faulted, when `healthy` is false (NVDEC refused the stream, too many recoveries, a panic),
    /// or when the camera's stream cannot be waited for. Never holds the slot's lock while it
    /// waits or destroys.
    pub(super) fn park(&self, d: VideoDecoder, ticket: HwTicket, healthy: bool) {
        if !healthy || d.faulted() || !enabled() || std::thread::panicking() {
            drop((d, ticket));
            return;
        }
        // Copies out of its output surfaces (and the post-processing of its last maps) run on
        // the camera's stream: wait for them, so the decoder goes to the next session idle.
        if let Err(e) = d.cam.stream.synchronize() {
            log::warn!("GPU {}: NVDEC decoder not kept for the next connection: {e}", d.cam.ordinal());
            drop((d, ticket));
            return;
        }
        count(&COUNTERS.decoders_parked);
        let old = self.parked.lock().replace((d, ticket));
        drop(old);
    }
}
