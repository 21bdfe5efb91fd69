"""ctypes binding for nvcam (no compiled extension).

The C API lives in ``include/nvcam.h``; this module declares every function with its exact argument
and result types, mirrors the four structs (their sizes are checked against the C sizes when the
module loads), turns every non-zero status into :class:`NvcamError`, and adds a small Pythonic
layer::

    import nvcam
    with nvcam.Library(), nvcam.Camera.open("testsrc://640x480@30", device=nvcam.DEVICE_CPU) as cam:
        with cam.get_frame(1000) as frame:
            print(frame.info.width, frame.info.height, frame.info.seq)
            pixels = frame.to_numpy_nv12()   # numpy array if numpy is installed, else bytes
        print(cam.stats())

Finding the library (first hit wins): a ``libnvcam.so`` / ``nvcam.dll`` / ``libnvcam.dylib`` inside
this package (where the wheel puts it, with the FFmpeg libraries it needs); the ``NVCAM_LIB``
environment variable (a file path); ``target/release`` then ``target/debug`` under the repository
root (three levels up from this file: a source checkout); finally the bare name on the loader's
search path.

Calls run with the GIL released (ctypes.CDLL), so a thread blocked in :meth:`Camera.get_frame` does
not stop other Python threads. ``nvcam_last_error`` is per OS thread, which is exactly what ctypes
gives us: the message is read on the thread that made the failing call, right after it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from typing import Any, Dict, Iterator, Optional, Sequence, Union
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    byref,
    c_char,
    c_char_p,
    c_double,
    c_int32,
    c_int64,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
    create_string_buffer,
    sizeof,
)

try:  # optional: Frame.to_numpy_nv12 returns bytes without it
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None

__all__ = [
    "__version__",
    "NvcamError",
    "Library",
    "Camera",
    "Frame",
    "FrameInfo",
    "CameraOptions",
    "CameraStats",
    "Config",
    "lib",
    "library_path",
    "version",
    "abi_version",
    "status_text",
    "log_init",
    "log_pop",
    "set_log_callback",
    "get_frames",
    "convert_batch",
    "FrameBatch",
    "Plane",
    "default_device",
]

# --------------------------------------------------------------------------------------------
# Constants: generated (_ffi.py, `cargo xtask gen`), plus names for some of them
# --------------------------------------------------------------------------------------------

from ._ffi import *  # noqa: E402,F401,F403 - every NVCAM_X of the header as X
from . import _ffi  # noqa: E402

STATE_NAMES = {
    STATE_CONNECTING: "CONNECTING",
    STATE_STREAMING: "STREAMING",
    STATE_STALLED: "STALLED",
    STATE_RECONNECTING: "RECONNECTING",
    STATE_CLOSED: "CLOSED",
    STATE_FAILED: "FAILED",
    STATE_ENDED: "ENDED",
}

#: code -> "NVCAM_E_..." name, as the header spells it.
STATUS_NAMES = {
    value: "NVCAM_" + name
    for name, value in vars(_ffi).items()
    if (name == "OK" or name.startswith("E_")) and isinstance(value, int)
}

# --------------------------------------------------------------------------------------------
# Structs: the generated layouts, with struct_size set on construction
# --------------------------------------------------------------------------------------------


class _Sized:
    """Mixed into a generated struct whose first field is ``struct_size``: it is set on
    construction."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.struct_size = sizeof(self)

    def to_dict(self):
        out = {}
        for name, ctype in self._fields_:
            if name in ("struct_size", "reserved") or name.startswith("_pad"):
                continue
            out[name] = getattr(self, name)
        return out

    def __repr__(self):
        fields = ", ".join("%s=%r" % kv for kv in self.to_dict().items())
        return "%s(%s)" % (type(self).__name__, fields)


class Config(_Sized, _ffi.nvcam_config_t):
    """``nvcam_config``: library settings for :class:`Library` (zero = default everywhere)."""


class CameraOptions(_Sized, _ffi.nvcam_camera_options_t):
    """``nvcam_camera_options``; :meth:`Camera.open` fills one from keyword arguments."""


class CameraStats(_Sized, _ffi.nvcam_camera_stats_t):
    """``nvcam_camera_stats``."""


