//! Conversion throughput on one GPU, in one invocation:
//!
//! 1. Conversion throughput through the API: `nvcam_frame_convert` of one device frame (1080p
//!    and 4K) into device memory, in 10 rounds of 20 calls, each round queued behind its own
//!    spin kernel (a few ms) so the GPU runs the calls back to back, timed with events around
//!    each round; GB/s = (NV12 bytes read + output bytes written) / GPU time. 20 calls at a time
//!    never fill the stream's queue of pending work, so the figure is the GPU's (a row says
//!    "host-bound" when a round's enqueue outlasted its spin). Beside it a device-to-device
//!    cuMemcpyAsync moving the same number of bytes (half read, half written), timed the same
//!    way; the ratio measured the old way (200 calls queued at once behind one long spin: the
//!    queue fills, the host blocks and the GPU then runs at the host's pace); and the host time
//!    one `nvcam_frame_convert` call takes to enqueue (200 calls in a row, GPU idle at the start).
//! 2. Host download of BGRA at 1080p and 4K (`nvcam_frame_convert`, returns when the bytes are
//!    there) into page-locked memory (cuMemHostAlloc) and into a plain Vec, with the variants the
//!    library can be switched to by test hooks (kernel writing pinned memory directly; chunk count
//!    and polled or sleeping waits of the pageable path), against cuMemcpyDtoH of the same bytes
//!    into pinned and into pageable memory; then 4 cameras downloading at once.
//! 3. N cameras (default 16) on the 1080p H.264 clip, direct NVDEC, looped and unpaced: decode
//!    only (frames_decoded, as nvdec_bench counts them), then decode + one consumer thread per
//!    camera that converts every frame it gets into letterboxed 640x640 planar fp16 on its own
//!    stream and releases it with `nvcam_frame_release_after_stream`.
//!
//!   convert_bench [--fixtures DIR] [--cams 16] [--seconds 3]
//!
//! Needs the `test-hooks` feature (the spin kernel): `cargo build --release --features test-hooks
//! --examples`; the GPU bundle builds it so.

// The tests' CUDA set-up; an example uses part of it.
#[allow(dead_code)]
#[path = "../tests/common/cuda.rs"]
mod cuda;
use cuda::{ck, nonblocking_stream, push_primary};
use cudarc::driver::sys;
use nvcam::*;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    unsafe { nvcam_last_error(buf.as_mut_ptr() as *mut _, 1024) };
    String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned()
}

fn ok(what: &str, r: i32) {
    assert_eq!(r, NVCAM_OK, "{what}: {}", last_error());
}

fn alloc(n: usize) -> u64 {
    let mut p = 0;
    unsafe { ck("cuMemAlloc", sys::cuMemAlloc_v2(&mut p, n)) };
    p
}

fn event() -> sys::CUevent {
    let mut e = std::ptr::null_mut();
    unsafe { ck("cuEventCreate", sys::cuEventCreate(&mut e, 0)) };
    e
}

/// GPU milliseconds of `body`'s work on `s`, queued behind a spin kernel of `spin` clocks so the
/// host's enqueue time does not leave the GPU idle between launches, and the host milliseconds
/// `body` took to enqueue. Where the enqueue outlasts the spin, the host blocked (the stream's
/// queue of pending work was full) or was slower than the GPU: the GPU then ran at the host's pace.
fn gpu_ms(s: sys::CUstream, spin: i64, body: impl Fn()) -> (f64, f64, f64) {
    let (z, a, b) = (event(), event(), event());
    unsafe { ck("cuEventRecord", sys::cuEventRecord(z, s)) };
    nvcam::diag::spin_copy(0, 0, 0, 0, spin, s as u64).unwrap();
    unsafe { ck("cuEventRecord", sys::cuEventRecord(a, s)) };
    let t = Instant::now();
    body();
    let host_ms = t.elapsed().as_secs_f64() * 1e3;
    unsafe {
        ck("cuEventRecord", sys::cuEventRecord(b, s));
        ck("cuEventSynchronize", sys::cuEventSynchronize(b));
        let (mut ms, mut spin_ms) = (0f32, 0f32);
        ck("cuEventElapsedTime", sys::cuEventElapsedTime_v2(&mut ms, a, b));
        ck("cuEventElapsedTime", sys::cuEventElapsedTime_v2(&mut spin_ms, z, a));
        for e in [z, a, b] {
            sys::cuEventDestroy_v2(e);
        }
        (ms as f64, host_ms, spin_ms as f64)
    }
}

