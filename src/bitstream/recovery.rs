//! Which packets are recovery points: where a decoder starting afresh (or after a loss) gets
//! exact pictures again. Read from the bitstream, not from a decoder, so every decoder's frames
//! are judged by the same points.
//!
//! The demuxer's key flag says "a decoder may start here", and FFmpeg's H.264 parser sets it for
//! IDR pictures and for recovery-point SEIs alike; but after an SEI the pictures are exact only
//! `recovery_frame_cnt` frames later (intra refresh: the refresh sweeps across that many frames).
//! So the first NAL units of each H.264 packet are read, up to the first slice; the scan never
//! goes into slice data.

use super::nal::{h264_slice, hevc_slice, length_size, Bits, Nals};
use ffmpeg_next as ff;

/// What a packet is as a recovery point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyPoint {
    /// Not one.
    None,
    /// Exact from this picture on (IDR, HEVC IRAP, a key frame of another codec).
    Full,
    /// A recovery-point SEI: exact from the picture this many frames later (decode order).
    After(u32),
}

/// What a loss inside a picture can reach, read from its first slice header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Picture {
    /// Later pictures may predict from it (H.264 `nal_ref_idc` ≠ 0, an HEVC type other than the
    /// sub-layer non-reference ones; never for JPEG; assumed for codecs not read).
    pub reference: bool,
    /// Its first slice is the picture's first (H.264 `first_mb_in_slice` 0, HEVC
    /// `first_slice_segment_in_pic_flag`): the picture's start was not lost.
    pub starts_whole: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    H264,
    Hevc,
    Jpeg,
    Other,
}

/// Classifies a stream's packets (Annex B, or length-prefixed as in MP4).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyScan {
    codec: Codec,
    /// Bytes of each NAL unit's length prefix; `None` for Annex B start codes.
    nal_len: Option<usize>,
}

impl KeyScan {
    pub(crate) fn new(params: &ff::codec::Parameters) -> KeyScan {
        let codec = match params.id() {
            ff::codec::Id::H264 => Codec::H264,
            ff::codec::Id::HEVC => Codec::Hevc,
            ff::codec::Id::MJPEG => Codec::Jpeg,
            _ => Codec::Other,
        };
        // avcC / hvcC records start with version 1; Annex B extradata starts with a start code.
        let nal_len = match codec {
            Codec::H264 | Codec::Hevc => length_size(params, codec == Codec::Hevc),
            _ => None,
        };
        KeyScan { codec, nal_len }
    }

    /// `key` is the demuxer's key flag.
    /// An H.264 stream in Annex B (the other modules' tests).
    #[cfg(test)]
    pub(crate) fn h264_for_tests() -> KeyScan {
        KeyScan { codec: Codec::H264, nal_len: None }
    }

    pub(crate) fn classify(&self, data: &[u8], key: bool) -> KeyPoint {
        let fallback = if key { KeyPoint::Full } else { KeyPoint::None };
        match self.codec {
            Codec::Other | Codec::Jpeg => fallback,
            Codec::Hevc => {
                for nal in Nals::new(data, self.nal_len, hevc_slice) {
                    let Some(&b) = nal.first() else { continue };
                    let t = (b >> 1) & 0x3f;
                    if t < 32 {
                        // The first slice: IRAP types are 16..=23.
                        return if (16..=23).contains(&t) { KeyPoint::Full } else { fallback };
                    }
                }
                fallback
            }
            Codec::H264 => {
                let mut sei = None;
                for nal in Nals::new(data, self.nal_len, h264_slice) {
                    let Some(&b) = nal.first() else { continue };
                    match b & 0x1f {
                        5 => return KeyPoint::Full,
                        1..=4 => break,
                        6 => sei = sei.or_else(|| recovery_frame_cnt(&nal[1..])),
                        _ => {}
                    }
                }
                match sei {
                    Some(n) => KeyPoint::After(n),
                    None => fallback,
                }
            }
        }
    }
}

impl KeyScan {
    /// An HEVC picture's NAL unit type (its first slice's); `None` for other codecs.
    pub(crate) fn hevc_type(&self, data: &[u8]) -> Option<u8> {
        if self.codec != Codec::Hevc {
            return None;
        }
        Nals::new(data, self.nal_len, hevc_slice).find_map(|n| n.first().copied().filter(|&b| hevc_slice(b))).map(|b| (b >> 1) & 0x3f)
    }

