"""GPU tests of the Python zero-copy paths, with PyTorch and CuPy, on the GPU machine:

    NVCAM_LIB=.gpu-bundle/lib/libnvcam.so REQUIRE_GPU=1 python3 bindings/python/test_gpu.py

(scripts/gpu-machine/nvdec-device.sh python-gpu runs exactly that inside the bundle.) Without a GPU, torch or
CuPy every test is skipped, unless REQUIRE_GPU=1, where that is a failure.

- a frame's DLPack tensor (torch.from_dlpack) is the frame's device memory (same address), and
  equals the host download byte for byte; so do CuPy arrays of its planes
  (__cuda_array_interface__) and of the whole frame;
- a DLPack tensor outlives its Frame's release and a reconnect with its pixels unchanged, while
  the camera keeps delivering frames; its deleter releases the handle when the tensor goes;
- frame.convert into a torch tensor (default and a side stream) and into a CuPy array equals the
  host conversion; convert_batch into an NCHW torch tensor equals per-frame conversions;
- a PyTorch process attached to a GPU camera published here (``nvcam://NAME``) takes its frame
  as a DLPack tensor at the mapped address, equal to the download, and converts it into a tensor;
- the host cost of one convert / convert_batch into a torch tensor (a host that converts every
  frame pays it per frame), printed, and
  asserted against NVCAM_HOST_US (microseconds) when it is set.
"""

import gc
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import nvcam  # noqa: E402

REQUIRE = os.environ.get("REQUIRE_GPU") == "1"

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None
try:
    import cupy
except ImportError:  # pragma: no cover
    cupy = None
np = nvcam._np


def need(cond, what):
    if cond:
        return
    if REQUIRE:
        raise AssertionError("REQUIRE_GPU=1 but %s" % what)
    raise unittest.SkipTest(what)


LETTERBOX = dict(width=320, height=320, letterbox=True, pad=(114, 114, 114), mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))


