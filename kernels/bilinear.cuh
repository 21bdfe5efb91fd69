// nvcam conversion kernels: bilinear sampling (common.cuh says how the files fit together).
#ifndef NVCAM_BILINEAR_CUH
#define NVCAM_BILINEAR_CUH

#include "common.cuh"

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

#endif  // NVCAM_BILINEAR_CUH
