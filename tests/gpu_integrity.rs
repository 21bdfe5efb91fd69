//! Marking parity: on a clip with dropped and damaged packets (FFmpeg's `noise`
//! bitstream filter), every decoder marks the pictures that are not exact, and the GPU decoders
//! mark the same pictures as the software path. The same over RTSP: a replay server on loopback
//! (`tests/support/rtsp_replay.py`, Python's standard library only) drops RTP packets inside the
//! TCP connection, the same packets for every decoder.
//!
//! Without a GPU only the software decoder runs (CI); with `REQUIRE_GPU=1` (the GPU machine's
//! bundle) a missing GPU fails. The clips are made here with Debian's ffmpeg
//! (`cargo test --release --test gpu_integrity -- --ignored make_integrity_fixtures`) and carried
//! to the GPU machine under `$BUNDLE_WITH/fixtures`.

mod common;
#[path = "support/replay.rs"]
mod replay;
use common::*;
use nvcam::*;
use replay::ReplayServer;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The clean clip: 10 s, 30 fps, an IDR every second, no B-frames.
fn clean_clip() -> PathBuf {
    clip("integrity-clean-640x360.mp4", "640x360", 300, "libx264", &["-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0"])
}

/// A camera with intra refresh and no IDR but the first (x264 `intra-refresh`): a column of
/// intra blocks sweeps the picture every 30 frames, and a recovery-point SEI with
/// `recovery_frame_cnt` 29 starts each sweep.
fn refresh_clip() -> PathBuf {
    clip("integrity-refresh-640x360.mp4", "640x360", 300, "libx264", &["-preset", "veryfast", "-x264-params", "intra-refresh=1:keyint=30", "-bf", "0"])
}

/// [`refresh_clip`] with packet 45 gone: exact again only where the next sweep's SEI says.
fn refresh_dropped_clip() -> PathBuf {
    noisy_from(&refresh_clip(), "integrity-refresh-dropped-640x360.mp4", "drop=eq(n\\,45)")
}

/// `clean` through FFmpeg's noise bitstream filter (`bsf` its options), remuxed as `name`.
fn noisy(name: &str, bsf: &str) -> PathBuf {
    noisy_from(&clean_clip(), name, bsf)
}

fn noisy_from(clean: &Path, name: &str, bsf: &str) -> PathBuf {
    let path = clean.with_file_name(name);
    if path.exists() {
        return path;
    }
    if cfg!(windows) {
        panic!("{} is made on Linux first (scripts/ci/windows-test.sh)", path.display());
    }
    let tmp = path.with_file_name(format!("part-{name}"));
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y", "-i"])
        .arg(clean)
        .args(["-c", "copy", "-bsf:v", &format!("noise={bsf}")])
        .arg(&tmp)
        .output()
        .expect("ffmpeg CLI");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// Packets 40, 95, 170 and 230 (P pictures that later ones reference) are gone.
fn dropped_clip() -> PathBuf {
    noisy("integrity-dropped-640x360.mp4", "drop=eq(n\\,40)+eq(n\\,95)+eq(n\\,170)+eq(n\\,230)")
}

/// About one byte in 400 of packets 50, 120 and 200 damaged (a P picture, one just before an
/// IDR, and an IDR's successor).
fn damaged_clip() -> PathBuf {
    noisy("integrity-damaged-640x360.mp4", "amount=if(eq(n\\,50)+eq(n\\,118)+eq(n\\,200)\\,400\\,0)")
}

/// What one decoder made of a clip: per picture (by timestamp), its flags and pixel hash.
type Seen = BTreeMap<i64, (u32, u64)>;

fn decode_all(clip: &Path, device: i32, decoder: u32) -> Seen {
    decode_all_with(clip, device, decoder, NVCAM_INTEGRITY_MARK)
}

/// The decoder a camera on `clip` with this choice ends up on (`NVCAM_DECODER_*`).
fn stats_decoder(clip: &Path, device: i32, decoder: u32) -> u32 {
    let mut o = options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING);
    o.device = device;
    o.decoder = decoder;
    let cam = open(clip.to_str().unwrap(), &o).unwrap();
    let f = get_frame(cam, 20_000).unwrap();
    release(f).unwrap();
    let d = stats(cam).decoder;
    close(cam, 5000).unwrap();
    d
}

