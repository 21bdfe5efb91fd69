// Kernels that only tests load, in their own fatbin (kernels/test/nvcam_test_kernels.fatbin, built
// by scripts/build/build-kernels.sh beside the release one): the library embeds it in test-hooks builds
// only, so released builds carry no test code.

typedef unsigned char u8;
typedef unsigned long long u64;

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
