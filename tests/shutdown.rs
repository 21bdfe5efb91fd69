//! Shutdown with a host that leaked everything, then re-init. One test in its own binary, because
//! shutdown ends every camera in the process.

mod common;
use common::*;
use nvcam::*;
use std::time::{Duration, Instant};

#[test]
fn shutdown_with_leaked_clones_frees_all_and_old_handles_stay_stale() {
    assert_eq!(nvcam_shutdown(100), NVCAM_E_NOT_INITIALIZED, "shutdown before init is an error, not a crash");
    assert_eq!(open("testsrc://64x48@30", &options(0)).unwrap_err().0, NVCAM_E_NOT_INITIALIZED);
    init();
    let (pools_before, _) = nvcam::diag::live_pools();

    let cams: Vec<u64> = (0..3).map(|_| open("testsrc://320x240@30", &options(0)).unwrap()).collect();
    // 3 frames per camera (pools have 4 slots), 8 handles each: 72 leaked handles.
    let mut leaked = Vec::new();
    for _ in 0..3 {
        for &c in &cams {
            let f = get_frame(c, 5000).unwrap();
            for _ in 0..7 {
                leaked.push(clone(f).unwrap());
            }
            leaked.push(f);
        }
    }
    assert_eq!(leaked.len(), 72);
    assert!(threads_named("nvcam-cam") >= 3);
    // A conversion big enough to be split over the worker pool (640x480 out of 320x240).
    let spec = nvcam_convert { struct_size: std::mem::size_of::<nvcam_convert>() as u32, format: NVCAM_FORMAT_BGRA8, width: 640, height: 480, ..Default::default() };
    let mut out = vec![0u8; 640 * 480 * 4];
    // SAFETY (test): `out` is writable for its length.
    ok(unsafe { nvcam_frame_convert(leaked[7], &spec, out.as_mut_ptr().cast(), 0, out.len() as u64, 0) }).unwrap();
    if std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) > 1 {
        assert!(threads_named("nvcam-work") > 0, "a large conversion started no worker thread: the check below proves nothing");
    }
    assert!(nvcam::diag::live_pools().0 >= pools_before + 3);

    let t0 = Instant::now();
    assert_eq!(nvcam_shutdown(5000), NVCAM_OK, "{}", last_error());
    assert!(t0.elapsed() < Duration::from_secs(5));

    // Every byte is back: no pool survives its leaked clones past shutdown, no thread is left.
    assert_eq!(nvcam::diag::live_pools(), (pools_before, 0));
    assert_eq!(threads_named("nvcam-cam"), 0);
    assert_eq!(threads_named("nvcam-work"), 0, "worker threads outlived shutdown");
    for &h in &leaked {
        assert_eq!(info(h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(release(h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(clone(h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    }
    for &c in &cams {
        assert_eq!(close(c, 10).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(get_frame(c, 10).unwrap_err().0, NVCAM_E_STALE_HANDLE);
        assert_eq!(nvcam_camera_reconnect(c), NVCAM_E_STALE_HANDLE);
    }
    assert_eq!(nvcam_shutdown(100), NVCAM_E_NOT_INITIALIZED, "double shutdown is an error, not a crash");

    // Re-init after shutdown works, and the old handles do not come back to life.
    init();
    let cam = open("testsrc://64x48@30", &options(0)).unwrap();
    assert!(!cams.contains(&cam));
    let f = get_frame(cam, 5000).unwrap();
    assert!(!leaked.contains(&f));
    for &h in &leaked {
        assert_eq!(info(h).unwrap_err().0, NVCAM_E_STALE_HANDLE);
    }
    release(f).unwrap();
    assert_eq!(nvcam_shutdown(5000), NVCAM_OK);
    assert_eq!(close(cam, 10).unwrap_err().0, NVCAM_E_STALE_HANDLE);
}
