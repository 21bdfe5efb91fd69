//! A GPU's hardware decode sessions or its NVDEC engines running out, and cameras placed on "any
//! GPU", on a machine with an NVIDIA GPU (through the GPU bundle; without one each test returns
//! early with a note, and `REQUIRE_GPU=1` makes that a failure).
//!
//! The driver holds a fixed number of NVDEC decoders per GPU (288 on an H200 with driver
//! 580.159.04), whichever process holds them. Past it the cameras used to end FAILED
//! (`NVCAM_E_UNSUPPORTED`): direct NVDEC was refused, FFmpeg's hwaccel was refused the same way,
//! and that second refusal was the camera's error instead of a step to software + upload.

mod common;
use common::*;
use nvcam::*;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

fn config(max_hw: u32) -> nvcam_config {
    nvcam_config { struct_size: std::mem::size_of::<nvcam_config>() as u32, max_hw_decoders_per_device: max_hw, ..Default::default() }
}

fn small_clip() -> std::path::PathBuf {
    clip("gpu-h264-640x360.mp4", "640x360", 60, "libx264", &["-preset", "veryfast", "-g", "24", "-bf", "2"])
}

fn device_count() -> i32 {
    gpu_stats(-1).device_count as i32
}

/// Waits until `cam` has decoded a frame (or failed), and says whether it streams.
fn streams(cam: u64) -> bool {
    wait_until(Duration::from_secs(60), || {
        let s = stats(cam);
        s.frames_decoded > 0 || s.state == NVCAM_STATE_FAILED
    });
    let s = stats(cam);
    s.state == NVCAM_STATE_STREAMING && s.frames_decoded > 0
}

/// Takes `n` frames of `cam` and checks that each is one of FFmpeg's decoded pictures of the clip
/// byte for byte (a looped, paced camera skips pictures, so it is found by its hash); returns the
/// camera's device.
fn frames_exact(cam: u64, reference: &HashSet<u64>, n: usize, what: &str) -> i32 {
    let mut device = -1;
    for k in 0..n {
        let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("{what}: frame {k}: {e:?}"));
        let i = info(f).unwrap();
        assert_eq!(i.memory, NVCAM_MEMORY_DEVICE, "{what}: frame {k} is not in device memory");
        device = i.device;
        let got = fnv(&pixels(f).unwrap());
        assert!(reference.contains(&got), "{what}: frame {k} (pts {} us) is none of FFmpeg's pictures of the clip", i.pts_us);
        release(f).unwrap();
    }
    device
}

