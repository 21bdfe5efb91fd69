"""Status codes as exceptions, and the text calls."""

from __future__ import annotations

from ctypes import create_string_buffer
from ._ffi import E_BUFFER_TOO_SMALL, OK
from .constants import STATUS_NAMES
from ._lib import lib


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
