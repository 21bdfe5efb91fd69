//! The GPU path, on a machine with an NVIDIA GPU (through ../shared/gpu/bundle).
//!
//! Each test needs a GPU. Without one it returns early with a note, so CI (no GPU) passes; with
//! `REQUIRE_GPU=1` (set by the bundle's run.sh on the GPU machine) a missing GPU is a failure.
//! The tests share the library's global state (init, shutdown), so they run one at a time.
//!
//! Clips come from `common::clip` (encoded here with Debian's ffmpeg; on the GPU machine they are
//! carried in the bundle under `$BUNDLE_WITH/fixtures`).

mod common;
use common::*;
use cudarc::driver::sys;
use nvcam::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIB: i64 = 1 << 20;

/// A context of the test's own (the "host's"), current on the calling thread until dropped.
struct HostCtx(sys::CUcontext);

impl HostCtx {
    fn new() -> HostCtx {
        unsafe {
            ck("cuInit", sys::cuInit(0));
            let mut dev = 0;
            ck("cuDeviceGet", sys::cuDeviceGet(&mut dev, 0));
            let mut params = sys::CUctxCreateParams {
                execAffinityParams: std::ptr::null_mut(),
                numExecAffinityParams: 0,
                cigParams: std::ptr::null_mut(),
            };
            let mut c = std::ptr::null_mut();
            ck("cuCtxCreate", sys::cuCtxCreate_v4(&mut c, &mut params, 0, dev));
            HostCtx(c)
        }
    }
}

impl Drop for HostCtx {
    fn drop(&mut self) {
        unsafe { sys::cuCtxDestroy_v2(self.0) };
    }
}

fn current_ctx() -> sys::CUcontext {
    let mut c = std::ptr::null_mut();
    ck("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut c) });
    c
}

/// Free device memory, device-wide (needs a current context).
fn mem_free() -> i64 {
    let (mut free, mut total) = (0usize, 0usize);
    ck("cuMemGetInfo", unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) });
    free as i64
}

fn config(max_hw: u32) -> nvcam_config {
    nvcam_config {
        struct_size: std::mem::size_of::<nvcam_config>() as u32,
        max_hw_decoders_per_device: max_hw,
        ..Default::default()
    }
}

/// The hardware decoder AUTO picks: direct NVDEC where libnvcuvid loads, else FFmpeg's hwaccel.
fn auto_hw_decoder() -> u32 {
    if nvcam::diag::nvcuvid_available() {
        NVCAM_DECODER_NVDEC
    } else {
        NVCAM_DECODER_FFMPEG_HW
    }
}

fn x264() -> Vec<&'static str> {
    vec!["-preset", "veryfast", "-g", "24", "-bf", "2"]
}

/// A small H.264 clip for the reconnect tests.
fn small_clip() -> PathBuf {
    clip("gpu-h264-640x360.mp4", "640x360", 60, "libx264", &x264())
}

/// Reads a device frame's NV12 bytes straight from its device pointers (the host's context must
/// be current), packed.
fn read_device_frame(i: &nvcam_frame_info) -> Vec<u8> {
    let (w, h, p) = (i.width as usize, i.height as usize, i.pitch as usize);
    let rows = h + h.div_ceil(2);
    let mut raw = vec![0u8; p * rows];
    assert_eq!(i.uv_ptr, i.y_ptr + (p * h) as u64, "UV plane follows Y at one pitch");
    ck("cuMemcpyDtoH(frame)", unsafe { sys::cuMemcpyDtoH_v2(raw.as_mut_ptr() as *mut _, i.y_ptr, raw.len()) });
    let mut out = Vec::with_capacity(w * rows);
    for r in 0..rows {
        out.extend_from_slice(&raw[r * p..r * p + w]);
    }
    out
}

#[test]
fn nvdec_matches_software_decode() {
    if !need_gpu!() {
        return;
    }
    let clips = [
        ("gpu-h264-1920x1080.mp4", 1920, 1080, 48, "libx264"),
        ("gpu-hevc-1920x1080.mp4", 1920, 1080, 48, "libx265"),
        ("gpu-h264-3840x2160.mp4", 3840, 2160, 24, "libx264"),
        ("gpu-hevc-3840x2160.mp4", 3840, 2160, 24, "libx265"),
    ];
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let host = HostCtx::new();
    for (name, w, h, n, codec) in clips {
        let extra = if codec == "libx264" { x264() } else { x265() };
        let path = clip(name, &format!("{w}x{h}"), n, codec, &extra);
        let reference = reference_frames(&path, w, h);
        assert_eq!(reference.len(), n as usize, "{name}: reference frame count");
        let cam = open(path.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_FFMPEG_HW))
            .unwrap_or_else(|e| panic!("{name}: open: {e:?}"));
        for (k, want) in reference.iter().enumerate() {
            let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("{name}: frame {k}: {e:?}"));
            let i = info(f).unwrap();
            assert_eq!((i.memory, i.device, i.width, i.height), (NVCAM_MEMORY_DEVICE, 0, w as u32, h as u32), "{name}");
            assert_eq!(i.seq, k as u64 + 1, "{name}: lossless camera skipped a frame");
            let got = pixels(f).unwrap();
            if let Some(at) = first_diff(&got, want) {
                panic!("{name}: frame {k} differs from FFmpeg's software decode at byte {at} (fnv {:x} vs {:x})", fnv(&got), fnv(want));
            }
            if k == 0 || k == reference.len() - 1 {
                // Straight through the device pointers, from the host's own context.
                assert_eq!(current_ctx(), host.0);
                assert!(read_device_frame(&i) == *want, "{name}: frame {k} via y_ptr differs");
            }
            release(f).unwrap();
        }
        let st = stats(cam);
        assert_eq!(st.decoder, NVCAM_DECODER_FFMPEG_HW, "{name}: not decoded by NVDEC");
        assert_eq!(st.memory, NVCAM_MEMORY_DEVICE);
        println!("{name}: {} frames equal to FFmpeg's software decode (NVDEC, device pool)", reference.len());
        close(cam, 5000).unwrap();
    }
}

