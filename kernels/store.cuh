// nvcam conversion kernels: output stores (common.cuh says how the files fit together).
#ifndef NVCAM_STORE_CUH
#define NVCAM_STORE_CUH

#include "common.cuh"

// ---- Stores ------------------------------------------------------------------------------------

// N consecutive 32-bit words at o: 16-, 8- or 4-byte stores as N and `aligned` (o aligned to
// the widest) allow.
template <int N>
__device__ __forceinline__ void store_words(u32* o, const u32* w, bool aligned) {
    if (N % 4 == 0 && aligned) {
#pragma unroll
        for (int q = 0; q < N / 4; q++) ((uint4*)o)[q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
    } else if (N % 2 == 0 && aligned) {
#pragma unroll
        for (int q = 0; q < N / 2; q++) ((uint2*)o)[q] = make_uint2(w[2 * q], w[2 * q + 1]);
    } else {
#pragma unroll
        for (int q = 0; q < N; q++) o[q] = w[q];
    }
}

// The alignment store_words<N> wants for its widest stores.
template <int N>
__device__ __forceinline__ bool words_aligned(const void* o) {
    return ((u64)o & (N % 4 == 0 ? 15 : (N % 2 == 0 ? 7 : 3))) == 0;
}

// Packed 3-byte pixels through shared memory: a full warp (32 threads x PX pixels, inside the
// row, 4-byte aligned) writes whole consecutive words; 3 PX / 4 words per thread.
template <int PX>
__device__ __forceinline__ void store_rgb_warp(u32* o, const u32* words) {
    const int W = 3 * PX / 4;
    static_assert(W <= 6, "store_rgb_warp holds 8 pixels per thread at most");
    __shared__ u32 buf[BLOCK_Y][32 * 6];
    u32* sb = buf[threadIdx.y];
    int lane = threadIdx.x;
    __syncwarp();  // the previous group's reads of sb are done
#pragma unroll
    for (int j = 0; j < W; j++) sb[lane * W + j] = words[j];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < W; j++) o[j * 32 + lane] = sb[j * 32 + lane];
}

// The 8-bit formats' stores of PX pixels at ox0 of `row` (n of them inside the row).
template <int PX>
__device__ __forceinline__ void store8(u32 format, u8* row, int ox0, int n, bool warp_full, const float* r, const float* g, const float* b) {
    switch (format) {
    case FMT_BGRA8: {
        u32 px[PX];
#pragma unroll
        for (int k = 0; k < PX; k++) px[k] = bgra(r[k], g[k], b[k]);
        u32* o = (u32*)row + ox0;
        if (n == PX) {
            store_words<PX>(o, px, words_aligned<PX>(o));
        } else {
#pragma unroll
            for (int k = 0; k < PX; k++)
                if (k < n) o[k] = px[k];
        }
        break;
    }
    case FMT_BGR8:
    case FMT_RGB8: {
        // [r, g] then b into bytes 2, 1, 0 (BGR) or 0, 1, 2 (RGB): one permute whose selector is
        // chosen once, not both orders packed and one of them thrown away per pixel.
        u32 order = format == FMT_BGR8 ? 0x5014u : 0x5410u;
        u32 px[PX];  // [c0, c1, c2, 0]
#pragma unroll
        for (int k = 0; k < PX; k++) px[k] = __byte_perm(__byte_perm(to_u8(r[k]), to_u8(g[k]), 0x3340), to_u8(b[k]), order);
        u8* o = row + 3 * ox0;
        if (PX % 4 == 0 && n == PX) {
            u32 words[PX % 4 == 0 ? 3 * PX / 4 : 1];
#pragma unroll
            for (int q = 0; q < PX / 4; q++) {
                words[3 * q] = __byte_perm(px[4 * q], px[4 * q + 1], 0x4210);
                words[3 * q + 1] = __byte_perm(px[4 * q + 1], px[4 * q + 2], 0x5421);
                words[3 * q + 2] = __byte_perm(px[4 * q + 2], px[4 * q + 3], 0x6542);
            }
            // The warp's first byte (lane 0's) decides for the whole warp.
            u64 warp_start = (u64)(o - 3 * PX * threadIdx.x);
            if (warp_full && (warp_start & 3) == 0) {
                store_rgb_warp<PX>((u32*)warp_start, words);
                break;
            }
            if (((u64)o & 3) == 0) {
#pragma unroll
                for (int j = 0; j < 3 * PX / 4; j++) ((u32*)o)[j] = words[j];
                break;
            }
        }
#pragma unroll
        for (int k = 0; k < PX; k++) {
            if (k < n) {
                o[3 * k] = (u8)px[k];
                o[3 * k + 1] = (u8)(px[k] >> 8);
                o[3 * k + 2] = (u8)(px[k] >> 16);
            }
        }
        break;
    }
    case FMT_GRAY8: {
        u8* o = row + ox0;
        if (PX % 4 == 0 && n == PX && ((u64)o & 3) == 0) {
            u32 v[PX % 4 == 0 ? PX / 4 : 1];
#pragma unroll
            for (int q = 0; q < PX / 4; q++)
                v[q] = __byte_perm(__byte_perm(to_u8(r[4 * q]), to_u8(r[4 * q + 1]), 0x3340), __byte_perm(to_u8(r[4 * q + 2]), to_u8(r[4 * q + 3]), 0x3340), 0x5410);
            store_words<PX / 4>((u32*)o, v, words_aligned<PX / 4>(o));
        } else {
#pragma unroll
            for (int k = 0; k < PX; k++)
                if (k < n) o[k] = (u8)to_u8(r[k]);
        }
        break;
    }
    default:
        break;
    }
}