fn decode_all_with(clip: &Path, device: i32, decoder: u32, integrity: u32) -> Seen {
    let mut o = options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING);
    o.device = device;
    o.decoder = decoder;
    o.integrity = integrity;
    let cam = open(clip.to_str().unwrap(), &o).unwrap_or_else(|e| panic!("open {} with decoder {decoder}: {e:?}", clip.display()));
    let mut seen = Seen::new();
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        match get_frame(cam, 500) {
            Ok(f) => {
                let i = info(f).unwrap();
                seen.insert(i.pts_us, (i.flags, fnv(&pixels(f).unwrap())));
                release(f).unwrap();
            }
            Err(_) if stats(cam).state == NVCAM_STATE_ENDED => break,
            Err(_) => {}
        }
    }
    let st = stats(cam);
    assert_eq!(st.state, NVCAM_STATE_ENDED, "decoder {decoder} did not finish {}", clip.display());
    close(cam, 5000).unwrap();
    seen
}

fn marked(s: &Seen) -> BTreeSet<i64> {
    s.iter().filter(|(_, (f, _))| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0).map(|(p, _)| *p).collect()
}

/// Pictures whose pixels differ from the clean clip's picture at the same time, or that the
/// clean clip does not have.
fn wrong(s: &Seen, clean: &Seen) -> BTreeSet<i64> {
    s.iter().filter(|(p, (_, h))| clean.get(p).is_none_or(|c| c.1 != *h)).map(|(p, _)| *p).collect()
}

fn ms(v: &BTreeSet<i64>) -> Vec<i64> {
    v.iter().map(|p| p / 1000).collect()
}

/// Checks one decoder's view of a noisy clip against the clean decode: every wrong picture is
/// marked. Returns the marked set.
fn exact_or_marked(name: &str, s: &Seen, clean: &Seen) -> BTreeSet<i64> {
    let (m, w) = (marked(s), wrong(s, clean));
    let unmarked: Vec<_> = w.difference(&m).collect();
    println!("{name}: {} pictures, {} marked, {} wrong, {} wrong and unmarked {:?}", s.len(), m.len(), w.len(), unmarked.len(), &unmarked[..unmarked.len().min(8)]);
    if std::env::var_os("NVCAM_INTEGRITY_VERBOSE").is_some() {
        println!("  marked (ms) {:?}\n  wrong (ms) {:?}", ms(&m), ms(&w));
    }
    assert!(unmarked.is_empty(), "{name}: wrong pictures handed out unmarked at {unmarked:?} ms");
    assert!(!m.is_empty() && m.len() < s.len(), "{name}: marks {} of {}", m.len(), s.len());
    m
}

