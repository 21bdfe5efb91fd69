//! H.264's reference chain, read from slice headers: a reference picture that never reached the
//! decoder leaves a gap in `frame_num`, and every picture after it may predict from what is not
//! there. This is how a packet lost outside RTP shows (a file or a stream cut by a broken relay,
//! a recorder that dropped a frame): no sequence number tells, and decoders differ in what they
//! notice (FFmpeg's software decoder conceals the gap silently), so nvcam reads it itself, the
//! same for every decoder.
//!
//! Only the parameter sets and the first slice header of each picture are parsed, up to
//! `frame_num`; never slice data. A dropped non-reference picture leaves no gap, and needs none:
//! nothing predicts from it.
//!
//! The chain breaks the same way where the active sequence parameter set changes outside an IDR
//! (H.264 lets its content change only at one): the pictures after it are decoded against a
//! sequence the pictures they predict from were not. A decoder that meets a new picture size
//! there starts over and drops those pictures without a word, so no damaged picture comes out
//! to tell; a relay or camera that sends such a set is read as a break in the chain.

use super::nal::{extradata, h264_slice, length_size, Bits, Nals};
use ffmpeg_next as ff;
use std::collections::HashMap;

/// What a sequence parameter set says about `frame_num`.
#[derive(Clone, Copy, Debug)]
struct Sps {
    log2_max_frame_num: u32,
    separate_colour_plane: bool,
    gaps_allowed: bool,
    /// A hash of the whole set, to tell a repeat from a change.
    content: u64,
}

/// Follows `frame_num` across a stream's pictures.
#[derive(Debug, Default)]
pub(crate) struct FrameNumCheck {
    /// Annex B or length-prefixed (bytes of the prefix).
    nal_len: Option<usize>,
    sps: HashMap<u32, Sps>,
    /// PPS id → SPS id.
    pps: HashMap<u32, u32>,
    /// `frame_num` of the last reference picture, once one was seen.
    prev_ref: Option<u32>,
    /// The SPS id the last picture's slices named.
    active_sps: Option<u32>,
    /// The active SPS changed since the last picture: the next picture breaks the chain unless
    /// it is an IDR.
    sps_changed: bool,
}

fn skip_scaling_list(r: &mut Bits<'_>, size: usize) -> Option<()> {
    let (mut last, mut next) = (8i64, 8i64);
    for _ in 0..size {
        if next != 0 {
            let delta = r.se()? as i64;
            next = (last + delta + 256).rem_euclid(256);
        }
        last = if next == 0 { last } else { next };
    }
    Some(())
}

fn parse_sps(p: &[u8]) -> Option<(u32, Sps)> {
    let mut r = Bits::new(p);
    let profile = r.byte()?;
    r.byte()?;
    r.byte()?;
    let id = r.ue()?;
    let mut separate_colour_plane = false;
    if matches!(profile, 100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135) {
        let chroma = r.ue()?;
        if chroma == 3 {
            separate_colour_plane = r.bit()? == 1;
        }
        r.ue()?;
        r.ue()?;
        r.bit()?;
        if r.bit()? == 1 {
            for i in 0..if chroma != 3 { 8 } else { 12 } {
                if r.bit()? == 1 {
                    skip_scaling_list(&mut r, if i < 6 { 16 } else { 64 })?;
                }
            }
        }
    }
    let log2_max_frame_num = r.ue()?.checked_add(4).filter(|&v| v <= 16)?;
    match r.ue()? {
        0 => {
            r.ue()?;
        }
        1 => {
            r.bit()?;
            r.se()?;
            r.se()?;
            for _ in 0..r.ue()?.min(255) {
                r.se()?;
            }
        }
        _ => {}
    }
    r.ue()?;
    let gaps_allowed = r.bit()? == 1;
    let content = {
        use std::hash::{Hash, Hasher};
        // Zero bytes after the stop bit belong to the byte stream, not to the set (a 4-byte
        // start code's first byte, trailing_zero_8bits).
        let set = p.iter().rposition(|&b| b != 0).map_or(&p[..0], |end| &p[..=end]);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        set.hash(&mut h);
        h.finish()
    };
    Some((id, Sps { log2_max_frame_num, separate_colour_plane, gaps_allowed, content }))
}

impl FrameNumCheck {
    /// For an H.264 stream whose NAL units have `nal_len`-byte length prefixes (`None`: Annex B).
    pub(crate) fn new(nal_len: Option<usize>) -> FrameNumCheck {
        FrameNumCheck { nal_len, ..Default::default() }
    }

