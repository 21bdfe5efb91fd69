// nvJPEG's planar output (NVJPEG_OUTPUT_YUV: chroma at the picture's own subsampling) to the NV12
// chroma plane of a camera's pool slot, by the box rule every JPEG decoder of nvcam uses
// (src/decode/chroma_box.rs on the CPU; NVDEC's JPEG engine): each NV12 chroma sample is the mean
// of the decoded samples its 2x2 luma block covers, rounded half up; at an odd edge the last
// sample stands in for the missing one (the same mean). Luma needs no kernel: nvJPEG writes it
// straight into the slot's Y plane.

#include "nvcam_abi.cuh"

// The parameter block, `nvcam_jpeg_pack_params`, is generated from src/gpu/params.rs; it carries
// the planes as device addresses.
extern "C" __global__ void nvcam_jpeg_pack_uv(nvcam_jpeg_pack_params p) {
    const unsigned char* u = (const unsigned char*)p.u;
    const unsigned char* v = (const unsigned char*)p.v;
    unsigned char* uv = (unsigned char*)p.uv;
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.ow || y >= p.oh) return;
    uchar2* out = (uchar2*)(uv + (size_t)y * p.uv_pitch) + x;
    if (p.fx == 0) {
        *out = make_uchar2(128, 128);
        return;
    }
    unsigned int r0 = y * p.fy, r1 = min(r0 + p.fy - 1, p.ch - 1);
    unsigned int c0 = x * p.fx, c1 = min(c0 + p.fx - 1, p.cw - 1);
    const unsigned char* u0 = u + (size_t)r0 * p.c_pitch;
    const unsigned char* u1 = u + (size_t)r1 * p.c_pitch;
    const unsigned char* v0 = v + (size_t)r0 * p.c_pitch;
    const unsigned char* v1 = v + (size_t)r1 * p.c_pitch;
    unsigned int su = u0[c0] + u0[c1] + u1[c0] + u1[c1];
    unsigned int sv = v0[c0] + v0[c1] + v1[c0] + v1[c1];
    *out = make_uchar2((su + 2) >> 2, (sv + 2) >> 2);
}