#[test]
fn foreign_context_survives_every_call() {
    if !need_gpu!() {
        return;
    }
    let _serial = GPU_SERIAL.lock();
    let host = HostCtx::new();
    let mine = host.0;
    let check = |what: &str| assert_eq!(current_ctx(), mine, "{what} changed the calling thread's CUDA context");
    check("cuCtxCreate");
    let clip = small_clip();
    let url = std::ffi::CString::new(clip.to_str().unwrap()).unwrap();
    let mut buf = vec![0u8; 4096];
    let bp = buf.as_mut_ptr() as *mut std::ffi::c_char;
    unsafe {
        assert_eq!(nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_INFO), NVCAM_OK);
        check("nvcam_log_init");
        nvcam_log_set_callback(None, std::ptr::null_mut(), NVCAM_LOG_ERROR);
        check("nvcam_log_set_callback");
        nvcam_abi_version();
        nvcam_version_string(bp, 4096);
        check("nvcam_version_string");
        nvcam_status_text(NVCAM_E_CUDA, bp, 4096);
        check("nvcam_status_text");
        let mut gs = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
        assert_eq!(nvcam_gpu_stats(-1, &mut gs), NVCAM_OK);
        check("nvcam_gpu_stats before init");
        let cfg = config(0);
        assert_eq!(nvcam_init(&cfg), NVCAM_OK, "{}", last_error());
        check("nvcam_init");
        let mut o = options(0);
        assert_eq!(nvcam_camera_options_init(&mut o), NVCAM_OK);
        check("nvcam_camera_options_init");
        o.flags = NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING;
        let mut cams = Vec::new();
        for decoder in [NVCAM_DECODER_AUTO, NVCAM_DECODER_SOFTWARE] {
            o.decoder = decoder;
            let mut cam = 0;
            if decoder == NVCAM_DECODER_AUTO {
                assert_eq!(nvcam_camera_open(url.as_ptr(), &o, &mut cam), NVCAM_OK, "{}", last_error());
                check("nvcam_camera_open (first use of the GPU: context retained, stream created)");
            } else {
                assert_eq!(nvcam_camera_open_ex(url.as_ptr(), std::ptr::null(), &o, &mut cam), NVCAM_OK, "{}", last_error());
                check("nvcam_camera_open_ex (software decode + upload)");
            }
            cams.push(cam);
        }
        for &cam in &cams {
            let mut f = 0;
            assert_eq!(nvcam_camera_get_frame(cam, 10_000, &mut f), NVCAM_OK, "{}", last_error());
            check("nvcam_camera_get_frame");
            let mut i = nvcam_frame_info { struct_size: std::mem::size_of::<nvcam_frame_info>() as u32, ..Default::default() };
            assert_eq!(nvcam_frame_info(f, &mut i), NVCAM_OK);
            check("nvcam_frame_info");
            assert_eq!(i.memory, NVCAM_MEMORY_DEVICE);
            let via_ptr = read_device_frame(&i);
            let mut c = 0;
            assert_eq!(nvcam_frame_clone(f, &mut c), NVCAM_OK);
            check("nvcam_frame_clone");
            let mut px = vec![0u8; i.nv12_size as usize];
            assert_eq!(nvcam_frame_copy_nv12(c, px.as_mut_ptr(), 0, px.len() as u64), NVCAM_OK, "{}", last_error());
            check("nvcam_frame_copy_nv12 (device download)");
            assert!(px == via_ptr, "download equals the bytes at y_ptr");
            let mut st = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
            assert_eq!(nvcam_camera_stats(cam, &mut st), NVCAM_OK);
            check("nvcam_camera_stats");
            let (mut n, mut t) = (0u32, 0u64);
            nvcam_registry_stats(cam, &mut n, &mut t);
            check("nvcam_registry_stats");
            nvcam_camera_last_error(cam, bp, 4096);
            check("nvcam_camera_last_error");
            nvcam_last_error(bp, 4096);
            check("nvcam_last_error");
            let (mut lvl, mut len) = (0, 0);
            nvcam_log_pop(&mut lvl, bp, 4096, &mut len);
            check("nvcam_log_pop");
            assert_eq!(nvcam_gpu_stats(0, &mut gs), NVCAM_OK);
            check("nvcam_gpu_stats(0) (cuMemGetInfo)");
            assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
            check("nvcam_camera_reconnect");
            let mut f2 = 0;
            assert_eq!(nvcam_camera_get_frame(cam, 10_000, &mut f2), NVCAM_OK, "{}", last_error());
            check("nvcam_camera_get_frame after reconnect");
            assert_eq!(nvcam_frame_release(f), NVCAM_OK);
            check("nvcam_frame_release");
            let mut released = 0;
            assert_eq!(nvcam_registry_force_release_owner(cam, &mut released), NVCAM_OK);
            check("nvcam_registry_force_release_owner");
            assert_eq!(released, 2);
            assert_eq!(nvcam_frame_release(c), NVCAM_E_STALE_HANDLE);
            assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
            check("nvcam_gpu_drain");
        }
        // One closed (its pool retired to the deferred queue), one left for shutdown.
        assert_eq!(nvcam_camera_close(cams[0], 5000), NVCAM_OK);
        check("nvcam_camera_close");
        assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
        check("nvcam_gpu_drain after close");
        assert_eq!(nvcam_shutdown(10_000), NVCAM_OK, "{}", last_error());
        check("nvcam_shutdown (deferred frees, contexts released)");
        assert_eq!(nvcam_gpu_stats(-1, &mut gs), NVCAM_OK);
        check("nvcam_gpu_stats after shutdown");
        assert_eq!((gs.contexts, gs.bytes_in_pools, gs.bytes_deferred), (0, 0, 0), "{gs:?}");
    }
    drop(host);
}

