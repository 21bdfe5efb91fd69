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
// Speed: a thread writes PX neighbouring output pixels of one row (the *_PX and *_G tunables
// below: 8 at the same scale for 8-bit formats, 4 for float formats, 4 bilinear, 2 box); at the
// same scale it does so on two rows (*_ROWS), which share their chroma rows and set-up, with
// vector stores where the address allows (packed RGB goes through shared memory so that a warp's
// stores are whole lines); bytes become floats by an integer OR and a float subtraction and floats
// become bytes by one F2I, so the per-pixel work at the same scale is a few dozen instructions.
// The box filter, per pixel, reads footprints of up to 4 x 4 samples without a data-dependent
// branch (clamped loads, selects), larger ones byte by byte with several rows' loads in flight.
// For large footprints (tiled_scale: over 36 samples, or 16 to 36 of a fractional width) a block
// instead stages its whole footprint in shared memory (16-byte asynchronous copies) and sums each
// row's inner samples four bytes at a time (masked words, dp4a): "Box filter, tiled" below; the
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
// Parameter layout: `nvcam_convert_common` + `nvcam_convert_item`, mirrored by
// src/convert/params.rs, which asserts the sizes and offsets; keep both in the same order, all 4-
// or 8-byte fields. A batch passes up to NVCAM_BATCH_PER_LAUNCH items by value (the whole block
// stays under the 4 KiB kernel-parameter limit of every driver); item = blockIdx.z.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

// Output formats (NVCAM_PIXEL_* values in the C API).
#define FMT_BGRA8 1
#define FMT_BGR8 2
#define FMT_RGB8 3
#define FMT_GRAY8 4
#define FMT_RGB_F32 5
#define FMT_RGB_F16 6

// How an item samples its ROI.
#define MODE_SAME 0      // no resize (sx = sy = 1): each output pixel is one luma sample
#define MODE_BILINEAR 1  // bilinear (up-scales and down-scales up to 2x)
#define MODE_AREA 2      // box filter (a down-scale beyond 2x on either axis)

#define NVCAM_BATCH_PER_LAUNCH 32

// Threads per block: 32 x 4, a warp per row segment (src/gpu/kernels.rs launches so). 128
// threads rather than 256: finer blocks balance the SMs better at 1080p (measured: +0.02 of a
// copy's speed for the 8-bit same-scale kernel, the same elsewhere).
#define BLOCK_X 32
#define BLOCK_Y 4
// Blocks per SM the kernels are built for: 1,024 resident threads, so 64 registers each.
#define MIN_BLOCKS 8

// Pixels per thread and segments per warp of each kernel (src/gpu/kernels.rs sizes its grids by
// them; a test there reads them back), rows per thread, the box filter's pixels in flight per
// thread and its rows in flight. Same scale: one kernel for 8-bit outputs, one for float outputs
// (they write 3x the bytes: other trade-offs).
#define SAME8_PX 8
#define SAME8_G 1
#define SAMEF_PX 4
#define SAMEF_G 1
#define SAME8_ROWS 2
#define SAMEF_ROWS 2
#define RESIZE_PX 4
#define AREA_PX 2
#define AREA_N 2
#define AREA_ROW_UNROLL 2
#define AREA4_PX 1
#define AREA4_ROWS 4
#define BATCH_PX 2
#define P016_PX 2

// What every item of a launch shares (64 bytes).
struct nvcam_convert_common {
    u64 dst_pitch;   // bytes between output rows
    u64 dst_plane;   // bytes between output planes (planar formats)
    u32 format;      // FMT_*
    int out_w, out_h;
    float pad[3];    // letterbox colour, R G B, 0..255 units
    // Float formats: out = clamp(v, 0, 255) * nscale + noff per channel R G B
    // (nscale = 1 / (255 std), noff = -mean / std).
    float nscale[3];
    float noff[3];
};

// One frame of a launch (112 bytes).
struct nvcam_convert_item {
    u64 y;           // device address of the Y plane
    u64 uv;          // device address of the interleaved UV plane
    u64 dst;         // output image (planar formats: the R plane; G and B follow at dst_plane)
    u64 src_pitch;   // bytes between rows of Y (and of UV)
    int roi_x, roi_y;  // the crop rectangle's origin in the frame, luma pixels
    // The frame's size: every tap clamps to the frame, not to the ROI, so a ROI reads the pixels
    // around it and equals that window of the whole frame's conversion.
    int src_w, src_h;
    int img_x, img_y, img_w, img_h;  // where the scaled ROI lands in the output (the rest is pad)
    float sx, sy;    // ROI pixels per output pixel (ROI width / img_w, ROI height / img_h)
    u32 mode;        // MODE_*
    // Y'CbCr -> R'G'B' (0..255 units): yy = (Y - y_off) * y_scale; du = U - 128; dv = V - 128;
    // R = yy + dv*k_r; G = (yy - du*k_gb) - dv*k_gr; B = yy + du*k_b. y_off is an integer (0 or
    // 16), so Y - y_off is exact however it is computed.
    float y_off, y_scale, k_r, k_gb, k_gr, k_b;
    // The stream's chroma siting: where a chroma sample sits in the 2x2 luma block it belongs to,
    // in half luma pixels from the block's top-left corner, 1 (with the first column / row), 2
    // (centred) or 3 (with the second row). H.264/HEVC's default (left) is (1, 2), JPEG's (2, 2).
    // Luma position u (pixel centres at k + 0.5) is at chroma position u / 2 - h / 4 (sample
    // centres at integers).
    int chroma_x, chroma_y;
    // The frame's sample width: 0 NV12, 1 P016. The host launches the _p016 kernels for P016
    // items (a batch launch holds items of one width); the kernels themselves do not read it.
    u32 depth;
};

