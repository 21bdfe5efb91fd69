//! Fixed-seed, time-bounded, structure-aware fuzzers of nvcam's own parsers of camera and host
//! bytes: NAL units, slice headers, recovery points and `frame_num` (H.264, HEVC, Annex B and
//! length-prefixed), the JPEG marker check, the RTP gap reports and the integrity marks they feed,
//! the recorder's in-band parameter sets, camera URLs and FFmpeg option strings.
//!
//! A camera is untrusted input: a broken firmware or an attacker on the path feeds every byte
//! these parsers read, on a production line whose host must never crash. Each fuzzer starts from
//! real clips' packets (encoded by the ffmpeg CLI, demuxed by FFmpeg), mutates them the way a
//! hostile stream would (bit flips, cuts, duplicates, spliced and oversized NAL units, runs of
//! 0x00 and 0xFF where Exp-Golomb codes and SEI sizes are read, start codes inside units, packets
//! dropped, repeated and reordered, timestamps jumping hours either way, RTP sequence numbers that
//! wrap, jump, repeat and restart with a new SSRC) and drives the parsers as a camera session
//! does, state kept from packet to packet.
//!
//! A panic fails the test, and so does an input that takes longer than [`SLOW`] (a hang; a
//! watchdog aborts the run, naming the input, if one never returns). Every input comes from its
//! own generator state, printed on a failure: `NVCAM_FUZZ_REPLAY=<state>` runs that one input
//! again. Arithmetic overflow panics only where overflow checks are on: `cargo test --features
//! test-hooks --test fuzz_parsers` (the dev profile) runs the same fuzzers with them.
//!
//! Knobs (environment): `NVCAM_FUZZ_SEED` (default below), `NVCAM_FUZZ_PARSER_SECONDS` (per
//! fuzzer, default 8; six fuzzers, two at a time on a 2-core machine).

mod common;
use common::*;
use nvcam::fuzz_entry::{self as fz, Codec, GapReport, Stream};
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEFAULT_SEED: u64 = 0x6e76_6361_6d5f_7073; // "nvcam_ps"
/// The seed clips' picture size, as their demuxer reports it.
const SIZE: (i32, i32) = (96, 64);
/// Longer than any input may take on a busy 2-core machine (the slowest, megabytes of option
/// string, take a quarter of a second optimized; ten times that in the dev profile).
const SLOW: Duration = Duration::from_secs(if cfg!(debug_assertions) { 30 } else { 3 });
/// An input still running after this long never returns: the watchdog ends the process.
const HUNG: Duration = Duration::from_secs(60);

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| {
            let v = v.trim();
            v.strip_prefix("0x").map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
        })
        .unwrap_or(default)
}

/// Runs `case` on one input per generator state until the time is up (or only the state of
/// `NVCAM_FUZZ_REPLAY`); returns the number of inputs. A panic or a slow input fails with the
/// state that makes it again.
fn campaign(name: &str, mut case: impl FnMut(&mut Rng)) -> u64 {
    let budget = Duration::from_secs(env_u64("NVCAM_FUZZ_PARSER_SECONDS", 8));
    let replay = std::env::var("NVCAM_FUZZ_REPLAY").ok().map(|_| env_u64("NVCAM_FUZZ_REPLAY", 0));
    let mut master = Rng(env_u64("NVCAM_FUZZ_SEED", DEFAULT_SEED) ^ fnv(name.as_bytes()));
    // The watchdog: the state of the input running and since when (ms since `t0`, 0 when none).
    let t0 = Instant::now();
    let (running_since, running_state, done) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let dog = {
        let (since, state, done, name) = (running_since.clone(), running_state.clone(), done.clone(), name.to_string());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(200));
                let s = since.load(Ordering::Acquire);
                if s != 0 && t0.elapsed().as_millis() as u64 > s + HUNG.as_millis() as u64 {
                    eprintln!("{name}: an input has run for {} s (a hang): NVCAM_FUZZ_REPLAY=0x{:x}", HUNG.as_secs(), state.load(Ordering::Acquire));
                    std::process::abort();
                }
            }
        })
    };
    let mut n = 0u64;
    loop {
        let state = match replay {
            Some(_) if n > 0 => break,
            Some(s) => s,
            None if t0.elapsed() >= budget => break,
            None => master.next(),
        };
        running_state.store(state, Ordering::Release);
        running_since.store(t0.elapsed().as_millis() as u64 + 1, Ordering::Release);
        let start = Instant::now();
        let r = std::panic::catch_unwind(AssertUnwindSafe(|| case(&mut Rng(state))));
        running_since.store(0, Ordering::Release);
        let took = start.elapsed();
        n += 1;
        if r.is_err() {
            done.store(true, Ordering::Release);
            panic!("{name}: input {n} panicked: NVCAM_FUZZ_REPLAY=0x{state:x}");
        }
        assert!(took < SLOW, "{name}: input {n} took {took:?} (a near-hang): NVCAM_FUZZ_REPLAY=0x{state:x}");
    }
    done.store(true, Ordering::Release);
    dog.join().unwrap();
    eprintln!("{name}: {n} inputs");
    n
}

