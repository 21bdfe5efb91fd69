//! The frame object: clone, release, info, host copies; and the clone registry's calls.

use super::constants::*;
use super::types::*;
use super::{boundary, bytes_out, fill_versioned, marshal, out, out_opt, sized, Ctx};
use crate::convert::dispatch::Dst;
use crate::handle::{self, Kind};
use crate::registry;

/// A new handle to the same frame; the pixels stay valid (and their slot unwritten) until every
/// handle to them is released.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_PANIC
///
/// # Safety
/// `clone` is NULL or writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_clone(frame: u64, clone: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let out_clone = unsafe { out(clone, "clone") }?;
        *out_clone = registry::clone(frame)?;
        Ok(())
    })
}

/// Releases one frame handle. A second release of the same handle is `NVCAM_E_STALE_HANDLE`.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
#[no_mangle]
pub extern "C" fn nvcam_frame_release(frame: u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || registry::release(frame))
}

/// Fills `info` (set its `struct_size` first).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `info` is NULL or a writable `nvcam_frame_info_t` whose `struct_size` is set (120, the size
/// before `flags`, is accepted: those bytes are written).
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_info(frame: u64, info: *mut nvcam_frame_info) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        unsafe { fill_versioned(info, FRAME_INFO_SIZE_V1, "info", |size| Ok(marshal::frame_info(&*registry::get(frame)?, size))) }
    })
}

/// Copies the frame as NV12 into a host buffer: Y rows then UV rows, `dst_pitch` bytes apart
/// (0 = packed, `nv12_size` bytes in all). Works for host and device frames (the LabVIEW way:
/// pass an initialized U8 array as an Array Data Pointer and its size). Nothing is written unless
/// the whole image fits in `dst_size` bytes.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_UNSUPPORTED, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `dst` is NULL or writable for `dst_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_copy_nv12(frame: u64, dst: *mut u8, dst_pitch: u64, dst_size: u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let dst = unsafe { bytes_out(dst, dst_size, "dst") }?;
        let pitch = usize::try_from(dst_pitch).map_err(|_| crate::status::Error::arg(format!("dst_pitch {dst_pitch} too large")))?;
        registry::get(frame)?.copy_nv12(dst, pitch)
    })
}

/// Invalidates every frame handle that camera `cam` has outstanding (its clones included) and
/// writes how many into `*released` (may be NULL). The memory returns to the pool once no call in
/// progress still uses it. Works on a closed camera's handle value too.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_PANIC
///
/// # Safety
/// `released` is NULL or writable for a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_force_release_owner(cam: u64, released: *mut u32) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        handle::decode(cam, Kind::Camera)?;
        let n = registry::force_release_owner(cam) as u32;
        // SAFETY: forwarded from this function's contract.
        if let Some(r) = unsafe { out_opt(released) } {
            *r = n;
        }
        Ok(())
    })
}

/// Live frame handles: of camera `cam` into `*for_camera` (cam 0 = none), of all cameras into
/// `*total`. Either pointer may be NULL.
///
/// Returns: NVCAM_OK, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_PANIC
///
/// # Safety
/// `for_camera` is NULL or writable for a `uint32_t`; `total` is NULL or writable for a
/// `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_registry_stats(cam: u64, for_camera: *mut u32, total: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        if cam != 0 {
            handle::decode(cam, Kind::Camera)?;
        }
        let m = registry::per_owner();
        // SAFETY: forwarded from this function's contract (both pointers).
        let (fc, t) = unsafe { (out_opt(for_camera), out_opt(total)) };
        if let Some(p) = fc {
            *p = m.get(&cam).copied().unwrap_or(0);
        }
        if let Some(p) = t {
            *p = m.values().map(|&v| v as u64).sum();
        }
        Ok(())
    })
}

/// Reads a conversion spec (required) and the pitch.
///
/// # Safety
/// `spec` is NULL or readable for its `struct_size` bytes.
unsafe fn spec_and_pitch(spec: *const nvcam_convert, dst_pitch: u64) -> crate::status::Result<(crate::convert::Spec, marshal::DstKind, usize)> {
    use crate::status::Error;
    // SAFETY: forwarded from the caller's contract.
    let c = unsafe { sized(spec, "spec") }?.ok_or_else(|| Error::null("spec"))?;
    let (s, kind) = marshal::convert_spec(c)?;
    let pitch = usize::try_from(dst_pitch).map_err(|_| Error::arg(format!("dst_pitch {dst_pitch} too large")))?;
    Ok((s, kind, pitch))
}

