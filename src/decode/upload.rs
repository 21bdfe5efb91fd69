//! Software decode plus upload into the camera's GPU pool: the fall-back when NVDEC cannot take
//! a camera (session cap, session limit, out of memory, unsupported codec or format) and the
//! `NVCAM_DECODER_SOFTWARE` policy on a GPU. Frames land in the same device pool, so a host sees
//! the same device pointers and lifetimes whichever decoder made them.
//!
//! FFmpeg decodes on the CPU; swscale writes NV12 at the slot's pitch into one of a few pinned
//! staging buffers (allocated once per resolution); one cuMemcpy2DAsync uploads it on the camera's
//! stream, and the staging buffer is reused only once its event has completed.

use crate::gpu::context::{Copy2D, Mem};
use crate::gpu::memory::{device_slot, PinnedBuf};
use crate::gpu::{stats, CamGpu};
use crate::decode::software::SoftwareDecoder;
use crate::decode::{DecodeOpts, Decoder, DecoderKind, Outcome, Picture};
use crate::pool::{Geometry, Lease};
use crate::status::*;
use ffmpeg_next as ff;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Staging buffers per camera: enough that the CPU never waits for an upload in practice.
const STAGING: usize = 3;

pub(crate) struct UploadDecoder {
    sw: SoftwareDecoder,
    cam: Arc<CamGpu>,
    ring: Vec<PinnedBuf>,
    ring_geom: Option<Geometry>,
    next: usize,
}

impl UploadDecoder {
    pub(crate) fn new(cam: &Arc<CamGpu>, params: ff::codec::Parameters, time_base: ff::Rational, o: DecodeOpts) -> Result<UploadDecoder> {
        let sw = SoftwareDecoder::from_parameters(params, time_base, o)?;
        stats::of(cam.stream.dev.ordinal).upload_decoders.fetch_add(1, Ordering::Relaxed);
        Ok(UploadDecoder { sw, cam: cam.clone(), ring: Vec::new(), ring_geom: None, next: 0 })
    }
}

impl Drop for UploadDecoder {
    fn drop(&mut self) {
        // Each staging buffer retires to the deferred queue fenced by its last upload.
        self.ring.clear();
        stats::of(self.cam.stream.dev.ordinal).upload_decoders.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Decoder for UploadDecoder {
    fn kind(&self) -> DecoderKind {
        DecoderKind::SoftwareUpload
    }
    fn send_packet(&mut self, pkt: &ff::Packet) -> Result<Outcome> {
        self.sw.send_packet(pkt)
    }
    fn send_eof(&mut self) -> Result<Outcome> {
        self.sw.send_eof()
    }
    fn receive(&mut self) -> Result<Option<Picture>> {
        self.sw.receive()
    }
    fn write_into(&mut self, lease: &mut Lease) -> Result<Outcome> {
        let g = lease.pool().geom;
        let s = &self.cam.stream;
        let dst = device_slot(lease, s, None)?;
        if self.ring_geom != Some(g) {
            self.ring.clear();
            for _ in 0..STAGING {
                self.ring.push(PinnedBuf::new(&s.dev, g.slot_bytes())?);
            }
            self.ring_geom = Some(g);
            self.next = 0;
        }
        let buf = &self.ring[self.next];
        if !buf.done().query()? {
            buf.done().synchronize()?; // the GPU is STAGING uploads behind (counted)
        }
        // SAFETY: the buffer's last upload has completed and only this decoder touches it.
        self.sw.convert_into(unsafe { buf.as_mut_slice() }, &g)?;
        // SAFETY: the staging buffer holds one slot image at `g.pitch`; the slot is ours (the
        // lease) on this GPU. The buffer's event and the slot's event, recorded right after,
        // fence its reuse and the slot's.
        unsafe {
            Copy2D { src: Mem::Host(buf.ptr()), src_pitch: g.pitch, dst: Mem::Device(dst), dst_pitch: g.pitch, width_bytes: g.row_bytes(), rows: g.y_rows() + g.uv_rows() }
                .enqueue(s)?;
        }
        buf.done().record(s)?;
        lease.pool().storage().mark_written(lease.index())?;
        self.next = (self.next + 1) % STAGING;
        stats::of(s.dev.ordinal).frames_copied.fetch_add(1, Ordering::Relaxed);
        Ok(Outcome::Clean)
    }
    fn restarts_at_recovery_point(&self) -> bool {
        true
    }
    fn before_recovery_point(&mut self) {
        self.sw.reopen();
    }
    fn reset(&mut self) -> bool {
        self.sw.flush();
        true
    }
}