/// More cameras than the GPU has decode sessions, all AUTO: the ones past the driver's limit
/// stream in software + upload (none FAILED), their frames equal the NVDEC cameras' (FFmpeg's
/// decode), the limit is in the stats and remembered (later cameras go to software without a
/// failed create; a session freed goes to the next camera), and a camera that asked for NVDEC
/// at the limit gets `NVCAM_E_OUT_OF_MEMORY` naming the exhaustion.
#[test]
fn cameras_past_the_gpus_decode_sessions_stream_in_software() {
    if !need_gpu!(nvcam::diag::nvcuvid_available(), "libnvcuvid (direct NVDEC)") {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_WARN);
    let log = LogCapture::at(NVCAM_LOG_WARN);
    let clip = small_clip();
    let url = clip.to_str().unwrap();
    let reference: HashSet<u64> = reference_frames(&clip, 640, 360).iter().map(|f| fnv(f)).collect();
    assert_eq!(reference.len(), 60, "the clip's pictures all differ");
    let o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    let before = gpu_stats(0);
    assert_eq!(before.session_limit, 0, "no session refused yet: {before:?}");
    // Open in batches until the driver refused a session (the limit is read, not assumed: 288 on
    // an H200), then 8 more, which must not even try.
    let extra = 8;
    let mut cams = Vec::new();
    let mut limit = 0;
    let mut past = None;
    while past.is_none_or(|p| cams.len() < p + extra) {
        assert!(cams.len() < 2048, "no session refused after {} cameras", cams.len());
        let batch = if limit == 0 { 16 } else { 1 };
        let start = cams.len();
        for _ in 0..batch {
            cams.push(open(url, &o).unwrap_or_else(|e| panic!("camera {}: {e:?}", cams.len())));
        }
        for (k, &c) in cams[start..].iter().enumerate() {
            assert!(streams(c), "camera {} is {:?}: {}", start + k, stats(c).state, cam_error(c));
        }
        limit = gpu_stats(0).session_limit;
        if limit > 0 && past.is_none() {
            past = Some(cams.len());
            // Right after the refusal (a camera may try again past the limit 30 s after it): a
            // camera that asked for NVDEC is told why at once, with a code it can retry on.
            let exhausted = gpu_stats(0).sessions_exhausted;
            match open(url, &gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_NVDEC)) {
                Ok(c) => panic!("an NVDEC camera opened past the limit: {:?}", stats(c)),
                Err((code, msg)) => {
                    assert_eq!(code, NVCAM_E_OUT_OF_MEMORY, "{msg}");
                    assert!(msg.contains("exhausted"), "{msg}");
                }
            }
            assert!(gpu_stats(0).sessions_exhausted > exhausted, "the refusal at the limit is counted");
        }
    }
    let g = gpu_stats(0);
    let by: BTreeMap<u32, usize> = cams.iter().fold(BTreeMap::new(), |mut m, &c| {
        *m.entry(stats(c).decoder).or_default() += 1;
        m
    });
    let (nv, sw) = (by.get(&NVCAM_DECODER_NVDEC).copied().unwrap_or(0), by.get(&NVCAM_DECODER_SOFTWARE).copied().unwrap_or(0));
    println!("sessions: the driver refused a decoder at {limit} held; {} cameras: {nv} direct NVDEC, {sw} software + upload; {g:?}", cams.len());
    assert_eq!(nv + sw, cams.len(), "every camera on NVDEC or software + upload: {by:?}");
    assert_eq!(nv as u32, limit, "the NVDEC cameras are the sessions nvcam held when one was refused");
    assert_eq!(g.hw_decoders, limit);
    assert_eq!(g.upload_decoders as usize, sw);
    assert!(sw >= extra, "{sw} cameras in software + upload");
    assert!(g.decoder_load <= 100, "NVML's decoder load, percent (the driver ships NVML): {g:?}");
    // Each camera past the limit was counted once (a looped file may count again).
    assert!(g.sessions_exhausted >= sw as u64 && g.hw_fallbacks - before.hw_fallbacks >= sw as u64, "{g:?}");
    let lines = log.lines();
    assert!(lines.iter().any(|(_, m)| m.contains("decode sessions are exhausted")), "the refusal is named in the log");
    let ffmpeg_tried = lines.iter().filter(|(_, m)| m.contains("trying FFmpeg's CUDA hwaccel") || m.contains("FFmpeg CUDA hwaccel:")).count();
    assert_eq!(ffmpeg_tried, 0, "FFmpeg's hwaccel is not tried once sessions are exhausted");
    drop(log);
    // Frames equal FFmpeg's decode on both kinds of camera.
    let nv_cam = *cams.iter().find(|&&c| stats(c).decoder == NVCAM_DECODER_NVDEC).unwrap();
    let sw_cam = *cams.iter().rev().find(|&&c| stats(c).decoder == NVCAM_DECODER_SOFTWARE).unwrap();
    assert_eq!(frames_exact(nv_cam, &reference, 20, "NVDEC camera"), 0);
    assert_eq!(frames_exact(sw_cam, &reference, 20, "software + upload camera"), 0);
    // One NVDEC camera closes: its session goes to the next camera, which gets NVDEC.
    let i = cams.iter().position(|&c| c == nv_cam).unwrap();
    close(cams.swap_remove(i), 10_000).unwrap();
    let next = open(url, &o).unwrap();
    assert!(streams(next), "{}", cam_error(next));
    assert_eq!(stats(next).decoder, NVCAM_DECODER_NVDEC, "a freed session goes to the next camera");
    cams.push(next);
    for &c in &cams {
        let s = stats(c);
        assert!(s.state == NVCAM_STATE_STREAMING, "{s:?}: {}", cam_error(c));
        close(c, 10_000).unwrap();
    }
    println!("sessions: none FAILED; NVDEC and software + upload frames equal FFmpeg's decode; a freed session went to the next camera");
}

