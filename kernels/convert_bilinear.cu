// Entry kernel: bilinear resize, NV12 frames.

#include "convert.cuh"

// convert<> pairs rows only at the same scale.
static_assert(RESIZE_ROWS == 1, "nvcam_convert_bilinear converts one row per thread");

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_bilinear(const nvcam_convert_params p) {
    convert<MODE_BILINEAR, RESIZE_PX, 1>(p.c, p.it);
}
