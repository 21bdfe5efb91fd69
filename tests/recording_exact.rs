//! Recordings exact to the picture on a live camera: a real GStreamer RTSP server on loopback
//! streams a known clip with B-frames (H.264 and HEVC); clips ended by their post, an extension,
//! a stop, a release, a camera close, `nvcam_shutdown`, and segments ended by a stop are decoded
//! by the ffmpeg CLI and compared with the clip picture by picture: no picture missing or
//! repeated, the end a presentation time (the last picture at or after trigger + post), an early
//! end after whole mini-GOPs, and the status saying what the file holds.

mod common;
#[path = "support/rtsp.rs"]
mod rtsp;

use common::*;
use nvcam::*;
use rtsp::{RtspServer, Stream};
use std::collections::HashMap;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The clip's picture index of each hash (testsrc2's pictures are all different).
fn index_of(clip: &Path) -> HashMap<u64, usize> {
    reference_nv12(clip, 320, 240).iter().enumerate().map(|(k, f)| (fnv(f), k)).collect()
}

fn out_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("recording_exact").join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn start(cam: u64, path: &Path, pre_ms: u32, post_ms: u32) -> u64 {
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let mut rec = 0;
    let rc = unsafe { nvcam_camera_record_start(cam, p.as_ptr(), pre_ms, post_ms, &mut rec) };
    assert_eq!(rc, NVCAM_OK, "record {}: {}", path.display(), last_error());
    rec
}

fn status(rec: u64) -> nvcam_record_status {
    let mut s: nvcam_record_status = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<nvcam_record_status>() as u32;
    assert_eq!(unsafe { nvcam_record_status(rec, &mut s) }, NVCAM_OK, "{}", last_error());
    s
}

fn ended(rec: u64) -> bool {
    matches!(status(rec).state, NVCAM_RECORD_DONE | NVCAM_RECORD_STOPPED | NVCAM_RECORD_FAILED)
}

/// What the host saw: the camera's frames by the clip's picture index.
#[derive(Default)]
struct Seen {
    by_index: HashMap<usize, (u64, i64)>,
    newest_pts_us: i64,
}

impl Seen {
    fn take(&mut self, cam: u64, index: &HashMap<u64, usize>) {
        let f = get_frame(cam, 5000).expect("the camera streams");
        let i = info(f).unwrap();
        let k = *index.get(&fnv(&pixels(f).unwrap())).expect("every frame is a picture of the clip");
        release(f).unwrap();
        self.by_index.insert(k, (i.seq, i.pts_us));
        self.newest_pts_us = self.newest_pts_us.max(i.pts_us);
    }
}

/// The clip's picture indexes of `file`'s decoded pictures, checked to be a run with none
/// missing or repeated.
fn run_in(file: &Path, index: &HashMap<u64, usize>) -> std::ops::RangeInclusive<usize> {
    let got: Vec<usize> = reference_nv12(file, 320, 240)
        .iter()
        .map(|f| *index.get(&fnv(f)).unwrap_or_else(|| panic!("{}: a picture that is not in the clip", file.display())))
        .collect();
    assert!(!got.is_empty(), "{} decodes to nothing", file.display());
    let want: Vec<usize> = (got[0]..got[0] + got.len()).collect();
    assert_eq!(got, want, "{}: pictures missing or repeated (clip indexes)", file.display());
    got[0]..=got[got.len() - 1]
}

/// The status says what the file holds: its pictures, their frame numbers and timestamps.
fn status_is_the_file(s: &nvcam_record_status, run: &std::ops::RangeInclusive<usize>, seen: &Seen, what: &str) {
    let (first, last) = (seen.by_index[run.start()], seen.by_index[run.end()]);
    assert_eq!(s.frames as usize, run.clone().count(), "{what}: frames");
    assert_eq!((s.first_seq, s.last_seq), (first.0, last.0), "{what}: first/last_seq vs the file's pictures");
    assert_eq!((s.first_pts_us, s.last_pts_us), (first.1, last.1), "{what}: first/last_pts_us vs the file's pictures");
    assert_eq!(s.duration_us, last.1 - first.1, "{what}: duration_us");
}

