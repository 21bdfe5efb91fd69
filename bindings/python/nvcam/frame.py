"""Frame: one decoded picture held by a handle."""

from __future__ import annotations

import ctypes
import sys
from typing import Any
from ctypes import byref, c_char, c_uint64, c_uint8
from ._numpy import _np
from ._ffi import CONVERT_LETTERBOX, E_STALE_HANDLE, FORMAT_BGR8, FORMAT_BGRA8, FORMAT_GRAY8, FORMAT_P016, FORMAT_RGB8, FORMAT_RGB_F16_PLANAR, FORMAT_RGB_F32_PLANAR, MEMORY_DEVICE, MEMORY_HOST, OK
from .structs import Convert, FrameInfo
from ._lib import lib
from .errors import _check, _error
from .dlpack import Plane, _Hold, _KDL_CPU, _KDL_CUDA, _dl_capsule, _dl_stream_wait
from .convert import SpecCache, _device_dst

# The conversion calls are looked up on the package at each call (nvcam._c_frame_convert,
# nvcam._c_frames_convert_batch), so that a test or a host's tracer can wrap them in one place.
_pkg = sys.modules[__package__]


class Frame:
    """One frame handle. Release it (or leave its ``with`` block) as soon as you are done: while
    held, its pool slot cannot be reused. :meth:`release` always calls the library, so a second
    release raises ``NVCAM_E_STALE_HANDLE`` (-8013); garbage collection releases a frame nobody
    released, quietly."""

    __slots__ = ("handle", "_released", "_info", "_camera")

    def __init__(self, handle, camera=None):
        self.handle = int(handle)
        self._released = False
        self._info = None
        # Keeps the Camera object (whose garbage collection closes it) alive while its frames are.
        self._camera = camera

    @property
    def info(self) -> FrameInfo:
        """The frame's :class:`FrameInfo` (read once, then cached: it never changes)."""
        if self._info is None:
            i = FrameInfo()
            _check(lib.nvcam_frame_info(self.handle, byref(i)), "nvcam_frame_info")
            self._info = i
        return self._info

    def copy_nv12(self, dst_pitch: int = 0) -> bytes:
        """The pixels as packed NV12 ``bytes`` (``dst_pitch`` 0: rows of ``info.row_bytes``)."""
        info = self.info
        pitch = dst_pitch or info.row_bytes
        size = pitch * info.rows
        buf = (c_uint8 * size)()
        _check(lib.nvcam_frame_copy_nv12(self.handle, buf, dst_pitch, size), "nvcam_frame_copy_nv12")
        return bytes(buf)

    def copy_nv12_into(self, buffer: Any, dst_pitch: int = 0) -> None:
        """Copies into a writable buffer (bytearray, numpy array, memoryview) of at least
        ``pitch * info.rows`` bytes; no allocation per frame."""
        mv = memoryview(buffer).cast("B")
        if mv.readonly:
            raise ValueError("buffer is read-only")
        addr = ctypes.addressof((c_char * len(mv)).from_buffer(mv)) if len(mv) else None
        _check(lib.nvcam_frame_copy_nv12(self.handle, addr, dst_pitch, len(mv)), "nvcam_frame_copy_nv12")

    def to_numpy_nv12(self) -> Any:
        """A copy of the pixels: with numpy a ``uint8`` array of shape ``(rows, row_bytes)`` (luma
        rows ``[:height, :width]``, interleaved UV rows ``[height:]``), for P016 frames a ``uint16``
        one of shape ``(rows, row_bytes // 2)``; without numpy, ``bytes``."""
        if _np is None:
            return self.copy_nv12()
        info = self.info
        a = _np.empty((info.rows, info.row_bytes), dtype=_np.uint8)
        self.copy_nv12_into(a)
        return a.view("<u2") if info.format == FORMAT_P016 else a

    def to_numpy_y(self) -> Any:
        """The luma plane as a ``(height, width)`` uint8 array (numpy required)."""
        if _np is None:
            raise RuntimeError("numpy is not installed")
        info = self.info
        return self.to_numpy_nv12()[: info.height, : info.width]

    @staticmethod
    def spec(format, width=0, height=0, roi=None, letterbox=False, pad=(0, 0, 0), matrix=0, range=0,
             mean=(0, 0, 0), std=(1, 1, 1), device=None, siting=0):
        """A :class:`Convert` spec. ``roi`` is ``(x, y, w, h)``; ``device`` a GPU ordinal for a
        device destination (``None``: host memory); ``siting`` a ``SITING_*`` override of the
        stream's chroma siting (0: the stream's)."""
        c = Convert()
        c.format = format
        c.width, c.height = width, height
        if roi is not None:
            c.roi_x, c.roi_y, c.roi_width, c.roi_height = roi
        c.flags = CONVERT_LETTERBOX if letterbox else 0
        c.matrix, c.range = matrix, range
        c.chroma_siting = siting
        c.dst_memory = MEMORY_HOST if device is None else MEMORY_DEVICE
        c.dst_device = 0 if device is None else device
        c.pad[:] = list(pad)
        c.mean[:] = list(mean)
        c.std[:] = list(std)
        return c

    def convert_size(self, spec, dst_pitch=0):
        """Bytes :meth:`convert_into` needs for ``spec``."""
        n = c_uint64(0)
        _check(lib.nvcam_frame_convert_size(self.handle, byref(spec), dst_pitch, byref(n)), "nvcam_frame_convert_size")
        return n.value

    def convert_into(self, spec, dst, dst_size, dst_pitch=0, stream=0):
        """Converts into ``dst``: a writable host buffer (``dst_size`` ignored, its length used)
        for a host spec, or a device address (int) of ``dst_size`` bytes for a device spec, the
        work enqueued on ``stream`` (a CUstream handle as int, e.g. ``torch.cuda.current_stream().cuda_stream``)."""
        if spec.dst_memory == MEMORY_HOST:
            mv = memoryview(dst).cast("B")
            if mv.readonly:
                raise ValueError("buffer is read-only")
            addr = ctypes.addressof((c_char * len(mv)).from_buffer(mv)) if len(mv) else None
            dst_size = len(mv)
        else:
            addr = int(dst)
        _check(lib.nvcam_frame_convert(self.handle, byref(spec), addr, dst_pitch, dst_size, stream), "nvcam_frame_convert")

    def to_numpy(self, format=FORMAT_BGRA8, **spec):
        """A host copy converted to ``format`` (numpy required): ``(h, w, 4|3)`` or ``(h, w)``
        uint8, or ``(3, h, w)`` float32/float16 for the planar formats. Keyword arguments as
        :meth:`spec`."""
        if _np is None:
            raise RuntimeError("numpy is not installed")
        c = Frame.spec(format, **spec)
        n = self.convert_size(c)
        planar = format in (FORMAT_RGB_F32_PLANAR, FORMAT_RGB_F16_PLANAR)
        dtype = {FORMAT_RGB_F32_PLANAR: _np.float32, FORMAT_RGB_F16_PLANAR: _np.float16}.get(format, _np.uint8)
        a = _np.empty(n // _np.dtype(dtype).itemsize, dtype=dtype)
        self.convert_into(c, a, n)
        w = self._out_w(c)
        if planar:
            return a.reshape(3, -1, w)
        ch = {FORMAT_BGRA8: 4, FORMAT_BGR8: 3, FORMAT_RGB8: 3, FORMAT_GRAY8: 1}[format]
        return a.reshape(-1, w, ch) if ch > 1 else a.reshape(-1, w)

    def _out_w(self, c):
        if c.width:
            return c.width
        return c.roi_width if c.roi_width and c.roi_height else self.info.width

    def wait_stream(self, stream):
        """Makes ``stream`` (a CUstream handle as int) wait until the frame is ready (no host wait)."""
        _check(lib.nvcam_frame_wait_stream(self.handle, stream), "nvcam_frame_wait_stream")

    def release_after_stream(self, stream):
        """Releases now; the slot is reused only after the work queued on ``stream`` so far."""
        _check(lib.nvcam_frame_release_after_stream(self.handle, stream), "nvcam_frame_release_after_stream")
        self._released = True

    def planes(self):
        """``(Y, UV)``: zero-copy :class:`Plane` views of the pixels (device or host memory), which
        hold a clone of this handle: they stay valid after this frame is released."""
        hold = self._hold_clone()
        return Plane(hold, self.info, "y"), Plane(hold, self.info, "uv")

    def nv12_plane(self):
        """The whole NV12 image as one zero-copy :class:`Plane` (holding a clone of this handle)."""
        return Plane(self._hold_clone(), self.info, "nv12")

    def _hold_clone(self):
        out = c_uint64(0)
        _check(lib.nvcam_frame_clone(self.handle, byref(out)), "nvcam_frame_clone")
        return _Hold(out.value)

    @property
    def __cuda_array_interface__(self):
        """Device frames: the NV12 image as one ``(height + ceil(h/2), row_bytes)`` uint8 array
        (version 3, ``stream`` 1: the legacy default stream, made to wait for the frame). The
        address is valid only while this frame is unreleased: the consumer keeps this object, not
        the handle. :meth:`planes` and ``__dlpack__`` hold a handle of their own."""
        info = self.info
        if info.memory != MEMORY_DEVICE:
            raise AttributeError("a host frame has no __cuda_array_interface__")
        p = Plane(None, info, "nv12")
        _check(lib.nvcam_frame_wait_stream(self.handle, 0), "nvcam_frame_wait_stream")
        return {"shape": p.shape, "typestr": "|u1", "data": (p.ptr, False), "strides": p.strides, "version": 3, "stream": 1}

    def __dlpack_device__(self):
        info = self.info
        return (_KDL_CUDA, info.device) if info.memory == MEMORY_DEVICE else (_KDL_CPU, 0)

    def __dlpack__(self, stream=None, **kw):
        """The NV12 image as a DLPack tensor (uint8, ``(height + ceil(h/2), row_bytes)``, rows
        ``pitch`` apart): ``torch.from_dlpack(frame)`` for device frames, ``numpy.from_dlpack(frame)``
        for host frames. The tensor holds a clone of this handle, released by its deleter: it
        keeps its pixels after this frame is released, and across reconnects. ``stream`` (DLPack's
        meaning: None/1 legacy default, 2 per-thread default, -1 none, else a CUstream) waits for
        the frame on the device."""
        info = self.info
        p = Plane(None, info, "nv12")
        if info.memory == MEMORY_DEVICE:
            _dl_stream_wait(self.handle, stream)
        out = c_uint64(0)
        _check(lib.nvcam_frame_clone(self.handle, byref(out)), "nvcam_frame_clone")
        dev_type, dev_id = self.__dlpack_device__()
        return _dl_capsule(out.value, p.ptr, p.shape, p.strides, dev_type, dev_id, p.itemsize)

    def convert(self, format=FORMAT_BGRA8, out=None, stream=None, **spec):
        """Converts into ``out`` and returns it: a CUDA tensor (torch, CuPy, anything with
        ``__cuda_array_interface__``; C-contiguous, on this frame's GPU) is written on ``stream``
        (default: the tensor library's current stream) with no host wait, and the frame's slot is
        fenced by that work; a host buffer (numpy array, bytearray) holds the bytes on return.
        ``out`` None: a new numpy array (:meth:`to_numpy`). Keyword arguments as :meth:`spec`
        (``device`` is taken from ``out``)."""
        if out is None:
            return self.to_numpy(format, **spec)
        spec.pop("device", None)
        dst = _device_dst(out, stream)
        if dst is not None:
            ptr, n, device, s = dst
            if device is None:
                device = self.info.device
            rc = _pkg._c_frame_convert(self.handle, _specs.ref(format, device, spec)[1], ptr, 0, n, s)
            if rc:
                raise _error(rc, "nvcam_frame_convert")
            return out
        ref = _specs.ref(format, None, spec)[1]
        mv = memoryview(out).cast("B")
        if mv.readonly:
            raise ValueError("buffer is read-only")
        addr = ctypes.addressof((c_char * len(mv)).from_buffer(mv)) if len(mv) else None
        rc = _pkg._c_frame_convert(self.handle, ref, addr, 0, len(mv), 0)
        if rc:
            raise _error(rc, "nvcam_frame_convert")
        return out

    def clone(self) -> Frame:
        """A new handle to the same pixels (release both)."""
        out = c_uint64(0)
        _check(lib.nvcam_frame_clone(self.handle, byref(out)), "nvcam_frame_clone")
        return Frame(out.value, self._camera)

    def release(self) -> None:
        """Releases this handle; calling it again raises ``NvcamError`` with ``NVCAM_E_STALE_HANDLE``."""
        self._released = True
        _check(lib.nvcam_frame_release(self.handle), "nvcam_frame_release")

    @property
    def released(self) -> bool:
        return self._released

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._released:
            self._released = True
            code = lib.nvcam_frame_release(self.handle)
            # Shutdown or a camera close may have invalidated it already: not an error here.
            if code not in (OK, E_STALE_HANDLE) and exc[0] is None:
                raise _error(code, "nvcam_frame_release")
        return False

    def __del__(self):
        try:
            if not self._released and not sys.is_finalizing():
                self._released = True
                lib.nvcam_frame_release(self.handle)
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        return "Frame(0x%016x%s)" % (self.handle, ", released" if self._released else "")


#: The conversion specs of Frame.convert and convert_batch, built by Frame.spec.
_specs = SpecCache(lambda format, device, kw: Frame.spec(format, device=device, **kw))