class GpuZeroCopy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nvcam.Library()
        need(nvcam.gpu_stats(-1)["device_count"] > 0, "the library sees no GPU")
        need(np is not None, "numpy is not installed")

    def setUp(self):
        self.cam = nvcam.Camera.open("testsrc://640x360@30", pool_slots=4)  # device: GPU 0 by default
        self.addCleanup(self.cam.close)

    def frame(self):
        f = self.cam.get_frame(10000)
        self.assertEqual(f.info.memory, nvcam.MEMORY_DEVICE, "Camera.open defaults to GPU 0")
        return f

    def host_nv12(self, f):
        info = f.info
        return np.frombuffer(f.copy_nv12(), dtype=np.uint8).reshape(info.rows, info.row_bytes)

    def test_torch_from_dlpack_is_zero_copy_and_equals_the_download(self):
        need(torch is not None, "torch is not installed")
        with self.frame() as f:
            t = torch.from_dlpack(f)
            self.assertEqual(t.device.type, "cuda")
            self.assertEqual(t.data_ptr(), f.info.y_ptr, "zero copy: the tensor is the frame's memory")
            self.assertEqual(tuple(t.shape), (f.info.rows, f.info.row_bytes))
            self.assertEqual(t.stride(), (f.info.pitch, 1))
            want = self.host_nv12(f)
            self.assertTrue(np.array_equal(t.cpu().numpy(), want), "torch.from_dlpack(frame) differs from the host download")
            # Planes through __cuda_array_interface__ (torch.as_tensor keeps the plane, which holds a clone).
            y, uv = f.planes()
            ty = torch.as_tensor(y, device="cuda")
            self.assertEqual(ty.data_ptr(), f.info.y_ptr)
            self.assertTrue(np.array_equal(ty.cpu().numpy(), want[: f.info.height, : f.info.width]))
            tuv = torch.as_tensor(uv, device="cuda")
            self.assertTrue(np.array_equal(tuv.cpu().numpy().reshape(-1, f.info.row_bytes), want[f.info.height :]))
        print("torch: DLPack tensor and plane views of a %dx%d device frame equal the host download" % (f.info.width, f.info.height))

    def test_cupy_cuda_array_interface_equals_the_download(self):
        need(cupy is not None, "cupy is not installed")
        with self.frame() as f:
            want = self.host_nv12(f)
            whole = cupy.asarray(f)  # Frame.__cuda_array_interface__ (valid while f is held)
            self.assertEqual(whole.data.ptr, f.info.y_ptr)
            self.assertTrue(np.array_equal(cupy.asnumpy(whole), want))
            y, uv = f.planes()
            self.assertTrue(np.array_equal(cupy.asnumpy(cupy.asarray(y)), want[: f.info.height, : f.info.width]))
            self.assertTrue(np.array_equal(cupy.asnumpy(cupy.asarray(uv)).reshape(-1, f.info.row_bytes), want[f.info.height :]))
            d = cupy.from_dlpack(f)
            self.assertEqual(d.data.ptr, f.info.y_ptr)
            self.assertTrue(np.array_equal(cupy.asnumpy(d), want))
        print("cupy: __cuda_array_interface__ (frame, planes) and from_dlpack equal the host download")

    def test_dlpack_tensor_outlives_release_and_reconnect(self):
        need(torch is not None, "torch is not installed")
        f = self.frame()
        t = torch.from_dlpack(f)
        want = t.cpu().clone()
        seq = f.info.seq
        f.release()
        self.assertEqual(nvcam.registry_stats(self.cam)[0], 1, "the tensor holds one handle (its clone)")
        self.cam.reconnect()
        # Frames keep coming after the reconnect, through the other slots; none is written into ours.
        got, t0 = 0, time.monotonic()
        while got < 12 and time.monotonic() - t0 < 20:
            g = self.cam.try_get_frame(2000)
            if g is None:
                continue
            with g:
                self.assertNotEqual(g.info.y_ptr, t.data_ptr(), "a new frame landed in the slot a live DLPack tensor holds")
                got += 1
        self.assertEqual(got, 12, "frames stopped after the reconnect")
        self.assertGreater(self.cam.stats()["reconnects"], 0)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(t.cpu(), want), "the DLPack tensor's pixels changed after release + reconnect")
        del t
        gc.collect()
        self.assertEqual(nvcam.registry_stats(self.cam)[0], 0, "the tensor's deleter released its handle")
        print("DLPack tensor of frame %d kept its pixels through release, reconnect and %d new frames" % (seq, got))

    def test_convert_into_torch_and_cupy(self):
        need(torch is not None, "torch is not installed")
        with self.frame() as f:
            ref = f.to_numpy(nvcam.FORMAT_RGB_F16_PLANAR, **LETTERBOX)
            t = torch.empty((3, 320, 320), dtype=torch.float16, device="cuda:0")
            self.assertIs(f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t, **LETTERBOX), t)
            torch.cuda.current_stream().synchronize()
            self.assertTrue(np.array_equal(t.cpu().numpy().view(np.uint16), ref.view(np.uint16)), "convert into torch (current stream)")
            side = torch.cuda.Stream()
            t2 = torch.zeros((3, 320, 320), dtype=torch.float16, device="cuda:0")
            torch.cuda.current_stream().synchronize()
            with torch.cuda.stream(side):
                f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t2, **LETTERBOX)
            side.synchronize()
            self.assertTrue(np.array_equal(t2.cpu().numpy().view(np.uint16), ref.view(np.uint16)), "convert into torch (side stream)")
            if cupy is not None:
                c = cupy.empty((320, 320, 3), dtype=cupy.uint8)
                f.convert(nvcam.FORMAT_BGR8, out=c, width=320, height=320, letterbox=True, pad=(114, 114, 114))
                cupy.cuda.get_current_stream().synchronize()
                want = f.to_numpy(nvcam.FORMAT_BGR8, width=320, height=320, letterbox=True, pad=(114, 114, 114))
                self.assertTrue(np.array_equal(cupy.asnumpy(c), want), "convert into cupy")
        print("frame.convert into torch (current and side stream) and cupy equals the host conversion")

    def test_convert_host_cost_into_torch(self):
        # The host cost of one convert / convert_batch into a torch tensor. The tensor
        # is read through its attributes (never __cuda_array_interface__), and the call returns
        # in a few microseconds. The time is printed; NVCAM_HOST_US=<limit> also asserts it.
        need(torch is not None, "torch is not installed")
        from unittest import mock

        batch_cams = [nvcam.Camera.open("testsrc://320x240@30") for _ in range(3)]
        try:
            with self.frame() as f, nvcam.get_frames([self.cam] + batch_cams, 10000, partial=False) as batch:
                t = torch.empty((3, 320, 320), dtype=torch.float16, device="cuda:0")
                tb = torch.empty((4, 3, 320, 320), dtype=torch.float16, device="cuda:0")
                with mock.patch.object(nvcam, "_cuda_target", side_effect=AssertionError("generic path taken")):
                    f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t, **LETTERBOX)
                    nvcam.convert_batch(batch, nvcam.FORMAT_RGB_F16_PLANAR, tb, **LETTERBOX)
                with self.assertRaises(ValueError):
                    f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t.transpose(1, 2), **LETTERBOX)
                with self.assertRaises(RuntimeError):
                    f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t.clone().requires_grad_(), **LETTERBOX)

                def per_call_us(fn, n=200):  # few enough launches that the GPU's queue never fills
                    torch.cuda.synchronize()
                    best = float("inf")
                    for _ in range(25):
                        t0 = time.perf_counter()
                        for _ in range(n):
                            fn()
                        best = min(best, (time.perf_counter() - t0) / n * 1e6)
                        torch.cuda.synchronize()  # the queued kernels, outside the timed loop
                    return best

                one = per_call_us(lambda: f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=t, **LETTERBOX))
                four = per_call_us(lambda: nvcam.convert_batch(batch, nvcam.FORMAT_RGB_F16_PLANAR, tb, **LETTERBOX))
                s = torch.cuda.current_stream().cuda_stream
                for fr in batch:
                    fr.release_after_stream(s)
                f.release_after_stream(s)
        finally:
            for c in batch_cams:
                c.close()
        print("host cost: frame.convert into torch %.2f us, convert_batch of 4 %.2f us per call" % (one, four))
        limit = os.environ.get("NVCAM_HOST_US")
        if limit:
            self.assertLessEqual(one, float(limit))
            self.assertLessEqual(four, float(limit))

    def test_convert_batch_into_an_nchw_torch_tensor(self):
        need(torch is not None, "torch is not installed")
        others = [nvcam.Camera.open("testsrc://1280x720@30"), nvcam.Camera.open("testsrc://320x240@30")]
        try:
            cams = [self.cam] + others
            batch = nvcam.get_frames(cams, 10000, partial=False)
            self.assertTrue(batch.complete)
            refs = [f.to_numpy(nvcam.FORMAT_RGB_F16_PLANAR, **LETTERBOX) for f in batch]
            t = torch.empty((3, 3, 320, 320), dtype=torch.float16, device="cuda:0")
            nvcam.convert_batch(batch, nvcam.FORMAT_RGB_F16_PLANAR, t, **LETTERBOX)
            s = torch.cuda.current_stream().cuda_stream
            for fr in batch:
                fr.release_after_stream(s)
            torch.cuda.current_stream().synchronize()
            for i, ref in enumerate(refs):
                self.assertTrue(np.array_equal(t[i].cpu().numpy().view(np.uint16), ref.view(np.uint16)), "batch item %d" % i)
            print("convert_batch: 3 cameras (640x360, 1280x720, 320x240) into one 3x3x320x320 fp16 tensor equal single conversions")
        finally:
            for c in others:
                c.close()


