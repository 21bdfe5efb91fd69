"""numpy, where installed: the conversions and views use it when it is there."""

try:  # optional: Frame.to_numpy_nv12 returns bytes without it
    import numpy as _np
except ImportError:  # pragma: no cover - depends on the environment
    _np = None
