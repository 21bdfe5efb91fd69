//! The conversion kernels on a GPU: every output format at 1080p, 4K and odd sizes,
//! both matrices and both ranges, chroma sitings, identity, crops at odd offsets,
//! letterbox and crop+resize, NV12 and P016 (10-bit) frames, against the CPU twin
//! (`nvcam::diag::convert_cpu`, the same arithmetic): bit-identical (a conversion is
//! allowed one step per 8-bit channel, 1/255 for floats, but the twin is built to match exactly). Both
//! destinations: device memory on the test's own stream, and host memory through the library's
//! pinned staging. Then the stream hand-off: a slow kernel on the
//! consumer's stream reads a frame released right after its launch, and the slot is not
//! rewritten until it finished. And crops on the device equal that window of the whole frame's
//! device conversion (no seam at a ROI's border).
//!
//! `#[ignore]`d (run on the GPU machine with `--include-ignored`); without a GPU they return
//! early, and fail under REQUIRE_GPU=1.

mod common;
use common::*;
use cudarc::driver::sys;
use nvcam::*;
use std::time::{Duration, Instant};

/// Device 0's primary context (the one the library and PyTorch use), pushed while this lives,
/// with a non-blocking stream of the test's own, and a page-locked host buffer grown on demand.
struct Cuda {
    dev: sys::CUdevice,
    stream: sys::CUstream,
    pinned: std::cell::RefCell<Option<Pinned>>,
}

/// Page-locked host memory (cuMemHostAlloc), freed on drop.
struct Pinned {
    ptr: *mut u8,
    len: usize,
}

impl Pinned {
    fn new(len: usize) -> Pinned {
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        unsafe { ck("cuMemHostAlloc", sys::cuMemHostAlloc(&mut p, len, 0)) };
        Pinned { ptr: p.cast(), len }
    }
    fn bytes(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        unsafe { sys::cuMemFreeHost(self.ptr.cast()) };
    }
}

/// Downloads so far that took the page-locked path (DMA or kernel) and the pageable one.
/// Fills device memory with guard bytes and waits for it. `cuMemsetD8` runs asynchronously on the
/// legacy default stream, which the non-blocking streams the conversions run on do not wait for:
/// on a GPU shared with another process the fill once landed after the conversion and the test
/// read guard bytes as if the library had written them wrong.
fn fill_now(p: sys::CUdeviceptr, byte: u8, n: usize) {
    unsafe {
        ck("cuMemsetD8", sys::cuMemsetD8_v2(p, byte, n));
        ck("cuStreamSynchronize", sys::cuStreamSynchronize(std::ptr::null_mut()));
    }
}

fn download_paths() -> (u64, u64) {
    let (dma, kernel, pageable) = nvcam::diag::download_paths();
    (dma + kernel, pageable)
}

impl Cuda {
    fn new() -> Cuda {
        let dev = push_primary(0);
        Cuda { dev, stream: nonblocking_stream(), pinned: std::cell::RefCell::new(None) }
    }
    /// The test's page-locked buffer, at least `n` bytes.
    fn pinned(&self, n: usize) -> std::cell::RefMut<'_, Pinned> {
        let mut p = self.pinned.borrow_mut();
        if p.as_ref().is_none_or(|b| b.len < n) {
            *p = None;
            *p = Some(Pinned::new(n));
        }
        std::cell::RefMut::map(p, |p| p.as_mut().unwrap())
    }
    fn alloc(&self, n: usize) -> DevMem {
        let mut p = 0;
        unsafe { ck("cuMemAlloc", sys::cuMemAlloc_v2(&mut p, n)) };
        DevMem(p)
    }
    fn sync(&self) {
        unsafe { ck("cuStreamSynchronize", sys::cuStreamSynchronize(self.stream)) };
    }
    fn done(&self) -> bool {
        unsafe { sys::cuStreamQuery(self.stream) == sys::CUresult::CUDA_SUCCESS }
    }
    fn stream(&self) -> u64 {
        self.stream as u64
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        self.pinned.borrow_mut().take();
        unsafe {
            sys::cuStreamSynchronize(self.stream);
            sys::cuStreamDestroy_v2(self.stream);
            let mut c = std::ptr::null_mut();
            sys::cuCtxPopCurrent_v2(&mut c);
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
    }
}

struct DevMem(u64);

