//! A change of a stream's parameters inside one session, with no reconnect: an encoder
//! reconfigured to another size, a file whose clip switches size. The demuxer keeps the session's
//! first parameters; the new ones come in-band (H.264/HEVC parameter sets before a key frame, a
//! JPEG's frame header) or as new extradata beside a packet. A file whose pictures change size
//! mid-way is one players choke on, so a key frame of another size, profile or sample layout
//! brings new [`Params`], and the recordings go on in a new part from that key frame. A stream
//! whose demuxer gave no parameter sets gets the first in-band ones in its [`Params`].
//!
//! Only a key frame whose parameter sets differ from the last ones seen is looked at closely
//! (by FFmpeg's own parser, which knows every SPS syntax): a camera that repeats the same sets
//! before every key frame costs a copy of them (tens of bytes) and a comparison; an MJPEG
//! picture (every one is a key frame) a comparison of its frame header.

use super::params::{Params, Shape};
use crate::bitstream::nal::{h264_slice, hevc_slice, length_size, Nals};
use ff::ffi;
use ffmpeg_next as ff;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    H264,
    Hevc,
    Jpeg,
    Other,
}

/// How a codec's NAL units are told apart: slices, sequence-level sets, all parameter sets.
type NalKinds = (fn(u8) -> bool, &'static [u8], &'static [u8]);

/// Watches one session's key frames for parameters other than its own.
pub(crate) struct Watch {
    kind: Kind,
    id: ffi::AVCodecID,
    /// Bytes of each NAL unit's length prefix; `None` for Annex B.
    nal_len: Option<usize>,
    /// The sequence-level parameter sets (or JPEG frame header) of the last key frame that had
    /// any: only other ones are parsed.
    last: Vec<u8>,
}

impl Watch {
    pub(crate) fn new(params: &ff::codec::Parameters) -> Watch {
        let (kind, hevc) = match params.id() {
            ff::codec::Id::H264 => (Kind::H264, false),
            ff::codec::Id::HEVC => (Kind::Hevc, true),
            ff::codec::Id::MJPEG => (Kind::Jpeg, false),
            _ => (Kind::Other, false),
        };
        let nal_len = if matches!(kind, Kind::H264 | Kind::Hevc) { length_size(params, hevc) } else { None };
        Watch { kind, id: params.id().into(), nal_len, last: Vec::new() }
    }

    /// Whether `params` lack the parameter sets a file's header needs and the stream's packets
    /// carry (Annex B H.264/HEVC without extradata).
    pub(crate) fn needs_sets(&self, params: &Params) -> bool {
        matches!(self.kind, Kind::H264 | Kind::Hevc) && self.nal_len.is_none() && params.extradata().is_empty()
    }

    /// For a key frame's packet (`new_extradata`: the demuxer's new extradata beside it, if
    /// any): the parameters it starts, when they are not `cur`'s.
    pub(crate) fn check(&mut self, data: &[u8], new_extradata: Option<&[u8]>, cur: &Arc<Params>) -> Option<Arc<Params>> {
        let (seen, extra) = match (self.kind, new_extradata) {
            (Kind::Other, _) => return None,
            // Every MJPEG packet is a key frame: compare before copying.
            (Kind::Jpeg, _) => match jpeg_frame_header(data)? {
                h if h == self.last.as_slice() => return None,
                h => (h.to_vec(), None),
            },
            (_, Some(x)) if !x.is_empty() => (x.to_vec(), Some(x.to_vec())),
            _ => {
                let (seq, all) = self.parameter_sets(data);
                if seq.is_empty() {
                    return None;
                }
                // Annex B parameter sets are extradata as they are; a length-prefixed stream
                // keeps its avcC/hvcC record (its decoders read the sets in-band).
                (seq, self.nal_len.is_none().then_some(all))
            }
        };
        if seen == self.last {
            return None;
        }
        self.last = seen;
        let shape = match self.kind {
            Kind::Jpeg => {
                let (w, h) = jpeg_size(&self.last)?;
                Shape { width: w, height: h, ..cur.shape() }
            }
            _ => probe(self.id, extra.as_deref().unwrap_or(cur.extradata()), data)?,
        };
        // A demuxer without extradata (MPEG-TS, an SDP without parameter sets) leaves the
        // containers' headers without the sets they need: the first ones in-band fill them in.
        let fills = cur.extradata().is_empty() && extra.is_some();
        if cur.shape().same_file_as(&shape) && !fills {
            return None;
        }
        let shape = if fills && cur.shape().same_file_as(&shape) { cur.shape() } else { shape };
        Params::changed(cur, shape, extra.as_deref()).map_err(|e| log::warn!("recording: {e}")).ok()
    }

