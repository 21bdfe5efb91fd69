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
        HostCtx(own_context(0).1)
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
    // The cap is the host's setting, not the GPU's sessions running out.
    assert_eq!((g.session_limit, g.sessions_exhausted), (0, 0), "{g:?}");
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
    assert_eq!((g.session_limit, g.sessions_exhausted, g.decoder_load), (0, 0, u32::MAX), "no GPU: no limit met, no load known");
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

// Shareable pools across processes (`test-hooks`): the test binary re-runs itself as the
// consumer, with the pool's descriptor inherited under the number in `VMM_FD`.

#[cfg(all(feature = "test-hooks", target_os = "linux"))]
use nvcam::diag::shared_pool::{self, Desc};
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// What the consumer child does (`check`, `hold`, `oversize`); unset in the parent.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
const VMM_ROLE: &str = "NVCAM_TEST_VMM_ROLE";
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
const VMM_FD: &str = "NVCAM_TEST_VMM_FD";
/// `width,height,pitch,slots,slot_bytes,alloc_bytes,slot,seed`.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
const VMM_DESC: &str = "NVCAM_TEST_VMM_DESC";

/// A packed NV12 image no two slots or offsets share by chance.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_pattern(d: &Desc, seed: u8) -> Vec<u8> {
    let n = (d.width as usize).div_ceil(2) * 2 * (d.height as usize + (d.height as usize).div_ceil(2));
    (0..n).map(|k| ((k * 131 + k / 4093) as u8) ^ seed).collect()
}

/// Starts the consumer: this binary, this test alone, with `role` and a descriptor of `fd` that
/// the child inherits (a dup without FD_CLOEXEC, closed here once the child has it).
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_child(test: &str, role: &str, fd: &OwnedFd, d: &Desc, slot: usize, seed: u8) -> std::process::Child {
    let dup = unsafe { libc::dup(fd.as_raw_fd()) };
    assert!(dup >= 0, "dup: {}", std::io::Error::last_os_error());
    assert_eq!(unsafe { libc::fcntl(dup, libc::F_SETFD, 0) }, 0, "clearing FD_CLOEXEC");
    let desc = format!("{},{},{},{},{},{},{slot},{seed}", d.width, d.height, d.pitch, d.slots, d.slot_bytes, d.alloc_bytes);
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(VMM_ROLE, role)
        .env(VMM_FD, dup.to_string())
        .env(VMM_DESC, desc)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    unsafe { libc::close(dup) };
    child
}

/// The consumer's `VMM-CHILD` lines, as they come (a thread reads the pipe).
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
            println!("  child: {l}");
            // The test harness's "test NAME ... " has no line end of its own: the verdict may
            // follow it on the same line.
            if let Some(i) = l.find("VMM-CHILD") {
                if tx.send(l[i..].to_string()).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The consumer's side, when this process is the child (`VMM_ROLE` set): imports the parent's
/// pool and prints `VMM-CHILD ok` or `VMM-CHILD fail: why` (`hold` prints `VMM-CHILD mapped`
/// and waits to be killed). Returns whether this process is the child.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_consumer() -> bool {
    let Ok(role) = std::env::var(VMM_ROLE) else { return false };
    let n: Vec<u64> = std::env::var(VMM_DESC).unwrap().split(',').map(|v| v.parse().unwrap()).collect();
    let d = Desc { width: n[0] as u32, height: n[1] as u32, pitch: n[2] as usize, slots: n[3] as usize, slot_bytes: n[4] as usize, alloc_bytes: n[5] };
    let (slot, seed) = (n[6] as usize, n[7] as u8);
    let fd = unsafe { OwnedFd::from_raw_fd(std::env::var(VMM_FD).unwrap().parse().unwrap()) };
    let _s = Session::with(config(0), NVCAM_LOG_WARN);
    let verdict = match role.as_str() {
        "check" => vmm_check(fd, d, slot, seed),
        "hold" => {
            let pool = shared_pool::import(0, fd, d).unwrap();
            assert_eq!(pool.read(slot).unwrap(), vmm_pattern(&d, seed));
            println!("VMM-CHILD mapped");
            std::thread::sleep(Duration::from_secs(120));
            Err("not killed".into())
        }
        "oversize" => vmm_oversize(fd, d, slot, seed),
        r => Err(format!("unknown role {r}")),
    };
    match verdict {
        Ok(()) => println!("VMM-CHILD ok"),
        Err(why) => println!("VMM-CHILD fail: {why}"),
    }
    true
}