class FrameInfo(_Sized, _ffi.nvcam_frame_info_t):
    """``nvcam_frame_info``. ``y_ptr``/``uv_ptr`` are addresses (host or CUDA device, see
    ``memory``), valid only while the frame handle (or a clone of it) is held."""

    @property
    def exact(self):
        """Neither ``FRAME_CORRUPT`` nor ``FRAME_AFTER_LOSS``: decoded from a complete bitstream
        with every reference intact."""
        return not (self.flags & (FRAME_CORRUPT | FRAME_AFTER_LOSS))

    @property
    def row_bytes(self):
        """Bytes per row of a packed copy (``dst_pitch`` 0): the width rounded up to even, twice
        that for P016 frames (16-bit samples)."""
        return (self.width + 1) // 2 * 2 * (2 if self.format == FORMAT_P016 else 1)

    @property
    def rows(self):
        """Rows of a packed NV12 copy: ``height`` luma rows, then ``(height + 1) // 2`` chroma rows."""
        return self.height + (self.height + 1) // 2


class Convert(_Sized, _ffi.nvcam_convert_t):
    """``nvcam_convert_t``: what :meth:`Frame.convert_into` makes of a frame. Zero fields mean
    defaults (the whole frame, its own size, the stream's colours, host memory)."""


class GpuStats(_Sized, _ffi.nvcam_gpu_stats_t):
    """``nvcam_gpu_stats``: GPU counters of one device, or summed over all (``device`` -1)."""


LOG_FN = _ffi.nvcam_log_fn

# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

if sys.platform.startswith("win"):
    _LIB_NAMES = ["nvcam.dll"]
elif sys.platform == "darwin":
    _LIB_NAMES = ["libnvcam.dylib"]
else:
    _LIB_NAMES = ["libnvcam.so"]


_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))  # a source checkout's root


def _candidates():
    """(path, explicit) in search order; ``explicit`` paths are loaded even if they do not exist as
    files (NVCAM_LIB may be a bare name) and their failure is fatal."""
    for n in _LIB_NAMES:
        yield os.path.join(_HERE, n), False
    env = os.environ.get("NVCAM_LIB")
    if env:
        yield env, True
        return
    for profile in ("release", "debug"):
        for n in _LIB_NAMES:
            yield os.path.join(_ROOT, "target", profile, n), False


def _load():
    tried = []
    for path, explicit in _candidates():
        if explicit or os.path.isfile(path):
            try:
                return ctypes.CDLL(path), path
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
                if explicit:
                    raise ImportError("NVCAM_LIB=%s could not be loaded: %s" % (path, e))
        else:
            tried.append("%s (not found)" % path)
    for n in _LIB_NAMES:  # the loader's search path
        try:
            return ctypes.CDLL(n), n
        except OSError as e:
            tried.append("%s (%s)" % (n, e))
    raise ImportError("nvcam library not found; set NVCAM_LIB. Tried: " + "; ".join(tried))


