// nvcam conversion kernels: the same-scale fast path of 8-bit frames (common.cuh says how the files
// fit together).
#ifndef NVCAM_SAME_SCALE_CUH
#define NVCAM_SAME_SCALE_CUH

#include "common.cuh"

// ---- Same scale --------------------------------------------------------------------------------

// [u, 0, v, 0]: a chroma pair in two 16-bit lanes, so one multiply weighs both channels.
__device__ __forceinline__ u32 spread(u32 uv) {
    return __byte_perm(uv, 0, 0x4140);
}

// MODE_SAME, PX pixels all inside the image. The bilinear arithmetic at this scale is exact, so
// integer weights give the same values. Luma: the sample itself. Chroma: luma column X is at
// chroma position n / 4 with n = 2X + 1 - chroma_x (rows likewise), between samples n >> 2 and
// the next, which weighs (n & 3) / 4: quarters (1/4, 3/4) for centred chroma (n odd), halves
// (0, 1/2) for chroma with a luma column or row (n even). Weights in those units (4 or 2 on an
// axis) give U = S / D, D = 16, 8 or 4, with S the weighted sum of the samples (no rounding
// anywhere), and du * k = (S - 128 D) * (k / D) with one rounding either way.

// PX luma bytes from yp as words (aligned loads when yp allows).
template <int PX>
__device__ __forceinline__ void luma_words(const u8* yp, u32* w) {
    if (((u64)yp & 3) == 0) {
#pragma unroll
        for (int q = 0; q < PX / 4; q++) w[q] = __ldg((const u32*)yp + q);
    } else {
#pragma unroll
        for (int q = 0; q < PX / 4; q++) {
            const u8* p = yp + 4 * q;
            w[q] = __ldg(p) | ((u32)__ldg(p + 1) << 8) | ((u32)__ldg(p + 2) << 16) | ((u32)__ldg(p + 3) << 24);
        }
    }
}

// Chroma columns c0 .. c0 + NC - 1 of one row (clamped to [0, cx1]), spread.
template <int NC>
__device__ __forceinline__ void uv_cols(const u16* row, int c0, int cx1, u32* v) {
    if (c0 >= 0 && c0 + NC - 1 <= cx1) {
#pragma unroll
        for (int m = 0; m < NC; m++) v[m] = spread(__ldg(row + c0 + m));
    } else {
#pragma unroll
        for (int m = 0; m < NC; m++) v[m] = spread(__ldg(row + clampi(c0 + m, 0, cx1)));
    }
}

// Where PX pixels from luma (X0, Yr) take their chroma: the first pixel's n on each axis (see
// above) as its sample (c0; row) and its quarter (qx; qy). Pixel k is at nx + 2k, row Yr + 1 at
// ny + 2: the same parity, so one D for all.
struct SameChroma {
    int c0, row, qx, qy;
};

__device__ __forceinline__ SameChroma same_chroma(const nvcam_convert_item& it, int X0, int Yr) {
    int nx = 2 * X0 + 1 - it.chroma_x, ny = 2 * Yr + 1 - it.chroma_y;
    SameChroma c;
    c.c0 = nx >> 2;
    c.qx = nx & 3;
    c.row = ny >> 2;
    c.qy = ny & 3;
    return c;
}

// Samples a and b weighed for a position q / 4 of the way from a to b (q in 0..3, a constant once
// unrolled): in quarters when q is odd (3a + b, a + 3b), in halves when even (2a, a + b).
__device__ __forceinline__ u32 mix(int q, u32 a, u32 b) {
    return (q & 1) ? (u32)(4 - q) * a + (u32)q * b : (q == 0 ? 2 * a : a + b);
}

// The horizontal sums of PX pixels from the columns col (col[0] is sample c0), the first pixel
// at quarter R: pixel k is at R + 2k quarters from c0.
template <int PX, int R>
__device__ __forceinline__ void mix_cols(const u32* col, u32* s) {
#pragma unroll
    for (int k = 0; k < PX; k++) {
        int q = R + 2 * k;
        s[k] = mix(q & 3, col[q >> 2], col[(q >> 2) + 1]);
    }
}

// mix_cols for the first pixel's quarter qx (one branch per thread: it is the same for the
// whole item, since every thread's first column has the parity of roi_x - img_x).
template <int PX>
__device__ __forceinline__ void mix_row(int qx, const u32* col, u32* s) {
    switch (qx) {
    case 0: mix_cols<PX, 0>(col, s); break;
    case 1: mix_cols<PX, 1>(col, s); break;
    case 2: mix_cols<PX, 2>(col, s); break;
    default: mix_cols<PX, 3>(col, s); break;
    }
}

