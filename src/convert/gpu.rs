//! Device conversions into device memory: a device frame converted by the embedded kernels
//! ([`crate::gpu::kernels`]) into device memory of its own GPU, enqueued on the caller's stream after a
//! cuStreamWaitEvent on the frame's ready event (no host wait); into device memory of another GPU
//! through a staging area's scratch and a peer copy (still no host wait); and a batch of device
//! frames in one launch per 32. Which frames come here, and whether the destination is large
//! enough, is decided above, in `super::dispatch`: this module is only the device's side
//! of it, plus the one check that needs the driver, that a caller's device pointer really is
//! device memory of that GPU holding that many bytes. (Device frames into host memory:
//! [`super::staging`].)

use crate::gpu::context::Device;
use crate::gpu::kernels::kernels;
use super::launch;
use crate::gpu::params::{BatchParams, BATCH_PER_LAUNCH};
use crate::convert::{Layout, Plan};
use crate::frame::Frame;
use crate::pool::Depth;
use crate::status::*;
use crate::gpu::driver::{self, sys};
use std::ffi::c_void;
use std::sync::Arc;

/// Library shutdown: staging areas, then modules, before the contexts are released.
pub(crate) fn shutdown() {
    super::staging::shutdown();
    crate::gpu::kernels::shutdown();
}

/// Converts `f` (a device frame) as `plan` says into `ptr`, device memory of GPU `device` laid
/// out as `l` (its length checked by the caller; `packed` is the same image packed, the layout
/// of the scratch a copy to another GPU goes through), enqueued on `stream` (a stream of that
/// device's primary context; 0 = its legacy default stream), which first waits for the frame
/// (for another GPU: for the kernel on the frame's GPU). The frame's slot is then fenced by that
/// work, so releasing the handle at once is safe. Refuses a destination the kernel could not
/// write safely: misaligned for the format, not device memory of `device`, or an allocation that
/// ends before `l.total` bytes.
pub(crate) fn to_device(f: &Frame, plan: &Plan, l: &Layout, packed: &Layout, ptr: u64, device: i32, stream: u64) -> Result<()> {
    let a = plan.format.align();
    if !ptr.is_multiple_of(a as u64) || !l.pitch.is_multiple_of(a) {
        return Err(Error::arg(format!("{:?} needs dst and dst_pitch aligned to {a} bytes", plan.format)));
    }
    let dev = crate::gpu::device(device)?;
    // One context push for the whole call: the helpers' own guards find it current.
    let _g = dev.push()?;
    check_device_range(&dev, ptr, l.total)?;
    if device != f.device() {
        // Another GPU: kernel on the frame's GPU, then a copy on the caller's stream.
        return to_other_gpu(f, plan, ptr, l, packed, &dev, stream);
    }
    let k = kernels(&dev)?;
    f.storage().wait_on_stream(f.slot(), stream)?;
    // SAFETY: the frame's slot stays valid (we hold the frame, and fence it below before
    // any release); dst was checked to be device memory of this device holding
    // `l.total` bytes; the stream is the caller's of this context (the export's contract).
    unsafe { launch::frame(&k, f, plan, ptr, l, stream as sys::CUstream) }?;
    f.storage().fence_after_stream(f.slot(), stream)
}