fn clip_for(codec: &str) -> PathBuf {
    // 10 s at 30 fps, B-frames (x264: a pyramid of 3), a key frame every second.
    if codec == "h264" {
        clip("rec-exact-h264-bf3.mp4", "320x240", 300, "libx264", &["-preset", "veryfast", "-bf", "3", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0"])
    } else {
        let x265 = "bframes=3:keyint=30:min-keyint=30:scenecut=0:open-gop=0:log-level=error";
        clip("rec-exact-hevc-bf3-closed.mp4", "320x240", 300, "libx265", &["-preset", "ultrafast", "-x265-params", x265])
    }
}

/// Every way a clip ends, on one camera: a (MKV) and b (MP4) end by their post (b extended), c
/// by a stop, d by a release, e (segments) by a stop, f by the camera's close (H.264) or
/// `nvcam_shutdown` (HEVC).
fn every_end(codec: &'static str) {
    let _g = serial();
    let dir = out_dir(codec);
    let clip = clip_for(codec);
    let index = index_of(&clip);
    let srv = RtspServer::start(Stream::default().codec(codec).clip(&clip).not_shared());
    let mut o = options(NVCAM_OPEN_LOSSLESS);
    o.open_timeout_ms = 5000;
    let tcp = CString::new("rtsp_transport=tcp").unwrap();
    o.ffmpeg_options = tcp.as_ptr();
    let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("open: {e:?}; server: {}", srv.stderr_text()));
    assert_eq!(nvcam_camera_record_cache(cam, 2000, 0), NVCAM_OK);
    let mut seen = Seen::default();
    while seen.by_index.len() < 75 {
        seen.take(cam, &index);
    }
    let ext = |n: &str, mkv: bool| dir.join(format!("{n}.{}", if mkv { "mkv" } else { "mp4" }));
    let (fa, fb, fc, fd, ff) = (ext("a", true), ext("b", false), ext("c", true), ext("d", false), ext("f", codec == "h264"));
    let a = start(cam, &fa, 1000, 1000);
    let b = start(cam, &fb, 1000, 600);
    let c = start(cam, &fc, 500, 60_000);
    let d = start(cam, &fd, 500, 60_000);
    let f = start(cam, &ff, 0, 60_000);
    let seg_dir = dir.join("segments");
    std::fs::create_dir_all(&seg_dir).unwrap();
    let (sd, mkv) = (CString::new(seg_dir.to_str().unwrap()).unwrap(), CString::new("mkv").unwrap());
    let mut e = 0;
    assert_eq!(unsafe { nvcam_camera_record_segments(cam, sd.as_ptr(), mkv.as_ptr(), 1000, 0, 0, &mut e) }, NVCAM_OK, "{}", last_error());
    let trigger = status(a).trigger_pts_us;
    assert!(trigger >= seen.newest_pts_us, "the trigger is the newest packet's picture, {trigger} < {}", seen.newest_pts_us);
    // Host-side instants (the newest frame taken then): every end is at or after them.
    let (mut extended_at, mut stop_c, mut release_d, mut stop_e) = (None, None, None, None);
    let mut d_status = None;
    let limit = Instant::now() + Duration::from_secs(30);
    while !(ended(a) && ended(b) && ended(c) && ended(e)) {
        assert!(Instant::now() < limit, "recordings did not end");
        seen.take(cam, &index);
        let t = seen.newest_pts_us - trigger;
        if t >= 200_000 && extended_at.is_none() {
            assert_eq!(nvcam_record_extend(b, 1000), NVCAM_OK, "{}", last_error());
            extended_at = Some(seen.newest_pts_us);
        }
        if t >= 700_000 && stop_c.is_none() {
            assert_eq!(nvcam_record_stop(c), NVCAM_OK);
            stop_c = Some(seen.newest_pts_us);
        }
        if t >= 900_000 && release_d.is_none() {
            d_status = Some(status(d));
            assert_eq!(nvcam_record_release(d), NVCAM_OK);
            release_d = Some(seen.newest_pts_us);
        }
        if t >= 1_400_000 && stop_e.is_none() {
            assert_eq!(nvcam_record_stop(e), NVCAM_OK);
            stop_e = Some(seen.newest_pts_us);
        }
    }
    // Frames the camera had decoded before the end came.
    for _ in 0..10 {
        seen.take(cam, &index);
    }
    let end_f = seen.newest_pts_us;
    let finals: Vec<nvcam_record_status> = [a, b, c, e].iter().map(|&r| status(r)).collect();
    for r in [a, b, c, e] {
        assert_eq!(nvcam_record_release(r), NVCAM_OK);
    }
    if codec == "h264" {
        close(cam, 5000).unwrap();
    } else {
        assert_eq!(nvcam_shutdown(5000), NVCAM_OK, "{}", last_error());
        init();
    }

    let pre_ok = |run: &std::ops::RangeInclusive<usize>, pre: i64, what: &str| {
        let first = seen.by_index[run.start()].1;
        assert!(first <= trigger - pre, "{what}: starts at {first}, after trigger {trigger} − {pre}");
    };
    let last_of = |run: &std::ops::RangeInclusive<usize>| seen.by_index[run.end()].1;
    for (s, file, pre, end, state) in [
        (finals[0], &fa, 1_000_000, trigger + 1_000_000, NVCAM_RECORD_DONE),
        (finals[1], &fb, 1_000_000, extended_at.unwrap() + 1_000_000, NVCAM_RECORD_DONE),
        (finals[2], &fc, 500_000, stop_c.unwrap(), NVCAM_RECORD_STOPPED),
    ] {
        let what = format!("{codec} {}", file.display());
        assert_eq!(s.state, state, "{what}");
        let run = run_in(file, &index);
        pre_ok(&run, pre, &what);
        assert!(last_of(&run) >= end, "{what}: ends at {}, before {end}", last_of(&run));
        println!("{what}: pictures {run:?} of the clip, first {} µs before the trigger − pre, last {} µs after its end", trigger - pre - seen.by_index[run.start()].1, last_of(&run) - end);
        status_is_the_file(&s, &run, &seen, &what);
    }
    let run = run_in(&fd, &index);
    pre_ok(&run, 500_000, "released");
    assert!(last_of(&run) >= release_d.unwrap(), "released: ends at {} before {release_d:?} ({run:?}, status {:?})", last_of(&run), d_status.map(|s| (s.first_pts_us, s.last_pts_us, s.trigger_pts_us)));
    assert_eq!(d_status.unwrap().first_pts_us, seen.by_index[run.start()].1);
    // Closed or shut down: no packet comes after, so the file ends at the last whole mini-GOP
    // received (B-frames 3: within 4 pictures of the newest shown), none missing before it.
    let s = if codec == "h264" { Some(status(f)) } else { None };
    let run = run_in(&ff, &index);
    println!("{codec} closed/shut down: pictures {run:?}, last {} µs before the newest the host took", end_f - last_of(&run));
    assert!(last_of(&run) >= end_f - 4 * 33_334, "{codec} closed: ends at {} (host at {end_f})", last_of(&run));
    if let Some(s) = s {
        assert_eq!(s.state, NVCAM_RECORD_STOPPED);
        status_is_the_file(&s, &run, &seen, "closed");
        assert_eq!(nvcam_record_release(f), NVCAM_OK);
    }
    // Segments: each a run, joined with none missing or repeated, the last up to the stop.
    let s = finals[3];
    let mut files: Vec<PathBuf> = std::fs::read_dir(&seg_dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "mkv")).collect();
    files.sort();
    assert!(files.len() >= 2, "{codec} segments: {files:?}");
    let mut runs: Vec<_> = files.iter().map(|p| run_in(p, &index)).collect();
    runs.sort_by_key(|r| *r.start());
    for w in runs.windows(2) {
        assert_eq!(*w[1].start(), w[0].end() + 1, "{codec} segments join with none missing or repeated: {runs:?}");
    }
    let all = *runs[0].start()..=*runs[runs.len() - 1].end();
    assert!(last_of(&all) >= stop_e.unwrap(), "{codec} segments end at {} before the stop", last_of(&all));
    assert_eq!(s.state, NVCAM_RECORD_STOPPED);
    assert_eq!(s.frames as usize, all.clone().count(), "{codec} segments: frames");
    if codec == "h264" {
        assert!(std::fs::read_dir(&dir).unwrap().all(|e| !e.unwrap().path().to_string_lossy().ends_with(".part")), "no .part left");
    }
}

#[test]
fn every_end_of_an_h264_clip_with_b_frames_is_exact() {
    every_end("h264");
}

#[test]
fn every_end_of_an_hevc_clip_with_b_frames_is_exact() {
    every_end("h265");
}