/// FFmpeg's parsers and option evaluator log every damaged header they meet, and a hostile input
/// is all damage: the test process keeps them quiet. The library is initialized first, as a host
/// does (on Windows its loader finds the FFmpeg DLLs these tests call too).
fn quiet_ffmpeg() {
    init();
    let _ = ffmpeg_next::init();
    ffmpeg_next::util::log::set_level(ffmpeg_next::util::log::Level::Quiet);
}

/// One packet as the demuxer hands it over.
#[derive(Clone, Debug)]
struct Pkt {
    data: Vec<u8>,
    key: bool,
    pts: Option<i64>,
}

/// A real clip's stream: codec, extradata, time base and packets.
struct Seed {
    codec: Codec,
    extradata: Vec<u8>,
    tb_den: i32,
    packets: Vec<Pkt>,
}

fn demux(path: &Path, codec: Codec) -> Seed {
    let mut input = ffmpeg_next::format::input(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let stream = input.streams().best(ffmpeg_next::media::Type::Video).expect("a video stream");
    let (index, tb) = (stream.index(), stream.time_base());
    // SAFETY (test): the stream's parameters live as long as `input`; extradata_size bytes.
    let extradata = unsafe {
        let p = &*stream.parameters().as_ptr();
        if p.extradata.is_null() || p.extradata_size <= 0 { Vec::new() } else { std::slice::from_raw_parts(p.extradata, p.extradata_size as usize).to_vec() }
    };
    let packets: Vec<Pkt> = input
        .packets()
        .filter(|(s, _)| s.index() == index)
        .map(|(_, p)| Pkt { data: p.data().unwrap_or(&[]).to_vec(), key: p.is_key(), pts: p.pts() })
        .collect();
    assert!(packets.len() >= 10, "{}: only {} packets", path.display(), packets.len());
    assert_eq!(tb.numerator(), 1, "{}: time base {tb}", path.display());
    Seed { codec, extradata, tb_den: tb.denominator(), packets }
}

/// The clips the stream fuzzers start from: each codec's bitstream as cameras and files carry it.
fn seeds(codec: Codec) -> Vec<Seed> {
    let x264 = ["-g", "8", "-bf", "2", "-preset", "ultrafast"];
    match codec {
        Codec::H264 => vec![
            // Annex B (MPEG-TS, as RTP carries it) and avcC (MP4), B-frames, frame_num tracked.
            demux(&clip("fz_h264.ts", "96x64", 24, "libx264", &x264), codec),
            demux(&clip("fz_h264.mp4", "96x64", 24, "libx264", &x264), codec),
            // Intra refresh: recovery-point SEIs, no IDR after the first.
            demux(&clip("fz_h264_refresh.ts", "96x64", 24, "libx264", &["-x264-params", "intra-refresh=1:keyint=8", "-bf", "0"]), codec),
        ],
        Codec::Hevc => {
            let mut x = x265();
            x.extend(["-g", "8"]);
            vec![demux(&clip("fz_hevc.ts", "96x64", 20, "libx265", &x), codec), demux(&clip("fz_hevc.mp4", "96x64", 20, "libx265", &x), codec)]
        }
        Codec::Jpeg => vec![
            demux(&clip("fz_mjpeg420.mkv", "96x64", 12, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "5"]), codec),
            demux(&clip("fz_mjpeg422.mkv", "96x64", 12, "mjpeg", &["-pix_fmt", "yuvj422p", "-q:v", "5"]), codec),
        ],
        Codec::Other => unreachable!(),
    }
}

