//! The direct NVDEC backend (`NVCAM_DECODER_NVDEC`), on a machine with an NVIDIA GPU (through
//! ../shared/gpu/bundle).
//!
//! Each test needs a GPU: without one it returns early with a note (CI has none); with
//! `REQUIRE_GPU=1` (set by the bundle's run.sh) a missing GPU fails it. Tests run one at a time
//! (library init/shutdown and the backend's test knobs are process-wide).
//!
//! Clips are encoded here with Debian's ffmpeg (`cargo test --release --test gpu_nvdec --
//! --ignored make_nvdec_fixtures`) and carried under `$BUNDLE_WITH/fixtures`; references are
//! FFmpeg's software decode (the bundle's `ffmpeg-nvdec` there, `ffmpeg` here).

mod common;
use common::*;
use nvcam::diag::hooks::{self, Knobs};
use nvcam::diag::nvdec_counters;
use nvcam::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Whether direct NVDEC can run here: a usable GPU and libnvcuvid.
fn nvdec_usable() -> bool {
    gpu_usable() && nvcam::diag::nvcuvid_available()
}

/// What [`nvdec_usable`] found missing, for the skip note.
fn nvdec_missing() -> String {
    format!("GPU with NVDEC (libcuda/device: {}, libnvcuvid: {:?})", gpu_usable(), nvcam::diag::nvcuvid_lib().err())
}

const FAST: u32 = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;

fn x264(bframes: bool) -> Vec<&'static str> {
    let mut v = vec!["-preset", "veryfast", "-g", "24"];
    v.extend(if bframes { ["-bf", "3"] } else { ["-bf", "0"] });
    v
}

struct Clip {
    name: &'static str,
    w: usize,
    h: usize,
    frames: u32,
    codec: &'static str,
    extra: Vec<&'static str>,
}

impl Clip {
    fn path(&self) -> PathBuf {
        clip(self.name, &format!("{}x{}", self.w, self.h), self.frames, self.codec, &self.extra)
    }
}

fn content_clips() -> Vec<Clip> {
    vec![
        Clip { name: "gpu-h264-1920x1080.mp4", w: 1920, h: 1080, frames: 48, codec: "libx264", extra: vec!["-preset", "veryfast", "-g", "24", "-bf", "2"] },
        Clip { name: "nvdec-h264-nob-1920x1080.mp4", w: 1920, h: 1080, frames: 40, codec: "libx264", extra: x264(false) },
        Clip { name: "gpu-hevc-1920x1080.mp4", w: 1920, h: 1080, frames: 48, codec: "libx265", extra: x265() },
        Clip { name: "gpu-h264-3840x2160.mp4", w: 3840, h: 2160, frames: 24, codec: "libx264", extra: vec!["-preset", "veryfast", "-g", "24", "-bf", "2"] },
        Clip { name: "gpu-hevc-3840x2160.mp4", w: 3840, h: 2160, frames: 24, codec: "libx265", extra: x265() },
        // Odd sizes: coded 1280x720, cropped to 718 rows (both codecs).
        Clip { name: "nvdec-h264-1280x718.mp4", w: 1280, h: 718, frames: 40, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-hevc-1280x718.mkv", w: 1280, h: 718, frames: 40, codec: "libx265", extra: x265() },
        // 1920x1088: coded and displayed the same (no crop), HEVC.
        Clip { name: "nvdec-hevc-1920x1088.mp4", w: 1920, h: 1088, frames: 30, codec: "libx265", extra: x265() },
        // Annex B already (MPEG-TS): no bitstream filter on this path.
        Clip { name: "nvdec-h264-640x360.ts", w: 640, h: 360, frames: 40, codec: "libx264", extra: x264(true) },
    ]
}

/// Opens `path` with direct NVDEC (lossless, unpaced) and checks `reference.len()` frames
/// against `reference`, starting at `offset` within it; returns the camera.
fn expect_frames(cam: u64, name: &str, reference: &[Vec<u8>], w: usize, h: usize, seq0: u64) {
    for (k, want) in reference.iter().enumerate() {
        let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("{name}: frame {k}: {e:?}"));
        let i = info(f).unwrap();
        assert_eq!((i.memory, i.device, i.width as usize, i.height as usize), (NVCAM_MEMORY_DEVICE, 0, w, h), "{name}: frame {k}");
        assert_eq!(i.seq, seq0 + k as u64 + 1, "{name}: lossless camera skipped a frame");
        let got = pixels(f).unwrap();
        if let Some(at) = first_diff(&got, want) {
            panic!(
                "{name}: frame {k} differs from FFmpeg's software decode at byte {at} of {} (row {}) (fnv {:x} vs {:x})",
                want.len(),
                at / w,
                fnv(&got),
                fnv(want)
            );
        }
        release(f).unwrap();
    }
}

