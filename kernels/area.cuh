// nvcam conversion kernels: the box filter per pixel (common.cuh says how the files fit together).
#ifndef NVCAM_AREA_CUH
#define NVCAM_AREA_CUH

#include "common.cuh"

// The box filter's pixels in flight per thread and its rows in flight.
#define AREA_N 2
#define AREA_ROW_UNROLL 2

// ---- Box filter --------------------------------------------------------------------------------

// The footprint [a, b) on one axis: pixels i0..i1 (clamped to the frame's [0, hi]) and the end
// pixels' weights (their overlap with [a, b)); the inner pixels weigh exactly 1.
struct Span {
    int i0, i1;
    float w0, w1;
};

__device__ __forceinline__ float overlap(int i, float a, float b) {
    return fminf((float)(i + 1), b) - fmaxf((float)i, a);
}

// A luma footprint, clamped to the frame's [0, hi]. It starts at a >= 0 (the ROI's origin or
// after), so the lower clamp never changes a value, but it lets the compiler treat the row and
// column indices as non-negative: without it 4K into 640x640 ran at 0.47 of a copy, not 0.54.
__device__ __forceinline__ Span span(float a, float b, int hi) {
    Span s;
    s.i0 = clampi((int)floorf(a), 0, hi);
    s.i1 = clampi((int)ceilf(b) - 1, 0, hi);
    s.w0 = overlap(s.i0, a, b);
    s.w1 = overlap(s.i1, a, b);
    return s;
}

// The smallest first weight of a chroma footprint (2^-24; the CPU's MIN_W0).
#define MIN_W0 5.9604644775390625e-08f

// A chroma footprint: the siting shifts it by up to a quarter sample, so it may start before 0
// and is clamped at both ends; and w0 is kept above 0. A sited footprint narrower than that
// shift (a box filter that up-scales its other axis more than 2x) can lie wholly past the edge
// sample: clamped onto it, it overlaps it by 0 or less, and v * w0 / w0 would be 0 / 0. With
// more than one sample w0 is at least 2^-24 already; with one, w0 cancels.
__device__ __forceinline__ Span chroma_span(float a, float b, int hi) {
    Span s;
    s.i0 = clampi((int)floorf(a), 0, hi);
    s.i1 = clampi((int)ceilf(b) - 1, 0, hi);
    s.w0 = fmaxf(overlap(s.i0, a, b), MIN_W0);
    s.w1 = overlap(s.i1, a, b);
    return s;
}

// The luma footprints of N pixels of one output row (dy; dx[k] into the image): rows ly, pixel
// k's columns lx[k], clamped to the frame.
template <int N>
__device__ __forceinline__ void luma_spans(const nvcam_convert_item& it, const int* dx, int dy, Span& ly, Span* lx) {
    float ay = (float)dy * it.sy + (float)it.roi_y;
    ly = span(ay, ay + it.sy, it.src_h - 1);
#pragma unroll
    for (int k = 0; k < N; k++) {
        float ax = (float)dx[k] * it.sx + (float)it.roi_x;
        lx[k] = span(ax, ax + it.sx, it.src_w - 1);
    }
}

// Their chroma footprints: chroma sample i covers [i, i + 1) at chroma position
// u / 2 + 1 / 2 - h / 4 of luma position u (h: chroma_x, chroma_y), so output pixel d's footprint
// starts at d * (s / 2) + (roi / 2 + (1 / 2 - h / 4)) and is s / 2 long (the CPU's chroma_span).
template <int N>
__device__ __forceinline__ void chroma_spans(const nvcam_convert_item& it, const int* dx, int dy, Span& cy, Span* cx) {
    float hsx = it.sx * 0.5f, hsy = it.sy * 0.5f;
    float c0x = (float)it.roi_x * 0.5f + (0.5f - (float)it.chroma_x * 0.25f);
    float c0y = (float)it.roi_y * 0.5f + (0.5f - (float)it.chroma_y * 0.25f);
    float ay = (float)dy * hsy + c0y;
    cy = chroma_span(ay, ay + hsy, (it.src_h - 1) >> 1);
#pragma unroll
    for (int k = 0; k < N; k++) {
        float ax = (float)dx[k] * hsx + c0x;
        cx[k] = chroma_span(ax, ax + hsx, (it.src_w - 1) >> 1);
    }
}

// The span's total weight: (w0 + inner count) + w1.
__device__ __forceinline__ float wsum(const Span& s) {
    return s.i1 > s.i0 ? (s.w0 + (float)(s.i1 - s.i0 - 1)) + s.w1 : s.w0;
}