/// The mapped slot holds the parent's bytes; the import is read-only and not exportable; a
/// consumer's fence on it completes and leaves the slot reusable.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_check(fd: OwnedFd, d: Desc, slot: usize, seed: u8) -> Result<(), String> {
    let pool = shared_pool::import(0, fd, d)?;
    let got = pool.read(slot)?;
    let want = vmm_pattern(&d, seed);
    if let Some(at) = first_diff(&got, &want) {
        return Err(format!("slot {slot} differs at byte {at} (fnv {:x} vs {:x})", fnv(&got), fnv(&want)));
    }
    if pool.exportable() || pool.export().is_ok() {
        return Err("an imported pool offered itself for export".into());
    }
    if pool.mark_written(slot).is_ok() {
        return Err("an imported pool accepted a write mark".into());
    }
    // The legacy default stream of the library's context: a consumer's release after its work.
    pool.fence_after_stream(slot, 0)?;
    if !wait_until(Duration::from_secs(5), || pool.reusable(slot)) {
        return Err("the consumer fence never completed".into());
    }
    Ok(())
}

/// Descriptions that claim more than the allocation (or overflow) are refused; the true one maps.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_oversize(fd: OwnedFd, d: Desc, slot: usize, seed: u8) -> Result<(), String> {
    let row = (d.width as usize).div_ceil(2) * 2;
    let lies = [
        ("an allocation larger than the one exported", Desc { alloc_bytes: d.alloc_bytes + (64 << 20), ..d }),
        ("more slots than the allocation holds", Desc { slots: (d.alloc_bytes as usize / d.slot_bytes) + 1, ..d }),
        ("slots that overflow", Desc { slot_bytes: usize::MAX / 2 + 1, slots: 2, ..d }),
        ("a slot smaller than its image", Desc { slot_bytes: d.slot_bytes / 2, ..d }),
        ("a pitch shorter than a row", Desc { pitch: row - 2, ..d }),
        ("an image whose size overflows", Desc { pitch: usize::MAX / 4, ..d }),
    ];
    for (what, lie) in lies {
        match shared_pool::import(0, fd.try_clone().unwrap(), lie) {
            Ok(_) => return Err(format!("{what}: import accepted ({lie:?})")),
            Err(e) => println!("refused as it must be, {what}: {e}"),
        }
    }
    let pool = shared_pool::import(0, fd, d)?;
    (pool.read(slot)? == vmm_pattern(&d, seed)).then_some(()).ok_or("the true description maps other bytes".into())
}

/// A publisher's pool of `slots` slots with `seed`'s pattern in `slot`, checked through its
/// own download.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
fn vmm_publisher(width: u32, height: u32, slots: usize, slot: usize, seed: u8) -> shared_pool::SharedPool {
    let pool = shared_pool::exportable(0, width, height, slots).unwrap();
    assert!(pool.exportable());
    let d = pool.desc();
    assert!(d.alloc_bytes >= (d.slots * d.slot_bytes) as u64 && d.pitch.is_multiple_of(512), "{d:?}");
    let img = vmm_pattern(&d, seed);
    pool.write(slot, &img).unwrap();
    assert!(pool.read(slot).unwrap() == img, "the publisher's own download differs");
    pool
}

/// A publisher's frame read by another process through the exported descriptor: what the
/// consumer maps is the same memory, byte for byte, not a copy or another allocation; the
/// import refuses writes and exports of its own, and its consumer fences work.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
#[test]
fn an_exported_pool_maps_the_same_bytes_in_another_process() {
    if !need_gpu!() || vmm_consumer() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let pool = vmm_publisher(1920, 1080, 4, 2, 7);
    let (fd, alloc) = pool.export().unwrap();
    assert_eq!(alloc, pool.desc().alloc_bytes);
    let mut child = vmm_child(test_name!(), "check", &fd, &pool.desc(), 2, 7);
    let lines = vmm_lines(&mut child);
    let verdict = lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| format!("no verdict: {e}"));
    let status = child.wait().unwrap();
    assert_eq!(verdict, "VMM-CHILD ok");
    assert!(status.success(), "consumer exited {status}");
    // A second export is a descriptor of its own.
    let (fd2, _) = pool.export().unwrap();
    assert_ne!(fd2.as_raw_fd(), fd.as_raw_fd());
    println!("1920x1080 x 4 slots ({alloc} bytes): the consumer process read slot 2 byte for byte");
}

