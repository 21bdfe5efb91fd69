"""Camera: a stream opened by the library."""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, Iterator, Optional, Union
from ctypes import byref, c_uint32, c_uint64
from ._ffi import DECODER_AUTO, DEVICE_CPU, E_CANCELLED, E_CLOSED, E_FAILED, E_STALE_HANDLE, E_TIMEOUT, INTEGRITY_EXACT, OK, OPEN_TLS_INSECURE, TRANSPORT_DEFAULT
from .constants import STATE_NAMES
from .structs import CameraOptions, CameraStats
from ._lib import lib
from .errors import NvcamError, _check, _error, _text
from .library import gpu_stats
from .frame import Frame
from . import record as _record

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
        max_picture_width: int = 0,
        max_picture_height: int = 0,
        tls_ca_file: Union[str, os.PathLike, None] = None,
        tls_pin_sha256: Optional[str] = None,
        tls_insecure: bool = False,
        srt_latency_ms: Optional[int] = None,
        srt_passphrase: Optional[str] = None,
        srt_pbkeylen: Optional[int] = None,
        srt_streamid: Optional[str] = None,
        publish: Optional[str] = None,
    ) -> Camera:
        """Opens ``url`` (``rtsp://…``, another FFmpeg URL, a file path, ``testsrc://WxH@FPS``).
        Zero timeouts mean the library's defaults. ``max_picture_width``/``max_picture_height``
        (0: 8192 each) bound the picture the camera takes: a larger stream fails the camera with
        the reason (``stats.pictures_refused``). ``ffmpeg_options`` is ``"k=v;k=v"`` or a dict.
        ``device`` None: GPU 0 when the library sees a GPU, else the CPU (:func:`default_device`);
        ``DEVICE_ANY`` (-2): each new connection on the GPU with the most decode sessions left.
        TLS cameras (``rtsps://``, ``https://``, ``rtmps://``) verify the server's certificate:
        ``tls_ca_file`` names a CA file (PEM) to trust instead of the system's store,
        ``tls_pin_sha256`` accepts exactly the certificate with that SHA-256 fingerprint (hex,
        colons allowed), ``tls_insecure=True`` verifies nothing (logged as a warning at every open).
        A refused certificate raises ``NVCAM_E_TLS_VERIFY`` with the reason.
        SRT cameras (``srt://host:port``, caller mode): ``srt_latency_ms`` is SRT's latency
        (retransmission budget; FFmpeg's ``latency`` option, in microseconds), ``srt_passphrase``
        (10-79 characters) and ``srt_pbkeylen`` (16, 24 or 32) encrypt, ``srt_streamid`` names the
        stream for the listener. A refused passphrase raises ``NVCAM_E_AUTH``.
        ``publish="NAME"`` publishes the camera for other processes of this user, which open
        ``nvcam://NAME`` (``"GROUP/NAME"``: the group's members' processes too, on Linux; see
        :meth:`publish`)."""
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
        o.max_picture_width = max_picture_width
        o.max_picture_height = max_picture_height
        if tls_insecure:
            o.flags |= OPEN_TLS_INSECURE
        if isinstance(ffmpeg_options, dict):
            ffmpeg_options = ";".join(option_pair(k, v) for k, v in ffmpeg_options.items())
        tls = [("ca_file", tls_ca_file and os.fspath(tls_ca_file)), ("tls_pin_sha256", tls_pin_sha256)]
        srt = [
            ("latency", None if srt_latency_ms is None else int(srt_latency_ms) * 1000),
            ("passphrase", srt_passphrase),
            ("pbkeylen", srt_pbkeylen),
            ("streamid", srt_streamid),
        ]
        given = [option_pair(k, v) for k, v in tls + srt if v is not None and v != ""]
        ffmpeg_options = ";".join([ffmpeg_options or ""] + given).strip(";")
        opts_bytes = ffmpeg_options.encode() if ffmpeg_options else None
        o.ffmpeg_options = opts_bytes  # kept alive by opts_bytes until the call returns
        out = c_uint64(0)
        _check(lib.nvcam_camera_open(str(url).encode(), byref(o), byref(out)), "nvcam_camera_open")
        cam = cls(out.value)
        if publish is not None:
            try:
                cam.publish(publish)
            except BaseException:
                cam.close()
                raise
        return cam

    def publish(self, name: str, hold_quota: int = 0, max_consumers: int = 0) -> None:
        """Publishes this camera as ``name`` for other processes of this user: they open
        ``nvcam://NAME`` and get its frames decoded once here, mapped there without a copy. Each
        holds at most ``hold_quota`` frames (0: 3), at most ``max_consumers`` attach (0: 8).
        Linux and Windows."""
        _check(lib.nvcam_camera_publish(self.handle, name.encode(), int(hold_quota), int(max_consumers)), "nvcam_camera_publish")

    def unpublish(self, timeout_ms: int = 2000) -> None:
        """Ends the publication: attached processes are detached (they keep trying to attach)."""
        _check(lib.nvcam_camera_unpublish(self.handle, int(timeout_ms)), "nvcam_camera_unpublish")

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

    def record_cache(self, pre_ms: int, max_bytes: int = 0) -> None:
        """Keeps the last ``pre_ms`` of packets (at most ``max_bytes``, 0 = 32 MiB) so that
        :meth:`record` can reach back before its trigger. ``0, 0`` turns it off."""
        _check(lib.nvcam_camera_record_cache(self.handle, int(pre_ms), int(max_bytes)), "nvcam_camera_record_cache")

    def record(self, path: Union[str, os.PathLike], pre_ms: int = 0, post_ms: int = 0) -> "_record.Recording":
        """Records the stream (no re-encode) into ``path`` (``.mkv`` or ``.mp4``) from the key frame
        at or before now - ``pre_ms`` to now + ``post_ms``; see docs/recording.md."""
        return _record.record(self.handle, path, pre_ms, post_ms)

    def record_segments(self, folder: Union[str, os.PathLike], container: str = "mp4", segment_ms: int = 60000,
                        keep_count: int = 0, keep_bytes: int = 0) -> "_record.Recording":
        """Records continuously into files of about ``segment_ms`` in ``folder``, named by UTC time,
        the oldest deleted beyond ``keep_count`` files or ``keep_bytes`` (0 = no limit); until stopped."""
        return _record.record_segments(self.handle, folder, container, segment_ms, keep_count, keep_bytes)

    def record_stats(self) -> Dict[str, Any]:
        """The pre-roll cache's size and the camera's recording counters."""
        return _record.record_stats(self.handle)

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


def option_pair(key: str, value: Any) -> str:
    """One ``key=value`` of an FFmpeg option string, the value written so that nvcam reads it back
    as given: in double quotes (``""`` for a ``"`` inside) when it holds ``;``, ``&``, ``=``, a
    newline or a ``"``, or starts or ends with white space; as it is otherwise."""
    v = str(value)
    if any(c in v for c in ';&="\n\r') or v != v.strip():
        v = '"' + v.replace('"', '""') + '"'
    return "%s=%s" % (key, v)


def default_device() -> int:
    """0 when the library sees a usable GPU, else ``DEVICE_CPU``: what :meth:`Camera.open` uses
    when no ``device`` is given."""
    try:
        return 0 if gpu_stats(-1).get("device_count", 0) > 0 else DEVICE_CPU
    except NvcamError:
        return DEVICE_CPU


def registry_stats(camera=0):
    """``(handles of camera, handles of all cameras)`` the host holds now."""
    cam = camera.handle if isinstance(camera, Camera) else int(camera)
    per, total = c_uint32(0), c_uint64(0)
    _check(lib.nvcam_registry_stats(cam, byref(per), byref(total)), "nvcam_registry_stats")
    return per.value, total.value
