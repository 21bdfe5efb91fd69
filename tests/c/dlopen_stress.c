/*
 * Loads libnvcam with dlopen (path in argv[1]) the way LabVIEW or a plugin host does, resolves every
 * exported function by name, then: 3 testsrc cameras on the CPU, 70 clones leaked across their
 * frames, 4 threads hammering get_frame/clone/release/stats/frame_info for ~2 s, nvcam_shutdown
 * with everything still leaked, every leaked handle afterwards (stale, never a crash), re-init,
 * shutdown, dlclose, and a second dlopen.
 *
 * Exit 0 only if every check passed; the last line is a summary.
 */
#define _GNU_SOURCE
#include "nvcam.h"

#ifdef _WIN32
/* Windows: the same four calls on LoadLibraryEx/GetProcAddress/FreeLibrary, the way LabVIEW loads a
 * DLL there (LOAD_WITH_ALTERED_SEARCH_PATH: the FFmpeg DLLs are found next to nvcam.dll). Built
 * with mingw-w64 and run under Wine by scripts/ci/windows-test.sh. */
#include <stdio.h>
#include <string.h>
#include <windows.h>
#define RTLD_NOW 0
#define RTLD_LOCAL 0
static void *dlopen(const char *path, int flags) {
    (void)flags;
    return (void *)LoadLibraryExA(path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH);
}
static void *dlsym(void *lib, const char *name) {
    FARPROC f = GetProcAddress((HMODULE)lib, name);
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}
static int dlclose(void *lib) { return FreeLibrary((HMODULE)lib) ? 0 : -1; }
/* Whether the module that holds `fn` is still mapped (nvcam pins itself with GetModuleHandleEx). */
static int still_loaded(const char *path, void *fn) {
    HMODULE h;
    (void)path;
    return GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                              (LPCSTR)fn, &h) != 0;
}
static const char *dlerror(void) {
    static char buf[64];
    snprintf(buf, sizeof buf, "Windows error %lu", (unsigned long)GetLastError());
    return buf;
}
#else
#include <dlfcn.h>
#include <stddef.h>
/* Whether the library is still mapped (nvcam pins itself with RTLD_NODELETE). */
static int still_loaded(const char *path, void *fn) {
    (void)fn;
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}
#endif
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every function the header declares. tests/c_harness.rs checks this list against the header, so a
 * new export cannot be left out. */
#define NVCAM_SYMBOLS(X)                                                                           \
    X(nvcam_abi_version)                                                                           \
    X(nvcam_version_string)                                                                        \
    X(nvcam_init)                                                                                  \
    X(nvcam_shutdown)                                                                              \
    X(nvcam_status_text)                                                                           \
    X(nvcam_last_error)                                                                            \
    X(nvcam_camera_last_error)                                                                     \
    X(nvcam_camera_options_init)                                                                   \
    X(nvcam_camera_open)                                                                           \
    X(nvcam_camera_open_ex)                                                                        \
    X(nvcam_camera_close)                                                                          \
    X(nvcam_camera_publish)                                                                        \
    X(nvcam_camera_reconnect)                                                                      \
    X(nvcam_camera_get_frame)                                                                      \
    X(nvcam_camera_get_frame_lv)                                                                   \
    X(nvcam_camera_cancel_wait)                                                                    \
    X(nvcam_cameras_get_frames)                                                                    \
    X(nvcam_lv_reserve)                                                                            \
    X(nvcam_lv_unreserve)                                                                          \
    X(nvcam_lv_abort)                                                                              \
    X(nvcam_camera_stats)                                                                          \
    X(nvcam_camera_unpublish)                                                                      \
    X(nvcam_frame_clone)                                                                           \
    X(nvcam_frame_release)                                                                         \
    X(nvcam_frame_info)                                                                            \
    X(nvcam_frame_copy_nv12)                                                                       \
    X(nvcam_frame_convert)                                                                         \
    X(nvcam_frame_convert_size)                                                                    \
    X(nvcam_frames_convert_batch)                                                                  \
    X(nvcam_frame_wait_stream)                                                                     \
    X(nvcam_frame_release_after_stream)                                                            \
    X(nvcam_registry_force_release_owner)                                                          \
    X(nvcam_registry_stats)                                                                        \
    X(nvcam_log_init)                                                                              \
    X(nvcam_log_set_callback)                                                                      \
    X(nvcam_log_pop)                                                                               \
    X(nvcam_gpu_stats)                                                                             \
    X(nvcam_gpu_drain)                                                                             \
    X(nvcam_camera_record_cache)                                                                   \
    X(nvcam_camera_record_start)                                                                   \
    X(nvcam_record_extend)                                                                         \
    X(nvcam_record_stop)                                                                           \
    X(nvcam_record_status)                                                                         \
    X(nvcam_record_file)                                                                           \
    X(nvcam_record_error)                                                                          \
    X(nvcam_record_release)                                                                        \
    X(nvcam_camera_record_stats)                                                                   \
    X(nvcam_camera_record_segments)