// The float formats' stores (planes dst_plane bytes apart).
template <int PX>
__device__ __forceinline__ void storef(const nvcam_convert_common& c, u8* row, int ox0, int n, const float* r, const float* g, const float* b) {
    switch (c.format) {
    case FMT_RGB_F32: {
#pragma unroll
        for (int ch = 0; ch < 3; ch++) {
            const float* src = ch == 0 ? r : (ch == 1 ? g : b);
            u32 v[PX];
#pragma unroll
            for (int k = 0; k < PX; k++) v[k] = __float_as_uint(norm(c, src[k], ch));
            u32* o = (u32*)(row + ch * c.dst_plane) + ox0;
            if (n == PX) {
                store_words<PX>(o, v, words_aligned<PX>(o));
            } else {
#pragma unroll
                for (int k = 0; k < PX; k++)
                    if (k < n) o[k] = v[k];
            }
        }
        break;
    }
    case FMT_RGB_F16: {
#pragma unroll
        for (int ch = 0; ch < 3; ch++) {
            const float* src = ch == 0 ? r : (ch == 1 ? g : b);
            u32 h[PX];
#pragma unroll
            for (int k = 0; k < PX; k++) h[k] = to_half(norm(c, src[k], ch));
            u16* o = (u16*)(row + ch * c.dst_plane) + ox0;
            if (PX % 2 == 0 && n == PX && words_aligned<PX / 2>(o)) {
                u32 w[PX % 2 == 0 ? PX / 2 : 1];
#pragma unroll
                for (int q = 0; q < PX / 2; q++) w[q] = h[2 * q] | (h[2 * q + 1] << 16);
                store_words<PX / 2>((u32*)o, w, true);
            } else {
#pragma unroll
                for (int k = 0; k < PX; k++)
                    if (k < n) o[k] = (u16)h[k];
            }
        }
        break;
    }
    default:
        break;
    }
}

// Writes PX pixels (those below out_w) at (ox0, oy): vector stores when all PX are there and
// the address is aligned, else one store per pixel. `warp_full`: every thread of this warp is
// here with PX pixels inside the row (the same for the whole warp). FC: the formats compiled in
// (0: 8-bit ones, 1: float ones, -1: all).
template <int PX, int FC>
__device__ __forceinline__ void store(const nvcam_convert_common& c, const nvcam_convert_item& it, int ox0, int oy, bool warp_full, const float* r, const float* g, const float* b) {
    int n = min(PX, c.out_w - ox0);
    u8* row = (u8*)it.dst + (u64)oy * c.dst_pitch;
    if (c.format >= FMT_RGB_F32) {
        if (FC != 0) storef<PX>(c, row, ox0, n, r, g, b);
    } else if (FC != 1) {
        store8<PX>(c.format, row, ox0, n, warp_full, r, g, b);
    }
}

#endif  // NVCAM_STORE_CUH