/// One recording per path: a path a running recording writes, a file already there, a folder, a
/// missing folder are refused at the call and leave nothing; a start racing the camera's close
/// leaves no `.part`; without a cache the trigger is the newest packet's picture, not the last
/// recording's.
#[test]
fn paths_are_claimed_and_the_clock_runs_without_a_cache() {
    let _g = serial();
    let dir = out_dir("paths");
    let clip = clip_for("h264");
    let fast = options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING);
    let cam = open(clip.to_str().unwrap(), &fast).unwrap();
    let mut newest = 0;
    let mut take = |n: usize| {
        for _ in 0..n {
            let f = get_frame(cam, 5000).unwrap();
            newest = info(f).unwrap().pts_us;
            release(f).unwrap();
        }
        newest
    };
    take(30);
    // Without a cache or a recording, the camera's thread takes no lock of the recorder per
    // packet (the newest timestamps go into atomics).
    #[cfg(feature = "test-hooks")]
    {
        let locks = nvcam::diag::record_hooks::packet_locks();
        take(30);
        assert_eq!(nvcam::diag::record_hooks::packet_locks(), locks, "packets took the recorder's lock while nothing records");
    }
    let path = dir.join("same.mkv");
    // No cache: from the next key frame (one a second) to the end.
    let a = start(cam, &path, 0, 1500);
    let try_start = |p: &Path| {
        let c = CString::new(p.to_str().unwrap()).unwrap();
        let mut rec = 0;
        let rc = unsafe { nvcam_camera_record_start(cam, c.as_ptr(), 0, 200, &mut rec) };
        (rc, last_error())
    };
    let (rc, msg) = try_start(&path);
    assert_eq!(rc, NVCAM_E_INVALID_ARGUMENT, "a second recording into a running one's path: {msg}");
    assert!(msg.contains("another recording"), "{msg}");
    let (rc, msg) = try_start(&dir.join(".").join("same.mkv"));
    assert_eq!(rc, NVCAM_E_INVALID_ARGUMENT, "the same path spelt otherwise: {msg}");
    while !ended(a) {
        take(1);
    }
    let s = status(a);
    assert_eq!(s.state, NVCAM_RECORD_DONE);
    let (rc, msg) = try_start(&path);
    assert_eq!(rc, NVCAM_E_INVALID_ARGUMENT, "an existing file: {msg}");
    assert!(msg.contains("exists"), "{msg}");
    assert_eq!(status(a).frames, s.frames, "the first recording's file is untouched");
    assert_eq!(try_start(&dir).0, NVCAM_E_INVALID_ARGUMENT, "a folder");
    assert_eq!(try_start(&dir.join("x.mp4/")).0, NVCAM_E_INVALID_ARGUMENT, "a name ending in a separator");
    assert_eq!(try_start(&dir.join("none/x.mp4")).0, NVCAM_E_IO, "a missing folder");
    #[cfg(unix)]
    assert_eq!(try_start(Path::new("/proc/nvcam-unwritable.mkv")).0, NVCAM_E_IO, "a folder no one can write");
    // A `.part` some other writer has (or a failed recording left) is never shared or replaced.
    std::fs::write(dir.join("stray.mkv.part"), b"another writer's").unwrap();
    let (rc, msg) = try_start(&dir.join("stray.mkv"));
    assert_eq!(rc, NVCAM_E_INVALID_ARGUMENT, "an existing .part: {msg}");
    assert_eq!(std::fs::read(dir.join("stray.mkv.part")).unwrap(), b"another writer's", "the other writer's .part was touched");
    std::fs::remove_file(dir.join("stray.mkv.part")).unwrap();
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("same.mkv")], "refused calls leave no file");
    assert_eq!(nvcam_record_release(a), NVCAM_OK);

    // No cache: 60 pictures after the first recording, the trigger is the newest picture's.
    let seen = take(60);
    let b = start(cam, &dir.join("later.mkv"), 0, 1500);
    let t = status(b).trigger_pts_us;
    assert!(t >= seen && t < seen + 1_000_000, "trigger {t} µs, newest picture taken {seen} µs: the clock stood still without a cache");
    while !ended(b) {
        take(1);
    }
    let s = status(b);
    assert_eq!(s.state, NVCAM_RECORD_DONE);
    assert!(s.last_pts_us >= t + 1_500_000, "ends at {} before trigger {t} + 1.5 s", s.last_pts_us);
    assert_eq!(nvcam_record_release(b), NVCAM_OK);

    // Stopped before its first key frame (the camera holds its packets while the host takes
    // none): no picture, so no file, and the status says so.
    let empty = dir.join("empty.mkv");
    let c = start(cam, &empty, 0, 60_000);
    assert_eq!(nvcam_record_stop(c), NVCAM_OK);
    assert!(wait_until(Duration::from_secs(5), || ended(c)), "the empty recording did not end");
    let s = status(c);
    assert_eq!((s.state, s.error, s.frames), (NVCAM_RECORD_FAILED, NVCAM_E_TIMEOUT, 0), "a recording without a picture");
    assert!(!empty.exists() && !dir.join("empty.mkv.part").exists(), "a recording without a picture left a file");
    assert_eq!(nvcam_record_release(c), NVCAM_OK);

    // Starts racing the close: whatever each call returns, no `.part` is left.
    let race = dir.join("race");
    std::fs::create_dir_all(&race).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        close(cam, 5000).unwrap();
    });
    for k in 0..200 {
        let (rc, _) = try_start(&race.join(format!("r{k}.mkv")));
        if rc == NVCAM_E_CLOSED || rc == NVCAM_E_STALE_HANDLE || rc == NVCAM_E_INVALID_HANDLE {
            break;
        }
    }
    closer.join().unwrap();
    let parts = |d: &Path| -> Vec<PathBuf> { std::fs::read_dir(d).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "part")).collect() };
    assert!(parts(&race).is_empty(), "start racing close left {:?}", parts(&race));

    // Starts racing `nvcam_shutdown`: the same.
    let race = dir.join("race-shutdown");
    std::fs::create_dir_all(&race).unwrap();
    let cam = open(clip.to_str().unwrap(), &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOOP)).unwrap();
    for _ in 0..40 {
        get_frame(cam, 5000).and_then(release).unwrap();
    }
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(5));
        nvcam_shutdown(5000)
    });
    for k in 0..200 {
        let c = CString::new(race.join(format!("s{k}.mkv")).to_str().unwrap()).unwrap();
        let mut rec = 0;
        let rc = unsafe { nvcam_camera_record_start(cam, c.as_ptr(), 0, 200, &mut rec) };
        if rc != NVCAM_OK && rc != NVCAM_E_TIMEOUT {
            break;
        }
    }
    assert_eq!(stopper.join().unwrap(), NVCAM_OK);
    assert!(wait_until(Duration::from_secs(10), || threads_named("nvcam-rec") == 0), "recording writers left after shutdown");
    init();
    assert!(parts(&race).is_empty(), "start racing shutdown left {:?}", parts(&race));
}