/* Function pointers typed from the header's prototypes (nothing here links against the library). */
static struct {
#define DECLARE(name) __typeof__(&name) name;
    NVCAM_SYMBOLS(DECLARE)
#undef DECLARE
} A;

enum { NCAMS = 3, NTHREADS = 4, NCLONES = 70, FRAMES_PER_CAM = 2, NLEAKED = NCAMS * FRAMES_PER_CAM + NCLONES };
static const char *URLS[NCAMS] = {"testsrc://160x120@60", "testsrc://128x96@50", "testsrc://176x144@60"};
static const uint32_t WIDTH[NCAMS] = {160, 128, 176};
static const uint32_t HEIGHT[NCAMS] = {120, 96, 144};

static atomic_int g_checks;
static atomic_int g_failures;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

static void report(int line, const char *what, int32_t got, int32_t want) {
    char err[512] = "";
    if (A.nvcam_last_error) A.nvcam_last_error(err, (int32_t)sizeof err);
    pthread_mutex_lock(&g_print);
    if (atomic_load(&g_failures) <= 40)
        fprintf(stderr, "FAIL dlopen_stress.c:%d: %s returned %d, expected %d; last error: \"%s\"\n", line, what, got,
                want, err);
    pthread_mutex_unlock(&g_print);
}