/// A consumer killed with SIGKILL while it maps the pool: the publisher's pool stays intact and
/// usable, and once the publisher drops it and the deferred queue drains, device memory is back
/// at its baseline (within 8 MiB: the bound of the reconnect test; the pool is ~106 MB, the
/// child's context hundreds), so neither process's allocation outlives it.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
#[test]
fn a_killed_consumer_leaves_the_pool_intact_and_nothing_behind() {
    if !need_gpu!() || vmm_consumer() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let _host = HostCtx::new();
    // One pool made and dropped first: the baseline then holds every one-time cost.
    drop(vmm_publisher(3840, 2160, 8, 5, 3));
    let drained = || {
        wait_until(Duration::from_secs(10), || {
            assert_eq!(nvcam_gpu_drain(0), NVCAM_OK);
            gpu_stats(0).deferred_buffers == 0
        })
    };
    assert!(drained());
    let (s0, m0) = (gpu_stats(0), mem_free());
    let pool = vmm_publisher(3840, 2160, 8, 5, 3);
    let d = pool.desc();
    assert_eq!(gpu_stats(0).bytes_in_pools, s0.bytes_in_pools + d.alloc_bytes, "the pool is counted in the stats");
    let (fd, _) = pool.export().unwrap();
    let mut child = vmm_child(test_name!(), "hold", &fd, &d, 5, 3);
    let lines = vmm_lines(&mut child);
    let said = lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| format!("nothing: {e}"));
    assert_eq!(said, "VMM-CHILD mapped");
    let m1 = mem_free();
    assert!(m0 - m1 >= d.alloc_bytes as i64, "the pool's memory is not visible in use: {m0} -> {m1}");
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status}");
    // The consumer's death costs the publisher nothing: the frame is there, and a new one writes.
    assert!(pool.read(5).unwrap() == vmm_pattern(&d, 3), "slot 5 changed when the consumer died");
    pool.write(1, &vmm_pattern(&d, 9)).unwrap();
    assert!(pool.read(1).unwrap() == vmm_pattern(&d, 9));
    drop(fd);
    drop(pool);
    assert!(drained(), "the pool's mapping never left the deferred queue: {:?}", gpu_stats(0));
    let s2 = gpu_stats(0);
    assert_eq!(s2.bytes_in_pools, s0.bytes_in_pools);
    assert!(s2.device_frees > s0.device_frees);
    // The killed process's context goes with it, in the driver's own time.
    let mut m2 = mem_free();
    wait_until(Duration::from_secs(15), || {
        m2 = mem_free();
        m0 - m2 <= 8 * MIB
    });
    println!("free device memory: {} MiB before, {} MiB with the pool mapped in two processes, {} MiB after", m0 / MIB, m1 / MIB, m2 / MIB);
    assert!(m0 - m2 <= 8 * MIB, "{} bytes of device memory still in use after both processes let go", m0 - m2);
}

/// A consumer given a description that claims more than the allocation (a larger size, more
/// slots, sizes that overflow, a short pitch) refuses it instead of mapping out of bounds, and
/// maps the true one.
#[cfg(all(feature = "test-hooks", target_os = "linux"))]
#[test]
fn an_import_whose_description_claims_more_than_the_allocation_is_refused() {
    if !need_gpu!() || vmm_consumer() {
        return;
    }
    let _s = Session::with(config(0), NVCAM_LOG_INFO);
    let pool = vmm_publisher(640, 360, 3, 0, 11);
    let (fd, _) = pool.export().unwrap();
    let mut child = vmm_child(test_name!(), "oversize", &fd, &pool.desc(), 0, 11);
    let lines = vmm_lines(&mut child);
    let verdict = lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| format!("no verdict: {e}"));
    let status = child.wait().unwrap();
    assert_eq!(verdict, "VMM-CHILD ok");
    assert!(status.success(), "consumer exited {status}");
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
    let Churned { mut gaps, failures, reconnects: r } = churn_scenario(&steady, &churn, 5000, Duration::from_millis(50), Duration::from_secs(secs));
    let timeouts: u32 = failures.iter().sum();
    let fps = gaps.len() as f64 / n_steady as f64 / secs as f64;
    let mut at = |q: f64| percentile(&mut gaps, q);
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

include!("gpu/formats.rs");
