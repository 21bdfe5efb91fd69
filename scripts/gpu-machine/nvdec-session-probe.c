// How many NVDEC decoders can one GPU hold, and what does the number depend on?
// Creates decoders until cuvidCreateDecoder fails, for several shapes, and prints the count,
// the error and the free memory at that point. Needs only the driver (libcuda, libnvcuvid).
// Build: gcc -O1 -o probe nvdec-session-probe.c -ldl
// Result on one H200 (driver 580.159.04, 2026-11-28): 288 decoders for every shape (H.264 and HEVC,
// 1920x1088 with 20 surfaces down to 320x240 with 4, with or without a context lock and a stream per
// decoder), then CUDA_ERROR_OUT_OF_MEMORY with 110-138 GiB free; with a context of its own per decoder,
// 74. The ceiling is a per-GPU count of decoder sessions in the driver, not memory nor surfaces.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; typedef void *CUcontext; typedef int CUdevice; typedef void *CUstream; typedef void *CUevent;
typedef struct { short l, t, r, b; } Rect;
typedef struct {
  unsigned long ulWidth, ulHeight, ulNumDecodeSurfaces; int CodecType; int ChromaFormat;
  unsigned long ulCreationFlags, bitDepthMinus8, ulIntraDecodeOnly, ulMaxWidth, ulMaxHeight, Reserved1;
  Rect display_area; int OutputFormat; int DeinterlaceMode;
  unsigned long ulTargetWidth, ulTargetHeight, ulNumOutputSurfaces; void *vidLock; Rect target_rect;
  unsigned long enableHistogram; unsigned long Reserved2[4];
} CI;
static CUresult (*cuInit)(unsigned), (*cuDeviceGet)(CUdevice*, int), (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice),
  (*cuCtxPushCurrent)(CUcontext), (*cuMemGetInfo)(size_t*, size_t*), (*cuStreamCreate)(CUstream*, unsigned),
  (*cuStreamDestroy)(CUstream), (*cuEventCreate)(CUevent*, unsigned), (*cuEventDestroy)(CUevent),
  (*cuGetErrorName)(CUresult, const char**), (*cuCtxCreate)(CUcontext*, unsigned, CUdevice), (*cuCtxDestroy)(CUcontext),
  (*cuCtxPopCurrent)(CUcontext*);
static CUresult (*cuvidCreateDecoder)(void**, CI*), (*cuvidDestroyDecoder)(void*), (*cuvidCtxLockCreate)(void**, CUcontext),
  (*cuvidCtxLockDestroy)(void*);
#define L(h, f) do { *(void**)&f = dlsym(h, #f); if (!f) { fprintf(stderr, "no %s\n", #f); exit(1);} } while (0)
#define MAXN 4000
static void *dec[MAXN], *lk[MAXN]; static CUstream st[MAXN]; static CUevent ev[MAXN][2]; static CUcontext cx[MAXN];

static void probe(const char *name, int codec, int w, int h, int surf, int outs, unsigned long flags, int with_lock,
                  int with_stream, int own_ctx, CUcontext prim, CUdevice d) {
  int n = 0; CUresult r = 0; const char *en = "";
  for (; n < MAXN; n++) {
    CUcontext c = prim;
    if (own_ctx) { if ((r = cuCtxCreate(&cx[n], 0, d))) break; c = cx[n]; } else cuCtxPushCurrent(prim);
    lk[n] = 0; st[n] = 0;
    if (with_lock && (r = cuvidCtxLockCreate(&lk[n], c))) break;
    if (with_stream) { if ((r = cuStreamCreate(&st[n], 1))) break; cuEventCreate(&ev[n][0], 2); cuEventCreate(&ev[n][1], 2); }
    CI ci; memset(&ci, 0, sizeof ci);
    ci.ulWidth = ci.ulMaxWidth = ci.ulTargetWidth = w; ci.ulHeight = ci.ulMaxHeight = ci.ulTargetHeight = h;
    ci.ulNumDecodeSurfaces = surf; ci.CodecType = codec; ci.ChromaFormat = 1; ci.ulCreationFlags = flags;
    ci.OutputFormat = 0; ci.DeinterlaceMode = 0; ci.ulNumOutputSurfaces = outs; ci.vidLock = lk[n];
    r = cuvidCreateDecoder(&dec[n], &ci);
    CUcontext pc; cuCtxPopCurrent(&pc);
    if (r) break;
  }
  size_t fr = 0, tot = 0; cuCtxPushCurrent(prim); cuMemGetInfo(&fr, &tot);
  cuGetErrorName(r, &en);
  printf("%-44s decoders=%4d  stop=%s(%d)  free=%.1f/%.1f GiB\n", name, n, en ? en : "?", r, fr / 1073741824.0, tot / 1073741824.0);
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    if (own_ctx) cuCtxPushCurrent(cx[i]);
    cuvidDestroyDecoder(dec[i]);
    if (lk[i]) cuvidCtxLockDestroy(lk[i]);
    if (st[i]) { cuStreamDestroy(st[i]); cuEventDestroy(ev[i][0]); cuEventDestroy(ev[i][1]); }
    CUcontext pc; cuCtxPopCurrent(&pc);
    if (own_ctx) cuCtxDestroy(cx[i]);
  }
  CUcontext pc; cuCtxPopCurrent(&pc);
}