/// Values that parsers meet at their edges.
const EDGE_BYTES: [u8; 10] = [0x00, 0x01, 0x03, 0x7f, 0x80, 0xfe, 0xff, 0x65, 0x67, 0x06];

/// A hostile change to one packet's bytes; `other` is another packet to splice from.
fn mutate(r: &mut Rng, d: &mut Vec<u8>, other: &[u8], codec: Codec) {
    let at = |r: &mut Rng, len: usize| r.below(len as u64 + 1) as usize;
    match r.below(14) {
        0 if !d.is_empty() => {
            let i = r.below(d.len() as u64) as usize;
            d[i] ^= 1 << r.below(8);
        }
        1 if !d.is_empty() => {
            let i = r.below(d.len() as u64) as usize;
            d[i] = *r.pick(&EDGE_BYTES);
        }
        2 => d.truncate(at(r, d.len())),
        3 if !d.is_empty() => {
            // A range repeated (a duplicated RTP payload).
            let a = at(r, d.len() - 1);
            let b = (a + 1 + r.below(64) as usize).min(d.len());
            let piece = d[a..b].to_vec();
            let i = at(r, d.len());
            d.splice(i..i, piece);
        }
        4 if !d.is_empty() => {
            let a = at(r, d.len() - 1);
            let b = (a + 1 + r.below(64) as usize).min(d.len());
            d.drain(a..b);
        }
        5 => {
            // A start code, and a NAL header after it, anywhere (an Annex B unit inside another).
            let i = at(r, d.len());
            let h = match codec {
                Codec::Hevc => vec![(r.below(64) as u8) << 1, 1],
                _ => vec![r.below(256) as u8],
            };
            d.splice(i..i, [0, 0, 1].into_iter().chain(h));
        }
        6 => {
            // A run of 0xFF (SEI types and sizes, JPEG fill and stuffing) or of zeros (Exp-Golomb
            // codes of 32 and more bits, start codes).
            let i = at(r, d.len());
            let v = if r.chance(2) { 0xff } else { 0x00 };
            // Rarely the 16 MB that carry an SEI's summed type past a u32.
            let n = if r.chance(5000) { 16_843_010 } else { *r.pick(&[2, 3, 5, 6, 7, 33, 300, 5000]) };
            d.splice(i..i, std::iter::repeat_n(v, n));
        }
        7 if !other.is_empty() => {
            // A splice of another packet (a unit of one picture in another).
            let a = at(r, other.len() - 1);
            let b = (a + 1 + r.below(512) as usize).min(other.len());
            let i = at(r, d.len());
            d.splice(i..i, other[a..b].iter().copied());
        }
        8 if d.len() >= 4 => {
            // A length prefix (or any 4 bytes) that claims more than the packet holds.
            let i = r.below(d.len() as u64 - 3) as usize;
            let v: [u8; 4] = *r.pick(&[[0xff; 4], [0x7f, 0xff, 0xff, 0xff], [0, 0, 0, 0], [0, 0xff, 0xff, 0xff], [0, 0, 0, 1]]);
            d[i..i + 4].copy_from_slice(&v);
        }
        9 if d.len() > 8 => {
            // Emulation prevention bytes removed (or added) where the reader strips them.
            let i = r.below(d.len() as u64 - 3) as usize;
            if d[i..i + 3] == [0, 0, 3] {
                d.remove(i + 2);
            } else {
                d.splice(i..i, [0, 0, 3]);
            }
        }
        10 => {
            // A JPEG marker segment with an absurd length or size, or a marker out of place.
            let i = at(r, d.len());
            let m = *r.pick(&[0xC0u8, 0xC2, 0xC4, 0xD0, 0xD7, 0xD8, 0xD9, 0xDA, 0xDD, 0xFE, 0x01, 0x00]);
            let seg: Vec<u8> = match r.below(3) {
                0 => vec![0xff, m],
                1 => vec![0xff, m, 0xff, 0xff],
                _ => vec![0xff, m, 0, 11, 8, 0xff, 0xff, 0xff, 0xff, 3, 1, 0x22, 0, 2, 0x11, 1],
            };
            d.splice(i..i, seg);
        }
        11 if !d.is_empty() => {
            // Random bytes over a range.
            let a = at(r, d.len() - 1);
            let b = (a + 1 + r.below(16) as usize).min(d.len());
            for x in &mut d[a..b] {
                *x = r.next() as u8;
            }
        }
        12 => {
            // A parameter set or SEI whose fields are all edges (a claimed 16384x16384 picture,
            // huge ids and counts).
            let i = at(r, d.len());
            let unit: Vec<u8> = match codec {
                Codec::Hevc => vec![0, 0, 1, 0x42, 0x01, 0x01, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xa0, 0x00, 0x00, 0x00, 0x0f, 0xff, 0xff],
                _ => vec![0, 0, 1, *r.pick(&[0x67u8, 0x68, 0x06, 0x65, 0x41, 0x01, 0x6d, 0x6f]), *r.pick(&[100u8, 66, 244, 0xff]), 0, 0x1f, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0x80],
            };
            d.splice(i..i, unit);
        }
        _ => {
            // A whole replacement: empty, one byte, or noise.
            let n = *r.pick(&[0usize, 1, 2, 3, 4, 7, 64]);
            *d = (0..n).map(|_| r.next() as u8).collect();
        }
    }
}

