//! One camera's reconnects never hold up another camera, and frames say when their data arrived
//! and how long decoding took (CPU path; `tests/gpu.rs` has the GPU version of the storm).

mod common;
use common::*;
use nvcam::*;
use std::time::Duration;

/// Inter-frame gaps a consumer sees on `cam` until `stop`, in milliseconds.
#[test]
fn reconnect_storm_never_stalls_steady_cameras() {
    init();
    const FPS: f64 = 30.0;
    let url = "testsrc://320x240@30";
    let steady: Vec<u64> = (0..6).map(|_| open(url, &options(0)).unwrap()).collect();
    let churn: Vec<u64> = (0..4).map(|_| open(url, &options(0)).unwrap()).collect();
    // Warm up: every camera delivers.
    for &c in steady.iter().chain(&churn) {
        release(get_frame(c, 5000).unwrap()).unwrap();
    }
    let Churned { mut gaps, failures, reconnects: r } = churn_scenario(&steady, &churn, 2000, Duration::from_millis(20), Duration::from_secs(8));
    for f in failures {
        assert_eq!(f, 0, "a steady camera's get_frame(1000) failed");
    }
    let n = gaps.len();
    let (p50, p99, max) = (percentile(&mut gaps, 0.5), percentile(&mut gaps, 0.99), percentile(&mut gaps, 1.0));
    let fps = n as f64 / 6.0 / 8.0;
    eprintln!("steady: {n} gaps, {fps:.1} fps each, gap p50 {p50:.1} ms p99 {p99:.1} ms max {max:.1} ms; {r} reconnects of the others");
    assert!(r >= 20, "the churning cameras reconnected only {r} times");
    assert!(p99 <= 3.0 * 1e3 / FPS, "steady cameras' gap p99 {p99:.1} ms > 3 frame intervals (p50 {p50:.1}, max {max:.1})");
    assert!(fps >= FPS * 0.9, "steady cameras at {fps:.1} fps");
    for &c in steady.iter().chain(&churn) {
        close(c, 3000).unwrap();
    }
}

#[test]
fn frames_carry_receive_time_and_decode_latency() {
    init();
    let cam = open("testsrc://160x120@30", &options(0)).unwrap();
    for _ in 0..20 {
        let f = get_frame(cam, 5000).unwrap();
        let i = info(f).unwrap();
        assert_eq!(i.time_source, NVCAM_TIME_RECEIVE, "the test source has no capture clock");
        assert!(i.capture_ns <= i.wallclock_ns && i.wallclock_ns - i.capture_ns < 1_000_000_000, "capture {} decoded {}", i.capture_ns, i.wallclock_ns);
        release(f).unwrap();
    }
    let s = stats(cam);
    let file = clip("h264_short_96x64.mp4", "96x64", 5, "libx264", &[]);
    let fcam = open(file.to_str().unwrap(), &options(NVCAM_OPEN_LOOP)).unwrap();
    let f = get_frame(fcam, 5000).unwrap();
    assert_eq!(info(f).unwrap().time_source, NVCAM_TIME_RECEIVE, "a file has no capture clock");
    release(f).unwrap();
    close(fcam, 2000).unwrap();
    assert!(s.decode_latency_p50_us > 0 && s.decode_latency_p50_us <= s.decode_latency_p99_us, "{s:?}");
    // Pacing waits do not count: a 30 fps source decodes in far less than a frame interval.
    assert!(s.decode_latency_p99_us < 33_000, "{s:?}");
    close(cam, 2000).unwrap();
}