fn hazards() -> u64 {
    nvdec_counters().surface_hazards.load(Ordering::Relaxed)
}

#[test]
fn nvdec_direct_matches_software_decode() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let h0 = hazards();
    for c in content_clips() {
        let path = c.path();
        let reference = reference_frames(&path, c.w, c.h);
        assert_eq!(reference.len(), c.frames as usize, "{}: reference frame count", c.name);
        let cam = open(path.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap_or_else(|e| panic!("{}: open: {e:?}", c.name));
        expect_frames(cam, c.name, &reference, c.w, c.h, 0);
        assert!(wait_until(Duration::from_secs(10), || stats(cam).state == NVCAM_STATE_ENDED), "{}: did not end", c.name);
        let st = stats(cam);
        assert_eq!(st.decoder, NVCAM_DECODER_NVDEC, "{}: not decoded by direct NVDEC", c.name);
        assert_eq!((st.frames_decoded, st.frames_dropped), (c.frames as u64, 0), "{}", c.name);
        println!("{}: {} frames equal to FFmpeg's software decode (direct NVDEC, device pool)", c.name, reference.len());
        close(cam, 5000).unwrap();
    }
    assert_eq!(hazards(), h0, "a picture's surface was reused before it was written");
}

/// The ordering argument of `src/decode/nvdec/mod.rs` under stress: one output surface (each map reuses
/// the surface the previous frame was just unmapped from) and a host function that stalls the
/// camera's stream 4 ms before each map, so every unmap and the next map happen while the copy
/// out of that surface has not run yet. Each frame must still equal the software decode, and the
/// host must have found copies unfinished (ready waits), which shows the stream did lag.
#[test]
fn nvdec_unmap_before_copy_runs_keeps_frames_exact() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let c = Clip { name: "nvdec-h264-704x480.mp4", w: 704, h: 480, frames: 60, codec: "libx264", extra: x264(true) };
    let path = c.path();
    let reference = reference_frames(&path, c.w, c.h);
    hooks::set(Knobs { coded_width: 704, output_surfaces: 1, stream_delay_us: 4000, fail_decode_at: 0 });
    let g0 = gpu_stats(0);
    let h0 = hazards();
    let early = || nvdec_counters().unmapped_before_copy_ran.load(Ordering::Relaxed);
    let e0 = early();
    let cam = open(path.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
    expect_frames(cam, c.name, &reference, c.w, c.h, 0);
    let g1 = gpu_stats(0);
    let (waits, unmapped_early) = (g1.ready_waits - g0.ready_waits, early() - e0);
    println!(
        "{}: {} frames exact with 1 output surface and a 4 ms stream stall before each map; {unmapped_early} unmapped before their copy ran; the host waited for {waits} unfinished copies",
        c.name,
        reference.len()
    );
    // The evidence that the hazard was really provoked: surfaces went back to the decoder (and,
    // with one output surface, the next map reused them) while their copies were still queued.
    assert!(
        unmapped_early >= reference.len() as u64 / 2,
        "only {unmapped_early} of {} frames were unmapped before their copy ran: the test proved nothing",
        reference.len()
    );
    assert_eq!(hazards(), h0);
    close(cam, 5000).unwrap();
}