impl DevMem {
    fn download(&self, n: usize) -> Vec<u8> {
        let mut v = vec![0u8; n];
        unsafe { ck("cuMemcpyDtoH", sys::cuMemcpyDtoH_v2(v.as_mut_ptr().cast(), self.0, n)) };
        v
    }
}

impl Drop for DevMem {
    fn drop(&mut self) {
        unsafe { sys::cuMemFree_v2(self.0) };
    }
}

fn gpu_slot_options(flags: u32, slots: u32) -> nvcam_camera_options {
    let mut o = options(flags);
    o.device = 0;
    o.pool_slots = slots;
    o
}

const FORMATS: [(u32, &str); 6] = [
    (NVCAM_FORMAT_BGRA8, "BGRA8"),
    (NVCAM_FORMAT_BGR8, "BGR8"),
    (NVCAM_FORMAT_RGB8, "RGB8"),
    (NVCAM_FORMAT_GRAY8, "GRAY8"),
    (NVCAM_FORMAT_RGB_F32_PLANAR, "RGB_F32"),
    (NVCAM_FORMAT_RGB_F16_PLANAR, "RGB_F16"),
];

/// The stream's siting (0), then left (H.264/HEVC's default), centre (JPEG), top-left (BT.2020)
/// and bottom (the other vertical shift).
const SITINGS: [u32; 5] = [0, NVCAM_SITING_LEFT, NVCAM_SITING_CENTER, NVCAM_SITING_TOPLEFT, NVCAM_SITING_BOTTOM];

fn spec(format: u32) -> nvcam_convert {
    nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, format, ..Default::default() }
}

/// Max |a - b| per channel, in 8-bit steps (floats: in units of 1/255).
fn max_diff(format: u32, a: &[u8], b: &[u8]) -> f32 {
    assert_eq!(a.len(), b.len());
    match format {
        NVCAM_FORMAT_RGB_F32_PLANAR => a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .map(|(x, y)| (f32::from_ne_bytes(x.try_into().unwrap()) - f32::from_ne_bytes(y.try_into().unwrap())).abs() * 255.0)
            .fold(0.0, f32::max),
        NVCAM_FORMAT_RGB_F16_PLANAR => a
            .chunks_exact(2)
            .zip(b.chunks_exact(2))
            .map(|(x, y)| {
                let (x, y) = (u16::from_ne_bytes([x[0], x[1]]), u16::from_ne_bytes([y[0], y[1]]));
                (nvcam::diag::f16_to_f32(x) - nvcam::diag::f16_to_f32(y)).abs() * 255.0
            })
            .fold(0.0, f32::max),
        _ => a.iter().zip(b).map(|(&x, &y)| (x as i32 - y as i32).unsigned_abs() as f32).fold(0.0, f32::max),
    }
}