/// The 1080p H.264 clip: about 160 paced cameras of it fill an H200's NVDEC engines.
fn big_clip() -> std::path::PathBuf {
    clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &["-preset", "veryfast", "-g", "24", "-bf", "2"])
}

/// A session without a cap whose AUTO cameras may ask for half the NVDEC engines' learned
/// capacity, for the guard's life (None where there is no direct NVDEC: the test returns).
fn at_half_the_engines() -> Option<(Session, LoadLimit)> {
    if !need_gpu!(nvcam::diag::nvcuvid_available(), "libnvcuvid (direct NVDEC)") {
        return None;
    }
    let limit = LoadLimit::set("50");
    Some((Session::with(config(0), NVCAM_LOG_WARN), limit))
}

/// Every camera decodes at its rate over 3 s (30 fps; 29 allows for the pace's start and a loop)
/// and is streaming; `kinds` (their decoders) name the one that is not.
fn every_camera_keeps_its_rate(cams: &[u64], kinds: &[u32]) {
    let before: Vec<u64> = cams.iter().map(|&c| stats(c).frames_decoded).collect();
    std::thread::sleep(Duration::from_secs(3));
    for (k, &c) in cams.iter().enumerate() {
        let fps = (stats(c).frames_decoded - before[k]) as f64 / 3.0;
        assert!(fps >= 29.0, "camera {k} ({}) decoded {fps:.1} fps", kinds[k]);
        assert_eq!(stats(c).state, NVCAM_STATE_STREAMING);
    }
}

/// `NVCAM_DECODE_LOAD_LIMIT` for the guard's life (the library reads it at each admission).
struct LoadLimit;
impl LoadLimit {
    fn set(pct: &str) -> LoadLimit {
        std::env::set_var("NVCAM_DECODE_LOAD_LIMIT", pct);
        LoadLimit
    }
}
impl Drop for LoadLimit {
    fn drop(&mut self) {
        std::env::remove_var("NVCAM_DECODE_LOAD_LIMIT");
    }
}

