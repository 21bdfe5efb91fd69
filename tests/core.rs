//! Lifetime and content tests of the CPU path, through the C API as a host calls it. Each test is
//! named for the failure it prevents. (Shutdown tests live in tests/shutdown.rs: shutting the
//! library down would pull cameras out from under the tests running in parallel here.)

mod common;
use common::*;
use nvcam::*;
use std::time::{Duration, Instant};

const FAST: u32 = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;

#[test]
fn h264_frames_match_ffmpeg_decode() {
    // B-frames on: decode order differs from display order.
    let c = clip("h264_bframes_320x240.mp4", "320x240", 45, "libx264", &["-bf", "3", "-g", "15"]);
    assert_matches_ffmpeg(&c, 320, 240, 45);
}

#[test]
fn hevc_frames_match_ffmpeg_decode() {
    let c = clip("hevc_352x288.mp4", "352x288", 30, "libx265", &["-x265-params", "log-level=error"]);
    assert_matches_ffmpeg(&c, 352, 288, 30);
}

#[test]
fn odd_size_frames_match_ffmpeg_decode() {
    // 4:2:0 at an odd size: chroma rows and columns round up.
    let c = clip("ffv1_161x97.mkv", "161x97", 10, "ffv1", &[]);
    assert_matches_ffmpeg(&c, 161, 97, 10);
}

/// 4:4:4 and 4:2:2 sources (MJPEG cameras) had their chroma point-sampled into NV12 (up to 144
/// off), then filtered with swscale's bicubic while NVDEC's JPEG engine box-averages (up to 12
/// levels apart, so one camera's pixels depended on its decoder). Now every frame, at odd sizes
/// too, is FFmpeg's decode with its chroma box-averaged ([`jpeg_box_nv12`]), byte for byte.
#[test]
fn mjpeg_444_and_422_chroma_is_box_averaged_as_on_nvdec() {
    init();
    for (name, size, fmt, (w, h)) in [
        ("mjpeg444_321x241.avi", "321x241", "yuvj444p", (321usize, 241usize)),
        ("mjpeg422_320x240.avi", "320x240", "yuvj422p", (320, 240)),
        ("mjpeg422_161x97.mkv", "161x97", "yuvj422p", (161, 97)),
    ] {
        let c = clip(name, size, 6, "mjpeg", &["-pix_fmt", fmt, "-q:v", "3"]);
        let (cw, ch) = if fmt == "yuvj444p" { (w, h) } else { (w.div_ceil(2), h) };
        let native = native_frames(&c, fmt, w * h + 2 * cw * ch);
        assert_eq!(native.len(), 6, "{name}: reference frames");
        let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
        for (k, n) in native.iter().enumerate() {
            let f = get_frame(cam, 5000).unwrap_or_else(|e| panic!("{name} frame {k}: {e:?}"));
            let px = pixels(f).unwrap();
            release(f).unwrap();
            let want = jpeg_box_nv12(n, fmt, w, h);
            let off = px.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert!(off == 0 && px.len() == want.len(), "{name} frame {k}: {off} samples differ from the box rule");
        }
        close(cam, 2000).unwrap();
    }
}

/// Restart markers (DRI, then RST0..7 between intervals) are what the JPEG marker check counts to
/// find a lost interval: a check that misread them would mark every frame of such a camera, and a
/// decoder that skipped them would shift the picture. FFmpeg's encoder writes intervals of whole
/// MCU rows when it encodes in slices (here 14 markers a picture). Every frame is FFmpeg's decode (box rule), and none is marked.
#[test]
fn jpeg_with_restart_markers_is_decoded_exactly_and_not_marked() {
    init();
    let (w, h) = (320usize, 240usize);
    let c = clip("mjpeg422_rst_320x240.mkv", "320x240", 6, "mjpeg", &["-pix_fmt", "yuvj422p", "-q:v", "3", "-threads", "4", "-thread_type", "slice"]);
    let (dri, rst, _) = jpeg_markers(&std::fs::read(&c).unwrap());
    assert!(dri >= 6 && rst >= 6 * 3, "the clip has too few restart markers to test: {dri} DRI, {rst} RSTn");
    let native = native_frames(&c, "yuvj422p", w * h + 2 * (w / 2) * h);
    assert_eq!(native.len(), 6, "reference frames");
    let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
    for (k, n) in native.iter().enumerate() {
        let f = get_frame(cam, 5000).unwrap_or_else(|e| panic!("frame {k}: {e:?}"));
        let flags = info(f).unwrap().flags;
        let px = pixels(f).unwrap();
        release(f).unwrap();
        assert_eq!(flags & (NVCAM_FRAME_CORRUPT | NVCAM_FRAME_AFTER_LOSS), 0, "frame {k} with restart markers was marked damaged");
        assert!(px == jpeg_box_nv12(n, "yuvj422p", w, h), "frame {k} differs from FFmpeg's decode with the box rule");
    }
    close(cam, 2000).unwrap();
}