/// A reconnect splits a recording into parts, whose timestamps start afresh: the status says
/// what the files hold across them: the first picture of the first, the last of the last (its
/// frame number and timestamp), the frames of both, the duration the sum of each part's span.
#[test]
fn across_a_reconnect_the_status_is_the_files() {
    let _g = serial();
    let dir = out_dir("reconnect");
    let clip = clip_for("h264");
    let index = index_of(&clip);
    let srv = RtspServer::start(Stream::default().codec("h264").clip(&clip).not_shared());
    let mut o = options(NVCAM_OPEN_LOSSLESS);
    o.open_timeout_ms = 5000;
    let tcp = CString::new("rtsp_transport=tcp").unwrap();
    o.ffmpeg_options = tcp.as_ptr();
    let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("open: {e:?}; server: {}", srv.stderr_text()));
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
    // (seq, clip index, pts) of every frame taken, in order.
    let mut got: Vec<(u64, usize, i64)> = Vec::new();
    let take = |got: &mut Vec<(u64, usize, i64)>| {
        let f = get_frame(cam, 5000).expect("the camera streams");
        let i = info(f).unwrap();
        got.push((i.seq, *index.get(&fnv(&pixels(f).unwrap())).expect("a picture of the clip"), i.pts_us));
        release(f).unwrap();
    };
    // Past the session's first second: the first part starts at a key frame of the stream, not
    // at its first packets.
    while got.len() < 75 {
        take(&mut got);
    }
    let file = dir.join("split.mkv");
    let rec = start(cam, &file, 1000, 60_000);
    for _ in 0..30 {
        take(&mut got);
    }
    assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
    let limit = Instant::now() + Duration::from_secs(30);
    let split_at = got.len();
    while status(rec).parts < 2 || got.len() < split_at + 60 {
        assert!(Instant::now() < limit, "no second part after the reconnect");
        take(&mut got);
    }
    assert_eq!(nvcam_record_stop(rec), NVCAM_OK);
    while !ended(rec) {
        take(&mut got);
    }
    for _ in 0..10 {
        take(&mut got);
    }
    let s = status(rec);
    assert_eq!(nvcam_record_release(rec), NVCAM_OK);
    close(cam, 5000).unwrap();
    assert_eq!((s.state, s.parts), (NVCAM_RECORD_STOPPED, 2));
    // The new session starts the clip again: its frames are those after the index goes back.
    let b = (split_at..got.len()).find(|&k| got[k].1 < got[k - 1].1).expect("the clip starts again after the reconnect");
    let (one, two) = (&got[..b], &got[b..]);
    // Part 2 starts at the new session's first packets, which come without decode timestamps.
    let (r1, r2) = (run_in(&file, &index), run_in(&dir.join("split-part2.mkv"), &index));
    let at = |frames: &[(u64, usize, i64)], k: usize| *frames.iter().find(|f| f.1 == k).unwrap_or_else(|| panic!("clip picture {k} was not taken"));
    let (f1, l1, f2, l2) = (at(one, *r1.start()), at(one, *r1.end()), at(two, *r2.start()), at(two, *r2.end()));
    println!("reconnect: part 1 pictures {r1:?} (seq {}..{}), part 2 {r2:?} (seq {}..{}); status seq {}..{}, pts {}..{}, duration {} µs, frames {}", f1.0, l1.0, f2.0, l2.0, s.first_seq, s.last_seq, s.first_pts_us, s.last_pts_us, s.duration_us, s.frames);
    assert_eq!(s.frames as usize, r1.clone().count() + r2.clone().count(), "frames vs the pictures of both files");
    assert_eq!((s.first_seq, s.last_seq), (f1.0, l2.0), "first_seq/last_seq vs the first file's first picture and the last file's last");
    assert_eq!((s.first_pts_us, s.last_pts_us), (f1.2, l2.2), "first/last_pts_us");
    assert_eq!(s.duration_us, (l1.2 - f1.2) + (l2.2 - f2.2), "duration_us: each part's span, summed");
}

/// An HEVC stream with open GOPs: the file's first key frame is a CRA whose leading pictures
/// (RASL) reference pictures before it, which no decoder of the file can show. They are not
/// written: the file decodes to a run of the clip with none missing, and the status counts
/// exactly the pictures a decoder shows.
#[test]
fn an_open_gop_clip_holds_and_counts_only_what_decodes() {
    let _g = serial();
    let dir = out_dir("open-gop");
    let x265 = "bframes=3:keyint=30:min-keyint=30:scenecut=0:open-gop=1:log-level=error";
    let clip = clip("rec-exact-hevc-bf3-open.mp4", "320x240", 300, "libx265", &["-preset", "ultrafast", "-x265-params", x265]);
    let index = index_of(&clip);
    let cam = open(clip.to_str().unwrap(), &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING)).unwrap();
    assert_eq!(nvcam_camera_record_cache(cam, 2000, 0), NVCAM_OK);
    let mut seen = Seen::default();
    while seen.by_index.len() < 100 {
        seen.take(cam, &index);
    }
    let files = [dir.join("open.mkv"), dir.join("open.mp4")];
    let recs: Vec<u64> = files.iter().map(|f| start(cam, f, 1000, 1000)).collect();
    while !recs.iter().all(|&r| ended(r)) {
        seen.take(cam, &index);
    }
    for _ in 0..10 {
        seen.take(cam, &index);
    }
    for (rec, file) in recs.iter().zip(&files) {
        let s = status(*rec);
        assert_eq!(s.state, NVCAM_RECORD_DONE);
        let run = run_in(file, &index);
        println!("open GOP {}: pictures {run:?}, status frames {}", file.display(), s.frames);
        status_is_the_file(&s, &run, &seen, &file.display().to_string());
        assert_eq!(nvcam_record_release(*rec), NVCAM_OK);
    }
    close(cam, 5000).unwrap();
}

/// A camera on a real RTSP server (TCP), `codec` streaming `clip`.
fn rtsp_camera(srv: &RtspServer) -> u64 {
    let mut o = options(NVCAM_OPEN_LOSSLESS);
    o.open_timeout_ms = 5000;
    o.reconnect_min_ms = 100;
    o.reconnect_max_ms = 500;
    let tcp = CString::new("rtsp_transport=tcp").unwrap();
    o.ffmpeg_options = tcp.as_ptr();
    open(&srv.url(), &o).unwrap_or_else(|e| panic!("open: {e:?}; server: {}", srv.stderr_text()))
}

/// The first packets of an RTSP session come without decode times. A recording started in the
/// same call sequence as `open` (an event at start-up) took its trigger and its clock from
/// their presentation times: B-frame clips ended ~200 ms before trigger + post, or held no
/// picture. Started right after `open`, without and with a cache, each clip (H.264 and HEVC
/// with B-frames, MKV and MP4) ends at or after trigger + post, a run of the clip with none
/// missing, and its trigger is a picture of the stream.
fn started_with_the_open(codec: &'static str) {
    let _g = serial();
    let dir = out_dir(&format!("with-open-{codec}"));
    let clip = clip_for(codec);
    let index = index_of(&clip);
    let post = 1_000_000;
    for (k, (cache, mkv)) in [(false, true), (false, false), (true, true), (true, false)].into_iter().enumerate() {
        let srv = RtspServer::start(Stream::default().codec(codec).clip(&clip).not_shared());
        let file = dir.join(format!("open{k}.{}", if mkv { "mkv" } else { "mp4" }));
        let cam = rtsp_camera(&srv);
        if cache {
            assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
        }
        let rec = start(cam, &file, if cache { 1000 } else { 0 }, (post / 1000) as u32);
        let mut seen = Seen::default();
        let limit = Instant::now() + Duration::from_secs(20);
        while !ended(rec) {
            assert!(Instant::now() < limit, "{codec} {}: did not end", file.display());
            seen.take(cam, &index);
        }
        for _ in 0..10 {
            seen.take(cam, &index);
        }
        let s = status(rec);
        let what = format!("{codec} cache {cache} {}", file.display());
        assert_eq!(s.state, NVCAM_RECORD_DONE, "{what}: {}", last_error());
        let run = run_in(&file, &index);
        let first_seen = seen.by_index.values().map(|v| v.1).min().unwrap();
        let last = seen.by_index[run.end()].1;
        println!("{what}: pictures {run:?}, trigger {} (first picture {first_seen}), last {last}: {} µs after trigger + post", s.trigger_pts_us, last - s.trigger_pts_us - post);
        assert!(s.trigger_pts_us >= first_seen, "{what}: trigger {} before the stream's first picture {first_seen}", s.trigger_pts_us);
        assert!(last >= s.trigger_pts_us + post, "{what}: ends at {last}, before trigger {} + post", s.trigger_pts_us);
        status_is_the_file(&s, &run, &seen, &what);
        assert_eq!(nvcam_record_release(rec), NVCAM_OK);
        close(cam, 5000).unwrap();
    }
}