/// A reference picture missing from a file is seen from the slice headers, by every decoder
/// alike: the software path marks exactly the pictures from the gap to the next IDR.
#[test]
fn dropped_reference_pictures_mark_until_the_next_idr() {
    let _g = serial();
    let clean = decode_all(&clean_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    assert_eq!(clean.len(), 300);
    assert!(marked(&clean).is_empty(), "the clean clip has marked pictures");
    let sw = decode_all(&dropped_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    assert_eq!(sw.len(), 296, "every picture but the four dropped comes out");
    let m = exact_or_marked("software, dropped", &sw, &clean);
    // Packets 40, 95, 170, 230 dropped: pictures 41..59, 96..119, 171..179, 231..239 reference a
    // missing one (an IDR every 30), and nothing else does.
    let frame = |n: i64| n * 1_000_000 / 30;
    let expected: BTreeSet<i64> = [(41, 60), (96, 120), (171, 180), (231, 240)]
        .iter()
        .flat_map(|&(a, b)| (a..b).map(frame))
        .filter(|p| sw.contains_key(p))
        .collect();
    assert_eq!(ms(&m), ms(&expected), "marked pictures (ms)");
}

/// Damaged bytes are seen by the decoders only: the software path marks every damaged picture and
/// what follows it until the next IDR.
#[test]
fn damaged_pictures_are_marked_by_the_software_decoder() {
    let _g = serial();
    let clean = decode_all(&clean_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    let sw = decode_all(&damaged_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    assert_eq!(sw.len(), 300, "every picture comes out");
    let m = exact_or_marked("software, damaged", &sw, &clean);
    // And no more: the damaged pictures and those after them up to the next IDR are exactly the
    // ones that differ from the clean decode.
    assert_eq!(ms(&m), ms(&wrong(&sw, &clean)), "marked against wrong (ms)");
}

/// Intra refresh, no IDR: after a lost reference picture (45) the stream is exact again at the
/// recovery point the next sweep's SEI names (frame 60 + 29 = 89), not at the next key frame
/// (there is none) and not at that SEI's own picture (its sweep has just begun).
#[test]
fn intra_refresh_is_exact_again_where_the_recovery_point_sei_says() {
    let _g = serial();
    let clean = decode_all(&refresh_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    assert!(marked(&clean).is_empty());
    let sw = decode_all(&refresh_dropped_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    assert_eq!(sw.len(), 299, "every picture but the dropped one comes out");
    let m = exact_or_marked("software, intra refresh", &sw, &clean);
    let frame = |n: i64| n * 1_000_000 / 30;
    let expected: BTreeSet<i64> = (46..89).map(frame).collect();
    assert_eq!(ms(&m), ms(&expected), "marked pictures (ms)");
}

/// The GPU decoders on the same clips: direct NVDEC marks what the software path marks, picture
/// for picture, on both clips; FFmpeg's hwaccel does on the dropped clip (the loss is read from
/// the bitstream, the same for every decoder). Damaged bytes with no loss are seen only by a
/// decoder's own report, and FFmpeg's CUDA hwaccel has none (it never asks NVDEC for the decode
/// status, and conceals silently): on the damaged clip it must mark nothing the software path
/// does not, and what it misses is printed (docs/api.md: "What the decoders see").
#[test]
fn gpu_decoders_mark_what_the_software_path_marks() {
    let _g = serial();
    if !need_gpu!(gpu_usable(), "a GPU with NVDEC") {
        return;
    }
    let clean = decode_all(&clean_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    let mut failures = Vec::new();
    let clean_refresh = decode_all(&refresh_clip(), NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
    for (what, clip) in [("dropped", dropped_clip()), ("damaged", damaged_clip()), ("intra refresh", refresh_dropped_clip())] {
        let clean = if what == "intra refresh" { &clean_refresh } else { &clean };
        let sw = decode_all(&clip, NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE);
        let sw_marks = marked(&sw);
        for (name, decoder) in [("nvdec", NVCAM_DECODER_NVDEC), ("ffmpeg-hw", NVCAM_DECODER_FFMPEG_HW)] {
            let gpu = decode_all(&clip, 0, decoder);
            let m = marked(&gpu);
            let w = wrong(&gpu, clean);
            let unmarked: BTreeSet<_> = w.difference(&m).copied().collect();
            let only_gpu: BTreeSet<_> = m.difference(&sw_marks).copied().collect();
            let only_sw: BTreeSet<_> = sw_marks.difference(&m).copied().collect();
            println!(
                "{what} {name}: {} pictures, {} marked (software {}), only {name} {:?}, only software {:?}, wrong and unmarked {:?}",
                gpu.len(),
                m.len(),
                sw_marks.len(),
                ms(&only_gpu),
                ms(&only_sw),
                ms(&unmarked)
            );
            let known_limit = what == "damaged" && decoder == NVCAM_DECODER_FFMPEG_HW;
            if known_limit {
                assert!(only_gpu.is_empty(), "{what} {name}: marks the software path does not have: {:?}", ms(&only_gpu));
                println!("{what} {name}: {} damaged pictures unmarked (FFmpeg's hwaccel reports no decode errors)", unmarked.len());
            } else if !unmarked.is_empty() || m != sw_marks {
                failures.push(format!("{what} {name}"));
            }
        }
    }
    assert!(failures.is_empty(), "marks differ from the software path's, or wrong pictures unmarked: {failures:?}");
}

/// A 4:2:2 MJPEG camera, 1 s at 320x240 (JPEG as FFmpeg writes it, so every packet a key frame).
fn jpeg_clean_clip() -> PathBuf {
    clip("integrity-jpeg-clean-320x240.mp4", "320x240", 30, "mjpeg", &["-pix_fmt", "yuvj422p", "-q:v", "3"])
}

/// [`jpeg_clean_clip`] with picture 10 cut to half its bytes (a camera's or a proxy's short
/// write) and 16 stuffed 0xFF bytes written into the middle of picture 20's scan (128 one bits:
/// no JPEG Huffman table has such a code), its markers left whole. Each picture is its own
/// packet: the clip is split into files, two are damaged, and the files are muxed back.
fn jpeg_damaged_clip() -> PathBuf {
    let clean = jpeg_clean_clip();
    let path = clean.with_file_name("integrity-jpeg-damaged-320x240.mp4");
    if path.exists() {
        return path;
    }
    let dir = clean.with_file_name(format!("part-jpeg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ffmpeg = |args: &[&str]| {
        let out = Command::new("ffmpeg").args(["-hide_banner", "-loglevel", "error", "-y"]).args(args).output().expect("ffmpeg CLI");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let pattern = dir.join("f%03d.jpg");
    ffmpeg(&["-i", clean.to_str().unwrap(), "-c", "copy", "-f", "image2", pattern.to_str().unwrap()]);
    let file = |n: usize| dir.join(format!("f{:03}.jpg", n + 1));
    let cut = std::fs::read(file(10)).unwrap();
    std::fs::write(file(10), &cut[..cut.len() / 2]).unwrap();
    let mut j = std::fs::read(file(20)).unwrap();
    let sos = j.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let start = sos + 2 + u16::from_be_bytes([j[sos + 2], j[sos + 3]]) as usize;
    let mut mid = (start + j.len() - 2) / 2;
    while j[mid - 1] == 0xFF {
        mid += 1;
    }
    j[mid..mid + 32].copy_from_slice(&[0xFF, 0x00].repeat(16));
    std::fs::write(file(20), &j).unwrap();
    let tmp = path.with_file_name("part-integrity-jpeg-damaged-320x240.mp4");
    ffmpeg(&["-framerate", "30", "-i", pattern.to_str().unwrap(), "-c", "copy", tmp.to_str().unwrap()]);
    std::fs::rename(&tmp, &path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    path
}

/// A JPEG cut short or with an undecodable Huffman code decodes "successfully" on every engine
/// (FFmpeg emulates the end marker and fills the rest; its picture came out half grey and
/// unmarked): on every decoder, with the marking policy, no picture that differs from the same
/// decoder's decode of the clean clip (JPEG IDCTs round apart between engines) comes out
/// unmarked, and the damage marks only the damaged pictures; with the exact policy, none of them
/// comes out at all and every other one does, unmarked.
#[test]
fn damaged_jpegs_are_marked_or_dropped_on_every_decoder() {
    let _g = serial();
    let gpu = gpu_usable() && std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1");
    let damaged = jpeg_damaged_clip();
    let frame = |n: i64| n * 1_000_000 / 30;
    let hit: BTreeSet<i64> = [frame(10), frame(20)].into();
    let mut decoders = vec![("software", NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE)];
    if gpu {
        decoders.extend([("nvdec", 0, NVCAM_DECODER_NVDEC), ("upload", 0, NVCAM_DECODER_SOFTWARE), ("auto", 0, NVCAM_DECODER_AUTO)]);
        // nvJPEG is a toolkit library: run where the machine is known to have it.
        if std::env::var("NVCAM_REQUIRE_NVJPEG").is_ok_and(|v| v == "1") {
            decoders.push(("nvjpeg", 0, NVCAM_DECODER_NVJPEG));
        }
    }
    let mut failures = Vec::new();
    for (name, device, decoder) in decoders {
        let clean = decode_all_with(&jpeg_clean_clip(), device, decoder, NVCAM_INTEGRITY_MARK);
        assert!(clean.len() == 30 && marked(&clean).is_empty(), "{name}: the clean clip: {} pictures, {} marked", clean.len(), marked(&clean).len());
        let s = decode_all_with(&damaged, device, decoder, NVCAM_INTEGRITY_MARK);
        let (m, w) = (marked(&s), wrong(&s, &clean));
        let absent: BTreeSet<i64> = clean.keys().filter(|p| !s.contains_key(p)).copied().collect();
        let exact = decode_all_with(&damaged, device, decoder, NVCAM_INTEGRITY_EXACT);
        let exact_absent: BTreeSet<i64> = clean.keys().filter(|p| !exact.contains_key(p)).copied().collect();
        println!(
            "jpeg {name}: {} pictures, marked {:?}, wrong {:?}, absent {:?}; exact policy: {} pictures, absent {:?}, wrong {:?}",
            s.len(),
            ms(&m),
            ms(&w),
            ms(&absent),
            exact.len(),
            ms(&exact_absent),
            ms(&wrong(&exact, &clean))
        );
        // nvJPEG's hardware back end decodes an undecodable Huffman code without an error (seen
        // with nvJPEG 12.4 and 13.0 on an H200): picture 20's code (a burst of one bits) must be
        // found by the marker check that runs before every decoder.
        if stats_decoder(&damaged, device, decoder) == NVCAM_DECODER_NVJPEG {
            println!("jpeg {name}: on nvJPEG, the picture with a bad Huffman code is handed out unmarked: {}", w.contains(&frame(20)) && !m.contains(&frame(20)));
        }
        let bad = !w.is_subset(&m) || !m.is_subset(&hit) || !absent.is_subset(&hit) || m.len() + absent.len() < 2;
        let bad_exact = !hit.is_subset(&exact_absent) || !exact_absent.is_subset(&hit) || !wrong(&exact, &clean).is_empty() || !marked(&exact).is_empty();
        if bad || bad_exact {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "damaged JPEGs handed out unmarked, or the marks reach undamaged pictures, on {failures:?}");
}

/// Makes the clips here, where libx264 exists; the bundle carries them to the GPU machine.
#[test]
#[ignore]
fn make_integrity_fixtures() {
    clean_clip();
    dropped_clip();
    damaged_clip();
    refresh_dropped_clip();
    replay_clip();
    jpeg_damaged_clip();
}

/// The replayed camera: 10 s of 640x360 at 30 fps, an IDR every second, no B-frames, 1.5 Mbit/s
/// (about five RTP packets a picture, most of them FU-A fragments); and its H.264 elementary
/// stream beside it (`<clip>.h264`), which the replay server packetizes.
fn replay_clip() -> (PathBuf, PathBuf) {
    let clip = clip(
        "replay-640x360-t1.mp4",
        "640x360",
        300,
        "libx264",
        // One thread: x264's output (so which pictures the seeded drops hit) is the same on
        // every run, and a disagreement found on one machine is found on the next.
        &["-threads", "1", "-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0", "-b:v", "1500k", "-maxrate", "1500k", "-bufsize", "1M"],
    );
    let es = clip.with_extension("h264");
    if !es.exists() {
        let tmp = es.with_extension("part.h264");
        let out = Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-i"])
            .arg(&clip)
            .args(["-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264"])
            .arg(&tmp)
            .output()
            .expect("ffmpeg CLI");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::rename(&tmp, &es).unwrap();
    }
    (clip, es)
}

/// What one decoder made of the replayed stream: per picture (by frame number), its flags and
/// whether its pixels are the clip's picture of that number; and the camera's stats.
struct Replayed {
    frames: BTreeMap<i64, (u32, bool)>,
    stats: nvcam_camera_stats,
}

/// Takes every picture a camera on `url` hands out until the replay has ended (the server's
/// BYE ends the session: the decoder drains, then the camera tries to reconnect and the server
/// refuses the used path).
fn watch_replay(url: &str, device: i32, decoder: u32, refs: &[u64]) -> Replayed {
    let mut o = options(NVCAM_OPEN_LOSSLESS);
    o.device = device;
    o.decoder = decoder;
    o.integrity = NVCAM_INTEGRITY_MARK;
    o.transport = NVCAM_TRANSPORT_TCP;
    // The sanitizer slows a GPU decoder's first open by seconds.
    o.open_timeout_ms = 30_000;
    let cam = open(url, &o).unwrap_or_else(|e| panic!("open {url} with decoder {decoder}: {e:?}"));
    let mut frames = BTreeMap::new();
    // The stream lasts 10 s; a decoder under compute-sanitizer may lag it by much more.
    let end = Instant::now() + Duration::from_secs(180);
    while Instant::now() < end {
        match get_frame(cam, 500) {
            Ok(f) => {
                let i = info(f).unwrap();
                // 90 kHz RTP timestamps at 30 fps from the first packet's: picture n at n / 30 s.
                // FFmpeg's H.264 parser leaves a session's first picture (here picture 0, whole:
                // the replay never drops from it) without a timestamp.
                let n = if i.pts_us == i64::MIN {
                    assert!(frames.is_empty(), "{url}: a picture without a timestamp after the first");
                    0
                } else {
                    (i.pts_us * 30 + 500_000).div_euclid(1_000_000)
                };
                let px = pixels(f).unwrap();
                let same = refs.get(n as usize).is_some_and(|&h| h == fnv(&px));
                assert!(frames.insert(n, (i.flags, same)).is_none(), "{url}: picture {n} (pts {} us) handed out twice", i.pts_us);
                release(f).unwrap();
            }
            Err(_) if !frames.is_empty() && stats(cam).state != NVCAM_STATE_STREAMING => break,
            Err(_) => {}
        }
    }
    let stats = stats(cam);
    close(cam, 5000).unwrap();
    Replayed { frames, stats }
}

fn marked_of(r: &Replayed) -> BTreeSet<i64> {
    r.frames.iter().filter(|(_, (f, _))| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0).map(|(n, _)| *n).collect()
}

/// RTP packets dropped inside the RTSP TCP connection, as a camera, server or restreamer that
/// falls behind drops them, replayed identically to every decoder at once (one session each):
/// every decoder hands out no picture that is not the clip's unmarked, all count the same
/// packets lost (the replay's), and direct NVDEC marks exactly the pictures the software path
/// marks. FFmpeg's CUDA hwaccel is held to the first two; how its marks differ from the
/// software path's is printed. Without a GPU only the software decoder runs (CI).
#[test]
fn tcp_interleaved_loss_marks_the_same_pictures_on_every_decoder() {
    let _g = serial();
    let gpu = need_gpu!(gpu_usable(), "a GPU with NVDEC");
    let (clip, es) = replay_clip();
    let refs: Vec<u64> = reference_nv12(&clip, 640, 360).iter().map(|f| fnv(f)).collect();
    let srv = ReplayServer::start(&es, 0.02, 21);
    assert_eq!(srv.access_units, refs.len(), "the elementary stream's pictures against the clip's");
    let mut decoders = vec![("software", NVCAM_DEVICE_CPU, NVCAM_DECODER_SOFTWARE)];
    if gpu {
        decoders.push(("nvdec", 0, NVCAM_DECODER_NVDEC));
        decoders.push(("ffmpeg-hw", 0, NVCAM_DECODER_FFMPEG_HW));
    }
    // All at once: one replay's time for all, and each session gets the same packets anyway.
    let runs: Vec<Replayed> = std::thread::scope(|s| {
        let handles: Vec<_> = decoders
            .iter()
            .map(|&(name, device, decoder)| {
                let (url, refs) = (srv.url(name), &refs);
                s.spawn(move || watch_replay(&url, device, decoder, refs))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let last = refs.len() as i64 - 1;
    let mut failures = Vec::new();
    for (&(name, _, decoder), r) in decoders.iter().zip(&runs) {
        let m = marked_of(r);
        let unmarked_wrong: Vec<i64> = r.frames.iter().filter(|(n, (_, same))| !same && !m.contains(n)).map(|(n, _)| *n).collect();
        let wrong = r.frames.values().filter(|(_, same)| !same).count();
        let bad_keys: Vec<i64> = r.frames.iter().filter(|(_, (f, same))| f & NVCAM_FRAME_KEYFRAME != 0 && !same).map(|(n, _)| *n).collect();
        println!(
            "replay {name}: {} pictures, {} marked, {wrong} wrong, {} wrong and unmarked {:?}, packets lost {} (dropped {} of {}), KEYFRAME on wrong pictures {:?}, reconnects {} ({} for losses)",
            r.frames.len(),
            m.len(),
            unmarked_wrong.len(),
            &unmarked_wrong[..unmarked_wrong.len().min(8)],
            r.stats.packets_lost,
            srv.dropped,
            srv.packets,
            bad_keys,
            r.stats.reconnects,
            r.stats.loss_reconnects
        );
        if std::env::var_os("NVCAM_INTEGRITY_VERBOSE").is_some() {
            println!("  marked {m:?}");
        }
        assert_eq!(r.stats.decoder, decoder, "{name}: the camera fell back to decoder {}", r.stats.decoder);
        // The last picture is never dropped from: its absence means the replay did not end.
        assert!(r.frames.contains_key(&last), "{name}: the replay's last picture ({last}) never came; server log:\n{}", srv.log());
        assert_eq!(r.stats.loss_reconnects, 0, "{name}: reconnected for a loss with the next IDR a second away");
        if !unmarked_wrong.is_empty() || !bad_keys.is_empty() {
            failures.push(format!("{name}: wrong and unmarked {unmarked_wrong:?}, KEYFRAME on wrong pictures {bad_keys:?}"));
        }
        if r.stats.packets_lost != srv.dropped as u64 {
            failures.push(format!("{name}: packets lost {} but the replay dropped {}", r.stats.packets_lost, srv.dropped));
        }
    }
    // Not vacuous: packets went, the software path marked pictures, and exact ones still came.
    let sw = marked_of(&runs[0]);
    assert!(srv.dropped > 0 && !sw.is_empty() && sw.len() < runs[0].frames.len(), "dropped {}, software marked {} of {}", srv.dropped, sw.len(), runs[0].frames.len());
    for (&(name, _, _), r) in decoders.iter().zip(&runs).skip(1) {
        let m = marked_of(r);
        // Marks are compared where both decoders handed the picture out: FFmpeg's software
        // decoder withholds some pictures after a damaged reference that NVDEC hands out
        // (marked; an unmarked wrong one fails above).
        let both = |n: &&i64| r.frames.contains_key(*n) && runs[0].frames.contains_key(*n);
        let only_gpu: Vec<_> = m.difference(&sw).filter(both).collect();
        let only_sw: Vec<_> = sw.difference(&m).filter(both).collect();
        let not_from_sw: Vec<_> = r.frames.keys().filter(|n| !runs[0].frames.contains_key(*n)).collect();
        let not_from_gpu: Vec<_> = runs[0].frames.keys().filter(|n| !r.frames.contains_key(*n)).collect();
        println!(
            "replay {name} against software: {} marked (software {}), only {name} {only_gpu:?}, only software {only_sw:?}; handed out by {name} alone {not_from_sw:?}, by software alone {not_from_gpu:?}",
            m.len(),
            sw.len()
        );
        if name == "nvdec" && !(only_gpu.is_empty() && only_sw.is_empty()) {
            failures.push(format!("nvdec marks other pictures than the software path: only nvdec {only_gpu:?}, only software {only_sw:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