    /// What a loss in this packet's picture can reach, and whether its start is there.
    pub(crate) fn picture(&self, data: &[u8]) -> Picture {
        let unknown = Picture { reference: true, starts_whole: true };
        match self.codec {
            Codec::Jpeg => Picture { reference: false, starts_whole: true },
            Codec::Other => unknown,
            Codec::H264 => Nals::new(data, self.nal_len, h264_slice)
                .find(|n| n.first().is_some_and(|&b| h264_slice(b)))
                .map_or(unknown, |n| Picture { reference: n[0] >> 5 & 3 != 0, starts_whole: Bits::new(&n[1..]).ue() == Some(0) }),
            Codec::Hevc => Nals::new(data, self.nal_len, hevc_slice)
                .find(|n| n.first().is_some_and(|&b| hevc_slice(b)))
                .map_or(unknown, |n| {
                    let t = (n[0] >> 1) & 0x3f;
                    // TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N and the reserved RSV_VCL_N10/12/14.
                    let reference = !(t <= 14 && t % 2 == 0);
                    Picture { reference, starts_whole: n.get(2).is_some_and(|&b| b & 0x80 != 0) }
                }),
        }
    }

    /// Whether an RTP payload that begins with `p` starts a unit of the codec's bitstream (a NAL
    /// unit, a JPEG frame) rather than continuing one whose start was in an earlier packet. After
    /// a gap, a continuation means the gap cut a unit in two: the demuxer appends the rest to
    /// whatever came before. Unknown payloads are continuations.
    pub(crate) fn rtp_starts_unit(&self, p: &[u8]) -> bool {
        match self.codec {
            // RFC 6184: single NAL unit (1-23) and aggregation packets (24-27) start units;
            // fragments (FU-A 28, FU-B 29) only with their S bit.
            Codec::H264 => match p.first().map(|b| b & 0x1f) {
                Some(1..=27) => true,
                Some(28 | 29) => p.get(1).is_some_and(|b| b & 0x80 != 0),
                _ => false,
            },
            // RFC 7798: single NAL units and aggregation packets (48) start units, fragments
            // (49) only with S, PACI (50) is not read.
            Codec::Hevc => match p.first().map(|b| (b >> 1) & 0x3f) {
                Some(0..=48) => true,
                Some(49) => p.get(2).is_some_and(|b| b & 0x80 != 0),
                _ => false,
            },
            // RFC 2435: the fragment offset (bytes 1-3) is 0 in a frame's first packet.
            Codec::Jpeg => p.len() >= 4 && p[1..4] == [0, 0, 0],
            Codec::Other => false,
        }
    }
}

impl KeyScan {
    /// Whether an RTP payload that begins with `p` starts its picture's first slice (H.264
    /// `first_mb_in_slice` 0, HEVC `first_slice_segment_in_pic_flag`), whole or as the first
    /// fragment. Units of a picture that come before this one in its access unit are not slice
    /// data: parameter sets, SEI, access unit delimiters.
    pub(crate) fn rtp_starts_picture(&self, p: &[u8]) -> bool {
        match self.codec {
            // RFC 6184: a single NAL unit of a slice (1 non-IDR, 5 IDR), its header then the
            // slice header, whose first field is first_mb_in_slice (ue(v): a first bit of 1 is
            // 0); or an FU-A / FU-B that starts one (S bit), the slice header after the FU
            // header (FU-B's decoding order number first).
            Codec::H264 => match p.first().map(|b| b & 0x1f) {
                Some(1 | 5) => p.get(1).is_some_and(|b| b & 0x80 != 0),
                Some(28) => p.get(1).is_some_and(|b| b & 0x80 != 0 && matches!(b & 0x1f, 1 | 5)) && p.get(2).is_some_and(|b| b & 0x80 != 0),
                Some(29) => p.get(1).is_some_and(|b| b & 0x80 != 0 && matches!(b & 0x1f, 1 | 5)) && p.get(4).is_some_and(|b| b & 0x80 != 0),
                _ => false,
            },
            // RFC 7798: a single VCL NAL unit (types 0-31), its two header bytes then
            // first_slice_segment_in_pic_flag; or an FU (49) with S whose type is VCL, the slice
            // header after the FU header (no DONL: sprop-max-don-diff is not read, and a stream
            // that sends DONL reads as not starting a picture, the cautious answer).
            Codec::Hevc => match p.first().map(|b| (b >> 1) & 0x3f) {
                Some(0..=31) => p.get(2).is_some_and(|b| b & 0x80 != 0),
                Some(49) => p.get(2).is_some_and(|b| b & 0x80 != 0 && b & 0x3f <= 31) && p.get(3).is_some_and(|b| b & 0x80 != 0),
                _ => false,
            },
            Codec::Jpeg | Codec::Other => false,
        }
    }

