//! Cancelling blocked frame waits: `nvcam_camera_cancel_wait` for any host, and LabVIEW's Call
//! Library Function Node callbacks (`nvcam_lv_reserve`/`_unreserve`/`_abort`) with
//! `nvcam_camera_get_frame_lv`. Without them an aborted LabVIEW VI leaves a thread stuck in
//! get_frame until its timeout. CPU path: a camera that never produces a frame (an RTSP URL on a
//! loopback port where nothing listens, opened asynchronously, so it keeps reconnecting) and the
//! built-in test source.

mod common;
use common::*;
use nvcam::*;
use std::ffi::c_void;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How soon a cancelled wait must return.
const PROMPT: Duration = Duration::from_millis(100);
/// Long enough that a wait still blocked after it has not returned on its own.
const SETTLE: Duration = Duration::from_millis(300);

/// A camera that never delivers: nothing listens on the discard port, so it keeps reconnecting.
fn never_producing() -> u64 {
    init();
    open("rtsp://127.0.0.1:9/never", &options(NVCAM_OPEN_ASYNC)).unwrap()
}

/// LabVIEW's pointer-sized instance slot, as a number (Send, unlike a pointer).
#[derive(Clone, Copy)]
struct Slot(usize);

impl Slot {
    fn ptr(&mut self) -> *mut *mut c_void {
        (&mut self.0 as *mut usize).cast()
    }
}

/// A thread blocked in a frame wait; reports (status, when it returned).
struct Waiter {
    rx: mpsc::Receiver<(i32, Instant)>,
}

impl Waiter {
    fn spawn(f: impl FnOnce() -> i32 + Send + 'static) -> Waiter {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let code = f();
            let _ = tx.send((code, Instant::now()));
        });
        Waiter { rx }
    }
    fn get_frame(cam: u64, timeout_ms: u32) -> Waiter {
        Waiter::spawn(move || {
            let mut f = 0u64;
            // SAFETY (test): a live local.
            unsafe { nvcam_camera_get_frame(cam, timeout_ms, &mut f) }
        })
    }
    fn get_frame_lv(cam: u64, timeout_ms: u32, mut slot: Slot) -> Waiter {
        Waiter::spawn(move || {
            let mut f = 0u64;
            // SAFETY (test): live locals (the slot is copied in: same value as the node's).
            unsafe { nvcam_camera_get_frame_lv(cam, timeout_ms, &mut f, slot.ptr()) }
        })
    }
    fn still_blocked(&self) -> bool {
        matches!(self.rx.try_recv(), Err(mpsc::TryRecvError::Empty))
    }
    /// The status, and how long after `since` it came.
    fn result(&self, since: Instant) -> (i32, Duration) {
        let (code, at) = self.rx.recv_timeout(Duration::from_secs(10)).expect("the wait did not return within 10 s");
        (code, at.saturating_duration_since(since))
    }
}

#[test]
fn cancel_wait_wakes_every_blocked_get_frame_promptly_and_later_waits_work() {
    let _s = serial();
    let cam = never_producing();
    let waiters: Vec<Waiter> = (0..3).map(|_| Waiter::get_frame(cam, 30_000)).collect();
    std::thread::sleep(SETTLE);
    assert!(waiters.iter().all(Waiter::still_blocked), "a wait on a camera with no frames returned early");
    let t0 = Instant::now();
    assert_eq!(nvcam_camera_cancel_wait(cam), NVCAM_OK, "{}", last_error());
    for w in &waiters {
        let (code, after) = w.result(t0);
        assert_eq!(code, NVCAM_E_CANCELLED);
        assert!(after < PROMPT, "cancelled wait returned {after:?} after cancel_wait");
    }
    // Only waits in progress: a wait begun afterwards runs to its own timeout.
    let t1 = Instant::now();
    assert_eq!(get_frame(cam, 200).unwrap_err().0, NVCAM_E_TIMEOUT);
    assert!(t1.elapsed() >= Duration::from_millis(190));
    // The camera is untouched.
    assert_ne!(stats(cam).state, NVCAM_STATE_CLOSED);
    close(cam, 2000).unwrap();
    // A closed camera's handle is stale.
    assert_eq!(nvcam_camera_cancel_wait(cam), NVCAM_E_STALE_HANDLE);
}

