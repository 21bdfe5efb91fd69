"""The constants of the C API (generated in _ffi.py) and names for some of them."""

from __future__ import annotations


from ._ffi import *  # noqa: F401,F403 - every NVCAM_X of the header as X
from . import _ffi

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