/// AUTO cameras past what the GPU's NVDEC engines can decode (their demand, coded size at frame
/// rate, against the capacity learned from the engines' measured load; the limit lowered to 50 %
/// here so a few dozen cameras reach it) stream in software + upload with exact frames, none
/// FAILED, and every camera keeps its rate. Sessions used to be the only limit: 172 paced 1080p
/// H.264 cameras on an H200, whose engines decode about 160 of them, all got NVDEC and every one
/// was delivered at 24.7 to 28 fps.
#[test]
fn cameras_past_the_engines_capacity_stream_in_software() {
    let Some(_session) = at_half_the_engines() else { return };
    let clip = big_clip();
    let url = clip.to_str().unwrap();
    let reference: HashSet<u64> = reference_frames(&clip, 1920, 1080).iter().map(|f| fnv(f)).collect();
    let o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    let mut cams = Vec::new();
    // The counters are the process's: an earlier test's refusals are not this one's.
    let refused_before = gpu_stats(0).load_refusals;
    while gpu_stats(0).load_refusals == refused_before {
        assert!(cams.len() < 250, "no camera refused for the engines' load after {} cameras: {:?}", cams.len(), gpu_stats(0));
        let c = open(url, &o).unwrap_or_else(|e| panic!("camera {}: {e:?}", cams.len()));
        assert!(streams(c), "camera {} is {:?}: {}", cams.len(), stats(c).state, cam_error(c));
        cams.push(c);
    }
    let first_refused = cams.len() - 1;
    for _ in 0..4 {
        let c = open(url, &o).unwrap();
        assert!(streams(c), "{}", cam_error(c));
        cams.push(c);
    }
    let g = gpu_stats(0);
    let kinds: Vec<u32> = cams.iter().map(|&c| stats(c).decoder).collect();
    let nv = kinds.iter().filter(|&&k| k == NVCAM_DECODER_NVDEC).count();
    println!("load: the engines' demand reached {} % of the learned capacity at {nv} NVDEC cameras (NVML busy {} %); {} cameras, {} in software + upload; {g:?}",
        g.decoder_demand, g.decoder_load, cams.len(), cams.len() - nv);
    assert!(kinds[..first_refused].iter().all(|&k| k == NVCAM_DECODER_NVDEC), "cameras before the first refusal are on NVDEC: {kinds:?}");
    // The capacity is a measurement: one reading may let one more camera in near the limit.
    let after = kinds[first_refused..].iter().filter(|&&k| k == NVCAM_DECODER_SOFTWARE).count();
    assert!(kinds[first_refused] == NVCAM_DECODER_SOFTWARE && after >= 4, "the refused camera and the 4 after it decode in software + upload (one may not): {kinds:?}");
    assert!(g.load_refusals - refused_before >= 4, "{g:?}");
    assert!((40..=52).contains(&g.decoder_demand), "the hardware cameras ask about the limit (50 %) of the capacity: {g:?}");
    assert_eq!(g.hw_decoders as usize, nv);
    every_camera_keeps_its_rate(&cams, &kinds);
    assert_eq!(frames_exact(cams[0], &reference, 10, "NVDEC camera"), 0);
    assert_eq!(frames_exact(*cams.last().unwrap(), &reference, 10, "software + upload camera"), 0);
    for c in cams {
        close(c, 10_000).unwrap();
    }
    println!("load: none FAILED; every camera decoded at 29 fps or more; frames equal FFmpeg's decode");
}

/// Cameras opened all at once, more than the engines can take under the limit: before, every
/// one got NVDEC (each ticket was taken before the engines' load showed the cameras already let
/// in, and then every camera on the GPU slowed). Now they are let in at the pace decoders are
/// made, so the capacity is learned during the burst and the cameras past the limit decode in
/// software + upload, none FAILED, every camera at its rate.
#[test]
fn cameras_opened_together_past_the_engines_capacity_are_not_all_let_in() {
    let Some(_session) = at_half_the_engines() else { return };
    let clip = big_clip();
    let url = clip.to_str().unwrap();
    let o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    let refused_before = gpu_stats(0).load_refusals;
    // About 70 % of an H100's or H200's engines for this 1080p30 clip (about 160 cameras at 100 %).
    let n = 112;
    let t0 = std::time::Instant::now();
    let cams: Vec<u64> = (0..n).map(|i| open(url, &o).unwrap_or_else(|e| panic!("camera {i}: {e:?}"))).collect();
    for (i, &c) in cams.iter().enumerate() {
        assert!(streams(c), "camera {i} is {:?}: {}", stats(c).state, cam_error(c));
    }
    let all_up = t0.elapsed();
    // Settled: the last admissions' decoders have shown in the load.
    std::thread::sleep(Duration::from_secs(3));
    let g = gpu_stats(0);
    let kinds: Vec<u32> = cams.iter().map(|&c| stats(c).decoder).collect();
    let nv = kinds.iter().filter(|&&k| k == NVCAM_DECODER_NVDEC).count();
    let sw = kinds.iter().filter(|&&k| k == NVCAM_DECODER_SOFTWARE).count();
    println!("burst: {n} cameras opened together, all streaming after {all_up:?}: {nv} on NVDEC, {sw} in software + upload; demand {} % of the learned capacity (limit 50 %), NVML busy {} %, {} load refusals",
        g.decoder_demand, g.decoder_load, g.load_refusals);
    assert_eq!(nv + sw, n, "every camera on NVDEC or software + upload: {kinds:?}");
    assert!(g.decoder_demand != u32::MAX && g.decoder_demand <= 56, "the burst was let in past the limit (50 %): {g:?}");
    assert!(sw >= 20 && g.load_refusals - refused_before >= 20, "the cameras past the limit went to software + upload: {sw} of {n}; {g:?}");
    assert!(nv >= 40, "the cameras within the limit got NVDEC: {nv} of {n}; {g:?}");
    every_camera_keeps_its_rate(&cams, &kinds);
    // Both kinds of camera a burst makes deliver FFmpeg's pictures.
    let reference: HashSet<u64> = reference_frames(&clip, 1920, 1080).iter().map(|f| fnv(f)).collect();
    for kind in [NVCAM_DECODER_NVDEC, NVCAM_DECODER_SOFTWARE] {
        let c = cams[kinds.iter().position(|&k| k == kind).unwrap()];
        assert_eq!(frames_exact(c, &reference, 10, if kind == NVCAM_DECODER_NVDEC { "NVDEC camera" } else { "software + upload camera" }), 0);
    }
    for c in cams {
        close(c, 10_000).unwrap();
    }
    println!("burst: none FAILED; every camera decoded at 29 fps or more");
}