/// Where a conversion writes: `dst_size` bytes at `dst`, in the memory `kind` names (device
/// memory is checked by the back end, which alone can ask the driver).
///
/// # Safety
/// For host memory, `dst` is NULL or writable for `dst_size` bytes.
unsafe fn destination<'a>(kind: marshal::DstKind, dst: *mut std::ffi::c_void, dst_size: u64) -> crate::status::Result<Dst<'a>> {
    use crate::status::Error;
    match kind {
        marshal::DstKind::Host => {
            // SAFETY: forwarded from the caller's contract (host memory of dst_size).
            let buf = unsafe { bytes_out(dst.cast::<u8>(), dst_size, "dst") }?;
            Ok(Dst::Host(buf))
        }
        marshal::DstKind::Device(device) => {
            if dst.is_null() {
                return Err(Error::null("dst"));
            }
            let len = usize::try_from(dst_size).map_err(|_| Error::arg(format!("dst_size {dst_size} too large")))?;
            Ok(Dst::Device { ptr: dst as u64, len, device })
        }
    }
}

/// Converts the frame as `spec` says (format, output size, crop, letterbox, colours, mean/std)
/// into `dst`, rows `dst_pitch` bytes apart (0 = packed; planar formats: the planes follow each
/// other, `height` rows each). Nothing is written unless the whole image fits in `dst_size` bytes
/// (`nvcam_frame_convert_size` says how many). NV12 and P016 frames (10- and 12-bit streams)
/// alike: P016 samples are read at full precision.
///
/// `spec->dst_memory` says where `dst` is:
/// - `NVCAM_MEMORY_DEVICE`: `dst` is a `CUdeviceptr` on `spec->dst_device`. The work is enqueued
///   on `cuda_stream` (a `CUstream` of that device's primary context, as PyTorch and CuPy use;
///   0 = its legacy default stream), which first waits for the frame to be ready: the call does
///   not wait on the host. The frame's slot is fenced by that work, so the handle may be released
///   at once. `dst_device` may be another GPU than the frame's: the kernel then runs on the
///   frame's GPU and `cuda_stream` copies the result over (peer access where the GPUs have it),
///   still without a host wait. Frames of CPU cameras cannot be converted into device memory.
/// - `NVCAM_MEMORY_HOST`: any host memory (a LabVIEW array); the call returns when the bytes are
///   there. GPU frames: page-locked memory (`cuMemHostAlloc`, `cuMemHostRegister`, a pinned torch
///   tensor) receives one DMA directly, the fastest way; pageable memory goes through the
///   library's pinned staging. CPU frames convert on the CPU with the same arithmetic.
///   `cuda_stream` is ignored.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_UNSUPPORTED, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `spec` is NULL or a readable `nvcam_convert_t` whose `struct_size` is set. For host memory,
/// `dst` is NULL or writable for `dst_size` bytes; for device memory, `dst` is device memory of
/// at least `dst_size` bytes (its allocation's extent is also checked) and `cuda_stream` a live
/// stream of that device's primary context, or 0.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_convert(
    frame: u64,
    spec: *const nvcam_convert,
    dst: *mut std::ffi::c_void,
    dst_pitch: u64,
    dst_size: u64,
    cuda_stream: u64,
) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let (s, kind, pitch) = unsafe { spec_and_pitch(spec, dst_pitch) }?;
        let f = registry::get(frame)?;
        // SAFETY: forwarded from this function's contract.
        let dst = unsafe { destination(kind, dst, dst_size) }?;
        crate::convert::dispatch::convert_frame(&f, &s, dst, pitch, cuda_stream)
    })
}