/// One spec on one device frame: device destination on our stream, host destination through the
/// library's staging, and the CPU reference; returns the max difference and the bytes compared.
fn check_one(cuda: &Cuda, frame: u64, fi: &nvcam_frame_info, nv12: &[u8], s: &nvcam_convert, what: &str) -> (f32, usize) {
    let mut need = 0u64;
    assert_eq!(unsafe { nvcam_frame_convert_size(frame, s, 0, &mut need) }, NVCAM_OK, "{what}: {}", last_error());
    let n = need as usize;
    let cpu = nvcam::diag::convert_cpu(nv12, fi.format, fi.width, fi.height, s, (fi.color_matrix, fi.color_range, fi.chroma_siting), 0).unwrap();
    assert_eq!(cpu.len(), n, "{what}: reference size");
    // Device destination, on our stream; a guard past the end must stay untouched.
    let dst = cuda.alloc(n + 256);
    fill_now(dst.0, 0xA5, n + 256);
    let mut d = *s;
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    d.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(frame, &d, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{what}: {}", last_error());
    cuda.sync();
    let dev = dst.download(n + 256);
    assert!(dev[n..].iter().all(|&b| b == 0xA5), "{what}: device conversion wrote past its size");
    // Host destination (the LabVIEW way): pageable memory, through the staging.
    let mut host = vec![0x5Au8; n + 16];
    let p0 = download_paths();
    assert_eq!(unsafe { nvcam_frame_convert(frame, s, host.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{what}: {}", last_error());
    assert!(host[n..].iter().all(|&b| b == 0x5A), "{what}: host conversion wrote past its size");
    assert!(dev[..n] == host[..n], "{what}: device and host destinations differ (same kernel)");
    // Page-locked host memory: written directly.
    let mut pin = cuda.pinned(n + 16);
    let pb = pin.bytes();
    pb.fill(0x3C);
    assert_eq!(unsafe { nvcam_frame_convert(frame, s, pb.as_mut_ptr().cast(), 0, n as u64, 0) }, NVCAM_OK, "{what}: {}", last_error());
    assert!(pb[n..n + 16].iter().all(|&b| b == 0x3C), "{what}: pinned conversion wrote past its size");
    assert!(dev[..n] == pb[..n], "{what}: device and pinned host destinations differ");
    let p1 = download_paths();
    assert_eq!((p1.0 - p0.0, p1.1 - p0.1), (1, 1), "{what}: the pinned destination must go direct, the Vec through staging");
    drop(pin);
    let diff = max_diff(s.format, &dev[..n], &cpu);
    assert!(dev[..n] == cpu[..], "{what}: GPU and CPU twin differ (max |diff| {diff}): they must agree bit for bit");
    (diff, n)
}

fn frame_of(url: &str, decoder: u32) -> (u64, u64, nvcam_frame_info, Vec<u8>) {
    let mut o = gpu_slot_options(NVCAM_OPEN_NO_PACING, 4);
    o.decoder = decoder;
    let cam = open(url, &o).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let f = get_frame(cam, 10_000).unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let fi = info(f).unwrap();
    assert_eq!(fi.memory, NVCAM_MEMORY_DEVICE, "{url}: a GPU camera's frame is in device memory");
    let nv12 = pixels(f).unwrap();
    (cam, f, fi, nv12)
}

/// Every format x both matrices x both ranges at the same scale, and x five sitings letterboxed
/// to 640x640, crop + resize to 333x187, an odd crop at the same scale and a box filter across
/// (up-scaled 2.5x down), of the first frame of `url` (whose frames are `frame_format`).
fn all_formats_and_colours(cuda: &Cuda, url: &str, decoder: u32, frame_format: u32) {
    let (cam, f, fi, nv12) = frame_of(url, decoder);
    let (w, h) = (fi.width, fi.height);
    assert_eq!(fi.format, frame_format, "{url}: the frame's format");
    if url.contains("161x97") {
        assert_eq!((w, h), (161, 97), "the odd-size clip decodes at its odd size");
    }
    let mut worst = [0f32; 6];
    let mut checked = 0usize;
    let t0 = Instant::now();
    for (i, &(format, name)) in FORMATS.iter().enumerate() {
        for matrix in [NVCAM_MATRIX_BT601, NVCAM_MATRIX_BT709] {
            for range in [NVCAM_RANGE_LIMITED, NVCAM_RANGE_FULL] {
                let mut s = spec(format);
                s.matrix = matrix;
                s.range = range;
                s.mean = [0.485, 0.456, 0.406];
                s.std = [0.229, 0.224, 0.225];
                let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} matrix {matrix} range {range}"));
                worst[i] = worst[i].max(d);
                checked += n;
            }
        }
        // The stream's siting (0), then the others a stream may signal (every kernel path reads
        // chroma at the sited positions; the CPU twin is written from the same geometry).
        for siting in SITINGS {
            // Letterboxed detector input (box filter for the big frames, bilinear up for small ones).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.width = 640;
            s.height = 640;
            s.flags = NVCAM_CONVERT_LETTERBOX;
            s.pad = [114.0, 114.0, 114.0];
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} letterbox 640"));
            worst[i] = worst[i].max(d);
            checked += n;
            // Crop + an odd-sized bilinear resize.
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.roi_x = w / 5;
            s.roi_y = (h / 7) | 1;
            s.roi_width = (w / 2) | 1;
            s.roi_height = (h / 2).max(1);
            s.width = 333;
            s.height = 187;
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} roi+resize"));
            worst[i] = worst[i].max(d);
            checked += n;
            // A crop at odd offsets, odd-sized, at the same scale (the same-scale kernel's rows
            // and columns of both parities; its border reads the frame around it).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.roi_x = (w / 5) | 1;
            s.roi_y = (h / 7) | 1;
            s.roi_width = ((w / 2) | 1).min(w - s.roi_x);
            s.roi_height = ((h / 2) | 1).min(h - s.roi_y);
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} odd crop"));
            worst[i] = worst[i].max(d);
            checked += n;
            // Box filter across, up-scaled 2.5x down: the sited chroma footprints of the first and
            // last rows lie partly or wholly past the edge samples (the kernels floor w0 there).
            let mut s = spec(format);
            s.chroma_siting = siting;
            s.width = (w / 8).max(1);
            s.height = h * 5 / 2;
            let (d, n) = check_one(cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} box across, up 2.5x down"));
            worst[i] = worst[i].max(d);
            checked += n;
        }
    }
    println!(
        "{w}x{h}: {checked} bytes compared in {:.1}s; max |GPU - CPU| per format (steps of 1/255): {}",
        t0.elapsed().as_secs_f64(),
        FORMATS.iter().zip(worst).map(|((_, n), d)| format!("{n} {d:.3}")).collect::<Vec<_>>().join(", ")
    );
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// Every format x both matrices x both ranges (identity), and x five sitings (letterbox,
/// crop+resize, a crop at odd offsets, a box filter across with the other axis up-scaled) at
/// 1080p, 4K, 1366x768 and 161x97: the kernels equal the CPU twin bit for bit.
#[test]
#[ignore]
fn gpu_conversions_match_the_cpu_reference_at_every_size() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    // NVCAM_CONVERT_SIZES narrows the sizes (the sanitizer runs, which are slow per launch).
    let sizes = std::env::var("NVCAM_CONVERT_SIZES").unwrap_or_else(|_| "1920x1080,3840x2160,1366x768,161x97".into());
    for size in sizes.split(',').filter(|s| *s != "161x97") {
        all_formats_and_colours(&cuda, &format!("testsrc://{size}@30"), NVCAM_DECODER_AUTO, NVCAM_FORMAT_NV12);
    }
    if !sizes.contains("161x97") {
        return;
    }
    // Odd width and height (testsrc in 4:2:0 rounds down to even; H.264 encoders refuse odd
    // sizes): an MJPEG clip, decoded in software and uploaded.
    let odd = clip("conv-mjpeg-161x97.mkv", "161x97", 10, "mjpeg", &["-strict", "-1", "-q:v", "3"]);
    all_formats_and_colours(&cuda, odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_NV12);
}

