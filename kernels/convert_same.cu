// Entry kernels: same scale (no resize), NV12 frames.

#include "convert.cuh"

// Same scale, 8-bit formats / float formats. Each warp takes one segment (G = 1): the host's shapes
// (nvcam_abi.cuh) count a thread's pixels along a row, PX x G.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_same(const nvcam_convert_params p) {
    convert<MODE_SAME, SAME8_PX, 1, 0, SAME8_ROWS>(p.c, p.it);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_same_float(const nvcam_convert_params p) {
    convert<MODE_SAME, SAMEF_PX, 1, 1, SAMEF_ROWS>(p.c, p.it);
}
