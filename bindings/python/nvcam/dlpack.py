"""Zero-copy views of frames: DLPack capsules, the CUDA array interface, Plane."""

from __future__ import annotations

import ctypes
import sys
import threading
from ctypes import CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_int32, c_int64, c_uint64, c_uint8, c_void_p
from ._ffi import FORMAT_P016, MEMORY_DEVICE, MEMORY_HOST
from ._lib import lib
from .errors import _check


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", _DLDevice),
        ("ndim", c_int32),
        ("dtype", _DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class _DLManagedTensor(Structure):
    pass


_DL_DELETER = CFUNCTYPE(None, POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", _DL_DELETER)]

_KDL_CPU = 1
_KDL_CUDA = 2
_DL_UINT = 1

# address of a live DLManagedTensor -> (the struct, shape, strides, frame handle it holds).
_dl_live = {}
_dl_lock = threading.Lock()


def _dl_delete(managed):
    """The DLPack deleter: releases the frame handle the tensor held (a clone of its own)."""
    try:
        addr = ctypes.cast(managed, c_void_p).value
        with _dl_lock:
            entry = _dl_live.pop(addr, None)
        if entry is not None:
            lib.nvcam_frame_release(entry[3])
    except Exception:  # noqa: BLE001 - nothing may propagate into C
        pass


_dl_deleter = _DL_DELETER(_dl_delete)
_CAPSULE_DTOR = CFUNCTYPE(None, c_void_p)
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(c_int32, c_void_p, c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))


def _capsule_destroy(capsule):
    """A capsule nobody consumed (still named "dltensor") calls the tensor's deleter itself."""
    try:
        if _capsule_is_valid(capsule, b"dltensor"):
            p = _capsule_pointer(capsule, b"dltensor")
            if p:
                _dl_delete(ctypes.cast(p, POINTER(_DLManagedTensor)))
    except Exception:  # noqa: BLE001
        pass


_capsule_dtor = _CAPSULE_DTOR(_capsule_destroy)
# Tensors may be freed while the interpreter shuts down: the two trampolines are never freed.
ctypes.pythonapi.Py_IncRef.argtypes = [ctypes.py_object]
ctypes.pythonapi.Py_IncRef(_dl_deleter)
ctypes.pythonapi.Py_IncRef(_capsule_dtor)


def _dl_capsule(handle, ptr, shape, strides, device_type, device_id, itemsize=1):
    """A "dltensor" capsule of a uint8 (``itemsize`` 1) or uint16 (2) array at ``ptr`` with
    ``strides`` in bytes, that holds frame ``handle`` (released by the deleter, or by the
    capsule's destructor if nobody consumed it)."""
    m = _DLManagedTensor()
    nd = len(shape)
    sh = (c_int64 * nd)(*shape)
    st = (c_int64 * nd)(*(s // itemsize for s in strides))
    m.dl_tensor.data = ptr
    m.dl_tensor.device = _DLDevice(device_type, device_id)
    m.dl_tensor.ndim = nd
    m.dl_tensor.dtype = _DLDataType(_DL_UINT, 8 * itemsize, 1)
    m.dl_tensor.shape = ctypes.cast(sh, POINTER(c_int64))
    m.dl_tensor.strides = ctypes.cast(st, POINTER(c_int64))
    m.dl_tensor.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _dl_deleter
    addr = ctypes.addressof(m)
    with _dl_lock:
        _dl_live[addr] = (m, sh, st, handle)
    try:
        return _capsule_new(addr, b"dltensor", ctypes.cast(_capsule_dtor, c_void_p))
    except Exception:
        _dl_delete(ctypes.cast(addr, POINTER(_DLManagedTensor)))
        raise


def _dl_stream_wait(handle, stream):
    """DLPack's ``stream`` argument: None or 1 = the legacy default stream, 2 = the per-thread
    default stream, -1 = no synchronization, other = a CUstream handle. The stream waits on the
    device for the frame (``nvcam_frame_wait_stream``)."""
    if stream == -1:
        return
    s = 0 if stream is None or stream == 1 else int(stream)
    _check(lib.nvcam_frame_wait_stream(handle, s), "nvcam_frame_wait_stream")


class _Hold:
    """A frame handle of its own (a clone), released when the last view that uses it goes."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        try:
            if not sys.is_finalizing():
                lib.nvcam_frame_release(self.handle)
        except Exception:  # noqa: BLE001
            pass


class Plane:
    """A zero-copy view of one frame's pixels: ``"y"`` (``(height, width)``), ``"uv"``
    (``(ceil(h/2), ceil(w/2), 2)``, interleaved U and V) or ``"nv12"`` (both planes as one
    ``(height + ceil(h/2), 2 * ceil(w/2))`` array, where the frame's UV plane follows its Y
    plane at the same pitch, which nvcam's pools do). Rows are ``pitch`` bytes apart. Samples are
    uint8, or uint16 for P016 frames (10- and 12-bit streams; the bits are the high ones).

    A plane holds a frame handle of its own (a clone), so it stays valid after the :class:`Frame`
    is released. Device frames expose ``__cuda_array_interface__`` (version 3; ``stream`` is 1,
    the legacy default stream, which was made to wait for the frame: a consumer on another stream
    synchronizes with it as the protocol says) and ``__dlpack__``; host frames
    ``__array_interface__`` and ``__dlpack__`` (``numpy.asarray(plane)``,
    ``numpy.from_dlpack(plane)``). Every ``__dlpack__`` call clones the handle once more; the
    tensor's deleter releases that clone, so a DLPack tensor keeps its pixels (and the pool slot)
    for as long as it lives, across reconnects."""

    __slots__ = ("_hold", "kind", "memory", "device", "ptr", "shape", "strides", "itemsize")

    def __init__(self, hold, info, kind):
        self._hold = hold
        self.kind = kind
        self.memory = info.memory
        self.device = info.device
        w, h, pitch = info.width, info.height, info.pitch
        ch = (h + 1) // 2
        n = self.itemsize = 2 if info.format == FORMAT_P016 else 1
        if kind == "y":
            self.ptr, self.shape, self.strides = info.y_ptr, (h, w), (pitch, n)
        elif kind == "uv":
            self.ptr, self.shape, self.strides = info.uv_ptr, (ch, (w + 1) // 2, 2), (pitch, 2 * n, n)
        elif kind == "nv12":
            if info.uv_ptr != info.y_ptr + pitch * h:
                raise BufferError("this frame's UV plane does not follow its Y plane: use frame.planes()")
            self.ptr, self.shape, self.strides = info.y_ptr, (h + ch, info.row_bytes // n), (pitch, n)
        else:
            raise ValueError("plane kind %r (y, uv or nv12)" % (kind,))

    @property
    def handle(self):
        return self._hold.handle

    @property
    def __cuda_array_interface__(self):
        if self.memory != MEMORY_DEVICE:
            raise AttributeError("a host frame has no __cuda_array_interface__ (use numpy.asarray or from_dlpack)")
        _check(lib.nvcam_frame_wait_stream(self._hold.handle, 0), "nvcam_frame_wait_stream")
        return {
            "shape": self.shape,
            "typestr": "|u1" if self.itemsize == 1 else "<u2",
            "data": (self.ptr, False),
            "strides": self.strides,
            "version": 3,
            "stream": 1,
        }

    @property
    def __array_interface__(self):
        if self.memory != MEMORY_HOST:
            raise AttributeError("a device frame has no __array_interface__ (use __cuda_array_interface__ or DLPack)")
        return {"shape": self.shape, "typestr": "|u1" if self.itemsize == 1 else "<u2", "data": (self.ptr, False), "strides": self.strides, "version": 3}

    def __dlpack_device__(self):
        if self.memory == MEMORY_DEVICE:
            return (_KDL_CUDA, self.device)
        return (_KDL_CPU, 0)

    def __dlpack__(self, stream=None, **_kw):
        if self.memory == MEMORY_DEVICE:
            _dl_stream_wait(self._hold.handle, stream)
        out = c_uint64(0)
        _check(lib.nvcam_frame_clone(self._hold.handle, byref(out)), "nvcam_frame_clone")
        dev_type, dev_id = self.__dlpack_device__()
        return _dl_capsule(out.value, self.ptr, self.shape, self.strides, dev_type, dev_id, self.itemsize)

    def __repr__(self):
        return "Plane(%s, %s, shape=%r)" % (self.kind, "device %d" % self.device if self.memory == MEMORY_DEVICE else "host", self.shape)
