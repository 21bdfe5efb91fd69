// nvcam conversion kernels: a thread's pixels, sampled by mode and stored (common.cuh says how the
// files fit together).
#ifndef NVCAM_CONVERT_CUH
#define NVCAM_CONVERT_CUH

#include "area.cuh"
#include "bilinear.cuh"
#include "same_scale.cuh"
#include "store.cuh"

// ---- Kernels -----------------------------------------------------------------------------------

// The PX pixels at (ox0, oy), sampled and stored. MODE: the item's mode when the kernel is for
// one mode, -1 for any (batches). S: the sample width (the same-scale fast path is for bytes only;
// P016 takes bilinear there, which is exact at that scale).
template <int MODE, int PX, int FC, typename S = Bytes>
__device__ __forceinline__ void convert_px(const nvcam_convert_common& c, const nvcam_convert_item& it, u32 mode, int ox0, int oy, bool warp_full) {
    float r[PX], g[PX], b[PX];
    bool row_in = oy >= it.img_y && oy < it.img_y + it.img_h;
    int ix1 = it.img_x + it.img_w;
    if (S::FAST && PX % 4 == 0 && MODE != MODE_AREA && MODE != MODE_BILINEAR && row_in && mode == MODE_SAME && ox0 >= it.img_x && ox0 + PX <= ix1) {
        same_scale<PX % 4 == 0 ? PX : 4>(it, c.format, ox0, oy, r, g, b);
    } else {
#pragma unroll
        for (int k = 0; k < PX; k++) {
            r[k] = c.pad[0];
            g[k] = c.pad[1];
            b[k] = c.pad[2];
        }
        if (row_in && ox0 + PX > it.img_x && ox0 < ix1) {
            // Some pixels inside the image: sample at offsets clamped into it, keep the inside ones.
            int dy = oy - it.img_y;
            int dx[PX];
            float Y[PX], U[PX], V[PX];
#pragma unroll
            for (int k = 0; k < PX; k++) dx[k] = clampi(ox0 + k - it.img_x, 0, it.img_w - 1);
            if (MODE != MODE_SAME && MODE != MODE_BILINEAR && mode == MODE_AREA) {
                // AREA_N pixels at a time (their loads in flight together; fewer live registers).
                const int N = PX < AREA_N ? PX : AREA_N;
#pragma unroll
                for (int h = 0; h < PX; h += N) area<N>(it, dx + h, dy, Y + h, U + h, V + h, S());
            } else {
#pragma unroll
                for (int k = 0; k < PX; k++) bilinear<S>(it, dx[k], dy, &Y[k], &U[k], &V[k]);
            }
#pragma unroll
            for (int k = 0; k < PX; k++) {
                if (ox0 + k >= it.img_x && ox0 + k < ix1) {
                    float yy = (Y[k] - it.y_off) * it.y_scale;
                    rgb(it, c.format, yy, U[k] - 128.f, V[k] - 128.f, &r[k], &g[k], &b[k]);
                }
            }
        }
    }
    store<PX, FC>(c, it, ox0, oy, warp_full, r, g, b);
}

// MODE_SAME, rows oy and oy + 1, PX pixels at ox0 all inside the image: both rows read their
// chroma from three rows at most (two unless the first is at quarter 3) and share the set-up, so
// each chroma byte is loaded once for the pair, not twice.
template <int PX, int FC>
__device__ __forceinline__ void same_pair(const nvcam_convert_common& c, const nvcam_convert_item& it, int ox0, int oy, bool warp_full) {
    int X0 = ox0 - it.img_x + it.roi_x;
    int Yr = oy - it.img_y + it.roi_y;
    u32 w0[PX / 4], w1[PX / 4];
    luma_words<PX>(y_row(it, Yr) + X0, w0);
    luma_words<PX>(y_row(it, Yr + 1) + X0, w1);
    const int NC = PX / 2 + 2;
    u32 col0[NC], col1[NC];
    SameChroma sc = same_chroma(it, X0, Yr);
    if (c.format != FMT_GRAY8) {
        // One branch per thread, the same for the whole item (oy is even: Yr has the parity of
        // roi_y - img_y).
        switch (sc.qy) {
        case 0: pair_cols<PX, 0>(it, sc.row, sc.c0, col0, col1); break;
        case 1: pair_cols<PX, 1>(it, sc.row, sc.c0, col0, col1); break;
        case 2: pair_cols<PX, 2>(it, sc.row, sc.c0, col0, col1); break;
        default: pair_cols<PX, 3>(it, sc.row, sc.c0, col0, col1); break;
        }
    }
    float r[PX], g[PX], b[PX];
    same_finish<PX>(it, c.format, w0, col0, sc, r, g, b);
    store<PX, FC>(c, it, ox0, oy, warp_full, r, g, b);
    same_finish<PX>(it, c.format, w1, col1, sc, r, g, b);
    store<PX, FC>(c, it, ox0, oy + 1, warp_full, r, g, b);
}

// A warp converts G consecutive segments of 32 x PX pixels of ROWS rows; a thread takes PX
// neighbouring pixels in each (so each store instruction of the warp covers one contiguous run).
// ROWS = 2 (same scale only, NV12 only): a thread's two rows share their chroma rows (same_pair).
// S: the sample width.
template <int MODE, int PX, int G, int FC = -1, int ROWS = 1, typename S = Bytes>
__device__ __forceinline__ void convert(const nvcam_convert_common& c, const nvcam_convert_item& it) {
    u32 mode = MODE < 0 ? it.mode : (u32)MODE;
    int oy = (blockIdx.y * BLOCK_Y + threadIdx.y) * ROWS;
    if (oy >= c.out_h) return;
    bool pair_rows = ROWS == 2 && oy >= it.img_y && oy + 1 < it.img_y + it.img_h;
#pragma unroll
    for (int s = 0; s < G; s++) {
        int seg = (blockIdx.x * G + s) * BLOCK_X * PX;
        if (seg >= c.out_w) break;
        int ox0 = seg + threadIdx.x * PX;
        if (ox0 >= c.out_w) continue;
        bool full = seg + BLOCK_X * PX <= c.out_w;
        // A full segment (its stores may go through shared memory, the whole warp together)
        // pairs only when all of it is inside the image, so the warp stays on one path.
        int ix1 = it.img_x + it.img_w;
        bool inside = full ? seg >= it.img_x && seg + BLOCK_X * PX <= ix1 : ox0 >= it.img_x && ox0 + PX <= ix1;
        if (S::FAST && ROWS == 2 && PX % 4 == 0 && pair_rows && inside) {
            same_pair<PX % 4 == 0 ? PX : 4, FC>(c, it, ox0, oy, full);
            continue;
        }
#pragma unroll
        for (int r = 0; r < ROWS; r++)
            if (oy + r < c.out_h) convert_px<MODE, PX, FC, S>(c, it, mode, ox0, oy + r, full);
    }
}

#endif  // NVCAM_CONVERT_CUH
