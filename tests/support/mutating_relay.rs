//! A hostile network path for RTSP: a relay on 127.0.0.1 between one client and a real RTSP
//! server (the kit's GStreamer server) that mutates the RTP and RTCP it forwards to the client,
//! over interleaved TCP (inside the RTSP connection) or UDP (the relay rewrites the SETUP's
//! `client_port` and the reply's `server_port` to its own sockets, and forwards each datagram
//! through the kit's [`LossyRelay`](super::lossy_udp::LossyRelay) with its mutator).
//!
//! The mutation in force can be changed while the stream runs ([`Relay::set`]), so a test can
//! attack a session and then let it run sane: sequence, timestamp and SSRC offsets that an attack
//! introduced stay (a sane stream after them is continuous), and inserted packets shift the
//! sequence numbers after them, so nothing else looks lost.
//!
//! The relay parses the server's RTSP answers (to find the interleaved frames between them and
//! the SDP's parameter sets, which the SPS attacks rewrite), and the client's requests only for
//! UDP SETUPs. Only 127.0.0.1 is used.
#![allow(dead_code)]

use super::lossy_udp::LossyRelay;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the relay does to the stream it forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Forward as it came.
    Sane,
    /// Flip 1..8 random bits in the payload of one packet in 8.
    BitFlips,
    /// Cut one packet in 8 to a random shorter length (its RTP header kept).
    Truncate,
    /// Send one packet in 4 twice.
    Duplicate,
    /// One packet in 6 rewritten to claim NAL lengths past its end: a single NAL becomes a
    /// STAP-A whose length field says 65535, a STAP-A's lengths become 65535, an FU-A fragment
    /// from the middle claims to start a NAL.
    NalLengths,
    /// Before every picture, an SPS that claims 16384x16384 (with the PPS again, in a STAP-A).
    SpsHuge,
    /// Before every picture, an SPS that claims 2x2.
    SpsTiny,
    /// Before every picture, an SPS with a new size.
    SpsChurn,
    /// RTP timestamps jump 3 hours forward (and stay there).
    TsForward,
    /// RTP timestamps jump 3 hours back (and stay there).
    TsBack,
    /// Sequence numbers jump to just before 65535, so they wrap a moment later.
    SeqWrap,
    /// A new SSRC every 30 packets (RTP and RTCP).
    SsrcChange,
    /// RTCP sender reports with absurd NTP times (0, all ones, years ahead, random).
    RtcpNtp,
    /// Not an attack: a session start as a shared GStreamer stream that seeks for another
    /// client's PLAY gives it: RTP-Info's `rtptime` 5 s before the first picture's timestamp
    /// (every timestamp [`STALE_START_TICKS`] later than the server's; 0.3 ms to 5 s seen), and
    /// one packet from the middle of the first IDR lost.
    StaleStartIdrCut,
}

/// How far `StaleStartIdrCut` moves every RTP timestamp (90 kHz): 5 s.
pub const STALE_START_TICKS: u32 = 450_000;

pub const ATTACKS: [Mutation; 12] = [
    Mutation::BitFlips,
    Mutation::Truncate,
    Mutation::Duplicate,
    Mutation::NalLengths,
    Mutation::SpsHuge,
    Mutation::SpsTiny,
    Mutation::SpsChurn,
    Mutation::TsForward,
    Mutation::TsBack,
    Mutation::SeqWrap,
    Mutation::SsrcChange,
    Mutation::RtcpNtp,
];

impl Mutation {
    pub fn name(self) -> &'static str {
        match self {
            Mutation::Sane => "sane",
            Mutation::BitFlips => "rtp-bit-flips",
            Mutation::Truncate => "rtp-truncation",
            Mutation::Duplicate => "rtp-duplication",
            Mutation::NalLengths => "rtp-oversized-nal-lengths",
            Mutation::SpsHuge => "sps-16384x16384",
            Mutation::SpsTiny => "sps-2x2",
            Mutation::SpsChurn => "sps-new-size-every-picture",
            Mutation::TsForward => "timestamps-3h-forward",
            Mutation::TsBack => "timestamps-3h-back",
            Mutation::SeqWrap => "sequence-wrap",
            Mutation::SsrcChange => "ssrc-change",
            Mutation::RtcpNtp => "rtcp-absurd-ntp",
            Mutation::StaleStartIdrCut => "stale-start-idr-cut",
        }
    }
}

