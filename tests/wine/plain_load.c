/*
 * Loads nvcam.dll the way the README's C/C++ section does: a plain LoadLibraryW(full path), no
 * search flags, no SetDllDirectory, no PATH change, from a working directory and an .exe folder
 * that hold no FFmpeg. nvcam.dll must find the FFmpeg DLLs in its own folder by itself; then a
 * testsrc camera on the CPU, one frame, and where avcodec-59.dll was loaded from (it must be
 * nvcam.dll's folder). The host's DLL search state must be as before (GetDllDirectoryW empty, the
 * working directory unchanged). scripts/ci/windows-test.sh builds it with mingw-w64 and runs it under
 * Wine on the unpacked release zip.
 *
 *   plain_load.exe Z:\path\to\nvcam.dll              exit 0 and "ok" when a frame came
 *   plain_load.exe Z:\path\to\nvcam.dll --no-ffmpeg  nvcam.dll alone in its folder: it must still
 *                                                    load, and nvcam_init must fail with
 *                                                    NVCAM_E_FFMPEG (not crash)
 */
#include <stdio.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>
#include "nvcam.h"

#define SYM(n)                                                                    \
    __typeof__(n) *p_##n;                                                         \
    do {                                                                          \
        FARPROC f_ = GetProcAddress(h, #n);                                       \
        if (!f_) { printf("FAIL: %s is not exported\n", #n); return 1; }          \
        memcpy(&p_##n, &f_, sizeof p_##n);                                        \
    } while (0)

/* The folder part of a path, with its trailing backslash. */
static void folder_of(const wchar_t *path, wchar_t *out, size_t n) {
    wcsncpy(out, path, n - 1);
    out[n - 1] = 0;
    wchar_t *sep = wcsrchr(out, L'\\');
    if (sep) sep[1] = 0;
}

int main(int argc, char **argv) {
    wchar_t path[4096], dir[4096], ff[4096], ffdir[4096], cwd_before[4096], cwd_after[4096], dlldir[4096];
    int no_ffmpeg = argc == 3 && strcmp(argv[2], "--no-ffmpeg") == 0;
    if (argc < 2 || (argc == 3 && !no_ffmpeg) || argc > 3 || !MultiByteToWideChar(CP_UTF8, 0, argv[1], -1, path, 4096)) {
        printf("usage: plain_load.exe PATH\\nvcam.dll [--no-ffmpeg]\n");
        return 2;
    }
    folder_of(path, dir, 4096);
    GetCurrentDirectoryW(4096, cwd_before);
    printf("working directory %ls; nvcam.dll in %ls\n", cwd_before, dir);
    if (GetModuleHandleW(L"avcodec-59.dll")) { printf("FAIL: avcodec-59.dll is loaded before nvcam.dll\n"); return 1; }

    HMODULE h = LoadLibraryW(path);
    if (!h) { printf("FAIL: LoadLibraryW(%s): error %lu\n", argv[1], GetLastError()); return 1; }
    printf("LoadLibraryW: loaded\n");
    SYM(nvcam_init); SYM(nvcam_last_error); SYM(nvcam_camera_options_init); SYM(nvcam_camera_open);
    SYM(nvcam_camera_get_frame); SYM(nvcam_frame_info); SYM(nvcam_frame_release); SYM(nvcam_camera_close);
    SYM(nvcam_shutdown);
    char msg[1024] = "";
    int32_t rc = p_nvcam_init(NULL);
    if (no_ffmpeg) {
        p_nvcam_last_error(msg, sizeof msg);
        printf("nvcam_init: %d: %s\n", (int)rc, msg);
        if (rc != NVCAM_E_FFMPEG || !strstr(msg, ".dll is not in ") || !strstr(msg, "beside nvcam.dll")) {
            printf("FAIL: expected NVCAM_E_FFMPEG naming the DLL that is missing beside nvcam.dll\n");
            return 1;
        }
        /* A second try gives the same answer (the failure is not cached as a success). */
        if (p_nvcam_init(NULL) != NVCAM_E_FFMPEG) { printf("FAIL: a second nvcam_init did not fail the same way\n"); return 1; }
        printf("ok: nvcam.dll loads without FFmpeg, and nvcam_init reports it\n");
        return 0;
    }
    if (rc != NVCAM_OK) { p_nvcam_last_error(msg, sizeof msg); printf("FAIL: nvcam_init: %d: %s\n", (int)rc, msg); return 1; }
    /* nvcam_init loads (and binds) every FFmpeg DLL nvcam calls, before any camera. */
    static const wchar_t *const ffmpeg[] = {L"avutil-57.dll", L"avcodec-59.dll", L"avformat-59.dll", L"avdevice-59.dll", L"swscale-6.dll"};
    for (size_t k = 0; k < sizeof ffmpeg / sizeof *ffmpeg; k++)
        if (!GetModuleHandleW(ffmpeg[k])) { printf("FAIL: %ls is not loaded after nvcam_init\n", ffmpeg[k]); return 1; }
    uint64_t cam = 0, frame = 0;
    nvcam_camera_options_t o;
    nvcam_frame_info_t i;
    p_nvcam_camera_options_init(&o);
    o.device = NVCAM_DEVICE_CPU;
    if (p_nvcam_camera_open("testsrc://320x240@30", &o, &cam) != NVCAM_OK) { printf("FAIL: open\n"); return 1; }
    if (p_nvcam_camera_get_frame(cam, 10000, &frame) != NVCAM_OK) { printf("FAIL: get_frame\n"); return 1; }
    i.struct_size = sizeof i;
    if (p_nvcam_frame_info(frame, &i) != NVCAM_OK) { printf("FAIL: frame_info\n"); return 1; }
    HMODULE av = GetModuleHandleW(L"avcodec-59.dll");
    if (!av || !GetModuleFileNameW(av, ff, 4096)) { printf("FAIL: avcodec-59.dll is not loaded\n"); return 1; }
    folder_of(ff, ffdir, 4096);
    printf("a %ux%u frame; avcodec-59.dll from %ls\n", i.width, i.height, ff);
    p_nvcam_frame_release(frame);
    p_nvcam_camera_close(cam, 5000);
    if (p_nvcam_shutdown(5000) != NVCAM_OK) { printf("FAIL: shutdown\n"); return 1; }
    if (_wcsicmp(ffdir, dir) != 0) { printf("FAIL: avcodec-59.dll came from %ls, not nvcam.dll's folder\n", ffdir); return 1; }
    GetCurrentDirectoryW(4096, cwd_after);
    if (wcscmp(cwd_before, cwd_after) != 0) { printf("FAIL: the working directory changed to %ls\n", cwd_after); return 1; }
    if (GetDllDirectoryW(4096, dlldir) != 0) { printf("FAIL: the DLL directory was set to %ls\n", dlldir); return 1; }
    if (i.width != 320 || i.height != 240) { printf("FAIL: a %ux%u frame\n", i.width, i.height); return 1; }
    printf("ok: plain LoadLibraryW, a frame, FFmpeg from nvcam.dll's folder, the host's search path untouched\n");
    return 0;
}
