// Entry kernels: batches of NV12 frames into one output size, any mode per item.

#include "area_tiled.cuh"
#include "convert.cuh"

// convert<> pairs rows only at the same scale.
static_assert(BATCH_ROWS == 1, "the batch kernels convert one row per thread");

// Up to NVCAM_BATCH_PER_LAUNCH frames into one output size: item blockIdx.z, any mode (same-scale
// items take the bilinear path, which gives the same values).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_batch(const nvcam_convert_batch_params p) {
    convert<-1, BATCH_PX, 1>(p.c, p.items[blockIdx.z]);
}

// The same where some item's box filter has a large footprint: those items' blocks through shared
// memory (area_tiled).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_batch_tiled(const nvcam_convert_batch_params p) {
    const nvcam_convert_item& it = p.items[blockIdx.z];
    if (it.mode == MODE_AREA && area_tiled<BATCH_PX, 1>(p.c, it)) return;
    convert<-1, BATCH_PX, 1>(p.c, it);
}
