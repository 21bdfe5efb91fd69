/*
 * Loads nvcam.dll the way the README's C/C++ section does: a plain LoadLibraryW(full path), no
 * search flags, no SetDllDirectory, no PATH change, from a working directory and an .exe folder
 * that hold no FFmpeg. nvcam.dll must find the FFmpeg DLLs in its own folder by itself; then a
 * testsrc camera on the CPU, one frame, and where avcodec_nvcam-59.dll was loaded from (it must be
 * nvcam.dll's folder). The host's DLL search state must be as before (GetDllDirectoryW empty, the
 * working directory unchanged). scripts/ci/windows-test.sh builds it with mingw-w64 and runs it under
 * Wine on the unpacked release zip.
 *
 *   plain_load.exe Z:\path\to\nvcam.dll              exit 0 and "ok" when a frame came
 *   plain_load.exe Z:\path\to\nvcam.dll --no-ffmpeg  nvcam.dll alone in its folder: it must still
 *                                                    load, and nvcam_init must fail with
 *                                                    NVCAM_E_FFMPEG (not crash)
 *   plain_load.exe Z:\path\to\nvcam.dll --host-ffmpeg Z:\other\avformat-59.dll
 *                                                    the host has loaded another FFmpeg's
 *                                                    avformat-59.dll first (tests/wine/host_avformat.c):
 *                                                    nvcam must still run on its own DLLs, and the
 *                                                    host's DLL must stay the host's
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
    int host_ffmpeg = argc == 4 && strcmp(argv[2], "--host-ffmpeg") == 0;
    if (argc < 2 || (argc == 3 && !no_ffmpeg) || (argc == 4 && !host_ffmpeg) || argc > 4 ||
        !MultiByteToWideChar(CP_UTF8, 0, argv[1], -1, path, 4096)) {
        printf("usage: plain_load.exe PATH\\nvcam.dll [--no-ffmpeg | --host-ffmpeg PATH\\avformat-59.dll]\n");
        return 2;
    }
    HMODULE host_av = NULL;
    if (host_ffmpeg) {
        /* The host's own FFmpeg, loaded before nvcam.dll, under FFmpeg's usual name. */
        wchar_t hp[4096];
        if (!MultiByteToWideChar(CP_UTF8, 0, argv[3], -1, hp, 4096) || !(host_av = LoadLibraryW(hp))) {
            printf("FAIL: the host's %s did not load: error %lu\n", argv[3], GetLastError());
            return 1;
        }
        printf("the host loaded its own avformat-59.dll first\n");
    }
    folder_of(path, dir, 4096);
    GetCurrentDirectoryW(4096, cwd_before);
    printf("working directory %ls; nvcam.dll in %ls\n", cwd_before, dir);
    if (GetModuleHandleW(L"avcodec_nvcam-59.dll")) { printf("FAIL: avcodec_nvcam-59.dll is loaded before nvcam.dll\n"); return 1; }

    HMODULE h = LoadLibraryW(path);
    if (!h) { printf("FAIL: LoadLibraryW(%s): error %lu\n", argv[1], GetLastError()); return 1; }
    printf("LoadLibraryW: loaded\n");
    SYM(nvcam_init); SYM(nvcam_last_error); SYM(nvcam_camera_options_init); SYM(nvcam_camera_open);
    SYM(nvcam_camera_get_frame); SYM(nvcam_frame_info); SYM(nvcam_frame_release); SYM(nvcam_camera_close);
    SYM(nvcam_shutdown); SYM(nvcam_camera_publish);
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
    static const wchar_t *const ffmpeg[] = {L"avutil_nvcam-57.dll", L"avcodec_nvcam-59.dll", L"avformat_nvcam-59.dll", L"avdevice_nvcam-59.dll", L"swscale_nvcam-6.dll"};
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
    /* Sharing on Windows admits the user's own processes only: a name with a group (GROUP/NAME,
     * Unix's) is refused by name, at once, at both ends (tests/share.rs runs the rest). */
    uint64_t shared = 0;
    if (p_nvcam_camera_publish(cam, "staff/wine-cam", 0, 0) != NVCAM_E_UNSUPPORTED) { printf("FAIL: publish with a group is not NVCAM_E_UNSUPPORTED\n"); return 1; }
    if (p_nvcam_camera_open("nvcam://staff/wine-cam", &o, &shared) != NVCAM_E_UNSUPPORTED || shared != 0) { printf("FAIL: nvcam://GROUP/NAME is not NVCAM_E_UNSUPPORTED\n"); return 1; }
    printf("ok: publish and nvcam:// with a group answer NVCAM_E_UNSUPPORTED (Windows has no group circle)\n");
    HMODULE av = GetModuleHandleW(L"avcodec_nvcam-59.dll");
    if (!av || !GetModuleFileNameW(av, ff, 4096)) { printf("FAIL: avcodec_nvcam-59.dll is not loaded\n"); return 1; }
    folder_of(ff, ffdir, 4096);
    printf("a %ux%u frame; avcodec_nvcam-59.dll from %ls\n", i.width, i.height, ff);
    p_nvcam_frame_release(frame);
    p_nvcam_camera_close(cam, 5000);
    if (p_nvcam_shutdown(5000) != NVCAM_OK) { printf("FAIL: shutdown\n"); return 1; }
    if (_wcsicmp(ffdir, dir) != 0) { printf("FAIL: avcodec_nvcam-59.dll came from %ls, not nvcam.dll's folder\n", ffdir); return 1; }
    GetCurrentDirectoryW(4096, cwd_after);
    if (wcscmp(cwd_before, cwd_after) != 0) { printf("FAIL: the working directory changed to %ls\n", cwd_after); return 1; }
    if (GetDllDirectoryW(4096, dlldir) != 0) { printf("FAIL: the DLL directory was set to %ls\n", dlldir); return 1; }
    if (i.width != 320 || i.height != 240) { printf("FAIL: a %ux%u frame\n", i.width, i.height); return 1; }
    if (host_ffmpeg) {
        /* nvcam's avformat came from its own folder; the host's avformat-59.dll is still the host's. */
        HMODULE own = GetModuleHandleW(L"avformat_nvcam-59.dll");
        if (!own || !GetModuleFileNameW(own, ff, 4096)) { printf("FAIL: avformat_nvcam-59.dll is not loaded\n"); return 1; }
        folder_of(ff, ffdir, 4096);
        if (_wcsicmp(ffdir, dir) != 0) { printf("FAIL: avformat_nvcam-59.dll came from %ls\n", ffdir); return 1; }
        if (GetModuleHandleW(L"avformat-59.dll") != host_av) { printf("FAIL: avformat-59.dll is not the host's any more\n"); return 1; }
        typedef const char *(*conf_fn)(void);
        conf_fn conf;
        FARPROC f = GetProcAddress(host_av, "avformat_configuration");
        memcpy(&conf, &f, sizeof conf);
        if (!conf || strcmp(conf(), "the host's own avformat") != 0) { printf("FAIL: the host's avformat-59.dll answers otherwise\n"); return 1; }
        printf("ok: beside the host's own avformat-59.dll, nvcam ran on its own DLLs from its folder\n");
        return 0;
    }
    printf("ok: plain LoadLibraryW, a frame, FFmpeg from nvcam.dll's folder, the host's search path untouched\n");
    return 0;
}
