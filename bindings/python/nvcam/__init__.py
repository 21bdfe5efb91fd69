"""ctypes binding for nvcam (no compiled extension).

The C API lives in ``include/nvcam.h``; ``_ffi.py``, generated from the same Rust sources by
``cargo xtask gen``, declares every function with its exact argument and result types and every
struct (its size checked against the C size when the module loads). The rest turns every non-zero
status into :class:`NvcamError` and adds a small Pythonic layer::

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

# One module per job: _lib (loading), errors, structs, library (library-wide calls and the log),
# dlpack (zero-copy views), convert (destinations, the spec cache), frame, camera, batch. Every
# public name is importable from here, as are the private ones the test suite reaches for.
from ._numpy import _np  # noqa: F401
from . import _ffi  # noqa: F401
from .constants import *  # noqa: F401,F403 - every NVCAM_X of the header as X
from .constants import STATE_NAMES, STATUS_NAMES  # noqa: F401
from .structs import CameraOptions, CameraStats, Config, Convert, FrameInfo, GpuStats, LOG_FN  # noqa: F401
from ._lib import __version__, _c_frame_convert, _c_frames_convert_batch, lib, library_path  # noqa: F401
from .errors import NvcamError, status_text  # noqa: F401
from .library import Library, abi_version, gpu_drain, gpu_stats, log_drain, log_init, log_pop, set_log_callback, version  # noqa: F401
from .dlpack import Plane, _DLManagedTensor, _capsule_pointer  # noqa: F401
from .convert import _cuda_target, _kinds  # noqa: F401
from .frame import Frame  # noqa: F401
from .camera import Camera, default_device, option_pair, registry_stats  # noqa: F401
from .record import RecordStats, RecordStatus, Recording  # noqa: F401
from .batch import FrameBatch, convert_batch, get_frames  # noqa: F401
from .frame import _specs

# The conversion spec cache, under the names it had as module globals.
_spec_cache = _specs.cache
_SPEC_CACHE_MAX = _specs.limit

__all__ = [
    "__version__",
    "NvcamError",
    "Library",
    "Camera",
    "option_pair",
    "Recording",
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
