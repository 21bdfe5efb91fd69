#!/usr/bin/env python3
"""Host time of each CUDA driver call that one nvcam_frame_convert into device memory makes,
called directly through ctypes on the GPU machine: median of 3000 calls each, the
GPU kept from filling its queue (a synchronize every 200 calls). The first row is the ctypes
floor (a call that does nothing); subtract it from the others. Says where the per-call host cost
of a conversion can go and where it cannot (the launch).

  python3 scripts/bench/driver-call-cost.py     # from the repository root (reads the kernels' fatbin)
"""
import ctypes
import statistics
import time

import torch

cu = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")
s = torch.cuda.Stream(); S = ctypes.c_void_p(s.cuda_stream)
buf = torch.empty(1 << 24, dtype=torch.uint8, device="cuda")
ptr = ctypes.c_uint64(buf.data_ptr() + 4096)
ev = ctypes.c_void_p(); cu.cuEventCreate(ctypes.byref(ev), 2)
def t(name, f, n=3000):
    for _ in range(50): f()
    xs = []
    for _ in range(n):
        a = time.perf_counter_ns(); f(); xs.append(time.perf_counter_ns() - a)
        if len(xs) % 200 == 0: torch.cuda.synchronize()
    print(f"{name:45s} {statistics.median(xs)/1e3:6.2f} us")
t("ctypes floor (cuCtxGetCurrent)", lambda: cu.cuCtxGetCurrent(ctypes.byref(ctypes.c_void_p())))
attrs = (ctypes.c_int * 4)(2, 9, 11, 12)  # MEMORY_TYPE, DEVICE_ORDINAL, RANGE_START_ADDR, RANGE_SIZE
mt, od, st, sz = ctypes.c_uint(), ctypes.c_int(), ctypes.c_uint64(), ctypes.c_size_t()
data = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in (mt, od, st, sz)])
t("cuPointerGetAttributes (4)", lambda: cu.cuPointerGetAttributes(4, attrs, data, ptr))
t("cuEventRecord", lambda: cu.cuEventRecord(ev, S))
t("cuEventQuery", lambda: cu.cuEventQuery(ev))
t("cuStreamWaitEvent", lambda: cu.cuStreamWaitEvent(S, ev, 0))
sid = ctypes.c_uint64()
t("cuStreamGetId", lambda: cu.cuStreamGetId(S, ctypes.byref(sid)))
# a kernel launch with a 176-byte parameter block: torch's fill kernel is not callable; use nvcam's fatbin
data_f = open("kernels/nvcam_kernels.fatbin", "rb").read()
img = (ctypes.c_uint64 * ((len(data_f) + 7) // 8))(); ctypes.memmove(img, data_f, len(data_f))
mod = ctypes.c_void_p(); print("load", cu.cuModuleLoadData(ctypes.byref(mod), img))
# the spin kernel lives in the tests' own fatbin
data_t = open("kernels/test/nvcam_test_kernels.fatbin", "rb").read()
img_t = (ctypes.c_uint64 * ((len(data_t) + 7) // 8))(); ctypes.memmove(img_t, data_t, len(data_t))
tmod = ctypes.c_void_p(); print("load tests' kernels", cu.cuModuleLoadData(ctypes.byref(tmod), img_t))
f = ctypes.c_void_p(); cu.cuModuleGetFunction(ctypes.byref(f), tmod, b"nvcam_test_spin_copy")
a = [ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint64(0), ctypes.c_int64(0)]
args = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(x), ctypes.c_void_p) for x in a])
t("cuLaunchKernel (4 args, tiny)", lambda: cu.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, S, args, None))
g = ctypes.c_void_p(); cu.cuModuleGetFunction(ctypes.byref(g), mod, b"nvcam_convert_same")
blk = ctypes.create_string_buffer(176); pa = (ctypes.c_void_p * 1)(ctypes.cast(blk, ctypes.c_void_p))
# out_w = out_h = 0 in the block: the kernel returns at once
t("cuLaunchKernel (176-byte struct param)", lambda: cu.cuLaunchKernel(g, 16, 16, 1, 32, 4, 1, 0, S, pa, None))
ctx = ctypes.c_void_p(); cu.cuCtxGetCurrent(ctypes.byref(ctx))
t("cuCtxPushCurrent+cuCtxPopCurrent", lambda: (cu.cuCtxPushCurrent_v2(ctx), cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))))