    /// Whether an RTP payload that begins with `p` starts a unit that opens an access unit when
    /// it follows a slice: a parameter set, SEI or access unit delimiter, whole, as the first of
    /// an aggregation packet, or as the first fragment. FFmpeg's H.264 and HEVC parsers end the
    /// access unit they are putting together at such a unit once a slice is in it, so in the
    /// units the decoder gets one always comes before the slices of its unit.
    pub(crate) fn rtp_starts_unit_before_slices(&self, p: &[u8]) -> bool {
        match self.codec {
            // RFC 6184: SEI 6, SPS 7, PPS 8, AUD 9 (h264_parser's list); STAP-A (24) names its
            // first unit after its 2-byte size, FU-A (28) in its header when S is set.
            Codec::H264 => {
                let before = |t: u8| matches!(t & 0x1f, 6..=9);
                match p.first().map(|b| b & 0x1f) {
                    Some(6..=9) => true,
                    Some(24) => p.get(3).is_some_and(|&b| before(b)),
                    Some(28) => p.get(1).is_some_and(|&b| b & 0x80 != 0 && before(b)),
                    _ => false,
                }
            }
            // RFC 7798: VPS 32, SPS 33, PPS 34, AUD 35, prefix SEI 39 (hevc_parser's list, less
            // the end-of-sequence and end-of-stream units, which follow the slices); AP (48)
            // names its first unit after its 2-byte size, FU (49) in its header when S is set.
            Codec::Hevc => {
                let before = |t: u8| matches!(t, 32..=35 | 39);
                match p.first().map(|b| (b >> 1) & 0x3f) {
                    Some(48) => p.get(4).is_some_and(|&b| before((b >> 1) & 0x3f)),
                    Some(49) => p.get(2).is_some_and(|&b| b & 0x80 != 0 && before(b & 0x3f)),
                    Some(t) => before(t),
                    None => false,
                }
            }
            Codec::Jpeg | Codec::Other => false,
        }
    }

    /// Whether an RTP payload that begins with `p` is the rest of a key picture's slice whose
    /// start was lost (a fragment without its S bit that names an IDR or IRAP type). The
    /// demuxer appends such a rest to the access unit without a NAL header, so the unit no longer
    /// reads as a key; the fragment still tells that a key picture came at its timestamp.
    pub(crate) fn rtp_continues_key(&self, p: &[u8]) -> bool {
        if self.rtp_starts_unit(p) {
            return false;
        }
        match self.codec {
            // RFC 6184: FU-A/FU-B carry the unit's type in the FU header's low 5 bits.
            Codec::H264 => matches!(p.first().map(|b| b & 0x1f), Some(28 | 29)) && p.get(1).is_some_and(|b| b & 0x1f == 5),
            // RFC 7798: the FU header's low 6 bits; IRAP types are 16..=23.
            Codec::Hevc => p.first().is_some_and(|b| (b >> 1) & 0x3f == 49) && p.get(2).is_some_and(|b| (16..=23).contains(&(b & 0x3f))),
            // Every JPEG frame is a key frame: a cut one still came at its timestamp.
            Codec::Jpeg => p.len() >= 4,
            Codec::Other => false,
        }
    }
}

