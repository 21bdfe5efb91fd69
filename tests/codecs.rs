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
/// An MP4 whose video sample entry is H.266/VVC's (`vvc1`): FFmpeg 5.1 knows no VVC, gives the
/// stream codec id none, and the camera failed with "codec none cannot be decoded", which does
/// not say what the stream is. It must fail at once (synchronous open and ASYNC alike) with
/// NVCAM_E_UNSUPPORTED naming H.266/VVC, and not retry. The file is an HEVC MP4 whose `hvc1`
/// sample entry is rewritten to `vvc1` (no VVC encoder here): the demuxer sees the tag only.
#[test]
fn vvc_stream_fails_at_once_naming_h266() {
    init();
    let hevc = clip("hevc_hvc1_160x120.mp4", "160x120", 10, "libx265", &[&x265()[..], &["-tag:v", "hvc1"]].concat());
    let mut bytes = std::fs::read(&hevc).unwrap();
    let at: Vec<usize> = bytes.windows(4).enumerate().filter(|(_, w)| *w == b"hvc1").map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "one hvc1 sample entry in {}", hevc.display());
    bytes[at[0]..at[0] + 4].copy_from_slice(b"vvc1");
    let vvc = hevc.with_file_name("vvc1_160x120.mp4");
    std::fs::write(&vvc, &bytes).unwrap();
    let url = vvc.to_str().unwrap();
    let t0 = Instant::now();
    let (code, msg) = open(url, &options(0)).unwrap_err();
    assert_eq!(code, NVCAM_E_UNSUPPORTED, "{msg}");
    assert!(msg.contains("H.266/VVC") && msg.contains("vvc1"), "{msg}");
    assert!(t0.elapsed() < Duration::from_secs(3), "the open took {:?}", t0.elapsed());

    let mut o = options(NVCAM_OPEN_ASYNC);
    o.open_timeout_ms = 5000;
    let cam = open(url, &o).unwrap();
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "FAILED: {:?}", stats(cam).state);
    std::thread::sleep(Duration::from_millis(1000));
    let s = stats(cam);
    assert_eq!((s.last_error_code, s.reconnects), (NVCAM_E_UNSUPPORTED, 0), "failed once, not retried");
    assert!(cam_error(cam).contains("H.266/VVC"), "{}", cam_error(cam));
    close(cam, 2000).unwrap();
}

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
