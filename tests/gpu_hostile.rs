//! Hostile streams on the GPU: mutated H.264, HEVC and JPEG streams (bit flips, dropped and
//! truncated packets, SPS that claim 2x2, 16384x16384 or a new size every picture, JPEG headers
//! that claim 65535x65535) go through NVDEC and nvJPEG while 2 healthy GPU cameras decode the
//! clean clip beside them. Nothing may leave a sticky CUDA error: the healthy cameras' frames and
//! a freshly opened camera's afterwards are bit-identical to the same decoder's decode of the
//! clean clip before the attacks, and every hostile camera ends (ENDED, or FAILED with a reason)
//! with no call past its deadline.
//!
//! Each test needs a GPU: without one it returns early with a note (CI has none); with
//! `REQUIRE_GPU=1` (set by the bundle's run.sh) a missing GPU fails it. nvJPEG runs where
//! `NVCAM_REQUIRE_NVJPEG=1` says the machine has it (it is a toolkit library). The mutated files
//! are made here (`cargo test --release --features test-hooks --test gpu_hostile -- --ignored
//! make_hostile_gpu_fixtures`, which `scripts/gpu-machine/gpu-bundle.sh` runs) and carried under
//! `$BUNDLE_WITH/fixtures`: the GPU machine has no encoders and no GStreamer.

mod common;
#[path = "support/lossy_udp.rs"]
mod lossy_udp;
#[path = "support/mutating_relay.rs"]
mod mutating_relay;

use common::*;
use nvcam::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn nvdec_usable() -> bool {
    gpu_usable() && nvcam::diag::nvcuvid_available()
}