/// Converts `f` (a device frame of another GPU than `to`) into `dst`, device memory of `to`
/// laid out as `l` (checked by the caller), through a scratch of `f`'s GPU laid out as `packed`
/// (the same image packed), enqueued on `stream` (a stream of `to`'s primary context, 0 = its
/// legacy default stream). The frame's slot is fenced by the kernel.
///
/// Device frame on GPU A → device memory on GPU B: the kernel runs on A into the scratch of one
/// of A's staging areas (on the staging area's stream, after the frame's ready event), then the
/// caller's stream (of B's primary context) waits for that kernel (cuStreamWaitEvent across
/// contexts) and copies the scratch into the destination (cuMemcpy3DPeerAsync: over NVLink/PCIe
/// peer access where the GPUs have it, staged by the driver otherwise). An event of B recorded
/// after the copy guards the scratch: the staging area's stream waits for it before the scratch
/// is written again, and a retired scratch is freed only after it.
fn to_other_gpu(f: &Frame, plan: &Plan, dst: u64, l: &Layout, packed: &Layout, to: &Arc<Device>, stream: u64) -> Result<()> {
    let from = crate::gpu::device(f.device())?;
    let k = kernels(&from)?;
    let mut st = super::staging::take(&from, packed.total, 0)?;
    let scratch = st.scratch(packed.total)?;
    let s = st.stream.raw();
    f.storage().wait_on_stream(f.slot(), s as u64)?;
    // SAFETY: the scratch holds `packed.total` bytes of GPU A and is ours (the lease; its
    // earlier readers ordered before by `scratch`); the slot is held by `f` and fenced below.
    unsafe { launch::frame(&k, f, plan, scratch, packed, s) }?;
    f.storage().fence_after_stream(f.slot(), s as u64)?;
    st.done.record(&st.stream)?;
    let kernel_done = st.done.raw();
    let copied = st.peer_event(to)?.raw();
    let row = plan.row_bytes();
    let rows = plan.out_h as usize * plan.format.planes();
    let c = sys::CUDA_MEMCPY3D_PEER {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: scratch,
        srcArray: std::ptr::null_mut(),
        srcContext: from.cu_ctx(),
        srcPitch: row,
        srcHeight: rows,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstContext: to.cu_ctx(),
        dstPitch: l.pitch,
        dstHeight: rows,
        WidthInBytes: row,
        Height: rows,
        Depth: 1,
    };
    let _g = to.push()?;
    let cs = stream as sys::CUstream;
    // SAFETY: an event of ours (GPU A) and the caller's stream of B's primary context, current
    // (guard): a stream may wait on another context's event.
    unsafe { driver::stream::wait_event(cs, kernel_done) }.map_err(|e| e.during("peer kernel"))?;
    // SAFETY: every field written; the scratch holds `rows` packed rows (A's context), `dst`
    // was checked to be device memory of B holding `l.total` bytes, which `rows` rows of `row`
    // bytes at `l.pitch` end at; ordered after the kernel (the wait above); the scratch stays
    // unwritten until `copied` completes (recorded next, waited for by `scratch`).
    unsafe { driver::memory::copy_3d_peer_async(&c, cs) }.map_err(|e| e.during("conversion to another GPU"))?;
    // SAFETY: our event of B's context and the caller's stream of that context, current.
    Ok(unsafe { driver::stream::event_record(copied, cs) }.map_err(|e| e.during("peer copy"))?)
}

/// Refuses a device destination that is not device memory of `dev`, or whose allocation ends
/// before `need` bytes from `ptr` (the driver knows each allocation's range). One driver call.
fn check_device_range(dev: &Arc<Device>, ptr: u64, need: usize) -> Result<()> {
    use sys::CUpointer_attribute as A;
    let _g = dev.push()?;
    let mut mem_type: u32 = 0;
    let mut ordinal: i32 = -1;
    let mut start: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    let mut attrs = [A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, A::CU_POINTER_ATTRIBUTE_RANGE_SIZE];
    let mut data = [
        &mut mem_type as *mut u32 as *mut c_void,
        &mut ordinal as *mut i32 as *mut c_void,
        &mut start as *mut sys::CUdeviceptr as *mut c_void,
        &mut size as *mut usize as *mut c_void,
    ];
    // SAFETY: four attributes, each with a pointer to a value of the size it writes (a u32, an
    // int, a CUdeviceptr, a size_t). Memory the driver does not know leaves the defaults (type 0).
    let r = unsafe { driver::memory::pointer_attributes(&mut attrs, &mut data, ptr) };
    // The driver's failure is logged (by its conversion); the caller hears what it means here.
    r.map_err(Error::from).map_err(|_| Error::arg(format!("dst 0x{ptr:x} is not CUDA device memory")))?;
    if mem_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        return Err(Error::arg(format!("dst 0x{ptr:x} is not device memory (memory type {mem_type})")));
    }
    if ordinal != dev.ordinal {
        return Err(Error::arg(format!("dst 0x{ptr:x} is on GPU {ordinal}, not GPU {}", dev.ordinal)));
    }
    let end = start.checked_add(size as u64);
    let want = ptr.checked_add(need as u64);
    if !matches!((end, want), (Some(e), Some(w)) if w <= e) {
        return Err(Error::new(ErrorKind::BufferTooSmall, format!("dst's allocation ends {} bytes after dst; the conversion writes {need}", (start + size as u64).saturating_sub(ptr))));
    }
    Ok(())
}