#[test]
fn reconnect_while_kernel_reads_clone() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let cam = open(small_clip().to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO)).unwrap();
    let f = get_frame(cam, 10_000).unwrap();
    let held = clone(f).unwrap();
    release(f).unwrap();
    let i = info(held).unwrap();
    assert_eq!(i.memory, NVCAM_MEMORY_DEVICE);
    let bytes = (i.pitch * (i.height as u64 + (i.height as u64).div_ceil(2))) as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (stop, reads) = (stop.clone(), reads.clone());
        let ptr = i.y_ptr;
        std::thread::spawn(move || -> Result<(), String> {
            // The consumer: its own context and stream, copying the held clone again and again.
            let _ctx = HostCtx::new();
            let mut s = std::ptr::null_mut();
            ck("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) });
            let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
            ck("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut host, bytes, 0) });
            let mut dev_copy = 0;
            ck("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut dev_copy, bytes) });
            let mut first: Option<Vec<u8>> = None;
            let mut result = Ok(());
            while !stop.load(Ordering::Acquire) {
                let r = unsafe {
                    let r1 = sys::cuMemcpyDtoDAsync_v2(dev_copy, ptr, bytes, s);
                    let r2 = sys::cuMemcpyDtoHAsync_v2(host, ptr, bytes, s);
                    let r3 = sys::cuStreamSynchronize(s);
                    [r1, r2, r3]
                };
                if let Some(bad) = r.iter().find(|r| **r != sys::CUresult::CUDA_SUCCESS) {
                    result = Err(format!("CUDA error while reading the clone: {bad:?}"));
                    break;
                }
                let now = unsafe { std::slice::from_raw_parts(host as *const u8, bytes) };
                match &first {
                    None => first = Some(now.to_vec()),
                    Some(v) if v.as_slice() != now => {
                        result = Err(format!("the held clone's bytes changed (read {})", reads.load(Ordering::Relaxed)));
                        break;
                    }
                    _ => {}
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            unsafe {
                sys::cuMemFree_v2(dev_copy);
                sys::cuMemFreeHost(host);
                sys::cuStreamDestroy_v2(s);
            }
            result
        })
    };
    let before = stats(cam).reconnects;
    for k in 0..50u64 {
        assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
        assert!(wait_until(Duration::from_secs(10), || stats(cam).reconnects > before + k), "reconnect {k} did not happen");
        let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("no frame after reconnect {k}: {e:?}"));
        release(f).unwrap();
    }
    stop.store(true, Ordering::Release);
    consumer.join().unwrap().unwrap();
    let n = reads.load(Ordering::Relaxed);
    assert!(n > 50, "the consumer read the clone only {n} times");
    assert_eq!(info(held).unwrap().y_ptr, i.y_ptr);
    release(held).unwrap();
    println!("50 reconnects while a consumer read the held clone {n} times: no CUDA error, bytes unchanged");
    close(cam, 5000).unwrap();
}

#[test]
fn shutdown_with_70_leaked_clones() {
    if !need_gpu!() {
        return;
    }
    let serial = GPU_SERIAL.lock();
    let host = HostCtx::new();
    let before = mem_free();
    unsafe {
        nvcam_log_init(c"-".as_ptr(), NVCAM_LOG_INFO);
        assert_eq!(nvcam_init(&config(0)), NVCAM_OK);
    }
    let clip = small_clip();
    let cams: Vec<u64> = [NVCAM_DECODER_AUTO, NVCAM_DECODER_AUTO, NVCAM_DECODER_SOFTWARE]
        .iter()
        .map(|&d| open(clip.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP, d)).unwrap())
        .collect();
    let mut leaked = Vec::new();
    'outer: for _ in 0..3 {
        for &c in &cams {
            let f = get_frame(c, 10_000).unwrap();
            assert_eq!(info(f).unwrap().memory, NVCAM_MEMORY_DEVICE);
            leaked.push(f);
            while leaked.len() % 8 != 0 && leaked.len() < 70 {
                leaked.push(clone(f).unwrap());
            }
            if leaked.len() == 70 {
                break 'outer;
            }
        }
    }
    assert_eq!(leaked.len(), 70);
    let during = gpu_stats(0);
    assert!(during.bytes_in_pools > 0 && during.contexts == 1, "{during:?}");
    let t0 = Instant::now();
    assert_eq!(nvcam_shutdown(10_000), NVCAM_OK, "{}", last_error());
    println!("shutdown with 70 leaked clones took {:?}", t0.elapsed());
    let after = mem_free();
    assert_eq!(current_ctx(), host.0);
    assert!(before - after <= MIB, "device memory did not return: {} bytes more in use than before init", before - after);
    for &h in &leaked {
        assert_eq!(info(h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(nvcam_frame_release(h), NVCAM_E_STALE_HANDLE);
    }
    for &c in &cams {
        let mut s = nvcam_camera_stats { struct_size: std::mem::size_of::<nvcam_camera_stats>() as u32, ..Default::default() };
        assert_eq!(unsafe { nvcam_camera_stats(c, &mut s) }, NVCAM_E_STALE_HANDLE);
    }
    let g = gpu_stats(-1);
    assert_eq!((g.contexts, g.bytes_in_pools, g.bytes_deferred, g.deferred_buffers, g.hw_decoders, g.upload_decoders), (0, 0, 0, 0, 0, 0), "{g:?}");
    println!("70 leaked clones: shutdown freed everything (free memory {} MiB before init, {} MiB after)", before / MIB, after / MIB);
    drop(host);
    drop(serial);
}

#[test]
fn vram_flat_over_200_reconnects() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let _host = HostCtx::new();
    let cam = open(small_clip().to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO)).unwrap();
    let cycle = |n: u64| {
        let base = stats(cam).reconnects;
        for k in 0..n {
            assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
            assert!(wait_until(Duration::from_secs(10), || stats(cam).reconnects > base + k));
            release(get_frame(cam, 10_000).unwrap()).unwrap();
        }
    };
    // Measure with only the current decoder alive.
    let settled = || assert!(wait_until(Duration::from_secs(10), || gpu_stats(0).hw_decoders == 1), "{:?}", gpu_stats(0));
    cycle(5);
    settled();
    assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
    let (s0, m0) = (gpu_stats(0), mem_free());
    cycle(200);
    settled();
    assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
    let (s1, m1) = (gpu_stats(0), mem_free());
    println!(
        "200 reconnects: free memory {} -> {} MiB; device allocs {} -> {}, pool bytes {} -> {}",
        m0 / MIB, m1 / MIB, s0.device_allocs, s1.device_allocs, s0.bytes_in_pools, s1.bytes_in_pools
    );
    assert_eq!(s1.device_allocs, s0.device_allocs, "a reconnect at the same resolution allocated device memory");
    assert_eq!(s1.bytes_in_pools, s0.bytes_in_pools);
    // Growth is what would betray a leak. (Under compute-sanitizer, free memory rose by ~22 MiB
    // over the run: the sanitizer's own bookkeeping; without it both directions stay within 8 MiB.)
    assert!(m0 - m1 <= 8 * MIB, "device memory in use grew by {} bytes over 200 reconnects", m0 - m1);
    assert_eq!(stats(cam).memory, NVCAM_MEMORY_DEVICE);
    close(cam, 5000).unwrap();
}

#[test]
fn zero_allocs_per_frame_steady_state() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let h264 = clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &x264());
    // 10-bit into P016 pools: the same steady state (AUTO is direct NVDEC there too).
    let hevc10 = ten_bit_clip(1920, 1080, 48);
    for (clip, decoder) in [(&h264, NVCAM_DECODER_AUTO), (&h264, NVCAM_DECODER_SOFTWARE), (&hevc10, NVCAM_DECODER_AUTO), (&hevc10, NVCAM_DECODER_FFMPEG_HW)] {
        let cam = open(clip.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, decoder)).unwrap();
        for _ in 0..30 {
            release(get_frame(cam, 10_000).unwrap()).unwrap();
        }
        // The last camera's buffers retire in the background: free them before counting.
        assert!(wait_until(Duration::from_secs(5), || {
            assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
            gpu_stats(0).deferred_buffers == 0
        }));
        let s0 = gpu_stats(0);
        let n = 300;
        for _ in 0..n {
            let f = get_frame(cam, 10_000).unwrap();
            info(f).unwrap();
            release(f).unwrap();
        }
        let s1 = gpu_stats(0);
        let st = stats(cam);
        println!(
            "{} decoder {}: {} frames copied, {} loops of the clip: device allocs +{}, pinned allocs +{}, frees +{}, syncs +{}, ready waits +{}",
            clip.file_name().unwrap().to_string_lossy(),
            st.decoder,
            s1.frames_copied - s0.frames_copied,
            (s1.frames_copied - s0.frames_copied) / 48,
            s1.device_allocs - s0.device_allocs,
            s1.pinned_allocs - s0.pinned_allocs,
            s1.device_frees - s0.device_frees,
            s1.syncs - s0.syncs,
            s1.ready_waits - s0.ready_waits
        );
        // The first frame taken may have been copied before s0 (the camera's pending frame): when
        // the decoder, not this loop, is the bottleneck (direct NVDEC) that is exactly one short.
        assert!(s1.frames_copied - s0.frames_copied >= n - 1);
        assert_eq!(s1.device_allocs, s0.device_allocs, "device allocations in steady state");
        assert_eq!(s1.pinned_allocs, s0.pinned_allocs, "pinned allocations in steady state");
        assert_eq!(s1.device_frees, s0.device_frees);
        assert_eq!(s1.syncs, s0.syncs, "blocking waits in steady state");
        let want = match decoder {
            NVCAM_DECODER_AUTO => auto_hw_decoder(),
            d => d,
        };
        assert_eq!(st.decoder, want);
        close(cam, 5000).unwrap();
    }
}

