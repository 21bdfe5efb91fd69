"""What the binding's test modules (test_nvcam_*.py) share: the library found through NVCAM_LIB,
a camera on the built-in test pattern, and a TestCase that initializes the library and checks
errors the way the binding raises them."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nvcam  # noqa: E402

URL = "testsrc://64x48@30"


def open_cam(url=URL, **kw):
    kw.setdefault("device", nvcam.DEVICE_CPU)
    return nvcam.Camera.open(url, **kw)


class NvcamTestCase(unittest.TestCase):
    def setUp(self):
        nvcam.Library()  # a no-op while initialized; re-initializes after the shutdown test

    def assertNvcamError(self, code, fn, *args, **kw):
        with self.assertRaises(nvcam.NvcamError) as cm:
            fn(*args, **kw)
        e = cm.exception
        self.assertEqual(e.code, code, str(e))
        self.assertEqual(e.name, nvcam.STATUS_NAMES[code])
        self.assertTrue(e.message, "an error carries the library's message")
        self.assertIn(e.name, str(e))
        return e

    def _live(self, cam):
        return nvcam.registry_stats(cam)[0]

