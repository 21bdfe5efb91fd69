"""Frames of many cameras at once, and batched conversion."""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Sequence, Union
from ctypes import c_char, c_uint64
from ._ffi import BATCH_MAX, E_CANCELLED, E_TIMEOUT, OK
from ._lib import lib
from .errors import _error
from .convert import _device_dst
from .frame import Frame, _specs
from .camera import Camera

# The conversion calls are looked up on the package at each call (nvcam._c_frame_convert,
# nvcam._c_frames_convert_batch), so that a test or a host's tracer can wrap them in one place.
_pkg = sys.modules[__package__]


class FrameBatch(list):
    """What :func:`get_frames` returns: one :class:`Frame` or None per camera, plus ``status``
    (``OK`` when every camera has a frame, else the call's status code) and ``error`` (the
    :class:`NvcamError` of a non-OK status, or None)."""

    status = OK
    error = None

    @property
    def complete(self):
        return self.status == OK

    def release(self):
        """Releases every frame of the batch (the ones already released are skipped)."""
        for f in self:
            if f is not None and not f.released:
                f.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in self:
            if f is not None:
                f.__exit__(*exc)
        return False


def get_frames(cameras: Sequence[Union[Camera, int]], timeout_ms: int = 1000, partial: bool = True) -> FrameBatch:
    """"Latest of N" (``nvcam_cameras_get_frames``): a new frame of each camera (each at most
    once), waiting up to ``timeout_ms`` in all. Returns a :class:`FrameBatch` with None where a
    camera had none. ``partial`` False: anything short of every camera raises (the frames that
    came are released first). Bad arguments (repeated or stale cameras, more than ``BATCH_MAX``)
    always raise."""
    cams = [c.handle if isinstance(c, Camera) else int(c) for c in cameras]
    n = len(cams)
    arr_in = (c_uint64 * max(n, 1))(*cams)
    arr_out = (c_uint64 * max(n, 1))()
    code = lib.nvcam_cameras_get_frames(arr_in, n, timeout_ms, arr_out)
    err = _error(code, "nvcam_cameras_get_frames") if code != OK else None
    by_handle = {c.handle: c for c in cameras if isinstance(c, Camera)}
    batch = FrameBatch(Frame(arr_out[i], by_handle.get(cams[i])) if arr_out[i] else None for i in range(n))
    batch.status, batch.error = code, err
    if err is not None and (not partial or all(f is None for f in batch) and code not in (E_TIMEOUT, E_CANCELLED)):
        batch.release()
        raise err
    return batch


# One handle array per thread for convert_batch (filled, never reallocated): taken out of the
# thread's slot for the call, so a call that re-enters on the same thread (from a log callback)
# allocates its own instead of overwriting one the library is reading.
_batch_tls = threading.local()


def convert_batch(frames, format, out, stream=None, item_stride=0, **spec):
    """``nvcam_frames_convert_batch``: the frames into one tensor ``out`` (NCHW for the planar
    float formats, NHWC for 8-bit ones; item ``i`` at ``i * item_stride`` bytes, 0 = packed).
    ``out``: a C-contiguous CUDA tensor (torch, CuPy; written on ``stream``, default the tensor
    library's current stream, no host wait) or a writable host buffer (numpy array). Returns
    ``out``. Keyword arguments as :meth:`Frame.spec`."""
    hs = [f.handle if isinstance(f, Frame) else int(f) for f in frames]
    n = len(hs)
    spec.pop("device", None)
    dst = _device_dst(out, stream)
    if dst is not None:
        ptr, size, device, s = dst
        if device is None:
            device = 0
        ref = _specs.ref(format, device, spec)[1]
    else:
        ref = _specs.ref(format, None, spec)[1]
        mv = memoryview(out).cast("B")
        if mv.readonly:
            raise ValueError("buffer is read-only")
        ptr = ctypes.addressof((c_char * len(mv)).from_buffer(mv)) if len(mv) else None
        size, s = len(mv), 0
    arr = None
    if n <= BATCH_MAX:
        arr = getattr(_batch_tls, "handles", None)
        _batch_tls.handles = None
    if arr is None:
        arr = (c_uint64 * max(n, BATCH_MAX))()
    arr[:n] = hs
    try:
        rc = _pkg._c_frames_convert_batch(arr, n, ref, ptr, item_stride, size, s)
    finally:
        if n <= BATCH_MAX:
            _batch_tls.handles = arr
    if rc:
        raise _error(rc, "nvcam_frames_convert_batch")
    return out