// Inner taps unrolled (independent loads in flight) up to this many; longer spans loop on.
#define INNER_UNROLL 4

// One row of a luma footprint: (v[i0] * w0 + sum of the inner v) + v[i1] * w1, the inner
// samples summed as integers and the sum made a float once (S::sum; P016: times 1 / 256, exact).
template <typename S = Bytes>
__device__ __forceinline__ float row_luma(const typename S::Y* row, const Span& s) {
    float v = S::ld(row, s.i0) * s.w0;
    if (s.i1 > s.i0) {
        u32 sum = 0;
        int x = s.i0 + 1;
#pragma unroll
        for (int j = 0; j < INNER_UNROLL; j++) {
            if (x + j < s.i1) sum += __ldg(row + x + j);
        }
        for (x += INNER_UNROLL; x < s.i1; x++) sum += __ldg(row + x);
        v = v + S::sum(sum);
        v = v + S::ld(row, s.i1) * s.w1;
    }
    return v;
}

// The same for one row of chroma, both channels.
template <typename S = Bytes>
__device__ __forceinline__ float2 row_chroma(const typename S::UV* row, const Span& s) {
    float2 a = S::ld2(row, s.i0);
    float2 v = make_float2(a.x * s.w0, a.y * s.w0);
    if (s.i1 > s.i0) {
        u32 su = 0, sv = 0;
        int x = s.i0 + 1;
#pragma unroll
        for (int j = 0; j < INNER_UNROLL / 2; j++) {
            if (x + j < s.i1) {
                u32 c = __ldg(row + x + j);
                su += S::u(c);
                sv += S::v(c);
            }
        }
        for (x += INNER_UNROLL / 2; x < s.i1; x++) {
            u32 c = __ldg(row + x);
            su += S::u(c);
            sv += S::v(c);
        }
        float2 b = S::ld2(row, s.i1);
        v.x = v.x + S::sum(su);
        v.y = v.y + S::sum(sv);
        v.x = v.x + b.x * s.w1;
        v.y = v.y + b.y * s.w1;
    }
    return v;
}

