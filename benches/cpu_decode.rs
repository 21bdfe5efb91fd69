//! CPU-path throughput: a 1080p H.264 clip decoded by nvcam (every frame delivered into the pool and
//! taken by the host) next to `ffmpeg -i clip -f null -` on the same machine, same run.
//!
//!   cargo bench --bench cpu_decode [-- --frames N --threads T]
//!
//! Needs the ffmpeg CLI (Debian's `ffmpeg`) to encode the clip and for the baseline.

use nvcam::*;
use std::ffi::CString;
use std::process::Command;
use std::time::Instant;

fn main() {
    let mut frames = 600u32;
    let mut threads = 0u32;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--frames" => frames = args.next().and_then(|v| v.parse().ok()).unwrap_or(frames),
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).unwrap_or(threads),
            _ => {}
        }
    }
    let dir = std::env::temp_dir().join("nvcam-bench");
    std::fs::create_dir_all(&dir).unwrap();
    let clip = dir.join(format!("h264_1080p30_{frames}.mp4"));
    if !clip.exists() {
        let st = Command::new("ffmpeg")
            .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30"])
            .args(["-frames:v", &frames.to_string(), "-pix_fmt", "yuv420p", "-c:v", "libx264", "-preset", "veryfast"])
            .args(["-b:v", "4M", "-g", "60", "-bf", "2"])
            .arg(&clip)
            .status()
            .expect("ffmpeg CLI");
        assert!(st.success());
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("clip: {} ({frames} frames, 1920x1080 H.264 4 Mbit/s); {cpus} CPU cores", clip.display());

    // Baseline: FFmpeg's own decoder with nothing after it.
    let t0 = Instant::now();
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-hide_banner", "-loglevel", "error"]);
    if threads > 0 {
        cmd.args(["-threads", &threads.to_string()]);
    }
    let st = cmd.arg("-i").arg(&clip).args(["-f", "null", "-"]).status().unwrap();
    assert!(st.success());
    let ff = frames as f64 / t0.elapsed().as_secs_f64();

    // nvcam: same decoder, plus NV12 conversion into the pool and hand-over to the host.
    unsafe {
        assert_eq!(nvcam_init(std::ptr::null()), NVCAM_OK);
        let mut o: nvcam_camera_options = std::mem::zeroed();
        nvcam_camera_options_init(&mut o);
        o.device = NVCAM_DEVICE_CPU;
        o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
        o.decode_threads = threads;
        let url = CString::new(clip.to_str().unwrap()).unwrap();
        let mut cam = 0;
        let t0 = Instant::now();
        assert_eq!(nvcam_camera_open(url.as_ptr(), &o, &mut cam), NVCAM_OK);
        let mut got = 0;
        while got < frames {
            let mut f = 0;
            assert_eq!(nvcam_camera_get_frame(cam, 10_000, &mut f), NVCAM_OK);
            nvcam_frame_release(f);
            got += 1;
        }
        let nv = frames as f64 / t0.elapsed().as_secs_f64();
        nvcam_camera_close(cam, 2000);
        nvcam_shutdown(5000);
        println!("{:<44} {:>8.1} fps", "ffmpeg -i clip -f null - (decode only)", ff);
        println!("{:<44} {:>8.1} fps ({:.0}% of ffmpeg)", "nvcam CPU path (decode + NV12 + hand-over)", nv, nv / ff * 100.0);
    }
}