#[test]
fn an_h264_recording_started_with_the_open_ends_at_trigger_plus_post() {
    started_with_the_open("h264");
}

#[test]
fn an_hevc_recording_started_with_the_open_ends_at_trigger_plus_post() {
    started_with_the_open("h265");
}

/// A server that restarts (killed, then up again, with the same size and then another) ends
/// the camera's sessions at their stream's end. Each part dropped its session's last mini-GOP,
/// which the camera had delivered, and `first_seq..last_seq` still spanned it, so `seq −
/// first_seq` named the wrong picture in every later part. The parts (in order) hold every
/// picture the camera delivered from the first to the last, each named by `seq − first_seq`.
fn across_server_restarts(codec: &'static str, mkv: bool) {
    let _g = serial();
    let dir = out_dir(&format!("restarts-{codec}-{mkv}"));
    let first_clip = clip_for(codec);
    let other = if codec == "h264" {
        clip("rec-exact-h264-bf3-352.mp4", "352x288", 300, "libx264", &["-preset", "veryfast", "-bf", "3", "-g", "30", "-keyint_min", "30", "-sc_threshold", "0"])
    } else {
        let x265 = "bframes=3:keyint=30:min-keyint=30:scenecut=0:open-gop=0:log-level=error";
        clip("rec-exact-hevc-bf3-closed-352.mp4", "352x288", 300, "libx265", &["-preset", "ultrafast", "-x265-params", x265])
    };
    let mut srv = RtspServer::start(Stream::default().codec(codec).clip(&first_clip).not_shared());
    let cam = rtsp_camera(&srv);
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
    // Every frame the host took, by its frame number: its picture's hash and timestamp.
    let mut by_seq: HashMap<u64, (u64, i64)> = HashMap::new();
    let take = |by_seq: &mut HashMap<u64, (u64, i64)>| {
        let f = get_frame(cam, 8000).unwrap_or_else(|e| panic!("the camera streams: {e:?}"));
        let i = info(f).unwrap();
        by_seq.insert(i.seq, (fnv(&pixels(f).unwrap()), i.pts_us));
        release(f).unwrap();
    };
    for _ in 0..45 {
        take(&mut by_seq);
    }
    let file = dir.join(format!("restarts.{}", if mkv { "mkv" } else { "mp4" }));
    let rec = start(cam, &file, 1000, 60_000);
    let limit = Instant::now() + Duration::from_secs(40);
    let mut post = None;
    for (parts, next) in [(2, None), (3, Some(Stream::default().codec(codec).clip(&other).not_shared()))] {
        for _ in 0..40 {
            take(&mut by_seq);
        }
        // A clip whose post (3 s, 90 pictures) spans the restarts: before the decode-time
        // clock it ended ~200 ms short of them.
        if post.is_none() {
            post = Some(start(cam, &dir.join(format!("post.{}", if mkv { "mkv" } else { "mp4" })), 0, 3000));
        }
        srv.restart(next);
        while status(rec).parts < parts {
            assert!(Instant::now() < limit, "{codec}: no part {parts} after the server's restart");
            take(&mut by_seq);
        }
    }
    for _ in 0..40 {
        take(&mut by_seq);
    }
    let post = post.unwrap();
    while !ended(post) {
        assert!(Instant::now() < limit, "{codec}: the clip across the restarts did not end");
        take(&mut by_seq);
    }
    assert_eq!(nvcam_record_stop(rec), NVCAM_OK);
    while !ended(rec) {
        take(&mut by_seq);
    }
    for _ in 0..10 {
        take(&mut by_seq);
    }
    let (s, sp) = (status(rec), status(post));
    for r in [rec, post] {
        assert_eq!(nvcam_record_release(r), NVCAM_OK);
    }
    close(cam, 5000).unwrap();
    assert_eq!((s.state, s.parts), (NVCAM_RECORD_STOPPED, 3), "{codec}");
    // The pictures of a recording's parts, in order (part 3 is of the other size), and how
    // many there are in its first part.
    let parts_of = |file: &Path, parts: u32| -> (Vec<u64>, usize) {
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let ext = file.extension().unwrap().to_str().unwrap();
        let mut pictures: Vec<u64> = Vec::new();
        let mut first = 0;
        for k in 1..=parts {
            let f = if k == 1 { file.to_path_buf() } else { dir.join(format!("{stem}-part{k}.{ext}")) };
            let (w, h) = if k == 3 { (352, 288) } else { (320, 240) };
            let got: Vec<u64> = reference_nv12(&f, w, h).iter().map(|p| fnv(p)).collect();
            println!("{codec} {}: {} pictures", f.display(), got.len());
            assert!(!got.is_empty(), "{} decodes to nothing", f.display());
            if k == 1 {
                first = got.len();
            }
            pictures.extend(got);
        }
        (pictures, first)
    };
    // The clip across the restarts: pictures after its trigger (those of its first part shown
    // after it, and every later one) are its post's 90 or more.
    assert_eq!(sp.state, NVCAM_RECORD_DONE, "{codec}: the clip across the restarts");
    let (pp, first) = parts_of(&dir.join(format!("post.{}", if mkv { "mkv" } else { "mp4" })), sp.parts);
    assert_eq!(sp.frames as usize, pp.len(), "{codec}: the clip's frames vs its files");
    let shown_after = |j: usize| by_seq.get(&(sp.first_seq + j as u64)).map(|v| v.1).unwrap_or_else(|| panic!("frame {} not taken", sp.first_seq + j as u64));
    let after = (0..first).filter(|&j| shown_after(j) > sp.trigger_pts_us).count() + pp.len() - first;
    println!("{codec}: the clip across the restarts: {} parts, {} pictures, {after} after its trigger (post 3 s: 90)", sp.parts, pp.len());
    assert!(after >= 90, "{codec}: {after} pictures after the trigger for a post of 3 s (90)");
    let (pictures, _) = parts_of(&file, 3);
    println!("{codec}: status frames {} seq {}..{}, files {}", s.frames, s.first_seq, s.last_seq, pictures.len());
    let wrong: Vec<usize> = (0..pictures.len()).filter(|&j| by_seq.get(&(s.first_seq + j as u64)).map(|v| v.0) != Some(pictures[j])).collect();
    println!("{codec}: pictures not named by seq − first_seq: {:?}", &wrong[..wrong.len().min(20)]);
    assert_eq!(s.frames as usize, pictures.len(), "{codec}: frames vs the files' pictures");
    assert_eq!(s.last_seq - s.first_seq + 1, pictures.len() as u64, "{codec}: first_seq..last_seq spans pictures that are in no file");
    for (j, h) in pictures.iter().enumerate() {
        let seq = s.first_seq + j as u64;
        let want = by_seq.get(&seq).unwrap_or_else(|| panic!("{codec}: frame {seq} was not taken")).0;
        assert_eq!(*h, want, "{codec}: picture {j} of the parts is not frame first_seq + {j} = {seq}");
    }
}

