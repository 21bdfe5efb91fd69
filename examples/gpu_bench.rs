//! GPU-path throughput: N cameras on one GPU, each decoding a looped 1080p H.264 file as fast as
//! it can (NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOOP), with NVDEC and the copy into its device pool,
//! and a host thread per camera taking frames. Prints decode+copy fps (frames copied into pools,
//! from the GPU counters), VRAM per camera (cuMemGetInfo before and while streaming), and the
//! counters that must stay flat in steady state.
//!
//!   gpu_bench CLIP [--seconds S] [--cams 1,16] [--device D] [--decoder auto|sw]
//!
//! Compare with `ffmpeg-nvdec -hwaccel cuda -hwaccel_output_format cuda -i CLIP -autoscale 0 -f null -`
//! run in the same call (scripts/gpu-machine/gpu-device.sh does both).

// The tests' CUDA set-up; an example uses part of it.
#[allow(dead_code)]
#[path = "../tests/common/cuda.rs"]
mod cuda;
use cuda::{ck, own_context};
use cudarc::driver::sys;
use nvcam::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn mem_free() -> i64 {
    let (mut f, mut t) = (0usize, 0usize);
    ck("cuMemGetInfo", unsafe { sys::cuMemGetInfo_v2(&mut f, &mut t) });
    f as i64
}

fn gpu_stats(device: i32) -> nvcam_gpu_stats {
    let mut s = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
    assert_eq!(unsafe { nvcam_gpu_stats(device, &mut s) }, NVCAM_OK);
    s
}

fn cam_stats(cam: u64) -> nvcam_camera_stats {
    let mut s = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
    assert_eq!(unsafe { nvcam_camera_stats(cam, &mut s) }, NVCAM_OK);
    s
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clip = args.next().expect("usage: gpu_bench CLIP [--seconds S] [--cams 1,16] [--device D] [--decoder auto|sw]");
    let (mut seconds, mut counts, mut device, mut decoder) = (10.0f64, vec![1usize, 16], 0i32, NVCAM_DECODER_AUTO);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--seconds" => seconds = v.parse().expect("--seconds"),
            "--cams" => counts = v.split(',').map(|x| x.parse().expect("--cams")).collect(),
            "--device" => device = v.parse().expect("--device"),
            "--decoder" => decoder = if v == "sw" { NVCAM_DECODER_SOFTWARE } else { NVCAM_DECODER_AUTO },
            _ => panic!("unknown argument {a}"),
        }
    }
    // A context of our own, only to read device-wide free memory.
    let host_ctx = unsafe {
        let (dev, c) = own_context(device);
        let mut name = [0 as std::ffi::c_char; 128];
        sys::cuDeviceGetName(name.as_mut_ptr(), 128, dev);
        println!("device {device}: {}", std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy());
        c
    };
    unsafe {
        nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_WARN);
        assert_eq!(nvcam_init(std::ptr::null()), NVCAM_OK);
    }
    let url = CString::new(clip.clone()).unwrap();
    println!("clip: {clip}; {seconds} s per run after warm-up");
    let open = |flags: u32| {
        let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
        unsafe { nvcam_camera_options_init(&mut o) };
        o.device = device;
        o.decoder = decoder;
        o.flags = flags;
        let mut cam = 0;
        assert_eq!(unsafe { nvcam_camera_open(url.as_ptr(), &o, &mut cam) }, NVCAM_OK, "open");
        cam
    };
    // The library's context (retained on first use, kept until shutdown) is not per camera:
    // create it first with one short-lived camera and measure it on its own.
    let before_ctx = mem_free();
    let c = open(NVCAM_OPEN_LOOP);
    let mut f = 0;
    assert_eq!(unsafe { nvcam_camera_get_frame(c, 10_000, &mut f) }, NVCAM_OK);
    nvcam_frame_release(f);
    nvcam_camera_close(c, 5000);
    std::thread::sleep(Duration::from_millis(200));
    nvcam_gpu_drain(0);
    println!("library context on device {device}: {:.1} MiB (once per GPU, not per camera)", (before_ctx - mem_free()) as f64 / (1 << 20) as f64);
    for &n in &counts {
        let mem0 = mem_free();
        let mut cams = Vec::new();
        for _ in 0..n {
            cams.push(open(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let hosts: Vec<_> = cams
            .iter()
            .map(|&cam| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut got = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut f = 0;
                        if unsafe { nvcam_camera_get_frame(cam, 1000, &mut f) } == NVCAM_OK {
                            nvcam_frame_release(f);
                            got += 1;
                        }
                    }
                    got
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(2));
        let vram = (mem0 - mem_free()) as f64 / n as f64 / (1 << 20) as f64;
        let (s0, t0) = (gpu_stats(device), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        let (s1, dt) = (gpu_stats(device), t0.elapsed().as_secs_f64());
        stop.store(true, Ordering::Relaxed);
        let taken: u64 = hosts.into_iter().map(|h| h.join().unwrap()).sum();
        let sts: Vec<_> = cams.iter().map(|&c| cam_stats(c)).collect();
        let hw = sts.iter().filter(|s| s.decoder == NVCAM_DECODER_FFMPEG_HW).count();
        let pool_mib = sts.iter().map(|s| s.bytes_held).sum::<u64>() as f64 / n as f64 / (1 << 20) as f64;
        let fps = (s1.frames_copied - s0.frames_copied) as f64 / dt;
        println!(
            "RESULT nvcam cams={n} decode+copy fps={fps:.0} per_camera={:.0} vram_per_camera_mib={vram:.1} pool_per_camera_mib={pool_mib:.1} \
             hw_decoders={hw} sw_upload={} host_took={taken} device_allocs+={} pinned_allocs+={} syncs+={} ready_waits+={}",
            fps / n as f64,
            n - hw,
            s1.device_allocs - s0.device_allocs,
            s1.pinned_allocs - s0.pinned_allocs,
            s1.syncs - s0.syncs,
            s1.ready_waits - s0.ready_waits,
        );
        for c in cams {
            nvcam_camera_close(c, 5000);
        }
        std::thread::sleep(Duration::from_millis(200));
        nvcam_gpu_drain(0);
    }
    assert_eq!(nvcam_shutdown(10_000), NVCAM_OK);
    unsafe { sys::cuCtxDestroy_v2(host_ctx) };
}
