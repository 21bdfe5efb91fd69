// Camera formats on every decoder: JPEG of every layout (and progressive JPEG's fall-back),
// 10-bit HEVC into P016, HDR colours, and what the GPU-only decoders refuse. Part of the `gpu`
// test binary (included by tests/gpu.rs, so the tests keep their names).

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