int main(int argc, char **argv) {
  void *cu = dlopen("libcuda.so.1", RTLD_NOW), *nv = dlopen("libnvcuvid.so.1", RTLD_NOW);
  if (!cu || !nv) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
  L(cu, cuInit); L(cu, cuDeviceGet); L(cu, cuDevicePrimaryCtxRetain); L(cu, cuCtxPushCurrent); L(cu, cuMemGetInfo);
  *(void**)&cuStreamCreate = dlsym(cu, "cuStreamCreate"); L(cu, cuStreamDestroy); L(cu, cuEventCreate); L(cu, cuEventDestroy);
  L(cu, cuGetErrorName); *(void**)&cuCtxCreate = dlsym(cu, "cuCtxCreate_v2"); *(void**)&cuCtxDestroy = dlsym(cu, "cuCtxDestroy_v2");
  *(void**)&cuCtxPopCurrent = dlsym(cu, "cuCtxPopCurrent_v2"); *(void**)&cuCtxPushCurrent = dlsym(cu, "cuCtxPushCurrent_v2");
  *(void**)&cuMemGetInfo = dlsym(cu, "cuMemGetInfo_v2");
  L(nv, cuvidCreateDecoder); L(nv, cuvidDestroyDecoder); L(nv, cuvidCtxLockCreate); L(nv, cuvidCtxLockDestroy);
  int dev = argc > 1 ? atoi(argv[1]) : 0;
  CUdevice d; CUcontext prim; cuInit(0); cuDeviceGet(&d, dev); cuDevicePrimaryCtxRetain(&prim, d);
  enum { H264 = 4, HEVC = 8 }; unsigned long PREFER_CUVID = 4;
  probe("hevc 1920x1088 surf 20 out 2 lock+stream", HEVC, 1920, 1088, 20, 2, PREFER_CUVID, 1, 1, 0, prim, d);
  probe("hevc 1920x1088 surf 20 out 2 (bare)", HEVC, 1920, 1088, 20, 2, PREFER_CUVID, 0, 0, 0, prim, d);
  probe("hevc 1920x1088 surf 4 out 1 (bare)", HEVC, 1920, 1088, 4, 1, PREFER_CUVID, 0, 0, 0, prim, d);
  probe("hevc 320x240 surf 4 out 1 (bare)", HEVC, 320, 240, 4, 1, PREFER_CUVID, 0, 0, 0, prim, d);
  probe("h264 1920x1088 surf 20 out 2 (bare)", H264, 1920, 1088, 20, 2, PREFER_CUVID, 0, 0, 0, prim, d);
  probe("h264 1920x1088 surf 20 out 2 default flags", H264, 1920, 1088, 20, 2, 0, 0, 0, 0, prim, d);
  probe("h264 320x240 surf 4 out 1 (bare)", H264, 320, 240, 4, 1, PREFER_CUVID, 0, 0, 0, prim, d);
  probe("h264 320x240 surf 4 out 1 own context each", H264, 320, 240, 4, 1, PREFER_CUVID, 0, 0, 1, prim, d);
  return 0;
}
