// nvcam's frame conversion kernels: NV12 -> BGRA8 / BGR8 / RGB8 / GRAY8 / planar RGB f32 / f16,
// with crop (ROI), resize (bilinear; box/area for down-scales beyond 2x) and letterbox in one pass.
//
// Built by scripts/build-kernels.sh with NVRTC (no CUDA toolkit, no host compiler) into
// kernels/nvcam_kernels.fatbin, which the library embeds. The Rust CPU path (src/convert/cpu.rs)
// does the same float operations in the same order; NVRTC runs with --fmad=false so the GPU does
// not contract them into FMAs, and both sides agree to the last bit in practice (the tests allow
// +-1 per 8-bit channel, +-1/255 for floats).
//
// The parameter struct's layout is mirrored by src/convert/params.rs (`KernelParams`), whose size
// and field offsets are asserted there; keep both in the same order, all 4- or 8-byte fields.

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

struct nvcam_convert_params {
    u64 y;           // device address of the Y plane
    u64 uv;          // device address of the interleaved UV plane
    u64 dst;         // output image (planar formats: the R plane; G and B follow at dst_plane)
    u64 src_pitch;   // bytes between rows of Y (and of UV)
    u64 dst_pitch;   // bytes between output rows
    u64 dst_plane;   // bytes between output planes (planar formats)
    u32 format;      // FMT_*
    u32 area;        // 1: box filter (down-scales beyond 2x), 0: bilinear
    int src_w, src_h;            // frame size (luma)
    int roi_x, roi_y, roi_w, roi_h;  // crop rectangle in luma pixels, inside the frame
    int out_w, out_h;            // output size
    int img_x, img_y, img_w, img_h;  // where the scaled ROI lands in the output (the rest is pad)
    float sx, sy;    // ROI pixels per output pixel (roi_w / img_w, roi_h / img_h)
    // Y'CbCr -> R'G'B': yy = (Y - y_off) * y_scale; cb = (U - 128) * c_scale; cr likewise;
    // R = yy + r_cr*cr; G = yy - g_cb*cb - g_cr*cr; B = yy + b_cb*cb (0..255 units)
    float y_off, y_scale, c_scale, r_cr, g_cb, g_cr, b_cb;
    float pad[3];    // letterbox colour, R G B, 0..255 units
    float mean[3];   // float formats: out = (v / 255 - mean) * inv_std, per channel R G B
    float inv_std[3];
    u32 reserved;
};
// Mirrored by src/convert/params.rs, which asserts this size and its fields' offsets.
static_assert(sizeof(nvcam_convert_params) == 184, "param struct size");

__device__ __forceinline__ float clampf(float v, float lo, float hi) {
    return fminf(fmaxf(v, lo), hi);
}

__device__ __forceinline__ int clampi(int v, int lo, int hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}

// Rows of the source planes, read through the read-only cache.
__device__ __forceinline__ const u8* y_row(const nvcam_convert_params& p, int y) {
    return (const u8*)p.y + (u64)y * p.src_pitch;
}

__device__ __forceinline__ const uchar2* uv_row(const nvcam_convert_params& p, int y) {
    return (const uchar2*)((const u8*)p.uv + (u64)y * p.src_pitch);
}

__device__ __forceinline__ float ld(const u8* row, int x) {
    return (float)__ldg(row + x);
}

__device__ __forceinline__ float2 ld2(const uchar2* row, int x) {
    uchar2 c = __ldg(row + x);
    return make_float2((float)c.x, (float)c.y);
}

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

__device__ __forceinline__ float lerp(float a, float b, float f) {
    return a + (b - a) * f;
}

// Box weights: the overlap of pixel i's extent [i, i+1) with [a, b).
__device__ __forceinline__ float overlap(int i, float a, float b) {
    return fminf((float)(i + 1), b) - fmaxf((float)i, a);
}