/// Calls per timed round in the API rows: few enough that the stream's queue of pending work
/// (each call enqueues a kernel and an event record, and a wait while the frame is not ready)
/// never fills while the spin kernel in front runs, so the GPU time is the calls' own.
const ROUND: usize = 20;
/// Rounds per API row (ROUND x ROUNDS calls timed in all).
const ROUNDS: usize = 10;
/// Spin clocks in front of each round (some milliseconds: far longer than ROUND enqueues).
const ROUND_SPIN: i64 = 20_000_000;

/// GPU milliseconds of `ROUNDS` rounds of `ROUND` calls of `call`, each round behind its own
/// spin kernel; and whether any round's enqueue outlasted its spin (then the figure is not the
/// GPU's own).
fn gpu_ms_rounds(s: sys::CUstream, call: impl Fn()) -> (f64, bool) {
    let (mut total, mut late) = (0.0, false);
    for _ in 0..ROUNDS {
        let (ms, host_ms, spin_ms) = gpu_ms(s, ROUND_SPIN, || {
            for _ in 0..ROUND {
                call();
            }
        });
        total += ms;
        late |= host_ms >= spin_ms;
    }
    (total, late)
}

fn spec(format: u32, w: u32, h: u32, letterbox: bool) -> nvcam_convert {
    nvcam_convert {
        struct_size: std::mem::size_of::<nvcam_convert>() as u32,
        format,
        width: w,
        height: h,
        flags: if letterbox { NVCAM_CONVERT_LETTERBOX } else { 0 },
        pad: [114.0; 3],
        ..Default::default()
    }
}

fn open_cam(url: &str, flags: u32, decoder: u32) -> u64 {
    let mut o: nvcam_camera_options = unsafe { std::mem::zeroed() };
    unsafe { nvcam_camera_options_init(&mut o) };
    o.flags = flags;
    o.device = 0;
    o.decoder = decoder;
    let c = CString::new(url).unwrap();
    let mut cam = 0;
    ok(url, unsafe { nvcam_camera_open(c.as_ptr(), &o, &mut cam) });
    cam
}

fn decoded(cam: u64) -> u64 {
    let mut s: nvcam_camera_stats = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_camera_stats>() as u32;
    unsafe { nvcam_camera_stats(cam, &mut s) };
    s.frames_decoded
}

