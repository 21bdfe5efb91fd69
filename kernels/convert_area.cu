// Entry kernels: the box filter (down-scales beyond 2x), NV12 frames: per pixel, and through
// shared memory for large footprints.

#include "area_tiled.cuh"
#include "convert.cuh"

// convert<> pairs rows only at the same scale.
static_assert(AREA_ROWS == 1, "nvcam_convert_area and _area_tiled convert one row per thread");
static_assert(AREA4_ROWS != 2, "two rows a thread are the same-scale pairs");

// The box filter per pixel (small footprints: the host launches it where tiled_scale says no,
// and this kernel keeps the registers and code it had without the tiled path).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_area(const nvcam_convert_params p) {
    convert<MODE_AREA, AREA_PX, 1>(p.c, p.it);
}

// The box filter of large footprints: blocks through shared memory (area_tiled), per pixel where
// that does not apply.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_area_tiled(const nvcam_convert_params p) {
    if (area_tiled<AREA_PX, 1>(p.c, p.it)) return;
    convert<MODE_AREA, AREA_PX, 1>(p.c, p.it);
}

// The same, a thread on AREA4_ROWS rows (the host's choice for large outputs: a tile's set-up
// serves 4 times the pixels; for small ones it would leave SMs idle).
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_area4(const nvcam_convert_params p) {
    if (area_tiled<AREA4_PX, AREA4_ROWS>(p.c, p.it)) return;
    convert<MODE_AREA, AREA4_PX, 1, -1, AREA4_ROWS>(p.c, p.it);
}