/// A stream whose size changes mid-way (MPEG-TS parts joined byte for byte: 640x360 → 320x240 →
/// 640x360): the decoder is reconfigured in place, pictures queued across the change are kept,
/// and every frame equals the software decode of its part.
#[test]
fn nvdec_resolution_change_reconfigures_and_keeps_every_frame() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let parts = [
        Clip { name: "nvdec-part-a-640x360.ts", w: 640, h: 360, frames: 20, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-part-b-320x240.ts", w: 320, h: 240, frames: 20, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-part-c-640x360.ts", w: 640, h: 360, frames: 20, codec: "libx264", extra: x264(true) },
    ];
    let joined = parts[0].path().with_file_name("nvdec-parts-abc.ts");
    let mut bytes = Vec::new();
    for p in &parts {
        bytes.extend(std::fs::read(p.path()).unwrap());
    }
    std::fs::write(&joined, bytes).unwrap();
    let c = nvdec_counters();
    let (r0, h0, d0) = (c.reconfigures.load(Ordering::Relaxed), hazards(), c.decoders_created.load(Ordering::Relaxed));
    let cam = open(joined.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
    let mut seq = 0;
    for p in &parts {
        let reference = reference_frames(&p.path(), p.w, p.h);
        expect_frames(cam, p.name, &reference, p.w, p.h, seq);
        seq += reference.len() as u64;
    }
    let (r1, d1) = (c.reconfigures.load(Ordering::Relaxed), c.decoders_created.load(Ordering::Relaxed));
    println!(
        "3 parts, 2 size changes: {seq} frames exact; reconfigures +{}, decoders created +{}, pictures parked across a change {}",
        r1 - r0,
        d1 - d0,
        c.parked.load(Ordering::Relaxed)
    );
    assert_eq!(hazards(), h0);
    assert!(r1 - r0 >= 1, "no reconfigure happened");
    let st = stats(cam);
    assert_eq!((st.width, st.height, st.frames_dropped), (640, 360, 0));
    assert!(st.stream_changes >= 2);
    close(cam, 5000).unwrap();
}

/// A decode failure on one camera (injected where the engine's error would surface) is reported
/// for that camera, which recreates its decoder and keeps streaming; a camera beside it decodes
/// every frame exactly and sees no error.
#[test]
fn nvdec_error_on_one_camera_recovers_and_spares_the_others() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let bad = Clip { name: "nvdec-h264-480x272.mp4", w: 480, h: 272, frames: 60, codec: "libx264", extra: x264(true) };
    let good = Clip { name: "nvdec-h264-1280x718.mp4", w: 1280, h: 718, frames: 40, codec: "libx264", extra: x264(true) };
    // 480 wide: the injected fault hits only the first camera's decoder.
    hooks::set(Knobs { coded_width: 480, output_surfaces: 0, stream_delay_us: 0, fail_decode_at: 30 });
    let rec0 = nvdec_counters().recoveries.load(Ordering::Relaxed);
    let cam_bad = open(bad.path().to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_NVDEC)).unwrap();
    let reference = reference_frames(&good.path(), good.w, good.h);
    let cam_good = open(good.path().to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
    expect_frames(cam_good, good.name, &reference, good.w, good.h, 0);
    assert!(
        wait_until(Duration::from_secs(10), || nvdec_counters().recoveries.load(Ordering::Relaxed) > rec0),
        "the injected fault did not trigger a recovery"
    );
    let n0 = stats(cam_bad).frames_decoded;
    assert!(wait_until(Duration::from_secs(10), || stats(cam_bad).frames_decoded > n0 + 60), "the failed camera did not resume");
    let sb = stats(cam_bad);
    assert_eq!(sb.state, NVCAM_STATE_STREAMING);
    assert_eq!(sb.decoder, NVCAM_DECODER_NVDEC);
    assert_eq!(sb.reconnects, 0, "recovered in place, not by reconnecting");
    let mut buf = vec![0u8; 2048];
    unsafe { nvcam_camera_last_error(cam_bad, buf.as_mut_ptr() as *mut _, buf.len() as i32) };
    let msg = cstr(&buf);
    assert!(msg.contains("NVDEC decoder recreated"), "the failed camera's last error: {msg:?}");
    let sg = stats(cam_good);
    assert_eq!((sg.last_error_code, sg.frames_dropped), (0, 0), "the other camera saw an error");
    println!("camera 1: {msg}; resumed ({} frames since); camera 2: {} frames exact, no error", sb.frames_decoded - n0, reference.len());
    close(cam_bad, 5000).unwrap();
    close(cam_good, 5000).unwrap();
}

