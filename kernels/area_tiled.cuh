// nvcam conversion kernels: the box filter of large footprints through shared memory (common.cuh
// says how the files fit together).
#ifndef NVCAM_AREA_TILED_CUH
#define NVCAM_AREA_TILED_CUH

#include "area.cuh"
#include "store.cuh"

// ---- Box filter, tiled -------------------------------------------------------------------------
//
// The per-pixel box filter (area.cuh) reads each pixel's footprint with chains of dependent byte
// loads: at 4096x2160 into 640x640 it ran at a fifth of a copy's speed. Here a block (32 PX
// output columns, BLOCK_Y RPT rows) first stages its whole footprint (the luma and chroma
// rectangles its pixels read) in shared memory with 16-byte asynchronous copies, all in flight at
// once. Then each thread, for each of its pixels, takes each row of the pixel's footprint from
// there (row_luma's and row_chroma's float operations, the inner samples summed four bytes at a
// time: masked words, dp4a) and combines the rows in row order (area_luma's vertical
// combination), divides by the spans' weights, makes R'G'B' and stores. The operations and their
// order are the per-pixel path's, so the values are bit-identical to it and to the CPU twin.
//
// The host gives the launch dynamic shared memory for the footprint its scale implies
// (src/convert/launch.rs, area_smem); a block whose footprint does not fit (or a frame whose planes
// are not 16-byte aligned) takes the per-pixel path instead, so the bound is a matter of speed,
// never of values.

__device__ __forceinline__ u32 dynamic_smem_size() {
    u32 r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}

// Copies 16 bytes from global to shared memory, asynchronously where the GPU can (sm_80+).
__device__ __forceinline__ void stage16(void* s, const void* g) {
#if __CUDA_ARCH__ >= 800
    u32 a = (u32)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g));
#else
    *(uint4*)s = __ldg((const uint4*)g);
#endif
}

__device__ __forceinline__ void stage_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
    __syncthreads();
}

// Bytes of w weighed by the bytes of k, summed (exact).
__device__ __forceinline__ u32 dot4(u32 w, u32 k, u32 acc) {
#if __CUDA_ARCH__ >= 610
    u32 r;
    asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(w), "r"(k), "r"(acc));
    return r;
#else
    return acc + (w & 0xff) * (k & 0xff) + ((w >> 8) & 0xff) * ((k >> 8) & 0xff) + ((w >> 16) & 0xff) * ((k >> 16) & 0xff) + (w >> 24) * (k >> 24);
#endif
}

// Bytes [lo, hi) of a word (each clamped to 0..4) as a mask.
__device__ __forceinline__ u32 byte_mask(int lo, int hi) {
    lo = clampi(lo, 0, 4);
    hi = clampi(hi, 0, 4);
    u32 h = hi >= 4 ? 0xffffffffu : (1u << (8 * hi)) - 1u;
    u32 l = lo >= 4 ? 0xffffffffu : (1u << (8 * lo)) - 1u;
    return h & ~l;
}

