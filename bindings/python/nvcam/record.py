"""Recording: event clips of a camera's stream to Matroska or fragmented MP4 files."""

from __future__ import annotations

import os
import sys
import time
from ctypes import byref, c_uint64
from typing import Any, Dict, Union
from ._ffi import (
    E_STALE_HANDLE,
    OK,
    RECORD_DONE,
    RECORD_FAILED,
    RECORD_FINISHING,
    RECORD_RUNNING,
    RECORD_STOPPED,
    nvcam_record_stats_t,
    nvcam_record_status_t,
)
from ._lib import lib
from .errors import _check, _text
from .structs import _Sized

RECORD_STATE_NAMES = {
    RECORD_RUNNING: "running",
    RECORD_FINISHING: "finishing",
    RECORD_DONE: "done",
    RECORD_STOPPED: "stopped",
    RECORD_FAILED: "failed",
}


class RecordStatus(_Sized, nvcam_record_status_t):
    """``nvcam_record_status``: state, the file's frame range (``first_seq..last_seq``), times,
    bytes, losses."""


class RecordStats(_Sized, nvcam_record_stats_t):
    """``nvcam_record_stats``: a camera's pre-roll cache and recording counters."""


class Recording:
    """A recording started by :meth:`nvcam.Camera.record`. Poll :meth:`status` (or :meth:`wait`);
    release with :meth:`release` or a ``with`` block (a running recording is then stopped and its
    file finished)."""

    def __init__(self, handle: int, path: str) -> None:
        self.handle = int(handle)
        self.path = path
        self._released = False

    def extend(self, post_ms: int) -> None:
        """Moves the end to now + ``post_ms`` (a second trigger while it runs)."""
        _check(lib.nvcam_record_extend(self.handle, int(post_ms)), "nvcam_record_extend")

    def stop(self) -> None:
        """Ends it now; the file is finished with what was taken (state ``stopped``)."""
        _check(lib.nvcam_record_stop(self.handle), "nvcam_record_stop")

    def status_struct(self) -> RecordStatus:
        s = RecordStatus()
        _check(lib.nvcam_record_status(self.handle, byref(s)), "nvcam_record_status")
        return s

    def status(self) -> Dict[str, Any]:
        """The status as a dict, with ``state_name``, ``file`` and ``error_text`` added."""
        d = self.status_struct().to_dict()
        d["state_name"] = RECORD_STATE_NAMES.get(d["state"], str(d["state"]))
        d["file"] = self.file()
        d["error_text"] = self.error()
        return d

    def file(self) -> str:
        """The file: its ``.part`` name while written, its final name when complete."""
        rc, text = _text(lib.nvcam_record_file, self.handle)
        _check(rc, "nvcam_record_file")
        return text

    def error(self) -> str:
        rc, text = _text(lib.nvcam_record_error, self.handle)
        _check(rc, "nvcam_record_error")
        return text

    def ended(self) -> bool:
        return self.status_struct().state in (RECORD_DONE, RECORD_STOPPED, RECORD_FAILED)

    def wait(self, timeout_s: float = 60.0, poll_s: float = 0.05) -> Dict[str, Any]:
        """Polls until the recording has ended (or ``timeout_s``); returns :meth:`status`. The
        camera must keep delivering meanwhile (a lossless camera needs its frames taken)."""
        end = time.monotonic() + timeout_s
        while not self.ended() and time.monotonic() < end:
            time.sleep(poll_s)
        return self.status()

    def release(self) -> None:
        """Releases the handle (a second release raises ``NVCAM_E_STALE_HANDLE``)."""
        self._released = True
        _check(lib.nvcam_record_release(self.handle), "nvcam_record_release")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._released:
            self._released = True
            lib.nvcam_record_release(self.handle)
        return False

    def __del__(self):
        try:
            if not self._released and not sys.is_finalizing():
                self._released = True
                code = lib.nvcam_record_release(self.handle)
                assert code in (OK, E_STALE_HANDLE)
        except Exception:  # noqa: BLE001
            pass

    def __repr__(self):
        return "Recording(0x%016x, %r)" % (self.handle, self.path)


def record(camera_handle: int, path: Union[str, os.PathLike], pre_ms: int, post_ms: int) -> Recording:
    out = c_uint64(0)
    p = os.fspath(path)
    _check(lib.nvcam_camera_record_start(camera_handle, p.encode(), int(pre_ms), int(post_ms), byref(out)), "nvcam_camera_record_start")
    return Recording(out.value, p)


def record_segments(camera_handle: int, folder: Union[str, os.PathLike], container: str, segment_ms: int, keep_count: int, keep_bytes: int) -> Recording:
    out = c_uint64(0)
    d = os.fspath(folder)
    _check(lib.nvcam_camera_record_segments(camera_handle, d.encode(), container.encode(), int(segment_ms), int(keep_count), int(keep_bytes), byref(out)), "nvcam_camera_record_segments")
    return Recording(out.value, d)


def record_stats(camera_handle: int) -> Dict[str, Any]:
    s = RecordStats()
    _check(lib.nvcam_camera_record_stats(camera_handle, byref(s)), "nvcam_camera_record_stats")
    return s.to_dict()