/// JPEG samples were squeezed from 0..255 into 16..235 on the CPU path (swscale's default for the
/// `yuvj` formats) while frames reported full range, so the CPU and the GPU decoders (which write
/// the samples as decoded) gave one camera different pixels, and conversions of CPU frames lost
/// contrast. Every JPEG layout now keeps its samples: luma equals FFmpeg's decode in its own
/// pixel format byte for byte, 4:2:0 chroma is those planes interleaved, gray gets neutral
/// chroma, and frames report JFIF's colours (BT.601, the clip's range, chroma centred).
#[test]
fn jpeg_samples_keep_their_range_and_report_jfif_colours() {
    init();
    let (w, h, n) = (96usize, 64usize, 4usize);
    for (c, fmt, range) in jpeg_clips(w as u32, h as u32, n as u32) {
        let (cw, chh) = jpeg_chroma_size(fmt, w, h);
        let native = native_frames(&c, fmt, w * h + 2 * cw * chh);
        assert_eq!(native.len(), n, "{fmt}: reference frames");
        let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
        for (k, want) in native.iter().enumerate() {
            let f = get_frame(cam, 5000).unwrap();
            let i = info(f).unwrap();
            assert_eq!(
                (i.color_matrix, i.color_range, i.chroma_siting),
                (NVCAM_MATRIX_BT601, range, NVCAM_SITING_CENTER),
                "{fmt}: a JPEG frame's colours (matrix, range, siting)"
            );
            let px = pixels(f).unwrap();
            assert!(px[..w * h] == want[..w * h], "{fmt} frame {k}: luma differs from FFmpeg's decode");
            let uv = &px[w * h..];
            match fmt {
                "gray" => assert!(uv.iter().all(|&v| v == 128), "{fmt} frame {k}: chroma not neutral"),
                "yuvj420p" | "yuv420p" => {
                    let (u, v) = want[w * h..].split_at(cw * chh);
                    let inter: Vec<u8> = u.iter().zip(v).flat_map(|(&a, &b)| [a, b]).collect();
                    assert!(uv == inter, "{fmt} frame {k}: chroma is not the decoded planes interleaved");
                }
                _ => assert!(px == jpeg_box_nv12(want, fmt, w, h), "{fmt} frame {k}: chroma is not the decoded planes box-averaged"),
            }
            release(f).unwrap();
        }
        close(cam, 2000).unwrap();
    }
}

/// BT.601 limited-range R'G'B' (0..255, unclamped) of 10-bit Y'CbCr samples, from the
/// standard's definitions (BT.601 / BT.2100 quantization at 10 bits: Y = 4 (219 E'Y + 16),
/// Cb = 4 (224 E'Pb + 128); E'R = E'Y + 2 (1 - Kr) E'Pr, ...), in f64; written without the
/// library's coefficients.
fn bt601_limited_10(y: f64, cb: f64, cr: f64) -> [f64; 3] {
    let (kr, kb) = (0.299, 0.114);
    let ey = (y / 4.0 - 16.0) / 219.0;
    let (pb, pr) = ((cb / 4.0 - 128.0) / 224.0, (cr / 4.0 - 128.0) / 224.0);
    let (r, b) = (ey + 2.0 * (1.0 - kr) * pr, ey + 2.0 * (1.0 - kb) * pb);
    let g = (ey - kr * r - kb * b) / (1.0 - kr - kb);
    [r * 255.0, g * 255.0, b * 255.0]
}

/// The R'G'B' of luma pixel (x, y) of a `yuv420p10le` picture (even size) whose chroma is sited
/// left (H.273 type 0: chroma sample (i, j) at luma position (2i, 2j + 1/2)), chroma interpolated
/// bilinearly there (edges extended); `round8` reads every sample rounded to 8 bits first (what
/// an 8-bit conversion could do at best).
fn reference_rgb_10(pic: &[u8], w: usize, h: usize, x: usize, y: usize, round8: bool) -> [f64; 3] {
    let s = |i: usize| {
        let v = u16::from_le_bytes([pic[2 * i], pic[2 * i + 1]]) as f64;
        if round8 {
            (v / 4.0).round() * 4.0
        } else {
            v
        }
    };
    let (cw, ch) = (w / 2, h / 2);
    let (tx, ty) = (x as f64 / 2.0, (y as f64 - 0.5) / 2.0);
    let chroma = |plane: usize| {
        let at = |i: f64, j: f64| s(plane + j.clamp(0.0, (ch - 1) as f64) as usize * cw + i.clamp(0.0, (cw - 1) as f64) as usize);
        let (i, j) = (tx.floor(), ty.floor());
        let (fx, fy) = (tx - i, ty - j);
        let top = at(i, j) * (1.0 - fx) + at(i + 1.0, j) * fx;
        let bot = at(i, j + 1.0) * (1.0 - fx) + at(i + 1.0, j + 1.0) * fx;
        top * (1.0 - fy) + bot * fy
    };
    bt601_limited_10(s(y * w + x), chroma(w * h), chroma(w * h + cw * ch))
}

