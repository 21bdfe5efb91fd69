//! A hostile or broken camera cannot exhaust or end the host's cameras: a stream that claims a
//! picture over the camera's size limit gets no decoder and no pool, and fails with the reason;
//! a panic inside a camera's session (a bug a stream reached) costs that session, not the camera.
//! CPU path; each test is named for the failure it prevents. (The parsers' fuzzers are in
//! tests/fuzz_parsers.rs.)

mod common;
use common::*;
use nvcam::*;
use std::time::Duration;

/// A small clip of `w`x`h`, `frames` long (H.264 in MPEG-TS).
fn sized_clip(w: u32, h: u32, frames: u32) -> std::path::PathBuf {
    clip(&format!("hostile-{w}x{h}-{frames}.ts"), &format!("{w}x{h}"), frames, "libx264", &["-preset", "ultrafast", "-g", "3"])
}

/// A stream that claimed a huge picture made nvcam allocate whatever it claimed (a decoder's
/// buffers and a pool of them), unbounded. Past the default limit (8192 each way) the stream is
/// refused before either is made: the camera fails with the reason and counts it, and holds no
/// pool.
#[test]
fn a_stream_over_the_default_picture_limit_gets_no_decoder_and_no_pool() {
    init();
    let wide = sized_clip(8200, 16, 6);
    let o = Opts::new().with(|o| o.flags = NVCAM_OPEN_ASYNC);
    let cam = open(wide.to_str().unwrap(), &o.o).expect("an async open returns at once");
    assert!(wait_until(Duration::from_secs(20), || stats(cam).state == NVCAM_STATE_FAILED), "state {}", stats(cam).state);
    let s = stats(cam);
    assert_eq!(s.pictures_refused, 1, "counted once: the camera does not ask again");
    assert_eq!((s.pool_slots_total, s.bytes_held, s.frames_decoded), (0, 0, 0), "no pool, nothing decoded");
    assert_eq!(s.last_error_code, NVCAM_E_UNSUPPORTED);
    let why = cam_error(cam);
    assert!(why.contains("8200x16") && why.contains("8192x8192"), "the reason names both sizes: {why}");
    close(cam, 5000).unwrap();
}

/// The limit is the camera's own (`max_picture_width`/`max_picture_height`): a line that knows
/// its cameras send 96x64 sets it there, and a stream of another size is refused with the reason
/// at the synchronous open; at the stream's size it streams.
#[test]
fn a_cameras_own_picture_limit_refuses_larger_streams_and_takes_its_own_size() {
    init();
    let c = sized_clip(96, 64, 6);
    let url = c.to_str().unwrap();
    let tight = Opts::new().with(|o| (o.max_picture_width, o.max_picture_height) = (64, 64));
    let (code, why) = open(url, &tight.o).expect_err("96x64 is over 64x64");
    assert_eq!(code, NVCAM_E_UNSUPPORTED, "{why}");
    assert!(why.contains("96x64") && why.contains("64x64"), "{why}");
    let exact = Opts::new().with(|o| {
        (o.max_picture_width, o.max_picture_height) = (96, 64);
        o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
    });
    let cam = open(url, &exact.o).expect("a stream at the limit opens");
    let f = get_frame(cam, 5000).expect("and streams");
    let i = info(f).unwrap();
    assert_eq!((i.width, i.height), (96, 64));
    release(f).unwrap();
    assert_eq!(stats(cam).pictures_refused, 0);
    close(cam, 5000).unwrap();
}

/// A camera whose stream changes to a larger size inside its session (new parameter sets before
/// a key frame) got a pool of whatever size came. Over the camera's limit the new size is refused
/// before its pool: the pictures before it were delivered, the camera fails with the reason, and
/// its pool stays the old size.
#[test]
fn a_size_change_inside_a_stream_over_the_limit_gets_no_pool() {
    init();
    let both = size_change_clip();
    let o = Opts::new().ffmpeg("analyzeduration=1000000;probesize=4096").with(|o| {
        (o.max_picture_width, o.max_picture_height) = (128, 64);
        o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
    });
    let cam = open(both.to_str().unwrap(), &o.o).expect("the stream starts at 96x64");
    let (sizes, end) = sizes_until_error(cam);
    assert_eq!(end.0, NVCAM_E_FAILED, "the frames end with the camera's failure: {end:?}");
    assert_eq!(sizes, vec![(96, 64); 90], "every picture before the change, none after");
    assert!(wait_until(Duration::from_secs(5), || stats(cam).state == NVCAM_STATE_FAILED), "state {}", stats(cam).state);
    let s = stats(cam);
    assert_eq!(s.pictures_refused, 1);
    assert_eq!((s.width, s.height), (96, 64), "the pool stays the old size");
    let why = cam_error(cam);
    assert!(why.contains("160x64") && why.contains("128x64"), "{why}");
    close(cam, 5000).unwrap();
}