#[test]
fn an_h264_recording_across_server_restarts_keeps_every_picture() {
    across_server_restarts("h264", true);
}

#[test]
fn an_hevc_recording_across_server_restarts_keeps_every_picture() {
    across_server_restarts("h265", false);
}

/// "A recording never replaces a file": a file already named `NAME-part2.mkv` was overwritten
/// when a reconnect split the recording, and a file another program made at `NAME` while the
/// recording ran was replaced at the final rename. Neither is touched: the recording goes on in
/// the next free part name, and a part whose name was taken stays complete under its `.part`
/// name, which the status names: the last part as its file, every earlier one in its error (only
/// the log named those, and a recording whose last part got its name ended `DONE` or `STOPPED`
/// as if every part had). A legal name of 254 bytes, once refused because its `.part` name passed
/// the filesystem's limit, records.
#[test]
fn an_existing_file_is_never_replaced() {
    let _g = serial();
    let dir = out_dir("never-replaced");
    let clip = clip_for("h264");
    let index = index_of(&clip);
    let srv = RtspServer::start(Stream::default().codec("h264").clip(&clip).not_shared());
    let cam = rtsp_camera(&srv);
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
    let mut seen = Seen::default();
    for _ in 0..45 {
        seen.take(cam, &index);
    }
    let theirs = |n: &str| (dir.join(n), format!("another program's {n}").into_bytes());
    let (part2, part2_text) = theirs("x-part2.mkv");
    std::fs::write(&part2, &part2_text).unwrap();
    let (first, first_text) = theirs("x.mkv");
    let (single, single_text) = theirs("y.mp4");
    let x = start(cam, &dir.join("x.mkv"), 1000, 60_000);
    // w: its first part's name taken, its second's free.
    let (wfirst, wfirst_text) = theirs("w.mkv");
    let w = start(cam, &wfirst, 1000, 60_000);
    let y = start(cam, &single, 1000, 500);
    // A name of 254 bytes, legal, once refused because its `.part` name was not.
    let long = dir.join(format!("{}.mkv", "z".repeat(250)));
    let z = start(cam, &long, 1000, 500);
    // Made while the recordings run, at the names they are to take.
    std::fs::write(&first, &first_text).unwrap();
    std::fs::write(&single, &single_text).unwrap();
    std::fs::write(&wfirst, &wfirst_text).unwrap();
    let limit = Instant::now() + Duration::from_secs(30);
    while !ended(y) || !ended(z) {
        assert!(Instant::now() < limit, "y or z did not end");
        seen.take(cam, &index);
    }
    for _ in 0..10 {
        seen.take(cam, &index);
    }
    // y: complete under its `.part` name, which its status names; the status is that file.
    let sy = status(y);
    let (fy, ey) = (record_file(y), rec_error_text(y));
    println!("y: {} {fy} ({ey})", sy.state);
    assert_eq!((sy.state, sy.error), (NVCAM_RECORD_FAILED, NVCAM_E_IO));
    assert_eq!(fy, dir.join("y.mp4.part").to_str().unwrap());
    assert!(ey.contains("y.mp4.part") && ey.contains("never replaces"), "{ey}");
    let runy = run_in(Path::new(&fy), &index);
    status_is_the_file(&sy, &runy, &seen, "y, its name taken");
    assert_eq!(nvcam_record_release(y), NVCAM_OK);
    let sz = status(z);
    assert_eq!(sz.state, NVCAM_RECORD_DONE, "{}", rec_error_text(z));
    assert_eq!(record_file(z), long.to_str().unwrap());
    // Decoded from a copy: the reference decode keeps its output beside the file, under a
    // longer name.
    let copy = dir.join("z-copy.mkv");
    std::fs::copy(&long, &copy).unwrap();
    status_is_the_file(&sz, &run_in(&copy, &index), &seen, "a name of 254 bytes");
    assert_eq!(nvcam_record_release(z), NVCAM_OK);
    assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK);
    while status(x).parts < 2 {
        assert!(Instant::now() < limit, "no second part after the reconnect");
        seen.take(cam, &index);
    }
    for _ in 0..30 {
        seen.take(cam, &index);
    }
    assert_eq!(nvcam_record_stop(w), NVCAM_OK);
    while !ended(w) {
        seen.take(cam, &index);
    }
    let sw = status(w);
    let (fw, ew) = (record_file(w), rec_error_text(w));
    assert_eq!(nvcam_record_release(w), NVCAM_OK);
    println!("w: {} {fw} ({ew})", sw.state);
    assert_eq!((sw.state, sw.error, sw.parts), (NVCAM_RECORD_FAILED, NVCAM_E_IO, 2), "w: a part not under its name");
    assert_eq!(fw, dir.join("w-part2.mkv").to_str().unwrap(), "w: the last part got its name");
    let w1 = dir.join("w.mkv.part");
    assert!(ew.contains(&format!("'{}'", w1.display())), "the status names the earlier part that kept its .part name: {ew}");
    let (rw1, rw2) = (run_in(&w1, &index), run_in(Path::new(&fw), &index));
    assert_eq!(sw.frames as usize, rw1.clone().count() + rw2.clone().count(), "w: frames vs its two files");
    // The last part's name, taken while it is written.
    let (last, last_text) = theirs("x-part3.mkv");
    std::fs::write(&last, &last_text).unwrap();
    assert_eq!(nvcam_record_stop(x), NVCAM_OK);
    while !ended(x) {
        seen.take(cam, &index);
    }
    let sx = status(x);
    let (fx, ex) = (record_file(x), rec_error_text(x));
    assert_eq!(nvcam_record_release(x), NVCAM_OK);
    close(cam, 5000).unwrap();
    for (f, text) in [(&part2, &part2_text), (&first, &first_text), (&single, &single_text), (&last, &last_text), (&wfirst, &wfirst_text)] {
        assert_eq!(&std::fs::read(f).unwrap(), text, "{} was replaced", f.display());
    }
    // x's files: complete, under their `.part` names where theirs was taken; the status names
    // the last.
    println!("x: {} {fx} ({ex})", sx.state);
    assert_eq!((sx.state, sx.error, sx.parts), (NVCAM_RECORD_FAILED, NVCAM_E_IO, 2));
    assert_eq!(fx, dir.join("x-part3.mkv.part").to_str().unwrap(), "the status names where the last part is");
    assert!(ex.contains("x-part3.mkv.part") && ex.contains("never replaces"), "{ex}");
    let x1 = dir.join("x.mkv.part");
    assert!(ex.contains(&format!("'{}'", x1.display())), "the status names the earlier part that kept its .part name: {ex}");
    let (r1, r3) = (run_in(&dir.join("x.mkv.part"), &index), run_in(Path::new(&fx), &index));
    assert_eq!(sx.frames as usize, r1.clone().count() + r3.clone().count(), "x: frames vs its two files");
}