/// The box filter's tiled path (a block's footprint staged in shared memory) at the
/// scales that take it, in each kernel that has it (`_area4` for large outputs, `_area_tiled`
/// for small ones, `_batch_tiled`): every format, three sitings, letterbox, plain resize and a crop,
/// bit for bit as the CPU twin. A staged rectangle one byte short, a word mask off by one or a
/// row combined out of order fails here (the per-pixel path's scales are the test above's).
#[test]
#[ignore]
fn tiled_box_filter_matches_the_cpu_twin_in_every_kernel() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let sizes = std::env::var("NVCAM_TILED_SIZES").unwrap_or_else(|_| "4096x2160,3840x2160,1366x768".into());
    for size in sizes.split(',') {
        let (cam, f, fi, nv12) = frame_of(&format!("testsrc://{size}@30"), NVCAM_DECODER_AUTO);
        let (w, h) = (fi.width, fi.height);
        let mut checked = 0usize;
        // (what, width, height, letterbox, roi): 6.4x (4096 into 640), 6.5x (area4 at 4K, area
        // below), 8.5x (area), 12x-12.8x (letterbox 320), and 6.5x of a crop at odd offsets.
        let cases: [(&str, u32, u32, bool, Option<Roi>); 5] = [
            ("letterbox 640", 640, 640, true, None),
            ("resize /6.5", w * 2 / 13, h * 2 / 13, false, None),
            ("resize /8.5", w * 2 / 17, h * 2 / 17, false, None),
            ("letterbox 320", 320, 320, true, None),
            ("crop /6.5", (w / 2) * 2 / 13, (h / 2) * 2 / 13, false, Some(((w / 5) | 1, (h / 7) | 1, (w / 2) | 1, h / 2))),
        ];
        // NVCAM_TILED_QUICK (the sanitizer runs): two formats, the stream's siting.
        let quick = std::env::var_os("NVCAM_TILED_QUICK").is_some();
        let sitings: &[u32] = if quick { &[0] } else { &[0, NVCAM_SITING_CENTER, NVCAM_SITING_TOPLEFT] };
        for &(format, name) in FORMATS.iter().filter(|(f, _)| !quick || [NVCAM_FORMAT_BGRA8, NVCAM_FORMAT_RGB_F16_PLANAR].contains(f)) {
            for &siting in sitings {
                for &(what, ow, oh, letterbox, roi) in &cases {
                    let mut s = spec(format);
                    s.chroma_siting = siting;
                    (s.width, s.height) = (ow, oh);
                    if letterbox {
                        s.flags = NVCAM_CONVERT_LETTERBOX;
                        s.pad = [114.0, 114.0, 114.0];
                    }
                    if let Some((x, y, rw, rh)) = roi {
                        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (x, y, rw, rh);
                    }
                    checked += check_one(&cuda, f, &fi, &nv12, &s, &format!("{w}x{h} {name} siting {siting} {what}")).1;
                }
            }
        }
        // A batch of three items, each as its single conversion.
        let mut s = spec(NVCAM_FORMAT_RGB_F16_PLANAR);
        (s.width, s.height) = (w * 2 / 13, h * 2 / 13);
        let one = on_device(&cuda, f, &s);
        let frames = [f, f, f];
        let mut d = s;
        d.dst_memory = NVCAM_MEMORY_DEVICE;
        d.dst_device = 0;
        let dst = cuda.alloc(3 * one.len());
        let code = unsafe { nvcam_frames_convert_batch(frames.as_ptr(), 3, &d, dst.0 as *mut _, 0, 3 * one.len() as u64, cuda.stream()) };
        assert_eq!(code, NVCAM_OK, "{}", last_error());
        cuda.sync();
        let got = dst.download(3 * one.len());
        for (i, item) in got.chunks_exact(one.len()).enumerate() {
            assert!(item == &one[..], "{w}x{h}: batch item {i} differs from its single conversion");
        }
        println!("{w}x{h}: tiled box filter, {checked} bytes equal to the CPU twin; batch of 3 equal to single conversions");
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
}

