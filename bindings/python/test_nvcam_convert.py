"""Batches and conversions through the binding: latest of N, partial batches, convert_batch
against single conversions, the cached convert structs, threads, and the arguments a CUDA
destination (torch tensor, __cuda_array_interface__) passes, without a GPU. Run by test_nvcam.py
with the other test_nvcam_*.py."""

import sys
import time
import unittest

from nvcam_testcase import NvcamTestCase, nvcam, open_cam


class ConvertTest(NvcamTestCase):
    """Batches of frames and conversions."""

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
        # Frame.convert and convert_batch share cached Convert structs (built once per set of
        # arguments, not per call): every call must give the bytes of a fresh struct built from
        # its own arguments, in any order.
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