/// What a stream fuzzer does next.
#[derive(Debug)]
enum Op {
    Packet(Pkt),
    Gap(GapReport),
    Picture(Option<i64>, bool),
}

/// An RTP sender's headers, to report gaps the way the patched demuxer does: sequence numbers
/// that run, jump, wrap, repeat and restart (a new SSRC), timestamps that jump hours either way.
struct Sender {
    seq: u16,
    ts: u32,
    marker: bool,
    pts: Option<i64>,
}

impl Sender {
    /// The next packet's header; a gap report when its sequence number skips ahead.
    fn next(&mut self, r: &mut Rng, pkt: &Pkt, stream: i32) -> Option<GapReport> {
        let step: i32 = match r.below(20) {
            0 => 0,                             // a duplicate
            1 => -(r.below(40) as i32),         // late, reordered
            2 => 2 + r.below(30) as i32,        // a burst lost
            3 => 1 + r.below(32767) as i32,     // a jump
            4 => (65536 - self.seq as i32) + r.below(3) as i32, // across the wrap
            _ => 1,
        };
        let (prev_seq, prev_ts, prev_pts, prev_marker) = (self.seq, self.ts, self.pts, self.marker);
        if r.chance(40) {
            // A new SSRC: everything restarts.
            self.seq = r.next() as u16;
            self.ts = r.next() as u32;
        } else {
            self.seq = self.seq.wrapping_add(step as u16);
            self.ts = match r.below(30) {
                0 => self.ts.wrapping_add(90_000 * 3600),
                1 => self.ts.wrapping_sub(90_000 * 3600),
                _ => self.ts.wrapping_add(3000),
            };
        }
        self.pts = pkt.pts;
        self.marker = r.chance(2);
        let d = self.seq.wrapping_sub(prev_seq) as i16;
        (d > 1).then(|| {
            let n = pkt.data.len().min(6);
            let mut payload_after = [0u8; 6];
            payload_after[..n].copy_from_slice(&pkt.data[..n]);
            GapReport {
                stream_index: stream,
                pts_before: prev_pts.unwrap_or(i64::MIN),
                pts_after: pkt.pts.unwrap_or(i64::MIN),
                ts_before: prev_ts,
                ts_after: self.ts,
                lost: (d - 1) as u32,
                seq_before: prev_seq,
                seq_after: self.seq,
                marker_before: prev_marker as u8,
                payload_after_len: if r.chance(10) { r.next() as u8 } else { n as u8 },
                payload_after,
            }
        })
    }
}

