"""The C structs: the generated layouts (_ffi.py) with struct_size set on construction."""

from __future__ import annotations

from ctypes import sizeof
from ._ffi import FORMAT_P016, FRAME_AFTER_LOSS, FRAME_CORRUPT
from . import _ffi


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