    /// The check for a stream (`params` its codec parameters, whose extradata may hold the
    /// parameter sets), if it is H.264.
    pub(crate) fn for_stream(params: &ff::codec::Parameters) -> Option<FrameNumCheck> {
        if params.id() != ff::codec::Id::H264 {
            return None;
        }
        let nal_len = length_size(params, false);
        let mut c = FrameNumCheck::new(nal_len);
        let extra = extradata(params);
        if nal_len.is_some() {
            // avcC: [5] SPS count, then (u16 length, NAL) each; then the PPS count and PPSs.
            let mut at = 5;
            for _ in 0..2 {
                let Some(&n) = extra.get(at) else { break };
                let n = if at == 5 { n & 0x1f } else { n };
                at += 1;
                for _ in 0..n {
                    let Some(len) = extra.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]) as usize) else { break };
                    if let Some(nal) = extra.get(at + 2..at + 2 + len) {
                        c.parameter_set(nal);
                    }
                    at += 2 + len;
                }
            }
        } else {
            c.gap_before(extra);
        }
        Some(c)
    }


    /// Whether it follows the stream's reference chain (it has read a reference picture's
    /// `frame_num`), so a reference picture lost from here on shows as a gap.
    pub(crate) fn tracking(&self) -> bool {
        self.prev_ref.is_some()
    }

    /// Reads a packet (one access unit); true if a reference picture is missing before it, or
    /// the active SPS changed before it and it is no IDR.
    pub(crate) fn gap_before(&mut self, data: &[u8]) -> bool {
        for nal in Nals::new(data, self.nal_len, h264_slice) {
            let Some(&h) = nal.first() else { continue };
            match h & 0x1f {
                t @ (1 | 5) => return self.slice(&nal[1..], t == 5, h >> 5 != 0),
                _ => self.parameter_set(nal),
            }
        }
        false
    }

    /// Takes in an SPS or PPS NAL unit (header byte first); other units are ignored.
    pub(crate) fn parameter_set(&mut self, nal: &[u8]) {
        let Some(&h) = nal.first() else { return };
        let payload = &nal[1..];
        match h & 0x1f {
            7 => {
                if let Some((id, s)) = parse_sps(payload) {
                    if let Some(old) = self.sps.insert(id, s) {
                        self.sps_changed |= self.active_sps == Some(id) && old.content != s.content;
                    }
                }
            }
            8 => {
                let mut r = Bits::new(payload);
                if let (Some(pps), Some(sps)) = (r.ue(), r.ue()) {
                    self.pps.insert(pps, sps);
                }
            }
            _ => {}
        }
    }

    /// The first slice of a picture.
    fn slice(&mut self, p: &[u8], idr: bool, reference: bool) -> bool {
        let mut r = Bits::new(p);
        let Some(first_mb) = r.ue() else { return false };
        if first_mb != 0 {
            // Not the picture's first slice (its first was lost, or the packet holds a later
            // one): the loss is for the transport's checks; no frame_num to go by.
            return false;
        }
        let changed = std::mem::take(&mut self.sps_changed) && !idr;
        let (Some(_slice_type), Some(pps)) = (r.ue(), r.ue()) else { return changed };
        let Some(&sps_id) = self.pps.get(&pps) else { return changed };
        self.active_sps = Some(sps_id);
        let Some(sps) = self.sps.get(&sps_id).copied() else { return changed };
        if sps.separate_colour_plane && r.bits(2).is_none() {
            return changed;
        }
        let Some(frame_num) = r.bits(sps.log2_max_frame_num) else { return changed };
        let max = 1u32 << sps.log2_max_frame_num;
        let gap = match self.prev_ref {
            Some(prev) if !idr && !sps.gaps_allowed => frame_num != prev && frame_num != (prev + 1) % max,
            _ => false,
        };
        if idr || reference {
            self.prev_ref = Some(frame_num);
        }
        gap || changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes bits MSB first, with Exp-Golomb codes, and inserts emulation prevention.
    #[derive(Default)]
    struct W {
        bits: Vec<u8>,
    }
    impl W {
        fn u(&mut self, n: u32, v: u32) -> &mut Self {
            for i in (0..n).rev() {
                self.bits.push(((v >> i) & 1) as u8);
            }
            self
        }
        fn ue(&mut self, v: u32) -> &mut Self {
            let x = v + 1;
            let n = 32 - x.leading_zeros();
            self.u(n - 1, 0).u(n, x)
        }
        fn nal(&mut self, header: u8) -> Vec<u8> {
            self.u(1, 1);
            while !self.bits.len().is_multiple_of(8) {
                self.bits.push(0);
            }
            let raw: Vec<u8> = self.bits.chunks(8).map(|c| c.iter().fold(0, |a, &b| (a << 1) | b)).collect();
            let mut out = vec![0, 0, 0, 1, header];
            let mut zeros = 0;
            for b in raw {
                if zeros >= 2 && b <= 3 {
                    out.push(3);
                    zeros = 0;
                }
                zeros = if b == 0 { zeros + 1 } else { 0 };
                out.push(b);
            }
            out
        }
    }

    fn sps_pps() -> Vec<u8> {
        // Baseline (66), level 30, sps 0, log2_max_frame_num 4 (+4 = 8 bits... minus4 = 4),
        // poc type 2, 1 ref frame, no gaps.
        let mut s = W::default();
        s.u(8, 66).u(8, 0).u(8, 30).ue(0).ue(4).ue(2).ue(1).u(1, 0);
        let mut v = s.nal(0x67);
        let mut p = W::default();
        p.ue(0).ue(0);
        v.extend(p.nal(0x68));
        v
    }

    fn slice(frame_num: u32, idr: bool, reference: bool) -> Vec<u8> {
        let mut w = W::default();
        w.ue(0).ue(if idr { 7 } else { 5 }).ue(0).u(8, frame_num);
        let header = if idr { 0x65 } else if reference { 0x41 } else { 0x01 };
        w.nal(header)
    }

    #[test]
    fn a_missing_reference_picture_is_a_gap_a_missing_non_reference_one_is_not() {
        let mut c = FrameNumCheck::new(None);
        let mut first = sps_pps();
        first.extend(slice(0, true, true));
        assert!(!c.gap_before(&first));
        assert!(!c.gap_before(&slice(1, false, true)));
        assert!(!c.gap_before(&slice(2, false, false)), "non-reference: frame_num is prev_ref + 1");
        assert!(!c.gap_before(&slice(2, false, true)), "the next reference picture keeps that frame_num");
        assert!(c.gap_before(&slice(4, false, true)), "frame 3 never came");
        assert!(!c.gap_before(&slice(5, false, true)));
        assert!(!c.gap_before(&slice(0, true, true)), "an IDR starts again");
        // Wrap-around at MaxFrameNum (256).
        let mut c = FrameNumCheck::new(None);
        let mut first = sps_pps();
        first.extend(slice(255, false, true));
        assert!(!c.gap_before(&first));
        assert!(!c.gap_before(&slice(0, false, true)));
    }

    /// Another SPS sent before a P picture (a relay's attack claims another size): the decoder drops
    /// the pictures after it without a damaged one to mark, so the chain counts as broken there
    /// until an IDR. Repeats of the same set, a change at an IDR, and a change to a set no
    /// picture uses break nothing.
    #[test]
    fn the_active_sps_changed_outside_an_idr_breaks_the_chain() {
        let another = |id: u32| {
            let mut s = W::default();
            s.u(8, 66).u(8, 0).u(8, 30).ue(id).ue(4).ue(2).ue(1).u(1, 0).ue(0).ue(0);
            s.nal(0x67)
        };
        let mut c = FrameNumCheck::new(None);
        let mut first = sps_pps();
        first.extend(slice(0, true, true));
        assert!(!c.gap_before(&first));
        let mut again = sps_pps();
        again.extend([0, 0]);
        again.extend(slice(1, false, true));
        assert!(!c.gap_before(&again), "the same sets again, with trailing zero bytes");
        let mut unused = another(1);
        unused.extend(slice(2, false, true));
        assert!(!c.gap_before(&unused), "SPS 1: no picture uses it");
        let mut changed = another(0);
        changed.extend(slice(3, false, true));
        assert!(c.gap_before(&changed), "SPS 0 changed before a P picture");
        assert!(!c.gap_before(&slice(4, false, true)), "reported once");
        let mut at_idr = sps_pps();
        at_idr.extend(slice(0, true, true));
        assert!(!c.gap_before(&at_idr), "a change at an IDR starts a new sequence");
    }

    #[test]
    fn junk_and_unknown_parameter_sets_report_nothing() {
        let mut c = FrameNumCheck::new(None);
        assert!(!c.gap_before(&slice(9, false, true)), "no SPS yet");
        for len in 0..20 {
            let junk = [0u8, 0, 1, 0x67, 0xff, 0xff, 0, 0, 3, 1, 0x41, 0xe0, 0, 0, 1, 0x68, 0xff, 0x41, 0x9a, 0x00];
            let _ = c.gap_before(&junk[..len]);
        }
    }
}