/// Part 1 and 2 on one frame of `url`.
fn kernels_and_download(url: &str, s: sys::CUstream) {
    let cam = open_cam(url, NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO);
    let mut f = 0;
    ok("get_frame", unsafe { nvcam_camera_get_frame(cam, 10_000, &mut f) });
    let mut fi: nvcam_frame_info = unsafe { std::mem::zeroed() };
    fi.struct_size = std::mem::size_of::<nvcam_frame_info>() as u32;
    ok("info", unsafe { nvcam_frame_info(f, &mut fi) });
    let read = fi.nv12_size as f64;
    let n_iter = 200;
    println!("\n## {}x{} device frame", fi.width, fi.height);
    println!(
        "| conversion | bytes read + written | GB/s through nvcam_frame_convert | D2D copy of the same bytes, GB/s | ratio | ratio, {n_iter} calls queued at once (the old figure) | host µs per call (enqueue) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, sp) in [
        ("BGRA8, same size", spec(NVCAM_FORMAT_BGRA8, 0, 0, false)),
        ("RGB8, same size", spec(NVCAM_FORMAT_RGB8, 0, 0, false)),
        ("planar f32, same size", spec(NVCAM_FORMAT_RGB_F32_PLANAR, 0, 0, false)),
        ("planar f16, letterbox 640x640", spec(NVCAM_FORMAT_RGB_F16_PLANAR, 640, 640, true)),
    ] {
        let mut need = 0u64;
        ok("convert_size", unsafe { nvcam_frame_convert_size(f, &sp, 0, &mut need) });
        let dst = alloc(need as usize);
        let mut d = sp;
        d.dst_memory = NVCAM_MEMORY_DEVICE;
        let call = || ok("convert", unsafe { nvcam_frame_convert(f, &d, dst as *mut _, 0, need, s as u64) });
        let conv = || {
            for _ in 0..n_iter {
                call();
            }
        };
        conv(); // warm-up: module load, first launch
        unsafe { ck("sync", sys::cuStreamSynchronize(s)) };
        let (ms, late) = gpu_ms_rounds(s, call);
        let (ms_queued, _, _) = gpu_ms(s, 200_000_000, conv);
        let t0 = Instant::now();
        conv();
        let enqueue_us = t0.elapsed().as_secs_f64() * 1e6 / n_iter as f64;
        unsafe { ck("sync", sys::cuStreamSynchronize(s)) };
        let bytes = read + need as f64;
        let gbs = bytes * (ROUND * ROUNDS) as f64 / (ms / 1e3) / 1e9;
        let gbs_queued = bytes * n_iter as f64 / (ms_queued / 1e3) / 1e9;
        // The same traffic as a copy: bytes/2 read and bytes/2 written, timed the same way.
        let half = (bytes / 2.0) as usize;
        let (src, cdst) = (alloc(half), alloc(half));
        let copy = || unsafe { ck("cuMemcpyDtoDAsync", sys::cuMemcpyDtoDAsync_v2(cdst, src, half, s)) };
        let (ms_copy, _) = gpu_ms_rounds(s, copy);
        let copy_gbs = (2 * half) as f64 * (ROUND * ROUNDS) as f64 / (ms_copy / 1e3) / 1e9;
        println!(
            "| {name} | {:.1} MB | {gbs:.0}{} | {copy_gbs:.0} | {:.2} | {:.2} | {enqueue_us:.1} |",
            bytes / 1e6,
            if late { " (host-bound: a round's enqueue outlasted its spin)" } else { "" },
            gbs / copy_gbs,
            gbs_queued / copy_gbs
        );
        unsafe {
            sys::cuMemFree_v2(dst);
            sys::cuMemFree_v2(src);
            sys::cuMemFree_v2(cdst);
        }
    }
    host_download(f, &fi);
    nvcam_frame_release(f);
    nvcam_camera_close(cam, 5000);
}

/// GB/s of `reps` calls of `body` moving `n` bytes each (after one warm-up call).
fn gbs(n: usize, reps: usize, mut body: impl FnMut()) -> f64 {
    body();
    let t = Instant::now();
    for _ in 0..reps {
        body();
    }
    n as f64 * reps as f64 / t.elapsed().as_secs_f64() / 1e9
}

/// Page-locked host memory (cuMemHostAlloc, flags 0), freed on drop.
struct Pinned(*mut u8);

impl Pinned {
    fn new(n: usize) -> Pinned {
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        unsafe { ck("cuMemHostAlloc", sys::cuMemHostAlloc(&mut p, n, 0)) };
        Pinned(p.cast())
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        unsafe { sys::cuMemFreeHost(self.0.cast()) };
    }
}

