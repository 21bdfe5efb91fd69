// Part of the `gpu_convert` test binary (included by tests/gpu_convert.rs, so the tests keep their
// names): batches of device frames, NV12 and P016 mixed, against single conversions.

/// `nvcam_frames_convert_batch` on device frames: three GPU cameras of different sizes, taken
/// with `nvcam_cameras_get_frames` (device frames), converted in one call into one device tensor
/// at a stride with gaps, on the test's stream, as ONE kernel launch (the three sizes sample the
/// 320x320 letterbox in all three modes: 640x360 bilinear, 1280x720 box filter, 320x240 same
/// scale); the frames are released right after the call (the batch fences each slot). Every item
/// equals `nvcam_frame_convert` of that frame byte for byte, the gaps and the guard past the end
/// stay untouched, a 37-item batch takes two launches with the same bytes, and the host batch
/// equals the device batch.
#[test]
#[ignore]
fn gpu_batch_equals_single_conversions() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let cams: Vec<u64> = ["testsrc://640x360@30", "testsrc://1280x720@30", "testsrc://320x240@30"]
        .iter()
        .map(|u| open(u, &gpu_slot_options(NVCAM_OPEN_NO_PACING, 4)).unwrap_or_else(|e| panic!("{u}: {e:?}")))
        .collect();
    for (format, name) in FORMATS {
        let mut frames = vec![0u64; cams.len()];
        let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), cams.len() as u32, 10_000, frames.as_mut_ptr()) };
        assert_eq!(code, NVCAM_OK, "{name}: get_frames: {}", last_error());
        for (i, &f) in frames.iter().enumerate() {
            let fi = info(f).unwrap();
            assert_eq!((fi.memory, fi.camera), (NVCAM_MEMORY_DEVICE, cams[i]), "{name}: frames[{i}]");
        }
        let batch_frames = [frames[0], frames[1], frames[2], frames[1]];
        let mut s = spec(format);
        s.width = 320;
        s.height = 320;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        s.pad = [114.0; 3];
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        s.dst_memory = NVCAM_MEMORY_DEVICE;
        s.dst_device = 0;
        let mut item = 0u64;
        assert_eq!(unsafe { nvcam_frame_convert_size(frames[0], &s, 0, &mut item) }, NVCAM_OK);
        let item = item as usize;
        // Single conversions, one device buffer each.
        let singles: Vec<Vec<u8>> = batch_frames
            .iter()
            .map(|&f| {
                let d = cuda.alloc(item);
                assert_eq!(unsafe { nvcam_frame_convert(f, &s, d.0 as *mut _, 0, item as u64, cuda.stream()) }, NVCAM_OK, "{name}: {}", last_error());
                cuda.sync();
                d.download(item)
            })
            .collect();
        let stride = (item + 256).next_multiple_of(256);
        let need = stride * (batch_frames.len() - 1) + item;
        let dst = cuda.alloc(need + 256);
        fill_now(dst.0, 0xA5, need + 256);
        // A stride that breaks the format's alignment is refused (floats need 4 bytes, f16 2).
        if format == NVCAM_FORMAT_RGB_F32_PLANAR || format == NVCAM_FORMAT_RGB_F16_PLANAR || format == NVCAM_FORMAT_BGRA8 {
            let code = unsafe { nvcam_frames_convert_batch(batch_frames.as_ptr(), 4, &s, dst.0 as *mut _, (item + 1) as u64, need as u64 + 16, cuda.stream()) };
            assert_eq!(code, NVCAM_E_INVALID_ARGUMENT, "{name}: a misaligned stride was accepted");
        }
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(batch_frames.as_ptr(), 4, &s, dst.0 as *mut _, stride as u64, need as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: batch: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 1, "{name}: a device batch of 4 frames is one kernel launch");
        // Beyond 32 items per launch: 37 items (the three frames repeated), packed, two launches.
        let big: Vec<u64> = (0..37).map(|i| frames[i % 3]).collect();
        let big_dst = cuda.alloc(37 * item + 256);
        fill_now(big_dst.0, 0xA5, 37 * item + 256);
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(big.as_ptr(), 37, &s, big_dst.0 as *mut _, 0, 37 * item as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: batch of 37: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 2, "{name}: 37 frames take two launches (32 + 5)");
        // Released right away: the batch fenced every slot on our stream.
        for f in &frames {
            release(*f).unwrap();
        }
        cuda.sync();
        let got = dst.download(need + 256);
        for (i, one) in singles.iter().enumerate() {
            assert!(got[i * stride..i * stride + item] == one[..], "{name}: batch item {i} differs from nvcam_frame_convert of the same frame");
            if i + 1 < singles.len() {
                assert!(got[i * stride + item..(i + 1) * stride].iter().all(|&b| b == 0xA5), "{name}: the gap after item {i} was written");
            }
        }
        assert!(got[need..].iter().all(|&b| b == 0xA5), "{name}: the device batch wrote past dst_size");
        let got = big_dst.download(37 * item + 256);
        for i in 0..37 {
            assert!(got[i * item..(i + 1) * item] == singles[i % 3][..], "{name}: item {i} of the 37-item batch differs from nvcam_frame_convert");
        }
        assert!(got[37 * item..].iter().all(|&b| b == 0xA5), "{name}: the 37-item batch wrote past dst_size");
        // The same batch into host memory (frames taken again: the old ones are released).
        let mut again = vec![0u64; cams.len()];
        let code = unsafe { nvcam_cameras_get_frames(cams.as_ptr(), cams.len() as u32, 10_000, again.as_mut_ptr()) };
        assert_eq!(code, NVCAM_OK, "{name}: get_frames: {}", last_error());
        let mut h = s;
        h.dst_memory = NVCAM_MEMORY_HOST;
        let mut host = vec![0x5Au8; 3 * item + 16];
        let code = unsafe { nvcam_frames_convert_batch(again.as_ptr(), 3, &h, host.as_mut_ptr().cast(), 0, 3 * item as u64, 0) };
        assert_eq!(code, NVCAM_OK, "{name}: host batch: {}", last_error());
        assert!(host[3 * item..].iter().all(|&b| b == 0x5A), "{name}: the host batch wrote past dst_size");
        for (i, &f) in again.iter().enumerate() {
            let mut one = vec![0u8; item];
            assert_eq!(unsafe { nvcam_frame_convert(f, &h, one.as_mut_ptr().cast(), 0, item as u64, 0) }, NVCAM_OK);
            assert!(host[i * item..(i + 1) * item] == one[..], "{name}: host batch item {i} differs from nvcam_frame_convert");
            release(f).unwrap();
        }
        println!("batch {name}: 4 items of {item} bytes at stride {stride} (one launch) and 37 packed items (two launches) equal single conversions (device and host)");
    }
    for c in cams {
        close(c, 5000).unwrap();
    }
}