/// `recovery_frame_cnt` of a recovery-point SEI message (payload type 6) in an SEI NAL unit's
/// payload (after its header byte), if it has one.
fn recovery_frame_cnt(payload: &[u8]) -> Option<u32> {
    let mut r = Bits::new(payload);
    loop {
        let mut ty = 0u32;
        loop {
            let b = r.byte()?;
            // Saturating: a packet of 16 MB of 0xFF would carry a u32 past its end.
            ty = ty.saturating_add(b as u32);
            if b != 0xff {
                break;
            }
        }
        let mut size = 0u32;
        loop {
            let b = r.byte()?;
            size = size.saturating_add(b as u32);
            if b != 0xff {
                break;
            }
        }
        if ty == 6 {
            return r.ue();
        }
        for _ in 0..size {
            r.byte()?;
        }
        // rbsp_trailing_bits: no further message.
        if r.byte_at()? == 0x80 {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H264_ANNEXB: KeyScan = KeyScan { codec: Codec::H264, nal_len: None };

    #[test]
    fn idr_is_a_full_recovery_point_whatever_the_key_flag() {
        let pkt = [0, 0, 0, 1, 0x67, 0x42, 0, 0, 1, 0x68, 0xce, 0, 0, 1, 0x65, 0x88, 0x84];
        assert_eq!(H264_ANNEXB.classify(&pkt, false), KeyPoint::Full);
        let p = [0, 0, 1, 0x41, 0x9a];
        assert_eq!(H264_ANNEXB.classify(&p, false), KeyPoint::None);
    }

    #[test]
    fn recovery_point_sei_gives_its_frame_count() {
        // SEI: type 6, size 1, recovery_frame_cnt ue(v) = 3 -> bits 00100 then exact_match etc.
        // 0b0010_0100 = ue 3 followed by flags; then trailing 0x80.
        let pkt = [0, 0, 1, 0x06, 0x06, 0x01, 0x24, 0x80, 0, 0, 1, 0x41, 0x9a];
        assert_eq!(H264_ANNEXB.classify(&pkt, true), KeyPoint::After(3));
        // Another SEI first (type 5, 2 bytes), then the recovery point with count 0 (bit 1).
        let pkt = [0, 0, 1, 0x06, 0x05, 0x02, 0xaa, 0xbb, 0x06, 0x01, 0x80, 0x80, 0, 0, 1, 0x41];
        assert_eq!(H264_ANNEXB.classify(&pkt, true), KeyPoint::After(0));
    }

    #[test]
    fn length_prefixed_packets_and_hevc_irap() {
        let s = KeyScan { codec: Codec::H264, nal_len: Some(4) };
        assert_eq!(s.classify(&[0, 0, 0, 2, 0x65, 0x88], false), KeyPoint::Full);
        assert_eq!(s.classify(&[0, 0, 0, 2, 0x41, 0x88], false), KeyPoint::None);
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        // IDR_W_RADL (19): header 0x26 0x01.
        assert_eq!(h.classify(&[0, 0, 1, 0x40, 0x01, 0, 0, 1, 0x26, 0x01, 0xaf], false), KeyPoint::Full);
        // TRAIL_R (1): 0x02 0x01.
        assert_eq!(h.classify(&[0, 0, 1, 0x02, 0x01, 0xd0], true), KeyPoint::Full, "trusts the key flag");
        assert_eq!(h.classify(&[0, 0, 1, 0x02, 0x01, 0xd0], false), KeyPoint::None);
        let o = KeyScan { codec: Codec::Other, nal_len: None };
        assert_eq!(o.classify(&[1, 2, 3], true), KeyPoint::Full);
    }

    #[test]
    fn a_pictures_reference_use_and_start_come_from_its_first_slice() {
        // P slice, nal_ref_idc 2, first_mb_in_slice 0 (ue '1').
        assert_eq!(H264_ANNEXB.picture(&[0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x41, 0x9a]), Picture { reference: true, starts_whole: true });
        // B slice, nal_ref_idc 0, first_mb_in_slice 3 (ue '00100'): the picture's first slice is missing.
        assert_eq!(H264_ANNEXB.picture(&[0, 0, 1, 0x01, 0x20]), Picture { reference: false, starts_whole: false });
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        // TRAIL_N (0) with first_slice_segment_in_pic_flag; TRAIL_R (1) without.
        assert_eq!(h.picture(&[0, 0, 1, 0x00, 0x01, 0x80]), Picture { reference: false, starts_whole: true });
        assert_eq!(h.picture(&[0, 0, 1, 0x02, 0x01, 0x00]), Picture { reference: true, starts_whole: false });
        let j = KeyScan { codec: Codec::Jpeg, nal_len: None };
        assert!(!j.picture(&[0xff, 0xd8]).reference);
    }

    #[test]
    fn rtp_payloads_that_continue_a_cut_unit_are_told_apart() {
        // FU-A (type 28) with and without S; a single NAL unit; STAP-A.
        assert!(H264_ANNEXB.rtp_starts_unit(&[0x7c, 0x85]));
        assert!(!H264_ANNEXB.rtp_starts_unit(&[0x7c, 0x05]));
        assert!(!H264_ANNEXB.rtp_starts_unit(&[0x7c]));
        assert!(H264_ANNEXB.rtp_starts_unit(&[0x41, 0x9a]));
        assert!(H264_ANNEXB.rtp_starts_unit(&[0x18, 0x00]));
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        assert!(h.rtp_starts_unit(&[49 << 1, 1, 0x80 | 19]));
        assert!(!h.rtp_starts_unit(&[49 << 1, 1, 19]));
        assert!(h.rtp_starts_unit(&[1 << 1, 1]));
        let j = KeyScan { codec: Codec::Jpeg, nal_len: None };
        assert!(j.rtp_starts_unit(&[0, 0, 0, 0, 1, 64]));
        assert!(!j.rtp_starts_unit(&[0, 0, 5, 0xdc, 1, 64]));
        assert!(!KeyScan { codec: Codec::Other, nal_len: None }.rtp_starts_unit(&[0, 0, 0, 0]));
    }

    #[test]
    fn the_payload_that_starts_a_pictures_first_slice_is_told_apart() {
        // IDR slice, first_mb_in_slice 0, whole and as the first FU-A fragment.
        assert!(H264_ANNEXB.rtp_starts_picture(&[0x65, 0x88]));
        assert!(H264_ANNEXB.rtp_starts_picture(&[0x7c, 0x85, 0x88]));
        assert!(H264_ANNEXB.rtp_starts_picture(&[0x5c, 0x81, 0x9a]));
        // A later slice (first_mb_in_slice 3), a later fragment, a parameter set, STAP-A, cut short.
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x41, 0x20]));
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x7c, 0x85, 0x20]));
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x7c, 0x05, 0x88]));
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x67, 0x64]));
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x7c, 0x87, 0x88]), "an FU-A of an SPS");
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x18, 0x00, 0x10]));
        assert!(!H264_ANNEXB.rtp_starts_picture(&[0x7c, 0x85]));
        // FU-B: the decoding order number (2 bytes) before the slice header.
        assert!(H264_ANNEXB.rtp_starts_picture(&[0x7d, 0x85, 0, 1, 0x88]));
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        assert!(h.rtp_starts_picture(&[19 << 1, 1, 0x80]));
        assert!(!h.rtp_starts_picture(&[1 << 1, 1, 0x00]));
        assert!(h.rtp_starts_picture(&[49 << 1, 1, 0x80 | 19, 0x80]));
        assert!(!h.rtp_starts_picture(&[49 << 1, 1, 19, 0x80]), "a later fragment");
        assert!(!h.rtp_starts_picture(&[49 << 1, 1, 0x80 | 34, 0x80]), "an FU of a PPS");
        assert!(!h.rtp_starts_picture(&[33 << 1, 1, 0x80]), "an SPS");
    }

    #[test]
    fn payloads_that_start_a_unit_before_the_slices_are_told_apart() {
        // SPS, PPS, SEI, AUD whole; a STAP-A of an SPS; an FU-A starting an SEI.
        for p in [&[0x67, 0x64][..], &[0x68, 0xce], &[0x06, 0x05], &[0x09, 0xf0], &[0x18, 0x00, 0x10, 0x67], &[0x7c, 0x86]] {
            assert!(H264_ANNEXB.rtp_starts_unit_before_slices(p), "{p:x?}");
        }
        // Slices, a later fragment of an SPS, a STAP-A of a slice, end of sequence, filler,
        // a STAP-A cut short, an empty payload.
        for p in [&[0x65, 0x88][..], &[0x41, 0x9a], &[0x7c, 0x85, 0x88], &[0x7c, 0x07], &[0x18, 0x00, 0x10, 0x65], &[0x0a], &[0x0c], &[0x18, 0x00], &[]] {
            assert!(!H264_ANNEXB.rtp_starts_unit_before_slices(p), "{p:x?}");
        }
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        for p in [&[32 << 1, 1][..], &[33 << 1, 1], &[34 << 1, 1], &[35 << 1, 1], &[39 << 1, 1], &[48 << 1, 1, 0, 20, 33 << 1], &[49 << 1, 1, 0x80 | 39]] {
            assert!(h.rtp_starts_unit_before_slices(p), "{p:x?}");
        }
        for p in [&[19 << 1, 1, 0x80][..], &[1 << 1, 1], &[36 << 1, 1], &[40 << 1, 1], &[49 << 1, 1, 34], &[48 << 1, 1, 0, 20, 1 << 1]] {
            assert!(!h.rtp_starts_unit_before_slices(p), "{p:x?}");
        }
        assert!(!KeyScan { codec: Codec::Jpeg, nal_len: None }.rtp_starts_unit_before_slices(&[0, 0, 0, 0]));
        assert!(!KeyScan { codec: Codec::Jpeg, nal_len: None }.rtp_starts_picture(&[0, 0, 0, 0]));
    }

    #[test]
    fn a_key_picture_whose_start_was_lost_is_still_known_for_one() {
        // FU-A of an IDR slice (type 5) without S: the rest of a key picture.
        assert!(H264_ANNEXB.rtp_continues_key(&[0x7c, 0x05]));
        assert!(!H264_ANNEXB.rtp_continues_key(&[0x7c, 0x85]), "with S the unit starts: the access unit reads as a key");
        assert!(!H264_ANNEXB.rtp_continues_key(&[0x7c, 0x01]), "a P slice's rest");
        assert!(!H264_ANNEXB.rtp_continues_key(&[0x65, 0x88]), "a whole IDR NAL unit starts a unit");
        assert!(!H264_ANNEXB.rtp_continues_key(&[0x7c]));
        let h = KeyScan { codec: Codec::Hevc, nal_len: None };
        assert!(h.rtp_continues_key(&[49 << 1, 1, 19]));
        assert!(!h.rtp_continues_key(&[49 << 1, 1, 1]));
        assert!(!h.rtp_continues_key(&[49 << 1, 1, 0x80 | 19]));
    }

    /// An SEI's payload type and size are sums of 0xFF bytes: 16 MB of them (a hostile packet)
    /// overflowed the sum, a panic where overflow checks are on, and where not a type that wrapped
    /// round to 6 read the message as a recovery point.
    #[test]
    fn sixteen_megabytes_of_0xff_in_an_sei_type_never_wrap_to_a_recovery_point() {
        // 255 x 16843009 = 2^32 - 1; a last byte of 7 makes the sum 2^32 + 6.
        let mut pkt = vec![0, 0, 1, 0x06];
        pkt.extend(std::iter::repeat_n(0xff, 16_843_009));
        // type's last byte, size 1, recovery_frame_cnt 3 (ue '00100'), trailing bits, a P slice.
        pkt.extend([0x07, 0x01, 0x24, 0x80, 0, 0, 1, 0x41, 0x9a]);
        assert_eq!(H264_ANNEXB.classify(&pkt, false), KeyPoint::None);
    }

    #[test]
    fn truncated_or_garbage_packets_do_not_panic() {
        for len in 0..12 {
            let junk = [0u8, 0, 1, 6, 0xff, 0xff, 0xff, 0, 0, 3, 0, 0];
            let _ = H264_ANNEXB.classify(&junk[..len], true);
            let s = KeyScan { codec: Codec::H264, nal_len: Some(4) };
            let _ = s.classify(&[0xff, 0xff, 0xff, 0xff, 6, 1][..len.min(6)], true);
            let _ = H264_ANNEXB.picture(&junk[..len]);
            let _ = KeyScan { codec: Codec::Hevc, nal_len: None }.picture(&junk[..len]);
            let _ = s.picture(&[0xff, 0xff, 0xff, 0xff, 1, 1][..len.min(6)]);
        }
    }
}