fn record_file(rec: u64) -> String {
    let mut buf = vec![0u8; 4096];
    assert_eq!(unsafe { nvcam_record_file(rec, buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len() as i32) }, NVCAM_OK, "{}", last_error());
    cstr(&buf)
}

fn rec_error_text(rec: u64) -> String {
    let mut buf = vec![0u8; 4096];
    assert_eq!(unsafe { nvcam_record_error(rec, buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len() as i32) }, NVCAM_OK);
    cstr(&buf)
}

/// Run by `a_folder_made_read_only_leaves_what_the_status_says` as another user than root (whom
/// a folder's mode does not stop). Prints what the statuses and counters say.
#[cfg(unix)]
#[test]
#[ignore = "a helper: runs as a child process of a_folder_made_read_only_leaves_what_the_status_says"]
fn child_records_into_a_folder_made_read_only() {
    let Some(dir) = std::env::var_os("NVCAM_REC_RO_DIR") else { return };
    let dir = PathBuf::from(dir);
    init();
    let clip = clip_for("h264");
    let src = clip.to_str().unwrap();
    let cam = open(src, &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOOP)).unwrap();
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
    let take = |cam: u64, n: usize| {
        for _ in 0..n {
            get_frame(cam, 5000).and_then(release).expect("the camera streams");
        }
    };
    take(cam, 45);
    let a = start(cam, &dir.join("a.mkv"), 1000, 1500);
    // A second camera whose frames the host does not take: its packets wait, so no key frame
    // comes before the stop, and the recording holds no picture.
    let cam2 = open(src, &options(NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING | NVCAM_OPEN_LOOP)).unwrap();
    take(cam2, 30);
    let b = start(cam2, &dir.join("b.mp4"), 0, 60_000);
    assert_eq!(nvcam_record_stop(b), NVCAM_OK);
    // Read-only from here: b's writer finishes after its stop's grace, a's at its end.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let limit = Instant::now() + Duration::from_secs(20);
    while !ended(a) || !ended(b) {
        assert!(Instant::now() < limit, "the recordings did not end");
        take(cam, 1);
    }
    // The counters are taken in on the camera's thread as packets and pictures come: frames are
    // taken until each camera's ended recording is counted (or 10 s), not a fixed number.
    let counted = |c: u64| {
        let mut st = nvcam_record_stats { struct_size: std::mem::size_of::<nvcam_record_stats>() as u32, ..Default::default() };
        assert_eq!(unsafe { nvcam_camera_record_stats(c, &mut st) }, NVCAM_OK);
        st.failed + st.no_picture > 0
    };
    let limit = Instant::now() + Duration::from_secs(10);
    while (!counted(cam) || !counted(cam2)) && Instant::now() < limit {
        take(cam, 1);
        take(cam2, 1);
    }
    for (name, rec) in [("a", a), ("b", b)] {
        let s = status(rec);
        let mut buf = vec![0u8; 4096];
        assert_eq!(unsafe { nvcam_record_file(rec, buf.as_mut_ptr() as *mut std::ffi::c_char, buf.len() as i32) }, NVCAM_OK);
        println!("RO {name} state={} error={} frames={} first_seq={} last_seq={} file={} text={}", s.state, s.error, s.frames, s.first_seq, s.last_seq, cstr(&buf), rec_error_text(rec));
        assert_eq!(nvcam_record_release(rec), NVCAM_OK);
    }
    for (name, c) in [("cam", cam), ("cam2", cam2)] {
        let mut st = nvcam_record_stats { struct_size: std::mem::size_of::<nvcam_record_stats>() as u32, ..Default::default() };
        assert_eq!(unsafe { nvcam_camera_record_stats(c, &mut st) }, NVCAM_OK);
        println!("RO stats {name} failed={} no_picture={}", st.failed, st.no_picture);
        close(c, 5000).unwrap();
    }
}

/// A folder made read-only while recordings run: a recording that found no picture said it
/// "left no file" but left an unreadable `.part`, and one whose final rename was denied said it
/// held 0 frames (all dropped) while its `.part` was complete. The folder holds exactly what the
/// statuses say: the complete `.part` whose pictures the status counts, and the empty `.part`
/// the status names as not removable; `failed` counts the failure, not the recording without a
/// picture. Run as another user than root (root ignores the folder's mode): the test fails
/// where it cannot switch.
#[cfg(unix)]
#[test]
fn a_folder_made_read_only_leaves_what_the_status_says() {
    let _g = serial();
    let dir = out_dir("read-only");
    let clip = clip_for("h264");
    let index = index_of(&clip);
    let root = String::from_utf8(std::process::Command::new("id").arg("-u").output().unwrap().stdout).unwrap().trim() == "0";
    let mut cmd = if root {
        // The child runs this executable as uid 65534, which must be able to reach it, its
        // FFmpeg and the clip: a checkout inside a folder others cannot search (`mktemp -d`
        // makes one of mode 0700) stops it before it starts.
        use std::os::unix::fs::PermissionsExt;
        let exe = std::env::current_exe().unwrap();
        let shut = exe.ancestors().skip(1).find(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
        assert!(shut.is_none(), "uid 65534 cannot reach this test's executable: {} is not searchable by others (chmod o+x it, or check out elsewhere)", shut.unwrap().display());
        std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(std::env::current_exe().unwrap());
        c
    } else {
        std::process::Command::new(std::env::current_exe().unwrap())
    };
    let out = cmd.args(["--ignored", "--exact", "child_records_into_a_folder_made_read_only", "--nocapture"]).env("NVCAM_REC_RO_DIR", &dir).output().expect("setpriv runs the child as another user");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let line = |p: &str| text.lines().find(|l| l.starts_with(p)).unwrap_or_else(|| panic!("no '{p}' from the child: {text}")).to_string();
    let (la, lb, lc, lc2) = (line("RO a "), line("RO b "), line("RO stats cam "), line("RO stats cam2 "));
    println!("{la}\n{lb}\n{lc}\n{lc2}");
    let field = |l: &str, k: &str| -> String { l.split(' ').find_map(|w| w.strip_prefix(&format!("{k}="))).unwrap().to_string() };
    let num = |l: &str, k: &str| -> i64 { field(l, k).parse().unwrap() };
    let mut left: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, vec!["a.mkv.part".to_string(), "b.mp4.part".to_string()], "the folder holds what the statuses say");
    // a: complete, its rename denied: the status describes the `.part` that stays.
    let a_part = dir.join("a.mkv.part");
    assert_eq!((num(&la, "state") as u32, num(&la, "error") as i32), (NVCAM_RECORD_FAILED, NVCAM_E_IO), "{la}");
    assert_eq!(field(&la, "file"), a_part.to_str().unwrap(), "{la}");
    assert!(la.contains("complete in"), "{la}");
    let run = run_in(&a_part, &index);
    assert_eq!(num(&la, "frames") as usize, run.clone().count(), "a: frames vs the pictures of its .part: {la}");
    assert_eq!(num(&la, "last_seq") - num(&la, "first_seq") + 1, num(&la, "frames"), "{la}");
    // b: no picture; its empty `.part` could not go, and the status says so by name.
    assert_eq!((num(&lb, "state") as u32, num(&lb, "error") as i32, num(&lb, "frames")), (NVCAM_RECORD_FAILED, NVCAM_E_TIMEOUT, 0), "{lb}");
    assert_eq!(field(&lb, "file"), dir.join("b.mp4.part").to_str().unwrap(), "{lb}");
    assert!(lb.contains("could not be removed") && lb.contains("b.mp4.part"), "{lb}");
    assert_eq!((num(&lc, "failed"), num(&lc, "no_picture")), (1, 0), "{lc}");
    assert_eq!((num(&lc2, "failed"), num(&lc2, "no_picture")), (0, 1), "{lc2}");
}

