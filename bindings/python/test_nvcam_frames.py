"""Cameras and frames through the binding: get, copy, clone, release, waits and cancel,
reconnects, close, iteration; NumPy and DLPack views of host frames. Every camera is the built-in
test pattern on the CPU. Run by test_nvcam.py with the other test_nvcam_*.py."""

import ctypes
import os
import subprocess
import sys
import time
import unittest

from nvcam_testcase import NvcamTestCase, nvcam, open_cam


class FrameTest(NvcamTestCase):
    """One camera, its frames and their views."""

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


if __name__ == "__main__":
    unittest.main(verbosity=2)


class SharedCameraTest(NvcamTestCase):
    """A camera published by this process and attached by another Python process."""

    def test_another_process_reads_the_published_frames_through_dlpack(self):
        name = "py-%d" % os.getpid()
        with open_cam(publish=name) as cam:
            with cam.get_frame(2000):
                pass
            child = (
                "import nvcam\n"
                "nvcam.Library()\n"
                "cam = nvcam.Camera.open('nvcam://%s', device=nvcam.DEVICE_CPU)\n"
                "with cam.get_frame(3000) as f:\n"
                "    dev = f.__dlpack_device__()\n"
                "    cap = f.__dlpack__()\n"
                "    n = len(f.copy_nv12())\n"
                "    print(f.info.seq, f.info.width, f.info.height, n, dev[0], cam.stats()['source_state'])\n"
                "del cap\n"
                "cam.close()\n" % name
            )
            env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(nvcam.__file__ + "/..")))
            out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            seq, w, h, n, dl_device, state = (int(v) for v in out.stdout.split())
            self.assertGreater(seq, 0)
            self.assertEqual((w, h, n), (64, 48, 64 * 48 * 3 // 2))
            self.assertEqual(dl_device, 1, "a DLPack tensor on the mapped host memory (kDLCPU)")
            self.assertEqual(state, nvcam.STATE_STREAMING)
            self.assertEqual(cam.stats()["consumers"], 0, "the other process detached when it closed")