/// A device batch mixing NV12 and P016 frames (an NVDEC HEVC Main10 frame, a 640x360 NV12
/// frame, an odd-sized uploaded 10-bit frame; five items, repeats included): the P016 items run
/// on the 16-bit batch kernel and the NV12 ones on the 8-bit one, two launches in all, and every
/// item lands at its own index, equal to `nvcam_frame_convert` of its frame byte for byte, for
/// every format; the gaps and the guard past the end stay untouched, and the host batch equals
/// the device one. A batch that ran P016 items on the 8-bit kernel, or dropped or misplaced one
/// width's items, fails here.
#[test]
#[ignore]
fn gpu_batch_mixing_nv12_and_p016_frames_equals_single_conversions() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (hevc10, odd) = (ten_bit_clip(1366, 768, 12), ten_bit_odd_clip());
    let sources = [(hevc10.to_str().unwrap(), NVCAM_DECODER_AUTO, NVCAM_FORMAT_P016), ("testsrc://640x360@30", NVCAM_DECODER_AUTO, NVCAM_FORMAT_NV12), (odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_P016)];
    let held: Vec<(u64, u64)> = sources
        .iter()
        .map(|&(url, decoder, want)| {
            let (cam, f, fi, _) = frame_of(url, decoder);
            assert_eq!(fi.format, want, "{url}: the frame's format");
            (cam, f)
        })
        .collect();
    let batch = [held[0].1, held[1].1, held[2].1, held[1].1, held[0].1];
    for (format, name) in FORMATS {
        let mut s = spec(format);
        (s.width, s.height, s.flags, s.pad) = (320, 320, NVCAM_CONVERT_LETTERBOX, [114.0; 3]);
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        let mut h = s;
        (s.dst_memory, s.dst_device) = (NVCAM_MEMORY_DEVICE, 0);
        let singles: Vec<Vec<u8>> = batch.iter().map(|&f| on_device(&cuda, f, &s)).collect();
        let item = singles[0].len();
        let stride = (item + 256).next_multiple_of(256);
        let need = stride * (batch.len() - 1) + item;
        let dst = cuda.alloc(need + 256);
        fill_now(dst.0, 0xA5, need + 256);
        let launches = nvcam::diag::convert_launches();
        let code = unsafe { nvcam_frames_convert_batch(batch.as_ptr(), batch.len() as u32, &s, dst.0 as *mut _, stride as u64, need as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{name}: mixed batch: {}", last_error());
        assert_eq!(nvcam::diag::convert_launches() - launches, 2, "{name}: a batch of NV12 and P016 frames is one launch per sample width");
        cuda.sync();
        let got = dst.download(need + 256);
        for (i, one) in singles.iter().enumerate() {
            assert!(got[i * stride..i * stride + item] == one[..], "{name}: mixed batch item {i} differs from nvcam_frame_convert of the same frame");
            if i + 1 < singles.len() {
                assert!(got[i * stride + item..(i + 1) * stride].iter().all(|&b| b == 0xA5), "{name}: the gap after item {i} was written");
            }
        }
        assert!(got[need..].iter().all(|&b| b == 0xA5), "{name}: the mixed batch wrote past dst_size");
        h.dst_memory = NVCAM_MEMORY_HOST;
        let mut host = vec![0x5Au8; batch.len() * item + 16];
        let code = unsafe { nvcam_frames_convert_batch(batch.as_ptr(), batch.len() as u32, &h, host.as_mut_ptr().cast(), 0, (batch.len() * item) as u64, 0) };
        assert_eq!(code, NVCAM_OK, "{name}: mixed host batch: {}", last_error());
        assert!(host[batch.len() * item..].iter().all(|&b| b == 0x5A), "{name}: the mixed host batch wrote past dst_size");
        for (i, one) in singles.iter().enumerate() {
            assert!(host[i * item..(i + 1) * item] == one[..], "{name}: mixed host batch item {i} differs from nvcam_frame_convert");
        }
        println!("mixed batch {name}: 3 P016 and 2 NV12 items of {item} bytes in two launches equal single conversions (device and host)");
    }
    for (cam, f) in held {
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
}
