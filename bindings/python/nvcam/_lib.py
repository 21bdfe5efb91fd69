"""Finds and loads the nvcam library, binds its prototypes and checks its ABI version."""

from __future__ import annotations

import ctypes
import os
import sys
from ._ffi import ABI_VERSION
from . import _ffi


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