#[test]
fn hw_session_cap_falls_back_to_software() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(2), NVCAM_LOG_INFO);
    let clip = clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &x264());
    let cams: Vec<u64> = (0..4).map(|_| open(clip.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO)).unwrap()).collect();
    for &c in &cams {
        for _ in 0..5 {
            let f = get_frame(c, 10_000).unwrap();
            assert_eq!(info(f).unwrap().memory, NVCAM_MEMORY_DEVICE);
            release(f).unwrap();
        }
    }
    let decoders: Vec<u32> = cams.iter().map(|&c| stats(c).decoder).collect();
    let hw = decoders.iter().filter(|&&d| d == auto_hw_decoder()).count();
    let sw = decoders.iter().filter(|&&d| d == NVCAM_DECODER_SOFTWARE).count();
    assert_eq!((hw, sw), (2, 2), "decoders {decoders:?}");
    let g = gpu_stats(0);
    assert_eq!((g.hw_decoders, g.upload_decoders), (2, 2), "{g:?}");
    assert!(g.hw_fallbacks >= 2);
    for &c in &cams {
        let st = stats(c);
        assert!(st.state == NVCAM_STATE_STREAMING && st.frames_decoded >= 5, "{st:?}");
        close(c, 5000).unwrap();
    }
    println!("cap 2, 4 cameras: 2 NVDEC, 2 software + upload, all streaming into device pools");
}

/// A looped file goes on across its end in the same decoder on both hardware backends: every
/// loop's frames equal FFmpeg's software decode, in order, and no NVDEC session is made. FFmpeg's
/// hwaccel used to drain and flush at every loop, and a flush makes FFmpeg's h264 decoder destroy
/// and re-create its NVDEC session; cameras looping together (paced files opened together) then
/// queued in the driver's `cuvidCreateDecoder` for seconds (measured: 32 paced cameras
/// of a 40-frame clip at 12 fps). Direct NVDEC made a new parser at every loop, whose first picture
/// then waited for the engine without the display delay's head start.
#[test]
fn looped_file_keeps_its_decoder_and_frame_order() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    // 60 frames with B-frames (pictures still in the reorder buffer at the end of each loop).
    let clip = small_clip();
    let reference = reference_frames(&clip, 640, 360);
    assert_eq!(reference.len(), 60);
    let decoders: Vec<u32> = if nvcam::diag::nvcuvid_available() { vec![NVCAM_DECODER_NVDEC, NVCAM_DECODER_FFMPEG_HW] } else { vec![NVCAM_DECODER_FFMPEG_HW] };
    let made = || (nvcam::diag::ffmpeg_hw_sessions_made(), nvcam::diag::nvdec_counters().decoders_created.load(Ordering::Relaxed));
    for d in decoders {
        let cam = open(clip.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOSSLESS, d)).unwrap();
        let mut made0 = None;
        let mut pts = Vec::new();
        for k in 0..181 {
            let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("decoder {d}: frame {k}: {e:?}"));
            let i = info(f).unwrap();
            assert_eq!(i.seq, k as u64 + 1, "decoder {d}: lossless camera skipped a frame");
            let got = pixels(f).unwrap();
            if let Some(at) = first_diff(&got, &reference[k % 60]) {
                panic!("decoder {d}: frame {k} (loop {}, picture {}) differs from FFmpeg's software decode at byte {at}", k / 60, k % 60);
            }
            pts.push(i.pts_us);
            release(f).unwrap();
            // The sessions of the first picture are made by now; none may follow.
            made0.get_or_insert_with(made);
        }
        let (hw, nv) = made();
        let (hw0, nv0) = made0.unwrap();
        assert_eq!(stats(cam).decoder, d);
        assert!(pts[..60].windows(2).all(|w| w[0] < w[1]), "decoder {d}: one loop in display order: {:?}", &pts[..60]);
        assert!(pts.iter().enumerate().all(|(k, &p)| p == pts[k % 60]), "decoder {d}: every loop the same timestamps");
        assert_eq!((hw - hw0, nv - nv0), (0, 0), "decoder {d}: NVDEC sessions made over 3 loops (FFmpeg's, direct)");
        println!("decoder {d}, 3 loops of a 60-frame clip: 181 frames equal to FFmpeg's software decode, in order; NVDEC sessions made +0");
        close(cam, 5000).unwrap();
    }
}

/// The CPU path of a GPU request, where there is no GPU (CI): the camera decodes on the CPU,
/// an explicit hardware policy is an error, and the GPU calls answer sensibly.
#[test]
fn gpu_request_without_gpu_decodes_on_cpu() {
    if gpu_usable() {
        println!("gpu_request_without_gpu_decodes_on_cpu: a GPU is present; this is the no-GPU test");
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let mut g = nvcam_gpu_stats { struct_size: std::mem::size_of::<nvcam_gpu_stats>() as u32, ..Default::default() };
    assert_eq!(unsafe { nvcam_gpu_stats(-1, &mut g) }, NVCAM_OK);
    assert_eq!((g.device_count, g.contexts), (0, 0));
    assert_eq!(unsafe { nvcam_gpu_stats(0, &mut g) }, NVCAM_E_NO_DEVICE);
    g.struct_size = 8;
    assert_eq!(unsafe { nvcam_gpu_stats(-1, &mut g) }, NVCAM_E_STRUCT_SIZE);
    assert_eq!(unsafe { nvcam_gpu_stats(-1, std::ptr::null_mut()) }, NVCAM_E_NULL_POINTER);
    assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
    let cam = open("testsrc://64x48@30", &gpu_options(0, NVCAM_DECODER_AUTO)).unwrap();
    let f = get_frame(cam, 5000).unwrap();
    let i = info(f).unwrap();
    assert_eq!((i.memory, i.device), (NVCAM_MEMORY_HOST, -1));
    release(f).unwrap();
    assert_eq!(stats(cam).decoder, NVCAM_DECODER_SOFTWARE);
    close(cam, 2000).unwrap();
    let e = open("testsrc://64x48@30", &gpu_options(0, NVCAM_DECODER_FFMPEG_HW)).unwrap_err();
    assert_eq!(e.0, NVCAM_E_NO_DEVICE, "{e:?}");
}

/// Encodes every clip the GPU tests and `examples/gpu_bench.rs` use, here where libx264/libx265
/// exist (`cargo test --release --test gpu -- --ignored make_gpu_fixtures`); the bundle carries
/// them to the GPU machine, where this finds them in place.
#[test]
#[ignore]
fn make_gpu_fixtures() {
    small_clip();
    clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &x264());
    clip("gpu-hevc-1920x1080.mp4", "1920x1080", 48, "libx265", &x265());
    clip("gpu-h264-3840x2160.mp4", "3840x2160", 24, "libx264", &x264());
    clip("gpu-hevc-3840x2160.mp4", "3840x2160", 24, "libx265", &x265());
    // The benchmark clip: 1080p30 H.264 at 4 Mbit/s with B-frames, as the CPU bench's.
    clip("bench-h264-1920x1080.mp4", "1920x1080", 300, "libx264", &["-preset", "veryfast", "-b:v", "4M", "-g", "60", "-bf", "2"]);
    clip("gpu-h264-10bit-320x240.mp4", "320x240", 30, "libx264", &["-pix_fmt", "yuv420p10le"]);
    clip("gpu-h264-422-320x240.mp4", "320x240", 30, "libx264", &["-pix_fmt", "yuv422p"]);
    make_format_fixtures();
}