#define EXPECT(call, want)                                                  \
    do {                                                                    \
        int32_t got_ = (call);                                              \
        int32_t want_ = (want);                                             \
        atomic_fetch_add(&g_checks, 1);                                     \
        if (got_ != want_) {                                                \
            atomic_fetch_add(&g_failures, 1);                               \
            report(__LINE__, #call, got_, want_);                           \
        }                                                                   \
    } while (0)

#define OK(call) EXPECT(call, NVCAM_OK)

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        atomic_fetch_add(&g_checks, 1);                                     \
        if (!(cond)) {                                                      \
            atomic_fetch_add(&g_failures, 1);                               \
            pthread_mutex_lock(&g_print);                                   \
            fprintf(stderr, "FAIL dlopen_stress.c:%d: %s: ", __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            pthread_mutex_unlock(&g_print);                                 \
        }                                                                   \
    } while (0)

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int resolve(void *lib) {
    int missing = 0, n = 0;
#define RESOLVE(name)                                                                              \
    do {                                                                                           \
        void *p_ = dlsym(lib, #name);                                                              \
        n++;                                                                                       \
        if (!p_) {                                                                                 \
            fprintf(stderr, "FAIL: symbol %s is not exported (%s)\n", #name, dlerror());          \
            missing++;                                                                             \
        }                                                                                          \
        memcpy(&A.name, &p_, sizeof p_);                                                           \
    } while (0);
    NVCAM_SYMBOLS(RESOLVE)
#undef RESOLVE
    atomic_fetch_add(&g_checks, 1);
    if (missing) atomic_fetch_add(&g_failures, 1);
    return missing ? -1 : n;
}

static int32_t info_of(uint64_t frame, nvcam_frame_info_t *fi) {
    memset(fi, 0, sizeof *fi);
    fi->struct_size = sizeof *fi;
    return A.nvcam_frame_info(frame, fi);
}

static int32_t stats_of(uint64_t cam, nvcam_camera_stats_t *st) {
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
    return A.nvcam_camera_stats(cam, st);
}

static atomic_int g_log_calls;
static void on_log(int32_t level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    if (user == &g_log_calls) atomic_fetch_add(&g_log_calls, 1);
}

/* ---- shared state of the stress phase ---- */
static uint64_t g_cams[NCAMS];
static uint64_t g_leaked[NLEAKED];
static int g_leaked_cam[NLEAKED]; /* which camera each leaked handle belongs to */
static uint32_t g_leaked_per_cam[NCAMS];
static uint64_t g_deadline;

typedef struct {
    int id;
    uint64_t iterations, frames, timeouts, handle_ops;
} worker_t;

static int cam_index(uint64_t cam) {
    for (int i = 0; i < NCAMS; i++)
        if (g_cams[i] == cam) return i;
    return -1;
}

static void *worker(void *arg) {
    worker_t *w = arg;
    uint8_t *buf = malloc(176 * 144 * 3 / 2);
    for (uint64_t it = 0; mono_ns() < g_deadline; it++) {
        int ci = (int)((w->id + it) % NCAMS);
        uint64_t cam = g_cams[ci];
        uint64_t f = 0;
        int32_t r = A.nvcam_camera_get_frame(cam, 200, &f);
        if (r == NVCAM_OK) {
            w->frames++;
            nvcam_frame_info_t fi, ci_info;
            OK(info_of(f, &fi));
            CHECK(fi.camera == cam && fi.width == WIDTH[ci] && fi.height == HEIGHT[ci] && fi.y_ptr != 0,
                  "thread %d: frame of camera %d is %ux%u from 0x%" PRIx64, w->id, ci, fi.width, fi.height, fi.camera);
            uint64_t c = 0;
            OK(A.nvcam_frame_clone(f, &c));
            OK(info_of(c, &ci_info));
            CHECK(ci_info.y_ptr == fi.y_ptr && ci_info.seq == fi.seq, "thread %d: clone shows other pixels", w->id);
            OK(A.nvcam_frame_release(c));
            EXPECT(A.nvcam_frame_release(c), NVCAM_E_STALE_HANDLE);
            if (it % 4 == 0) OK(A.nvcam_frame_copy_nv12(f, buf, 0, fi.nv12_size));
            OK(A.nvcam_frame_release(f));
            EXPECT(info_of(f, &fi), NVCAM_E_STALE_HANDLE);
        } else if (r == NVCAM_E_TIMEOUT) {
            w->timeouts++;
        } else {
            EXPECT(r, NVCAM_OK);
        }

        nvcam_camera_stats_t st;
        OK(stats_of(cam, &st));
        CHECK(st.state == NVCAM_STATE_STREAMING && st.live_handles >= g_leaked_per_cam[ci],
              "thread %d: camera %d state %u live %" PRIu64, w->id, ci, st.state, st.live_handles);

        /* the leaked handles stay valid while other threads clone and release around them */
        for (int k = 0; k < 16; k++) {
            int li = (int)((it * 16 + (uint64_t)k * 7 + (uint64_t)w->id * 13) % NLEAKED);
            uint64_t l = g_leaked[li];
            nvcam_frame_info_t li_info;
            OK(info_of(l, &li_info));
            CHECK(cam_index(li_info.camera) == g_leaked_cam[li], "thread %d: leaked handle %d changed owner", w->id,
                  li);
            uint64_t lc = 0;
            OK(A.nvcam_frame_clone(l, &lc));
            OK(A.nvcam_frame_release(lc));
            w->handle_ops += 3;
        }

        uint32_t for_cam = 0;
        uint64_t total = 0;
        OK(A.nvcam_registry_stats(cam, &for_cam, &total));
        CHECK(for_cam >= g_leaked_per_cam[ci] && total >= NLEAKED, "thread %d: registry %u / %" PRIu64, w->id, for_cam,
              total);
        w->iterations++;
    }
    free(buf);
    return NULL;
}

/* Every frame call on a handle that must be stale. */
static void expect_stale_frame(uint64_t h) {
    nvcam_frame_info_t fi;
    uint64_t c = 0;
    uint8_t b[16];
    EXPECT(info_of(h, &fi), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_frame_clone(h, &c), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_frame_copy_nv12(h, b, 0, sizeof b), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_frame_release(h), NVCAM_E_STALE_HANDLE);
}

static void expect_stale_camera(uint64_t h) {
    nvcam_camera_stats_t st;
    uint64_t f = 0;
    char t[64];
    EXPECT(A.nvcam_camera_get_frame(h, 10, &f), NVCAM_E_STALE_HANDLE);
    EXPECT(stats_of(h, &st), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_camera_reconnect(h), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_camera_last_error(h, t, (int32_t)sizeof t), NVCAM_E_STALE_HANDLE);
    EXPECT(A.nvcam_camera_close(h, 100), NVCAM_E_STALE_HANDLE);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s /path/to/libnvcam.so\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "FAIL: dlopen(%s): %s\n", argv[1], dlerror());
        return 1;
    }
    int nsyms = resolve(lib);
    if (nsyms < 0) {
        printf("dlopen stress: FAILED (missing symbols)\n");
        return 1;
    }
    printf("-- resolved %d symbols from %s\n", nsyms, argv[1]);
    CHECK(A.nvcam_abi_version() == NVCAM_ABI_VERSION, "abi %d", A.nvcam_abi_version());

    OK(A.nvcam_log_init(NULL, NVCAM_LOG_WARN));
    OK(A.nvcam_init(NULL));
    OK(A.nvcam_log_set_callback(on_log, &g_log_calls, NVCAM_LOG_WARN));

    /* 3 cameras, 2 held frames each, 70 clones spread across them (some are clones of clones) */
    nvcam_camera_options_t o;
    OK(A.nvcam_camera_options_init(&o));
    o.device = NVCAM_DEVICE_CPU;
    o.pool_slots = 8; /* 2 leaked + 4 threads + 1 pending + 1 being written */
    int nleaked = 0;
    for (int i = 0; i < NCAMS; i++) {
        OK(A.nvcam_camera_open(URLS[i], &o, &g_cams[i]));
        for (int k = 0; k < FRAMES_PER_CAM; k++) {
            uint64_t f = 0;
            OK(A.nvcam_camera_get_frame(g_cams[i], 5000, &f));
            g_leaked_cam[nleaked] = i;
            g_leaked[nleaked++] = f;
        }
    }
    const int nframes = nleaked;
    for (int i = 0; i < NCLONES; i++) {
        /* every third clone from the 7th on is a clone of a clone: g_leaked[i] is clone i - nframes */
        int src = (i >= nframes && i % 3 == 0) ? i : i % nframes;
        uint64_t c = 0;
        OK(A.nvcam_frame_clone(g_leaked[src], &c));
        g_leaked_cam[nleaked] = g_leaked_cam[src];
        g_leaked[nleaked++] = c;
    }
    for (int i = 0; i < nleaked; i++) g_leaked_per_cam[g_leaked_cam[i]]++;
    uint64_t total = 0;
    OK(A.nvcam_registry_stats(0, NULL, &total));
    CHECK(total == NLEAKED && nleaked == NLEAKED, "live handles %" PRIu64 ", leaked %d (want %d)", total, nleaked,
          NLEAKED);
    for (int i = 0; i < NCAMS; i++) {
        nvcam_camera_stats_t st;
        OK(stats_of(g_cams[i], &st));
        CHECK(st.live_handles == g_leaked_per_cam[i], "camera %d: live_handles %" PRIu64 " (want %u)", i,
              st.live_handles, g_leaked_per_cam[i]);
    }
    /* remember the first bytes of each held frame: no thread may cause its slot to be rewritten */
    uint8_t before[NCAMS * FRAMES_PER_CAM][64];
    for (int i = 0; i < nframes; i++) {
        nvcam_frame_info_t fi;
        OK(info_of(g_leaked[i], &fi));
        memcpy(before[i], (const void *)(uintptr_t)fi.y_ptr, 64);
    }
    printf("-- %d cameras open, %d frames held, %d clones leaked\n", NCAMS, nframes, NCLONES);

    /* 4 threads for ~2 s */
    g_deadline = mono_ns() + 2000000000ull;
    pthread_t th[NTHREADS];
    worker_t w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].id = i;
        CHECK(pthread_create(&th[i], NULL, worker, &w[i]) == 0, "pthread_create %d", i);
    }
    uint64_t iters = 0, frames = 0, timeouts = 0, handle_ops = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
        iters += w[i].iterations;
        frames += w[i].frames;
        timeouts += w[i].timeouts;
        handle_ops += w[i].handle_ops;
    }
    printf("-- threads: %" PRIu64 " iterations, %" PRIu64 " frames, %" PRIu64 " timeouts, %" PRIu64
           " info/clone/release calls on leaked handles\n", iters, frames, timeouts, handle_ops);
    CHECK(frames >= 100, "only %" PRIu64 " frames in 2 s from 3 cameras", frames);
    CHECK(atomic_load(&g_log_calls) > 0, "the log callback saw none of the threads' double-release warnings");
    OK(A.nvcam_registry_stats(0, NULL, &total));
    CHECK(total == NLEAKED, "after the threads: %" PRIu64 " live (want %d)", total, NLEAKED);
    for (int i = 0; i < nframes; i++) {
        nvcam_frame_info_t fi;
        OK(info_of(g_leaked[i], &fi));
        CHECK(memcmp(before[i], (const void *)(uintptr_t)fi.y_ptr, 64) == 0, "held frame %d was overwritten", i);
    }
    for (int i = 0; i < NCAMS; i++) {
        nvcam_camera_stats_t st;
        OK(stats_of(g_cams[i], &st));
        CHECK(st.state == NVCAM_STATE_STREAMING && st.frames_decoded > 0, "camera %d: state %u decoded %" PRIu64, i,
              st.state, st.frames_decoded);
    }

    /* shutdown with everything leaked */
    uint64_t t0 = mono_ns();
    OK(A.nvcam_shutdown(5000));
    double shut_ms = (double)(mono_ns() - t0) / 1e6;
    printf("-- shutdown with %d leaked handles took %.1f ms\n", NLEAKED, shut_ms);
    int32_t level, len;
    char msg[1024];
    char want[64];
    snprintf(want, sizeof want, "leaked %d frame handle", NLEAKED);
    int saw = 0;
    for (int i = 0; i < 5000; i++) {
        OK(A.nvcam_log_pop(&level, msg, (int32_t)sizeof msg, &len));
        if (len == 0) break;
        if (strstr(msg, want)) saw = 1;
    }
    CHECK(saw, "shutdown did not log \"%s\"", want);
    OK(A.nvcam_registry_stats(0, NULL, &total));
    CHECK(total == 0, "live after shutdown: %" PRIu64, total);
    for (int i = 0; i < nleaked; i++) expect_stale_frame(g_leaked[i]);
    for (int i = 0; i < NCAMS; i++) {
        expect_stale_camera(g_cams[i]);
        uint32_t released = 99;
        OK(A.nvcam_registry_force_release_owner(g_cams[i], &released));
        CHECK(released == 0, "force release after shutdown released %u", released);
    }
    EXPECT(A.nvcam_shutdown(100), NVCAM_E_NOT_INITIALIZED);
    uint64_t cam = 0;
    EXPECT(A.nvcam_camera_open(URLS[0], &o, &cam), NVCAM_E_NOT_INITIALIZED);

    /* re-init: fresh, old handles still stale */
    OK(A.nvcam_init(NULL));
    for (int i = 0; i < nleaked; i++) {
        nvcam_frame_info_t fi;
        EXPECT(info_of(g_leaked[i], &fi), NVCAM_E_STALE_HANDLE);
    }
    for (int i = 0; i < NCAMS; i++) expect_stale_camera(g_cams[i]);
    OK(A.nvcam_camera_open(URLS[1], &o, &cam));
    uint64_t f = 0;
    OK(A.nvcam_camera_get_frame(cam, 5000, &f));
    CHECK(cam_index(cam) < 0, "the new camera reused an old handle value");
    for (int i = 0; i < nleaked; i++) CHECK(f != g_leaked[i], "a new frame reused leaked handle %d", i);
    OK(A.nvcam_shutdown(5000)); /* with that frame leaked too */
    expect_stale_frame(f);
    expect_stale_camera(cam);

    void *init_fn;
    memcpy(&init_fn, &A.nvcam_init, sizeof init_fn);
    EXPECT(dlclose(lib), 0);
    CHECK(still_loaded(argv[1], init_fn), "the library was unloaded by its last dlclose: the self-pin did not hold");

    /* a host that loads the library again (nvcam pins itself, so it is the same image) */
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "second dlopen: %s", dlerror());
    if (lib) {
        CHECK(resolve(lib) == nsyms, "second resolve");
        CHECK(A.nvcam_abi_version() == NVCAM_ABI_VERSION, "abi after reload");
        OK(A.nvcam_init(NULL));
        nvcam_frame_info_t fi;
        int32_t r = info_of(g_leaked[0], &fi);
        CHECK(r == NVCAM_E_STALE_HANDLE || r == NVCAM_E_INVALID_HANDLE, "old handle after reload: %d", r);
        OK(A.nvcam_shutdown(1000));
        EXPECT(dlclose(lib), 0);
    }

    int checks = atomic_load(&g_checks), failures = atomic_load(&g_failures);
    printf("dlopen stress: %d symbols, %d cameras, %d leaked clones, %d threads: %" PRIu64 " iterations (%" PRIu64
           " frames, %" PRIu64 " timeouts), shutdown %.1f ms; %d checks, %d failed: %s\n",
           nsyms, NCAMS, NCLONES, NTHREADS, iters, frames, timeouts, shut_ms, checks, failures,
           failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