/// Converts `n` frames (`frames[0..n]`, repeats allowed) as `spec` says into one tensor at
/// `dst`: item `i` starts `i * dst_item_stride` bytes in (0 = packed: the size of one item, which
/// `nvcam_frame_convert_size(frames[0], spec, 0, &size)` gives); each item is laid out as
/// `nvcam_frame_convert` writes it at pitch 0, so planar float formats give an NCHW tensor
/// (`n x 3 x height x width`) and 8-bit formats NHWC (`n x height x width x channels`). Every
/// frame must convert to the same output size (set `spec->width`/`height` when the cameras'
/// sizes differ). `dst_size` must hold `dst_item_stride * (n - 1)` + one item.
///
/// Everything (handles, sizes, memory kinds) is checked before anything is written. Device
/// memory (`spec->dst_memory`): every frame must be a device frame of `spec->dst_device`; the
/// conversions are enqueued on `cuda_stream` (one kernel launch for up to 32 frames, after
/// their ready events, no host wait; larger batches take one launch per 32, and NV12 and P016
/// frames launch apart: one launch per 32 of each) and each frame's slot is fenced by that work,
/// so the handles may be released at once. Host memory: the bytes are there on return (GPU frames
/// through pinned staging, CPU frames on the CPU). A failure after the checks (a CUDA error) may
/// leave earlier items written.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_BUFFER_TOO_SMALL, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_UNSUPPORTED, NVCAM_E_CUDA, NVCAM_E_OUT_OF_MEMORY, NVCAM_E_NO_DEVICE, NVCAM_E_INTERNAL, NVCAM_E_PANIC
///
/// # Safety
/// `frames` is NULL or readable for `n` `uint64_t`s (`n` at most `NVCAM_BATCH_MAX`, no alignment
/// needed); `spec` as for `nvcam_frame_convert`; for host memory `dst` is NULL or writable for
/// `dst_size` bytes; for device memory `dst` is device memory of at least `dst_size` bytes and
/// `cuda_stream` a live stream of that device's primary context, or 0.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frames_convert_batch(
    frames: *const u64,
    n: u32,
    spec: *const nvcam_convert,
    dst: *mut std::ffi::c_void,
    dst_item_stride: u64,
    dst_size: u64,
    cuda_stream: u64,
) -> i32 {
    boundary(export_name!(), Ctx::Lib, || {
        use crate::status::Error;
        if n == 0 || n > NVCAM_BATCH_MAX {
            return Err(Error::arg(format!("n {n} (1..{NVCAM_BATCH_MAX})")));
        }
        if frames.is_null() {
            return Err(Error::null("frames"));
        }
        // SAFETY: forwarded from this function's contract.
        let (s, kind, stride) = unsafe { spec_and_pitch(spec, dst_item_stride) }?;
        let fs = (0..n as usize)
            .map(|i| {
                // SAFETY: `frames` is readable for `n` u64s (contract); unaligned reads allowed.
                let h = unsafe { frames.add(i).read_unaligned() };
                registry::get(h).map_err(|e| Error { msg: format!("frames[{i}]: {}", e.msg), ..e })
            })
            .collect::<crate::status::Result<Vec<_>>>()?;
        // SAFETY: forwarded from this function's contract.
        let dst = unsafe { destination(kind, dst, dst_size) }?;
        crate::convert::dispatch::convert_batch(&fs, &s, dst, stride, cuda_stream)?;
        Ok(())
    })
}

/// Writes into `*size` the bytes `nvcam_frame_convert` needs for this frame, `spec` and
/// `dst_pitch` (0 = packed).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_POINTER, NVCAM_E_STRUCT_SIZE, NVCAM_E_INVALID_ARGUMENT, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_PANIC
///
/// # Safety
/// `spec` is NULL or a readable `nvcam_convert_t` whose `struct_size` is set; `size` is NULL or
/// writable for a `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_convert_size(frame: u64, spec: *const nvcam_convert, dst_pitch: u64, size: *mut u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        // SAFETY: forwarded from this function's contract.
        let (s, _, pitch) = unsafe { spec_and_pitch(spec, dst_pitch) }?;
        // SAFETY: forwarded from this function's contract.
        let out_size = unsafe { out(size, "size") }?;
        let f = registry::get(frame)?;
        *out_size = crate::convert::dispatch::required_size(&f, &s, pitch)? as u64;
        Ok(())
    })
}

/// Makes `cuda_stream` (a `CUstream` of the frame's device's primary context; 0 = its legacy
/// default stream) wait until the frame's pixels are ready, without a host wait: work the caller
/// enqueues on that stream afterwards may read the planes `nvcam_frame_info` points to. Frames in
/// host memory are always ready (nothing to do).
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CUDA, NVCAM_E_PANIC
///
/// # Safety
/// `cuda_stream` is a live stream of the frame's device's primary context, or 0.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_wait_stream(frame: u64, cuda_stream: u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        let f = registry::get(frame)?;
        f.storage().wait_on_stream(f.slot(), cuda_stream)
    })
}

/// Releases the frame handle now; its slot returns to the pool only once the work enqueued on
/// `cuda_stream` so far has completed (an event recorded there), so a kernel of the caller that
/// reads the frame may still be queued or running. If the event cannot be recorded (not a stream
/// of this device's primary context), the handle is NOT released and the error returned: wait on
/// the stream, then `nvcam_frame_release`. Host frames are released at once.
///
/// Returns: NVCAM_OK, NVCAM_E_NULL_HANDLE, NVCAM_E_INVALID_HANDLE, NVCAM_E_WRONG_HANDLE_TYPE, NVCAM_E_STALE_HANDLE, NVCAM_E_CUDA, NVCAM_E_PANIC
///
/// # Safety
/// `cuda_stream` is a live stream of the frame's device's primary context, or 0.
#[no_mangle]
pub unsafe extern "C" fn nvcam_frame_release_after_stream(frame: u64, cuda_stream: u64) -> i32 {
    boundary(export_name!(), Ctx::Frame(frame), || {
        let f = registry::get(frame)?;
        f.storage().fence_after_stream(f.slot(), cuda_stream)?;
        drop(f);
        registry::release(frame)
    })
}