/// AUTO takes direct NVDEC where it can and says so. A codec direct NVDEC does not take (MPEG-4
/// part 2) is refused by the NVDEC policy at open, and AUTO moves on to FFmpeg's CUDA hwaccel
/// (or, failing that, software + upload), into the same device pool.
#[test]
fn auto_prefers_direct_nvdec_and_stats_name_it() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let h264 = clip("nvdec-h264-640x360.ts", "640x360", 40, "libx264", &x264(true));
    let cam = open(h264.to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_AUTO)).unwrap();
    release(get_frame(cam, 10_000).unwrap()).unwrap();
    assert_eq!(stats(cam).decoder, NVCAM_DECODER_NVDEC);
    close(cam, 5000).unwrap();
    let mp4v = clip("nvdec-mpeg4-320x240.mp4", "320x240", 20, "mpeg4", &[]);
    let e = open(mp4v.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap_err();
    assert_eq!(e.0, NVCAM_E_UNSUPPORTED, "{e:?}");
    let cam = open(mp4v.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_AUTO)).unwrap();
    let f = get_frame(cam, 10_000).unwrap();
    assert_eq!(info(f).unwrap().memory, NVCAM_MEMORY_DEVICE);
    release(f).unwrap();
    let d = stats(cam).decoder;
    assert!(d == NVCAM_DECODER_FFMPEG_HW || d == NVCAM_DECODER_SOFTWARE, "{d}");
    close(cam, 5000).unwrap();
    println!(
        "AUTO: H.264 -> nvdec; MPEG-4 part 2 -> NVDEC policy refuses ({}), AUTO picks {}",
        e.1,
        if d == NVCAM_DECODER_FFMPEG_HW { "ffmpeg-cuda" } else { "software + upload" }
    );
}

fn created() -> u64 {
    nvdec_counters().decoders_created.load(Ordering::Relaxed)
}

fn adopted() -> u64 {
    nvdec_counters().decoders_adopted.load(Ordering::Relaxed)
}

/// Whether this run keeps decoders across reconnects (`NVCAM_NVDEC_REUSE=0` turns it off).
fn reuse_on() -> bool {
    !matches!(std::env::var("NVCAM_NVDEC_REUSE").as_deref(), Ok("0") | Ok("off") | Ok("false"))
}

fn reconnect(cam: u64) {
    assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK, "{}", last_error());
}

/// After a reconnect, the first frame of the new connection: the frame equal to `first`, within
/// a few frames. The old connection's last pictures come first: a reconnect drains the decoder
/// (every picture it holds is delivered), up to its decode surfaces' worth. Returns its seq.
fn sync_on_first(cam: u64, name: &str, first: &[u8]) -> u64 {
    for k in 0..32 {
        let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("{name}: frame {k} after the reconnect: {e:?}"));
        let (seq, got) = (info(f).unwrap().seq, pixels(f).unwrap());
        release(f).unwrap();
        if first_diff(&got, first).is_none() {
            eprintln!("{name}: the new connection's first frame came after {k} of the old one's");
            return seq;
        }
    }
    panic!("{name}: no frame equal to the clip's first within 32 frames after the reconnect");
}