/// The mutator's state, shared by every leg of one relay.
pub struct Mutator {
    pub mode: Mutation,
    /// The mode the offsets were last set for (an attack sets them once, when it starts).
    applied: Mutation,
    rng: u64,
    seq_off: u16,
    ts_off: u32,
    ssrc_xor: u32,
    /// The server's SPS and PPS (from the SDP), without start codes.
    sps: Option<Vec<u8>>,
    pps: Option<Vec<u8>>,
    prev_marker: bool,
    packets: u64,
    pictures: u64,
    /// Packets changed, inserted or duplicated so far (a test shows the attack happened).
    pub touched: u64,
    /// `StaleStartIdrCut`: the IDR's packet was dropped.
    idr_cut: bool,
}

impl Mutator {
    fn new(seed: u64) -> Mutator {
        Mutator { mode: Mutation::Sane, applied: Mutation::Sane, rng: seed | 1, seq_off: 0, ts_off: 0, ssrc_xor: 0, sps: None, pps: None, prev_marker: true, packets: 0, pictures: 0, touched: 0, idr_cut: false }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// The packets to send for one RTP packet from the server.
    pub fn rtp(&mut self, pkt: &[u8]) -> Vec<Vec<u8>> {
        if pkt.len() < 12 || pkt[0] >> 6 != 2 {
            return vec![pkt.to_vec()];
        }
        let mode = self.mode;
        if mode != self.applied {
            self.applied = mode;
            let seq = u16::from_be_bytes([pkt[2], pkt[3]]);
            match mode {
                Mutation::TsForward => self.ts_off = self.ts_off.wrapping_add(3 * 3600 * 90_000),
                Mutation::TsBack => self.ts_off = self.ts_off.wrapping_sub(3 * 3600 * 90_000),
                Mutation::SeqWrap => self.seq_off = 65_500u16.wrapping_sub(seq),
                Mutation::StaleStartIdrCut => self.ts_off = self.ts_off.wrapping_add(STALE_START_TICKS),
                _ => {}
            }
        }
        self.packets += 1;
        let first_of_picture = self.prev_marker;
        self.prev_marker = pkt[1] & 0x80 != 0;
        if first_of_picture {
            self.pictures += 1;
        }
        if matches!(mode, Mutation::TsForward | Mutation::TsBack | Mutation::SeqWrap) {
            // Every packet carries the jump.
            self.touched += 1;
        }
        if mode == Mutation::SsrcChange && self.packets.is_multiple_of(30) {
            self.ssrc_xor = self.next() as u32 | 1;
            self.touched += 1;
        }
        let hdr = header_len(pkt);
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut did_insert = false;
        let sps_claim = match mode {
            Mutation::SpsHuge => Some((16384, 16384)),
            Mutation::SpsTiny => Some((2, 2)),
            Mutation::SpsChurn => {
                let n = self.pictures;
                Some((16 * (4 + n % 37) as u32 - 2 * (n % 3) as u32, 16 * (3 + n % 23) as u32))
            }
            _ => None,
        };
        if let (true, Some((w, h)), Some(sps), Some(pps)) = (first_of_picture, sps_claim, self.sps.as_ref(), self.pps.as_ref()) {
            if let Some(new) = sps_with_size(sps, w, h) {
                // A STAP-A with the SPS and the PPS again: a decoder binds a PPS to the SPS it
                // was parsed with, so a new SPS alone would change nothing.
                let mut p = pkt[..12].to_vec();
                p[0] &= 0xf0; // no CSRC, no extension, no padding
                p[1] &= 0x7f; // no marker
                p.push((new[0] & 0x60) | 24);
                for n in [&new, pps] {
                    p.extend_from_slice(&(n.len() as u16).to_be_bytes());
                    p.extend_from_slice(n);
                }
                out.push(p);
                did_insert = true;
                self.touched += 1;
            }
        }
        let mut drop_this = false;
        if mode == Mutation::StaleStartIdrCut {
            // A middle fragment (FU-A, neither start nor end) of the first IDR: lost.
            if !self.idr_cut && pkt.len() > hdr + 1 && pkt[hdr] & 0x1f == 28 && pkt[hdr + 1] & 0x1f == 5 && pkt[hdr + 1] & 0xc0 == 0 {
                self.idr_cut = true;
                self.touched += 1;
                drop_this = true;
            }
        }
        let mut p = pkt.to_vec();
        if hdr < p.len() {
            match mode {
                Mutation::BitFlips if self.below(8) == 0 => {
                    for _ in 0..1 + self.below(8) {
                        let i = hdr + self.below((p.len() - hdr) as u64) as usize;
                        p[i] ^= 1 << self.below(8);
                    }
                    self.touched += 1;
                }
                Mutation::Truncate if self.below(8) == 0 => {
                    let keep = hdr + self.below((p.len() - hdr) as u64) as usize;
                    p.truncate(keep);
                    self.touched += 1;
                }
                Mutation::NalLengths if self.below(6) == 0 => {
                    let nal_type = p[hdr] & 0x1f;
                    match nal_type {
                        1..=23 => {
                            // A single NAL unit becomes a STAP-A claiming 65535 bytes.
                            let mut q = p[..hdr].to_vec();
                            q.push((p[hdr] & 0xe0) | 24);
                            q.extend_from_slice(&[0xff, 0xff]);
                            q.extend_from_slice(&p[hdr..]);
                            p = q;
                        }
                        24 => {
                            let mut i = hdr + 1;
                            while i + 2 <= p.len() {
                                let len = u16::from_be_bytes([p[i], p[i + 1]]) as usize;
                                p[i] = 0xff;
                                p[i + 1] = 0xff;
                                i += 2 + len;
                            }
                        }
                        28 if p.len() > hdr + 1 => p[hdr + 1] |= 0x80,
                        _ => {}
                    }
                    self.touched += 1;
                }
                _ => {}
            }
        }
        out.push(p);
        if mode == Mutation::Duplicate && self.below(4) == 0 {
            let again = out.last().unwrap().clone();
            out.push(again);
            self.touched += 1;
        }
        if drop_this {
            // Its number is skipped: a gap, as a loss on the way leaves.
            out.pop();
        }
        // Sequence numbers: the attack's offset, and one more for every packet inserted before
        // this one (a duplicate keeps its original's number).
        let inserted = usize::from(did_insert);
        for (k, q) in out.iter_mut().enumerate() {
            let extra = if k >= inserted { inserted as u16 } else { 0 };
            let seq = u16::from_be_bytes([q[2], q[3]]).wrapping_add(self.seq_off).wrapping_add(extra);
            q[2..4].copy_from_slice(&seq.to_be_bytes());
            let ts = u32::from_be_bytes([q[4], q[5], q[6], q[7]]).wrapping_add(self.ts_off);
            q[4..8].copy_from_slice(&ts.to_be_bytes());
            let ssrc = u32::from_be_bytes([q[8], q[9], q[10], q[11]]) ^ self.ssrc_xor;
            q[8..12].copy_from_slice(&ssrc.to_be_bytes());
        }
        self.seq_off = self.seq_off.wrapping_add(inserted as u16);
        out
    }

    /// One RTCP compound packet from the server, as sent on.
    pub fn rtcp(&mut self, pkt: &[u8]) -> Vec<u8> {
        let mut p = pkt.to_vec();
        let mut i = 0;
        while i + 8 <= p.len() {
            let pt = p[i + 1];
            let len = (u16::from_be_bytes([p[i + 2], p[i + 3]]) as usize + 1) * 4;
            if self.ssrc_xor != 0 {
                let s = u32::from_be_bytes([p[i + 4], p[i + 5], p[i + 6], p[i + 7]]) ^ self.ssrc_xor;
                p[i + 4..i + 8].copy_from_slice(&s.to_be_bytes());
            }
            if pt == 200 && i + 20 <= p.len() {
                // RTP time in sender reports follows the stream's.
                let ts = u32::from_be_bytes([p[i + 16], p[i + 17], p[i + 18], p[i + 19]]).wrapping_add(self.ts_off);
                p[i + 16..i + 20].copy_from_slice(&ts.to_be_bytes());
                if self.mode == Mutation::RtcpNtp {
                    let ntp: u64 = match self.below(4) {
                        0 => 0,
                        1 => u64::MAX,
                        // 100 years ahead of now's NTP seconds, roughly.
                        2 => (3_900_000_000u64.wrapping_add(3_155_760_000)) << 32,
                        _ => self.next(),
                    };
                    p[i + 8..i + 16].copy_from_slice(&ntp.to_be_bytes());
                    self.touched += 1;
                }
            }
            if len == 0 {
                break;
            }
            i += len;
        }
        p
    }
}

/// The RTP header's length (CSRCs and extension included), capped at the packet.
fn header_len(p: &[u8]) -> usize {
    let mut n = 12 + 4 * (p[0] & 0x0f) as usize;
    if p[0] & 0x10 != 0 && p.len() >= n + 4 {
        n += 4 + 4 * u16::from_be_bytes([p[n + 2], p[n + 3]]) as usize;
    }
    n.min(p.len())
}

/// An H.264 SPS NAL (header byte included, emulation prevention in place) rewritten to claim
/// `w`x`h` (whole macroblocks plus cropping, frame pictures); None if it uses what this does not
/// parse (scaling matrices).
pub fn sps_with_size(nal: &[u8], w: u32, h: u32) -> Option<Vec<u8>> {
    let rbsp = unescape(&nal[1..]);
    let mut r = Bits { d: &rbsp, pos: 0 };
    let mut o = Writer::default();
    let profile = r.u(8)?;
    o.u(profile, 8);
    let c = r.u(16)?;
    o.u(c, 16);
    let id = r.ue()?;
    o.ue(id);
    if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(&profile) {
        let chroma = r.ue()?;
        o.ue(chroma);
        if chroma == 3 {
            let s = r.u(1)?;
            o.u(s, 1);
        }
        for _ in 0..2 {
            let d = r.ue()?;
            o.ue(d);
        }
        let q = r.u(1)?;
        o.u(q, 1);
        if r.u(1)? != 0 {
            return None;
        }
        o.u(0, 1);
    }
    let fnum = r.ue()?;
    o.ue(fnum);
    let poc = r.ue()?;
    o.ue(poc);
    if poc == 0 {
        let v = r.ue()?;
        o.ue(v);
    } else if poc == 1 {
        let f = r.u(1)?;
        o.u(f, 1);
        let a = r.ue()?;
        o.ue(a);
        let b = r.ue()?;
        o.ue(b);
        let n = r.ue()?;
        o.ue(n);
        for _ in 0..n.min(255) {
            let v = r.ue()?;
            o.ue(v);
        }
    }
    let refs = r.ue()?;
    o.ue(refs);
    let gaps = r.u(1)?;
    o.u(gaps, 1);
    let (_old_w, _old_h) = (r.ue()?, r.ue()?);
    let mbs_only = r.u(1)?;
    if mbs_only == 0 {
        r.u(1)?;
    }
    let d8 = r.u(1)?;
    if r.u(1)? != 0 {
        for _ in 0..4 {
            r.ue()?;
        }
    }
    let (mw, mh) = (w.div_ceil(16), h.div_ceil(16));
    o.ue(mw - 1);
    o.ue(mh - 1);
    o.u(1, 1); // frame_mbs_only
    o.u(d8, 1);
    let (cr, cb) = ((mw * 16 - w) / 2, (mh * 16 - h) / 2);
    if cr != 0 || cb != 0 {
        o.u(1, 1);
        o.ue(0);
        o.ue(cr);
        o.ue(0);
        o.ue(cb);
    } else {
        o.u(0, 1);
    }
    // The rest (VUI) as it was, up to the stop bit.
    let stop = rbsp.len() * 8 - rbsp.iter().rev().position(|&b| b != 0)? * 8 - 1 - rbsp.iter().rev().find(|&&b| b != 0)?.trailing_zeros() as usize;
    while r.pos < stop {
        let b = r.u(1)?;
        o.u(b, 1);
    }
    o.u(1, 1);
    while o.n % 8 != 0 {
        o.u(0, 1);
    }
    let mut out = vec![nal[0]];
    out.extend(escape(&o.bytes));
    Some(out)
}

fn unescape(d: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(d.len());
    let mut zeros = 0;
    for &b in d {
        if zeros >= 2 && b == 3 {
            zeros = 0;
            continue;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        o.push(b);
    }
    o
}

fn escape(d: &[u8]) -> Vec<u8> {
    let mut o = Vec::with_capacity(d.len() + 4);
    let mut zeros = 0;
    for &b in d {
        if zeros >= 2 && b <= 3 {
            o.push(3);
            zeros = 0;
        }
        zeros = if b == 0 { zeros + 1 } else { 0 };
        o.push(b);
    }
    o
}

struct Bits<'a> {
    d: &'a [u8],
    pos: usize,
}

impl Bits<'_> {
    fn u(&mut self, n: u32) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            let byte = *self.d.get(self.pos / 8)?;
            v = (v << 1) | ((byte >> (7 - self.pos % 8)) & 1) as u32;
            self.pos += 1;
        }
        Some(v)
    }
    fn ue(&mut self) -> Option<u32> {
        let mut zeros = 0;
        while self.u(1)? == 0 {
            zeros += 1;
            if zeros > 31 {
                return None;
            }
        }
        Some(((1u64 << zeros) - 1 + self.u(zeros)? as u64) as u32)
    }
}

