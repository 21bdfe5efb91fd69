//! Annex B conversion with FFmpeg's bitstream filters (`h264_mp4toannexb`, `hevc_mp4toannexb`),
//! for decoders that take start-code streams (NVIDIA's parser) from containers that store
//! avcC/hvcC (MP4, MKV). Streams that are Annex B already (RTSP, MPEG-TS, raw) pass untouched.

use crate::status::*;
use ff::ffi;
use ff::packet::{Mut as _, Ref as _};
use ffmpeg_next as ff;

pub(crate) struct AnnexB {
    bsf: *mut ffi::AVBSFContext,
    out: ff::Packet,
}

// SAFETY: the filter context is owned by this value and only used through `&mut self`.
unsafe impl Send for AnnexB {}

fn is_annexb(x: &[u8]) -> bool {
    x.starts_with(&[0, 0, 1]) || x.starts_with(&[0, 0, 0, 1])
}

/// The codec parameters' extradata (avcC, hvcC, or Annex B parameter sets; empty if none).
pub(crate) fn extradata(params: &ff::codec::Parameters) -> &[u8] {
    // SAFETY: `params` owns a valid AVCodecParameters.
    raw_extradata(unsafe { &*params.as_ptr() })
}

fn raw_extradata(p: &ffi::AVCodecParameters) -> &[u8] {
    if p.extradata.is_null() || p.extradata_size <= 0 {
        return &[];
    }
    // SAFETY: FFmpeg keeps `extradata_size` bytes at `extradata` for the parameters' lifetime.
    unsafe { std::slice::from_raw_parts(p.extradata, p.extradata_size as usize) }
}

impl AnnexB {
    /// The filter for `params` if it needs one, and the Annex B parameter sets (SPS/PPS/VPS) to
    /// prime a parser with, if any.
    pub(crate) fn new(params: &ff::codec::Parameters, tb: ff::Rational) -> Result<(Option<AnnexB>, Vec<u8>)> {
        let x = extradata(params).to_vec();
        let name = match params.id() {
            ff::codec::Id::H264 => c"h264_mp4toannexb",
            ff::codec::Id::HEVC => c"hevc_mp4toannexb",
            _ => return Ok((None, Vec::new())),
        };
        if x.is_empty() || is_annexb(&x) {
            return Ok((None, x));
        }
        // SAFETY: a NUL-terminated name; the result is a static filter description or null.
        let f = unsafe { ffi::av_bsf_get_by_name(name.as_ptr()) };
        if f.is_null() {
            return Err(Error::new(ErrorKind::Unsupported, format!("FFmpeg has no {name:?} bitstream filter")));
        }
        let mut bsf: *mut ffi::AVBSFContext = std::ptr::null_mut();
        // SAFETY: `f` is a valid filter; `bsf` receives a new context or stays null.
        let r = unsafe { ffi::av_bsf_alloc(f, &mut bsf) };
        if r < 0 {
            return Err(Error::ffmpeg("av_bsf_alloc", ff::Error::from(r)));
        }
        // From here `me` owns `bsf` and frees it on any early return.
        let me = AnnexB { bsf, out: ff::Packet::empty() };
        // SAFETY: `bsf` is a fresh context with its own par_in; `params` is valid.
        let r = unsafe { ffi::avcodec_parameters_copy((*bsf).par_in, params.as_ptr()) };
        if r < 0 {
            return Err(Error::ffmpeg("avcodec_parameters_copy", ff::Error::from(r)));
        }
        // SAFETY: as above; the filter is not initialized yet, so its fields may be set.
        let r = unsafe {
            (*bsf).time_base_in = tb.into();
            ffi::av_bsf_init(bsf)
        };
        if r < 0 {
            return Err(Error::ffmpeg("av_bsf_init (mp4toannexb)", ff::Error::from(r)));
        }
        // SAFETY: an initialized filter has valid output parameters.
        let out = raw_extradata(unsafe { &*(*bsf).par_out });
        let prime = if is_annexb(out) { out.to_vec() } else { Vec::new() };
        Ok((Some(me), prime))
    }

    pub(crate) fn send(&mut self, pkt: &ff::Packet) -> Result<()> {
        let mut tmp = ff::Packet::empty();
        // SAFETY: both packets are valid; the new reference is handed to the filter below, which
        // takes ownership of its contents (and leaves `tmp` blank).
        let r = unsafe { ffi::av_packet_ref(tmp.as_mut_ptr(), pkt.as_ptr()) };
        if r < 0 {
            return Err(Error::ffmpeg("av_packet_ref", ff::Error::from(r)));
        }
        // SAFETY: our initialized filter; `tmp` is a valid packet.
        let r = unsafe { ffi::av_bsf_send_packet(self.bsf, tmp.as_mut_ptr()) };
        if r < 0 {
            return Err(Error::ffmpeg("av_bsf_send_packet", ff::Error::from(r)));
        }
        Ok(())
    }

    /// The next filtered packet (valid until the next call), or None.
    pub(crate) fn receive(&mut self) -> Result<Option<&ff::Packet>> {
        // SAFETY: our filter and our output packet (unreffed before it is refilled).
        let r = unsafe {
            ffi::av_packet_unref(self.out.as_mut_ptr());
            ffi::av_bsf_receive_packet(self.bsf, self.out.as_mut_ptr())
        };
        if r == 0 {
            return Ok(Some(&self.out));
        }
        if r == ffi::AVERROR(ffi::EAGAIN) || r == ffi::AVERROR_EOF {
            return Ok(None);
        }
        Err(Error::ffmpeg("av_bsf_receive_packet", ff::Error::from(r)))
    }

    pub(crate) fn flush(&mut self) {
        // SAFETY: our filter and our output packet.
        unsafe {
            ffi::av_packet_unref(self.out.as_mut_ptr());
            ffi::av_bsf_flush(self.bsf);
        }
    }
}

impl Drop for AnnexB {
    fn drop(&mut self) {
        // SAFETY: our filter (av_bsf_free takes null too and nulls the pointer).
        unsafe { ffi::av_bsf_free(&mut self.bsf) };
    }
}