// The Y, Cb, Cr (0..255) of output pixel (ox, oy) inside the image rectangle. The arithmetic
// (and its order) is what src/convert/cpu.rs repeats; only where the loads come from is tuned.
__device__ void sample(const nvcam_convert_params& p, int ox, int oy, float* Y, float* U, float* V) {
    int lx0 = p.roi_x, lx1 = p.roi_x + p.roi_w - 1;
    int ly0 = p.roi_y, ly1 = p.roi_y + p.roi_h - 1;
    int cx0 = p.roi_x / 2, cx1 = (p.roi_x + p.roi_w - 1) / 2;
    int cy0 = p.roi_y / 2, cy1 = (p.roi_y + p.roi_h - 1) / 2;
    float dx = (float)(ox - p.img_x), dy = (float)(oy - p.img_y);
    if (!p.area) {
        // Pixel centres: output centre (dx + 0.5) maps to ROI position (dx + 0.5) * sx.
        float u = (dx + 0.5f) * p.sx + (float)p.roi_x;
        float v = (dy + 0.5f) * p.sy + (float)p.roi_y;
        if (p.sx == 1.f && p.sy == 1.f) {
            // Same scale: the taps fall on pixel centres (weights exactly 0), so the bilinear
            // result is the sample itself, bit for bit; one load instead of four.
            *Y = ld(y_row(p, (int)v), (int)u);
        } else {
            Taps l = taps(u - 0.5f, v - 0.5f, lx0, lx1, ly0, ly1);
            const u8* ra = y_row(p, l.ya);
            const u8* rb = y_row(p, l.yb);
            float top = lerp(ld(ra, l.xa), ld(ra, l.xb), l.fx);
            float bot = lerp(ld(rb, l.xa), ld(rb, l.xb), l.fx);
            *Y = lerp(top, bot, l.fy);
        }
        // Chroma sample j covers luma [2j, 2j + 2): its centre is at luma 2j + 1.
        Taps c = taps(u * 0.5f - 0.5f, v * 0.5f - 0.5f, cx0, cx1, cy0, cy1);
        const uchar2* ca = uv_row(p, c.ya);
        const uchar2* cb = uv_row(p, c.yb);
        float2 a = ld2(ca, c.xa), b = ld2(ca, c.xb);
        float2 d = ld2(cb, c.xa), e = ld2(cb, c.xb);
        float tu = lerp(a.x, b.x, c.fx), bu = lerp(d.x, e.x, c.fx);
        float tv = lerp(a.y, b.y, c.fx), bv = lerp(d.y, e.y, c.fx);
        *U = lerp(tu, bu, c.fy);
        *V = lerp(tv, bv, c.fy);
    } else {
        // Box filter: the average over the output pixel's footprint [a, b) in ROI coordinates.
        float ax = dx * p.sx + (float)p.roi_x, bx = ax + p.sx;
        float ay = dy * p.sy + (float)p.roi_y, by = ay + p.sy;
        int ix0 = clampi((int)floorf(ax), lx0, lx1), ix1 = clampi((int)ceilf(bx) - 1, lx0, lx1);
        int iy0 = clampi((int)floorf(ay), ly0, ly1), iy1 = clampi((int)ceilf(by) - 1, ly0, ly1);
        float sum = 0.f, wsum = 0.f;
        for (int y = iy0; y <= iy1; y++) {
            float wy = overlap(y, ay, by);
            const u8* r = y_row(p, y);
            float row = 0.f, rw = 0.f;
            for (int x = ix0; x <= ix1; x++) {
                float wx = overlap(x, ax, bx);
                row += ld(r, x) * wx;
                rw += wx;
            }
            sum += row * wy;
            wsum += rw * wy;
        }
        *Y = sum / wsum;
        float cax = ax * 0.5f, cbx = bx * 0.5f, cay = ay * 0.5f, cby = by * 0.5f;
        int jx0 = clampi((int)floorf(cax), cx0, cx1), jx1 = clampi((int)ceilf(cbx) - 1, cx0, cx1);
        int jy0 = clampi((int)floorf(cay), cy0, cy1), jy1 = clampi((int)ceilf(cby) - 1, cy0, cy1);
        float su = 0.f, sv = 0.f, cw = 0.f;
        for (int y = jy0; y <= jy1; y++) {
            float wy = overlap(y, cay, cby);
            const uchar2* r = uv_row(p, y);
            float ru = 0.f, rv = 0.f, rw = 0.f;
            for (int x = jx0; x <= jx1; x++) {
                float wx = overlap(x, cax, cbx);
                float2 c = ld2(r, x);
                ru += c.x * wx;
                rv += c.y * wx;
                rw += wx;
            }
            su += ru * wy;
            sv += rv * wy;
            cw += rw * wy;
        }
        *U = su / cw;
        *V = sv / cw;
    }
}

