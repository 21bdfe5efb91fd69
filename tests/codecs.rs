//! Every codec of nvcam's FFmpeg build (the decoder list in scripts/build/ffmpeg-common.sh,
//! docs/windows.md) decodes on the CPU path exactly as the ffmpeg CLI does, and a stream no
//! decoder of the path takes fails once, clearly, instead of reconnecting for ever. Each test is
//! named for the failure it prevents. (h264, hevc and ffv1 are in tests/core.rs.)

mod common;
use common::*;
use nvcam::*;
use std::time::{Duration, Instant};

/// FFmpeg 5.1's own AV1 decoder only drives a hardware accelerator: on the CPU path every packet
/// failed with ENOSYS and the camera reconnected about 3 times a second for ever. libdav1d, linked
/// into nvcam's libavcodec, decodes it.
#[test]
fn av1_decodes_on_the_cpu_path() {
    let c = clip("av1_160x120.mkv", "160x120", 20, "libaom-av1", &["-cpu-used", "8", "-row-mt", "1", "-g", "10"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn vp8_decodes_on_the_cpu_path() {
    let c = clip("vp8_160x120.mkv", "160x120", 20, "libvpx", &["-deadline", "realtime", "-g", "10"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn vp9_decodes_on_the_cpu_path() {
    let c = clip("vp9_160x120.mkv", "160x120", 20, "libvpx-vp9", &["-deadline", "realtime", "-cpu-used", "8", "-g", "10"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn mpeg4_decodes_on_the_cpu_path() {
    // B-frames: decode order differs from display order.
    let c = clip("mpeg4_160x120.mp4", "160x120", 20, "mpeg4", &["-bf", "2", "-g", "10"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn mpeg2video_decodes_on_the_cpu_path() {
    let c = clip("mpeg2_160x120.ts", "160x120", 20, "mpeg2video", &["-bf", "2", "-g", "10"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn mjpeg_decodes_on_the_cpu_path() {
    // The later -pix_fmt wins: JPEG's full-range 4:2:0.
    let c = clip("mjpeg_160x120.avi", "160x120", 20, "mjpeg", &["-pix_fmt", "yuvj420p"]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

#[test]
fn rawvideo_decodes_on_the_cpu_path() {
    let c = clip("rawvideo_160x120.avi", "160x120", 20, "rawvideo", &[]);
    assert_matches_ffmpeg(&c, 160, 120, 20);
}

/// A stream whose codec the build demuxes but cannot decode (MPEG-1 video in Matroska: no
/// mpeg1video decoder) must not open, fail at its first packet and reconnect for ever: it ends
/// FAILED with NVCAM_E_UNSUPPORTED naming the codec and the path, within the open timeout, logged
/// once.
#[test]
fn undecodable_codec_fails_once_naming_codec_and_path() {
    init();
    let c = clip("mpeg1_160x120.mkv", "160x120", 10, "mpeg1video", &[]);
    let url = c.to_str().unwrap();
    // Synchronous: the open says why.
    let (code, msg) = open(url, &options(0)).unwrap_err();
    assert_eq!(code, NVCAM_E_UNSUPPORTED, "{msg}");
    assert!(msg.contains("mpeg1video") && msg.contains("CPU path"), "{msg}");

    let log = LogCapture::start();
    let mut o = options(NVCAM_OPEN_ASYNC);
    o.open_timeout_ms = 5000;
    let t0 = Instant::now();
    let cam = open(url, &o).unwrap();
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "FAILED within the open timeout: {:?}", stats(cam).state);
    let took = t0.elapsed();
    // Long enough for a retry storm (3 a second) to show.
    std::thread::sleep(Duration::from_millis(1500));
    let s = stats(cam);
    assert_eq!((s.state, s.last_error_code, s.reconnect_attempt, s.reconnects), (NVCAM_STATE_FAILED, NVCAM_E_UNSUPPORTED, 0, 0), "failed once, not retried");
    let why = cam_error(cam);
    assert!(why.contains("mpeg1video") && why.contains("CPU path"), "{why}");
    close(cam, 2000).unwrap();
    let name = c.file_name().unwrap().to_str().unwrap();
    let loud: Vec<_> = log
        .lines()
        .into_iter()
        .filter(|(level, m)| *level <= NVCAM_LOG_WARN && (m.contains(name) || m.contains("mpeg1video")))
        .collect();
    assert_eq!(loud.len(), 1, "one log line: {loud:#?}");
    println!("undecodable mpeg1video: FAILED after {took:?}: {why}");
}