fn ffmpeg(args: &[&str]) {
    let out = Command::new("ffmpeg").args(["-hide_banner", "-loglevel", "error", "-y"]).args(args).output().expect("ffmpeg CLI");
    assert!(out.status.success(), "ffmpeg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A fixture made once by `make` into a part file, then renamed (never half written).
fn made(name: &str, make: impl FnOnce(&Path)) -> PathBuf {
    let path = clip_dir().join(name);
    if !path.exists() {
        // The GPU machine has no encoders: the bundle carries what was made here.
        assert!(std::env::var_os("BUNDLE_WITH").is_none(), "{} is missing: gpu-bundle.sh makes it (make_hostile_gpu_fixtures)", path.display());
        let tmp = path.with_file_name(format!("part-{name}"));
        make(&tmp);
        std::fs::rename(&tmp, &path).unwrap();
    }
    path
}

/// The kit's fixtures folder (where [`clip`] puts its clips).
fn clip_dir() -> PathBuf {
    h264_clean().parent().unwrap().to_path_buf()
}

fn h264_clean() -> PathBuf {
    clip("hostile-gpu-h264-clean-320x240.mp4", "320x240", 300, "libx264", &["-preset", "veryfast", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0"])
}

fn hevc_clean() -> PathBuf {
    let mut a = vec!["-preset", "veryfast", "-g", "30", "-bf", "0"];
    a.extend(x265());
    clip("hostile-gpu-hevc-clean-320x240.mp4", "320x240", 300, "libx265", &a)
}

fn jpeg_clean() -> PathBuf {
    clip("hostile-gpu-jpeg-clean-320x240.mp4", "320x240", 90, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "3"])
}

/// `clean` through FFmpeg's noise bitstream filter (`bsf`: its options).
fn noisy(clean: &Path, name: &str, bsf: &str) -> PathBuf {
    made(name, |tmp| ffmpeg(&["-i", clean.to_str().unwrap(), "-c", "copy", "-bsf:v", &format!("noise={bsf}"), tmp.to_str().unwrap()]))
}

/// The NAL units of an Annex B stream (start codes removed).
fn nal_units(d: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= d.len() {
        if d[i] == 0 && d[i + 1] == 0 && d[i + 2] == 1 {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let mut e = if k + 1 < starts.len() { starts[k + 1] - 3 } else { d.len() };
            while e > s && d[e - 1] == 0 {
                e -= 1;
            }
            &d[s..e]
        })
        .collect()
}

/// The clean H.264 clip as an Annex B elementary stream whose NAL units `f` rewrites (the
/// picture's number and the unit; None drops it).
fn annexb_from_h264(name: &str, f: impl Fn(usize, &[u8]) -> Vec<Vec<u8>>) -> PathBuf {
    let clean = h264_clean();
    made(name, |tmp| {
        let es = tmp.with_extension("clean.h264");
        ffmpeg(&["-i", clean.to_str().unwrap(), "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", es.to_str().unwrap()]);
        let d = std::fs::read(&es).unwrap();
        std::fs::remove_file(&es).ok();
        let (mut out, mut picture) = (Vec::new(), 0usize);
        for nal in nal_units(&d) {
            let t = nal[0] & 0x1f;
            for n in f(picture, nal) {
                out.extend_from_slice(&[0, 0, 0, 1]);
                out.extend_from_slice(&n);
            }
            if t == 1 || t == 5 {
                picture += 1;
            }
        }
        std::fs::write(tmp, out).unwrap();
    })
}

/// An SPS of `w`x`h` and the PPS again (a decoder binds a PPS to the SPS it was parsed with)
/// before every picture (`size` of the picture's number), the clean ones kept where the stream
/// has them.
fn sps_attack(name: &str, size: impl Fn(usize) -> (u32, u32)) -> PathBuf {
    // The last SPS and PPS seen.
    type Sets = (Option<Vec<u8>>, Option<Vec<u8>>);
    let sets: Mutex<Sets> = Mutex::new((None, None));
    annexb_from_h264(name, |picture, nal| {
        let t = nal[0] & 0x1f;
        let mut sets = sets.lock().unwrap();
        match t {
            7 => sets.0 = Some(nal.to_vec()),
            8 => sets.1 = Some(nal.to_vec()),
            _ => {}
        }
        let mut v = Vec::new();
        if t == 1 || t == 5 {
            if let (Some(s), Some(p)) = (sets.0.as_ref(), sets.1.as_ref()) {
                let (w, h) = size(picture);
                v.push(mutating_relay::sps_with_size(s, w, h).expect("the clip's SPS is rewritable"));
                v.push(p.clone());
            }
        }
        v.push(nal.to_vec());
        v
    })
}

/// Every mutated stream, with the clean clip it came from and the decoder it goes through.
fn hostile_fixtures() -> Vec<(&'static str, PathBuf)> {
    let (h264, hevc, jpeg) = (h264_clean(), hevc_clean(), jpeg_clean());
    vec![
        ("h264 bit flips", noisy(&h264, "hostile-gpu-h264-flips.mp4", "amount=300")),
        ("h264 dropped packets", noisy(&h264, "hostile-gpu-h264-drops.mp4", "drop=not(mod(n\\,4))")),
        (
            "h264 truncated slices",
            annexb_from_h264("hostile-gpu-h264-truncated.h264", |p, nal| {
                let t = nal[0] & 0x1f;
                vec![if (t == 1 || t == 5) && p % 3 == 1 { nal[..nal.len() / 3].to_vec() } else { nal.to_vec() }]
            }),
        ),
        ("h264 sps 2x2", sps_attack("hostile-gpu-h264-sps-2x2.h264", |_| (2, 2))),
        ("h264 sps 16384x16384", sps_attack("hostile-gpu-h264-sps-16384.h264", |_| (16384, 16384))),
        ("h264 sps new size every picture", sps_attack("hostile-gpu-h264-sps-churn.h264", |n| (16 * (4 + n % 37) as u32, 16 * (3 + n % 23) as u32))),
        ("hevc bit flips", noisy(&hevc, "hostile-gpu-hevc-flips.mp4", "amount=300")),
        ("hevc dropped packets", noisy(&hevc, "hostile-gpu-hevc-drops.mp4", "drop=not(mod(n\\,4))")),
        ("jpeg bit flips", noisy(&jpeg, "hostile-gpu-jpeg-flips.mp4", "amount=200")),
        ("jpeg truncated and 65535x65535", jpeg_damaged(&jpeg)),
    ]
}

/// The clean JPEG clip with every third picture cut to a third of its bytes and every third
/// (from the second) claiming 65535x65535 in its SOF header.
fn jpeg_damaged(clean: &Path) -> PathBuf {
    made("hostile-gpu-jpeg-damaged.mp4", |tmp| {
        let dir = tmp.with_file_name(format!("part-hostile-jpeg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pattern = dir.join("f%03d.jpg");
        ffmpeg(&["-i", clean.to_str().unwrap(), "-c", "copy", "-f", "image2", pattern.to_str().unwrap()]);
        for n in 0..90 {
            let f = dir.join(format!("f{:03}.jpg", n + 1));
            let mut j = std::fs::read(&f).unwrap();
            if n % 3 == 0 && n > 0 {
                j.truncate(j.len() / 3);
            } else if n % 3 == 1 {
                if let Some(sof) = j.windows(2).position(|w| w == [0xFF, 0xC0]) {
                    j[sof + 5..sof + 9].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFF]);
                }
            }
            std::fs::write(&f, j).unwrap();
        }
        ffmpeg(&["-framerate", "30", "-i", pattern.to_str().unwrap(), "-c", "copy", "-f", "mp4", tmp.to_str().unwrap()]);
        std::fs::remove_dir_all(&dir).ok();
    })
}

/// Makes the fixtures here, where the encoders are; the bundle carries them.
#[test]
#[ignore]
fn make_hostile_gpu_fixtures() {
    hostile_fixtures();
}

/// One decoder's pictures of a clip, by their number (`seq`: raw elementary streams carry no
/// timestamps): timestamp, flags and pixel hash.
type Seen = BTreeMap<u64, (i64, u32, u64)>;

/// Decodes the whole of `clip` as fast as it goes; every call within its deadline. Returns the
/// pictures, the final state and the camera's error.
fn decode(clip: &Path, decoder: u32, paced: bool) -> (Seen, u32, String) {
    let mut o = options(NVCAM_OPEN_LOSSLESS | if paced { 0 } else { NVCAM_OPEN_NO_PACING });
    o.device = 0;
    o.decoder = decoder;
    o.integrity = NVCAM_INTEGRITY_MARK;
    o.open_timeout_ms = 5000;
    let cam = match open(clip.to_str().unwrap(), &o) {
        Ok(c) => c,
        // A stream refused at open (its first parameter sets over the limit) is an answer too.
        Err((code, msg)) => return (Seen::new(), NVCAM_STATE_FAILED, format!("{code}: {msg}")),
    };
    let mut seen = Seen::new();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let t = Instant::now();
        let r = get_frame(cam, 500);
        assert!(t.elapsed() < Duration::from_millis(1500), "{}: get_frame(500) took {:?}", clip.display(), t.elapsed());
        match r {
            Ok(f) => {
                let i = info(f).unwrap();
                seen.insert(i.seq, (i.pts_us, i.flags, fnv(&pixels(f).unwrap())));
                release(f).unwrap();
            }
            Err(_) => {
                let s = stats(cam).state;
                if s == NVCAM_STATE_ENDED || s == NVCAM_STATE_FAILED || Instant::now() > end {
                    break;
                }
            }
        }
    }
    let state = stats(cam).state;
    let error = cam_error(cam);
    let t = Instant::now();
    close(cam, 5000).unwrap();
    assert!(t.elapsed() < Duration::from_millis(5500), "{}: close took {:?}", clip.display(), t.elapsed());
    (seen, state, error)
}

const MARKS: u32 = NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS;

/// Pictures of `s` unmarked and unlike the clean decode's picture of the same timestamp.
fn unmarked_differences(s: &Seen, clean: &Seen) -> usize {
    let by_pts: BTreeMap<i64, u64> = clean.values().map(|&(p, _, h)| (p, h)).collect();
    s.values().filter(|&&(p, f, h)| f & MARKS == 0 && by_pts.get(&p) != Some(&h)).count()
}

/// The mutated streams through `decoder` beside 2 healthy cameras of the same decoder: no sticky
/// error (the healthy cameras' pictures and a fresh camera's afterwards equal the clean decode).
fn attacks_leave_the_decoder_usable(name: &str, decoder: u32, clean: &Path, attacks: &[(&str, PathBuf)]) {
    let before = decode(clean, decoder, false);
    assert_eq!(before.1, NVCAM_STATE_ENDED, "{name}: the clean clip: {}", before.2);
    assert!(!before.0.is_empty(), "{name}: the clean clip gave no picture");
    let reference = Arc::new(before.0);
    // The healthy cameras decode the clean clip at its pace, again and again while the attacks
    // run, each pass checked against the clean decode.
    let done = Arc::new(AtomicBool::new(false));
    let healthy: Vec<_> = (0..2)
        .map(|_| {
            let (clean, done) = (clean.to_path_buf(), done.clone());
            std::thread::spawn(move || {
                let mut passes = Vec::new();
                while passes.is_empty() || !done.load(Ordering::Acquire) {
                    passes.push(decode(&clean, decoder, true));
                }
                passes
            })
        })
        .collect();
    for (what, file) in attacks {
        let (seen, state, error) = decode(file, decoder, false);
        let marked = seen.values().filter(|(_, f, _)| f & MARKS != 0).count();
        // Reported, not asserted: a damaged stream can decode validly to other pictures (bit
        // flips), and the marks' parity with the CPU path is tests/gpu_integrity.rs's.
        let clean_pictures: std::collections::HashSet<u64> = reference.values().map(|&(_, _, h)| h).collect();
        let unmarked_wrong = seen.values().filter(|&&(_, f, h)| f & MARKS == 0 && !clean_pictures.contains(&h)).count();
        println!("{name}: {what}: {} pictures ({marked} marked, {unmarked_wrong} unmarked unlike every clean picture), state {state}, {error}", seen.len());
        assert!(
            state == NVCAM_STATE_ENDED || (state == NVCAM_STATE_FAILED && !error.is_empty()),
            "{name}: {what}: state {state} ({error:?}): neither ENDED nor FAILED with a reason"
        );
    }
    done.store(true, Ordering::Release);
    for (k, h) in healthy.into_iter().enumerate() {
        for (pass, (seen, state, error)) in h.join().unwrap().into_iter().enumerate() {
            let wrong = unmarked_differences(&seen, &reference) + seen.values().filter(|(_, f, _)| f & MARKS != 0).count();
            println!("{name}: healthy camera {k}, pass {pass}: {} pictures, {wrong} not exact, state {state} {error}", seen.len());
            assert_eq!(state, NVCAM_STATE_ENDED, "{name}: healthy camera {k}, pass {pass}: {error}");
            assert_eq!(seen.len(), reference.len(), "{name}: healthy camera {k}, pass {pass} missed pictures");
            assert_eq!(wrong, 0, "{name}: healthy camera {k}, pass {pass}: pictures not exact beside the attacks");
        }
    }
    let after = decode(clean, decoder, false);
    assert_eq!(after.1, NVCAM_STATE_ENDED, "{name}: a fresh camera after the attacks: {}", after.2);
    assert_eq!(after.0, *reference, "{name}: a fresh camera's pictures after the attacks differ from before");
    println!("{name}: a fresh camera after the attacks: {} pictures, exact", after.0.len());
}

#[test]
fn mutated_h264_and_hevc_through_nvdec_leave_no_sticky_error() {
    let _g = serial();
    if !need_gpu!(nvdec_usable(), "a GPU with NVDEC (libnvcuvid)") {
        return;
    }
    let all = hostile_fixtures();
    let pick = |prefix: &str| all.iter().filter(|(n, _)| n.starts_with(prefix)).cloned().collect::<Vec<_>>();
    attacks_leave_the_decoder_usable("nvdec h264", NVCAM_DECODER_NVDEC, &h264_clean(), &pick("h264"));
    attacks_leave_the_decoder_usable("nvdec hevc", NVCAM_DECODER_NVDEC, &hevc_clean(), &pick("hevc"));
}

#[test]
fn mutated_jpegs_through_nvjpeg_and_nvdec_leave_no_sticky_error() {
    let _g = serial();
    if !need_gpu!(nvdec_usable(), "a GPU with NVDEC (libnvcuvid)") {
        return;
    }
    let all = hostile_fixtures();
    let jpegs: Vec<_> = all.iter().filter(|(n, _)| n.starts_with("jpeg")).cloned().collect();
    attacks_leave_the_decoder_usable("nvdec jpeg", NVCAM_DECODER_NVDEC, &jpeg_clean(), &jpegs);
    // nvJPEG is a toolkit library: run where the machine is known to have it.
    if std::env::var("NVCAM_REQUIRE_NVJPEG").is_ok_and(|v| v == "1") {
        attacks_leave_the_decoder_usable("nvjpeg", NVCAM_DECODER_NVJPEG, &jpeg_clean(), &jpegs);
    }
}