/// "Any GPU" with the configured cap: each camera goes to the GPU with the most sessions left, so
/// the hardware decoders fill every GPU before any camera decodes in software; those that do are
/// spread too, and each frame is on its camera's GPU. Runs on one GPU as well (then the cap alone
/// sends cameras to software).
#[test]
fn any_gpu_fills_every_gpus_sessions_before_software() {
    if !need_gpu!() {
        return;
    }
    let n = device_count();
    let cap = 2;
    let _s = Session::with(config(cap), NVCAM_LOG_INFO);
    let url = small_clip();
    let mut o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    o.device = NVCAM_DEVICE_ANY;
    let total = (n as u32 * cap + n as u32) as usize;
    let cams: Vec<u64> = (0..total).map(|_| open(url.to_str().unwrap(), &o).unwrap()).collect();
    let mut per: BTreeMap<(i32, u32), u32> = BTreeMap::new();
    for &c in &cams {
        assert!(streams(c), "{}", cam_error(c));
        let s = stats(c);
        let f = get_frame(c, 10_000).unwrap();
        assert_eq!(info(f).unwrap().device, s.device, "a frame is on its camera's GPU");
        release(f).unwrap();
        *per.entry((s.device, s.decoder)).or_default() += 1;
    }
    println!("any GPU, {n} GPU(s), cap {cap}: (device, decoder) → cameras {per:?}");
    let hw = if nvcam::diag::nvcuvid_available() { NVCAM_DECODER_NVDEC } else { NVCAM_DECODER_FFMPEG_HW };
    for d in 0..n {
        assert_eq!(per.get(&(d, hw)).copied().unwrap_or(0), cap, "GPU {d}'s sessions (cap {cap}) all used: {per:?}");
        assert_eq!(per.get(&(d, NVCAM_DECODER_SOFTWARE)).copied().unwrap_or(0), 1, "one software camera on each GPU: {per:?}");
    }
    for c in cams {
        close(c, 10_000).unwrap();
    }
}

/// Two GPUs, "any GPU": cameras opened together split evenly (within one), and a camera's
/// reconnect to the same stream stays on its GPU. Skips (and says why) with fewer than two GPUs.
#[test]
fn any_gpu_splits_cameras_evenly_across_gpus() {
    if !need_gpu!() {
        return;
    }
    if !need_two_gpus(test_name!()) {
        return;
    }
    let n = device_count();
    let _s = Session::new();
    let url = small_clip();
    let mut o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    o.device = NVCAM_DEVICE_ANY;
    let k = 8 * n as usize;
    let cams: Vec<u64> = (0..k).map(|_| open(url.to_str().unwrap(), &o).unwrap()).collect();
    let mut per = vec![0usize; n as usize];
    for &c in &cams {
        assert!(streams(c), "{}", cam_error(c));
        per[stats(c).device as usize] += 1;
    }
    println!("any GPU: {k} cameras on {n} GPUs: {per:?}");
    let (lo, hi) = (*per.iter().min().unwrap(), *per.iter().max().unwrap());
    assert!(hi - lo <= 1, "uneven split {per:?}");
    // A rewound file is the same stream: a looped camera stays where it is.
    let c = cams[0];
    let d = stats(c).device;
    let seq0 = stats(c).frames_decoded;
    assert!(wait_until(Duration::from_secs(10), || stats(c).frames_decoded > seq0 + 70), "the looped camera went past its clip's end");
    assert_eq!(stats(c).device, d, "a streaming camera never moves");
    for c in cams {
        close(c, 10_000).unwrap();
    }
}