/// A gap report with any field at an edge (a demuxer's report is trusted no more than a camera).
fn wild_gap(r: &mut Rng) -> GapReport {
    let edge64 = |r: &mut Rng| {
        let any = r.next() as i64;
        *r.pick(&[i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX, any])
    };
    GapReport {
        stream_index: *r.pick(&[0, -1, 1, i32::MAX]),
        pts_before: edge64(r),
        pts_after: edge64(r),
        ts_before: r.next() as u32,
        ts_after: r.next() as u32,
        lost: {
            let any = r.next() as u32;
            *r.pick(&[0, 1, 32767, u32::MAX, any])
        },
        seq_before: r.next() as u16,
        seq_after: r.next() as u16,
        marker_before: r.next() as u8,
        payload_after_len: r.next() as u8,
        payload_after: r.next().to_le_bytes()[..6].try_into().unwrap(),
    }
}

/// A hostile stream made from a real one: packets mutated, dropped, repeated and reordered,
/// timestamps bent, gap reports and decoded pictures interleaved as a session meets them.
fn hostile_stream(r: &mut Rng, seed: &Seed) -> (Vec<u8>, i32, Vec<Op>) {
    let mut extradata = seed.extradata.clone();
    if r.chance(4) {
        for _ in 0..1 + r.below(4) {
            mutate(r, &mut extradata, &[], seed.codec);
        }
    }
    let tb_den = if r.chance(8) { *r.pick(&[1, 1000, 90_000, i32::MAX, 0, -90_000]) } else { seed.tb_den };
    let ps = &seed.packets;
    let start = if r.chance(3) { 0 } else { r.below(ps.len() as u64) as usize };
    let count = 1 + r.below(40) as usize;
    let rate = *r.pick(&[0u64, 2, 10, 50]); // percent of packets mutated
    let mut sender = Sender { seq: r.next() as u16, ts: r.next() as u32, marker: true, pts: None };
    let mut ops = Vec::new();
    let mut sent = Vec::new();
    for k in 0..count {
        let mut p = ps[(start + k) % ps.len()].clone();
        if r.chance(20) {
            continue; // lost whole
        }
        if r.percent(rate) {
            let other = &ps[r.below(ps.len() as u64) as usize].data;
            for _ in 0..1 + r.below(6) {
                mutate(r, &mut p.data, other, seed.codec);
            }
        }
        if r.chance(15) {
            p.key = !p.key;
        }
        if r.chance(25) {
            p.pts = match r.below(5) {
                0 => None,
                1 => Some(i64::MIN),
                2 => Some(i64::MAX),
                3 => p.pts.map(|v| v.wrapping_add(90_000 * 3600 * 5)),
                _ => p.pts.map(|v| v.wrapping_sub(90_000 * 3600)),
            };
        }
        if let Some(g) = sender.next(r, &p, 0) {
            ops.push(Op::Gap(g));
        }
        if r.chance(50) {
            ops.push(Op::Gap(wild_gap(r)));
        }
        sent.push(p.pts);
        ops.push(Op::Packet(p.clone()));
        if r.chance(30) {
            ops.push(Op::Packet(p)); // repeated
        }
        // Pictures come out behind, reordered; some decoders flag errors.
        while sent.len() > r.below(4) as usize {
            let i = r.below(sent.len().min(3) as u64) as usize;
            let pts = sent.remove(i);
            ops.push(Op::Picture(if r.chance(30) { Some(r.next() as i64) } else { pts }, r.chance(10)));
        }
    }
    (extradata, tb_den, ops)
}