    /// The packet's sequence-level sets (SPS and VPS: what a new size comes in) and all its
    /// parameter sets as Annex B extradata (PPS too), read up to its first slice.
    fn parameter_sets(&self, data: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let (slice, seq_types, all_types): NalKinds = match self.kind {
            Kind::H264 => (h264_slice, &[7, 13, 15], &[7, 8, 13, 15]),
            _ => (hevc_slice, &[32, 33], &[32, 33, 34]),
        };
        let (mut seq, mut all) = (Vec::new(), Vec::new());
        for nal in Nals::new(data, self.nal_len, slice) {
            let Some(&b) = nal.first() else { continue };
            if slice(b) {
                break;
            }
            let t = if self.kind == Kind::H264 { b & 0x1f } else { (b >> 1) & 0x3f };
            // A 4-byte start code leaves a zero on the unit before it.
            let end = nal.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
            if seq_types.contains(&t) {
                seq.extend_from_slice(&nal[..end]);
            }
            if all_types.contains(&t) {
                all.extend_from_slice(&[0, 0, 0, 1]);
                all.extend_from_slice(&nal[..end]);
            }
        }
        (seq, all)
    }
}

/// The size, profile and sample layout FFmpeg's parser reads from `data` (a key frame) after
/// `extradata`.
fn probe(id: ffi::AVCodecID, extradata: &[u8], data: &[u8]) -> Option<Shape> {
    let pad = ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
    let mut buf = Vec::with_capacity(data.len() + pad);
    buf.extend_from_slice(data);
    buf.resize(data.len() + pad, 0);
    // SAFETY: the parser and the context are checked for null, used only here and freed on
    // every path; the context's extradata is a padded av_malloc copy it owns (freed with it);
    // the input is padded as av_parser_parse2 requires, and outlives the call.
    unsafe {
        let parser = ffi::av_parser_init(id as i32);
        if parser.is_null() {
            return None;
        }
        let mut ctx = ffi::avcodec_alloc_context3(std::ptr::null());
        let shape = (|| {
            if ctx.is_null() {
                return None;
            }
            if !extradata.is_empty() {
                let x = ffi::av_mallocz(extradata.len() + pad) as *mut u8;
                if x.is_null() {
                    return None;
                }
                std::ptr::copy_nonoverlapping(extradata.as_ptr(), x, extradata.len());
                (*ctx).extradata = x;
                (*ctx).extradata_size = extradata.len() as i32;
            }
            (*ctx).codec_id = id;
            (*ctx).codec_type = ffi::AVMediaType::AVMEDIA_TYPE_VIDEO;
            (*parser).flags |= ffi::PARSER_FLAG_COMPLETE_FRAMES;
            let (mut out, mut out_len) = (std::ptr::null_mut(), 0);
            ffi::av_parser_parse2(parser, ctx, &mut out, &mut out_len, buf.as_ptr(), data.len() as i32, ffi::AV_NOPTS_VALUE, ffi::AV_NOPTS_VALUE, 0);
            let (w, h) = ((*parser).width, (*parser).height);
            (w > 0 && h > 0).then(|| Shape { width: w, height: h, profile: (*ctx).profile, level: (*ctx).level, format: (*parser).format })
        })();
        ffi::av_parser_close(parser);
        ffi::avcodec_free_context(&mut ctx);
        shape
    }
}

/// A JPEG's frame header (SOFn segment), read from the markers before its first scan.
fn jpeg_frame_header(data: &[u8]) -> Option<&[u8]> {
    if data.get(..2) != Some(&[0xFF, 0xD8]) {
        return None;
    }
    let mut pos = 2;
    loop {
        if data.get(pos) != Some(&0xFF) {
            return None;
        }
        while data.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let code = *data.get(pos)?;
        if code == 0xDA || code == 0xD9 {
            return None;
        }
        let len = u16::from_be_bytes([*data.get(pos + 1)?, *data.get(pos + 2)?]) as usize;
        let seg = data.get(pos + 3..pos + 1 + len)?;
        if matches!(code, 0xC0..=0xCF) && !matches!(code, 0xC4 | 0xC8 | 0xCC) {
            return Some(seg);
        }
        pos += 1 + len;
    }
}

/// Width and height of a JPEG frame header.
fn jpeg_size(sof: &[u8]) -> Option<(i32, i32)> {
    let s = sof.get(..5)?;
    let (h, w) = (u16::from_be_bytes([s[1], s[2]]) as i32, u16::from_be_bytes([s[3], s[4]]) as i32);
    (w > 0 && h > 0).then_some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame header is found past the tables, and its size read; a packet cut before it has none.
    #[test]
    fn a_jpeg_frame_header_gives_the_size() {
        let mut j = vec![0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x04, 1, 2];
        j.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 8, 0x01, 0xE0, 0x02, 0x80, 3]);
        j.extend_from_slice(&[1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        j.extend_from_slice(&[0xFF, 0xDA, 0, 2]);
        let sof = jpeg_frame_header(&j).unwrap();
        assert_eq!(jpeg_size(sof), Some((640, 480)));
        assert_eq!(jpeg_frame_header(&j[..8]), None);
    }
}
