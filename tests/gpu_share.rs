//! A GPU camera published by one process and attached by others: the attached processes' frames
//! are the publisher's device memory, mapped (exported VMM allocations), never copied or decoded
//! again, and SIGKILL on either side leaves no GPU memory behind. Needs a GPU (`REQUIRE_GPU=1` on
//! the GPU machine makes a missing one a failure); run plainly and under compute-sanitizer
//! (`--target-processes all` follows the attached processes).
#![cfg(target_os = "linux")]

mod common;

use common::*;
use nvcam::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn clip_1080p() -> std::path::PathBuf {
    clip("gpu-h264-1920x1080.mp4", "1920x1080", 48, "libx264", &[])
}

fn publish(cam: u64, name: &str) {
    let n = std::ffi::CString::new(name).unwrap();
    ok(unsafe { nvcam_camera_publish(cam, n.as_ptr(), 3, 0) }).expect("publish");
}

/// Free device memory on GPU 0, as the driver reports it.
fn vram_free() -> u64 {
    gpu_stats(0).mem_free
}

/// Frames of a published NVDEC camera reach another process in device memory, byte for byte the
/// publisher's under the same number, and that process copies no frame anywhere: its frames are
/// the publisher's slots, mapped.
#[test]
fn gpu_frames_reach_another_process_mapped_not_copied() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::new();
    let cam = open(clip_1080p().to_str().unwrap(), &gpu_options(NVCAM_OPEN_LOOP, NVCAM_DECODER_AUTO)).expect("open");
    let name = format!("gpu-{}", std::process::id());
    publish(cam, &name);
    let first = get_frame(cam, 5000).expect("a frame");
    assert_eq!(info(first).unwrap().memory, NVCAM_MEMORY_DEVICE, "the publisher decodes into device memory");
    release(first).unwrap();
    // The publisher's own host: every frame's bytes by number.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = BTreeMap::new();
            while !stop.load(Ordering::Acquire) {
                if let Ok(f) = get_frame(cam, 500) {
                    seen.insert(info(f).unwrap().seq, fnv(&pixels(f).unwrap()));
                    release(f).unwrap();
                }
            }
            seen
        })
    };
    let mut c = Peer::start(&["consume", &name, "40", "--report", "--seconds", "30"]);
    let (ok, lines) = c.finish();
    stop.store(true, Ordering::Release);
    let published = reader.join().unwrap();
    assert!(ok, "the attached process failed: {lines:?} {}", c.stderr());
    let mem: Vec<u32> = lines.iter().find_map(|l| l.strip_prefix("M ")).expect("M line").split(' ').map(|v| v.parse().unwrap()).collect();
    assert_eq!(mem[0], NVCAM_MEMORY_DEVICE, "the attached process's frames are device memory");
    let got = frames_of(&lines);
    let both: Vec<_> = got.iter().filter(|(s, _)| published.contains_key(s)).collect();
    assert!(both.len() >= 20, "{} frames read by both processes", both.len());
    for (seq, h) in both {
        assert_eq!(published[seq], *h, "frame {seq}: the attached process's bytes differ from the publisher's");
    }
    let g: Vec<u64> = lines.iter().find_map(|l| l.strip_prefix("G ")).expect("G line").split(' ').map(|v| v.parse().unwrap()).collect();
    assert_eq!(g[0], 0, "the attached process copied {} frames into pools of its own: frames must be mapped, not copied", g[0]);
    eprintln!("{} frames compared; the attached process copied no frame ({} pools mapped, {} bytes)", got.len(), g[1], g[2]);
    close(cam, 5000).unwrap();
}

/// SIGKILL on an attached process that holds frames, then on the publisher while another still
/// holds frames: the publisher keeps streaming after the first, the frames keep being readable
/// after the second (the process holding them reads them again), and once every process is gone the
/// GPU's free memory is back where it was.
#[test]
fn killing_either_side_leaves_no_gpu_memory_behind() {
    if !need_gpu!() {
        return;
    }
    let _s = Session::new();
    let before = vram_free();
    let name = format!("gpukill-{}", std::process::id());
    let clip = clip_1080p();
    let mut publisher = Peer::start(&["publish", clip.to_str().unwrap(), &name, "--loop"]);
    publisher.until("READY");
    let mut a = Peer::start(&["consume", &name, "3", "--hold", "3", "--clones", "2", "--then-hold"]);
    a.until("HOLDING");
    let mut b = Peer::start(&["consume", &name, "3", "--hold", "3", "--then-hold"]);
    b.until("HOLDING");
    a.kill9();
    // The publisher goes on: a new process attaches and reads after the kill.
    let mut c = Peer::start(&["consume", &name, "10", "--seconds", "10"]);
    let (ok, lines) = c.finish();
    assert!(ok, "a process attached after the kill: {lines:?} {}", c.stderr());
    publisher.kill9();
    // b holds its frames past its publisher's death, and reads them again: the same bytes.
    std::thread::sleep(Duration::from_millis(500));
    let held = b.until("HELD");
    assert!(held.ends_with(" same"), "frames held past the publisher's death: {held}");
    b.kill9();
    let back = wait_until(Duration::from_secs(10), || before.saturating_sub(vram_free()) <= 64 << 20);
    assert!(back, "GPU memory free: {} MiB before, {} MiB after every process was killed", before >> 20, vram_free() >> 20);
}