/// Part 2: host BGRA download of frame `f` into pageable and pinned memory, with the variants
/// the library can be switched to (test hooks), against plain cuMemcpyDtoH of the same bytes.
fn host_download(f: u64, fi: &nvcam_frame_info) {
    let sp = spec(NVCAM_FORMAT_BGRA8, 0, 0, false);
    let n = (fi.width * fi.height * 4) as usize;
    let reps = if fi.height > 1080 { 40 } else { 100 };
    let mut host = vec![0u8; n];
    let pinned = Pinned::new(n);
    let convert = |dst: *mut u8| ok("convert host", unsafe { nvcam_frame_convert(f, &sp, dst.cast(), 0, n as u64, 0) });
    let src = alloc(n);
    let copy = |dst: *mut u8| unsafe { ck("cuMemcpyDtoH", sys::cuMemcpyDtoH_v2(dst.cast(), src, n)) };
    let pinned_gbs = gbs(n, reps, || copy(pinned.0));
    let pageable_gbs = gbs(n, reps, || copy(host.as_mut_ptr()));
    println!("\n## Host download, {}x{} BGRA ({:.1} MB), {reps} calls each", fi.width, fi.height, n as f64 / 1e6);
    println!("| path | GB/s | vs pinned cuMemcpyDtoH |");
    println!("|---|---|---|");
    let row = |name: String, v: f64| println!("| {name} | {v:.1} | {:.2} |", v / pinned_gbs);
    row("cuMemcpyDtoH into pinned memory (same bytes, no conversion)".into(), pinned_gbs);
    row("cuMemcpyDtoH into pageable memory".into(), pageable_gbs);
    // (chunks (0 = by size, the default), kernel writes pinned dst, poll) variants; the
    // library's default first.
    for (chunks, kernel, poll) in [(0, false, true), (0, true, true), (0, false, false), (8, false, true), (16, false, true), (32, false, true)] {
        nvcam::diag::set_download_knobs(chunks, kernel, poll);
        let wait = if poll { "polled waits" } else { "sleeping waits" };
        if chunks == 0 {
            let how = if kernel { "kernel writes it through its mapping" } else { "kernel into scratch, one DMA into it" };
            row(format!("nvcam_frame_convert into pinned memory ({how}, {wait})"), gbs(n, reps, || convert(pinned.0)));
        }
        if !kernel {
            let chunks = if chunks == 0 { "chunks of ~512 KiB".to_string() } else { format!("{chunks} chunks") };
            row(format!("nvcam_frame_convert into a Vec ({chunks} through pinned staging, worker pool, {wait})"), gbs(n, reps, || convert(host.as_mut_ptr())));
        }
    }
    nvcam::diag::set_download_knobs(0, false, true);
    unsafe { sys::cuMemFree_v2(src) };
    drop(pinned);
}

/// Part 2b: `k` cameras' 1080p BGRA downloads at once, one host thread each, into pageable or
/// pinned memory: aggregate GB/s.
fn concurrent_downloads(k: usize, reps: usize) {
    let cams: Vec<u64> = (0..k).map(|_| open_cam("testsrc://1920x1080@30", NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO)).collect();
    let frames: Vec<u64> = cams
        .iter()
        .map(|&c| {
            let mut f = 0;
            ok("get_frame", unsafe { nvcam_camera_get_frame(c, 10_000, &mut f) });
            f
        })
        .collect();
    let n = 1920 * 1080 * 4;
    let sp = spec(NVCAM_FORMAT_BGRA8, 0, 0, false);
    println!("\n## {k} cameras downloading at once (1080p BGRA, one host thread each, {reps} calls each)");
    println!("| destination | aggregate GB/s | per camera GB/s |");
    println!("|---|---|---|");
    for pinned in [false, true] {
        let barrier = std::sync::Barrier::new(k);
        let t = Instant::now();
        std::thread::scope(|sc| {
            for &f in &frames {
                let (barrier, sp) = (&barrier, &sp);
                sc.spawn(move || {
                    push_primary(0); // for cuMemHostAlloc on this thread
                    let mut v = vec![0u8; n];
                    let p = if pinned { Some(Pinned::new(n)) } else { None };
                    let dst = p.as_ref().map_or(v.as_mut_ptr(), |p| p.0);
                    ok("convert", unsafe { nvcam_frame_convert(f, sp, dst.cast(), 0, n as u64, 0) });
                    barrier.wait();
                    for _ in 0..reps {
                        ok("convert", unsafe { nvcam_frame_convert(f, sp, dst.cast(), 0, n as u64, 0) });
                    }
                });
            }
        });
        // Includes each thread's buffer setup; small against the calls.
        let total = (k * reps * n) as f64 / t.elapsed().as_secs_f64() / 1e9;
        println!("| {} | {total:.1} | {:.1} |", if pinned { "pinned (cuMemHostAlloc)" } else { "pageable Vec" }, total / k as f64);
    }
    for f in frames {
        nvcam_frame_release(f);
    }
    for c in cams {
        nvcam_camera_close(c, 5000);
    }
}