/// The clips of the camera-format tests and benchmarks alone (`-- --ignored make_format_fixtures`):
/// JPEG of every layout at two sizes, and 1080p30 MJPEG camera clips (4:2:2 and 4:2:0, 2 s, looped
/// by the benchmarks).
#[test]
#[ignore]
fn make_format_fixtures() {
    jpeg_clips(640, 480, 8);
    jpeg_clips(1280, 720, 8);
    jpeg_clips(161, 97, 4);
    restart_jpeg_clips();
    progressive_jpeg_clip();
    // A noisy camera at about 45 Mbit/s (JPEG of sensor noise is mostly entropy-coded data: the
    // host's Huffman decode is what direct NVDEC's parser spends its time on), and 720p cameras.
    clip("bench-mjpeg422-noisy-1920x1080.mkv", "1920x1080", 30, "mjpeg", &["-vf", "noise=alls=8:allf=t", "-pix_fmt", "yuvj422p", "-q:v", "5", "-r", "30"]);
    clip("bench-mjpeg422-1280x720.mkv", "1280x720", 60, "mjpeg", &["-pix_fmt", "yuvj422p", "-q:v", "5", "-r", "30"]);
    clip("bench-mjpeg422-1920x1080.mkv", "1920x1080", 60, "mjpeg", &["-pix_fmt", "yuvj422p", "-q:v", "5", "-r", "30"]);
    clip("bench-mjpeg420-1920x1080.mkv", "1920x1080", 60, "mjpeg", &["-pix_fmt", "yuvj420p", "-q:v", "5", "-r", "30"]);
    ten_bit_clip(1920, 1080, 48);
    ten_bit_clip(1920, 1080, 24);
    ten_bit_clip(1366, 768, 12);
    hdr_clip("smpte2084", 320, 240);
    hdr_clip("arib-std-b67", 320, 240);
    ten_bit_odd_clip();
    // 10-bit against 8-bit decode speed: the same content and rate, HEVC Main10 and Main.
    clip("bench-hevc10-1920x1080.mkv", "1920x1080", 300, "libx265", &["-pix_fmt", "yuv420p10le", "-preset", "ultrafast", "-b:v", "2M", "-x265-params", "log-level=error"]);
    clip("bench-hevc8-1920x1080.mkv", "1920x1080", 300, "libx265", &["-preset", "ultrafast", "-b:v", "2M", "-x265-params", "log-level=error"]);
}