// Box filter of N pixels of one output row (dy), at dx[k] into the image; they share the rows
// (vertical span). Per pixel: the rows' values R combined as (R[i0] * w0 + sum of the inner R,
// in row order) + R[i1] * w1, divided by the product of both spans' total weights. The spans are
// made again here (luma_spans) rather than kept from area_luma_sized's dispatch. S: the sample
// width (P016 frames take this loop whatever the footprint).
template <int N, typename S = Bytes>
__device__ __forceinline__ void area_luma(const nvcam_convert_item& it, const int* dx, int dy, float* Y) {
    Span ly, lx[N];
    luma_spans<N>(it, dx, dy, ly, lx);
    float acc[N], inner[N];
#pragma unroll AREA_ROW_UNROLL
    for (int y = ly.i0; y <= ly.i1; y++) {
        const typename S::Y* r = y_row<S>(it, y);
#pragma unroll
        for (int k = 0; k < N; k++) {
            float v = row_luma<S>(r, lx[k]);
            if (y == ly.i0) {
                acc[k] = v * ly.w0;
                inner[k] = 0.f;
            } else if (y < ly.i1) {
                inner[k] = inner[k] + v;
            } else {
                acc[k] = (acc[k] + inner[k]) + v * ly.w1;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++) Y[k] = acc[k] / (wsum(lx[k]) * wsum(ly));
}

template <int N, typename S = Bytes>
__device__ __forceinline__ void area_chroma(const nvcam_convert_item& it, const int* dx, int dy, float* U, float* V) {
    Span cy, cx[N];
    chroma_spans<N>(it, dx, dy, cy, cx);
    float2 acc[N], inner[N];
#pragma unroll AREA_ROW_UNROLL
    for (int y = cy.i0; y <= cy.i1; y++) {
        const typename S::UV* c = uv_row<S>(it, y);
#pragma unroll
        for (int k = 0; k < N; k++) {
            float2 v = row_chroma<S>(c, cx[k]);
            if (y == cy.i0) {
                acc[k] = make_float2(v.x * cy.w0, v.y * cy.w0);
                inner[k] = make_float2(0.f, 0.f);
            } else if (y < cy.i1) {
                inner[k].x = inner[k].x + v.x;
                inner[k].y = inner[k].y + v.y;
            } else {
                acc[k].x = (acc[k].x + inner[k].x) + v.x * cy.w1;
                acc[k].y = (acc[k].y + inner[k].y) + v.y * cy.w1;
            }
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++) {
        float w = wsum(cx[k]) * wsum(cy);
        U[k] = acc[k].x / w;
        V[k] = acc[k].y / w;
    }
}

// ---- Box filter, footprint bounded at compile time -----------------------------------------------
//
// area_luma / area_chroma's values with no data-dependent branch: a footprint of at most F x F
// samples (F = 2, 3 or 4, the smallest that holds it) is read in fixed, unrolled loops whose
// indices are clamped into the footprint (so every load is inside it), and what the byte loop
// would skip is selected away instead of branched around. The profile of the byte loop: a quarter of its
// instructions were branches and their reconvergence, for about 26 loads per output pixel. The
// float operations are the same, in the same order (the CPU twin is unchanged).

// row_luma's value of the footprint whose first byte is p and whose last is p[n], n < FX.
template <int FX>
__device__ __forceinline__ float row_luma_fx(const u8* p, int n, float w0, float w1) {
    u32 b[FX];
#pragma unroll
    for (int j = 0; j < FX; j++) b[j] = __ldg(p + min(j, n));
    u32 sum = 0, last = b[0];
#pragma unroll
    for (int j = 1; j < FX; j++) {
        sum += j < n ? b[j] : 0u;
        last = j == n ? b[j] : last;
    }
    float v = u2f(b[0]) * w0;
    float m = (v + u2f(sum)) + u2f(last) * w1;
    return n > 0 ? m : v;
}

// row_chroma's value (U, V) of the footprint of UV pairs p[0] .. p[n], n < CX.
template <int CX>
__device__ __forceinline__ float2 row_chroma_fx(const u16* p, int n, float w0, float w1) {
    u32 c[CX];
#pragma unroll
    for (int j = 0; j < CX; j++) c[j] = __ldg(p + min(j, n));
    u32 su = 0, sv = 0, last = c[0];
#pragma unroll
    for (int j = 1; j < CX; j++) {
        u32 t = j < n ? c[j] : 0u;
        su += t & 0xff;
        sv += t >> 8;
        last = j == n ? c[j] : last;
    }
    float2 v = make_float2(u2f(c[0] & 0xff) * w0, u2f(c[0] >> 8) * w0);
    float mx = (v.x + u2f(su)) + u2f(last & 0xff) * w1;
    float my = (v.y + u2f(sv)) + u2f(last >> 8) * w1;
    return n > 0 ? make_float2(mx, my) : v;
}

// Component-wise product with a weight, and sum, of a luma value (float) or a chroma pair (float2).
__device__ __forceinline__ float scaled(float v, float w) {
    return v * w;
}
__device__ __forceinline__ float2 scaled(float2 v, float w) {
    return make_float2(v.x * w, v.y * w);
}
__device__ __forceinline__ float plus(float a, float b) {
    return a + b;
}
__device__ __forceinline__ float2 plus(float2 a, float2 b) {
    return make_float2(a.x + b.x, a.y + b.y);
}

// The rows of a vertical span s combined as the byte loop combines them, for N pixels: (R[i0] *
// w0 + (0 + the inner R, in row order)) + R[i1] * w1, or R[i0] * w0 for one row. F rows at most,
// unrolled; `row(y, k)` is pixel k's value of row y (rows past i1 are clamped to it, read and
// thrown away).
template <int N, int F, typename T, typename RowValue>
__device__ __forceinline__ void rows_fixed(const Span& s, RowValue row, T* out) {
    int ny = s.i1 - s.i0;
    T acc[N], inner[N], last[N];
#pragma unroll
    for (int r = 0; r < F; r++) {
        int y = s.i0 + min(r, ny);
#pragma unroll
        for (int k = 0; k < N; k++) {
            T v = row(y, k);
            if (r == 0) {
                acc[k] = scaled(v, s.w0);
                inner[k] = T{};
                last[k] = v;
            } else {
                inner[k] = r < ny ? plus(inner[k], v) : inner[k];
                last[k] = r == ny ? v : last[k];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++) out[k] = ny > 0 ? plus(plus(acc[k], inner[k]), scaled(last[k], s.w1)) : acc[k];
}

// area_luma's values from the spans (ly: rows; lx[k]: pixel k's columns), each at most F samples.
template <int N, int F>
__device__ __forceinline__ void luma_fixed(const nvcam_convert_item& it, const Span& ly, const Span* lx, float* Y) {
    float acc[N];
    rows_fixed<N, F>(ly, [&](int y, int k) { return row_luma_fx<F>(y_row(it, y) + lx[k].i0, lx[k].i1 - lx[k].i0, lx[k].w0, lx[k].w1); }, acc);
#pragma unroll
    for (int k = 0; k < N; k++) Y[k] = acc[k] / (wsum(lx[k]) * wsum(ly));
}

// area_chroma's values from the spans (cy: rows, at most FY; cx[k]: pixel k's UV pairs, at most
// FX). The two differ for sited chroma: left siting shifts the footprints by a quarter sample
// horizontally only, so 4K into 640 reads 3 rows of 4 pairs, not 4 of 4.
template <int N, int FY, int FX>
__device__ __forceinline__ void chroma_fixed(const nvcam_convert_item& it, const Span& cy, const Span* cx, float* U, float* V) {
    float2 acc[N];
    rows_fixed<N, FY>(cy, [&](int y, int k) { return row_chroma_fx<FX>(uv_row(it, y) + cx[k].i0, cx[k].i1 - cx[k].i0, cx[k].w0, cx[k].w1); }, acc);
#pragma unroll
    for (int k = 0; k < N; k++) {
        float w = wsum(cx[k]) * wsum(cy);
        U[k] = acc[k].x / w;
        V[k] = acc[k].y / w;
    }
}

// The box filter's luma for N pixels: the spans once, then the branch-free path whose bound fits
// the largest of them exactly (a larger bound costs clamped loads that are thrown away), or the
// byte loop beyond 4 samples (measured faster there: 4K to 640 wide, 6 samples, 0.56 x a copy's
// speed against 0.51 with a bound of 6).
template <int N>
__device__ __forceinline__ void area_luma_sized(const nvcam_convert_item& it, const int* dx, int dy, float* Y) {
    Span ly, lx[N];
    luma_spans<N>(it, dx, dy, ly, lx);
    int f = ly.i1 - ly.i0;
#pragma unroll
    for (int k = 0; k < N; k++) f = max(f, lx[k].i1 - lx[k].i0);
    if (f < 2) luma_fixed<N, 2>(it, ly, lx, Y);
    else if (f < 3) luma_fixed<N, 3>(it, ly, lx, Y);
    else if (f < 4) luma_fixed<N, 4>(it, ly, lx, Y);
    else area_luma<N>(it, dx, dy, Y);
}

// The same for chroma.
// chroma_fixed for FY rows and the smallest FX that holds fx + 1 pairs (fx < 4).
template <int N, int FY>
__device__ __forceinline__ void chroma_fixed_x(const nvcam_convert_item& it, const Span& cy, const Span* cx, int fx, float* U, float* V) {
    if (fx < 2) chroma_fixed<N, FY, 2>(it, cy, cx, U, V);
    else if (fx < 3) chroma_fixed<N, FY, 3>(it, cy, cx, U, V);
    else chroma_fixed<N, FY, 4>(it, cy, cx, U, V);
}

template <int N>
__device__ __forceinline__ void area_chroma_sized(const nvcam_convert_item& it, const int* dx, int dy, float* U, float* V) {
    Span cy, cx[N];
    chroma_spans<N>(it, dx, dy, cy, cx);
    int fy = cy.i1 - cy.i0, fx = 0;
#pragma unroll
    for (int k = 0; k < N; k++) fx = max(fx, cx[k].i1 - cx[k].i0);
    if (max(fx, fy) >= 4) area_chroma<N>(it, dx, dy, U, V);
    else if (fy < 2) chroma_fixed_x<N, 2>(it, cy, cx, fx, U, V);
    else if (fy < 3) chroma_fixed_x<N, 3>(it, cy, cx, fx, U, V);
    else chroma_fixed_x<N, 4>(it, cy, cx, fx, U, V);
}

// The box filter's Y, Cb, Cr of N pixels: NV12 through the footprint-sized paths above, P016
// through the generic loops (area_luma / area_chroma on 16-bit samples).
template <int N>
__device__ __forceinline__ void area(const nvcam_convert_item& it, const int* dx, int dy, float* Y, float* U, float* V, Bytes) {
    area_luma_sized<N>(it, dx, dy, Y);
    area_chroma_sized<N>(it, dx, dy, U, V);
}

template <int N>
__device__ __forceinline__ void area(const nvcam_convert_item& it, const int* dx, int dy, float* Y, float* U, float* V, Words) {
    area_luma<N, Words>(it, dx, dy, Y);
    area_chroma<N, Words>(it, dx, dy, U, V);
}

#endif  // NVCAM_AREA_CUH