/// The first frame of `cam` whose width is `w` (its stream after a reconnect), within 20 s: its
/// device.
#[cfg(unix)] // its one test is Unix-only (unused in the Windows build)
fn device_of_first_frame(cam: u64, w: u32) -> i32 {
    let mut device = None;
    assert!(
        wait_until(Duration::from_secs(20), || {
            if let Ok(f) = get_frame(cam, 200) {
                let i = info(f).unwrap();
                release(f).unwrap();
                if i.width == w {
                    device = Some(i.device);
                }
            }
            device.is_some()
        }),
        "no {w}-wide frame: {:?} {}",
        stats(cam),
        cam_error(cam)
    );
    device.unwrap()
}

/// Two GPUs, "any GPU": a reconnect whose stream changed (the file behind the camera's path
/// replaced by a clip of another size) is placed afresh, on the GPU with more sessions left, and
/// its frames come from there; a reconnect to the same stream stays where it is even when the
/// other GPU has more left. Skips (and says why) with fewer than two GPUs.
#[cfg(unix)]
#[test]
fn any_gpu_places_a_changed_stream_afresh_and_keeps_the_same_one() {
    if !need_gpu!() {
        return;
    }
    if !need_two_gpus(test_name!()) {
        return;
    }
    let _s = Session::new();
    let small = small_clip();
    let big = big_clip();
    let link = std::env::temp_dir().join(format!("nvcam-any-gpu-{}.mp4", std::process::id()));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&small, &link).unwrap();
    let mut o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    o.device = NVCAM_DEVICE_ANY;
    // A on GPU 0, B on GPU 1, C on GPU 0 again (a tie goes to the lower ordinal).
    let a = open(link.to_str().unwrap(), &o).unwrap();
    let others: Vec<u64> = (0..2).map(|_| open(small.to_str().unwrap(), &o).unwrap()).collect();
    let first = device_of_first_frame(a, 640);
    let held: Vec<i32> = others.iter().map(|&c| device_of_first_frame(c, 640)).collect();
    println!("any GPU: A on GPU {first}, the others on {held:?}");
    assert_eq!((first, held.as_slice()), (0, &[1, 0][..]), "cameras opened one after another alternate");
    // A's stream changes: placed afresh, on GPU 1 (GPU 0 holds C's session and A's parked one).
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&big, &link).unwrap();
    assert_eq!(nvcam_camera_reconnect(a), NVCAM_OK);
    let moved = device_of_first_frame(a, 1920);
    assert_eq!(moved, 1, "a changed stream goes to the GPU with more sessions left");
    // The same stream again: A stays on GPU 1, though GPU 0 now has more sessions left.
    let r0 = stats(a).reconnects;
    assert_eq!(nvcam_camera_reconnect(a), NVCAM_OK);
    assert!(wait_until(Duration::from_secs(20), || stats(a).reconnects > r0), "{}", cam_error(a));
    let seq = stats(a).frames_decoded;
    assert!(wait_until(Duration::from_secs(20), || stats(a).frames_decoded > seq + 5), "{}", cam_error(a));
    assert_eq!(device_of_first_frame(a, 1920), 1, "a reconnect to the same stream does not move the camera");
    assert_eq!(stats(a).decoder, NVCAM_DECODER_NVDEC);
    println!("any GPU: A's changed stream moved it to GPU 1; a reconnect to the same stream kept it there");
    for c in others.into_iter().chain([a]) {
        close(c, 10_000).unwrap();
    }
    let _ = std::fs::remove_file(&link);
}