/// How a test ends the camera's sessions.
#[derive(Clone, Copy, Debug)]
enum SessionEnds {
    /// `nvcam_camera_reconnect` (RTSP over TCP).
    Reconnect,
    /// The server hung (SIGSTOP) until the session ends on its stall (a read error), then killed
    /// with SIGKILL and started again.
    StallThenKill,
}

/// A session that ended before its stream did (a reconnect the host asked for, a read error such
/// as a stall before the server's `kill -9`) did not drain its decoder: each part ended
/// at the last whole mini-GOP among the pictures decoded, the pictures the camera had delivered
/// past it were in no file, and `seq − first_seq` named the wrong picture in every later part.
/// Three such ends (two for the kills) in one recording: the parts, in order, hold every picture
/// the camera delivered from the first to the last, each named by `seq − first_seq`, and the
/// status's numbers are the files'.
fn across_session_ends(how: SessionEnds) {
    let _g = serial();
    let dir = out_dir(&format!("session-ends-{how:?}"));
    let clip = clip_for("h264");
    let mut srv = RtspServer::start(Stream::default().codec("h264").clip(&clip).not_shared());
    let mut o = options(NVCAM_OPEN_LOSSLESS);
    o.open_timeout_ms = 5000;
    o.reconnect_min_ms = 100;
    o.reconnect_max_ms = 500;
    o.stall_timeout_ms = 1500;
    let transport = CString::new("rtsp_transport=tcp").unwrap();
    o.ffmpeg_options = transport.as_ptr();
    let cam = open(&srv.url(), &o).unwrap_or_else(|e| panic!("open: {e:?}; server: {}", srv.stderr_text()));
    assert_eq!(nvcam_camera_record_cache(cam, 1000, 0), NVCAM_OK);
    // Every frame the host took, by its frame number: its picture's hash.
    let mut by_seq: HashMap<u64, u64> = HashMap::new();
    let take = |by_seq: &mut HashMap<u64, u64>| {
        let f = get_frame(cam, 8000).unwrap_or_else(|e| panic!("{how:?}: the camera streams: {e:?}"));
        let i = info(f).unwrap();
        by_seq.insert(i.seq, fnv(&pixels(f).unwrap()));
        release(f).unwrap();
    };
    for _ in 0..45 {
        take(&mut by_seq);
    }
    let file = dir.join("ends.mkv");
    let rec = start(cam, &file, 1000, 120_000);
    let ends = match how {
        SessionEnds::Reconnect => 3,
        SessionEnds::StallThenKill => 2,
    };
    let limit = Instant::now() + Duration::from_secs(60);
    for n in 2..=ends + 1 {
        // Past a few mini-GOPs, at a picture the test does not choose.
        for _ in 0..40 + 7 * n {
            take(&mut by_seq);
        }
        match how {
            SessionEnds::Reconnect => assert_eq!(nvcam_camera_reconnect(cam), NVCAM_OK),
            SessionEnds::StallThenKill => {
                srv.pause();
                // The host goes on taking what the camera delivers (the drained pictures come
                // at the stall's end) until the session has ended.
                let until = Instant::now() + Duration::from_millis(1500 + 1500);
                while Instant::now() < until {
                    if let Ok(f) = get_frame(cam, 100) {
                        let i = info(f).unwrap();
                        by_seq.insert(i.seq, fnv(&pixels(f).unwrap()));
                        release(f).unwrap();
                    }
                }
                srv.restart(None);
            }
        }
        while status(rec).parts < n {
            assert!(Instant::now() < limit, "{how:?}: no part {n} after the session's end");
            take(&mut by_seq);
        }
    }
    for _ in 0..40 {
        take(&mut by_seq);
    }
    assert_eq!(nvcam_record_stop(rec), NVCAM_OK);
    while !ended(rec) {
        take(&mut by_seq);
    }
    for _ in 0..10 {
        take(&mut by_seq);
    }
    let s = status(rec);
    assert_eq!(nvcam_record_release(rec), NVCAM_OK);
    close(cam, 5000).unwrap();
    assert_eq!((s.state, s.parts), (NVCAM_RECORD_STOPPED, ends + 1), "{how:?}: {}", rec_error_text(rec));
    let mut pictures: Vec<u64> = Vec::new();
    for k in 1..=s.parts {
        let f = if k == 1 { file.clone() } else { dir.join(format!("ends-part{k}.mkv")) };
        let got: Vec<u64> = reference_nv12(&f, 320, 240).iter().map(|p| fnv(p)).collect();
        println!("{how:?} {}: {} pictures", f.display(), got.len());
        assert!(!got.is_empty(), "{} decodes to nothing", f.display());
        pictures.extend(got);
    }
    let wrong: Vec<usize> = (0..pictures.len()).filter(|&j| by_seq.get(&(s.first_seq + j as u64)) != Some(&pictures[j])).collect();
    println!("{how:?}: status frames {} seq {}..{}, files {}; pictures not named by seq − first_seq: {:?}", s.frames, s.first_seq, s.last_seq, pictures.len(), &wrong[..wrong.len().min(20)]);
    assert_eq!(s.frames as usize, pictures.len(), "{how:?}: frames vs the files' pictures");
    assert_eq!(s.last_seq - s.first_seq + 1, pictures.len() as u64, "{how:?}: first_seq..last_seq spans pictures that are in no file");
    for (j, h) in pictures.iter().enumerate() {
        let seq = s.first_seq + j as u64;
        let want = *by_seq.get(&seq).unwrap_or_else(|| panic!("{how:?}: frame {seq} was not taken"));
        assert_eq!(*h, want, "{how:?}: picture {j} of the parts is not frame first_seq + {j} = {seq}");
    }
}

#[test]
fn a_recording_across_host_reconnects_keeps_every_picture() {
    across_session_ends(SessionEnds::Reconnect);
}

#[test]
fn a_recording_across_stalls_and_server_kills_keeps_every_picture() {
    across_session_ends(SessionEnds::StallThenKill);
}