/// Part 3: aggregate fps of `n` cameras, decode only or decode + letterboxed fp16 conversion.
fn cameras(clip: &str, n: usize, seconds: f64, convert: bool) -> (f64, f64) {
    let cams: Vec<u64> = (0..n).map(|_| open_cam(clip, NVCAM_OPEN_ASYNC | NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_NVDEC)).collect();
    let t = Instant::now();
    while !cams.iter().all(|&c| decoded(c) > 0) {
        assert!(t.elapsed() < Duration::from_secs(20), "cameras did not stream");
        std::thread::sleep(Duration::from_millis(20));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let converted = Arc::new(AtomicU64::new(0));
    let mut threads = Vec::new();
    if convert {
        for &cam in &cams {
            let (stop, converted) = (stop.clone(), converted.clone());
            threads.push(std::thread::spawn(move || {
                push_primary(0);
                let s = nonblocking_stream();
                let mut sp = spec(NVCAM_FORMAT_RGB_F16_PLANAR, 640, 640, true);
                sp.dst_memory = NVCAM_MEMORY_DEVICE;
                sp.mean = [0.0; 3];
                sp.std = [1.0; 3];
                let need = 3 * 640 * 640 * 2;
                let dst = alloc(need);
                while !stop.load(Ordering::Relaxed) {
                    let mut f = 0;
                    if unsafe { nvcam_camera_get_frame(cam, 200, &mut f) } != NVCAM_OK {
                        continue;
                    }
                    ok("convert", unsafe { nvcam_frame_convert(f, &sp, dst as *mut _, 0, need as u64, s as u64) });
                    ok("release_after_stream", unsafe { nvcam_frame_release_after_stream(f, s as u64) });
                    converted.fetch_add(1, Ordering::Relaxed);
                }
                unsafe {
                    sys::cuStreamSynchronize(s);
                    sys::cuMemFree_v2(dst);
                    sys::cuStreamDestroy_v2(s);
                }
            }));
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let (d0, c0, t0) = (cams.iter().map(|&c| decoded(c)).sum::<u64>(), converted.load(Ordering::Relaxed), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(seconds));
    let (d1, c1, dt) = (cams.iter().map(|&c| decoded(c)).sum::<u64>(), converted.load(Ordering::Relaxed), t0.elapsed().as_secs_f64());
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    for c in cams {
        nvcam_camera_close(c, 10_000);
    }
    ((d1 - d0) as f64 / dt, (c1 - c0) as f64 / dt)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let fixtures = arg("--fixtures").unwrap_or_else(|| "fixtures".into());
    let n: usize = arg("--cams").map(|v| v.parse().unwrap()).unwrap_or(16);
    let seconds: f64 = arg("--seconds").map(|v| v.parse().unwrap()).unwrap_or(3.0);
    unsafe {
        nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_WARN);
        ok("init", nvcam_init(std::ptr::null()));
    }
    push_primary(0);
    let mut name = [0 as std::ffi::c_char; 128];
    unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), 128, 0) };
    let mut drv = 0;
    unsafe { sys::cuDriverGetVersion(&mut drv) };
    println!(
        "convert_bench on {} (driver CUDA {}.{}), {} CPU cores",
        unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy(),
        drv / 1000,
        drv % 1000 / 10,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    let s = nonblocking_stream();
    kernels_and_download("testsrc://1920x1080@30", s);
    kernels_and_download("testsrc://3840x2160@30", s);
    concurrent_downloads(4, 50);
    let clip = format!("{fixtures}/bench-h264-1920x1080.mp4");
    if n > 0 && std::path::Path::new(&clip).exists() {
        let (dec_only, _) = cameras(&clip, n, seconds, false);
        let (dec, conv) = cameras(&clip, n, seconds, true);
        println!("\n## N = {n} cameras, {clip}, direct NVDEC, {seconds} s window");
        println!("| run | frames decoded/s | frames converted/s (letterbox 640x640 planar fp16) | converted / decode-only |");
        println!("|---|---|---|---|");
        println!("| decode only | {dec_only:.0} | - | - |");
        println!("| decode + convert on each consumer's stream | {dec:.0} | {conv:.0} | {:.3} |", conv / dec_only);
    } else {
        println!("\n(--cams 0 or no {clip}: camera rows skipped)");
    }
    unsafe { sys::cuStreamDestroy_v2(s) };
    nvcam_shutdown(20_000);
}