struct nvcam_convert_params {
    nvcam_convert_common c;
    nvcam_convert_item it;
};

struct nvcam_convert_batch_params {
    nvcam_convert_common c;
    nvcam_convert_item items[NVCAM_BATCH_PER_LAUNCH];
};

// Mirrored by src/convert/params.rs, which asserts these sizes and its fields' offsets.
static_assert(sizeof(nvcam_convert_common) == 64, "common size");
static_assert(sizeof(nvcam_convert_item) == 112, "item size");
static_assert(sizeof(nvcam_convert_params) == 176, "param struct size");
static_assert(sizeof(nvcam_convert_batch_params) == 3648, "batch params size");
static_assert(sizeof(nvcam_convert_batch_params) <= 4096, "batch params exceed 4 KiB");

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

// ---- Bilinear ----------------------------------------------------------------------------------

// The two taps on each axis of a bilinear sample at (u, v) (pixel centres at integers), clamped
// to [x0, x1] x [y0, y1], and the weights of the second ones.
struct Taps {
    int xa, xb, ya, yb;
    float fx, fy;
};

__device__ __forceinline__ Taps taps(float u, float v, int x0, int x1, int y0, int y1) {
    float fu = floorf(u), fv = floorf(v);
    Taps t;
    t.fx = u - fu;
    t.fy = v - fv;
    int iu = (int)fu, iv = (int)fv;
    t.xa = clampi(iu, x0, x1);
    t.xb = clampi(iu + 1, x0, x1);
    t.ya = clampi(iv, y0, y1);
    t.yb = clampi(iv + 1, y0, y1);
    return t;
}

// Y, Cb, Cr (0..255) of the output pixel (dx, dy) pixels into the image rectangle, bilinear.
// Also exact for MODE_SAME: the luma taps fall on pixel centres (the second weighs 0) and the
// chroma weights are quarters or halves. Taps clamp to the frame. S: the sample width.
template <typename S = Bytes>
__device__ __forceinline__ void bilinear(const nvcam_convert_item& it, int dx, int dy, float* Y, float* U, float* V) {
    int lx1 = it.src_w - 1, ly1 = it.src_h - 1;
    // Pixel centres: output centre (dx + 0.5) maps to ROI position (dx + 0.5) * sx.
    float u = ((float)dx + 0.5f) * it.sx + (float)it.roi_x;
    float v = ((float)dy + 0.5f) * it.sy + (float)it.roi_y;
    Taps l = taps(u - 0.5f, v - 0.5f, 0, lx1, 0, ly1);
    const typename S::Y* ra = y_row<S>(it, l.ya);
    const typename S::Y* rb = y_row<S>(it, l.yb);
    float top = lerp(S::ld(ra, l.xa), S::ld(ra, l.xb), l.fx);
    float bot = lerp(S::ld(rb, l.xa), S::ld(rb, l.xb), l.fx);
    *Y = lerp(top, bot, l.fy);
    // Chroma sample j sits at luma 2j + h / 2 (h: chroma_x, chroma_y).
    Taps c = taps(u * 0.5f - (float)it.chroma_x * 0.25f, v * 0.5f - (float)it.chroma_y * 0.25f, 0, lx1 >> 1, 0, ly1 >> 1);
    const typename S::UV* ca = uv_row<S>(it, c.ya);
    const typename S::UV* cb = uv_row<S>(it, c.yb);
    float2 a = S::ld2(ca, c.xa), b = S::ld2(ca, c.xb);
    float2 d = S::ld2(cb, c.xa), e = S::ld2(cb, c.xb);
    float tu = lerp(a.x, b.x, c.fx), bu = lerp(d.x, e.x, c.fx);
    float tv = lerp(a.y, b.y, c.fx), bv = lerp(d.y, e.y, c.fx);
    *U = lerp(tu, bu, c.fy);
    *V = lerp(tv, bv, c.fy);
}

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

// ---- Box filter, tiled -------------------------------------------------------------------------
//
// The per-pixel box filter above reads each pixel's footprint with chains of dependent byte
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
// (src/gpu/kernels.rs, area_smem); a block whose footprint does not fit (or a frame whose planes
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

// Same scale, 8-bit formats / float formats.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_same(const nvcam_convert_params p) {
    convert<MODE_SAME, SAME8_PX, SAME8_G, 0, SAME8_ROWS>(p.c, p.it);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_same_float(const nvcam_convert_params p) {
    convert<MODE_SAME, SAMEF_PX, SAMEF_G, 1, SAMEF_ROWS>(p.c, p.it);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_bilinear(const nvcam_convert_params p) {
    convert<MODE_BILINEAR, RESIZE_PX, 1>(p.c, p.it);
}

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

// P016 frames, one item / up to NVCAM_BATCH_PER_LAUNCH items (all P016), any mode, every format:
// 16-bit samples through the generic bilinear and box filter loops.
extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_p016(const nvcam_convert_params p) {
    convert<-1, P016_PX, 1, -1, 1, Words>(p.c, p.it);
}

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y, MIN_BLOCKS) nvcam_convert_batch_p016(const nvcam_convert_batch_params p) {
    convert<-1, P016_PX, 1, -1, 1, Words>(p.c, p.items[blockIdx.z]);
}

// Test-only: spins for `cycles` clock cycles, then copies `n` bytes from `src` to `dst`. The
// stream hand-off test uses it as "a slow consumer kernel that reads a released frame".
extern "C" __global__ void nvcam_test_spin_copy(const u8* src, u8* dst, u64 n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        dst[i] = src[i];
    }
}