/// A P016 frame of the `yuv420p10le` picture `want` (w x h) converted on the CPU to GRAY8, RGB8
/// and RGB_F32 (BT.601 limited, left siting, given in the spec) against the standard's formula
/// on the 10-bit samples: 8-bit outputs round correctly (within half a level and a hair), the
/// floats are within 0.01 of a level, nearer than any 8-bit reading of the samples could be.
fn assert_converts_with_its_10_bits(f: u64, want: &[u8], w: usize, h: usize, k: usize) {
    let convert = |format: u32, bytes: usize| {
        let mut spec = nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, format, ..Default::default() };
        (spec.matrix, spec.range, spec.chroma_siting, spec.dst_memory) = (NVCAM_MATRIX_BT601, NVCAM_RANGE_LIMITED, NVCAM_SITING_LEFT, NVCAM_MEMORY_HOST);
        let mut out = vec![0u8; w * h * bytes];
        let r = unsafe { nvcam_frame_convert(f, &spec, out.as_mut_ptr().cast(), 0, out.len() as u64, 0) };
        assert_eq!(r, NVCAM_OK, "frame {k}: format {format}: {}", last_error());
        out
    };
    let (gray, rgb) = (convert(NVCAM_FORMAT_GRAY8, 1), convert(NVCAM_FORMAT_RGB8, 3));
    let float = convert(NVCAM_FORMAT_RGB_F32_PLANAR, 12);
    let plane = |c: usize, i: usize| 255.0 * f32::from_ne_bytes(float[4 * (c * w * h + i)..4 * (c * w * h + i) + 4].try_into().unwrap()) as f64;
    let (mut worst8, mut worst_f, mut nearest_8bit) = (0f64, 0f64, 0f64);
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let luma = (u16::from_le_bytes([want[2 * i], want[2 * i + 1]]) as f64 / 4.0 - 16.0) * 255.0 / 219.0;
            worst8 = worst8.max((gray[i] as f64 - luma.clamp(0.0, 255.0)).abs());
            let (ten, eight) = (reference_rgb_10(want, w, h, x, y, false), reference_rgb_10(want, w, h, x, y, true));
            for c in 0..3 {
                worst8 = worst8.max((rgb[3 * i + c] as f64 - ten[c].clamp(0.0, 255.0)).abs());
                worst_f = worst_f.max((plane(c, i) - ten[c].clamp(0.0, 255.0)).abs());
                nearest_8bit = nearest_8bit.max((plane(c, i) - eight[c].clamp(0.0, 255.0)).abs());
            }
        }
    }
    assert!(worst8 <= 0.501, "frame {k}: an 8-bit output is {worst8} levels from the 10-bit formula: not rounded from the 10-bit value");
    assert!(worst_f < 0.01, "frame {k}: a float output is {worst_f} levels from the 10-bit formula");
    assert!(nearest_8bit > 0.2, "frame {k}: the floats are within {nearest_8bit} levels of the samples rounded to 8 bits: the low bits were dropped, or the picture cannot tell");
}

/// 10-bit cameras (HEVC Main10) had their samples rounded to 8 bits on every path. Frames now
/// keep them in P016 (each sample the decoded value << 6, little-endian 16-bit), report the
/// format and bit depth, copy out as those bytes, and convert with their 10 bits (8-bit outputs
/// rounded from the 10-bit values, floats keeping the precision), never read as NV12 bytes;
/// `NVCAM_OPEN_8BIT` delivers NV12 for 8-bit hosts, equal to FFmpeg's own 10 -> 8-bit conversion.
#[test]
fn ten_bit_hevc_keeps_its_bits_in_p016() {
    init();
    let (w, h, n) = (96usize, 64usize, 4usize);
    let c = ten_bit_clip(w as u32, h as u32, n as u32);
    let native = native_frames(&c, "yuv420p10le", 2 * (w * h + w * h / 2));
    assert_eq!(native.len(), n);
    let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
    for (k, want) in native.iter().enumerate() {
        let f = get_frame(cam, 5000).unwrap();
        let i = info(f).unwrap();
        assert_eq!((i.format, i.bit_depth, i.nv12_size as usize), (NVCAM_FORMAT_P016, 10, 2 * (w * h + w * h / 2)), "frame {k}");
        let px = pixels(f).unwrap();
        let sample = |b: &[u8], i: usize| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]);
        for i in 0..w * h {
            assert_eq!(sample(&px, i), sample(want, i) << 6, "frame {k}: luma sample {i}");
        }
        let (u, v) = (w * h, w * h + w * h / 4);
        for i in 0..w * h / 4 {
            let got = (sample(&px, w * h + 2 * i), sample(&px, w * h + 2 * i + 1));
            assert_eq!(got, (sample(want, u + i) << 6, sample(want, v + i) << 6), "frame {k}: chroma sample {i}");
        }
        assert_converts_with_its_10_bits(f, want, w, h, k);
        release(f).unwrap();
    }
    close(cam, 2000).unwrap();
    let eight = reference_nv12(&c, w, h);
    let cam = open(c.to_str().unwrap(), &options(FAST | NVCAM_OPEN_8BIT)).unwrap();
    for (k, want) in eight.iter().enumerate() {
        let f = get_frame(cam, 5000).unwrap();
        let i = info(f).unwrap();
        assert_eq!((i.format, i.bit_depth), (NVCAM_FORMAT_NV12, 8), "frame {k} with NVCAM_OPEN_8BIT");
        assert!(pixels(f).unwrap() == *want, "frame {k}: NV12 differs from FFmpeg's 10 -> 8-bit conversion");
        release(f).unwrap();
    }
    close(cam, 2000).unwrap();
}

/// HDR cameras could not be told from SDR ones: their BT.2020 matrix was reported as unknown
/// (and converted as BT.709) and the transfer not at all. A 10-bit HEVC stream flagged BT.2020
/// with the PQ curve, and one with HLG, now report BT.2020, that transfer, and left siting.
#[test]
fn hdr_streams_report_bt2020_and_their_transfer() {
    init();
    for (trc, want) in [("smpte2084", NVCAM_TRANSFER_PQ), ("arib-std-b67", NVCAM_TRANSFER_HLG)] {
        let c = hdr_clip(trc, 96, 64);
        let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
        let f = get_frame(cam, 5000).unwrap();
        let i = info(f).unwrap();
        assert_eq!(
            (i.color_matrix, i.color_transfer, i.chroma_siting, i.format, i.bit_depth),
            (NVCAM_MATRIX_BT2020, want, NVCAM_SITING_LEFT, NVCAM_FORMAT_P016, 10),
            "{trc}: matrix, transfer, siting, format, bits"
        );
        release(f).unwrap();
        close(cam, 2000).unwrap();
    }
}