// R, G, B of PX pixels from their luma words and their chroma columns weighed vertically (col:
// PX / 2 + 2 of them from sample c.c0).
template <int PX>
__device__ __forceinline__ void same_finish(const nvcam_convert_item& it, u32 format, const u32* w, const u32* col, const SameChroma& c, float* r, float* g, float* b) {
    float yk = 8388608.f + it.y_off;  // exact: y_off is an integer
    float yy[PX];
#pragma unroll
    for (int k = 0; k < PX; k++) yy[k] = (byte_2p23(w[k / 4], k % 4) - yk) * it.y_scale;
    if (format == FMT_GRAY8) {
#pragma unroll
        for (int k = 0; k < PX; k++) r[k] = yy[k];
        return;
    }
    u32 s[PX];
    mix_row<PX>(c.qx, col, s);
    // D = 2^lg: 4 (quarters) or 2 (halves) per axis; 1 / D and 2^23 + 128 D as float bits.
    int lg = 2 + (c.qx & 1) + (c.qy & 1);
    float inv = __int_as_float((127 - lg) << 23);
    float off = __int_as_float(0x4B000000u | (128u << lg));
    float kr = it.k_r * inv, kgb = it.k_gb * inv, kgr = it.k_gr * inv, kb = it.k_b * inv;
#pragma unroll
    for (int k = 0; k < PX; k++) {
        // 2^23 + each 16-bit sum as a float (one byte permute), less 2^23 + 128 D: exact.
        float du = __int_as_float(__byte_perm(s[k], 0x4B000000u, 0x7410)) - off;
        float dv = __int_as_float(__byte_perm(s[k], 0x4B000000u, 0x7432)) - off;
        r[k] = yy[k] + dv * kr;
        g[k] = (yy[k] - du * kgb) - dv * kgr;
        b[k] = yy[k] + du * kb;
    }
}

// MODE_SAME, one row of PX pixels all inside the image (see the section's head).
template <int PX>
__device__ __forceinline__ void same_scale(const nvcam_convert_item& it, u32 format, int ox0, int oy, float* r, float* g, float* b) {
    int X0 = ox0 - it.img_x + it.roi_x;
    int Yr = oy - it.img_y + it.roi_y;
    u32 w[PX / 4];
    luma_words<PX>(y_row(it, Yr) + X0, w);
    const int NC = PX / 2 + 2;
    u32 col[NC];
    SameChroma sc = same_chroma(it, X0, Yr);
    if (format != FMT_GRAY8) {
        int cx1 = (it.src_w - 1) >> 1, cy1 = (it.src_h - 1) >> 1;
        u32 a[NC], bb[NC];
        uv_cols<NC>(uv_row(it, clampi(sc.row, 0, cy1)), sc.c0, cx1, a);
        uv_cols<NC>(uv_row(it, clampi(sc.row + 1, 0, cy1)), sc.c0, cx1, bb);
        // mix(qy, a, b) with the weights known here only (the next row: qy quarters or qy / 2
        // halves).
        u32 wb = (sc.qy & 1) ? sc.qy : sc.qy >> 1, wa = ((sc.qy & 1) ? 4 : 2) - wb;
#pragma unroll
        for (int m = 0; m < NC; m++) col[m] = wa * a[m] + wb * bb[m];
    }
    same_finish<PX>(it, format, w, col, sc, r, g, b);
}

// Two rows' chroma columns at the same scale, the first row at quarter R from chroma row `row`
// (the second at R + 2): each chroma row read once for both, and only those with a weight (two,
// or three when R = 3).
template <int PX, int R>
__device__ __forceinline__ void pair_cols(const nvcam_convert_item& it, int row, int c0, u32* col0, u32* col1) {
    const int NC = PX / 2 + 2;
    const int M1 = (R + 2) >> 2, NR = M1 + (((R + 2) & 3) ? 2 : 1);
    int cx1 = (it.src_w - 1) >> 1, cy1 = (it.src_h - 1) >> 1;
    u32 v[3][NC];
#pragma unroll
    for (int j = 0; j < NR; j++) uv_cols<NC>(uv_row(it, clampi(row + j, 0, cy1)), c0, cx1, v[j]);
#pragma unroll
    for (int m = 0; m < NC; m++) {
        col0[m] = mix(R, v[0][m], v[1][m]);
        col1[m] = mix((R + 2) & 3, v[M1][m], v[M1 + 1 < NR ? M1 + 1 : NR - 1][m]);
    }
}

#endif  // NVCAM_SAME_SCALE_CUH