#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
    n: usize,
}

impl Writer {
    fn u(&mut self, v: u32, n: u32) {
        for i in (0..n).rev() {
            if self.n.is_multiple_of(8) {
                self.bytes.push(0);
            }
            let bit = ((v >> i) & 1) as u8;
            *self.bytes.last_mut().unwrap() |= bit << (7 - self.n % 8);
            self.n += 1;
        }
    }
    fn ue(&mut self, v: u32) {
        let x = v as u64 + 1;
        let bits = 64 - x.leading_zeros();
        self.u(0, bits - 1);
        for i in (0..bits).rev() {
            self.u(((x >> i) & 1) as u32, 1);
        }
    }
}

fn b64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// The relay: one listening port; each client connection gets its own upstream connection.
pub struct Relay {
    pub port: u16,
    pub mutator: Arc<Mutex<Mutator>>,
    stop: Arc<AtomicBool>,
    /// Client connections accepted so far.
    pub conns: Arc<AtomicU64>,
    accept: Option<JoinHandle<()>>,
}

impl Relay {
    /// Relays 127.0.0.1:`port` to the RTSP server at 127.0.0.1:`upstream`, sane until [`set`].
    pub fn start(upstream: u16, seed: u64) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mutator = Arc::new(Mutex::new(Mutator::new(seed)));
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(AtomicU64::new(0));
        let (m, s, c) = (mutator.clone(), stop.clone(), conns.clone());
        let accept = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((client, _)) => {
                        c.fetch_add(1, Ordering::Relaxed);
                        let (m, s) = (m.clone(), s.clone());
                        std::thread::spawn(move || {
                            let _ = session(client, upstream, m, s);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Relay { port, mutator, stop, conns, accept: Some(accept) }
    }

    pub fn url(&self) -> String {
        format!("rtsp://127.0.0.1:{}/cam", self.port)
    }

    /// The mutation from now on.
    pub fn set(&self, m: Mutation) {
        self.mutator.lock().unwrap().mode = m;
    }

    /// Packets the attacks changed, inserted or duplicated so far.
    pub fn touched(&self) -> u64 {
        self.mutator.lock().unwrap().touched
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// One RTSP message's head (up to and with the blank line) and its body, if `buf` holds all of it.
fn message(buf: &[u8]) -> Option<(usize, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buf[..end]);
    let len = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim().eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.trim().parse::<usize>().ok()))
        .unwrap_or(0);
    (buf.len() >= end + len).then_some((end, len))
}

/// Two UDP sockets on consecutive ports, the first even (an RTP/RTCP pair).
fn udp_pair() -> (UdpSocket, UdpSocket) {
    loop {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        if !p.is_multiple_of(2) || p == 65535 {
            continue;
        }
        if let Ok(b) = UdpSocket::bind(("127.0.0.1", p + 1)) {
            return (a, b);
        }
    }
}

fn transport_ports(head: &str, key: &str) -> Option<(u16, u16)> {
    let at = head.find(key)? + key.len();
    let v: String = head[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    let (a, b) = v.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn replace_ports(head: &str, key: &str, (a, b): (u16, u16)) -> String {
    let Some(old) = transport_ports(head, key) else { return head.to_string() };
    head.replacen(&format!("{key}{}-{}", old.0, old.1), &format!("{key}{a}-{b}"), 1)
}

/// The length of the interleaved frame (`$`, channel, 16-bit length, data) at the start of `buf`,
/// once all of it has arrived.
fn interleaved_len(buf: &[u8]) -> Option<usize> {
    let n = 4 + u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize;
    (buf.len() >= n).then_some(n)
}

/// A UDP SETUP waiting for its answer: the client's RTP/RTCP ports, and the relay's pair that
/// went up in their place.
type PendingSetup = ((u16, u16), (UdpSocket, UdpSocket));

/// One client connection: requests go up (UDP SETUPs rewritten), answers and interleaved frames
/// come down mutated; UDP legs run through [`LossyRelay`]s with the same mutator.
fn session(mut client: TcpStream, upstream: u16, m: Arc<Mutex<Mutator>>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    for s in [&client, &server] {
        s.set_read_timeout(Some(Duration::from_millis(100)))?;
        s.set_nodelay(true)?;
    }
    // UDP SETUPs waiting for their answer: the client's ports, and the relay's pair offered up.
    let pending: Arc<Mutex<Vec<PendingSetup>>> = Arc::default();
    let legs: Arc<Mutex<Vec<LossyRelay>>> = Arc::default();
    let (mut c_in, mut s_out) = (client.try_clone()?, server.try_clone()?);
    let (p_up, st_up) = (pending.clone(), stop.clone());
    let up = std::thread::spawn(move || {
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 65536];
        while !st_up.load(Ordering::Relaxed) {
            match c_in.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
                Err(_) => break,
            }
            loop {
                if buf.first() == Some(&b'$') {
                    let Some(n) = interleaved_len(&buf) else { break };
                    let _ = s_out.write_all(&buf[..n]);
                    buf.drain(..n);
                    continue;
                }
                let Some((head, body)) = message(&buf) else { break };
                let mut text = String::from_utf8_lossy(&buf[..head]).into_owned();
                if text.starts_with("SETUP") && text.contains("client_port=") {
                    if let Some(ports) = transport_ports(&text, "client_port=") {
                        let pair = udp_pair();
                        let mine = (pair.0.local_addr().unwrap().port(), pair.1.local_addr().unwrap().port());
                        text = replace_ports(&text, "client_port=", mine);
                        p_up.lock().unwrap().push((ports, pair));
                    }
                }
                let _ = s_out.write_all(text.as_bytes());
                let _ = s_out.write_all(&buf[head..head + body]);
                buf.drain(..head + body);
            }
        }
        let _ = s_out.shutdown(Shutdown::Both);
    });
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 65536];
    'outer: while !stop.load(Ordering::Relaxed) {
        match server.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(_) => break,
        }
        loop {
            if buf.first() == Some(&b'$') {
                let Some(n) = interleaved_len(&buf) else { break };
                let ch = buf[1];
                let sent = if ch.is_multiple_of(2) { m.lock().unwrap().rtp(&buf[4..n]) } else { vec![m.lock().unwrap().rtcp(&buf[4..n])] };
                for p in sent {
                    let mut f = vec![b'$', ch];
                    f.extend_from_slice(&(p.len() as u16).to_be_bytes());
                    f.extend_from_slice(&p);
                    if client.write_all(&f).is_err() {
                        break 'outer;
                    }
                }
                buf.drain(..n);
                continue;
            }
            let Some((head, body)) = message(&buf) else { break };
            let mut text = String::from_utf8_lossy(&buf[..head]).into_owned();
            let body_bytes = buf[head..head + body].to_vec();
            let sdp = String::from_utf8_lossy(&body_bytes);
            if let Some(at) = sdp.find("sprop-parameter-sets=") {
                let v: String = sdp[at + 21..].chars().take_while(|c| !matches!(c, ';' | '\r' | '\n')).collect();
                let mut m = m.lock().unwrap();
                for set in v.split(',').map(b64_decode) {
                    match set.first().map(|b| b & 0x1f) {
                        Some(7) => m.sps = Some(set),
                        Some(8) => m.pps = Some(set),
                        _ => {}
                    }
                }
            }
            if text.contains("server_port=") {
                if let Some(server_ports) = transport_ports(&text, "server_port=") {
                    let taken = { pending.lock().unwrap().pop() };
                    if let Some((client_ports, (rtp, rtcp))) = taken {
                        // The server sends to the pair the relay offered; each leg forwards to
                        // the client's own port, and the client's packets back to the server's.
                        let mut front = Vec::new();
                        for (sock, cport, sport, is_rtp) in [(rtp, client_ports.0, server_ports.0, true), (rtcp, client_ports.1, server_ports.1, false)] {
                            let mm = m.clone();
                            let leg = LossyRelay::start_mutating(sock, cport, sport, Box::new(move |p: &[u8]| if is_rtp { mm.lock().unwrap().rtp(p) } else { vec![mm.lock().unwrap().rtcp(p)] }));
                            front.push(leg.port);
                            legs.lock().unwrap().push(leg);
                        }
                        text = replace_ports(&text, "server_port=", (front[0], front[1]));
                    }
                }
            }
            if client.write_all(text.as_bytes()).and_then(|_| client.write_all(&body_bytes)).is_err() {
                break 'outer;
            }
            buf.drain(..head + body);
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = up.join();
    drop(legs);
    Ok(())
}