/// Keeping Y'CbCr samples' range must not reach RGB sources: an RGB stream (FFV1 `bgr0`) still
/// becomes limited-range BT.601 NV12, as FFmpeg's own `-pix_fmt nv12` makes it, and says so.
#[test]
fn rgb_source_becomes_limited_range_nv12() {
    init();
    let (w, h) = (96usize, 64usize);
    let c = clip("rgb-ffv1-96x64.mkv", "96x64", 3, "ffv1", &["-pix_fmt", "bgr0"]);
    let want = native_frames(&c, "nv12", w * h + w * h / 2);
    let cam = open(c.to_str().unwrap(), &options(FAST)).unwrap();
    for (k, want) in want.iter().enumerate() {
        let f = get_frame(cam, 5000).unwrap();
        let i = info(f).unwrap();
        assert_eq!(i.color_range, NVCAM_RANGE_LIMITED, "frame {k}");
        assert!(pixels(f).unwrap() == *want, "frame {k}: differs from ffmpeg -pix_fmt nv12");
        release(f).unwrap();
    }
    close(cam, 2000).unwrap();
}

#[test]
fn double_release_returns_error() {
    init();
    let cam = open("testsrc://64x48@30", &options(0)).unwrap();
    let f = get_frame(cam, 5000).unwrap();
    let c = clone(f).unwrap();
    assert_ne!(f, c, "a clone is a new handle");
    release(f).unwrap();
    assert_eq!(release(f).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    // The clone is unaffected by the original's (double) release.
    assert!(pixels(c).is_ok());
    release(c).unwrap();
    assert_eq!(release(c).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    assert_eq!(info(c).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    close(cam, 2000).unwrap();
}

#[test]
fn foreign_and_wrong_type_handles_are_errors() {
    init();
    let cam = open("testsrc://64x48@30", &options(0)).unwrap();
    for bogus in [1u64, 0xdead_beef, u64::MAX, cam ^ 0x1] {
        assert!(release(bogus).is_err());
        assert!(info(bogus).is_err());
    }
    assert_eq!(release(0).unwrap_err().0, NVCAM_E_NULL_HANDLE);
    assert_eq!(release(cam).unwrap_err().0, NVCAM_E_WRONG_HANDLE_TYPE);
    let f = get_frame(cam, 5000).unwrap();
    assert_eq!(close(f, 100).unwrap_err().0, NVCAM_E_WRONG_HANDLE_TYPE);
    release(f).unwrap();
    close(cam, 2000).unwrap();
    assert_eq!(close(cam, 100).unwrap_err().0, NVCAM_E_STALE_HANDLE);
}

#[test]
fn held_slot_never_overwritten() {
    init();
    let mut o = options(NVCAM_OPEN_NO_PACING);
    o.pool_slots = 3;
    let cam = open("testsrc://160x120@30", &o).unwrap();
    // Hold two frames (all slots but the one the worker writes into).
    let a = get_frame(cam, 5000).unwrap();
    let b = get_frame(cam, 5000).unwrap();
    let (pa, pb) = (pixels(a).unwrap(), pixels(b).unwrap());
    let (sa, sb) = (info(a).unwrap().seq, info(b).unwrap().seq);
    assert!(sb > sa);
    // Keep consuming for a while: the worker cycles through the one free slot only.
    let end = Instant::now() + Duration::from_millis(700);
    let mut taken = 0;
    while Instant::now() < end {
        if let Ok(f) = get_frame(cam, 500) {
            assert_ne!(info(f).unwrap().y_ptr, info(a).unwrap().y_ptr, "a held slot was handed out again");
            assert_ne!(info(f).unwrap().y_ptr, info(b).unwrap().y_ptr, "a held slot was handed out again");
            release(f).unwrap();
            taken += 1;
        }
    }
    assert!(taken > 5, "frames kept flowing through the free slot ({taken})");
    assert_eq!(pixels(a).unwrap(), pa, "held frame A changed");
    assert_eq!(pixels(b).unwrap(), pb, "held frame B changed");
    assert_eq!((info(a).unwrap().seq, info(b).unwrap().seq), (sa, sb));
    // Now hold every slot: the newest frames are dropped and counted, nothing is overwritten.
    let c = get_frame(cam, 5000).unwrap();
    let dropped0 = stats(cam).frames_dropped;
    assert!(wait_until(Duration::from_secs(3), || stats(cam).frames_dropped > dropped0 + 3));
    let s = stats(cam);
    assert_eq!((s.pool_slots_in_use, s.pool_slots_total), (3, 3));
    assert_eq!(pixels(a).unwrap(), pa);
    for h in [a, b, c] {
        release(h).unwrap();
    }
    close(cam, 2000).unwrap();
}

#[test]
fn get_frame_returns_newest_and_counts_skipped() {
    init();
    let cam = open("testsrc://64x48@60", &options(0)).unwrap();
    let f1 = get_frame(cam, 5000).unwrap();
    let s1 = info(f1).unwrap().seq;
    release(f1).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let f2 = get_frame(cam, 5000).unwrap();
    let s2 = info(f2).unwrap().seq;
    assert!(s2 > s1 + 10, "a slow host gets the newest frame, not a backlog ({s1} -> {s2})");
    let s = stats(cam);
    assert!(s.frames_skipped >= s2 - s1 - 2, "skipped frames are counted: {} for a gap of {}", s.frames_skipped, s2 - s1);
    assert_eq!(s.frames_delivered, 2);
    release(f2).unwrap();
    close(cam, 2000).unwrap();
}

#[test]
fn reconnect_while_clone_held_keeps_pixels() {
    init();
    let cam = open("testsrc://128x96@30", &options(0)).unwrap();
    let f = get_frame(cam, 5000).unwrap();
    let held = clone(f).unwrap();
    release(f).unwrap();
    let before = pixels(held).unwrap();
    let seq = info(held).unwrap().seq;
    for i in 0..5 {
        assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
        assert!(wait_until(Duration::from_secs(5), || stats(cam).reconnects > i), "reconnect {i} happened");
        let g = get_frame(cam, 5000).unwrap_or_else(|e| panic!("frames resume after reconnect {i}: {e:?}"));
        release(g).unwrap();
        assert_eq!(pixels(held).unwrap(), before, "clone changed across reconnect {i}");
    }
    assert_eq!(info(held).unwrap().seq, seq);
    assert_eq!(stats(cam).reconnects, 5);
    release(held).unwrap();
    close(cam, 2000).unwrap();
}

#[test]
fn release_clones_on_reconnect_flag_invalidates_them() {
    init();
    let cam = open("testsrc://64x48@30", &options(NVCAM_OPEN_RELEASE_CLONES_ON_RECONNECT)).unwrap();
    let f = get_frame(cam, 5000).unwrap();
    assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
    assert!(wait_until(Duration::from_secs(5), || info(f).is_err()));
    assert_eq!(release(f).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    close(cam, 2000).unwrap();
}

#[test]
fn close_with_leaked_clones_frees_all() {
    init();
    let cam = open("testsrc://320x240@30", &options(0)).unwrap();
    let mut leaked = Vec::new();
    for _ in 0..3 {
        let f = get_frame(cam, 5000).unwrap();
        for _ in 0..20 {
            leaked.push(clone(f).unwrap());
        }
        leaked.push(f);
    }
    let mut n = 0u32;
    let mut total = 0u64;
    assert_eq!(unsafe { nvcam_registry_stats(cam, &mut n, &mut total) }, NVCAM_OK);
    assert_eq!(n, 63);
    let pool_bytes = stats(cam).bytes_held;
    assert!(pool_bytes > 0);
    close(cam, 2000).unwrap();
    for h in &leaked {
        assert_eq!(info(*h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(release(*h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    }
    assert_eq!(unsafe { nvcam_registry_stats(cam, &mut n, std::ptr::null_mut()) }, NVCAM_OK);
    assert_eq!(n, 0, "no handle of the closed camera survives");
}

#[test]
fn force_release_owner_invalidates_only_that_camera() {
    init();
    let a = open("testsrc://64x48@30", &options(0)).unwrap();
    let b = open("testsrc://64x48@30", &options(0)).unwrap();
    let fa = get_frame(a, 5000).unwrap();
    let ca = clone(fa).unwrap();
    let fb = get_frame(b, 5000).unwrap();
    let mut released = 0u32;
    assert_eq!(unsafe { nvcam_registry_force_release_owner(a, &mut released) }, NVCAM_OK);
    assert_eq!(released, 2);
    assert_eq!(info(fa).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    assert_eq!(info(ca).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    assert!(info(fb).is_ok(), "another camera's frames are untouched");
    // The camera itself keeps streaming.
    let again = get_frame(a, 5000).unwrap();
    release(again).unwrap();
    release(fb).unwrap();
    close(a, 2000).unwrap();
    close(b, 2000).unwrap();
}

#[test]
fn close_returns_within_timeout_on_hung_source() {
    init();
    // A server that accepts TCP and never says a word.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let conns: Vec<_> = l.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(6));
        drop(conns);
    });
    let mut o = options(NVCAM_OPEN_ASYNC);
    o.open_timeout_ms = 20_000;
    let cam = open(&format!("rtsp://127.0.0.1:{port}/hung"), &o).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(stats(cam).state, NVCAM_STATE_CONNECTING);
    let t0 = Instant::now();
    let r = close(cam, 500);
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(800), "close took {took:?}");
    assert!(r.is_ok(), "the interrupt callback ends the hung open at once: {r:?}");
    drop(hold);
}

#[test]
fn unconsumed_ffmpeg_option_is_an_error() {
    init();
    let opt = std::ffi::CString::new("no_such_option=1;probesize=32768").unwrap();
    let mut o = options(0);
    o.ffmpeg_options = opt.as_ptr();
    let (code, msg) = open("testsrc://64x48@30", &o).unwrap_err();
    assert_eq!(code, NVCAM_E_BAD_OPTION, "{msg}");
    assert!(msg.contains("no_such_option") && !msg.contains("probesize"), "{msg}");
    let bad = std::ffi::CString::new("novalue").unwrap();
    o.ffmpeg_options = bad.as_ptr();
    assert_eq!(open("testsrc://64x48@30", &o).unwrap_err().0, NVCAM_E_BAD_OPTION);
}

/// A bad value for an option FFmpeg knows ("probesize=banana") used to fail the open as
/// NVCAM_E_IO "Invalid argument", and an async camera retried it forever. It is a configuration
/// error: named by its key (never its value), permanent, never retried.
#[test]
fn bad_option_value_fails_once_and_is_not_retried() {
    init();
    for bad in ["probesize=banana", "probesize=", "probesize=1", "rtsp_transport=pigeon"] {
        let opt = std::ffi::CString::new(bad).unwrap();
        let mut o = options(0);
        o.ffmpeg_options = opt.as_ptr();
        let (code, msg) = open("testsrc://64x48@30", &o).unwrap_err();
        assert_eq!(code, NVCAM_E_BAD_OPTION, "{bad}: {msg}");
        assert!(msg.contains(bad.split('=').next().unwrap()), "{bad}: {msg}");
        // Named by its key, never quoted by its value: a value may be a secret.
        let value = bad.split('=').nth(1).unwrap();
        assert!(value.len() < 4 || !msg.contains(value), "{bad}: the value is quoted: {msg}");
    }
    let opt = std::ffi::CString::new("probesize=banana").unwrap();
    let mut o = options(NVCAM_OPEN_ASYNC);
    o.ffmpeg_options = opt.as_ptr();
    let cam = open("testsrc://64x48@30", &o).unwrap();
    assert!(wait_until(Duration::from_secs(3), || stats(cam).state == NVCAM_STATE_FAILED), "async camera fails for good");
    std::thread::sleep(Duration::from_millis(600));
    let s = stats(cam);
    assert_eq!((s.state, s.reconnect_attempt, s.last_error_code), (NVCAM_STATE_FAILED, 0, NVCAM_E_BAD_OPTION), "not retried");
    close(cam, 2000).unwrap();
}

#[test]
fn file_source_ends_or_loops() {
    init();
    let c = clip("h264_short_96x64.mp4", "96x64", 5, "libx264", &[]);
    let cam = open(c.to_str().unwrap(), &options(NVCAM_OPEN_NO_PACING)).unwrap();
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_ENDED));
    // The last frame is still there to take; after it, the end is reported, not a timeout.
    if let Ok(f) = get_frame(cam, 100) {
        release(f).unwrap();
    }
    let (code, msg) = get_frame(cam, 100).unwrap_err();
    assert_eq!(code, NVCAM_E_IO, "{msg}");
    assert_eq!(stats(cam).last_error_code, 0, "a normal end of file is not the camera's error");
    close(cam, 2000).unwrap();

    let cam = open(c.to_str().unwrap(), &options(NVCAM_OPEN_LOOP | FAST)).unwrap();
    for _ in 0..12 {
        let f = get_frame(cam, 5000).unwrap();
        release(f).unwrap();
    }
    assert!(stats(cam).frames_decoded >= 12, "a looped 5-frame file keeps delivering");
    close(cam, 2000).unwrap();
}

/// A looped file plays at its own rate: its first picture after the rewind came at once, a frame
/// early, so a 5-picture clip at 30 fps played 37.5 fps (a 48-picture one 30.6), and a fleet of
/// looped cameras asked the decoders for more than its size said.
#[test]
fn a_looped_file_plays_at_its_own_rate() {
    init();
    let c = clip("h264_short_96x64.mp4", "96x64", 5, "libx264", &[]);
    let cam = open(c.to_str().unwrap(), &options(NVCAM_OPEN_LOOP)).unwrap();
    assert!(wait_until(Duration::from_secs(5), || stats(cam).frames_decoded >= 10));
    let (n0, t0) = (stats(cam).frames_decoded, std::time::Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let fps = (stats(cam).frames_decoded - n0) as f64 / t0.elapsed().as_secs_f64();
    // Never faster than 30 (one picture's slack at the window's ends); slower only on a starved machine.
    assert!((24.0..=31.5).contains(&fps), "a looped 30 fps clip played {fps:.1} fps");
    close(cam, 2000).unwrap();
}

/// A host that reconnects an ended file and asks for a frame at once must get the new
/// connection's frame, not the old end of file (the GPU run of the decoder-reuse test hit this).
#[test]
fn get_frame_right_after_reconnecting_an_ended_file_waits_for_the_new_connection() {
    init();
    let c = clip("h264_short_96x64.mp4", "96x64", 5, "libx264", &[]);
    let cam = open(c.to_str().unwrap(), &options(NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOSSLESS)).unwrap();
    for round in 0..10 {
        for k in 0..5 {
            let f = get_frame(cam, 5000).unwrap_or_else(|e| panic!("round {round}, frame {k}: {e:?}"));
            release(f).unwrap();
        }
        let (code, msg) = get_frame(cam, 5000).unwrap_err();
        assert_eq!(code, NVCAM_E_IO, "round {round}: {msg}");
        assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
    }
    close(cam, 2000).unwrap();
}

#[test]
fn missing_file_fails_open_with_reason() {
    init();
    let before = threads_named("nvcam-cam");
    let (code, msg) = open("/nonexistent/clip.mp4", &options(0)).unwrap_err();
    assert_eq!(code, NVCAM_E_IO, "{msg}");
    assert!(msg.contains("/nonexistent/clip.mp4"), "{msg}");
    assert!(wait_until(Duration::from_secs(2), || threads_named("nvcam-cam") <= before), "no thread left behind");
}

/// `pipe:` reads block outside FFmpeg's interrupt callback: an open would ignore its timeout and
/// leave the camera thread stuck in read() past close and shutdown. Refused at once instead.
#[test]
fn pipe_url_is_refused_not_left_blocking() {
    init();
    let before = threads_named("nvcam-cam");
    for url in ["pipe:0", "fd:0"] {
        let t0 = std::time::Instant::now();
        let (code, msg) = open(url, &options(0)).unwrap_err();
        assert_eq!(code, NVCAM_E_UNSUPPORTED, "{url}: {msg}");
        assert!(msg.contains("cannot be interrupted"), "{msg}");
        assert!(t0.elapsed() < Duration::from_millis(500), "{url} refused at once");
    }
    assert!(wait_until(Duration::from_secs(2), || threads_named("nvcam-cam") <= before), "no thread left behind");
}

#[test]
fn frame_info_describes_host_nv12() {
    init();
    let cam = open("testsrc://200x100@30", &options(0)).unwrap();
    let f = get_frame(cam, 5000).unwrap();
    let i = info(f).unwrap();
    assert_eq!((i.width, i.height, i.format, i.memory, i.device), (200, 100, NVCAM_FORMAT_NV12, NVCAM_MEMORY_HOST, -1));
    assert!(i.pitch >= 200 && i.uv_ptr == i.y_ptr + i.pitch * 100);
    assert_eq!(i.nv12_size, 200 * 150);
    assert_eq!(i.camera, cam);
    let now_ns = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    assert!(i.wallclock_ns <= now_ns && now_ns - i.wallclock_ns < 5_000_000_000);
    // Pitched copy: rows land `dst_pitch` apart; too small a buffer is refused, not overrun.
    let mut buf = vec![0xAAu8; 256 * 150];
    assert_eq!(unsafe { nvcam_frame_copy_nv12(f, buf.as_mut_ptr(), 256, buf.len() as u64) }, NVCAM_OK);
    let packed = pixels(f).unwrap();
    assert_eq!(&buf[256..456], &packed[200..400]);
    assert_eq!(buf[200], 0xAA, "padding between rows untouched");
    assert_eq!(unsafe { nvcam_frame_copy_nv12(f, buf.as_mut_ptr(), 0, 100) }, NVCAM_E_BUFFER_TOO_SMALL);
    assert_eq!(unsafe { nvcam_frame_copy_nv12(f, buf.as_mut_ptr(), 100, buf.len() as u64) }, NVCAM_E_INVALID_ARGUMENT);
    // The host memory really is readable at the pointer the info gives (what a C host does).
    let y = unsafe { std::slice::from_raw_parts(i.y_ptr as *const u8, 200) };
    assert_eq!(y, &packed[..200]);
    release(f).unwrap();
    close(cam, 2000).unwrap();
}

#[test]
fn errors_are_reported_per_thread_and_per_camera() {
    init();
    let cam = open("testsrc://64x48@30", &options(0)).unwrap();
    let (code, msg) = get_frame(cam, 0).map(|f| { release(f).unwrap(); (0, String::new()) }).unwrap_or_else(|e| e);
    if code != 0 {
        assert_eq!(code, NVCAM_E_TIMEOUT);
        assert!(msg.contains("no new frame"), "{msg}");
        // Another thread (LabVIEW hops threads) still finds it on the camera.
        let t = std::thread::spawn(move || {
            let mut buf = vec![0u8; 512];
            assert_eq!(unsafe { nvcam_camera_last_error(cam, buf.as_mut_ptr() as *mut _, 512) }, NVCAM_OK);
            cstr(&buf)
        });
        assert!(t.join().unwrap().contains("NVCAM_E_TIMEOUT"));
    }
    // A successful call clears the thread's last error.
    let f = get_frame(cam, 5000).unwrap();
    assert_eq!(last_error(), "");
    release(f).unwrap();
    // Truncation is reported, the text still NUL-terminated.
    let mut small = [0xffu8; 8];
    assert_eq!(unsafe { nvcam_status_text(NVCAM_E_STALE_HANDLE, small.as_mut_ptr() as *mut _, 8) }, NVCAM_E_BUFFER_TOO_SMALL);
    assert_eq!(small[7], 0);
    close(cam, 2000).unwrap();
}

#[test]
fn log_queue_and_callback_receive_messages() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn cb(_level: i32, msg: *const std::ffi::c_char, _user: *mut std::ffi::c_void) {
        if !std::ffi::CStr::from_ptr(msg).to_string_lossy().is_empty() {
            CALLS.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _g = LOG_QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    init();
    assert_eq!(unsafe { nvcam_log_set_callback(Some(cb), std::ptr::null_mut(), NVCAM_LOG_WARN) }, NVCAM_OK);
    // A failing call logs a warning.
    assert!(open("gopher://nowhere", &options(0)).is_err());
    assert!(CALLS.load(Ordering::Relaxed) > 0);
    let (mut level, mut len) = (0i32, 0i32);
    let mut buf = vec![0u8; 1024];
    let mut found = false;
    loop {
        assert_eq!(unsafe { nvcam_log_pop(&mut level, buf.as_mut_ptr() as *mut _, 1024, &mut len) }, NVCAM_OK);
        if len == 0 {
            break;
        }
        found |= cstr(&buf).contains("gopher");
    }
    assert!(found, "the failure is in the polled queue");
    assert_eq!(unsafe { nvcam_log_set_callback(None, std::ptr::null_mut(), NVCAM_LOG_OFF) }, NVCAM_OK);
}

#[test]
fn resolution_change_makes_new_pool_and_old_clones_keep_pixels() {
    init();
    // A file whose second half is another size: the stream changes mid-way, as a camera's does
    // across a reconnect.
    // MPEG-TS carries SPS/PPS in-band, so the decoder sees the new size in the bitstream.
    let a = clip("size_a_96x64.ts", "96x64", 3, "libx264", &["-g", "1"]);
    let list = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fixtures").join("concat.txt");
    let b = clip("size_b_128x96.ts", "128x96", 3, "libx264", &["-g", "1"]);
    // The concat demuxer switches between files of different sizes in one input.
    std::fs::write(&list, format!("ffconcat version 1.0\nfile '{}'\nfile '{}'\n", a.display(), b.display())).unwrap();
    let safe = std::ffi::CString::new("safe=0").unwrap(); // absolute paths in the list
    let mut o = options(FAST);
    o.ffmpeg_options = safe.as_ptr();
    let cam = open(list.to_str().unwrap(), &o).unwrap();
    let first = get_frame(cam, 5000).unwrap();
    let px = pixels(first).unwrap();
    assert_eq!(info(first).unwrap().width, 96);
    let mut sizes = vec![];
    for _ in 0..5 {
        let f = get_frame(cam, 5000).unwrap();
        sizes.push(info(f).unwrap().width);
        release(f).unwrap();
    }
    assert_eq!(sizes, vec![96, 96, 128, 128, 128]);
    assert_eq!(pixels(first).unwrap(), px, "old-size frame kept its pixels");
    let s = stats(cam);
    assert_eq!((s.width, s.height), (128, 96));
    assert!(s.stream_changes >= 1);
    assert!(s.bytes_held > 0);
    release(first).unwrap();
    close(cam, 2000).unwrap();
}

#[test]
fn open_ex_takes_ffmpeg_options_as_their_own_string() {
    init();
    let url = std::ffi::CString::new("testsrc://64x48@30").unwrap();
    let bad = std::ffi::CString::new("no_such_option=1").unwrap();
    let good = std::ffi::CString::new("probesize=32768").unwrap();
    let o = options(0);
    let mut cam = 0u64;
    assert_eq!(unsafe { nvcam_camera_open_ex(url.as_ptr(), bad.as_ptr(), &o, &mut cam) }, NVCAM_E_BAD_OPTION);
    assert!(last_error().contains("no_such_option"));
    assert_eq!(unsafe { nvcam_camera_open_ex(url.as_ptr(), good.as_ptr(), &o, &mut cam) }, NVCAM_OK);
    let f = get_frame(cam, 5000).unwrap();
    // A failed frame call is recorded on the frame's camera too (LabVIEW reads it from any thread).
    let mut tiny = [0u8; 4];
    assert_eq!(unsafe { nvcam_frame_copy_nv12(f, tiny.as_mut_ptr(), 0, 4) }, NVCAM_E_BUFFER_TOO_SMALL);
    let mut buf = vec![0u8; 512];
    assert_eq!(unsafe { nvcam_camera_last_error(cam, buf.as_mut_ptr() as *mut _, 512) }, NVCAM_OK);
    assert!(cstr(&buf).contains("nvcam_frame_copy_nv12"), "{}", cstr(&buf));
    release(f).unwrap();
    close(cam, 2000).unwrap();
}

/// A LabVIEW host first asks how long the next message is (no buffer), then pops it: the length
/// must come back with NVCAM_E_BUFFER_TOO_SMALL, and the message stay queued.
/// The tests that pop the log queue take turns (each reads what the other would pop).
static LOG_QUEUE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn log_pop_without_room_tells_the_length_of_the_next_message() {
    let _g = LOG_QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    init();
    let (mut level, mut len) = (0i32, -1i32);
    let mut buf = vec![0u8; 4096];
    while unsafe { nvcam_log_pop(&mut level, buf.as_mut_ptr() as *mut _, 4096, &mut len) } == NVCAM_OK && len > 0 {}
    assert_eq!(unsafe { nvcam_log_pop(&mut level, std::ptr::null_mut(), 0, &mut len) }, NVCAM_OK, "empty queue");
    assert_eq!(len, 0);
    // An error on a call is logged (warnings are queued by default).
    assert_ne!(unsafe { nvcam_camera_stats(0xdead_beef, std::ptr::null_mut()) }, NVCAM_OK);
    len = -1;
    let mut probe = [0x5au8; 4];
    assert_eq!(unsafe { nvcam_log_pop(&mut level, probe.as_mut_ptr() as *mut _, 0, &mut len) }, NVCAM_E_BUFFER_TOO_SMALL);
    assert!(len > 0, "the length of the queued message: {len}");
    assert_eq!(probe, [0x5a; 4], "nothing written with len 0");
    assert_eq!(unsafe { nvcam_log_pop(&mut level, std::ptr::null_mut(), 0, &mut len) }, NVCAM_E_BUFFER_TOO_SMALL);
    let want = len;
    assert_eq!(unsafe { nvcam_log_pop(&mut level, buf.as_mut_ptr() as *mut _, want + 1, &mut len) }, NVCAM_OK);
    assert_eq!((len, cstr(&buf).len() as i32), (want, want));
}

#[test]
fn ffmpeg_messages_reach_our_log_with_their_camera() {
    let _g = LOG_QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    init();
    // A truncated MP4: FFmpeg's demuxer says why ("moov atom not found") on the camera's thread.
    let good = clip("h264_short_96x64.mp4", "96x64", 5, "libx264", &[]);
    let bytes = std::fs::read(&good).unwrap();
    let bad = good.with_file_name("truncated-ffmpeg-log.mp4");
    std::fs::write(&bad, &bytes[..bytes.len() / 3]).unwrap();
    let url = bad.to_str().unwrap();
    // Empty the queue first.
    let (mut level, mut len) = (0i32, 0i32);
    let mut buf = vec![0u8; 2048];
    while unsafe { nvcam_log_pop(&mut level, buf.as_mut_ptr() as *mut _, 2048, &mut len) } == NVCAM_OK && len > 0 {}
    assert!(open(url, &options(0)).is_err());
    let mut line = None;
    loop {
        assert_eq!(unsafe { nvcam_log_pop(&mut level, buf.as_mut_ptr() as *mut _, 2048, &mut len) }, NVCAM_OK);
        if len == 0 {
            break;
        }
        let t = cstr(&buf);
        if t.contains("FFmpeg:") && t.contains("moov atom not found") {
            line = Some(t);
        }
    }
    let line = line.expect("FFmpeg's message is in nvcam's log");
    assert!(line.contains(&format!("camera {url}")), "{line}");
}
