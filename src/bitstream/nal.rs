//! NAL units and their bits, as H.264 and HEVC carry them (Annex B start codes in RTP and
//! MPEG-TS, length prefixes in MP4): what [`super::recovery`] and [`super::frame_num`] read.

pub(crate) use crate::ffmpeg::annexb::extradata;
use ffmpeg_next as ff;

/// Bytes of each NAL unit's length prefix in a stream's packets (from its avcC or hvcC record);
/// `None` for Annex B start codes.
pub(crate) fn length_size(params: &ff::codec::Parameters, hevc: bool) -> Option<usize> {
    let extra = extradata(params);
    match (hevc, extra.first()) {
        (false, Some(1)) if extra.len() > 4 => Some((extra[4] & 3) as usize + 1),
        (true, Some(1)) if extra.len() > 21 => Some((extra[21] & 3) as usize + 1),
        _ => None,
    }
}

/// NAL units of a packet, Annex B or length-prefixed.
///
/// Readers here stop at a picture's first slice and read only its header, so a slice is handed
/// out as the rest of the packet: its end (the next start code, past all its slice data) is never
/// searched for, and a packet costs its parameter sets and SEIs, not its size.
pub(crate) struct Nals<'a> {
    data: &'a [u8],
    nal_len: Option<usize>,
    /// Whether a NAL unit header byte starts a slice (the codec's VCL types).
    slice: fn(u8) -> bool,
}

/// H.264's slice NAL unit types (1 to 5).
pub(crate) fn h264_slice(b: u8) -> bool {
    matches!(b & 0x1f, 1..=5)
}

/// HEVC's slice (VCL) NAL unit types (0 to 31).
pub(crate) fn hevc_slice(b: u8) -> bool {
    (b >> 1) & 0x3f < 32
}

impl<'a> Nals<'a> {
    /// `slice` tells slices apart ([`h264_slice`], [`hevc_slice`]).
    pub(crate) fn new(data: &'a [u8], nal_len: Option<usize>, slice: fn(u8) -> bool) -> Nals<'a> {
        Nals { data, nal_len, slice }
    }
}

/// Index of the next `00 00 01` at or after `from`.
fn start_code(d: &[u8], from: usize) -> Option<usize> {
    (from..d.len().saturating_sub(2)).find(|&i| d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1)
}

impl<'a> Iterator for Nals<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        match self.nal_len {
            Some(n) => {
                if self.data.len() < n {
                    return None;
                }
                let len = self.data[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
                let rest = &self.data[n..];
                let len = len.min(rest.len());
                self.data = &rest[len..];
                Some(&rest[..len])
            }
            None => {
                let s = start_code(self.data, 0)? + 3;
                if self.data.get(s).is_some_and(|&b| (self.slice)(b)) {
                    let nal = &self.data[s..];
                    self.data = &[];
                    return Some(nal);
                }
                let end = start_code(self.data, s).unwrap_or(self.data.len());
                let nal = &self.data[s..end];
                self.data = &self.data[end..];
                // A 4-byte start code leaves its leading zero on the previous unit: harmless here.
                Some(nal)
            }
        }
    }
}

/// Reads the bits of an RBSP (emulation prevention bytes removed as it goes).
pub(crate) struct Bits<'a> {
    d: &'a [u8],
    byte: usize,
    bit: u32,
    zeros: u32,
}

impl<'a> Bits<'a> {
    pub(crate) fn new(d: &'a [u8]) -> Bits<'a> {
        Bits { d, byte: 0, bit: 0, zeros: 0 }
    }
    /// `n` bits (at most 32), most significant first.
    pub(crate) fn bits(&mut self, n: u32) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n.min(32) {
            v = (v << 1) | self.bit()?;
        }
        Some(v)
    }
    /// A signed Exp-Golomb code.
    pub(crate) fn se(&mut self) -> Option<i32> {
        let k = self.ue()? as i64;
        Some(if k % 2 == 1 { ((k + 1) / 2) as i32 } else { -(k / 2) as i32 })
    }
    pub(crate) fn byte_at(&mut self) -> Option<u8> {
        loop {
            let b = *self.d.get(self.byte)?;
            if self.bit == 0 && self.zeros >= 2 && b == 3 {
                self.byte += 1;
                self.zeros = 0;
                continue;
            }
            return Some(b);
        }
    }
    pub(crate) fn bit(&mut self) -> Option<u32> {
        let b = self.byte_at()?;
        let v = (b >> (7 - self.bit)) & 1;
        self.bit += 1;
        if self.bit == 8 {
            self.bit = 0;
            self.byte += 1;
            self.zeros = if b == 0 { self.zeros + 1 } else { 0 };
        }
        Some(v as u32)
    }
    pub(crate) fn byte(&mut self) -> Option<u8> {
        let mut v = 0u8;
        for _ in 0..8 {
            v = (v << 1) | self.bit()? as u8;
        }
        Some(v)
    }
    pub(crate) fn ue(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.bit()? == 0 {
            zeros += 1;
            if zeros > 31 {
                return None;
            }
        }
        let mut v = 0u64;
        for _ in 0..zeros {
            v = (v << 1) | self.bit()? as u64;
        }
        u32::try_from((1u64 << zeros) - 1 + v).ok()
    }
}

