"""Conversion destinations (host buffers, torch, cupy, CUDA arrays) and the conversion spec cache."""

from __future__ import annotations

import sys
from ctypes import byref
from ._numpy import _np

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
    # Through the package: `nvcam._cuda_target` is the name callers (and the GPU tests, which
    # patch it to prove the torch and CuPy fast paths skip it) know it by.
    ptr, n, device, cai_stream = sys.modules[__package__]._cuda_target(out, cai)
    s = _stream_of(out, stream)
    return ptr, n, device, cai_stream if s is None else s


_NUMBER = (int, float) if _np is None else (int, float, _np.number, _np.bool_)


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


class SpecCache:
    """``Frame.spec(format, device=device, **kw)`` -> ``(struct, byref)`` for the conversion calls,
    which only read it: built once per distinct spec, shared, never mutated nor handed out
    (Frame.spec still returns a new struct). Keys compare by value; a list or array (pad=[...]) is
    keyed by a tuple of its values at the time of the call. A spec with any other kind of value
    (not a number, None, or a sequence of numbers) is built every time: it might change without
    its key changing. ``build(format, device, kw)`` makes a new struct."""

    def __init__(self, build, limit=64):
        self.build = build
        self.limit = limit
        #: key -> (struct, byref); cleared, never replaced, when it reaches ``limit``.
        self.cache = {}
        # The last spec looked up, as (format, device, kwargs, (struct, byref)): a repeated call
        # with the same arguments skips building and hashing a key. Only specs of immutable values
        # are kept here.
        self.last = (None, None, None, None)

    def ref(self, format, device, kw):
        """``(struct, byref(struct))`` of ``Frame.spec(format, device=device, **kw)``, from the
        cache. ``kw`` is the caller's own ``**kwargs`` dict, which nobody changes after the call."""
        last = self.last
        try:
            if last[2] == kw and last[0] == format and last[1] == device:
                return last[3]
        except Exception:  # noqa: BLE001 - e.g. an array among the values (no truth value)
            pass
        key = (format, device, *kw.items())
        try:
            hit = self.cache.get(key)
        except TypeError:  # a list or an array among the values: keyed by a snapshot of them
            try:
                key = (format, device, *((k, _plain(v)) for k, v in kw.items()))
            except TypeError:  # not a cacheable spec (or not a valid one: Frame.spec says which)
                c = self.build(format, device, kw)
                return c, byref(c)
            hit = self.cache.get(key)
            if hit is None:
                hit = self.cache[key] = self._new(format, device, kw)
            return hit  # not the last spec: its values may change in place
        if hit is None:
            try:
                for v in kw.values():
                    _plain(v)
            except TypeError:  # hashable, but not a number or a tuple of numbers
                c = self.build(format, device, kw)
                return c, byref(c)
            hit = self.cache[key] = self._new(format, device, kw)
        self.last = (format, device, kw, hit)
        return hit

    def _new(self, format, device, kw):
        c = self.build(format, device, kw)
        if len(self.cache) >= self.limit:
            self.cache.clear()
        return c, byref(c)