/// Parameter sets that claim a new size every picture made a new pool every picture (an
/// allocation of `pool_slots` pictures each, and a list of old pools that only grew). After 10
/// changes within 10 s the pictures of another size are dropped (counted) instead, and the camera
/// goes on at its current size without a reconnect.
#[test]
fn a_stream_that_changes_size_every_picture_gets_at_most_ten_new_pools() {
    init();
    let (a, b) = (sized_clip(96, 64, 1), sized_clip(112, 64, 1));
    let churn = a.with_file_name("hostile-churn-96-112-x20.ts");
    if !churn.exists() {
        let (a, b) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        let bytes: Vec<u8> = (0..20).flat_map(|i| if i % 2 == 0 { a.clone() } else { b.clone() }).collect();
        let part = churn.with_extension("part");
        std::fs::write(&part, bytes).unwrap();
        std::fs::rename(&part, &churn).unwrap();
    }
    // The joined clips' MPEG-TS continuity counters jump at every join (counted as losses):
    // every picture is delivered, marked.
    let o = Opts::new().ffmpeg("analyzeduration=100000;probesize=2048").with(|o| {
        o.flags = NVCAM_OPEN_LOSSLESS | NVCAM_OPEN_NO_PACING;
        o.integrity = NVCAM_INTEGRITY_MARK;
    });
    let cam = open(churn.to_str().unwrap(), &o.o).expect("opens");
    let mut sizes = Vec::new();
    let end = loop {
        match get_frame(cam, 3000) {
            Ok(f) => {
                sizes.push(info(f).unwrap().width);
                release(f).unwrap();
            }
            Err(e) => break e,
        }
    };
    let s = stats(cam);
    assert_eq!(end.0, NVCAM_E_IO, "the file ends: {end:?}");
    assert_eq!(s.state, NVCAM_STATE_ENDED, "no reconnect, no failure: {s:?}");
    assert_eq!(s.stream_changes, 10, "ten new pools in place of the first, no more: {s:?}");
    assert_eq!(sizes.len(), 15, "11 pictures alternating, then the 4 of the last size: {sizes:?}");
    assert!(sizes[..11].windows(2).all(|w| w[0] != w[1]) && sizes[10..].iter().all(|&w| w == sizes[10]), "{sizes:?}");
    assert_eq!(s.pictures_refused, 5, "the 5 pictures of the other size: {s:?}");
    close(cam, 5000).unwrap();
}

/// A panic inside a camera's session ended the camera as FAILED for good, so one bad message
/// from a camera needed the host to notice and reconnect it. It is now an error of that session:
/// counted, and the camera reconnects and streams again.
#[test]
fn a_panic_inside_a_session_reconnects_the_camera_instead_of_failing_it() {
    init();
    let o = Opts::new().with(|o| o.flags = NVCAM_OPEN_NO_PACING);
    let cam = open("testsrc://96x64@30", &o.o).unwrap();
    release(get_frame(cam, 5000).unwrap()).unwrap();
    nvcam::diag::panic_in_session(cam);
    assert!(wait_until(Duration::from_secs(10), || stats(cam).session_panics == 1), "the panic was not counted: {:?}", stats(cam));
    let decoded = stats(cam).frames_decoded;
    assert!(
        wait_until(Duration::from_secs(10), || { let s = stats(cam); s.state == NVCAM_STATE_STREAMING && s.frames_decoded > decoded + 5 }),
        "the camera did not stream again: {:?}, {}",
        stats(cam),
        cam_error(cam)
    );
    let s = stats(cam);
    assert!(s.reconnects >= 1, "the session's end is a reconnect: {s:?}");
    assert_eq!(s.last_error_code, NVCAM_E_PANIC);
    assert!(cam_error(cam).contains("test hook: a panic inside the camera's session"), "the error carries the panic's message: {}", cam_error(cam));
    assert_eq!(s.session_panics, 1);
    release(get_frame(cam, 5000).unwrap()).unwrap();
    close(cam, 5000).unwrap();
}