/// P016 frames (10-bit streams) convert on their own kernels bit for bit as the CPU twin does
/// (16-bit samples in 1/256 steps of the 8-bit units): an 8-bit kernel reading the words as bytes,
/// or a 16-bit path that rounds or orders one operation differently, fails here. An NVDEC frame of
/// HEVC Main10 at 1366x768 (letterbox and crop + resize take the box filter there) with a
/// bilinear down-scale and a tile at odd offsets besides, and an odd-sized (161x97) VP9 profile 2 frame
/// decoded in software and uploaded (letterbox and crop + resize up-scale bilinearly); every
/// format, matrix, range and five sitings, as the NV12 test.
#[test]
#[ignore]
fn gpu_p016_conversions_match_the_cpu_twin() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let hevc10 = ten_bit_clip(1366, 768, 12);
    let url = hevc10.to_str().unwrap();
    all_formats_and_colours(&cuda, url, NVCAM_DECODER_AUTO, NVCAM_FORMAT_P016);
    let (cam, f, fi, p016) = frame_of(url, NVCAM_DECODER_AUTO);
    for (format, name) in FORMATS {
        // Bilinear down 1.5x (the letterbox and crop + resize above took the box filter).
        let mut s = spec(format);
        (s.width, s.height) = (911, 512);
        s.mean = [0.485, 0.456, 0.406];
        s.std = [0.229, 0.224, 0.225];
        check_one(&cuda, f, &fi, &p016, &s, &format!("P016 {name} bilinear down 1.5x"));
        let mut s = spec(format);
        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (333, 177, 641, 361);
        check_one(&cuda, f, &fi, &p016, &s, &format!("P016 {name} odd tile"));
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
    let odd = ten_bit_odd_clip();
    all_formats_and_colours(&cuda, odd.to_str().unwrap(), NVCAM_DECODER_SOFTWARE, NVCAM_FORMAT_P016);
}

