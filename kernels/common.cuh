// nvcam's frame conversion kernels: NV12 or P016 -> BGRA8 / BGR8 / RGB8 / GRAY8 / planar RGB f32 /
// f16, with crop (ROI), resize (bilinear; box/area for down-scales beyond 2x) and letterbox in one
// pass.
//
// Built by scripts/build/build-kernels.sh with NVRTC (no CUDA toolkit, no host compiler) into
// kernels/nvcam_kernels.fatbin, which the library embeds. The Rust CPU path (src/convert/cpu.rs)
// computes the same values: NVRTC runs with --fmad=false so the GPU does not contract the float
// operations into FMAs, every float operation that rounds is done in the same order on both sides,
// and where the kernel takes a shortcut (integer sums, integer chroma weights at the same scale,
// bytes made floats by the 2^23 trick) the shortcut is exact. The GPU tests find both
// bit-identical.
//
// Speed: a thread writes PX neighbouring output pixels of one row (the *_PX shapes in
// nvcam_abi.cuh, from src/convert/launch.rs: 8 at the same scale for 8-bit formats, 4 for float formats, 4 bilinear, 2 box); at the
// same scale it does so on two rows (*_ROWS), which share their chroma rows and set-up, with
// vector stores where the address allows (packed RGB goes through shared memory so that a warp's
// stores are whole lines); bytes become floats by an integer OR and a float subtraction and floats
// become bytes by one F2I, so the per-pixel work at the same scale is a few dozen instructions.
// The box filter, per pixel, reads footprints of up to 4 x 4 samples without a data-dependent
// branch (clamped loads, selects), larger ones byte by byte with several rows' loads in flight.
// For large footprints (tiled_scale: over 36 samples, or 16 to 36 of a fractional width) a block
// instead stages its whole footprint in shared memory (16-byte asynchronous copies) and sums each
// row's inner samples four bytes at a time (masked words, dp4a): area_tiled.cuh; the
// host launches those on kernels of their own (_area_tiled, _area4 with a thread on 4 rows for
// large outputs, _batch_tiled) with dynamic shared memory. (Tried and measured slower, in git history at 3234cab: the per-pixel
// rows as dp4a sums of aligned words, and from a shared-memory copy of the block's footprint;
// both bit-identical.) One kernel per sampling mode (fewer registers), and one for batches (any
// mode per item). scripts/bench/convert-kernel-bench.py measures builds against each other on a GPU.
//
// P016 frames (10- and 12-bit streams: NV12's layout, 16-bit samples with the stream's bits high)
// have kernels of their own, nvcam_convert_p016 and nvcam_convert_batch_p016 (the host picks them
// by the item's `depth`): any mode, the generic bilinear and box filter loops on 16-bit samples
// (`Words` below), none of the 8-bit paths' byte tricks, so those stay as tuned.
//
// Parameter layout: `nvcam_convert_common` + `nvcam_convert_item`, from nvcam_abi.cuh, which
// `cargo xtask gen` writes from src/gpu/params.rs with the format and mode codes and the
// launch shapes (src/convert/launch.rs sizes its grids by them). A batch passes up to
// NVCAM_BATCH_PER_LAUNCH items by value (the whole block stays under the 4 KiB kernel-parameter
// limit of every driver); item = blockIdx.z.
//
// Files: this header holds what every path shares (types, sample reads, colour); bilinear.cuh,
// area.cuh (box filter per pixel), area_tiled.cuh (box filter through shared memory),
// same_scale.cuh and store.cuh the paths; convert.cuh a thread's pixels, sampled and stored; the
// convert_*.cu files the entry kernels, a file per family. scripts/build/build-kernels.sh compiles
// kernels/*.cu as one translation unit (one module); kernels/test/ holds the kernels only tests
// load, in a fatbin of their own.

#ifndef NVCAM_COMMON_CUH
#define NVCAM_COMMON_CUH

#include "nvcam_abi.cuh"

typedef unsigned char u8;
typedef unsigned short u16;

// Blocks per SM the kernels are built for (BLOCK_X x BLOCK_Y threads each, nvcam_abi.cuh): 1,024
// resident threads, so 64 registers each. 128 threads a block rather than 256: finer blocks
// balance the SMs better at 1080p (measured: +0.02 of a copy's speed for the 8-bit same-scale
// kernel, the same elsewhere).
#define MIN_BLOCKS 8

__device__ __forceinline__ float clampf(float v, float lo, float hi) {
    return fminf(fmaxf(v, lo), hi);
}