#[test]
fn cancel_wait_without_waiters_does_not_cancel_the_next_frame() {
    let _s = serial();
    let cam = open("testsrc://64x48@30", &options(0)).unwrap();
    assert_eq!(nvcam_camera_cancel_wait(cam), NVCAM_OK);
    let f = get_frame(cam, 5000).expect("a wait begun after cancel_wait is not cancelled");
    release(f).unwrap();
    for bad in [0u64, 0xdead_beef, u64::MAX, f] {
        assert_ne!(nvcam_camera_cancel_wait(bad), NVCAM_OK, "cancel_wait({bad:#x})");
    }
    assert_eq!(nvcam_camera_cancel_wait(0), NVCAM_E_NULL_HANDLE);
    assert_eq!(nvcam_camera_cancel_wait(f), NVCAM_E_WRONG_HANDLE_TYPE);
    close(cam, 2000).unwrap();
}

#[test]
fn lv_abort_wakes_only_the_waits_of_its_own_node_instance() {
    let _s = serial();
    let cam = never_producing();
    let (mut a, mut b) = (Slot(0), Slot(0));
    // SAFETY (test): live slots.
    unsafe {
        assert_eq!(nvcam_lv_reserve(a.ptr()), NVCAM_OK);
        assert_eq!(nvcam_lv_reserve(b.ptr()), NVCAM_OK);
    }
    assert!(a.0 != 0 && b.0 != 0 && a.0 != b.0);
    let wa = Waiter::get_frame_lv(cam, 30_000, a);
    let wb = Waiter::get_frame_lv(cam, 30_000, b);
    let plain = Waiter::get_frame(cam, 30_000);
    std::thread::sleep(SETTLE);
    assert!(wa.still_blocked() && wb.still_blocked() && plain.still_blocked());

    let t0 = Instant::now();
    // SAFETY (test): a live slot.
    assert_eq!(unsafe { nvcam_lv_abort(a.ptr()) }, NVCAM_OK, "{}", last_error());
    let (code, after) = wa.result(t0);
    assert_eq!(code, NVCAM_E_CANCELLED);
    assert!(after < PROMPT, "aborted wait returned {after:?} after nvcam_lv_abort");
    std::thread::sleep(SETTLE);
    assert!(wb.still_blocked(), "abort of instance A woke a wait of instance B");
    assert!(plain.still_blocked(), "abort of instance A woke a plain get_frame");

    // The same instance's next wait is not cancelled by the earlier abort.
    let t1 = Instant::now();
    let mut f = 0u64;
    // SAFETY (test): live locals.
    assert_eq!(unsafe { nvcam_camera_get_frame_lv(cam, 200, &mut f, a.ptr()) }, NVCAM_E_TIMEOUT);
    assert!(t1.elapsed() >= Duration::from_millis(190));

    let t2 = Instant::now();
    // SAFETY (test): a live slot.
    assert_eq!(unsafe { nvcam_lv_abort(b.ptr()) }, NVCAM_OK);
    let (code, after) = wb.result(t2);
    assert_eq!((code, after < PROMPT), (NVCAM_E_CANCELLED, true), "instance B's wait: {code} after {after:?}");
    // cancel_wait also reaches waits begun from a node instance, and the plain one.
    let wa2 = Waiter::get_frame_lv(cam, 30_000, a);
    std::thread::sleep(SETTLE);
    let t3 = Instant::now();
    assert_eq!(nvcam_camera_cancel_wait(cam), NVCAM_OK);
    for w in [&wa2, &plain] {
        let (code, after) = w.result(t3);
        assert_eq!((code, after < PROMPT), (NVCAM_E_CANCELLED, true), "{code} after {after:?}");
    }
    // SAFETY (test): live slots.
    unsafe {
        assert_eq!(nvcam_lv_unreserve(a.ptr()), NVCAM_OK);
        assert_eq!(nvcam_lv_unreserve(b.ptr()), NVCAM_OK);
    }
    close(cam, 2000).unwrap();
}

#[test]
fn lv_unreserve_cancels_a_wait_still_in_progress() {
    let _s = serial();
    let cam = never_producing();
    let mut a = Slot(0);
    // SAFETY (test): a live slot.
    assert_eq!(unsafe { nvcam_lv_reserve(a.ptr()) }, NVCAM_OK);
    let w = Waiter::get_frame_lv(cam, 30_000, a);
    std::thread::sleep(SETTLE);
    let t0 = Instant::now();
    // SAFETY (test): a live slot.
    assert_eq!(unsafe { nvcam_lv_unreserve(a.ptr()) }, NVCAM_OK);
    let (code, after) = w.result(t0);
    assert_eq!((code, after < PROMPT), (NVCAM_E_CANCELLED, true), "{code} after {after:?}");
    close(cam, 2000).unwrap();
}