/// A real NVDEC frame (H.264 1080p clip): colour info comes from the stream, and the conversion
/// still matches the reference.
#[test]
#[ignore]
fn nvdec_frame_converts_with_its_stream_colours() {
    if !need_gpu!() {
        return;
    }
    let clip = std::env::var("BUNDLE_WITH").map(|b| format!("{b}/fixtures/gpu-h264-1920x1080.mp4")).unwrap_or_default();
    if !std::path::Path::new(&clip).exists() {
        println!("no fixture {clip}; skipped");
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let (cam, f, fi, nv12) = frame_of(&clip, NVCAM_DECODER_AUTO);
    println!("{}x{} NVDEC frame: matrix {} range {} siting {}", fi.width, fi.height, fi.color_matrix, fi.color_range, fi.chroma_siting);
    assert_eq!((fi.color_matrix, fi.color_range), (NVCAM_MATRIX_BT709, NVCAM_RANGE_LIMITED), "an unflagged 1080p stream is BT.709 limited");
    for (format, name) in FORMATS {
        let mut s = spec(format);
        s.width = 640;
        s.height = 640;
        s.flags = NVCAM_CONVERT_LETTERBOX;
        check_one(&cuda, f, &fi, &nv12, &s, &format!("nvdec {name}"));
        // A tile at odd offsets, the stream's siting.
        let mut s = spec(format);
        (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (333, 177, 641, 361);
        check_one(&cuda, f, &fi, &nv12, &s, &format!("nvdec {name} odd tile"));
    }
    release(f).unwrap();
    close(cam, 5000).unwrap();
}

/// `s` converted from frame `f` into device memory on the test's stream, packed, downloaded.
fn on_device(cuda: &Cuda, f: u64, s: &nvcam_convert) -> Vec<u8> {
    let mut need = 0u64;
    assert_eq!(unsafe { nvcam_frame_convert_size(f, s, 0, &mut need) }, NVCAM_OK, "{}", last_error());
    let n = need as usize;
    let dst = cuda.alloc(n);
    let mut d = *s;
    d.dst_memory = NVCAM_MEMORY_DEVICE;
    d.dst_device = 0;
    assert_eq!(unsafe { nvcam_frame_convert(f, &d, dst.0 as *mut _, 0, n as u64, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    cuda.sync();
    dst.download(n)
}

/// Bytes per pixel in one plane, and planes, of a format.
fn pixel_layout(format: u32) -> (usize, usize) {
    match format {
        NVCAM_FORMAT_BGRA8 => (4, 1),
        NVCAM_FORMAT_BGR8 | NVCAM_FORMAT_RGB8 => (3, 1),
        NVCAM_FORMAT_GRAY8 => (1, 1),
        NVCAM_FORMAT_RGB_F32_PLANAR => (4, 3),
        _ => (2, 3),
    }
}

/// The `(x, y, w, h)` window (pixels) of a packed image `iw` pixels wide and `ih` high, planes
/// after each other.
fn window(img: &[u8], format: u32, (iw, ih): (u32, u32), (x, y, w, h): Roi) -> Vec<u8> {
    let (px, planes) = pixel_layout(format);
    let (row, plane) = (iw as usize * px, iw as usize * px * ih as usize);
    let mut v = Vec::with_capacity(w as usize * px * h as usize * planes);
    for p in 0..planes {
        for r in y..y + h {
            let at = p * plane + r as usize * row + x as usize * px;
            v.extend_from_slice(&img[at..at + w as usize * px]);
        }
    }
    v
}

/// A crop rectangle (x, y, w, h) in frame pixels.
type Roi = (u32, u32, u32, u32);

/// Crops on the device equal that window of the whole frame's device conversion, byte for byte,
/// for every format and siting: at the same scale at odd and even offsets (tiles touching the
/// frame's edges too), and resized with the origin on the whole frame's output grid (down 2x
/// bilinear, down 4x box filter, up 2x bilinear at any origin). A ROI's border reads the frame
/// around it: no seam where tiles meet.
#[test]
#[ignore]
fn gpu_roi_equals_the_window_of_the_whole_frame() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    // (source, output pixels per frame pixel as num / den, ROIs in frame pixels)
    let cases: [(&str, (u32, u32), &[Roi]); 5] = [
        ("testsrc://1920x1080@30", (1, 1), &[(333, 177, 641, 361), (2, 2, 64, 64), (1279, 719, 641, 361), (0, 1, 1920, 1079), (1919, 1079, 1, 1), (7, 0, 33, 1080)]),
        ("testsrc://1920x1080@30", (1, 2), &[(2, 2, 640, 360), (1000, 500, 920, 580)]),
        ("testsrc://1920x1080@30", (1, 4), &[(4, 4, 640, 360), (1280, 720, 640, 360)]),
        // 7x down: the box filter staged in shared memory (its tiles read the frame around them).
        ("testsrc://1960x1092@30", (1, 7), &[(7, 7, 700, 350), (1001, 497, 910, 581)]),
        ("testsrc://640x360@30", (2, 1), &[(1, 1, 101, 51), (333, 177, 307, 183)]),
    ];
    let mut compared = 0usize;
    for (url, (num, den), rois) in cases {
        let (cam, f, fi, _) = frame_of(url, NVCAM_DECODER_AUTO);
        let out = |n: u32| n * num / den;
        for siting in SITINGS {
            for (format, name) in FORMATS {
                let mut whole = spec(format);
                whole.chroma_siting = siting;
                (whole.width, whole.height) = (out(fi.width), out(fi.height));
                let all = on_device(&cuda, f, &whole);
                for &(x, y, w, h) in rois {
                    let mut s = whole;
                    (s.roi_x, s.roi_y, s.roi_width, s.roi_height) = (x, y, w, h);
                    (s.width, s.height) = (out(w), out(h));
                    let got = on_device(&cuda, f, &s);
                    let want = window(&all, format, (whole.width, whole.height), (out(x), out(y), out(w), out(h)));
                    assert!(got == want, "{url} x{num}/{den} {name} siting {siting} roi {:?}: differs from that window of the whole frame", (x, y, w, h));
                    compared += got.len();
                }
            }
        }
        release(f).unwrap();
        close(cam, 5000).unwrap();
    }
    println!("ROIs on the device equal their windows of the whole frame: {compared} bytes compared (same scale, down 2x, 4x and 7x, up 2x; 6 formats, 5 sitings)");
}

/// A consumer kernel on the consumer's stream spins ~1 s, then copies the frame's slot; the
/// frame is released with `nvcam_frame_release_after_stream` right after the launch while the
/// camera keeps decoding through its 2-slot pool. The slot must not be handed out (no new frame
/// at its address) before the kernel finished, and the copied bytes equal the frame's.
#[test]
#[ignore]
fn release_after_stream_defers_reuse() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::quiet();
    let cuda = Cuda::new();
    let cam = open("testsrc://640x360@30", &gpu_slot_options(NVCAM_OPEN_NO_PACING, 2)).unwrap();
    let f = get_frame(cam, 10_000).unwrap();
    let fi = info(f).unwrap();
    assert_eq!(fi.memory, NVCAM_MEMORY_DEVICE);
    let want = pixels(f).unwrap();
    let slot_bytes = (fi.pitch * (fi.height as u64 + (fi.height as u64).div_ceil(2))) as usize;
    let copy = cuda.alloc(slot_bytes);
    assert_eq!(unsafe { nvcam_frame_wait_stream(f, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    nvcam::diag::spin_copy(0, fi.y_ptr, copy.0, slot_bytes as u64, 1_500_000_000, cuda.stream()).unwrap();
    assert_eq!(unsafe { nvcam_frame_release_after_stream(f, cuda.stream()) }, NVCAM_OK, "{}", last_error());
    assert!(!cuda.done(), "the spin kernel ended before the release: the test proves nothing");
    // Drain frames while the kernel spins: none may sit in the released slot.
    let (mut during, mut reused_after) = (0u32, false);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let Ok(g) = get_frame(cam, 2000) else { continue };
        let gi = info(g).unwrap();
        let spinning = !cuda.done();
        if gi.y_ptr == fi.y_ptr {
            assert!(!spinning, "the released slot was rewritten while the consumer's kernel still read it (frame {})", gi.seq);
            reused_after = true;
        } else if spinning {
            during += 1;
        }
        release(g).unwrap();
        if reused_after {
            break;
        }
    }
    cuda.sync();
    assert!(during >= 3, "only {during} frames arrived while the kernel ran: the pool was never under pressure");
    assert!(reused_after, "the slot never came back after the kernel finished");
    // The kernel's copy (taken at its end) holds the frame's pixels.
    let got = copy.download(slot_bytes);
    let row = (fi.width as usize).div_ceil(2) * 2;
    let rows = fi.height as usize + (fi.height as usize).div_ceil(2);
    for r in 0..rows {
        let n = if r < fi.height as usize { fi.width as usize } else { row };
        assert!(got[r * fi.pitch as usize..r * fi.pitch as usize + n] == want[r * row..r * row + n], "row {r} of the released frame changed under the consumer's kernel");
    }
    println!("release_after_stream: {during} frames delivered from the other slot while the consumer's kernel ran; the slot returned after it");
    close(cam, 5000).unwrap();
}

include!("gpu_convert/batches.rs");
include!("gpu_convert/destinations.rs");
