//! Hostile cameras at the RTP level: a real GStreamer RTSP server streams a known clip through a
//! relay that mutates RTP and RTCP in flight (`tests/support/mutating_relay.rs`: bit flips,
//! truncation, duplication, oversized NAL lengths; SPS that claim 16384x16384, 2x2 or a new size
//! every picture; timestamps 3 hours either way, a sequence wrap, SSRC changes, absurd RTCP NTP
//! times), over interleaved TCP and over UDP, while 3 healthy cameras stream beside the hostile
//! one. CPU path.
//!
//! One camera meets every attack in turn: each attack runs for [`ATTACK`] (the RTCP one longer:
//! the server's first sender report comes seconds in), then the stream runs sane for [`SANE`].
//! Besides the kit's checks (`tests/common/hostile.rs`: call deadlines, RSS, the hostile
//! thread's CPU, the healthy cameras' rate and frame gaps, the back-off), every frame the hostile
//! camera delivers is bit-identical to a frame of the clip (or, where an SPS claims a smaller
//! picture, to the top-left of one) or marked (bit flips that leave a valid bitstream excepted:
//! nothing in RTP can tell them), and after every attack a
//! sane stream gives exact frames again within [`SANE`] (a key frame comes every second), or the
//! camera ends FAILED with a reason.
// The hostile kit (tests/common/hostile.rs) reads /proc and runs Linux processes: Linux only.
#![cfg(target_os = "linux")]

mod common;
#[path = "support/lossy_udp.rs"]
mod lossy_udp;
#[path = "support/mutating_relay.rs"]
mod mutating_relay;
#[path = "support/rtsp.rs"]
mod rtsp;

use common::*;
use mutating_relay::{Mutation, Relay, ATTACKS, STALE_START_TICKS};
use nvcam::*;
use rtsp::{RtspServer, Stream};
use std::sync::atomic::Ordering;
use std::time::Duration;

const ATTACK: Duration = Duration::from_millis(1500);
/// The RTCP attack's length: the server sends a report every 2.5 to 7.5 s (5 s, randomized).
const RTCP_ATTACK: Duration = Duration::from_millis(8000);
const SANE: Duration = Duration::from_millis(1500);
/// Sane streaming before the first attack (the camera connects and shows exact frames).
const SETTLE: Duration = Duration::from_millis(2000);

fn attack_len(m: Mutation) -> Duration {
    if m == Mutation::RtcpNtp { RTCP_ATTACK } else { ATTACK }
}

/// When each attack starts, after the settling time. `NVCAM_RELAY_ATTACKS` (names, comma
/// separated) runs only those, to trace one.
fn schedule() -> Vec<(Mutation, Duration)> {
    let only = std::env::var("NVCAM_RELAY_ATTACKS").unwrap_or_default();
    let mut t = SETTLE;
    ATTACKS
        .iter()
        .filter(|m| only.is_empty() || only.split(',').any(|n| n == m.name()))
        .map(|&m| {
            let at = t;
            t += attack_len(m) + SANE;
            (m, at)
        })
        .collect()
}

/// One frame the hostile camera delivered.
struct Got {
    at: Duration,
    flags: u32,
    size: (u32, u32),
    exact: bool,
    /// Smaller than the clip and unmarked: its hash, to compare with the clip's frames' crops.
    crop_hash: Option<u64>,
}

/// The hashes of the top-left `w`x`h` of every frame of the clip (320x240), in nvcam's NV12
/// layout, for each of `sizes` (even, within the clip's). A stream whose SPS claims a smaller
/// picture than its slices carry decodes to the top-left of the camera's picture where nothing
/// else is damaged: exact for the picture it claims.
fn crop_hashes(clip: &std::path::Path, sizes: &std::collections::BTreeSet<(u32, u32)>) -> std::collections::HashSet<u64> {
    let (cw, ch) = (320usize, 240usize);
    let mut set = std::collections::HashSet::new();
    each_nv12_frame(clip, cw, ch, |frame| {
        for &(w, h) in sizes {
            let (w, h) = (w as usize, h as usize);
            let mut crop = Vec::with_capacity(w * h * 3 / 2);
            for r in 0..h {
                crop.extend_from_slice(&frame[r * cw..r * cw + w]);
            }
            for r in 0..h / 2 {
                let at = cw * ch + r * cw;
                crop.extend_from_slice(&frame[at..at + w]);
            }
            set.insert(nv12_hash(&crop));
        }
    });
    set
}

/// 60 s at 30 fps, a key frame a second, no B-frames (as cameras send): longer than any run here,
/// so a session never reaches the clip's end.
fn relay_clip() -> std::path::PathBuf {
    clip(
        "hostile-relay-320x240.mkv",
        "320x240",
        1800,
        "libx264",
        &["-preset", "ultrafast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0", "-b:v", "1M"],
    )
}

