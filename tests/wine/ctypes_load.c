/*
 * Loads nvcam.dll the way Python's ctypes does on Windows (3.8+: a full path, LoadLibraryExW with
 * LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR), so the FFmpeg DLLs must come
 * from nvcam.dll's own folder, as in the win_amd64 wheel; then opens a testsrc camera on the CPU,
 * takes one frame and prints where avcodec_nvcam-59.dll was loaded from. scripts/ci/wheel-test.sh builds it
 * with mingw-w64 and runs it under Wine on the unpacked wheel (no Windows Python here).
 *
 *   ctypes_load.exe Z:\path\to\nvcam\nvcam.dll
 */
#include <stdio.h>
#include <string.h>
#include <windows.h>
#include "nvcam.h"

#define SYM(n)                                                                    \
    __typeof__(n) *p_##n;                                                         \
    do {                                                                          \
        FARPROC f_ = GetProcAddress(h, #n);                                       \
        if (!f_) { printf("FAIL: %s is not exported\n", #n); return 1; }          \
        memcpy(&p_##n, &f_, sizeof p_##n);                                        \
    } while (0)

int main(int argc, char **argv) {
    wchar_t path[4096], ff[4096];
    if (argc != 2 || !MultiByteToWideChar(CP_UTF8, 0, argv[1], -1, path, 4096)) {
        printf("usage: ctypes_load.exe PATH\\nvcam.dll\n");
        return 2;
    }
    HMODULE h = LoadLibraryExW(path, NULL, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR);
    if (!h) { printf("FAIL: LoadLibraryExW(%s): error %lu\n", argv[1], GetLastError()); return 1; }
    SYM(nvcam_init); SYM(nvcam_version_string); SYM(nvcam_camera_options_init); SYM(nvcam_camera_open);
    SYM(nvcam_camera_get_frame); SYM(nvcam_frame_info); SYM(nvcam_frame_release); SYM(nvcam_camera_close);
    SYM(nvcam_shutdown);
    char v[128];
    uint64_t cam = 0, frame = 0;
    nvcam_camera_options_t o;
    nvcam_frame_info_t i;
    if (p_nvcam_init(NULL) != NVCAM_OK || p_nvcam_version_string(v, sizeof v) != NVCAM_OK) { printf("FAIL: init\n"); return 1; }
    p_nvcam_camera_options_init(&o);
    o.device = NVCAM_DEVICE_CPU;
    if (p_nvcam_camera_open("testsrc://320x240@30", &o, &cam) != NVCAM_OK) { printf("FAIL: open\n"); return 1; }
    if (p_nvcam_camera_get_frame(cam, 10000, &frame) != NVCAM_OK) { printf("FAIL: get_frame\n"); return 1; }
    i.struct_size = sizeof i;
    if (p_nvcam_frame_info(frame, &i) != NVCAM_OK) { printf("FAIL: frame_info\n"); return 1; }
    HMODULE av = GetModuleHandleW(L"avcodec_nvcam-59.dll");
    if (!av || !GetModuleFileNameW(av, ff, 4096)) { printf("FAIL: avcodec_nvcam-59.dll is not loaded\n"); return 1; }
    printf("%s: a %ux%u frame; avcodec_nvcam-59.dll from %ls\n", v, i.width, i.height, ff);
    p_nvcam_frame_release(frame);
    p_nvcam_camera_close(cam, 5000);
    if (p_nvcam_shutdown(5000) != NVCAM_OK) { printf("FAIL: shutdown\n"); return 1; }
    printf("ok\n");
    return i.width == 320 && i.height == 240 ? 0 : 1;
}