fn run_stream(codec: Codec, extradata: &[u8], tb_den: i32, ops: &[Op]) {
    let mut s = Stream::new(codec, extradata, SIZE, tb_den);
    for op in ops {
        match op {
            Op::Packet(p) => {
                let rep = s.packet(&p.data, p.key, p.pts);
                if let Some((w, h)) = rep.new_size {
                    assert!(w > 0 && h > 0, "a new size must be a size: {w}x{h}");
                }
            }
            Op::Gap(g) => s.gap(*g),
            Op::Picture(pts, damaged) => {
                let (corrupt, _, _) = s.picture(*pts, *damaged);
                assert!(corrupt || !damaged, "a picture the decoder called damaged came out unmarked");
            }
        }
    }
}

/// The seeds as they are must read clean: a fuzzer whose seeds already fail the readers (a clip
/// that lost its parameter sets, a demuxer that changed) would mutate nothing real.
fn seeds_read_clean(seeds: &[Seed]) {
    for seed in seeds {
        let mut s = Stream::new(seed.codec, &seed.extradata, SIZE, seed.tb_den);
        let mut recovery = 0;
        for (i, p) in seed.packets.iter().enumerate() {
            let rep = s.packet(&p.data, p.key, p.pts);
            assert!(!rep.frame_num_gap, "packet {i} of a whole clip reads as a frame_num gap");
            assert_eq!(rep.jpeg_damage, None, "packet {i} of a whole clip reads as damaged JPEG");
            recovery += rep.recovery.is_some() as u32;
        }
        assert!(recovery >= 2, "a whole clip must show its recovery points, saw {recovery}");
    }
}

fn fuzz_stream(name: &str, codec: Codec) {
    quiet_ffmpeg();
    let seeds = seeds(codec);
    seeds_read_clean(&seeds);
    let n = campaign(name, |r| {
        let seed = &seeds[r.below(seeds.len() as u64) as usize];
        let (extradata, tb_den, ops) = hostile_stream(r, seed);
        run_stream(seed.codec, &extradata, tb_den, &ops);
    });
    assert!(n > 0);
}

/// A hostile H.264 camera (Annex B and avcC, B-frames, intra refresh) must not crash or hang the
/// NAL, SEI, slice-header and `frame_num` readers, the integrity marks or the recorder's in-band
/// parameter-set watch.
#[test]
fn hostile_h264_streams_never_panic_or_hang_the_readers() {
    fuzz_stream("h264", Codec::H264);
}

/// The same for HEVC (Annex B and hvcC).
#[test]
fn hostile_hevc_streams_never_panic_or_hang_the_readers() {
    fuzz_stream("hevc", Codec::Hevc);
}

/// The same for MJPEG: the marker check (restart counts, one-bit runs, absurd segment lengths)
/// and the recorder's frame-header watch.
#[test]
fn hostile_jpeg_streams_never_panic_or_hang_the_readers() {
    fuzz_stream("mjpeg", Codec::Jpeg);
}