/// Camera isolation on a GPU (one camera's reconnects must not stall another's frames): steady 1080p30 cameras (looped, paced, AUTO) while
/// others reconnect in a loop; the steady cameras' consumers must see no stall. Scale and the
/// gap limit come from `NVCAM_CHURN_TEST=steady,churn,seconds,gap_ms` (default `96,32,8,100`:
/// gap p99 within 3 frame intervals); under compute-sanitizer the suite runs it at `8,4,4,0`
/// (gap_ms 0: no timing check, memcheck slows every call many times over).
#[test]
#[ignore]
fn reconnect_storm_never_stalls_steady_gpu_cameras() {
    if !need_gpu!() {
        return;
    }
    let cfg: Vec<u64> = std::env::var("NVCAM_CHURN_TEST").unwrap_or_else(|_| "96,32,8,100".into()).split(',').map(|v| v.trim().parse().unwrap()).collect();
    let (n_steady, n_churn, secs, gap_ms) = (cfg[0] as usize, cfg[1] as usize, cfg[2], cfg[3] as f64);
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let clip = clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &x264());
    let url = clip.to_str().unwrap().to_string();
    let o = gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO);
    let steady: Vec<u64> = (0..n_steady).map(|_| open(&url, &o).unwrap()).collect();
    let churn: Vec<u64> = (0..n_churn).map(|_| open(&url, &o).unwrap()).collect();
    for &c in steady.iter().chain(&churn) {
        release(get_frame(c, 20_000).unwrap()).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let reconnects = Arc::new(AtomicU64::new(0));
    let churners = reconnect_in_a_loop(&churn, 5000, Duration::from_millis(50), &stop, &reconnects);
    let consumers: Vec<_> = steady
        .iter()
        .map(|&c| {
            let stop = stop.clone();
            std::thread::spawn(move || gaps_until(c, &stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let mut gaps = Vec::new();
    let mut timeouts = 0;
    for t in consumers {
        let (g, n) = t.join().unwrap();
        gaps.extend(g);
        timeouts += n;
    }
    churners.into_iter().for_each(|t| t.join().unwrap());
    let fps = gaps.len() as f64 / n_steady as f64 / secs as f64;
    let mut at = |q: f64| percentile(&mut gaps, q);
    let r = reconnects.load(Ordering::Relaxed);
    eprintln!(
        "churn {n_steady} steady + {n_churn} reconnecting: {fps:.1} fps each, gap p50 {:.1} ms p99 {:.1} ms max {:.1} ms, {timeouts} timeouts, {r} reconnects",
        at(0.5),
        at(0.99),
        at(1.0)
    );
    assert!(r >= n_churn as u64, "{r} reconnects");
    if gap_ms > 0.0 {
        assert_eq!(timeouts, 0, "steady cameras timed out");
        assert!(at(0.99) <= gap_ms, "steady gap p99 {:.1} ms > {gap_ms} ms", at(0.99));
        assert!(fps >= 29.0, "steady cameras at {fps:.1} fps");
    }
    for &c in steady.iter().chain(&churn) {
        close(c, 5000).unwrap();
    }
}

/// MJPEG cameras got wrong pixels on the GPU by default, or never reached it, and then different
/// pixels per decoder (swscale's bicubic chroma on the CPU, up to 12 levels from NVDEC's box):
/// every JPEG layout (4:2:0, 4:2:2, 4:4:4, gray; full and limited range; an odd size; restart
/// markers each MCU row and at odd MCU intervals, from `cjpeg`) on every
/// decoder choice (nvJPEG, direct NVDEC, software + upload, AUTO, the CPU) must give FFmpeg's
/// software decode with its chroma box-averaged ([`jpeg_box_nv12`], the one rule of every
/// decoder) within 1 level per sample (JPEG IDCTs may round apart), unmarked, report JFIF's colours
/// (BT.601, the stream's range, chroma centred), and land on the decoder asked for (AUTO: nvJPEG
/// where it ran, else direct NVDEC; software where NVDEC refuses). FFmpeg's CUDA hwaccel must refuse JPEG at open (its frames were
/// timing-dependent under compute-sanitizer). nvJPEG is a toolkit library: where it does not
/// load its rows are skipped, unless `NVCAM_REQUIRE_NVJPEG=1`. Prints one line per clip and
/// decoder.
#[test]
fn jpeg_every_layout_on_every_decoder_matches_ffmpeg() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let need_nvjpeg = std::env::var("NVCAM_REQUIRE_NVJPEG").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut nvjpeg_ran = false;
    let mut clips = Vec::new();
    for (w, h, n) in [(640usize, 480usize, 8usize), (1280, 720, 8), (161, 97, 4)] {
        clips.extend(jpeg_clips(w as u32, h as u32, n as u32).into_iter().map(|(c, fmt, range)| (c, fmt, range, "", w, h, n)));
    }
    clips.extend(restart_jpeg_clips().into_iter().map(|c| (c.path, c.fmt, c.range, c.label, c.width, c.height, c.frames)));
    {
        for (c, fmt, range, label, w, h, n) in clips {
            let (cw, chh) = jpeg_chroma_size(fmt, w, h);
            let native = native_frames(&c, fmt, w * h + 2 * cw * chh);
            assert_eq!(native.len(), n, "{fmt}: reference frames");
            let want: Vec<Vec<u8>> = native.iter().map(|f| jpeg_box_nv12(f, fmt, w, h)).collect();
            let decoders = [
                ("nvjpeg", NVCAM_DECODER_NVJPEG),
                ("nvdec", NVCAM_DECODER_NVDEC),
                ("ffmpeg-hw", NVCAM_DECODER_FFMPEG_HW),
                ("upload", NVCAM_DECODER_SOFTWARE),
                ("auto", NVCAM_DECODER_AUTO),
                ("cpu", u32::MAX),
            ];
            let mut auto_want = NVCAM_DECODER_NVDEC;
            // NVDEC writes no valid chroma at the odd edge of 4:2:2 and 4:4:4 (seen: up to 255
            // levels off on an H200) and is not offered those; AUTO then goes on to software.
            let odd_box = (w % 2 == 1 || h % 2 == 1) && matches!(fmt, "yuvj422p" | "yuvj444p");
            for (dname, decoder) in decoders {
                let o = if decoder == u32::MAX { options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING) } else { gpu_options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING, decoder) };
                let what = if label.is_empty() { format!("{w}x{h} {fmt} on {dname}") } else { format!("{w}x{h} {fmt} {label} on {dname}") };
                if decoder == NVCAM_DECODER_FFMPEG_HW {
                    match open(c.to_str().unwrap(), &o) {
                        Err((NVCAM_E_UNSUPPORTED, msg)) if msg.contains("mjpeg") => println!("{what}: refused at open, as it must be"),
                        Err(e) => failures.push(format!("{what}: open: {e:?}, want NVCAM_E_UNSUPPORTED naming mjpeg")),
                        Ok(cam) => {
                            close(cam, 5000).unwrap();
                            failures.push(format!("{what}: opened; FFmpeg's hwaccel must refuse JPEG"));
                        }
                    }
                    continue;
                }
                let cam = match open(c.to_str().unwrap(), &o) {
                    Ok(cam) => cam,
                    Err((NVCAM_E_UNSUPPORTED, msg)) if decoder == NVCAM_DECODER_NVDEC && odd_box && msg.contains("odd edge") => {
                        println!("{what}: refused at open, as it must be");
                        if auto_want == NVCAM_DECODER_NVDEC {
                            auto_want = NVCAM_DECODER_SOFTWARE;
                        }
                        continue;
                    }
                    Err(e) if decoder == NVCAM_DECODER_NVJPEG && !need_nvjpeg && e.1.contains("nvJPEG") => {
                        println!("{what}: skipped: {}", e.1);
                        continue;
                    }
                    Err(e) => {
                        println!("{what}: open refused: {e:?}");
                        failures.push(format!("{what}: open: {e:?}"));
                        continue;
                    }
                };
                let (mut ly, mut lc) = (Vec::new(), Vec::new());
                let mut colours = None;
                for (k, wk) in want.iter().enumerate() {
                    let f = match get_frame(cam, 20_000) {
                        Ok(f) => f,
                        Err(e) => {
                            failures.push(format!("{what}: frame {k}: {e:?}"));
                            break;
                        }
                    };
                    let i = info(f).unwrap();
                    colours = Some((i.color_matrix, i.color_range, i.chroma_siting));
                    // A whole picture (restart markers counted right among them) is never marked.
                    if i.flags & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS) != 0 {
                        failures.push(format!("{what}: frame {k} marked damaged (flags {:#x})", i.flags));
                    }
                    let px = pixels(f).unwrap();
                    release(f).unwrap();
                    let split = w.div_ceil(2) * 2 * h;
                    let d = |a: &[u8], b: &[u8]| a.iter().zip(b).map(|(&x, &y)| x.abs_diff(y)).collect::<Vec<u8>>();
                    ly.extend(d(&px[..split], &wk[..split]));
                    lc.extend(d(&px[split..], &wk[split..]));
                }
                let st = stats(cam);
                close(cam, 5000).unwrap();
                if decoder == NVCAM_DECODER_NVJPEG && st.decoder == NVCAM_DECODER_NVJPEG {
                    nvjpeg_ran = true;
                    auto_want = NVCAM_DECODER_NVJPEG;
                }
                let summary = |v: &mut Vec<u8>| -> (u8, u8, f64) {
                    if v.is_empty() {
                        return (255, 255, 255.0);
                    }
                    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64;
                    v.sort_unstable();
                    (v[v.len() - 1], v[(v.len() - 1) * 99 / 100], mean)
                };
                let (ymax, yp99, ymean) = summary(&mut ly);
                let (cmax, cp99, cmean) = summary(&mut lc);
                println!(
                    "{what}: decoder {} memory {} colours {:?}; luma max {ymax} p99 {yp99} mean {ymean:.3}; chroma (box rule) max {cmax} p99 {cp99} mean {cmean:.3}",
                    st.decoder, st.memory, colours
                );
                if colours != Some((NVCAM_MATRIX_BT601, range, NVCAM_SITING_CENTER)) {
                    failures.push(format!("{what}: colours {colours:?}, want BT.601, range {range}, centred"));
                }
                if ymax > 1 || cmax > 1 {
                    failures.push(format!("{what}: luma max {ymax} p99 {yp99}, chroma max {cmax} p99 {cp99}"));
                }
                let landed = match decoder {
                    NVCAM_DECODER_AUTO => auto_want,
                    u32::MAX => NVCAM_DECODER_SOFTWARE,
                    d => d,
                };
                if st.decoder != landed {
                    failures.push(format!("{what}: decoded by {}, want {landed}", st.decoder));
                }
            }
        }
    }
    if need_nvjpeg && !nvjpeg_ran {
        failures.push("NVCAM_REQUIRE_NVJPEG=1 but nvJPEG never ran".into());
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

static LOG: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn on_log(_level: i32, msg: *const std::ffi::c_char, _user: *mut std::ffi::c_void) {
    // SAFETY: nvcam passes a NUL-terminated message valid for the call.
    let m = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    LOG.lock().unwrap_or_else(|e| e.into_inner()).push(m);
}

/// A progressive JPEG camera (SOF2, which neither nvJPEG's hardware back end nor NVDEC's JPEG
/// engine decodes) got no frames, or wrong ones, on a GPU: nvJPEG asked for must refuse it with
/// an error that says why (at open or at its first picture), direct NVDEC asked for must refuse
/// it at open, and AUTO must deliver every picture within 1 level of FFmpeg's decode (box rule)
/// on software + upload, with nvJPEG's refusal in the log.
#[test]
fn jpeg_every_gpu_decoder_refuses_progressive_and_auto_falls_back() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
    assert_eq!(unsafe { nvcam_log_set_callback(Some(on_log), std::ptr::null_mut(), NVCAM_LOG_INFO) }, NVCAM_OK);
    let need_nvjpeg = std::env::var("NVCAM_REQUIRE_NVJPEG").is_ok_and(|v| v == "1");
    let p = progressive_jpeg_clip();
    let (w, h) = (p.width, p.height);
    let (cw, ch) = jpeg_chroma_size(p.fmt, w, h);
    let want: Vec<Vec<u8>> = native_frames(&p.path, p.fmt, w * h + 2 * cw * ch).iter().map(|f| jpeg_box_nv12(f, p.fmt, w, h)).collect();
    assert_eq!(want.len(), p.frames);
    let url = p.path.to_str().unwrap();
    let flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
    let what = |d: &str| format!("{w}x{h} {} progressive on {d}", p.fmt);
    let refusal = "nvJPEG's hardware back end does not take this JPEG";
    let mut nvjpeg_there = true;
    match open(url, &gpu_options(flags, NVCAM_DECODER_NVJPEG)) {
        Err(e) if e.1.contains("nvJPEG") && !e.1.contains(refusal) && !need_nvjpeg => {
            println!("{}: skipped: {}", what("nvjpeg"), e.1);
            nvjpeg_there = false;
        }
        Err(e) => {
            assert!(e.0 == NVCAM_E_UNSUPPORTED && e.1.contains(refusal), "{}: open: {e:?}", what("nvjpeg"));
            println!("{}: refused at open: {}", what("nvjpeg"), e.1);
        }
        Ok(cam) => {
            let r = get_frame(cam, 10_000);
            if let Ok(f) = r {
                release(f).unwrap();
            }
            close(cam, 5000).unwrap();
            let e = r.err().unwrap_or_else(|| panic!("{}: a frame delivered", what("nvjpeg")));
            let logged = LOG.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|m| m.contains(refusal));
            assert!(e.1.contains(refusal) || logged, "{}: frame error {e:?}, and no log line says '{refusal}'", what("nvjpeg"));
            println!("{}: refused at the first picture: {e:?}", what("nvjpeg"));
        }
    }
    match open(url, &gpu_options(flags, NVCAM_DECODER_NVDEC)) {
        Err(e) => {
            assert!(e.0 == NVCAM_E_UNSUPPORTED && e.1.contains("progressive"), "{}: open: {e:?}", what("nvdec"));
            println!("{}: refused at open: {}", what("nvdec"), e.1);
        }
        Ok(cam) => {
            close(cam, 5000).unwrap();
            panic!("{}: opened; NVDEC's JPEG engine must refuse progressive JPEG", what("nvdec"));
        }
    }
    LOG.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let cam = open(url, &gpu_options(flags, NVCAM_DECODER_AUTO)).unwrap_or_else(|e| panic!("{}: open: {e:?}", what("auto")));
    let mut worst = 0u8;
    for (k, wk) in want.iter().enumerate() {
        let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("{}: frame {k}: {e:?}", what("auto")));
        let px = pixels(f).unwrap();
        release(f).unwrap();
        worst = worst.max(px.iter().zip(wk).map(|(&a, &b)| a.abs_diff(b)).max().unwrap_or(255));
    }
    let st = stats(cam);
    close(cam, 5000).unwrap();
    let log: Vec<String> = LOG.lock().unwrap_or_else(|e| e.into_inner()).clone();
    unsafe { nvcam_log_set_callback(None, std::ptr::null_mut(), NVCAM_LOG_INFO) };
    let why: Vec<&String> = log.iter().filter(|m| m.contains(refusal) || m.contains("progressive")).collect();
    println!("{}: decoder {} memory {}; {} frames, max diff {worst} (box rule); log: {why:?}", what("auto"), st.decoder, st.memory, want.len());
    assert!(worst <= 1, "{}: max diff {worst}", what("auto"));
    assert_eq!(st.decoder, NVCAM_DECODER_SOFTWARE, "{}: decoder", what("auto"));
    if nvjpeg_there {
        assert!(log.iter().any(|m| m.contains(refusal) && m.contains("direct NVDEC")), "{}: no log line with nvJPEG's refusal: {log:?}", what("auto"));
    }
}

