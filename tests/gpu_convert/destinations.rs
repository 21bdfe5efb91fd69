// Part of the `gpu_convert` test binary (included by tests/gpu_convert.rs, so the tests keep their
// names): host downloads at a pitch into every kind of host memory, side by side,
// and destinations on another GPU or on none.

/// Host downloads at a pitch (rows apart by more than a row) into pageable memory, page-locked
/// memory at an offset inside its allocation, and registered memory (`cuMemHostRegister` of a
/// plain allocation): every row equals the packed device result, and neither the padding
/// between rows nor anything past the end is written. 1080p, so pageable downloads go in chunks.
#[test]
#[ignore]
fn host_downloads_at_a_pitch_into_pageable_pinned_and_registered_memory_write_only_the_rows() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let _cuda = Cuda::new();
    let (cam, f, _fi, _) = frame_of("testsrc://1920x1080@30", NVCAM_DECODER_AUTO);
    for (format, name) in [(NVCAM_FORMAT_BGRA8, "BGRA8"), (NVCAM_FORMAT_BGR8, "BGR8"), (NVCAM_FORMAT_RGB_F32_PLANAR, "RGB_F32")] {
        let s = spec(format);
        let mut packed_n = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(f, &s, 0, &mut packed_n) }, NVCAM_OK);
        let mut packed = vec![0u8; packed_n as usize];
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, packed.as_mut_ptr().cast(), 0, packed_n, 0) }, NVCAM_OK, "{}", last_error());
        let planes = if format == NVCAM_FORMAT_RGB_F32_PLANAR { 3 } else { 1 };
        let rows = 1080 * planes;
        let row = packed.len() / rows;
        let pitch = row + 68;
        let mut n = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(f, &s, pitch as u64, &mut n) }, NVCAM_OK);
        let n = n as usize;
        assert_eq!(n, (rows - 1) * pitch + row);
        let check = |got: &[u8], what: &str| {
            for r in 0..rows {
                assert!(got[r * pitch..r * pitch + row] == packed[r * row..(r + 1) * row], "{name} {what}: row {r} differs from the packed download");
                if r + 1 < rows {
                    assert!(got[r * pitch + row..(r + 1) * pitch].iter().all(|&b| b == 0xA7), "{name} {what}: the padding after row {r} was written");
                }
            }
            assert!(got[n..].iter().all(|&b| b == 0xA7), "{name} {what}: wrote past the image");
        };
        // Pageable.
        let mut v = vec![0xA7u8; n + 64];
        let p0 = download_paths();
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, v.as_mut_ptr().cast(), pitch as u64, n as u64, 0) }, NVCAM_OK, "{}", last_error());
        check(&v, "pageable");
        // Page-locked, 4 KiB + 64 bytes into the allocation.
        let mut pin = Pinned::new(n + 8192);
        let off = 4096 + 64;
        let pb = &mut pin.bytes()[off..];
        pb.fill(0xA7);
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, pb.as_mut_ptr().cast(), pitch as u64, n as u64, 0) }, NVCAM_OK, "{}", last_error());
        check(&pb[..n + 64], "pinned");
        // Registered: a page-aligned span of an ordinary allocation.
        let mut raw = vec![0xA7u8; n + 64 + 8192];
        let start = raw.as_ptr().align_offset(4096);
        let span = (n + 64).next_multiple_of(4096);
        let reg = &mut raw[start..start + span];
        unsafe { ck("cuMemHostRegister", sys::cuMemHostRegister_v2(reg.as_mut_ptr().cast(), span, 0)) };
        let code = unsafe { nvcam_frame_convert(f, &s, reg.as_mut_ptr().cast(), pitch as u64, n as u64, 0) };
        unsafe { ck("cuMemHostUnregister", sys::cuMemHostUnregister(reg.as_mut_ptr().cast())) };
        assert_eq!(code, NVCAM_OK, "{}", last_error());
        check(&reg[..n + 64], "registered");
        let p1 = download_paths();
        assert_eq!((p1.0 - p0.0, p1.1 - p0.1), (2, 1), "{name}: pinned and registered memory go direct, the Vec through staging");
        println!("pitched download {name}: {rows} rows of {row} bytes at pitch {pitch}: pageable, pinned and registered equal the packed result");
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Four cameras' host downloads at once, from four threads: each gets its own staging area
/// (no camera waits behind another's lock), the bytes equal each camera's first download, and
/// nothing is allocated per call: after a warm-up, allocations happen only with a new staging
/// area (one per concurrent download at most), and sequential downloads allocate nothing. After
/// shutdown no worker thread is left.
#[test]
#[ignore]
fn host_downloads_of_four_cameras_run_side_by_side_and_allocate_nothing_per_call() {
    if !need_gpu!() {
        return;
    }
    let session = Session::quiet();
    let cuda = Cuda::new();
    let s = spec(NVCAM_FORMAT_BGRA8);
    let n = 1920 * 1080 * 4;
    let cams: Vec<u64> = (0..4).map(|_| open("testsrc://1920x1080@30", &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 10_000).unwrap()).collect();
    let g0 = gpu_stats(0);
    let reference: Vec<Vec<u8>> = frames
        .iter()
        .map(|&f| {
            let mut v = vec![0u8; n];
            assert_eq!(unsafe { nvcam_frame_convert(f, &s, v.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{}", last_error());
            v
        })
        .collect();
    let run = |iters: usize, threads: usize| {
        let barrier = std::sync::Barrier::new(threads);
        std::thread::scope(|sc| {
            for t in 0..threads {
                let (f, want, barrier, s) = (frames[t], &reference[t], &barrier, &s);
                sc.spawn(move || {
                    let _cuda = Cuda::new(); // the primary context current here, for cuMemHostAlloc
                    let mut v = vec![0u8; n];
                    let mut pin = Pinned::new(n);
                    barrier.wait();
                    for i in 0..iters {
                        let dst: &mut [u8] = if i % 2 == 0 { &mut v } else { pin.bytes() };
                        dst.fill(0);
                        assert_eq!(unsafe { nvcam_frame_convert(f, s, dst.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{}", last_error());
                        assert!(dst[..] == want[..], "camera {t}, download {i}: bytes differ from its first download");
                    }
                });
            }
        });
    };
    run(6, 4);
    let t0 = Instant::now();
    run(20, 4);
    let dt = t0.elapsed().as_secs_f64();
    let (g1, m1) = (gpu_stats(0), nvcam::diag::staging_areas(0));
    assert!(m1 >= 2, "four cameras downloading at once used {m1} staging area(s): they waited on each other");
    assert!(m1 <= 4, "{m1} staging areas for 4 concurrent downloads");
    // Same-size requests: each staging area allocates its scratch and pinned buffer once.
    let (dev_allocs, pin_allocs) = (g1.device_allocs - g0.device_allocs, g1.pinned_allocs - g0.pinned_allocs);
    assert!(dev_allocs <= m1 as u64 && pin_allocs <= m1 as u64, "allocations per call: device +{dev_allocs}, pinned +{pin_allocs} for {} downloads with {m1} staging areas", 4 + 4 * 26);
    run(10, 1);
    let g2 = gpu_stats(0);
    assert_eq!((g2.device_allocs - g1.device_allocs, g2.pinned_allocs - g1.pinned_allocs), (0, 0), "sequential downloads allocated");
    println!(
        "concurrent downloads: 4 cameras x 20 (pageable and pinned alternating) in {:.0} ms, {:.1} GB/s in all; {m1} staging areas; allocations after warm-up: device +{}, pinned +{}",
        dt * 1e3,
        (4 * 20 * n) as f64 / dt / 1e9,
        g2.device_allocs - g0.device_allocs,
        g2.pinned_allocs - g0.pinned_allocs
    );
    for f in frames {
        release(f).unwrap();
    }
    for c in cams {
        close(c, 5000).unwrap();
    }
    drop(cuda);
    drop(session);
    assert!(wait_until(Duration::from_secs(5), || threads_named("nvcam-work") == 0), "{} worker threads after shutdown", threads_named("nvcam-work"));
}

/// `dst_device` naming a GPU that does not exist: refused with NVCAM_E_NO_DEVICE before anything
/// is written (the destination, real memory on GPU 0, keeps its bytes), and a negative one with
/// NVCAM_E_INVALID_ARGUMENT; the frame then converts normally.
#[test]
#[ignore]
fn dst_on_a_gpu_that_does_not_exist_is_refused_and_nothing_written() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (cam, f, _fi, _) = frame_of("testsrc://320x240@30", NVCAM_DECODER_AUTO);
    let mut s = spec(NVCAM_FORMAT_BGRA8);
    s.dst_memory = NVCAM_MEMORY_DEVICE;
    let n = 320 * 240 * 4;
    let dst = cuda.alloc(n);
    fill_now(dst.0, 0xA5, n);
    let mut count = 0;
    unsafe { ck("cuDeviceGetCount", sys::cuDeviceGetCount(&mut count)) };
    for (device, want) in [(count, NVCAM_E_NO_DEVICE), (99, NVCAM_E_NO_DEVICE), (i32::MAX, NVCAM_E_NO_DEVICE), (-1, NVCAM_E_INVALID_ARGUMENT)] {
        s.dst_device = device;
        let code = unsafe { nvcam_frame_convert(f, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) };
        assert_eq!(code, want, "dst_device {device}: {}", last_error());
        let code = unsafe { nvcam_frames_convert_batch(&f, 1, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) };
        assert!(code != NVCAM_OK, "batch into dst_device {device} was accepted");
    }
    cuda.sync();
    assert!(dst.download(n).iter().all(|&b| b == 0xA5), "a refused conversion wrote");
    s.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(f, &s, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    cuda.sync();
    assert!(!dst.download(n).iter().all(|&b| b == 0xA5), "the conversion after the refusals wrote nothing");
    println!("dst_device {count}, 99, i32::MAX refused (no such GPU), -1 refused (argument); GPU 0 still converts");
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Whether two GPUs are visible; with fewer, a note (the test is not run), or a failure where
/// `REQUIRE_GPUS=2` says the machine has them.
fn two_gpus(test: &str) -> bool {
    let mut n = 0;
    let have = gpu_usable() && unsafe { sys::cuDeviceGetCount(&mut n) } == sys::CUresult::CUDA_SUCCESS && n >= 2;
    if !have {
        if std::env::var("REQUIRE_GPUS").is_ok_and(|v| v == "2") {
            panic!("{test}: REQUIRE_GPUS=2 but {n} GPU(s) are visible");
        }
        println!("{test}: {n} GPU(s) visible, 2 needed; not run (REQUIRE_GPUS=2 makes this a failure)");
    }
    have
}

/// GPU 1's primary context pushed while this lives, with a stream of its own.
struct Cuda1 {
    dev: sys::CUdevice,
    stream: sys::CUstream,
}

impl Cuda1 {
    fn new() -> Cuda1 {
        let dev = push_primary(1);
        Cuda1 { dev, stream: nonblocking_stream() }
    }
}

impl Drop for Cuda1 {
    fn drop(&mut self) {
        unsafe {
            sys::cuStreamSynchronize(self.stream);
            sys::cuStreamDestroy_v2(self.stream);
            let mut c = std::ptr::null_mut();
            sys::cuCtxPopCurrent_v2(&mut c);
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

/// A frame of a camera on GPU 0 converted into device memory of GPU 1, on a stream of GPU 1,
/// equals the same conversion into GPU 0's memory, packed and at a pitch, and on GPU 1's
/// legacy stream (0). Then the ordering: GPU 1's stream is held by a spinning kernel while two
/// frames of two cameras convert into two GPU 1 buffers, each released right after its call;
/// the second conversion must not overwrite the first's scratch before GPU 1 copied it out:
/// both buffers equal their frames' results. A GPU 1 pointer named as GPU 0 memory is refused.
#[test]
#[ignore]
fn conversion_into_another_gpus_memory_equals_the_same_gpu_result() {
    if !need_gpu!()
        || !two_gpus("conversion_into_another_gpus_memory_equals_the_same_gpu_result")
    {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let same_gpu = |f: u64, s: &nvcam_convert, pitch: usize, n: usize| -> Vec<u8> {
        let d = cuda.alloc(n);
        let mut s0 = *s;
        s0.dst_memory = NVCAM_MEMORY_DEVICE;
        s0.dst_device = 0;
        assert_eq!(unsafe { nvcam_frame_convert(f, &s0, d.0 as *mut _, pitch as u64, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
        cuda.sync();
        d.download(n)
    };
    let cams: Vec<u64> = ["testsrc://1280x720@30", "testsrc://640x480@30"].iter().map(|u| open(u, &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap()).collect();
    let frames: Vec<u64> = cams.iter().map(|&c| get_frame(c, 10_000).unwrap()).collect();
    let mut cases = Vec::new();
    for (format, pitch) in [(NVCAM_FORMAT_BGRA8, 0usize), (NVCAM_FORMAT_BGR8, 1280 * 3 + 256), (NVCAM_FORMAT_RGB_F16_PLANAR, 0)] {
        let mut s = spec(format);
        if format == NVCAM_FORMAT_RGB_F16_PLANAR {
            s.width = 640;
            s.height = 640;
            s.flags = NVCAM_CONVERT_LETTERBOX;
            s.pad = [114.0; 3];
        }
        cases.push((s, pitch));
    }
    let want: Vec<Vec<u8>> = cases
        .iter()
        .map(|(s, pitch)| {
            let mut n = 0u64;
            assert_eq!(unsafe { nvcam_frame_convert_size(frames[0], s, *pitch as u64, &mut n) }, NVCAM_OK);
            same_gpu(frames[0], s, *pitch, n as usize)
        })
        .collect();
    // The ordering check's frames, converted on GPU 0 (before GPU 1's context is pushed here).
    let mut so = spec(NVCAM_FORMAT_RGB_F32_PLANAR);
    so.width = 320;
    so.height = 320;
    so.flags = NVCAM_CONVERT_LETTERBOX;
    let no = 3 * 320 * 320 * 4;
    let wants: Vec<Vec<u8>> = frames.iter().map(|&f| same_gpu(f, &so, 0, no)).collect();
    assert!(wants[0] != wants[1], "the two cameras' frames convert alike: the ordering check proves nothing");
    let g1 = Cuda1::new();
    let alloc1 = |n: usize| -> u64 {
        let mut p = 0;
        unsafe {
            ck("cuMemAlloc(1)", sys::cuMemAlloc_v2(&mut p, n + 256));
        }
        fill_now(p, 0xA5, n + 256);
        p
    };
    let download1 = |p: u64, n: usize| -> Vec<u8> {
        let mut v = vec![0u8; n];
        unsafe { ck("cuMemcpyDtoH(1)", sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), p, n)) };
        v
    };
    for ((s, pitch), want) in cases.iter().zip(&want) {
        let n = want.len();
        for stream in [g1.stream as u64, 0] {
            let p = alloc1(n);
            let mut s1 = *s;
            s1.dst_memory = NVCAM_MEMORY_DEVICE;
            s1.dst_device = 1;
            assert_eq!(unsafe { nvcam_frame_convert(frames[0], &s1, p as *mut _, *pitch as u64, n as u64, stream) }, NVCAM_OK, "{}", last_error());
            unsafe { ck("cuStreamSynchronize(1)", sys::cuStreamSynchronize(stream as sys::CUstream)) };
            let got = download1(p, n + 256);
            let rows_ok = if *pitch == 0 {
                got[..n] == want[..]
            } else {
                let row = 1280 * 3;
                (0..720).all(|r| got[r * pitch..r * pitch + row] == want[r * pitch..r * pitch + row])
            };
            assert!(rows_ok, "format {} pitch {pitch} stream {stream:#x}: GPU 1 result differs from GPU 0's", s.format);
            assert!(got[n..].iter().all(|&b| b == 0xA5), "format {}: wrote past the image on GPU 1", s.format);
            if *pitch != 0 {
                let row = 1280 * 3;
                assert!((0..719).all(|r| got[r * pitch + row..(r + 1) * pitch].iter().all(|&b| b == 0xA5)), "the padding between rows was written on GPU 1");
            }
            unsafe { sys::cuMemFree_v2(p) };
        }
    }
    // Ordering: GPU 1's stream held ~0.5 s by a spinning kernel while two conversions queue.
    let (mut s, n) = (so, no);
    let bufs = [alloc1(n), alloc1(n)];
    nvcam::diag::spin_copy(1, 0, 0, 0, 700_000_000, g1.stream as u64).unwrap();
    s.dst_memory = NVCAM_MEMORY_DEVICE;
    s.dst_device = 1;
    for (i, &f) in frames.iter().enumerate() {
        assert_eq!(unsafe { nvcam_frame_convert(f, &s, bufs[i] as *mut _, 0, n as u64, g1.stream as u64) }, NVCAM_OK, "{}", last_error());
        release(f).unwrap();
    }
    assert!(unsafe { sys::cuStreamQuery(g1.stream) } != sys::CUresult::CUDA_SUCCESS, "GPU 1's stream finished before the second conversion was queued: the check proves nothing");
    unsafe { ck("cuStreamSynchronize(1)", sys::cuStreamSynchronize(g1.stream)) };
    for i in 0..2 {
        assert!(download1(bufs[i], n) == wants[i], "conversion {i} into GPU 1 holds the wrong frame (scratch reused before GPU 1 copied it)");
    }
    // A GPU 1 pointer named as GPU 0 memory.
    s.dst_device = 0;
    let f = get_frame(cams[0], 10_000).unwrap();
    assert_eq!(unsafe { nvcam_frame_convert(f, &s, bufs[0] as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_E_INVALID_ARGUMENT, "a GPU 1 pointer was taken for GPU 0 memory");
    release(f).unwrap();
    unsafe {
        sys::cuMemFree_v2(bufs[0]);
        sys::cuMemFree_v2(bufs[1]);
    }
    println!("cross-device: GPU 0 frames into GPU 1 memory equal GPU 0 results (packed, pitched, planar; own stream and stream 0); queued conversions keep their frames");
    drop(g1);
    for c in cams {
        close(c, 5000).unwrap();
    }
}
