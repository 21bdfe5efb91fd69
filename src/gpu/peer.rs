//! Device frame on GPU A → device memory on GPU B, with no host wait: the kernel runs on A into
//! the scratch of one of A's staging areas (on the staging area's stream, after the frame's ready
//! event), then the caller's stream (of B's primary context) waits for that kernel
//! (cuStreamWaitEvent across contexts) and copies the scratch into the destination
//! (cuMemcpy3DPeerAsync: over NVLink/PCIe peer access where the GPUs have it, staged by the
//! driver otherwise). An event of B recorded after the copy guards the scratch: the staging
//! area's stream waits for it before the scratch is written again, and a retired scratch is
//! freed only after it.

use super::context::Device;
use super::kernels::kernels;
use super::staging;
use super::params::KernelParams;
use crate::convert::{Layout, Plan};
use crate::frame::Frame;
use crate::status::*;
use super::driver::{self, sys};
use std::sync::Arc;

/// Converts `f` (a device frame of another GPU than `to`) into `dst`, device memory of `to`
/// laid out as `l` (checked by the caller), through a scratch of `f`'s GPU laid out as `packed`
/// (the same image packed), enqueued on `stream` (a stream of `to`'s primary context, 0 = its
/// legacy default stream). The frame's slot is fenced by the kernel.
pub(crate) fn to_device(f: &Frame, plan: &Plan, dst: u64, l: &Layout, packed: &Layout, to: &Arc<Device>, stream: u64) -> Result<()> {
    let from = super::device(f.device())?;
    let k = kernels(&from)?;
    let mut st = staging::take(&from, packed.total, 0)?;
    let scratch = st.scratch(packed.total)?;
    let s = st.stream.raw();
    f.storage().wait_on_stream(f.slot(), s as u64)?;
    // SAFETY: the scratch holds `packed.total` bytes of GPU A and is ours (the lease; its
    // earlier readers ordered before by `scratch`); the slot is held by `f` and fenced below.
    unsafe { k.launch(&KernelParams::for_frame(f, plan, scratch, packed), s) }?;
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