/// `frames` (device frames of GPU `device`, checked by the caller), each converted as its
/// `plans[i]` says (one output size, packed), into the tensor at `ptr`: item `i` at
/// `ptr + i * stride`, `need` bytes in all (checked by the caller against the destination's
/// length). One kernel launch per [`BATCH_PER_LAUNCH`] frames of one sample width on `stream`
/// (NV12 and P016 frames have kernels of their own, so a batch mixing them launches each width's
/// frames apart), after every frame's ready event (the parameters go by value, so nothing is
/// allocated or copied first), no host wait; each frame's slot is fenced by its launch.
pub(crate) fn batch_to_device(frames: &[Arc<Frame>], plans: &[Plan], ptr: u64, stride: usize, need: usize, device: i32, stream: u64) -> Result<()> {
    let first = plans.first().ok_or_else(|| Error::internal("a device batch without plans"))?;
    let a = first.format.align();
    if !ptr.is_multiple_of(a as u64) || !stride.is_multiple_of(a) {
        return Err(Error::arg(format!("{:?} needs dst and dst_item_stride aligned to {a} bytes", first.format)));
    }
    let dev = crate::gpu::device(device)?;
    // One context push for the whole call (the helpers' guards find it current).
    let _g = dev.push()?;
    check_device_range(&dev, ptr, need)?;
    let k = kernels(&dev)?;
    let l = first.layout(0)?;
    let mut b = BatchParams::new(launch::common(first, l.pitch, l.plane));
    // Frames of one sample width fill a launch, up to BATCH_PER_LAUNCH, each at its own
    // place in dst; nothing is allocated (`held` is the launch's frame indices).
    let mut held = [0usize; BATCH_PER_LAUNCH];
    let enqueue = |b: &BatchParams, held: &[usize]| -> Result<()> {
        // SAFETY: every frame's slot stays valid (we hold the frames, and fence them below
        // before any release); each item's dst lies inside [ptr, ptr + need), checked to
        // be device memory of this device; the stream is the caller's of this context.
        unsafe { launch::batch(&k, b, held.len(), stream as sys::CUstream) }?;
        held.iter().try_for_each(|&i| frames[i].storage().fence_after_stream(frames[i].slot(), stream))
    };
    for depth in [Depth::Eight, Depth::Sixteen] {
        let mut n = 0;
        for (i, f) in frames.iter().enumerate().filter(|(_, f)| f.geom().depth == depth) {
            let g = f.geom();
            b.items[n] = launch::item(&plans[i], g.depth, f.y_addr(), f.uv_addr(), g.pitch, ptr + (i * stride) as u64);
            f.storage().wait_on_stream(f.slot(), stream)?;
            held[n] = i;
            n += 1;
            if n == BATCH_PER_LAUNCH {
                enqueue(&b, &held[..n])?;
                n = 0;
            }
        }
        if n > 0 {
            enqueue(&b, &held[..n])?;
        }
    }
    Ok(())
}
