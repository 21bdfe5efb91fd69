"""Tests of the ctypes binding against the real library (stdlib unittest only).

    NVCAM_LIB=target/release/libnvcam.so python3 bindings/python/test_nvcam.py

`cargo test --test bindings` runs this with NVCAM_LIB pointing at the cdylib it just built.
Every camera here is the built-in test pattern on the CPU, so no network and no GPU are needed.
"""

import ctypes
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nvcam  # noqa: E402

URL = "testsrc://64x48@30"


def open_cam(url=URL, **kw):
    kw.setdefault("device", nvcam.DEVICE_CPU)
    return nvcam.Camera.open(url, **kw)


class NvcamTest(unittest.TestCase):
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

    def test_struct_sizes_match_c(self):
        self.assertEqual(ctypes.sizeof(nvcam.Config), 64)
        self.assertEqual(ctypes.sizeof(nvcam.CameraOptions), 80)
        self.assertEqual(ctypes.sizeof(nvcam.CameraStats), 168)
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

    def test_to_numpy_converts_on_the_cpu(self):
        self.assertEqual(ctypes.sizeof(nvcam.Convert), 112)
        with open_cam() as cam:
            with cam.get_frame(2000) as f:
                if nvcam._np is None:
                    with self.assertRaises(RuntimeError):
                        f.to_numpy(nvcam.FORMAT_BGRA8)
                    return
                bgra = f.to_numpy(nvcam.FORMAT_BGRA8)
                self.assertEqual(bgra.shape, (48, 64, 4))
                self.assertTrue((bgra[:, :, 3] == 255).all())
                gray = f.to_numpy(nvcam.FORMAT_GRAY8, range=nvcam.RANGE_FULL)
                self.assertTrue((gray == f.to_numpy_y()).all(), "full-range gray is the Y plane")
                t = f.to_numpy(nvcam.FORMAT_RGB_F16_PLANAR, width=32, height=32, letterbox=True, pad=(114, 114, 114))
                self.assertEqual((t.shape, t.dtype), ((3, 32, 32), nvcam._np.float16))
                self.assertAlmostEqual(float(t[0, 0, 0]), 114 / 255, places=3)

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

    def test_open_testsrc_and_get_frames(self):
        with open_cam() as cam:
            seqs = []
            for _ in range(5):
                with cam.get_frame(2000) as f:
                    i = f.info
                    self.assertEqual((i.width, i.height), (64, 48))
                    self.assertEqual(i.format, nvcam.FORMAT_NV12)
                    self.assertEqual(i.memory, nvcam.MEMORY_HOST)
                    self.assertEqual(i.device, -1)
                    self.assertEqual(i.nv12_size, 64 * 48 * 3 // 2)
                    self.assertEqual(i.camera, cam.handle)
                    self.assertGreaterEqual(i.pitch, 64)
                    self.assertNotEqual(i.y_ptr, 0)
                    self.assertEqual(i.uv_ptr - i.y_ptr, i.pitch * 48)
                    px = f.to_numpy_nv12()
                    if nvcam._np is None:
                        self.assertIsInstance(px, bytes)
                        self.assertEqual(len(px), i.nv12_size)
                    else:
                        self.assertEqual(px.shape, (72, 64))
                    # The luma plane read in place equals the packed copy's first rows.
                    raw = ctypes.string_at(i.y_ptr, 64)
                    self.assertEqual(bytes(f.copy_nv12()[:64]), raw)
                    seqs.append(i.seq)
            self.assertEqual(seqs, sorted(seqs))
            self.assertEqual(len(set(seqs)), 5, "every get_frame hands out a new frame")
            s = cam.stats()
            self.assertEqual(s["state"], nvcam.STATE_STREAMING)
            self.assertEqual(s["state_name"], "STREAMING")
            self.assertEqual((s["width"], s["height"]), (64, 48))
            self.assertEqual(s["frames_delivered"], 5)
            self.assertGreaterEqual(s["frames_decoded"], 5)
            self.assertEqual(s["device"], -1)
            self.assertEqual(s["live_handles"], 0)
            self.assertEqual(s["pool_slots_total"], 4)
            self.assertNotIn("reserved", s)
            self.assertEqual(cam.last_error(), "")

    def test_copy_into_caller_buffer_with_pitch(self):
        with open_cam() as cam, cam.get_frame(2000) as f:
            packed = f.copy_nv12()
            buf = bytearray(80 * 72)
            f.copy_nv12_into(buf, dst_pitch=80)
            for row in range(72):
                self.assertEqual(buf[row * 80 : row * 80 + 64], packed[row * 64 : row * 64 + 64])
            e = self.assertNvcamError(nvcam.E_BUFFER_TOO_SMALL, f.copy_nv12_into, bytearray(100))
            self.assertIn("nvcam_frame_copy_nv12", e.message)

    def test_clone_outlives_original(self):
        with open_cam() as cam:
            f = cam.get_frame(2000)
            c = f.clone()
            self.assertNotEqual(c.handle, f.handle)
            self.assertEqual(nvcam.registry_stats(cam), (2, nvcam.registry_stats()[1]))
            self.assertEqual(cam.stats()["live_handles"], 2)
            before = f.copy_nv12()
            seq = f.info.seq
            f.release()
            for _ in range(6):  # more frames than the pool has slots: the clone's slot is kept
                cam.get_frame(2000).release()
            self.assertEqual(c.info.seq, seq)
            self.assertEqual(c.copy_nv12(), before)
            c.release()
            self.assertEqual(nvcam.registry_stats(cam)[0], 0)

    def test_double_release_raises_stale_handle(self):
        with open_cam() as cam:
            f = cam.get_frame(2000)
            f.release()
            e = self.assertNvcamError(-8013, f.release)
            self.assertEqual(e.name, "NVCAM_E_STALE_HANDLE")
            self.assertIn("nvcam_frame_release", e.message)
            self.assertNvcamError(nvcam.E_STALE_HANDLE, lambda: f.info)
            self.assertNvcamError(nvcam.E_STALE_HANDLE, f.clone)
            with f:  # leaving a with block after an explicit release is not an error
                pass
            # The camera is unharmed.
            cam.get_frame(2000).release()

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

    def test_timeout_and_try_get_frame(self):
        with open_cam("testsrc://64x48@1") as cam:
            cam.get_frame(3000).release()
            t = time.monotonic()
            e = self.assertNvcamError(nvcam.E_TIMEOUT, cam.get_frame, 50)
            self.assertLess(time.monotonic() - t, 0.9)
            self.assertIn("nvcam_camera_get_frame", e.message)
            self.assertIsNone(cam.try_get_frame(10))

    def test_cancel_wait_wakes_a_blocked_get_frame(self):
        import threading

        # Nothing listens on the discard port: the camera never has a frame.
        with open_cam("rtsp://127.0.0.1:9/never", flags=nvcam.OPEN_ASYNC) as cam:
            got = []

            def wait():
                try:
                    cam.get_frame(30000)
                    got.append("frame")
                except nvcam.NvcamError as e:
                    got.append((e.code, time.monotonic()))

            t = threading.Thread(target=wait)
            t.start()
            time.sleep(0.3)
            self.assertEqual(got, [], "a wait on a camera with no frames returned early")
            t0 = time.monotonic()
            cam.cancel_wait()
            t.join(10)
            self.assertEqual(len(got), 1)
            self.assertEqual(got[0][0], nvcam.E_CANCELLED)
            self.assertLess(got[0][1] - t0, 0.1)
            # Only waits in progress: the next one runs to its timeout.
            self.assertNvcamError(nvcam.E_TIMEOUT, cam.get_frame, 100)

    def test_reconnect_keeps_frames(self):
        with open_cam() as cam:
            f = cam.get_frame(2000)
            px = f.copy_nv12()
            cam.reconnect()
            g = cam.get_frame(3000)
            self.assertEqual(f.copy_nv12(), px)
            f.release()
            g.release()
            deadline = time.monotonic() + 5
            while cam.stats()["reconnects"] < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertGreaterEqual(cam.stats()["reconnects"], 1)
            cam.get_frame(3000).release()

    def test_record_an_event_clip(self):
        import shutil
        import subprocess
        import tempfile

        if shutil.which("ffmpeg") is None:
            self.skipTest("no ffmpeg CLI to make an H.264 clip")
        d = tempfile.mkdtemp(prefix="nvcam-rec-")
        src = os.path.join(d, "src.mp4")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30",
                        "-frames:v", "60", "-pix_fmt", "yuv420p", "-c:v", "libx264", "-g", "15", src], check=True)
        with open_cam(src, flags=nvcam.OPEN_LOSSLESS | nvcam.OPEN_NO_PACING) as cam:
            cam.record_cache(2000)
            for _ in range(20):
                cam.get_frame(3000).release()
            self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, cam.record, os.path.join(d, "x.avi"), 0, 100)
            with cam.record(os.path.join(d, "clip.mkv"), pre_ms=500, post_ms=300) as rec:
                self.assertEqual(rec.status()["state_name"], "running")
                deadline = time.monotonic() + 10
                while not rec.ended() and time.monotonic() < deadline:
                    f = cam.try_get_frame(100)
                    if f is not None:
                        f.release()
                st = rec.status()
                self.assertEqual(st["state_name"], "done", st["error_text"])
                self.assertTrue(st["file"].endswith("clip.mkv") and os.path.exists(st["file"]), st)
                self.assertGreater(st["frames"], 15)
                self.assertEqual(st["last_seq"] - st["first_seq"] + 1, st["frames"])
                self.assertGreaterEqual(cam.record_stats()["recordings"], 1)
            self.assertNvcamError(nvcam.E_STALE_HANDLE, rec.release)
        shutil.rmtree(d, ignore_errors=True)

    def test_close_invalidates_frames_and_camera(self):
        cam = open_cam()
        f = cam.get_frame(2000)
        cam.close()
        self.assertNvcamError(nvcam.E_STALE_HANDLE, f.release)
        self.assertNvcamError(nvcam.E_STALE_HANDLE, cam.stats)
        self.assertNvcamError(nvcam.E_STALE_HANDLE, cam.close)
        with cam:  # leaving a with block on a closed camera is fine
            pass

    def test_frame_keeps_its_camera_open(self):
        f = open_cam().get_frame(2000)  # the Camera object is unreferenced but for the frame
        self.assertEqual(len(f.copy_nv12()), f.info.nv12_size)
        c = f.clone()
        f.release()
        self.assertEqual(len(c.copy_nv12()), c.info.nv12_size)
        cam = c._camera
        c.release()
        cam.close()

    def test_iterate_camera(self):
        with open_cam() as cam:
            seen = 0
            for f in cam:
                with f:
                    seen += 1
                if seen == 3:
                    break
            self.assertEqual(seen, 3)

    # ---- latest of N, batches, zero-copy (issue 12) ----

    def _live(self, cam):
        return nvcam.registry_stats(cam)[0]

    def test_get_frames_latest_of_n(self):
        with open_cam() as a, open_cam("testsrc://96x64@30") as b:
            with nvcam.get_frames([a, b], 3000) as batch:
                self.assertTrue(batch.complete)
                self.assertEqual(batch.status, nvcam.OK)
                self.assertEqual([f.info.camera for f in batch], [a.handle, b.handle])
                self.assertEqual(self._live(a), 1)
            self.assertEqual(self._live(a), 0, "leaving the with block releases the batch")
            e = self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, nvcam.get_frames, [a, a], 100)
            self.assertIn("repeats", e.message)
            self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, nvcam.get_frames, [], 100)
            self.assertEqual(self._live(a), 0, "a refused call takes no frame")

    def test_get_frames_partial_batch(self):
        with open_cam() as a, open_cam("rtsp://127.0.0.1:9/none", flags=nvcam.OPEN_ASYNC, open_timeout_ms=200) as silent:
            t = time.monotonic()
            batch = nvcam.get_frames([a, silent], 300)
            self.assertLess(time.monotonic() - t, 2.0)
            self.assertEqual(batch.status, nvcam.E_TIMEOUT)
            self.assertEqual(batch.error.code, nvcam.E_TIMEOUT)
            self.assertIsNotNone(batch[0])
            self.assertIsNone(batch[1])
            batch.release()
            self.assertEqual(self._live(a), 0)
            self.assertNvcamError(nvcam.E_TIMEOUT, nvcam.get_frames, [a, silent], 300, partial=False)
            self.assertEqual(self._live(a), 0, "partial=False releases what came before raising")

    def test_convert_batch_equals_single_conversions(self):
        with open_cam() as a, open_cam("testsrc://96x64@30") as b:
            fa, fb = a.get_frame(2000), b.get_frame(2000)
            spec = nvcam.Frame.spec(nvcam.FORMAT_BGR8, 40, 30, letterbox=True, pad=(114, 114, 114))
            n = fa.convert_size(spec)
            singles = []
            for f in (fa, fb, fa):
                buf = bytearray(n)
                f.convert_into(spec, buf, n)
                singles.append(bytes(buf))
            out = bytearray(3 * n)
            nvcam.convert_batch([fa, fb, fa], nvcam.FORMAT_BGR8, out, width=40, height=30, letterbox=True, pad=(114, 114, 114))
            self.assertEqual(bytes(out), b"".join(singles))
            # frame.convert into a caller buffer gives the same bytes
            one = fb.convert(nvcam.FORMAT_BGR8, out=bytearray(n), width=40, height=30, letterbox=True, pad=(114, 114, 114))
            self.assertEqual(bytes(one), singles[1])
            self.assertNvcamError(nvcam.E_BUFFER_TOO_SMALL, nvcam.convert_batch, [fa, fb], nvcam.FORMAT_BGR8, bytearray(2 * n - 1), width=40, height=30)
            self.assertNvcamError(nvcam.E_INVALID_ARGUMENT, nvcam.convert_batch, [fa, fb], nvcam.FORMAT_BGR8, out)
            fa.release()
            fb.release()

    def test_convert_spec_cache_never_reuses_the_wrong_struct(self):
        # Frame.convert and convert_batch share cached Convert structs (issue 23): every call must
        # give the bytes of a fresh struct built from its own arguments, in any order.
        fmt = nvcam.FORMAT_BGR8
        pad = [114, 114, 114]  # a list: keyed by its values at the time of the call
        specs = [
            dict(width=40, height=40, letterbox=True, pad=(114, 114, 114)),
            dict(width=40, height=40),
            dict(width=40, height=40, letterbox=True, pad=(0, 0, 0)),
            dict(width=40, height=40, letterbox=True, pad=pad),
            dict(width=40, height=40, letterbox=1, pad=(114.0, 114, 114)),  # equal values, equal struct
            dict(width=40, height=40, roi=(8, 8, 32, 24)),
            dict(width=40, height=40, range=nvcam.RANGE_FULL),
            dict(width=40, height=40),
        ]
        with open_cam() as cam, cam.get_frame(2000) as f:
            def fresh(kw):
                spec = nvcam.Frame.spec(fmt, **kw)
                buf = bytearray(f.convert_size(spec))
                f.convert_into(spec, buf, len(buf))
                return bytes(buf)

            n = len(fresh(specs[0]))
            for _ in range(2):
                for kw in specs + list(reversed(specs)):
                    self.assertEqual(bytes(f.convert(fmt, out=bytearray(n), **kw)), fresh(kw), kw)
            self.assertNotEqual(fresh(specs[0]), fresh(specs[1]), "letterbox shows the pad colour")
            # A list changed in place after a call is read again, not taken from the cache.
            before = bytes(f.convert(fmt, out=bytearray(n), **specs[3]))
            pad[:] = [0, 0, 0]
            after = bytes(f.convert(fmt, out=bytearray(n), **specs[3]))
            self.assertEqual(after, fresh(specs[3]))
            self.assertNotEqual(before, after)
            # Frame.spec hands out a new struct each time: changing one changes no later call.
            mine = nvcam.Frame.spec(fmt, **specs[1])
            self.assertIsNot(mine, nvcam.Frame.spec(fmt, **specs[1]))
            mine.width, mine.flags = 8, nvcam.CONVERT_LETTERBOX
            self.assertEqual(bytes(f.convert(fmt, out=bytearray(n), **specs[1])), fresh(specs[1]))
            # convert_batch: the same spec cache, alternated with the single calls.
            for kw in specs[:3] + specs[:3]:
                out = bytearray(2 * n)
                nvcam.convert_batch([f, f], fmt, out, **kw)
                self.assertEqual(bytes(out), fresh(kw) * 2, kw)
            if nvcam._np is not None:  # host numpy arrays, and numpy values among the arguments
                np = nvcam._np
                a = np.empty(n, dtype=np.uint8)
                kw = dict(width=40, height=40, letterbox=True, pad=np.array([114, 0, 114]))
                self.assertEqual(f.convert(fmt, out=a, **kw).tobytes(), fresh(kw))
                kw["pad"][:] = [0, 114, 0]
                self.assertEqual(f.convert(fmt, out=a, **kw).tobytes(), fresh(kw))
                self.assertEqual(f.convert(fmt, out=a, width=40, height=40).tobytes(), fresh(specs[1]))
            # Bounded: many distinct specs never grow the cache past its limit.
            for w in range(2, 2 + 2 * nvcam._SPEC_CACHE_MAX, 2):
                f.convert(fmt, out=bytearray(f.convert_size(nvcam.Frame.spec(fmt, width=w, height=8))), width=w, height=8)
            self.assertLessEqual(len(nvcam._spec_cache), nvcam._SPEC_CACHE_MAX)
            self.assertEqual(bytes(f.convert(fmt, out=bytearray(n), **specs[0])), fresh(specs[0]))

    def test_convert_batch_from_many_threads(self):
        # Each thread fills a handle array of its own while other threads' calls run (GIL released).
        import threading

        with open_cam() as a, open_cam("testsrc://96x64@30") as b:
            fa, fb = a.get_frame(2000), b.get_frame(2000)
            kw = dict(width=40, height=40, letterbox=True, pad=(114, 114, 114))
            n = fa.convert_size(nvcam.Frame.spec(nvcam.FORMAT_BGR8, **kw))
            want = {fr.handle: bytes(fr.convert(nvcam.FORMAT_BGR8, out=bytearray(n), **kw)) for fr in (fa, fb)}
            self.assertNotEqual(want[fa.handle], want[fb.handle])
            errors = []

            def work(frames):
                try:
                    for _ in range(30):
                        out = bytearray(len(frames) * n)
                        nvcam.convert_batch(frames, nvcam.FORMAT_BGR8, out, **kw)
                        if bytes(out) != b"".join(want[fr.handle] for fr in frames):
                            errors.append("wrong bytes for %r" % (frames,))
                except Exception as e:  # noqa: BLE001
                    errors.append(repr(e))

            threads = [threading.Thread(target=work, args=(fs,)) for fs in ([fa, fa, fa], [fb, fb], [fa, fb, fa, fb])]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            fa.release()
            fb.release()

    def test_cuda_destinations_without_a_gpu(self):
        # The arguments that reach nvcam_frame_convert / nvcam_frames_convert_batch for a CUDA
        # destination: a stand-in torch.Tensor (read through its attributes), and a generic
        # __cuda_array_interface__ exporter. The C calls are replaced by recorders.
        calls = []

        def rec_one(h, ref, ptr, pitch, size, stream):
            c = ref._obj
            calls.append((h, c.dst_memory, c.dst_device, c.width, c.flags, ptr, pitch, size, stream))
            return nvcam.OK

        def rec_batch(arr, n, ref, ptr, item_stride, size, stream):
            c = ref._obj
            calls.append((tuple(arr[:n]), c.dst_memory, c.dst_device, c.width, c.flags, ptr, item_stride, size, stream))
            return nvcam.OK

        class Cai:
            def __init__(self, strides=None, stream=None):
                self.__cuda_array_interface__ = {"shape": (2, 3, 4), "typestr": "<f2", "data": (0xA000, False),
                                                 "strides": strides, "version": 3, "stream": stream}

        saved = nvcam._c_frame_convert, nvcam._c_frames_convert_batch
        nvcam._c_frame_convert, nvcam._c_frames_convert_batch = rec_one, rec_batch
        try:
            with open_cam() as cam, cam.get_frame(2000) as f:
                fmt = nvcam.FORMAT_RGB_F16_PLANAR
                h = f.handle
                o = Cai()
                self.assertIs(f.convert(fmt, out=o, width=4, height=3), o)
                # device: the frame's (a CPU frame says -1), stream: the interface's (0 when none)
                self.assertEqual(calls[-1], (h, nvcam.MEMORY_DEVICE, f.info.device, 4, 0, 0xA000, 0, 48, 0))
                f.convert(fmt, out=Cai(stream=7), width=4, height=3, letterbox=True)
                self.assertEqual(calls[-1], (h, nvcam.MEMORY_DEVICE, f.info.device, 4, 1, 0xA000, 0, 48, 7))
                f.convert(fmt, out=Cai(stream=7), stream=9, width=4, height=3)
                self.assertEqual(calls[-1][-1], 9, "an explicit stream wins")
                with self.assertRaises(ValueError):
                    f.convert(fmt, out=Cai(strides=(2, 16, 4)), width=4, height=3)
                nvcam.convert_batch([f, h], fmt, Cai(stream=5), item_stride=16, width=4, height=3)
                self.assertEqual(calls[-1], ((h, h), nvcam.MEMORY_DEVICE, 0, 4, 0, 0xA000, 16, 48, 5))

                if "torch" in sys.modules:
                    return  # a real torch: test_gpu.py covers it
                torch, streams = self._fake_torch()
                sys.modules["torch"] = torch
                try:
                    t = torch.Tensor(0xB000, 600, device=1)
                    self.assertIs(f.convert(fmt, out=t, width=4, height=3), t)
                    self.assertEqual(calls[-1], (h, nvcam.MEMORY_DEVICE, 1, 4, 0, 0xB000, 0, 600, 0x5101))
                    streams[1] = 0x5102  # what torch.cuda.stream(side) does to the current stream
                    f.convert(fmt, out=t, width=4, height=3, letterbox=True)
                    self.assertEqual(calls[-1], (h, nvcam.MEMORY_DEVICE, 1, 4, 1, 0xB000, 0, 600, 0x5102))
                    f.convert(fmt, out=t, stream=3, width=4, height=3)
                    self.assertEqual(calls[-1][-1], 3)
                    nvcam.convert_batch([h, f, h], fmt, t, width=4, height=3)
                    self.assertEqual(calls[-1], ((h, h, h), nvcam.MEMORY_DEVICE, 1, 4, 0, 0xB000, 0, 600, 0x5102))
                    self.assertEqual(t.cai_reads, 0, "a torch tensor is read through its attributes")
                    n = len(calls)
                    with self.assertRaises(ValueError):
                        f.convert(fmt, out=torch.Tensor(0xB000, 600, contiguous=False), width=4, height=3)
                    with self.assertRaises(RuntimeError):
                        nvcam.convert_batch([f], fmt, torch.Tensor(0xB000, 600, requires_grad=True), width=4, height=3)
                    self.assertEqual(len(calls), n, "no call for a non-contiguous or grad-requiring tensor")
                    # A CPU tensor is no CUDA destination (and no host buffer either).
                    with self.assertRaises(TypeError):
                        f.convert(fmt, out=torch.Tensor(0xB000, 600, cuda=False), width=4, height=3)
                    self.assertEqual(len(calls), n)
                finally:
                    del sys.modules["torch"]
                    nvcam._kinds.clear()
        finally:
            nvcam._c_frame_convert, nvcam._c_frames_convert_batch = saved

    @staticmethod
    def _fake_torch():
        """A module named torch with what the binding reads of a CUDA tensor and its stream."""
        import types

        torch = types.ModuleType("torch")
        torch.strided, torch.sparse_coo = object(), object()
        streams = {0: 0x5100, 1: 0x5101}

        class Tensor:
            __module__ = "torch"

            def __init__(self, ptr, nbytes, device=0, contiguous=True, requires_grad=False, cuda=True):
                self._ptr, self.nbytes, self._device, self._contiguous = ptr, nbytes, device, contiguous
                self.requires_grad, self.is_cuda, self.layout, self.cai_reads = requires_grad, cuda, torch.strided, 0

            def data_ptr(self):
                return self._ptr

            def is_contiguous(self):
                return self._contiguous

            def get_device(self):
                return self._device if self.is_cuda else -1

            @property
            def __cuda_array_interface__(self):
                self.cai_reads += 1
                if not self.is_cuda:
                    raise AttributeError("not a CUDA tensor")
                return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self._ptr, False), "version": 2}

        torch.Tensor = Tensor
        torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: streams[d])
        return torch, streams

    def _dl_read(self, capsule):
        """A pure-ctypes DLPack consumer: the tensor's fields and its bytes, row by row."""
        p = nvcam._capsule_pointer(id(capsule), b"dltensor")
        self.assertTrue(p)
        m = ctypes.cast(p, ctypes.POINTER(nvcam._DLManagedTensor)).contents
        t = m.dl_tensor
        shape = [t.shape[i] for i in range(t.ndim)]
        strides = [t.strides[i] for i in range(t.ndim)]
        rows = b"".join(ctypes.string_at(t.data + r * strides[0], shape[1]) for r in range(shape[0]))
        return m, (t.device.device_type, t.device.device_id), (t.dtype.code, t.dtype.bits, t.dtype.lanes), shape, strides, rows

    def test_dlpack_host_frame_holds_its_own_handle(self):
        with open_cam() as cam:
            f = cam.get_frame(2000)
            info = f.info
            want = f.copy_nv12()
            self.assertEqual(f.__dlpack_device__(), (1, 0))
            cap = f.__dlpack__()
            self.assertEqual(self._live(cam), 2, "the tensor holds a clone")
            f.release()
            m, dev, dtype, shape, strides, rows = self._dl_read(cap)
            self.assertEqual((dev, dtype), ((1, 0), (1, 8, 1)))
            self.assertEqual(shape, [info.rows, info.row_bytes])
            self.assertEqual(strides, [info.pitch, 1])
            self.assertEqual(rows, want, "the DLPack tensor's bytes are the frame's, after the frame's release")
            # Consumed: the consumer renames the capsule and calls the deleter when done.
            set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))
            self.assertEqual(set_name(id(cap), b"used_dltensor"), 0)
            m.deleter(ctypes.pointer(m))
            self.assertEqual(self._live(cam), 0, "the deleter released the clone")
            del cap
            self.assertEqual(self._live(cam), 0, "a consumed capsule does not release twice")
            # Never consumed: the capsule's destructor calls the deleter.
            with cam.get_frame(2000) as g:
                cap = g.__dlpack__()
                self.assertEqual(self._live(cam), 2)
            self.assertEqual(self._live(cam), 1)
            del cap
            self.assertEqual(self._live(cam), 0, "an unconsumed capsule released its clone")

    def test_planes_and_numpy_zero_copy(self):
        with open_cam() as cam:
            with cam.get_frame(2000) as f:
                info = f.info
                y, uv = f.planes()
                self.assertEqual((y.ptr, y.shape, y.strides), (info.y_ptr, (48, 64), (info.pitch, 1)))
                self.assertEqual((uv.ptr, uv.shape, uv.strides), (info.uv_ptr, (24, 32, 2), (info.pitch, 2, 1)))
                self.assertFalse(hasattr(y, "__cuda_array_interface__"), "host planes are not CUDA arrays")
                self.assertFalse(hasattr(f, "__cuda_array_interface__"))
                self.assertEqual(self._live(cam), 2, "the planes share one clone")
                want = f.copy_nv12()
                if nvcam._np is None:
                    del y, uv
                    self.assertEqual(self._live(cam), 1)
                    self.skipTest("numpy is not installed (python3-numpy): the pure-ctypes DLPack test covers the protocol")
                np = nvcam._np
                a = np.asarray(y)
                self.assertEqual(a.shape, (48, 64))
                self.assertTrue((a == f.to_numpy_y()).all())
                self.assertEqual(np.asarray(uv).tobytes(), want[64 * 48:])
                if hasattr(np, "from_dlpack"):
                    d = np.from_dlpack(f)
                    self.assertEqual(d.tobytes(), want)
                    self.assertEqual(d.ctypes.data, info.y_ptr, "zero copy: the array is the frame's memory")
            del a, y, uv
            if hasattr(np, "from_dlpack"):
                self.assertEqual(self._live(cam), 1, "only the DLPack array holds a handle now")
                del d
            self.assertEqual(self._live(cam), 0)

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