/// A reconnect of the same camera keeps its NVDEC decoder (no `cuvidCreateDecoder`, which the
/// driver serializes at ~70 ms each: a burst of 32 reconnects took 2.3-2.7 s with a new decoder
/// each): reconnects after the file ended and in the middle of it (pictures still in the
/// decoder) each adopt the parked decoder, every frame after each reconnect equals the software
/// decode, and a clone held from the first connection keeps its pixels.
#[test]
fn reconnect_reuses_the_nvdec_decoder() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let c = Clip { name: "nvdec-h264-1280x718.mp4", w: 1280, h: 718, frames: 40, codec: "libx264", extra: x264(true) };
    let path = c.path();
    let reference = reference_frames(&path, c.w, c.h);
    let n = reference.len() as u64;
    let h0 = hazards();
    let cam = open(path.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
    // The first connection, holding a clone of frame 5.
    let mut held = None;
    for (k, want) in reference.iter().enumerate() {
        let f = get_frame(cam, 20_000).unwrap_or_else(|e| panic!("frame {k}: {e:?}"));
        let got = pixels(f).unwrap();
        assert_eq!(first_diff(&got, want), None, "first connection: frame {k} differs from the software decode");
        if k == 5 {
            held = Some((clone(f).unwrap(), fnv(&got)));
        }
        release(f).unwrap();
    }
    let ended = || wait_until(Duration::from_secs(10), || stats(cam).state == NVCAM_STATE_ENDED);
    assert!(ended(), "the first connection did not end");
    let (d0, a0) = (created(), adopted());
    const ROUNDS: u64 = 6;
    for r in 1..=ROUNDS {
        let name = format!("{} after reconnect {r}", c.name);
        reconnect(cam);
        let seq0 = sync_on_first(cam, &name, &reference[0]);
        if r % 2 == 1 {
            // To the end of the file; the next reconnect finds the camera ended.
            expect_frames(cam, &name, &reference[1..], c.w, c.h, seq0);
            assert!(ended(), "{name}: did not end");
        } else {
            // Ten frames, then a reconnect mid-stream (the decoder still holds pictures).
            expect_frames(cam, &name, &reference[1..10], c.w, c.h, seq0);
        }
    }
    // The last round left the camera streaming: one more to the end, exact.
    reconnect(cam);
    let seq0 = sync_on_first(cam, "final connection", &reference[0]);
    expect_frames(cam, "final connection", &reference[1..], c.w, c.h, seq0);
    let (d1, a1) = (created() - d0, adopted() - a0);
    let (hf, want) = held.unwrap();
    assert_eq!(fnv(&pixels(hf).unwrap()), want, "the clone held across the reconnects changed");
    release(hf).unwrap();
    println!(
        "{} reconnects (half of them mid-stream): every frame exact ({n} per connection); decoders created +{d1}, adopted +{a1} (reuse {}); held clone unchanged",
        ROUNDS + 1,
        if reuse_on() { "on" } else { "off" }
    );
    assert_eq!(hazards(), h0);
    assert_eq!(stats(cam).frames_dropped, 0);
    if reuse_on() {
        assert_eq!(d1, 0, "a reconnect of the same stream created an NVDEC decoder");
        assert_eq!(a1, ROUNDS + 1, "not every reconnect adopted the parked decoder");
    } else {
        assert_eq!((d1, a1), (ROUNDS + 1, 0), "NVCAM_NVDEC_REUSE=0: every connection makes its own decoder");
    }
    close(cam, 5000).unwrap();
}