def _crate_version():
    """The crate's version: written into ``_version.py`` by the wheel builder, else read from a
    source checkout's Cargo.toml."""
    try:
        from ._version import version as v  # type: ignore[import-not-found]

        return str(v)
    except ImportError:
        pass
    try:
        with open(os.path.join(_ROOT, "Cargo.toml"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("version = "):
                    return line.split('"')[1]
    except OSError:
        pass
    return "0+unknown"


#: The nvcam version of this package (the crate's, from Cargo.toml); :func:`version` is the
#: loaded library's own string.
__version__ = _crate_version()

lib: ctypes.CDLL
library_path: str
lib, library_path = _load()

_ffi.bind(lib)

# The per-frame conversion calls, bound once (an attribute lookup less per call).
_c_frame_convert = lib.nvcam_frame_convert
_c_frames_convert_batch = lib.nvcam_frames_convert_batch

if lib.nvcam_abi_version() != ABI_VERSION:
    raise ImportError(
        "%s has ABI version %d, this binding expects %d" % (library_path, lib.nvcam_abi_version(), ABI_VERSION)
    )

# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

_TEXT_LEN = 4096


def _text(fn, *args):
    """Calls a ``(…, char *buf, int32_t len)`` function, growing the buffer if it was too small."""
    n = _TEXT_LEN
    while True:
        buf = create_string_buffer(n)
        rc = fn(*args, buf, n)
        if rc == E_BUFFER_TOO_SMALL and n < (1 << 20):
            n *= 4
            continue
        return rc, buf.value.decode("utf-8", "replace")


def status_text(code: int) -> str:
    """``"NAME: description"`` of a status code (``nvcam_status_text``)."""
    return _text(lib.nvcam_status_text, int(code))[1]


class NvcamError(Exception):
    """A failed nvcam call: ``code`` (negative, -8999..-8000), ``name`` (``NVCAM_E_…``) and
    ``message`` (the library's text for this failure, from ``nvcam_last_error``)."""

    def __init__(self, code: int, name: str, message: str) -> None:
        super().__init__(code, name, message)
        self.code = code
        self.name = name
        self.message = message

    def __str__(self):
        if self.message.startswith(self.name + ":"):  # the library's text already names the code
            return "%s (%d)" % (self.message, self.code)
        return "%s (%d): %s" % (self.name, self.code, self.message)


def _error(code, call=None):
    # Read the thread's last error first: any other nvcam call (status_text included) clears it.
    msg = _text(lib.nvcam_last_error)[1]
    name = STATUS_NAMES.get(code)
    if name is None:
        name = status_text(code).split(":", 1)[0]
    if not msg:
        msg = status_text(code)
        if call:
            msg = "%s: %s" % (call, msg)
    return NvcamError(code, name, msg)


def _check(code, call=None):
    if code != OK:
        raise _error(code, call)


# --------------------------------------------------------------------------------------------
# Library-wide functions
# --------------------------------------------------------------------------------------------


def abi_version() -> int:
    return lib.nvcam_abi_version()


def version() -> str:
    """The loaded library's version string, e.g. ``"nvcam 0.1.0 (abi 1)"``."""
    rc, text = _text(lib.nvcam_version_string)
    _check(rc, "nvcam_version_string")
    return text


def log_init(path: Optional[str] = None, level: int = LOG_WARN) -> None:
    """Log to a file, to stderr (``"-"``), or only to the callback and the poll queue (None)."""
    _check(lib.nvcam_log_init(path.encode() if path else None, level), "nvcam_log_init")


def log_pop():
    """The oldest queued log message as ``(level, text)``, or None when the queue is empty."""
    level, n = c_int32(0), c_int32(0)
    size = _TEXT_LEN
    while True:
        buf = create_string_buffer(size)
        rc = lib.nvcam_log_pop(byref(level), buf, size, byref(n))
        if rc == E_BUFFER_TOO_SMALL:
            # The message stays queued; n says how long it is. Grow and ask again.
            size = n.value + 1
            continue
        _check(rc, "nvcam_log_pop")
        if n.value == 0:
            return None
        return level.value, buf.value.decode("utf-8", "replace")


def log_drain(limit=10000):
    """The queued log messages, oldest first (at most ``limit``: busy cameras keep logging)."""
    out = []
    while len(out) < limit:
        m = log_pop()
        if m is None:
            break
        out.append(m)
    return out


_callback_lock = threading.Lock()
_callback_keepalive = None
# Every trampoline ever installed stays alive: a worker thread may be inside the old callback when
# nvcam_log_set_callback replaces it (the library calls it without holding its locks).
_callback_graveyard = []


def set_log_callback(fn, min_level=LOG_WARN):
    """Calls ``fn(level, text)`` for every message at ``min_level`` or more severe, from any thread
    (nvcam's worker threads included). ``None`` clears it. Exceptions in ``fn`` are swallowed: they
    cannot cross the C boundary. Prefer :func:`log_pop` where polling is easy."""
    global _callback_keepalive
    with _callback_lock:
        if fn is None:
            _check(lib.nvcam_log_set_callback(LOG_FN(), None, min_level), "nvcam_log_set_callback")
            _callback_keepalive = None
            return

        def trampoline(level, message, _user):
            try:
                fn(level, message.decode("utf-8", "replace") if message else "")
            except Exception:  # noqa: BLE001 - nothing may propagate into C
                pass

        cb = LOG_FN(trampoline)
        _callback_graveyard.append(cb)  # the C side keeps the pointer: so must we
        _check(lib.nvcam_log_set_callback(cb, None, min_level), "nvcam_log_set_callback")
        _callback_keepalive = cb


def _clear_callback_at_exit():
    # Worker threads must not call into a finalizing interpreter.
    if _callback_keepalive is not None:
        try:
            lib.nvcam_log_set_callback(LOG_FN(), None, LOG_OFF)
        except Exception:  # noqa: BLE001
            pass


import atexit  # noqa: E402

atexit.register(_clear_callback_at_exit)


def registry_stats(camera=0):
    """``(handles of camera, handles of all cameras)`` the host holds now."""
    cam = camera.handle if isinstance(camera, Camera) else int(camera)
    per, total = c_uint32(0), c_uint64(0)
    _check(lib.nvcam_registry_stats(cam, byref(per), byref(total)), "nvcam_registry_stats")
    return per.value, total.value


# --------------------------------------------------------------------------------------------
# Pythonic layer
# --------------------------------------------------------------------------------------------


def gpu_stats(device: int = -1) -> Dict[str, Any]:
    """GPU counters as a dict (``device`` -1: all devices; works without a GPU: device_count 0)."""
    s = GpuStats()
    _check(lib.nvcam_gpu_stats(device, byref(s)), "nvcam_gpu_stats")
    return s.to_dict()


def gpu_drain(min_age_ms=0):
    """Frees deferred GPU buffers whose events completed and that are at least this old."""
    _check(lib.nvcam_gpu_drain(min_age_ms), "nvcam_gpu_drain")


class Library:
    """``nvcam_init`` on construction, ``nvcam_shutdown`` on :meth:`shutdown` or leaving a ``with``
    block. Shutdown closes every camera and makes every handle stale (``NVCAM_E_STALE_HANDLE``)."""

    def __init__(self, config=None, log_level=None, log_path=None, **config_fields):
        if log_level is not None or log_path is not None:
            log_init(log_path, LOG_WARN if log_level is None else log_level)
        if config is None and config_fields:
            config = Config(**config_fields)
        _check(lib.nvcam_init(byref(config) if config is not None else None), "nvcam_init")
        self._up = True

    def shutdown(self, timeout_ms=5000):
        """Raises ``NVCAM_E_TIMEOUT`` if a thread was still running at the end."""
        self._up = False
        _check(lib.nvcam_shutdown(timeout_ms), "nvcam_shutdown")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._up:
            self.shutdown()
        return False

    @staticmethod
    def version():
        return version()


# --------------------------------------------------------------------------------------------
# Zero-copy: DLPack and the CUDA array interface
# --------------------------------------------------------------------------------------------


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


def _cuda_target(out, cai=None):
    """``(address, bytes, device, stream)`` of a contiguous CUDA array from its
    ``__cuda_array_interface__`` (``cai``, read from ``out`` when not given)."""
    if cai is None:
        cai = out.__cuda_array_interface__
    shape = tuple(cai["shape"])
    itemsize = int(cai["typestr"][2:])
    n = itemsize
    for d in shape:
        n *= d
    strides = cai.get("strides")
    if strides is not None:
        want, expect = [], itemsize
        for d in reversed(shape):
            want.append(expect)
            expect *= d
        if tuple(reversed(want)) != tuple(strides) and n:
            raise ValueError("the destination must be C-contiguous")
    device = None
    dev = getattr(out, "device", None)
    if dev is not None:
        device = getattr(dev, "index", None)
        if device is None:
            device = getattr(dev, "id", None)
    stream = cai.get("stream")
    if stream is None:
        stream = 0
    return int(cai["data"][0]), n, device, stream


def _stream_of(out, stream):
    if stream is not None:
        return int(stream)
    mod = type(out).__module__.split(".")[0]
    if mod == "torch":
        import torch  # noqa: WPS433 - only when a torch tensor is given

        return torch.cuda.current_stream(out.device).cuda_stream
    if mod == "cupy":
        import cupy  # noqa: WPS433

        return cupy.cuda.get_current_stream().ptr
    return None


# Destinations by type, decided once per type (_kind_of): torch.Tensor and cupy.ndarray are read
# through their own attributes, which costs far less than building their
# __cuda_array_interface__ dict; anything else (host buffers, other CUDA arrays, subclasses)
# goes through the generic path. Neither library is imported here: an object of its type exists
# only once the library is, so sys.modules has it.
_K_OTHER, _K_TORCH, _K_CUPY = 0, 1, 2
_kinds = {}
_torch_strided = None
_torch_raw_stream = None  # device ordinal -> the current stream's CUstream, as an int
_cupy_current_stream = None


def _torch_setup(torch):
    global _torch_strided, _torch_raw_stream
    raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
    if raw is None:  # the public call: same stream, slower

        def raw(device, _current=torch.cuda.current_stream):
            return _current(device).cuda_stream

    _torch_raw_stream = raw
    _torch_strided = torch.strided


def _kind_of(t):
    kind = _K_OTHER
    torch = sys.modules.get("torch")
    cupy = sys.modules.get("cupy")
    if torch is not None and t is getattr(torch, "Tensor", None):
        _torch_setup(torch)
        kind = _K_TORCH
    elif cupy is not None and t is getattr(cupy, "ndarray", None):
        global _cupy_current_stream
        _cupy_current_stream = cupy.cuda.get_current_stream
        kind = _K_CUPY
    if len(_kinds) >= 64:
        _kinds.clear()
    _kinds[t] = kind
    return kind


def _device_dst(out, stream):
    """``(address, bytes, device or None, stream)`` when ``out`` is a CUDA array, None for a host
    buffer. ``stream`` None: the array library's current stream (torch, CuPy), else the one its
    ``__cuda_array_interface__`` names, else 0. Raises ValueError for a non-contiguous array."""
    kind = _kinds.get(type(out))
    if kind is None:
        kind = _kind_of(type(out))
    if kind == _K_TORCH:
        # CPU and sparse tensors take the generic path, as before (no __cuda_array_interface__).
        if out.is_cuda and out.layout is _torch_strided:
            if out.requires_grad:  # what torch's __cuda_array_interface__ raises
                raise RuntimeError("the destination tensor requires grad: pass out.detach() (the same memory)")
            if not out.is_contiguous():
                raise ValueError("the destination must be C-contiguous")
            device = out.get_device()
            return out.data_ptr(), out.nbytes, device, _torch_raw_stream(device) if stream is None else int(stream)
    elif kind == _K_CUPY:
        if not out.flags.c_contiguous and out.size:
            raise ValueError("the destination must be C-contiguous")
        return out.data.ptr, out.nbytes, out.device.id, _cupy_current_stream().ptr if stream is None else int(stream)
    cai = getattr(out, "__cuda_array_interface__", None)
    if cai is None:
        return None
    ptr, n, device, cai_stream = _cuda_target(out, cai)
    s = _stream_of(out, stream)
    return ptr, n, device, cai_stream if s is None else s


# Frame.spec(format, device=device, **kw) -> (struct, byref) for the conversion calls, which only
# read it: built once per distinct spec, shared, never mutated nor handed out (Frame.spec still
# returns a new struct). Keys compare by value; a list or array (pad=[...]) is keyed by a tuple
# of its values at the time of the call. A spec with any other kind of value (not a number, None,
# or a sequence of numbers) is built every time: it might change without its key changing.
_spec_cache = {}
_SPEC_CACHE_MAX = 64
_NUMBER = (int, float) if _np is None else (int, float, _np.number, _np.bool_)
# The last spec looked up, as (format, device, kwargs, (struct, byref)): a repeated call with the
# same arguments skips building and hashing a key. Only specs of immutable values are kept here.
_spec_last = (None, None, None, None)


def _plain(v):
    """``v`` as an immutable key part (a number, None or a tuple of numbers), or raises TypeError."""
    if v is None or isinstance(v, _NUMBER):
        return v
    if isinstance(v, (tuple, list)) or (_np is not None and isinstance(v, _np.ndarray)):
        t = tuple(v)
        for x in t:
            if not isinstance(x, _NUMBER):
                raise TypeError
        return t
    raise TypeError


def _spec_ref(format, device, kw):
    """``(struct, byref(struct))`` of ``Frame.spec(format, device=device, **kw)``, from the cache.
    ``kw`` is the caller's own ``**kwargs`` dict, which nobody changes after the call."""
    global _spec_last
    last = _spec_last
    try:
        if last[2] == kw and last[0] == format and last[1] == device:
            return last[3]
    except Exception:  # noqa: BLE001 - e.g. an array among the values (no truth value)
        pass
    key = (format, device, *kw.items())
    try:
        hit = _spec_cache.get(key)
    except TypeError:  # a list or an array among the values: keyed by a snapshot of them
        try:
            key = (format, device, *((k, _plain(v)) for k, v in kw.items()))
        except TypeError:  # not a cacheable spec (or not a valid one: Frame.spec says which)
            c = Frame.spec(format, device=device, **kw)
            return c, byref(c)
        hit = _spec_cache.get(key)
        if hit is None:
            hit = _spec_cache[key] = _spec_new(format, device, kw)
        return hit  # not the last spec: its values may change in place
    if hit is None:
        try:
            for v in kw.values():
                _plain(v)
        except TypeError:  # hashable, but not a number or a tuple of numbers
            c = Frame.spec(format, device=device, **kw)
            return c, byref(c)
        hit = _spec_cache[key] = _spec_new(format, device, kw)
    _spec_last = (format, device, kw, hit)
    return hit


def _spec_new(format, device, kw):
    c = Frame.spec(format, device=device, **kw)
    if len(_spec_cache) >= _SPEC_CACHE_MAX:
        _spec_cache.clear()
    return c, byref(c)


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
            rc = _c_frame_convert(self.handle, _spec_ref(format, device, spec)[1], ptr, 0, n, s)
            if rc:
                raise _error(rc, "nvcam_frame_convert")
            return out
        ref = _spec_ref(format, None, spec)[1]
        mv = memoryview(out).cast("B")
        if mv.readonly:
            raise ValueError("buffer is read-only")
        addr = ctypes.addressof((c_char * len(mv)).from_buffer(mv)) if len(mv) else None
        rc = _c_frame_convert(self.handle, ref, addr, 0, len(mv), 0)
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


class Camera:
    """An open camera. Use :meth:`open`; close with :meth:`close` or a ``with`` block."""

    def __init__(self, handle):
        self.handle = int(handle)
        self._closed = False

    @classmethod
    def open(
        cls,
        url: Union[str, os.PathLike],
        device: Optional[int] = None,
        flags: int = 0,
        ffmpeg_options: Union[str, Dict[str, Any], None] = None,
        pool_slots: int = 4,
        decoder: int = DECODER_AUTO,
        open_timeout_ms: int = 0,
        stall_timeout_ms: int = 0,
        reconnect_min_ms: int = 0,
        reconnect_max_ms: int = 0,
        decode_threads: int = 0,
        reconnect_fast_ms: int = 0,
        latency: int = 0,
        transport: int = TRANSPORT_DEFAULT,
        integrity: int = INTEGRITY_EXACT,
    ) -> Camera:
        """Opens ``url`` (``rtsp://…``, another FFmpeg URL, a file path, ``testsrc://WxH@FPS``).
        Zero timeouts mean the library's defaults. ``ffmpeg_options`` is ``"k=v;k=v"`` or a dict.
        ``device`` None: GPU 0 when the library sees a GPU, else the CPU (:func:`default_device`)."""
        if device is None:
            device = default_device()
        o = CameraOptions()
        _check(lib.nvcam_camera_options_init(byref(o)), "nvcam_camera_options_init")
        o.flags = flags
        o.device = device
        o.pool_slots = pool_slots
        o.decoder = decoder
        o.open_timeout_ms = open_timeout_ms
        o.stall_timeout_ms = stall_timeout_ms
        o.reconnect_min_ms = reconnect_min_ms
        o.reconnect_max_ms = reconnect_max_ms
        o.decode_threads = decode_threads
        o.reconnect_fast_ms = reconnect_fast_ms
        o.latency = latency
        o.transport = transport
        o.integrity = integrity
        if isinstance(ffmpeg_options, dict):
            ffmpeg_options = ";".join("%s=%s" % kv for kv in ffmpeg_options.items())
        opts_bytes = ffmpeg_options.encode() if ffmpeg_options else None
        o.ffmpeg_options = opts_bytes  # kept alive by opts_bytes until the call returns
        out = c_uint64(0)
        _check(lib.nvcam_camera_open(str(url).encode(), byref(o), byref(out)), "nvcam_camera_open")
        return cls(out.value)

    def get_frame(self, timeout_ms: int = 1000) -> Frame:
        """The newest frame not yet handed out; raises ``NVCAM_E_TIMEOUT`` if none came in time."""
        out = c_uint64(0)
        _check(lib.nvcam_camera_get_frame(self.handle, timeout_ms, byref(out)), "nvcam_camera_get_frame")
        return Frame(out.value, self)

    def try_get_frame(self, timeout_ms: int = 1000) -> Optional[Frame]:
        """Like :meth:`get_frame`, but None on a timeout."""
        try:
            return self.get_frame(timeout_ms)
        except NvcamError as e:
            if e.code == E_TIMEOUT:
                return None
            raise

    def cancel_wait(self) -> None:
        """Wakes every thread blocked in :meth:`get_frame` on this camera now: each raises
        ``NVCAM_E_CANCELLED``. Only waits in progress are cancelled; the camera stays open."""
        _check(lib.nvcam_camera_cancel_wait(self.handle), "nvcam_camera_cancel_wait")

    def stats_struct(self) -> CameraStats:
        s = CameraStats()
        _check(lib.nvcam_camera_stats(self.handle, byref(s)), "nvcam_camera_stats")
        return s

    def stats(self) -> Dict[str, Any]:
        """The camera's counters and state as a dict (``state_name`` added)."""
        d = self.stats_struct().to_dict()
        d["state_name"] = STATE_NAMES.get(d["state"], str(d["state"]))
        return d

    def last_error(self) -> str:
        """The camera's last error text ("" if none), from its worker or from a call on it."""
        rc, text = _text(lib.nvcam_camera_last_error, self.handle)
        _check(rc, "nvcam_camera_last_error")
        return text

    def reconnect(self) -> None:
        _check(lib.nvcam_camera_reconnect(self.handle), "nvcam_camera_reconnect")

    def force_release_frames(self) -> int:
        """Invalidates every frame handle of this camera; returns how many."""
        n = c_uint32(0)
        _check(lib.nvcam_registry_force_release_owner(self.handle, byref(n)), "nvcam_registry_force_release_owner")
        return n.value

    def close(self, timeout_ms: int = 5000) -> None:
        """Closes the camera and invalidates its frames. A second close raises
        ``NVCAM_E_STALE_HANDLE`` like any call on a closed camera."""
        self._closed = True
        _check(lib.nvcam_camera_close(self.handle, timeout_ms), "nvcam_camera_close")

    @property
    def closed(self) -> bool:
        return self._closed

    def __iter__(self) -> Iterator[Frame]:
        """Frames forever (1 s timeout each, retried); stops when the camera fails, ends or closes,
        or when :meth:`cancel_wait` cancels the wait."""
        while True:
            try:
                yield self.get_frame(1000)
            except NvcamError as e:
                if e.code == E_TIMEOUT:
                    continue
                if e.code in (E_FAILED, E_CLOSED, E_STALE_HANDLE, E_CANCELLED):
                    return
                raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._closed:
            self._closed = True
            code = lib.nvcam_camera_close(self.handle, 5000)
            if code not in (OK, E_STALE_HANDLE) and exc[0] is None:
                raise _error(code, "nvcam_camera_close")
        return False

    def __del__(self):
        try:
            if not self._closed and not sys.is_finalizing():
                self._closed = True
                lib.nvcam_camera_close(self.handle, 1000)
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        return "Camera(0x%016x%s)" % (self.handle, ", closed" if self._closed else "")


def default_device() -> int:
    """0 when the library sees a usable GPU, else ``DEVICE_CPU``: what :meth:`Camera.open` uses
    when no ``device`` is given."""
    try:
        return 0 if gpu_stats(-1).get("device_count", 0) > 0 else DEVICE_CPU
    except NvcamError:
        return DEVICE_CPU


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
        ref = _spec_ref(format, device, spec)[1]
    else:
        ref = _spec_ref(format, None, spec)[1]
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
        rc = _c_frames_convert_batch(arr, n, ref, ptr, item_stride, size, s)
    finally:
        if n <= BATCH_MAX:
            _batch_tls.handles = arr
    if rc:
        raise _error(rc, "nvcam_frames_convert_batch")
    return out