__device__ __forceinline__ int clampi(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

// An integer 0 <= v < 2^23 as a float, exactly: 2^23 + v has v in its mantissa.
__device__ __forceinline__ float u2f(u32 v) {
    return __int_as_float(0x4B000000u | v) - 8388608.f;
}

// 2^23 + byte k of w, as a float (one byte permute); subtract 2^23 (+ an integer) to use it.
__device__ __forceinline__ float byte_2p23(u32 w, int k) {
    return __int_as_float(__byte_perm(w, 0x4B000000u, 0x7440 | k));
}

// clamp(v, 0, 255) rounded to nearest, ties to even (the CPU's `to_u8`): one F2I, which
// saturates to 0..255 (NaN: 0).
__device__ __forceinline__ u32 to_u8(float v) {
    u32 r;
    asm("cvt.rni.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// B, G, R, A = 255 in one word (little-endian BGRA).
__device__ __forceinline__ u32 bgra(float r, float g, float b) {
    return __byte_perm(__byte_perm(to_u8(b), to_u8(g), 0x3340), to_u8(r) | 0xff00u, 0x5410);
}

__device__ __forceinline__ u32 to_half(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float norm(const nvcam_convert_common& c, float v, int ch) {
    return clampf(v, 0.f, 255.f) * c.nscale[ch] + c.noff[ch];
}

// A source sample (byte) and UV pair (two bytes) in 0..255 units.
__device__ __forceinline__ float ld(const u8* row, int x) {
    return u2f(__ldg(row + x));
}

__device__ __forceinline__ float2 ld2(const u16* row, int x) {
    u32 c = __ldg(row + x);
    return make_float2(u2f(c & 0xff), u2f(c >> 8));
}

// ---- Sample widths -----------------------------------------------------------------------------
//
// How the generic paths (bilinear, the box filter's loops) read a frame's planes: Y samples of
// type Y, UV pairs of type UV (U in the low half), a sample's value in 0..255 units (`ld`, `ld2`),
// the integer value of a sample or pair's half (`u`, `v` of a loaded pair) for the box filter's
// inner sums, and such a sum in 0..255 units (`sum`). The 8-bit fast paths read NV12 bytes
// directly and are used only for `Bytes` (FAST).

// NV12: bytes, exactly what the 8-bit paths compute.
struct Bytes {
    typedef u8 Y;
    typedef u16 UV;
    static constexpr bool FAST = true;
    __device__ static __forceinline__ float ld(const u8* row, int x) { return ::ld(row, x); }
    __device__ static __forceinline__ float2 ld2(const u16* row, int x) { return ::ld2(row, x); }
    __device__ static __forceinline__ u32 u(u32 c) { return c & 0xff; }
    __device__ static __forceinline__ u32 v(u32 c) { return c >> 8; }
    __device__ static __forceinline__ float sum(u32 s) { return (float)s; }
};

// 1 / 256: a 16-bit sample v is v / 256 in 0..255 units (exact: a power of two), so y_off, the
// chroma centre 128 and the coefficients are the 8-bit ones (10-bit limited-range Y 64..940 << 6
// is 16.0..235.0 exactly).
#define WORD_UNIT 0.00390625f

// P016: little-endian 16-bit words, a UV pair in one 32-bit word. A sum of n samples is exact in
// a u32 (n < 65537); made a float it rounds only past 2^24, as the CPU twin's does.
struct Words {
    typedef u16 Y;
    typedef u32 UV;
    static constexpr bool FAST = false;
    __device__ static __forceinline__ float ld(const u16* row, int x) { return u2f(__ldg(row + x)) * WORD_UNIT; }
    __device__ static __forceinline__ float2 ld2(const u32* row, int x) {
        u32 c = __ldg(row + x);
        return make_float2(u2f(c & 0xffff) * WORD_UNIT, u2f(c >> 16) * WORD_UNIT);
    }
    __device__ static __forceinline__ u32 u(u32 c) { return c & 0xffff; }
    __device__ static __forceinline__ u32 v(u32 c) { return c >> 16; }
    __device__ static __forceinline__ float sum(u32 s) { return (float)s * WORD_UNIT; }
};

// Rows of the source planes, read through the read-only cache. S: the sample width (Bytes for
// NV12, Words for P016); the pitch is in bytes either way.
template <typename S = Bytes>
__device__ __forceinline__ const typename S::Y* y_row(const nvcam_convert_item& it, int y) {
    return (const typename S::Y*)((const u8*)it.y + (u64)y * it.src_pitch);
}

template <typename S = Bytes>
__device__ __forceinline__ const typename S::UV* uv_row(const nvcam_convert_item& it, int y) {
    return (const typename S::UV*)((const u8*)it.uv + (u64)y * it.src_pitch);
}

__device__ __forceinline__ float lerp(float a, float b, float f) {
    return a + (b - a) * f;
}

// R, G, B from yy and the chroma offsets (gray: yy in R, the only channel it stores).
__device__ __forceinline__ void rgb(const nvcam_convert_item& it, u32 format, float yy, float du, float dv, float* r, float* g, float* b) {
    if (format == FMT_GRAY8) {
        *r = yy;
    } else {
        *r = yy + dv * it.k_r;
        *g = (yy - du * it.k_gb) - dv * it.k_gr;
        *b = yy + du * it.k_b;
    }
}

#endif  // NVCAM_COMMON_CUH