// The largest value of v over the warp.
__device__ __forceinline__ int warp_max(int v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// A staged rectangle: rows [y0, y0 + rows) of a plane, bytes [x0, x0 + width) of each (x0 and
// width multiples of 16).
struct Staged {
    int y0, rows, x0, width;
};

__device__ __forceinline__ Staged staged(int xa, int xb, int ya, int yb) {
    Staged s;
    s.x0 = xa & ~15;
    s.width = (xb + 1 - s.x0 + 15) & ~15;
    s.y0 = ya;
    s.rows = yb - ya + 1;
    return s;
}

// Issues the 16-byte copies of a staged rectangle of `plane` (rows `pitch` apart): a warp per
// row, its lanes along it.
__device__ __forceinline__ void stage_rect(u8* smem, const Staged& s, u64 plane, u64 pitch) {
    int per_row = s.width >> 4;
    for (int r = threadIdx.y; r < s.rows; r += BLOCK_Y) {
        const u8* g = (const u8*)plane + (u64)(s.y0 + r) * pitch + s.x0;
        u8* d = smem + r * s.width;
        for (int q = threadIdx.x; q < per_row; q += BLOCK_X) stage16(d + 16 * q, g + 16 * q);
    }
}

// One output column's horizontal footprint in a staged row: its first sample at byte `rel0` of
// the row, its last at `rel1` (samples of `unit` bytes: 1 luma, 2 a UV pair), their weights, and
// NW word masks of the inner samples' bytes from word rel0 / 4.
template <int NW>
struct Cols {
    int word, n;      // the first word; samples after the first (i1 - i0)
    int sh0, last, shl;  // the first sample's shift in word 0; the word and shift of the last
    float w0, w1;
    u32 m[NW];
};

template <int NW>
__device__ __forceinline__ void cols(Cols<NW>& c, const Span& s, int x0, int unit) {
    int rel0 = s.i0 * unit - x0, rel1 = s.i1 * unit - x0;
    c.word = rel0 >> 2;
    c.n = s.i1 - s.i0;
    c.sh0 = 8 * (rel0 & 3);
    c.last = (rel1 >> 2) - c.word;
    c.shl = 8 * (rel1 & 3);
    c.w0 = s.w0;
    c.w1 = s.w1;
#pragma unroll
    for (int k = 0; k < NW; k++) c.m[k] = byte_mask(rel0 + unit - 4 * (c.word + k), rel1 - 4 * (c.word + k));
}

// The row's NW words from the column's first, and the last sample's word (loaded again: a
// select among registers became a local-memory array).
template <int NW>
__device__ __forceinline__ void row_words(const u8* row, const Cols<NW>& c, u32* w, u32* lw) {
    const u32* p = (const u32*)row + c.word;
#pragma unroll
    for (int k = 0; k < NW; k++) w[k] = p[k];
    *lw = p[c.last];
}

// row_luma's value of one staged row for column c.
template <int NW>
__device__ __forceinline__ float row_luma_words(const u8* row, const Cols<NW>& c) {
    u32 w[NW], lw;
    row_words<NW>(row, c, w, &lw);
    u32 inner = 0;
#pragma unroll
    for (int k = 0; k < NW; k++) inner = dot4(w[k] & c.m[k], 0x01010101u, inner);
    float v = u2f((w[0] >> c.sh0) & 0xff) * c.w0;
    float m = (v + u2f(inner)) + u2f((lw >> c.shl) & 0xff) * c.w1;
    return c.n > 0 ? m : v;
}

// row_chroma's value (U, V) of one staged row for column c.
template <int NW>
__device__ __forceinline__ float2 row_chroma_words(const u8* row, const Cols<NW>& c) {
    u32 w[NW], lw;
    row_words<NW>(row, c, w, &lw);
    u32 su = 0, sv = 0;
#pragma unroll
    for (int k = 0; k < NW; k++) {
        su = dot4(w[k] & c.m[k], 0x00010001u, su);
        sv = dot4(w[k] & c.m[k], 0x01000100u, sv);
    }
    u32 a = w[0] >> c.sh0, b = lw >> c.shl;
    float2 v = make_float2(u2f(a & 0xff) * c.w0, u2f((a >> 8) & 0xff) * c.w0);
    float mx = (v.x + u2f(su)) + u2f(b & 0xff) * c.w1;
    float my = (v.y + u2f(sv)) + u2f((b >> 8) & 0xff) * c.w1;
    return c.n > 0 ? make_float2(mx, my) : v;
}

// The words a footprint of span s needs from its first word (samples of `unit` bytes).
__device__ __forceinline__ int words_needed(const Span& s, int x0, int unit) {
    int rel0 = s.i0 * unit - x0, rel1 = s.i1 * unit - x0 + unit - 1;
    return (rel1 >> 2) - (rel0 >> 2) + 1;
}

// The rows of span s (staged rows `base` on, `width` bytes apart) combined as area_luma combines
// them, each row's value `row(p)` from the row's first byte p.
template <typename T, typename RowValue>
__device__ __forceinline__ T combine_staged(const u8* rows, int width, const Span& s, int base, RowValue row) {
    const u8* p = rows + (s.i0 - base) * width;
    int n = s.i1 - s.i0;
    T acc = scaled(row(p), s.w0);
    if (n > 0) {
        T inner = T{};
#pragma unroll 2
        for (int y = 1; y < n; y++) inner = plus(inner, row(p + y * width));
        acc = plus(plus(acc, inner), scaled(row(p + n * width), s.w1));
    }
    return acc;
}

// The most words a row footprint may take in the tiled path (wider ones: per pixel).
#define TILED_WORDS 6
// Which box filters take the tiled path: footprints (luma samples per output pixel, sx sy) over
// 36, and those of 16 to 36 whose width sx is not a whole number. Measured on an H100 against the
// per-pixel path: 1080p into 640x640 (3 x 3) 0.47 x a copy against 0.61; 3840x2160 into 640x640
// (6 x 6: the per-pixel footprints keep one shape) 0.45 against 0.54; 4096x2160 into 640x640
// (6.4 x 6.4) 0.29 against 0.20; 3840x2160 into 320x320 (12 x 12) 0.65 against 0.35.
__device__ __forceinline__ bool tiled_scale(const nvcam_convert_item& it) {
    float f = it.sx * it.sy;
    return f > 36.f || (f >= 16.f && it.sx != floorf(it.sx));
}

// What the threads of a tile share: the staged rectangles and the block's image pixels.
struct Tile {
    Staged L, C;
    const u8 *sl, *sc;
    int ix0, ix1, iy0, iy1;
    bool gray;
};

// A thread's pixels of a tile: columns ox0 + lane + 32 k (k < PX; their spans sx, cx), rows oy ..
// oy + RPT - 1; NW words per row footprint (one code path per warp: the caller picks NW for
// the whole warp). Rows one at a time and not unrolled: the kernel's code stays small enough
// for the instruction cache (unrolled, warps stalled on fetching half the time).
template <int NW, int PX, int RPT>
__device__ __forceinline__ void tile_pixels(const nvcam_convert_common& c, const nvcam_convert_item& it, const Tile& t, const Span* sx, const Span* cx, int ox0, int oy) {
#pragma unroll
    for (int k = 0; k < PX; k++) {
        int ox = ox0 + k * BLOCK_X + threadIdx.x;
        if (ox >= c.out_w) continue;
        bool col_in = ox >= t.ix0 && ox <= t.ix1;
        Cols<NW> cl, cc;
        cols<NW>(cl, sx[k], t.L.x0, 1);
        if (!t.gray) cols<NW>(cc, cx[k], t.C.x0, 2);
        float wx = wsum(sx[k]), wcx = t.gray ? 1.f : wsum(cx[k]);
#pragma unroll 1
        for (int q = 0; q < RPT; q++) {
            int y = oy + q;
            if (y >= c.out_h) break;
            float r = c.pad[0], g = c.pad[1], b = c.pad[2];
            if (col_in && y >= t.iy0 && y <= t.iy1) {
                int dx[1] = {0};
                Span sy, cy, s1[1];
                luma_spans<1>(it, dx, y - it.img_y, sy, s1);
                float Y = combine_staged<float>(t.sl, t.L.width, sy, t.L.y0, [&](const u8* p) { return row_luma_words<NW>(p, cl); });
                Y = Y / (wx * wsum(sy));
                float U = 128.f, V = 128.f;
                if (!t.gray) {
                    chroma_spans<1>(it, dx, y - it.img_y, cy, s1);
                    float2 uv = combine_staged<float2>(t.sc, t.C.width, cy, t.C.y0, [&](const u8* p) { return row_chroma_words<NW>(p, cc); });
                    float w = wcx * wsum(cy);
                    U = uv.x / w;
                    V = uv.y / w;
                }
                float yy = (Y - it.y_off) * it.y_scale;
                rgb(it, c.format, yy, U - 128.f, V - 128.f, &r, &g, &b);
            }
            store<1, -1>(c, it, ox, y, false, &r, &g, &b);
        }
    }
}

// The box filter of the block's tile of the output (32 PX columns, BLOCK_Y RPT rows; a thread
// takes columns lane + 32 k and RPT consecutive rows) through shared memory, pixels outside the
// image as pad, stored. Returns false, having done nothing, when the planes are not 16-byte
// aligned, the scale is not one tiled_scale takes, a row footprint is wider than TILED_WORDS
// words or the tile's does not fit the launch's shared memory (the caller then converts the block
// per pixel). The same for every thread of the block.
template <int PX, int RPT>
__device__ __forceinline__ bool area_tiled(const nvcam_convert_common& c, const nvcam_convert_item& it) {
    extern __shared__ __align__(16) u8 smem[];
    const int TW = BLOCK_X * PX, TH = BLOCK_Y * RPT;
    int ox0 = blockIdx.x * TW, oy0 = blockIdx.y * TH;
    int oy = oy0 + threadIdx.y * RPT;
    Tile t;
    // The block's image pixels: columns [ix0, ix1], rows [iy0, iy1] of the output.
    t.ix0 = max(ox0, it.img_x);
    t.ix1 = min(min(ox0 + TW, it.img_x + it.img_w), c.out_w) - 1;
    t.iy0 = max(oy0, it.img_y);
    t.iy1 = min(min(oy0 + TH, it.img_y + it.img_h), c.out_h) - 1;
    if (t.ix0 > t.ix1 || t.iy0 > t.iy1) {
        // Letterbox bars: pad only.
        float r = c.pad[0], g = c.pad[1], b = c.pad[2];
#pragma unroll
        for (int k = 0; k < PX; k++) {
            int ox = ox0 + k * BLOCK_X + threadIdx.x;
#pragma unroll
            for (int q = 0; q < RPT; q++)
                if (ox < c.out_w && oy + q < c.out_h) store<1, -1>(c, it, ox, oy + q, false, &r, &g, &b);
        }
        return true;
    }
    if (((it.y | it.uv | it.src_pitch) & 15) != 0 || !tiled_scale(it)) return false;
    t.gray = c.format == FMT_GRAY8;
    int ncols = t.ix1 - t.ix0 + 1;
    // The footprints: the block's first and last columns and rows bound them.
    Span ya, yb, xa[1], xb[1], cya, cyb, cxa[1], cxb[1];
    int d0[1] = {t.ix0 - it.img_x}, d1[1] = {t.ix1 - it.img_x};
    luma_spans<1>(it, d0, t.iy0 - it.img_y, ya, xa);
    luma_spans<1>(it, d1, t.iy1 - it.img_y, yb, xb);
    t.L = staged(xa[0].i0, xb[0].i1, ya.i0, yb.i1);
    t.C = Staged{0, 0, 0, 0};
    if (!t.gray) {
        chroma_spans<1>(it, d0, t.iy0 - it.img_y, cya, cxa);
        chroma_spans<1>(it, d1, t.iy1 - it.img_y, cyb, cxb);
        t.C = staged(2 * cxa[0].i0, 2 * cxb[0].i1 + 1, cya.i0, cyb.i1);
    }
    // This thread's columns' spans, and the words their rows need (every footprint of the block
    // must fit TILED_WORDS: __syncthreads_or).
    Span sx[PX], cx[PX];
    int nw = 1;
#pragma unroll
    for (int k = 0; k < PX; k++) {
        int dx[1] = {t.ix0 - it.img_x + min(k * BLOCK_X + (int)threadIdx.x, ncols - 1)};
        Span s0, s1[1];
        luma_spans<1>(it, dx, 0, s0, s1);
        sx[k] = s1[0];
        nw = max(nw, words_needed(sx[k], t.L.x0, 1));
        if (!t.gray) {
            chroma_spans<1>(it, dx, 0, s0, s1);
            cx[k] = s1[0];
            nw = max(nw, words_needed(cx[k], t.C.x0, 2));
        }
    }
    // Shared memory: luma bytes, chroma bytes, and TILED_WORDS words that the last row's
    // footprints may read past its end (masked away).
    u32 lbytes = (u32)(t.L.rows * t.L.width), cbytes = (u32)(t.C.rows * t.C.width);
    u32 need = lbytes + cbytes + 4u * TILED_WORDS;
    bool fits = need <= dynamic_smem_size() && nw <= TILED_WORDS;
    if (__syncthreads_or(!fits)) return false;
    t.sl = smem;
    t.sc = smem + lbytes;
    stage_rect(smem, t.L, it.y, it.src_pitch);
    if (!t.gray) stage_rect(smem + lbytes, t.C, it.uv, it.src_pitch);
    stage_wait();
    if (oy >= c.out_h) return true;
    // The word count, uniform per warp (its threads share the rows: no divergence).
    switch (warp_max(nw)) {
    case 1:
    case 2: tile_pixels<2, PX, RPT>(c, it, t, sx, cx, ox0, oy); break;
    case 3: tile_pixels<3, PX, RPT>(c, it, t, sx, cx, ox0, oy); break;
    case 4: tile_pixels<4, PX, RPT>(c, it, t, sx, cx, ox0, oy); break;
    default: tile_pixels<TILED_WORDS, PX, RPT>(c, it, t, sx, cx, ox0, oy); break;
    }
    return true;
}

#endif  // NVCAM_AREA_TILED_CUH
