//! Hostile cameras at the protocol level: a scripted server (tests/support/hostile_server.py)
//! answers one camera with a single attack (huge or malformed RTSP answers, endless 401s and
//! redirects, silence, one byte a second; broken HTTP MJPEG), while 3 healthy cameras stream
//! beside it. Each case checks that the host survives it: no call blocked past its deadline,
//! memory bounded, no busy loop in the hostile camera's thread, the healthy cameras at their
//! rate, and the hostile camera either FAILED with a reason or reconnecting no faster than its
//! back-off. CPU path.
//!
//! The cameras, the bounds and their checks are the kit's (`tests/common/hostile.rs`).
// The hostile kit (tests/common/hostile.rs) reads /proc and runs Linux processes: Linux only.
#![cfg(target_os = "linux")]

mod common;
use common::*;
use nvcam::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long each case watches the hostile camera.
const WINDOW: Duration = Duration::from_secs(4);
const CONNS_PER_ATTEMPT: usize = 2;

/// Runs `url` (served by `server`) as the hostile camera for [`WINDOW`] beside 3 healthy cameras.
fn beside_healthy(case: &str, url: &str, server: &Hostile, conns_per_attempt: usize) -> Seen {
    beside_three_healthy(HostileCase {
        name: case,
        url,
        ffmpeg: "",
        window: WINDOW,
        conns: &|| server.conns.load(Ordering::Relaxed),
        conns_per_attempt,
        on_tick: &mut |_| {},
        on_frame: &mut |_, _| {},
    })
}

fn rtsp_case(mode: &str) -> Seen {
    let _g = serial();
    let server = Hostile::start(mode, None);
    let url = format!("rtsp://127.0.0.1:{}/cam", server.port);
    beside_healthy(mode, &url, &server, CONNS_PER_ATTEMPT)
}

fn mjpeg_case(mode: &str) -> Seen {
    let _g = serial();
    let jpg = jpeg_image();
    let server = Hostile::start(mode, Some(&jpg));
    let url = format!("http://127.0.0.1:{}/video.mjpg", server.port);
    beside_healthy(mode, &url, &server, CONNS_PER_ATTEMPT)
}

/// One real JPEG image (320x240, from FFmpeg's encoder).
fn jpeg_image() -> std::path::PathBuf {
    clip("hostile-320x240.jpg", "320x240", 1, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "5", "-f", "image2"])
}

/// A 1 MiB header line in an RTSP answer could be buffered whole (or grow a buffer per line).
#[test]
fn rtsp_a_one_megabyte_answer_header_is_refused_without_harm() {
    let seen = rtsp_case("big-header");
    assert!(seen.error.contains("over nvcam's limits"), "the reason names the limit: {}", seen.error);
}

/// A 10 MiB SDP could be kept whole, or parsed slowly enough to hold up the host.
#[test]
fn rtsp_a_ten_megabyte_sdp_is_refused_without_harm() {
    let seen = rtsp_case("big-sdp");
    assert!(seen.error.contains("over nvcam's limits"), "the reason names the limit: {}", seen.error);
}

/// A malformed SDP (broken m=, rtpmap and fmtp lines) could crash a parser or leave a stream
/// half set up.
#[test]
fn rtsp_a_malformed_sdp_fails_the_camera_or_retries_at_its_backoff() {
    rtsp_case("bad-sdp");
}

/// A camera that answers every request 401 with a new nonce could be asked again and again
/// at the speed of loopback; the password must not reach the camera's error either.
#[test]
fn rtsp_endless_401s_with_new_nonces_are_not_a_loop() {
    let _g = serial();
    let server = Hostile::start("auth-loop", None);
    let url = format!("rtsp://admin:hunter2secret@127.0.0.1:{}/cam", server.port);
    let seen = beside_healthy("auth-loop", &url, &server, CONNS_PER_ATTEMPT);
    assert!(!seen.error.contains("hunter2secret"), "the password reached the error text: {}", seen.error);
}

/// A redirect to the next path, for ever, could be followed for ever.
#[test]
fn rtsp_an_endless_redirect_loop_is_not_followed_for_ever() {
    let _g = serial();
    let server = Hostile::start("redirect-loop", None);
    let url = format!("rtsp://127.0.0.1:{}/cam", server.port);
    let seen = beside_healthy("redirect-loop", &url, &server, CONNS_PER_ATTEMPT * 9);
    assert!(seen.error.contains("redirected more than 8 times"), "the reason names the loop: {}", seen.error);
}

/// A camera that accepts the connection and never answers must cost only the open's deadline.
#[test]
fn rtsp_a_server_that_never_answers_costs_only_the_open_deadline() {
    rtsp_case("silent");
}

/// A camera that answers one byte a second keeps every read alive: only the open's deadline
/// ends it.
#[test]
fn rtsp_an_answer_at_one_byte_a_second_is_cut_at_the_open_deadline() {
    rtsp_case("slow");
}

/// A multipart stream without a boundary must not be read as one endless part.
#[test]
fn mjpeg_a_stream_without_a_boundary_is_refused_without_harm() {
    mjpeg_case("mjpeg-no-boundary");
}

/// A part that claims Content-Length 2^62 must not be allocated.
#[test]
fn mjpeg_a_content_length_of_two_to_the_62_is_not_allocated() {
    mjpeg_case("mjpeg-huge-length");
}

/// A JPEG whose header claims 65535x65535 must get no decoder or pool for that size (over the
/// default picture limit, 8192 each way).
#[test]
fn mjpeg_a_jpeg_claiming_65535x65535_gets_no_pool() {
    let seen = mjpeg_case("mjpeg-65535");
    assert!(seen.frames.is_empty(), "a picture of the claimed size was delivered");
    let s = seen.stats;
    assert_eq!((s.pool_slots_total, s.bytes_held, s.frames_decoded), (0, 0, 0), "no pool, nothing decoded: {s:?}");
}

/// Truncated JPEGs could be delivered as if whole: every picture that comes is marked.
#[test]
fn mjpeg_truncated_jpegs_are_delivered_marked_or_not_at_all() {
    let seen = mjpeg_case("mjpeg-truncated");
    let unmarked = seen.frames.iter().filter(|&&f| f & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) == 0).count();
    assert_eq!(unmarked, 0, "{unmarked} of {} truncated pictures came unmarked (state {})", seen.frames.len(), seen.state);
}