__device__ __forceinline__ u8 to_u8(float v) {
    return (u8)floorf(clampf(v, 0.f, 255.f) + 0.5f);
}

__device__ __forceinline__ u16 to_half(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void nvcam_convert(const nvcam_convert_params p) {
    int ox = blockIdx.x * blockDim.x + threadIdx.x;
    int oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= p.out_w || oy >= p.out_h) return;
    float r, g, b;
    bool inside = ox >= p.img_x && ox < p.img_x + p.img_w && oy >= p.img_y && oy < p.img_y + p.img_h;
    if (inside) {
        float Y, U, V;
        sample(p, ox, oy, &Y, &U, &V);
        float yy = (Y - p.y_off) * p.y_scale;
        float cb = (U - 128.f) * p.c_scale;
        float cr = (V - 128.f) * p.c_scale;
        if (p.format == FMT_GRAY8) {
            r = g = b = yy;
        } else {
            r = yy + p.r_cr * cr;
            g = yy - p.g_cb * cb - p.g_cr * cr;
            b = yy + p.b_cb * cb;
        }
    } else {
        r = p.pad[0];
        g = p.pad[1];
        b = p.pad[2];
    }
    u8* row = (u8*)p.dst + (u64)oy * p.dst_pitch;
    switch (p.format) {
    case FMT_BGRA8: {
        uchar4 px = make_uchar4(to_u8(b), to_u8(g), to_u8(r), 255);
        ((uchar4*)row)[ox] = px;
        break;
    }
    case FMT_BGR8:
        row[3 * ox] = to_u8(b);
        row[3 * ox + 1] = to_u8(g);
        row[3 * ox + 2] = to_u8(r);
        break;
    case FMT_RGB8:
        row[3 * ox] = to_u8(r);
        row[3 * ox + 1] = to_u8(g);
        row[3 * ox + 2] = to_u8(b);
        break;
    case FMT_GRAY8:
        row[ox] = to_u8(r);
        break;
    case FMT_RGB_F32: {
        float* o = (float*)row;
        o[ox] = (clampf(r, 0.f, 255.f) * (1.f / 255.f) - p.mean[0]) * p.inv_std[0];
        o = (float*)(row + p.dst_plane);
        o[ox] = (clampf(g, 0.f, 255.f) * (1.f / 255.f) - p.mean[1]) * p.inv_std[1];
        o = (float*)(row + 2 * p.dst_plane);
        o[ox] = (clampf(b, 0.f, 255.f) * (1.f / 255.f) - p.mean[2]) * p.inv_std[2];
        break;
    }
    case FMT_RGB_F16: {
        u16* o = (u16*)row;
        o[ox] = to_half((clampf(r, 0.f, 255.f) * (1.f / 255.f) - p.mean[0]) * p.inv_std[0]);
        o = (u16*)(row + p.dst_plane);
        o[ox] = to_half((clampf(g, 0.f, 255.f) * (1.f / 255.f) - p.mean[1]) * p.inv_std[1]);
        o = (u16*)(row + 2 * p.dst_plane);
        o[ox] = to_half((clampf(b, 0.f, 255.f) * (1.f / 255.f) - p.mean[2]) * p.inv_std[2]);
        break;
    }
    default:
        break;
    }
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