/// 10-bit cameras were decoded in software and rounded to 8 bits on a GPU (0.5 CPU cores per
/// 1080p30 camera, NVDEC idle). HEVC Main10 now decodes on NVDEC into P016 pools on every GPU
/// decoder choice (and in software + upload, and on the CPU), each frame bit-exact: every sample
/// is FFmpeg's software decode << 6, the frame says P016 and 10 bits. With `NVCAM_OPEN_8BIT`
/// direct NVDEC writes NV12, each sample within 1 of the 10-bit value / 4 (the engine rounds).
#[test]
fn ten_bit_hevc_on_every_decoder_is_bit_exact_p016() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    for (w, h, n) in [(1920usize, 1080usize, 24usize), (1366, 768, 12)] {
        let c = ten_bit_clip(w as u32, h as u32, n as u32);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let native = native_frames(&c, "yuv420p10le", 2 * (w * h + 2 * cw * ch));
        assert_eq!(native.len(), n);
        let sample = |b: &[u8], i: usize| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]);
        let cases = [
            ("nvdec", NVCAM_DECODER_NVDEC, NVCAM_DECODER_NVDEC),
            ("ffmpeg-hw", NVCAM_DECODER_FFMPEG_HW, NVCAM_DECODER_FFMPEG_HW),
            ("auto", NVCAM_DECODER_AUTO, auto_hw_decoder()),
            ("upload", NVCAM_DECODER_SOFTWARE, NVCAM_DECODER_SOFTWARE),
            ("cpu", u32::MAX, NVCAM_DECODER_SOFTWARE),
        ];
        for (name, decoder, want_decoder) in cases {
            let flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
            let o = if decoder == u32::MAX { options(flags) } else { gpu_options(flags, decoder) };
            let cam = open(c.to_str().unwrap(), &o).unwrap_or_else(|e| panic!("{w}x{h} on {name}: open: {e:?}"));
            for (k, want) in native.iter().enumerate() {
                let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("{w}x{h} on {name}: frame {k}: {e:?}"));
                let i = info(f).unwrap();
                assert_eq!((i.format, i.bit_depth, i.width as usize, i.height as usize), (NVCAM_FORMAT_P016, 10, w, h), "{w}x{h} on {name}: frame {k}");
                let px = pixels(f).unwrap();
                let row = 2 * cw;
                for y in 0..h {
                    for x in 0..w {
                        assert_eq!(sample(&px, y * row + x), sample(want, y * w + x) << 6, "{w}x{h} on {name}: frame {k} luma ({x}, {y})");
                    }
                }
                for y in 0..ch {
                    for x in 0..cw {
                        let at = h * row + y * row + 2 * x;
                        let (u, v) = (w * h + y * cw + x, w * h + cw * ch + y * cw + x);
                        assert_eq!(
                            (sample(&px, at), sample(&px, at + 1)),
                            (sample(want, u) << 6, sample(want, v) << 6),
                            "{w}x{h} on {name}: frame {k} chroma ({x}, {y})"
                        );
                    }
                }
                release(f).unwrap();
            }
            let st = stats(cam);
            assert_eq!(st.decoder, want_decoder, "{w}x{h} on {name}");
            println!("{w}x{h} HEVC Main10 on {name}: {n} P016 frames equal FFmpeg's decode << 6 (decoder {})", st.decoder);
            close(cam, 5000).unwrap();
        }
        // 8-bit hosts: NV12 from the engine, each sample the 10-bit value rounded to 8 bits.
        let cam = open(c.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING | NVCAM_OPEN_8BIT, NVCAM_DECODER_NVDEC)).unwrap();
        let mut worst = 0i32;
        for want in &native {
            let f = get_frame(cam, 20_000).unwrap();
            let i = info(f).unwrap();
            assert_eq!((i.format, i.bit_depth), (NVCAM_FORMAT_NV12, 8));
            let px = pixels(f).unwrap();
            let row = 2 * cw;
            for y in 0..h {
                for x in 0..w {
                    let d = px[y * row + x] as i32 - ((sample(want, y * w + x) as i32 + 2) >> 2).min(255);
                    worst = worst.max(d.abs());
                }
            }
            release(f).unwrap();
        }
        println!("{w}x{h} HEVC Main10 on nvdec with NVCAM_OPEN_8BIT: NV12, luma at most {worst} from the 10-bit value / 4");
        assert!(worst <= 1, "NV12 from a 10-bit stream: {worst} levels from the rounded value");
        assert_eq!(stats(cam).decoder, NVCAM_DECODER_NVDEC);
        close(cam, 5000).unwrap();
    }
}