ATTACHED = r"""
import sys
sys.path.insert(0, sys.argv[2])
import numpy as np, torch, nvcam
nvcam.Library()
cam = nvcam.Camera.open("nvcam://" + sys.argv[1])
f = cam.get_frame(10000)
info = f.info
t = torch.from_dlpack(f)
assert t.device.type == "cuda", t.device
assert t.data_ptr() == info.y_ptr, "zero copy: the tensor is the mapped frame"
want = np.frombuffer(f.copy_nv12(), dtype=np.uint8).reshape(info.rows, info.row_bytes)
assert np.array_equal(t.cpu().numpy(), want), "the tensor equals the host download"
out = torch.empty((3, 320, 320), dtype=torch.float16, device="cuda:0")
f.convert(nvcam.FORMAT_RGB_F16_PLANAR, out=out, width=320, height=320, letterbox=True, pad=(114, 114, 114))
ref = f.to_numpy(nvcam.FORMAT_RGB_F16_PLANAR, width=320, height=320, letterbox=True, pad=(114, 114, 114))
torch.cuda.current_stream().synchronize()
assert np.array_equal(out.cpu().numpy().view(np.uint16), ref.view(np.uint16)), "the conversion equals the host's"
print("attached", info.seq, info.memory, hex(int(want.sum())))
del t
# Released once the stream's work on it is done (the handle is gone at once): the publisher
# hears of it only after that work completed.
f.release_after_stream(torch.cuda.current_stream().cuda_stream)
cam.close()
"""


class GpuSharedCamera(unittest.TestCase):
    """A GPU camera published here, read by a PyTorch process attached to it."""

    def test_a_pytorch_process_attached_to_a_gpu_camera_converts_its_mapped_frames(self):
        nvcam.Library()
        need(nvcam.gpu_stats(-1)["device_count"] > 0, "the library sees no GPU")
        need(torch is not None and np is not None, "torch or numpy is not installed")
        import subprocess

        name = "pygpu-%d" % os.getpid()
        with nvcam.Camera.open("testsrc://640x360@30", publish=name) as cam:
            with cam.get_frame(10000) as f:
                self.assertEqual(f.info.memory, nvcam.MEMORY_DEVICE)
            here = os.path.dirname(os.path.abspath(__file__))
            out = subprocess.run([sys.executable, "-c", ATTACHED, name, here], capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            words = out.stdout.split()
            self.assertEqual(words[0], "attached")
            self.assertEqual(int(words[2]), nvcam.MEMORY_DEVICE, "the attached process's frame is device memory")
            self.assertEqual(cam.stats()["consumers"], 0, "it detached when it closed")
        print("torch: another process's DLPack tensor is the mapped device frame; its conversion equals the host's")


if __name__ == "__main__":
    r = unittest.main(verbosity=2, exit=False).result
    ok = r.wasSuccessful() and not (REQUIRE and r.skipped)
    if REQUIRE and r.skipped:
        print("REQUIRE_GPU=1 but tests were skipped: %s" % [str(t) for t, _ in r.skipped])
    print("python-gpu: %d run, %d failures, %d errors, %d skipped" % (r.testsRun, len(r.failures), len(r.errors), len(r.skipped)))
    sys.exit(0 if ok else 1)
