"""The binding as a whole against the real library: the generated module and struct layouts,
version and status texts, bad handles and URLs, the log queue, the default device, shutdown.
Run by test_nvcam.py with the other test_nvcam_*.py."""

import ctypes
import unittest

from nvcam_testcase import URL, NvcamTestCase, nvcam, open_cam


class LibraryTest(NvcamTestCase):
    """Library-wide calls and errors."""

    def test_struct_sizes_match_c(self):
        self.assertEqual(ctypes.sizeof(nvcam.Config), 64)
        self.assertEqual(ctypes.sizeof(nvcam.CameraOptions), 80)
        self.assertEqual(ctypes.sizeof(nvcam.CameraStats), 232)
        self.assertEqual(ctypes.sizeof(nvcam.FrameInfo), 128)
        for t in (nvcam.Config, nvcam.CameraOptions, nvcam.CameraStats, nvcam.FrameInfo):
            self.assertEqual(t().struct_size, ctypes.sizeof(t), t.__name__)
        # The library's own defaults come back with the same struct_size.
        o = nvcam.CameraOptions()
        o.struct_size = 0
        self.assertEqual(nvcam.lib.nvcam_camera_options_init(ctypes.byref(o)), nvcam.OK)
        self.assertEqual(o.struct_size, 80)

    def test_binding_is_the_generated_module(self):
        # The layouts and prototypes come from nvcam._ffi (written by `cargo xtask gen`, checked
        # current by tests/api.rs); the public classes only add behaviour, never fields.
        from nvcam import _ffi

        structs = {
            nvcam.Config: _ffi.nvcam_config_t,
            nvcam.CameraOptions: _ffi.nvcam_camera_options_t,
            nvcam.CameraStats: _ffi.nvcam_camera_stats_t,
            nvcam.FrameInfo: _ffi.nvcam_frame_info_t,
            nvcam.GpuStats: _ffi.nvcam_gpu_stats_t,
            nvcam.Convert: _ffi.nvcam_convert_t,
        }
        for public, generated in structs.items():
            self.assertTrue(issubclass(public, generated), public.__name__)
            self.assertIs(public._fields_, generated._fields_, public.__name__)
            self.assertEqual(ctypes.sizeof(public), ctypes.sizeof(generated), public.__name__)
        for name, (restype, argtypes) in _ffi.PROTOTYPES.items():
            f = getattr(nvcam.lib, name)
            self.assertIs(f.restype, restype, name)
            self.assertEqual(list(f.argtypes), argtypes, name)
        for name in _ffi.__all__:
            self.assertIs(getattr(nvcam, name), getattr(_ffi, name), name)

    def test_gpu_stats_answer_with_or_without_a_gpu(self):
        s = nvcam.gpu_stats(-1)
        self.assertEqual(s["device"], -1)
        self.assertGreaterEqual(s["device_count"], 0)
        nvcam.gpu_drain(0)

    def test_version_and_status_text(self):
        self.assertEqual(nvcam.abi_version(), nvcam.ABI_VERSION)
        self.assertTrue(nvcam.version().startswith("nvcam "), nvcam.version())
        for code, name in nvcam.STATUS_NAMES.items():
            self.assertTrue(nvcam.status_text(code).startswith(name + ":"), (code, name))
        self.assertIn("unknown", nvcam.status_text(-8999))

    def test_bad_handles_raise_never_crash(self):
        with open_cam() as cam:
            self.assertNvcamError(nvcam.E_NULL_HANDLE, nvcam.Frame(0).release)
            self.assertNvcamError(nvcam.E_INVALID_HANDLE, nvcam.Frame(0x1234).release)
            self.assertNvcamError(nvcam.E_WRONG_HANDLE_TYPE, nvcam.Frame(cam.handle).release)
            with cam.get_frame(2000) as f:
                not_a_camera = nvcam.Camera(f.handle)
                not_a_camera._closed = True  # keep its __del__ from closing a frame handle
                self.assertNvcamError(nvcam.E_WRONG_HANDLE_TYPE, not_a_camera.stats)
                # A NULL out-pointer is an error code too.
                rc = nvcam.lib.nvcam_frame_info(f.handle, None)
                self.assertEqual(rc, nvcam.E_NULL_POINTER)
                # So is a struct_size too small for the struct.
                i = nvcam.FrameInfo()
                i.struct_size = 16
                self.assertEqual(nvcam.lib.nvcam_frame_info(f.handle, ctypes.byref(i)), nvcam.E_STRUCT_SIZE)

    def test_bad_url_raises_with_message(self):
        e = self.assertNvcamError(nvcam.E_UNSUPPORTED, open_cam, "nosuch://camera")
        self.assertIn("scheme", e.message)
        e = self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, open_cam, "testsrc://axb")
        self.assertIn("testsrc", e.message)
        e = self.assertNvcamError(nvcam.E_IO, open_cam, "/no/such/file.mp4")
        self.assertIn("file.mp4", e.message)
        e = self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, open_cam, URL, device=-7)
        self.assertIn("device", e.message)
        self.assertEqual(nvcam.registry_stats()[1], 0, "a failed open leaves nothing behind")

    def test_srt_keywords_reach_the_library_and_the_passphrase_no_text(self):
        # A passphrase libsrt would refuse (under 10 characters) is a bad option at the open, before
        # any packet; the message names the option, never the passphrase.
        nvcam.log_drain()
        e = self.assertNvcamError(
            nvcam.E_BAD_OPTION, open_cam, "srt://127.0.0.1:9", srt_passphrase="shortpw", srt_latency_ms=300
        )
        self.assertIn("passphrase", e.message)
        self.assertNotIn("shortpw", e.message)
        self.assertFalse(any("shortpw" in text for _, text in nvcam.log_drain()))
        e = self.assertNvcamError(nvcam.E_BAD_OPTION, open_cam, "srt://127.0.0.1:9", srt_pbkeylen=20)
        self.assertIn("pbkeylen", e.message)

    def test_option_values_with_separators_reach_the_library_whole(self):
        # A passphrase holding ';', '&', '=' and end spaces was split into a second "option" (quoted
        # in the error) and trimmed. Whole, this one is 9 characters, one short of libsrt's 10.
        pw = " a;b&c=d "
        self.assertEqual(nvcam.option_pair("passphrase", pw), 'passphrase=" a;b&c=d "')
        self.assertEqual(nvcam.option_pair("k", 'say "hi"'), 'k="say ""hi"""')
        self.assertEqual(nvcam.option_pair("k", r"C:\certs\ca.pem"), r"k=C:\certs\ca.pem")
        nvcam.log_drain()
        e = self.assertNvcamError(nvcam.E_BAD_OPTION, open_cam, "srt://127.0.0.1:9", srt_passphrase=pw)
        self.assertIn("(9 given)", e.message)
        self.assertNotIn("b&c", e.message)
        self.assertFalse(any("b&c" in text for _, text in nvcam.log_drain()))

    def test_failed_call_is_in_the_log_queue(self):
        nvcam.log_drain()
        with self.assertRaises(nvcam.NvcamError):
            open_cam("nosuch://camera")
        msgs = nvcam.log_drain()
        self.assertTrue(
            any(lvl <= nvcam.LOG_WARN and "nosuch" in text for lvl, text in msgs),
            msgs,
        )
        self.assertIsNone(nvcam.log_pop())

    def test_camera_open_defaults_to_gpu_0_when_there_is_one(self):
        has_gpu = nvcam.gpu_stats(-1)["device_count"] > 0
        self.assertEqual(nvcam.default_device(), 0 if has_gpu else nvcam.DEVICE_CPU)
        with nvcam.Camera.open(URL) as cam, cam.get_frame(2000) as f:
            self.assertEqual(f.info.memory, nvcam.MEMORY_DEVICE if has_gpu else nvcam.MEMORY_HOST)

    def test_zz_shutdown_invalidates_handles(self):
        # Named to run last; setUp re-initializes for any test that comes after anyway.
        lib = nvcam.Library()
        cam = open_cam()
        f = cam.get_frame(2000)
        c = f.clone()
        lib.shutdown()
        self.assertNvcamError(nvcam.E_STALE_HANDLE, f.release)
        self.assertNvcamError(nvcam.E_STALE_HANDLE, c.release)
        with self.assertRaises(nvcam.NvcamError) as cm:
            cam.stats()
        self.assertIn(cm.exception.code, (nvcam.E_STALE_HANDLE, nvcam.E_NOT_INITIALIZED))
        self.assertNvcamError(nvcam.E_NOT_INITIALIZED, open_cam)
        with nvcam.Library():  # a fresh session: old handles stay stale
            self.assertNvcamError(nvcam.E_STALE_HANDLE, f.release)
            with self.assertRaises(nvcam.NvcamError):
                cam.stats()
            with open_cam() as cam2, cam2.get_frame(2000):
                pass
        cam._closed = True


if __name__ == "__main__":
    unittest.main(verbosity=2)