/// HDR cameras reported unknown colours on the GPU: an HEVC Main10 stream flagged BT.2020 + PQ
/// (and one + HLG) reports BT.2020, the transfer, and P016 at 10 bits on every decoder choice
/// (direct NVDEC reads them from its video signal description, FFmpeg from the VUI).
#[test]
fn hdr_stream_reports_bt2020_and_its_transfer_on_every_decoder() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    for (trc, want) in [("smpte2084", NVCAM_TRANSFER_PQ), ("arib-std-b67", NVCAM_TRANSFER_HLG)] {
        let c = hdr_clip(trc, 320, 240);
        for (name, decoder) in [("nvdec", NVCAM_DECODER_NVDEC), ("ffmpeg-hw", NVCAM_DECODER_FFMPEG_HW), ("auto", NVCAM_DECODER_AUTO), ("upload", NVCAM_DECODER_SOFTWARE)] {
            let cam = open(c.to_str().unwrap(), &gpu_options(NVCAM_OPEN_NO_PACING, decoder)).unwrap_or_else(|e| panic!("{trc} on {name}: {e:?}"));
            let f = get_frame(cam, 20_000).unwrap();
            let i = info(f).unwrap();
            println!("{trc} on {name}: matrix {} transfer {} siting {} format {} bits {}", i.color_matrix, i.color_transfer, i.chroma_siting, i.format, i.bit_depth);
            assert_eq!((i.color_matrix, i.color_transfer, i.format, i.bit_depth), (NVCAM_MATRIX_BT2020, want, NVCAM_FORMAT_P016, 10), "{trc} on {name}");
            release(f).unwrap();
            close(cam, 5000).unwrap();
        }
    }
}

/// A 10-bit or 4:2:2 stream is handled the same way by every decoder choice: the GPU-only ones
/// (direct NVDEC, FFmpeg's CUDA hwaccel) refuse it at open with UNSUPPORTED, naming the pixel
/// format; AUTO decodes it in software and uploads it; the CPU decodes it.
#[test]
fn ten_bit_and_422_are_refused_at_open_by_gpu_only_decoders() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    for (c, fmt) in [
        (clip("gpu-h264-10bit-320x240.mp4", "320x240", 30, "libx264", &["-pix_fmt", "yuv420p10le"]), "yuv420p10le"),
        (clip("gpu-h264-422-320x240.mp4", "320x240", 30, "libx264", &["-pix_fmt", "yuv422p"]), "yuv422p"),
    ] {
        let url = c.to_str().unwrap();
        for d in [NVCAM_DECODER_NVDEC, NVCAM_DECODER_FFMPEG_HW] {
            let (code, msg) = open(url, &gpu_options(0, d)).unwrap_err();
            assert_eq!(code, NVCAM_E_UNSUPPORTED, "decoder {d}: {msg}");
            assert!(msg.contains(fmt), "decoder {d}: the message names {fmt}: {msg}");
        }
        let cam = open(url, &gpu_options(NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO)).unwrap();
        let f = get_frame(cam, 10_000).unwrap();
        assert_eq!((info(f).unwrap().memory, stats(cam).decoder), (NVCAM_MEMORY_DEVICE, NVCAM_DECODER_SOFTWARE));
        release(f).unwrap();
        close(cam, 5000).unwrap();
        let cam = open(url, &options(NVCAM_OPEN_NO_PACING)).unwrap();
        release(get_frame(cam, 10_000).unwrap()).unwrap();
        close(cam, 5000).unwrap();
    }
}