/// RTP gap reports alone, against a stream of another codec and against H.264: every field at its
/// edges, sequence numbers wrapping and restarting, more reports than the queue keeps.
#[test]
fn wild_rtp_gap_reports_never_panic_the_loss_accounting() {
    quiet_ffmpeg();
    let seed = seeds(Codec::H264).swap_remove(0);
    campaign("rtp_gaps", |r| {
        let codec = *r.pick(&[Codec::H264, Codec::Other, Codec::Jpeg, Codec::Hevc]);
        let mut s = Stream::new(codec, if codec == Codec::H264 { &seed.extradata } else { &[] }, SIZE, *r.pick(&[90_000, 1, 0, i32::MAX]));
        for _ in 0..r.below(600) {
            match r.below(4) {
                0 => {
                    for _ in 0..r.below(300) {
                        s.gap(wild_gap(r));
                    }
                }
                1 | 2 => {
                    let p = r.pick(&seed.packets);
                    let any = r.next() as i64;
                    let pts = *r.pick(&[p.pts, None, Some(any), Some(i64::MIN), Some(i64::MAX)]);
                    s.packet(&p.data, r.chance(2), pts);
                }
                _ => {
                    let any = r.next() as i64;
                    s.picture(*r.pick(&[None, Some(any), Some(i64::MIN), Some(0)]), r.chance(3));
                }
            }
        }
    });
}

/// Characters that URL readers split on, and text that is not ASCII.
const URL_BITS: [&str; 22] = [":", "/", "//", "://", "@", "[", "]", "?", "#", "%", "%00", "x", "@@", ":0", ":65536", ":99999999999999999999", "::1", "é", "\u{202e}", " ", "\t", "\u{0}"];

/// A camera URL from its parts, some of them broken, some of the whole mutated; the password, when
/// there is one, is returned to be looked for in the error text.
fn hostile_url(r: &mut Rng) -> (String, Option<String>) {
    let scheme = *r.pick(&["rtsp", "RTSP", "rtsps", "http", "https", "rtmp", "udp", "tcp", "srt", "rtp", "testsrc", "file", "pipe", "fd", "data", "c", "", "rtsp:", "x-y.z+w"]);
    let secret = format!("Pw{}", r.next() % 1_000_000_007);
    let user = if r.chance(2) { format!("admin:{secret}@") } else { String::new() };
    let host = r.pick(&["cam", "10.0.0.1", "[fe80::1]", "[::1", "", "a.b.c", "ĉam"]).to_string();
    let port = r.pick(&["", ":554", ":0", ":65535", ":65536", ":-1", ":x", ":", ":5544444444444"]).to_string();
    let path = r.pick(&["", "/", "/stream1", "/a?b=c&passphrase=zz", "/#frag", "/%2F..%2F"]).to_string();
    let mut u = match (scheme, r.below(6)) {
        ("testsrc", _) => format!("testsrc://{}x{}@{}", r.pick(&["16", "8192", "8193", "0", "-1", "4294967296", ""]), r.pick(&["16", "9", "x"]), r.pick(&["30", "0", "241", ""])),
        ("file" | "pipe" | "fd", _) => format!("{scheme}:{}", r.pick(&["0", "/tmp/x.mp4", "//C:/a", ""])),
        (_, 0) => format!("{scheme}:/{user}{host}{port}{path}"),
        _ => format!("{scheme}://{user}{host}{port}{path}"),
    };
    let original = u.clone();
    for _ in 0..r.below(4) {
        let mut cs: Vec<char> = u.chars().collect();
        let i = r.below(cs.len() as u64 + 1) as usize;
        match r.below(3) {
            0 => {
                let bit: Vec<char> = r.pick(&URL_BITS).chars().collect();
                cs.splice(i..i, bit);
            }
            1 if i < cs.len() => {
                cs.remove(i);
            }
            _ => cs.truncate(i),
        }
        u = cs.into_iter().collect();
    }
    if r.chance(20) {
        u = u.repeat(1 + r.below(2000) as usize);
    }
    // The password is looked for only while the URL still carries it as one.
    let kept = !user.is_empty() && u == original && scheme != "testsrc";
    (u, kept.then_some(secret))
}

/// Camera URLs, garbled every way, must come back as a source or an error, never a panic, and an
/// error text must never show a URL's password.
#[test]
fn hostile_camera_urls_never_panic_and_never_show_a_password() {
    quiet_ffmpeg();
    campaign("urls", |r| {
        let (u, secret) = hostile_url(r);
        match fz::url(&u) {
            Ok((target, whitelist)) => assert!(!whitelist.is_empty(), "{u:?} -> {target:?}"),
            Err(e) => {
                if let Some(s) = secret {
                    assert!(!e.contains(&s), "the error text of {u:?} shows its password: {e}");
                }
            }
        }
    });
}