/// A reconnect that brings another size: within the size the parked decoder was made for it is
/// reconfigured (or replaced, where NVDEC needs more surfaces), beyond it a new decoder is made;
/// either way every frame equals the software decode. The camera's URL is a symbolic link
/// pointed at another clip between connections.
#[test]
fn reconnect_with_another_size_adopts_or_replaces_the_decoder() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let clips = [
        Clip { name: "nvdec-part-a-640x360.ts", w: 640, h: 360, frames: 20, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-part-b-320x240.ts", w: 320, h: 240, frames: 20, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-part-c-640x360.ts", w: 640, h: 360, frames: 20, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-h264-1280x718.mp4", w: 1280, h: 718, frames: 40, codec: "libx264", extra: x264(true) },
        Clip { name: "nvdec-part-a-640x360.ts", w: 640, h: 360, frames: 20, codec: "libx264", extra: x264(true) },
    ];
    // No extension: FFmpeg finds the container from the content.
    let link = clips[0].path().with_file_name("nvdec-reuse-current");
    let point = |target: &Path| {
        let tmp = link.with_file_name("nvdec-reuse-next");
        let _ = std::fs::remove_file(&tmp);
        // A sibling in the fixtures folder: a relative link, whatever the folder's path.
        #[cfg(unix)]
        std::os::unix::fs::symlink(target.file_name().unwrap(), &tmp).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(target, &tmp).unwrap();
        std::fs::rename(&tmp, &link).unwrap();
    };
    point(&clips[0].path());
    let h0 = hazards();
    let ended = |cam: u64| wait_until(Duration::from_secs(10), || stats(cam).state == NVCAM_STATE_ENDED);
    let cam = open(link.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
    let mut seq = 0;
    let mut steps = Vec::new();
    for (i, c) in clips.iter().enumerate() {
        let reference = reference_frames(&c.path(), c.w, c.h);
        let (d0, a0, r0) = (created(), adopted(), nvdec_counters().reconfigures.load(Ordering::Relaxed));
        if i > 0 {
            point(&c.path());
            reconnect(cam);
        }
        expect_frames(cam, c.name, &reference, c.w, c.h, seq);
        seq += reference.len() as u64;
        assert!(ended(cam), "{}: did not end", c.name);
        let d = (created() - d0, adopted() - a0, nvdec_counters().reconfigures.load(Ordering::Relaxed) - r0);
        steps.push(format!("{}x{}: created +{} adopted +{} reconfigured +{}", c.w, c.h, d.0, d.1, d.2));
        if i > 0 {
            assert_eq!(d.0 + d.1, 1, "{}: a connection either adopts the parked decoder or creates one", c.name);
        }
        if i == 3 {
            assert_eq!((d.0, d.1), (1, 0), "1280x718 is larger than the parked decoder (640x360): it needs a new one");
        }
        if i == 1 && reuse_on() {
            // 640x360 -> 320x240: within the size the parked decoder was made for. (Adopted
            // unless the smaller stream asks NVDEC for more decode surfaces than it has.)
            println!("640x360 -> 320x240 across a reconnect: {}", if d.1 == 1 { "adopted (reconfigured)" } else { "new decoder" });
        }
    }
    println!("sizes across reconnects, every frame exact ({seq}): {}", steps.join("; "));
    assert_eq!(hazards(), h0);
    assert_eq!(stats(cam).frames_dropped, 0);
    close(cam, 5000).unwrap();
    let _ = std::fs::remove_file(&link);
}

/// What one camera delivered (pixel hash by seq) and, when it recorded, its recording's status.
struct Run {
    hashes: std::collections::BTreeMap<u64, u64>,
    rec: Option<(nvcam_record_status, PathBuf)>,
    /// When the camera's last frame had been taken (the decode's end; a recording's finish, which
    /// waits for its writer to close the file, comes after).
    drained: std::time::Instant,
}

/// N cameras of `clip` side by side on direct NVDEC, each drained by its own thread (every frame
/// downloaded and hashed); with `record_dir`, each keeps a packet cache and records into a file
/// there from its first frame on, stopped when the clip has ended.
fn nvdec_cameras(clip: &Path, n: usize, record_dir: Option<&Path>) -> (Vec<Run>, Duration) {
    let t0 = std::time::Instant::now();
    let runs = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|k| {
                s.spawn(move || {
                    let cam = open(clip.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap_or_else(|e| panic!("camera {k}: {e:?}"));
                    let mut hashes = std::collections::BTreeMap::new();
                    let mut rec = None;
                    if record_dir.is_some() {
                        assert_eq!(nvcam_camera_record_cache(cam, 5000, 0), NVCAM_OK, "{}", last_error());
                    }
                    while let Ok(f) = get_frame(cam, 20_000) {
                        let i = info(f).unwrap();
                        assert_eq!(i.memory, NVCAM_MEMORY_DEVICE, "camera {k}: not a device frame");
                        hashes.insert(i.seq, fnv(&pixels(f).unwrap()));
                        release(f).unwrap();
                        if let (Some(dir), None) = (record_dir, rec) {
                            let path = dir.join(format!("cam{k}.mkv"));
                            let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
                            let mut h = 0u64;
                            assert_eq!(unsafe { nvcam_camera_record_start(cam, p.as_ptr(), 5000, 600_000, &mut h) }, NVCAM_OK, "camera {k}: {}", last_error());
                            rec = Some(h);
                        }
                    }
                    let drained = std::time::Instant::now();
                    assert_eq!(stats(cam).decoder, NVCAM_DECODER_NVDEC, "camera {k}: not on direct NVDEC");
                    let rec = rec.map(|h| {
                        assert_eq!(nvcam_record_stop(h), NVCAM_OK);
                        let mut st: nvcam_record_status = unsafe { std::mem::zeroed() };
                        st.struct_size = std::mem::size_of::<nvcam_record_status>() as u32;
                        let done = wait_until(Duration::from_secs(10), || {
                            assert_eq!(unsafe { nvcam_record_status(h, &mut st) }, NVCAM_OK);
                            matches!(st.state, NVCAM_RECORD_DONE | NVCAM_RECORD_STOPPED | NVCAM_RECORD_FAILED)
                        });
                        assert!(done, "camera {k}: the recording did not end (state {})", st.state);
                        let mut buf = vec![0u8; 1024];
                        unsafe { nvcam_record_file(h, buf.as_mut_ptr() as *mut _, buf.len() as i32) };
                        assert_eq!(nvcam_record_release(h), NVCAM_OK);
                        (st, PathBuf::from(cstr(&buf)))
                    });
                    close(cam, 5000).unwrap();
                    Run { hashes, rec, drained }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    let decoded = runs.iter().map(|r| r.drained).max().unwrap_or(t0) - t0;
    (runs, decoded)
}

/// Recording while decoding on direct NVDEC changes no delivered frame: 16 cameras of the 1080p
/// H.264 clip side by side, once without and once each with a packet cache and a recording. Every
/// camera delivers the same pictures by seq in both runs, each recording ends complete under its
/// name, its status's seq range names delivered frames up to the clip's last, and the file
/// (decoded again on direct NVDEC) holds exactly those frames. The time from the opens to the
/// last frame taken is printed for both runs (decode fps with and without recording; the
/// recordings' finish comes after it). A 48-frame clip is too short for a throughput figure:
/// `examples/record_bench.rs --unpaced` measures that.
#[test]
fn recording_on_nvdec_changes_no_delivered_frame() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let clip = content_clips()[0].path();
    let frames = content_clips()[0].frames as usize;
    let dir = std::env::temp_dir().join(format!("nvcam-nvdec-recording-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    const N: usize = 16;
    let (bare, t_bare) = nvdec_cameras(&clip, N, None);
    let (recorded, t_rec) = nvdec_cameras(&clip, N, Some(&dir));
    for (k, (a, b)) in bare.iter().zip(&recorded).enumerate() {
        assert_eq!(a.hashes.len(), frames, "camera {k} without recording: frames delivered");
        assert_eq!(a.hashes, b.hashes, "camera {k}: the frames delivered while recording differ from those without");
        assert_eq!(a.hashes, bare[0].hashes, "camera {k}: another picture than camera 0's");
        let (st, file) = b.rec.as_ref().unwrap();
        assert_eq!(st.state, NVCAM_RECORD_STOPPED, "camera {k}: recording state");
        assert!(file.extension().is_some_and(|e| e == "mkv") && file.exists(), "camera {k}: {} is not complete", file.display());
        assert!(std::fs::metadata(file).unwrap().len() >= st.bytes && st.bytes > 0, "camera {k}: {} bytes", st.bytes);
        assert_eq!(st.last_seq, frames as u64, "camera {k}: the recording does not reach the clip's last frame");
        assert_eq!(st.frames, st.last_seq - st.first_seq + 1, "camera {k}: pictures vs seq range {}..{}", st.first_seq, st.last_seq);
        // It starts at the cache's first key frame (the decode below shows the file is whole).
        assert!(st.first_seq >= 1 && st.first_seq < st.last_seq, "camera {k}: seq range {}..{}", st.first_seq, st.last_seq);
    }
    // The files hold the delivered frames: camera 0's and the last camera's, decoded again.
    for k in [0, N - 1] {
        let (st, file) = recorded[k].rec.as_ref().unwrap();
        let cam = open(file.to_str().unwrap(), &gpu_options(FAST, NVCAM_DECODER_NVDEC)).unwrap();
        let mut j = 0u64;
        while let Ok(f) = get_frame(cam, 10_000) {
            let seq = st.first_seq + j;
            assert_eq!(Some(&fnv(&pixels(f).unwrap())), recorded[k].hashes.get(&seq), "camera {k}: picture {j} of the file is not delivered frame {seq}");
            release(f).unwrap();
            j += 1;
        }
        assert_eq!(j, st.frames, "camera {k}: pictures in the file");
        close(cam, 5000).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let fps = |t: Duration| (N * frames) as f64 / t.as_secs_f64();
    println!(
        "recording on NVDEC: {N} cameras x {frames} frames identical with and without recording; {:.0} fps without, {:.0} fps with (every frame downloaded)",
        fps(t_bare),
        fps(t_rec)
    );
}

/// On direct NVDEC a size change reaches the parser's sequence callback, which made a decoder and
/// a pool of whatever size the stream claimed. Over the camera's limit the callback refuses it:
/// every picture before the change is delivered, none after, the camera fails with the reason,
/// no decoder of the new size is made and the pool stays the old size.
#[test]
fn a_size_change_over_the_limit_gets_no_nvdec_decoder_and_no_pool() {
    if !need_gpu!(nvdec_usable(), &nvdec_missing()) {
        return;
    }
    let _s = Session::new();
    let path = size_change_clip();
    let ff = std::ffi::CString::new("analyzeduration=1000000;probesize=4096").unwrap();
    let mut o = gpu_options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING, NVCAM_DECODER_NVDEC);
    (o.max_picture_width, o.max_picture_height) = (128, 64);
    o.ffmpeg_options = ff.as_ptr();
    let created0 = created();
    let cam = open(path.to_str().unwrap(), &o).expect("the stream starts at 96x64");
    let (sizes, end) = sizes_until_error(cam);
    assert_eq!(end.0, NVCAM_E_FAILED, "the frames end with the camera's failure: {end:?}");
    assert_eq!(sizes, vec![(96, 64); 90], "every picture before the change, none after");
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "state {}", stats(cam).state);
    let st = stats(cam);
    assert_eq!(st.decoder, NVCAM_DECODER_NVDEC, "decoded by direct NVDEC");
    assert_eq!(st.pictures_refused, 1);
    assert_eq!((st.width, st.height), (96, 64), "the pool stays the old size");
    assert!(created() - created0 <= 1, "no decoder was made for the refused size");
    let why = cam_error(cam);
    assert!(why.contains("160x64") && why.contains("128x64"), "the reason names both sizes: {why}");
    println!("direct NVDEC: 90 pictures at 96x64, the change to 160x64 refused (limit 128x64), one decoder made");
    close(cam, 5000).unwrap();
}

/// Encodes every clip these tests and `examples/nvdec_bench.rs` use, here where libx264/libx265
/// exist; the bundle carries them to the GPU machine.
#[test]
#[ignore]
fn make_nvdec_fixtures() {
    for c in content_clips() {
        c.path();
    }
    clip("nvdec-h264-704x480.mp4", "704x480", 60, "libx264", &x264(true));
    for (n, s) in [("nvdec-part-a-640x360.ts", "640x360"), ("nvdec-part-b-320x240.ts", "320x240"), ("nvdec-part-c-640x360.ts", "640x360")] {
        clip(n, s, 20, "libx264", &x264(true));
    }
    clip("nvdec-h264-480x272.mp4", "480x272", 60, "libx264", &x264(true));
    clip("nvdec-mpeg4-320x240.mp4", "320x240", 20, "mpeg4", &[]);
    size_change_clip();
    // Benchmark clips: 1080p30, H.264 at 4 Mbit/s and HEVC at 2 Mbit/s, 10 s each (the clips
    // docs/BENCHMARKS.md's decode figures are for).
    clip("bench-h264-1920x1080.mp4", "1920x1080", 300, "libx264", &["-preset", "veryfast", "-b:v", "4M", "-g", "60", "-bf", "2"]);
    clip("bench-hevc-1920x1080.mp4", "1920x1080", 300, "libx265", &["-preset", "fast", "-b:v", "2M", "-g", "60", "-x265-params", "log-level=error"]);
}
