// Entry kernels: P016 frames (10- and 12-bit streams), one or a batch, any mode.

#include "convert.cuh"

static_assert(P016_ROWS == 1, "the P016 kernels convert one row per thread");

// P016 frames, one item / up to NVCAM_BATCH_PER_LAUNCH items (all P016), any mode, every format:
// 16-bit samples through the generic bilinear and box filter loops.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_p016(const nvcam_convert_params p) {
    convert<-1, P016_PX, 1, -1, 1, Words>(p.c, p.it);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_batch_p016(const nvcam_convert_batch_params p) {
    convert<-1, P016_PX, 1, -1, 1, Words>(p.c, p.items[blockIdx.z]);
}