/// FFmpeg option strings as a host writes them (`key=value;...`), garbled: keys FFmpeg knows with
/// values at every edge (numbers, expressions nested deep, durations, flags), separators doubled,
/// keys missing. The check against FFmpeg's option tables must answer without a panic or a hang.
#[test]
fn hostile_option_strings_never_panic_or_hang_the_option_check() {
    quiet_ffmpeg();
    let keys = ["rtsp_transport", "timeout", "stimeout", "buffer_size", "max_delay", "fflags", "probesize", "analyzeduration", "reorder_queue_size", "rw_timeout", "tls_verify", "listen", "rtsp_flags", "allowed_media_types", "passphrase", "latency", "pkt_size", "", " ", "x=y", "fpsprobesize"];
    let values = ["", "0", "-1", "1e308", "1e309", "nan", "inf", "-inf", "5M", "1G", "9223372036854775807", "9223372036854775808", "0x7fffffff", "tcp", "udp+tcp", "+genpts-igndts", "|", "+", "00:00:01.5", "-99:99:99", "1:2:3:4", "true", "AUTO", "(", "((1))", "1+", "st(0,1)", "ld(0)", "sin(1)/0", "é", "\u{0}"];
    campaign("options", |r| {
        let mut s = String::new();
        for _ in 0..r.below(6) {
            let k = r.pick(&keys);
            let mut v = r.pick(&values).to_string();
            if r.chance(10) {
                // Deeply nested expressions: the evaluator must not recurse off its stack.
                let n = *r.pick(&[10usize, 100, 1000, 10_000]);
                v = format!("{}1{}", "(".repeat(n), ")".repeat(n));
            }
            if r.chance(10) {
                v = v.repeat(1 + r.below(300) as usize);
            }
            s.push_str(k);
            if !r.chance(10) {
                s.push('=');
            }
            s.push_str(&v);
            let sep = *r.pick(&[";", "&", "\n", ";;", " ; ", "="]);
            s.push_str(sep);
        }
        let _ = fz::options(&s);
    });
}

/// Datagrams of the camera-sharing protocol as a hostile attached process (or publisher) sends
/// them: well-formed messages with bytes flipped, cut, grown and spliced. The parser must refuse
/// or accept each without a panic, and what it accepts must read back the same when written
/// again (no field is taken from outside the message).
#[test]
fn hostile_sharing_messages_never_panic_the_protocol_parser() {
    let samples = fz::share_samples();
    for s in &samples {
        assert_eq!(fz::share_message(s).as_deref(), Some(&s[..]), "a well-formed message reads back");
    }
    campaign("sharing messages", |r| {
        let mut m = r.pick(&samples).clone();
        for _ in 0..1 + r.below(4) {
            match r.below(5) {
                0 => {
                    let i = r.below(m.len().max(1) as u64) as usize;
                    if let Some(b) = m.get_mut(i) {
                        *b ^= 1 << r.below(8);
                    }
                }
                1 => m.truncate(r.below(m.len() as u64 + 1) as usize),
                2 => m.extend((0..r.below(64)).map(|_| r.next() as u8)),
                3 => {
                    let o = r.pick(&samples);
                    let at = r.below(o.len() as u64) as usize;
                    m.extend_from_slice(&o[at..]);
                }
                _ => {
                    let i = r.below(m.len().max(1) as u64) as usize;
                    if let Some(b) = m.get_mut(i) {
                        *b = *r.pick(&[0u8, 0xff, 0x7f, 0x80]);
                    }
                }
            }
        }
        if let Some(back) = fz::share_message(&m) {
            assert_eq!(fz::share_message(&back).as_deref(), Some(&back[..]), "an accepted message writes and reads back the same");
        }
    });
}
