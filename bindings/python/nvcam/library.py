"""Library-wide calls: version, log, GPU counters, and the Library object (init and shutdown)."""

from __future__ import annotations

import atexit
import threading
from typing import Any, Dict, Optional
from ctypes import byref, c_int32, create_string_buffer
from ._ffi import E_BUFFER_TOO_SMALL, LOG_OFF, LOG_WARN
from .structs import Config, GpuStats, LOG_FN
from ._lib import lib
from .errors import _TEXT_LEN, _check, _text


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


atexit.register(_clear_callback_at_exit)


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