fn relay_run(transport: &str) {
    let _g = serial();
    let clip = relay_clip();
    let refs = nv12_hashes(&clip, 320, 240);
    let server = RtspServer::start(Stream::default().clip(&clip).not_shared());
    let relay = Relay::start(server.port, 0x54);
    let plan = schedule();
    let end = plan.last().map(|&(m, at)| at + attack_len(m) + SANE).unwrap();
    // The packets each attack touched: the relay's count when it started and when it ended.
    let mut touched: Vec<(u64, u64)> = vec![(0, 0); plan.len()];
    let mut got: Vec<Got> = Vec::new();
    let mut buf = Vec::new();
    let case = format!("mutating relay over {transport}");
    let seen = beside_three_healthy(HostileCase {
        name: &case,
        url: &relay.url(),
        ffmpeg: &format!("rtsp_transport={transport}"),
        window: end,
        conns: &|| relay.conns.load(Ordering::Relaxed) as usize,
        conns_per_attempt: 2,
        on_tick: &mut |t| {
            let now = plan.iter().position(|&(m, at)| t >= at && t < at + attack_len(m));
            let mode = now.map_or(Mutation::Sane, |i| plan[i].0);
            let mut m = relay.mutator.lock().unwrap();
            if m.mode != mode {
                if let Some(i) = now {
                    touched[i].0 = m.touched;
                }
                if let Some(i) = plan.iter().position(|&(p, _)| p == m.mode) {
                    touched[i].1 = m.touched;
                }
                m.mode = mode;
            }
        },
        on_frame: &mut |f, at| {
            let i = info(f).unwrap();
            buf.resize(i.nv12_size as usize, 0);
            // SAFETY: `buf` holds nv12_size bytes.
            assert_eq!(unsafe { nvcam_frame_copy_nv12(f, buf.as_mut_ptr(), 0, buf.len() as u64) }, NVCAM_OK, "{}", last_error());
            let hash = nv12_hash(&buf);
            let exact = (i.width, i.height) == (320, 240) && refs.contains_key(&hash);
            let smaller = i.width <= 320 && i.height <= 240 && i.width.is_multiple_of(2) && i.height.is_multiple_of(2) && (i.width, i.height) != (320, 240);
            let unmarked = i.flags & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) == 0;
            got.push(Got { at, flags: i.flags, size: (i.width, i.height), exact, crop_hash: (smaller && unmarked).then_some(hash) });
        },
    });
    relay.set(Mutation::Sane);
    // Unmarked pictures of a smaller size that an SPS claimed: exact if they are the top-left
    // of a clip's frame.
    let sizes: std::collections::BTreeSet<(u32, u32)> = got.iter().filter(|g| g.crop_hash.is_some()).map(|g| g.size).collect();
    if !sizes.is_empty() {
        let crops = crop_hashes(&clip, &sizes);
        for g in got.iter_mut() {
            if g.crop_hash.is_some_and(|h| crops.contains(&h)) {
                g.exact = true;
            }
        }
    }
    let phase_of = |t: Duration| plan.iter().rev().find(|&&(_, at)| t >= at).map_or("settling", |&(m, _)| m.name());
    let marked = |g: &Got| g.flags & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0;
    let mut report = Vec::new();
    for (k, &(m, at)) in plan.iter().enumerate() {
        let (from, to) = (at, at + attack_len(m) + SANE);
        let frames: Vec<&Got> = got.iter().filter(|g| g.at >= from && g.at < to).collect();
        let sane_exact = frames.iter().filter(|g| g.at >= at + attack_len(m) && g.exact && !marked(g)).count();
        let sizes: std::collections::BTreeSet<(u32, u32)> = frames.iter().map(|g| g.size).collect();
        report.push(format!(
            "{}: {} packets touched, {} frames ({} marked, {} exact), sizes {sizes:?}, {} exact after it",
            m.name(),
            touched[k].1.saturating_sub(touched[k].0),
            frames.len(),
            frames.iter().filter(|g| marked(g)).count(),
            frames.iter().filter(|g| g.exact).count(),
            sane_exact
        ));
    }
    eprintln!("{case}:\n  {}", report.join("\n  "));
    // Every frame delivered unmarked is one of the clip's, except where bit flips left a valid
    // bitstream: that decodes, without an error, to another picture than the camera encoded
    // (RTP carries no checksum; nothing can tell), and so do the pictures that refer to it.
    let flipped = |g: &Got| plan.iter().any(|&(m, at)| m == Mutation::BitFlips && g.at >= at && g.at < at + attack_len(m) + SANE);
    let wrong: Vec<String> = got.iter().filter(|g| !marked(g) && !g.exact && !flipped(g)).map(|g| format!("{:?} {}x{} during {}", g.at, g.size.0, g.size.1, phase_of(g.at))).collect();
    let undetectable = got.iter().filter(|g| !marked(g) && !g.exact && flipped(g)).count();
    eprintln!("{case}: {undetectable} frames unmarked and wrong after bit flips that left a valid bitstream");
    assert!(wrong.is_empty(), "{case}: {} frames came unmarked and differ from every frame of the clip: {wrong:?}", wrong.len());
    assert!(got.iter().all(|g| g.size.0 <= 8192 && g.size.1 <= 8192), "{case}: a picture over the default limit was delivered");
    assert!(got.iter().any(|g| g.at < SETTLE && g.exact), "{case}: no exact frame before the first attack (the relay or the server is broken)");
    for (k, &(m, at)) in plan.iter().enumerate() {
        assert!(touched[k].1 > touched[k].0, "{case}: {} touched no packet (the attack never happened)", m.name());
        let recovered = got.iter().any(|g| g.at >= at + attack_len(m) && g.at < at + attack_len(m) + SANE && g.exact && g.size == (320, 240) && !marked(g));
        if !recovered {
            assert!(
                seen.state == NVCAM_STATE_FAILED && !seen.error.is_empty(),
                "{case}: after {} no exact frame came in {SANE:?} of a sane stream, and the camera did not end FAILED with a reason (state {}, {:?})",
                m.name(),
                seen.state,
                seen.error
            );
            break;
        }
    }
}