#[test]
fn lv_callbacks_release_instances_and_reject_null_stale_and_made_up_slots() {
    let _s = serial();
    let base = nvcam::diag::lv_instances_live();
    let mut s = Slot(0);
    // SAFETY (test): every pointer is NULL or a live slot; made-up slot values are only numbers.
    unsafe {
        for f in [nvcam_lv_reserve, nvcam_lv_unreserve, nvcam_lv_abort] {
            assert_eq!(f(std::ptr::null_mut()), NVCAM_E_NULL_POINTER);
        }
        let mut fr = 0u64;
        assert_eq!(nvcam_camera_get_frame_lv(1, 0, &mut fr, std::ptr::null_mut()), NVCAM_E_NULL_POINTER);
        assert_eq!(nvcam_camera_get_frame_lv(1, 0, std::ptr::null_mut(), s.ptr()), NVCAM_E_NULL_POINTER);
        // Nothing reserved yet: unreserve and abort have nothing to do.
        assert_eq!(nvcam_lv_unreserve(s.ptr()), NVCAM_OK);
        assert_eq!(nvcam_lv_abort(s.ptr()), NVCAM_OK);
        assert_eq!(s.0, 0);

        assert_eq!(nvcam_lv_reserve(s.ptr()), NVCAM_OK);
        let h = s.0;
        assert_ne!(h, 0);
        assert_eq!(nvcam::diag::lv_instances_live(), base + 1);
        // Reserve on a live slot keeps it.
        assert_eq!(nvcam_lv_reserve(s.ptr()), NVCAM_OK);
        assert_eq!((s.0, nvcam::diag::lv_instances_live()), (h, base + 1));
        assert_eq!(nvcam_lv_abort(s.ptr()), NVCAM_OK);
        assert_eq!(nvcam_lv_unreserve(s.ptr()), NVCAM_OK);
        assert_eq!(s.0, 0, "unreserve clears the slot");
        assert_eq!(nvcam::diag::lv_instances_live(), base, "unreserve releases the instance");

        // A stale value (copied before the unreserve) is an error, never a lookup of freed state.
        let mut stale = Slot(h);
        assert_eq!(nvcam_lv_abort(stale.ptr()), NVCAM_E_STALE_HANDLE);
        assert_eq!(nvcam_lv_unreserve(stale.ptr()), NVCAM_E_STALE_HANDLE);
        assert_eq!(stale.0, h, "a failed unreserve leaves the slot as it was");
        assert_eq!(nvcam_camera_get_frame_lv(1, 0, &mut fr, stale.ptr()), NVCAM_E_STALE_HANDLE);
        // Made-up values: never dereferenced.
        for v in [1usize, 0xdead_beef, usize::MAX, 0x10, std::ptr::addr_of!(fr) as usize] {
            let mut g = Slot(v);
            assert_eq!(nvcam_lv_abort(g.ptr()), NVCAM_E_INVALID_HANDLE, "abort with slot {v:#x}");
            assert_eq!(nvcam_lv_unreserve(g.ptr()), NVCAM_E_INVALID_HANDLE, "unreserve with slot {v:#x}");
            assert_eq!(nvcam_camera_get_frame_lv(1, 0, &mut fr, g.ptr()), NVCAM_E_INVALID_HANDLE);
        }
        // A camera handle in the slot is the wrong kind of handle.
        let cam = open("testsrc://32x32@30", &options(0)).unwrap();
        let mut wrong = Slot(cam as usize);
        assert_eq!(nvcam_lv_abort(wrong.ptr()), NVCAM_E_WRONG_HANDLE_TYPE);
        // Reserve replaces anything that is not a live instance.
        assert_eq!(nvcam_lv_reserve(stale.ptr()), NVCAM_OK);
        assert!(stale.0 != 0 && stale.0 != h);
        assert_eq!(nvcam_lv_unreserve(stale.ptr()), NVCAM_OK);

        // A node without a Reserve callback: get_frame_lv creates the instance, and delivers frames.
        let mut lazy = Slot(0);
        assert_eq!(nvcam_camera_get_frame_lv(cam, 5000, &mut fr, lazy.ptr()), NVCAM_OK, "{}", last_error());
        assert_ne!(lazy.0, 0, "get_frame_lv stores the instance it created");
        assert_eq!(info(fr).unwrap().width, 32);
        release(fr).unwrap();
        assert_eq!(nvcam_camera_get_frame_lv(cam, 5000, &mut fr, lazy.ptr()), NVCAM_OK);
        release(fr).unwrap();
        assert_eq!(nvcam::diag::lv_instances_live(), base + 1);
        assert_eq!(nvcam_lv_unreserve(lazy.ptr()), NVCAM_OK);
        assert_eq!(nvcam::diag::lv_instances_live(), base);
        close(cam, 2000).unwrap();
    }
}