/// RTP inside the RTSP connection: a mutated frame header there would desynchronise the whole
/// connection, so the relay keeps the framing and mutates what it carries.
#[test]
fn rtp_attacks_over_tcp_cost_only_marked_frames_and_the_camera_recovers() {
    relay_run("tcp");
}

/// RTP over UDP, each datagram mutated on its way.
#[test]
fn rtp_attacks_over_udp_cost_only_marked_frames_and_the_camera_recovers() {
    relay_run("udp");
}

/// A session whose PLAY answer (RTP-Info's `rtptime`) puts its start 5 s before its first
/// picture, as a shared GStreamer stream that seeks for another client's PLAY may (0.3 ms to
/// 5 s seen), and whose first IDR lost a packet: the IDR is marked, and so is every picture
/// until the next key frame (they predict from it). The first access unit (which FFmpeg's
/// parser gives no timestamp) was stamped 0, the demuxer's start, and the gap was placed at the
/// timestamp of the unit's own packets: the damaged IDR and its GOP went out unmarked.
fn stale_start_run(transport: &str) {
    let _g = serial();
    let clip = relay_clip();
    let refs = nv12_hashes(&clip, 320, 240);
    let server = RtspServer::start(Stream::default().clip(&clip).not_shared());
    let relay = Relay::start(server.port, 0x5e);
    relay.set(Mutation::StaleStartIdrCut);
    let mut o = Opts::new().ffmpeg(&format!("rtsp_transport={transport}"));
    o.o.integrity = NVCAM_INTEGRITY_MARK;
    // The loss tracker alone, as on NVDEC: FFmpeg's decoder notices most cut slices itself.
    nvcam::diag::set_no_decoder_reports(true);
    let cam = open(&relay.url(), &o.o);
    nvcam::diag::set_no_decoder_reports(false);
    let cam = cam.expect("the camera opens through the relay");
    let (mut frames, mut buf) = (Vec::new(), Vec::new());
    let end = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < end && frames.len() < 45 {
        let Ok(f) = get_frame(cam, 200) else { continue };
        let i = info(f).unwrap();
        buf.resize(i.nv12_size as usize, 0);
        assert_eq!(unsafe { nvcam_frame_copy_nv12(f, buf.as_mut_ptr(), 0, buf.len() as u64) }, NVCAM_OK, "{}", last_error());
        frames.push((i.pts_us, i.flags, refs.get(&nv12_hash(&buf)).copied()));
        release(f).unwrap();
    }
    let lost = stats(cam).packets_lost;
    close(cam, 2000).unwrap();
    assert!(relay.touched() >= 1, "the relay did not cut the first IDR");
    assert!(lost >= 1, "the cut in the first IDR was not counted lost");
    let marked = |f: &(i64, u32, Option<u32>)| f.1 & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0;
    let unmarked_wrong: Vec<_> = frames.iter().filter(|f| !marked(f) && f.2.is_none()).collect();
    assert!(unmarked_wrong.is_empty(), "over {transport}: unmarked frames that are not the clip's (pts, flags, frame): {unmarked_wrong:?}");
    // The first GOP (the next IDR is 1 s after the first): every picture of it that came out is
    // marked (the camera hands out its newest frame, so a burst at the start may skip some).
    let start_us = STALE_START_TICKS as i64 * 100 / 9;
    let first_gop: Vec<_> = frames.iter().filter(|f| f.0 < start_us + 990_000).collect();
    assert!(!first_gop.is_empty(), "over {transport}: no frame of the first GOP came out: {frames:?}");
    assert!(first_gop.iter().all(|f| marked(f)), "over {transport}: pictures after the cut IDR went out unmarked: {first_gop:?}");
    assert!(frames.iter().any(|f| !marked(f) && f.2.is_some()), "over {transport}: no exact frame after the next key frame: {frames:?}");
}

#[test]
fn a_damaged_first_idr_is_marked_when_play_names_an_earlier_start_over_tcp() {
    stale_start_run("tcp");
}

#[test]
fn a_damaged_first_idr_is_marked_when_play_names_an_earlier_start_over_udp() {
    stale_start_run("udp");
}
