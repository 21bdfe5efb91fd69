/*
 * C harness for the nvcam C ABI, compiled against include/nvcam.h and linked to the cdylib by
 * tests/c_harness.rs (cargo test). It checks every contract the header states from the point of
 * view of a C host: struct layout, versions, status texts, NULL pointers, struct_size, made-up,
 * stale and wrong-type handles, calls before init, a real camera (testsrc on the CPU), frames,
 * clones, the registry, logging, last-error texts, stats, close, shutdown and re-init.
 *
 * Prints one line per failed check and a summary line; exits 0 only if every check passed.
 */
#define _GNU_SOURCE
#include "nvcam.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- layout: the header asserts the sizes; the offsets pin every field (no hidden padding) ---- */
_Static_assert(sizeof(nvcam_config_t) == 64, "nvcam_config_t size");
_Static_assert(sizeof(nvcam_camera_options_t) == 80, "nvcam_camera_options_t size");
_Static_assert(sizeof(nvcam_camera_stats_t) == 232, "nvcam_camera_stats_t size");
_Static_assert(sizeof(nvcam_frame_info_t) == 128, "nvcam_frame_info_t size");
_Static_assert(offsetof(nvcam_frame_info_t, flags) == 120, "info.flags");
_Static_assert(offsetof(nvcam_config_t, gpu_free_min_age_ms) == 12, "config.gpu_free_min_age_ms");
_Static_assert(offsetof(nvcam_config_t, reserved) == 16, "config.reserved");
_Static_assert(offsetof(nvcam_camera_options_t, device) == 12, "options.device");
_Static_assert(offsetof(nvcam_camera_options_t, decode_threads) == 36, "options.decode_threads");
_Static_assert(offsetof(nvcam_camera_options_t, ffmpeg_options) == 40, "options.ffmpeg_options");
_Static_assert(offsetof(nvcam_camera_options_t, reconnect_fast_ms) == 48, "options.reconnect_fast_ms");
_Static_assert(offsetof(nvcam_camera_options_t, latency) == 52, "options.latency");
_Static_assert(offsetof(nvcam_camera_options_t, transport) == 56, "options.transport");
_Static_assert(offsetof(nvcam_camera_options_t, integrity) == 60, "options.integrity");
_Static_assert(offsetof(nvcam_camera_options_t, max_picture_width) == 64, "options.max_picture_width");
_Static_assert(offsetof(nvcam_camera_options_t, reserved) == 72, "options.reserved");
_Static_assert(offsetof(nvcam_camera_stats_t, frames_decoded) == 8, "stats.frames_decoded");
_Static_assert(offsetof(nvcam_camera_stats_t, pool_slots_total) == 48, "stats.pool_slots_total");
_Static_assert(offsetof(nvcam_camera_stats_t, bytes_held) == 56, "stats.bytes_held");
_Static_assert(offsetof(nvcam_camera_stats_t, fps) == 64, "stats.fps");
_Static_assert(offsetof(nvcam_camera_stats_t, width) == 72, "stats.width");
_Static_assert(offsetof(nvcam_camera_stats_t, device) == 96, "stats.device");
_Static_assert(offsetof(nvcam_camera_stats_t, last_error_code) == 104, "stats.last_error_code");
_Static_assert(offsetof(nvcam_camera_stats_t, live_handles) == 112, "stats.live_handles");
_Static_assert(offsetof(nvcam_camera_stats_t, decode_latency_p50_us) == 120, "stats.decode_latency_p50_us");
_Static_assert(offsetof(nvcam_camera_stats_t, decode_latency_p99_us) == 124, "stats.decode_latency_p99_us");
_Static_assert(offsetof(nvcam_camera_stats_t, frames_corrupt) == 128, "stats.frames_corrupt");
_Static_assert(offsetof(nvcam_camera_stats_t, last_loss_ns) == 144, "stats.last_loss_ns");
_Static_assert(offsetof(nvcam_camera_stats_t, kernel_drops) == 216, "stats.kernel_drops");
_Static_assert(offsetof(nvcam_camera_stats_t, keyframe_requests) == 224, "stats.keyframe_requests");
_Static_assert(offsetof(nvcam_frame_info_t, device) == 20, "info.device");
_Static_assert(offsetof(nvcam_frame_info_t, pitch) == 24, "info.pitch");
_Static_assert(offsetof(nvcam_frame_info_t, nv12_size) == 48, "info.nv12_size");
_Static_assert(offsetof(nvcam_frame_info_t, pts_us) == 64, "info.pts_us");
_Static_assert(offsetof(nvcam_frame_info_t, camera) == 80, "info.camera");
_Static_assert(offsetof(nvcam_frame_info_t, capture_ns) == 88, "info.capture_ns");
_Static_assert(offsetof(nvcam_frame_info_t, time_source) == 96, "info.time_source");
_Static_assert(offsetof(nvcam_frame_info_t, color_range) == 104, "info.color_range");
_Static_assert(offsetof(nvcam_frame_info_t, color_transfer) == 108, "info.color_transfer");
_Static_assert(offsetof(nvcam_frame_info_t, chroma_siting) == 112, "info.chroma_siting");
_Static_assert(offsetof(nvcam_frame_info_t, bit_depth) == 116, "info.bit_depth");
_Static_assert(NVCAM_ABI_VERSION == 1, "this harness was written for ABI 1");

/* ---- check machinery ---- */
static int g_checks;
static int g_failures;

static const char *code_name(int32_t code) {
    static char buf[160];
    char full[160];
    if (nvcam_status_text(code, full, (int32_t)sizeof full) != NVCAM_OK) {
        snprintf(buf, sizeof buf, "?%d", code);
        return buf;
    }
    const char *colon = strchr(full, ':');
    size_t n = colon ? (size_t)(colon - full) : strlen(full);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, full, n);
    buf[n] = 0;
    return buf;
}

static void fail_code(const char *expr, int line, int32_t got, int32_t want) {
    char err[512] = "";
    nvcam_last_error(err, (int32_t)sizeof err); /* read before code_name() makes another call */
    char got_name[160];
    snprintf(got_name, sizeof got_name, "%s", code_name(got));
    fprintf(stderr, "FAIL harness.c:%d: %s returned %d (%s), expected %d (%s); last error: \"%s\"\n", line, expr,
            got, got_name, want, code_name(want), err);
}

#define EXPECT(call, want)                                                  \
    do {                                                                    \
        int32_t got_ = (call);                                              \
        int32_t want_ = (want);                                             \
        g_checks++;                                                         \
        if (got_ != want_) {                                                \
            g_failures++;                                                   \
            fail_code(#call, __LINE__, got_, want_);                        \
        }                                                                   \
    } while (0)

#define OK(call) EXPECT(call, NVCAM_OK)

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        g_checks++;                                                         \
        if (!(cond)) {                                                      \
            g_failures++;                                                   \
            fprintf(stderr, "FAIL harness.c:%d: %s: ", __LINE__, #cond);    \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

static void section(const char *name) { printf("-- %s\n", name); fflush(stdout); }

static void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *last_error_text(void) {
    static char buf[1024];
    buf[0] = 0;
    nvcam_last_error(buf, (int32_t)sizeof buf);
    return buf;
}

/* Every status code of the header with its name. */
static const struct { int32_t code; const char *name; } CODES[] = {
#define C(x) {x, #x}
    C(NVCAM_OK), C(NVCAM_E_NULL_POINTER), C(NVCAM_E_INVALID_ARGUMENT), C(NVCAM_E_BUFFER_TOO_SMALL),
    C(NVCAM_E_STRUCT_SIZE), C(NVCAM_E_NOT_INITIALIZED), C(NVCAM_E_NULL_HANDLE), C(NVCAM_E_INVALID_HANDLE),
    C(NVCAM_E_WRONG_HANDLE_TYPE), C(NVCAM_E_STALE_HANDLE), C(NVCAM_E_CLOSED), C(NVCAM_E_TIMEOUT), C(NVCAM_E_IO),
    C(NVCAM_E_AUTH), C(NVCAM_E_UNSUPPORTED), C(NVCAM_E_FFMPEG), C(NVCAM_E_CUDA), C(NVCAM_E_BAD_OPTION),
    C(NVCAM_E_FAILED), C(NVCAM_E_CANCELLED), C(NVCAM_E_OUT_OF_MEMORY), C(NVCAM_E_NO_DEVICE), C(NVCAM_E_PANIC), C(NVCAM_E_INTERNAL),
#undef C
};

/* ---- the log callback: may be called from any thread ---- */
typedef struct {
    atomic_int calls;
    atomic_int wrong_user;
    atomic_int bad_level;
    pthread_mutex_t m;
    char last[512];
    int last_level;
} log_sink;

static log_sink g_sink = {.m = PTHREAD_MUTEX_INITIALIZER};

static void on_log(int32_t level, const char *message, void *user) {
    log_sink *s = &g_sink;
    if (user != (void *)s) atomic_fetch_add(&s->wrong_user, 1);
    if (level < NVCAM_LOG_ERROR || level > NVCAM_LOG_TRACE) atomic_fetch_add(&s->bad_level, 1);
    pthread_mutex_lock(&s->m);
    snprintf(s->last, sizeof s->last, "%s", message ? message : "(null)");
    s->last_level = level;
    pthread_mutex_unlock(&s->m);
    atomic_fetch_add(&s->calls, 1);
}

static void sink_last(char *out, size_t n, int *level) {
    pthread_mutex_lock(&g_sink.m);
    snprintf(out, n, "%s", g_sink.last);
    if (level) *level = g_sink.last_level;
    pthread_mutex_unlock(&g_sink.m);
}

/* ---- helpers over the API ---- */
static nvcam_camera_options_t cpu_options(void) {
    nvcam_camera_options_t o;
    memset(&o, 0xAB, sizeof o); /* options_init must overwrite every field */
    OK(nvcam_camera_options_init(&o));
    o.device = NVCAM_DEVICE_CPU;
    return o;
}

static uint64_t open_testsrc(const char *url) {
    nvcam_camera_options_t o = cpu_options();
    uint64_t cam = 0;
    int32_t r = nvcam_camera_open(url, &o, &cam);
    g_checks++;
    if (r != NVCAM_OK || cam == 0) {
        g_failures++;
        fail_code("nvcam_camera_open(testsrc)", __LINE__, r, NVCAM_OK);
        return 0;
    }
    return cam;
}

static uint64_t get_frame(uint64_t cam) {
    uint64_t f = 0;
    int32_t r = nvcam_camera_get_frame(cam, 5000, &f);
    g_checks++;
    if (r != NVCAM_OK || f == 0) {
        g_failures++;
        fail_code("nvcam_camera_get_frame", __LINE__, r, NVCAM_OK);
        return 0;
    }
    return f;
}

static int32_t info_of(uint64_t frame, nvcam_frame_info_t *fi) {
    memset(fi, 0, sizeof *fi);
    fi->struct_size = sizeof *fi;
    return nvcam_frame_info(frame, fi);
}

static int32_t stats_of(uint64_t cam, nvcam_camera_stats_t *st) {
    memset(st, 0, sizeof *st);
    st->struct_size = sizeof *st;
    return nvcam_camera_stats(cam, st);
}

static uint32_t live_for(uint64_t cam) {
    uint32_t n = 12345;
    uint64_t total = 0;
    OK(nvcam_registry_stats(cam, &n, &total));
    return n;
}

static uint64_t live_total(void) {
    uint64_t total = 12345;
    OK(nvcam_registry_stats(0, NULL, &total));
    return total;
}

/* Every frame function on `h` must answer `want` (a stale, made-up or wrong-type frame handle). */
static void expect_frame_calls(uint64_t h, int32_t want, int line) {
    nvcam_frame_info_t fi;
    uint64_t clone = 777;
    uint8_t buf[64];
    int32_t r;
#define FR(call)                                                                                    \
    do {                                                                                            \
        r = (call);                                                                                 \
        g_checks++;                                                                                 \
        if (r != want) {                                                                            \
            g_failures++;                                                                           \
            char e_[256];                                                                            \
            snprintf(e_, sizeof e_, "%s [handle 0x%016" PRIx64 ", line %d]", #call, h, line);       \
            fail_code(e_, __LINE__, r, want);                                                       \
        }                                                                                           \
    } while (0)
    FR(info_of(h, &fi));
    FR(nvcam_frame_clone(h, &clone));
    FR(nvcam_frame_copy_nv12(h, buf, 0, sizeof buf));
    FR(nvcam_frame_release(h));
#undef FR
    CHECK(clone == 777, "a failed clone wrote its output (%" PRIx64 ")", clone);
}

/* Every camera function on `h` must answer `want`. */
static void expect_camera_calls(uint64_t h, int32_t want, int line) {
    nvcam_camera_stats_t st;
    uint64_t frame = 777;
    char text[128];
    int32_t r;
#define CR(call)                                                                                    \
    do {                                                                                            \
        r = (call);                                                                                 \
        g_checks++;                                                                                 \
        if (r != want) {                                                                            \
            g_failures++;                                                                           \
            char e_[256];                                                                            \
            snprintf(e_, sizeof e_, "%s [handle 0x%016" PRIx64 ", line %d]", #call, h, line);       \
            fail_code(e_, __LINE__, r, want);                                                       \
        }                                                                                           \
    } while (0)
    CR(nvcam_camera_get_frame(h, 0, &frame));
    CR(stats_of(h, &st));
    CR(nvcam_camera_reconnect(h));
    CR(nvcam_camera_last_error(h, text, (int32_t)sizeof text));
    CR(nvcam_camera_cancel_wait(h));
    void *slot = NULL;
    CR(nvcam_camera_get_frame_lv(h, 0, &frame, &slot));
    CR(nvcam_camera_close(h, 100));
#undef CR
    CHECK(frame == 777, "a failed get_frame wrote its output (%" PRIx64 ")", frame);
    CHECK(slot == NULL, "get_frame_lv on a bad camera handle reserved an instance (%p)", slot);
}

/* ================================================================================================ */

static void check_versions_and_texts(void) {
    section("versions and status texts");
    CHECK(nvcam_abi_version() == NVCAM_ABI_VERSION, "abi %d, header %d", nvcam_abi_version(), NVCAM_ABI_VERSION);

    char v[128];
    memset(v, 'x', sizeof v);
    OK(nvcam_version_string(v, (int32_t)sizeof v));
    char want_tail[32];
    snprintf(want_tail, sizeof want_tail, "(abi %d)", NVCAM_ABI_VERSION);
    CHECK(strncmp(v, "nvcam ", 6) == 0 && strstr(v, want_tail) != NULL, "version string \"%s\"", v);
    printf("   version: %s\n", v);
    size_t vlen = strlen(v);

    /* Truncation: always NUL-terminated, BUFFER_TOO_SMALL. */
    char small[6];
    memset(small, 'x', sizeof small);
    EXPECT(nvcam_version_string(small, (int32_t)sizeof small), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(memcmp(small, "nvcam", 6) == 0, "truncated version \"%.6s\"", small);
    EXPECT(nvcam_version_string(small, 0), NVCAM_E_BUFFER_TOO_SMALL);
    EXPECT(nvcam_version_string(small, -5), NVCAM_E_BUFFER_TOO_SMALL);
    char exact[128];
    OK(nvcam_version_string(exact, (int32_t)vlen + 1)); /* exactly enough */
    CHECK(strcmp(exact, v) == 0, "exact-size version \"%s\"", exact);
    EXPECT(nvcam_version_string(exact, (int32_t)vlen), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(strlen(exact) == vlen - 1, "one short: \"%s\"", exact);

    for (size_t i = 0; i < sizeof CODES / sizeof CODES[0]; i++) {
        char t[256];
        OK(nvcam_status_text(CODES[i].code, t, (int32_t)sizeof t));
        size_t n = strlen(CODES[i].name);
        CHECK(strncmp(t, CODES[i].name, n) == 0 && t[n] == ':' && t[n + 1] == ' ' && strlen(t) > n + 2,
              "status text of %d is \"%s\", expected \"%s: ...\"", CODES[i].code, t, CODES[i].name);
        if (CODES[i].code != 0)
            CHECK(CODES[i].code <= -8000 && CODES[i].code >= -8999, "%s outside LabVIEW's user range", CODES[i].name);
    }
    char t[256];
    OK(nvcam_status_text(12345, t, (int32_t)sizeof t));
    CHECK(strstr(t, "12345") != NULL, "unknown code text \"%s\"", t);
    EXPECT(nvcam_status_text(NVCAM_E_STALE_HANDLE, t, 4), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(strcmp(t, "NVC") == 0, "truncated status text \"%s\"", t);
}

static void check_before_init(void) {
    section("before nvcam_init");
    nvcam_camera_options_t o = cpu_options();
    uint64_t cam = 777;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &o, &cam), NVCAM_E_NOT_INITIALIZED);
    CHECK(cam == 777, "failed open wrote its output");
    CHECK(strstr(last_error_text(), "NVCAM_E_NOT_INITIALIZED") != NULL, "last error \"%s\"", last_error_text());
    EXPECT(nvcam_camera_open("testsrc://320x240@30", NULL, &cam), NVCAM_E_NOT_INITIALIZED);
    EXPECT(nvcam_shutdown(100), NVCAM_E_NOT_INITIALIZED);
    /* Handle checks need no init: made-up handles are still told apart. */
    expect_camera_calls(0, NVCAM_E_NULL_HANDLE, __LINE__);
    expect_frame_calls(0xdeadbeefull, NVCAM_E_INVALID_HANDLE, __LINE__);
    uint64_t total = 99;
    OK(nvcam_registry_stats(0, NULL, &total));
    CHECK(total == 0, "live handles before init: %" PRIu64, total);

    /* A config whose struct_size is too small is refused, and does not initialize. */
    nvcam_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = 8;
    EXPECT(nvcam_init(&cfg), NVCAM_E_STRUCT_SIZE);
    CHECK(strstr(last_error_text(), "struct_size") != NULL, "last error \"%s\"", last_error_text());
    cfg.struct_size = 0;
    EXPECT(nvcam_init(&cfg), NVCAM_E_STRUCT_SIZE);
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &o, &cam), NVCAM_E_NOT_INITIALIZED);
}

static void check_init(void) {
    section("nvcam_init");
    nvcam_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    OK(nvcam_init(&cfg));
    CHECK(last_error_text()[0] == 0, "last error after success: \"%s\"", last_error_text());
    OK(nvcam_init(NULL)); /* again: a no-op */
    OK(nvcam_init(&cfg));
}

static void check_null_pointers_and_sizes(void) {
    section("NULL pointers and struct_size");
    EXPECT(nvcam_version_string(NULL, 64), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_status_text(0, NULL, 64), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_last_error(NULL, 64), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_camera_options_init(NULL), NVCAM_E_NULL_POINTER);
    CHECK(strstr(last_error_text(), "NVCAM_E_NULL_POINTER") != NULL, "last error \"%s\"", last_error_text());

    nvcam_camera_options_t o = cpu_options();
    CHECK(o.struct_size == sizeof o, "options_init struct_size %u", o.struct_size);
    CHECK(o.flags == 0 && o.pool_slots == 4 && o.decoder == NVCAM_DECODER_AUTO && o.open_timeout_ms == 5000 &&
              o.stall_timeout_ms == 5000 && o.reconnect_min_ms == 250 && o.reconnect_max_ms == 10000 &&
              o.decode_threads == 0 && o.ffmpeg_options == NULL && o.reconnect_fast_ms == 3000 && o.latency == NVCAM_LATENCY_AUTO && o.transport == NVCAM_TRANSPORT_DEFAULT && o.integrity == NVCAM_INTEGRITY_EXACT && o.max_picture_width == 8192 && o.max_picture_height == 8192 && o.reserved[0] == 0,
          "options_init defaults: flags %u slots %u decoder %u open %u stall %u rmin %u rmax %u", o.flags,
          o.pool_slots, o.decoder, o.open_timeout_ms, o.stall_timeout_ms, o.reconnect_min_ms, o.reconnect_max_ms);

    uint64_t cam = 777;
    EXPECT(nvcam_camera_open(NULL, &o, &cam), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &o, NULL), NVCAM_E_NULL_POINTER);
    CHECK(cam == 777, "failed open wrote its output");

    nvcam_camera_options_t bad = o;
    bad.struct_size = 16;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_STRUCT_SIZE);
    bad.struct_size = sizeof bad - 1;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_STRUCT_SIZE);
    bad = o;
    bad.flags = 0x80000000u;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_INVALID_ARGUMENT);
    bad = o;
    bad.pool_slots = 1;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_INVALID_ARGUMENT);
    bad = o;
    bad.device = -3;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_INVALID_ARGUMENT);
    bad = o;
    bad.decoder = 99;
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_camera_open("", &o, &cam), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_camera_open("testsrc://banana", &o, &cam), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_camera_open("gopher://example.com/cam", &o, &cam), NVCAM_E_UNSUPPORTED);
    EXPECT(nvcam_camera_open("/nonexistent/nvcam-harness/clip.mp4", &o, &cam), NVCAM_E_IO);
    bad = o;
    bad.ffmpeg_options = "nvcam_no_such_option=1";
    EXPECT(nvcam_camera_open("testsrc://320x240@30", &bad, &cam), NVCAM_E_BAD_OPTION);
    CHECK(strstr(last_error_text(), "nvcam_no_such_option") != NULL, "bad option text \"%s\"", last_error_text());
    CHECK(cam == 777, "a failed open wrote its output");
    CHECK(live_total() == 0, "failed opens left frame handles behind");

    /* A struct_size larger than ours (a newer caller) is accepted. */
    struct { nvcam_camera_options_t o; uint64_t future[4]; } bigger;
    memset(&bigger, 0, sizeof bigger);
    bigger.o = o;
    bigger.o.struct_size = sizeof bigger;
    cam = 0;
    OK(nvcam_camera_open("testsrc://64x48@30", &bigger.o, &cam));
    CHECK(cam != 0, "open with a larger struct_size gave no handle");
    if (cam) OK(nvcam_camera_close(cam, 3000));

    /* Any GPU: opens everywhere (on the CPU where there is no GPU). */
    bad = o;
    bad.device = NVCAM_DEVICE_ANY;
    cam = 0;
    OK(nvcam_camera_open("testsrc://64x48@30", &bad, &cam));
    if (cam) OK(nvcam_camera_close(cam, 3000));
}

static void check_made_up_handles(void) {
    section("made-up handles");
    expect_camera_calls(0, NVCAM_E_NULL_HANDLE, __LINE__);
    expect_frame_calls(0, NVCAM_E_NULL_HANDLE, __LINE__);
    EXPECT(nvcam_registry_force_release_owner(0, NULL), NVCAM_E_NULL_HANDLE);
    const uint64_t bogus[] = {1, 0xdeadbeefull, UINT64_MAX, 0x7fffffffffffffffull, 0x8000000000000000ull};
    for (size_t i = 0; i < sizeof bogus / sizeof bogus[0]; i++) {
        uint32_t n = 777;
        expect_camera_calls(bogus[i], NVCAM_E_INVALID_HANDLE, __LINE__);
        expect_frame_calls(bogus[i], NVCAM_E_INVALID_HANDLE, __LINE__);
        EXPECT(nvcam_registry_force_release_owner(bogus[i], &n), NVCAM_E_INVALID_HANDLE);
        CHECK(n == 777, "failed force_release_owner wrote %u", n);
        EXPECT(nvcam_registry_stats(bogus[i], &n, NULL), NVCAM_E_INVALID_HANDLE);
    }
    EXPECT(nvcam_frame_release(0xdeadbeefull), NVCAM_E_INVALID_HANDLE);
    const char *e = last_error_text();
    CHECK(strstr(e, "NVCAM_E_INVALID_HANDLE") && strstr(e, "nvcam_frame_release") && strstr(e, "deadbeef"),
          "last error after a bad release: \"%s\"", e);
}

/* The main camera: frames, info, copies, clones, wrong types, registry, stats, force release, close. */
static void check_camera(void) {
    section("camera on testsrc://320x240@30");
    uint64_t t0 = now_ns();
    uint64_t cam = open_testsrc("testsrc://320x240@30");
    if (!cam) return;
    CHECK((int64_t)cam > 0, "handle 0x%016" PRIx64 " is not a positive I64", cam);
    CHECK(live_for(cam) == 0, "new camera has live handles");

    uint64_t f = get_frame(cam);
    if (!f) return;
    CHECK(f != cam && (int64_t)f > 0, "frame handle 0x%016" PRIx64, f);

    /* frame_info */
    nvcam_frame_info_t fi;
    OK(info_of(f, &fi));
    CHECK(fi.struct_size == sizeof fi, "info struct_size changed to %u", fi.struct_size);
    CHECK(fi.width == 320 && fi.height == 240, "info size %ux%u", fi.width, fi.height);
    CHECK(fi.format == NVCAM_FORMAT_NV12, "format %u", fi.format);
    CHECK(fi.memory == NVCAM_MEMORY_HOST && fi.device == -1, "memory %u device %d", fi.memory, fi.device);
    CHECK(fi.pitch >= 320 && fi.y_ptr != 0, "pitch %" PRIu64 " y_ptr 0x%" PRIx64, fi.pitch, fi.y_ptr);
    CHECK(fi.uv_ptr >= fi.y_ptr + fi.pitch * 240, "uv_ptr 0x%" PRIx64 " overlaps Y", fi.uv_ptr);
    CHECK(fi.nv12_size == 320 * 240 * 3 / 2, "nv12_size %" PRIu64, fi.nv12_size);
    CHECK(fi.seq >= 1, "seq %" PRIu64, fi.seq);
    CHECK(fi.camera == cam, "info.camera 0x%" PRIx64 " != 0x%" PRIx64, fi.camera, cam);
    CHECK(fi.wallclock_ns >= t0 - 1000000000ull && fi.wallclock_ns <= now_ns() + 1000000000ull,
          "wallclock %" PRIu64 " not near now", fi.wallclock_ns);
    CHECK(fi.bit_depth == 8 && fi.capture_ns != 0, "bit depth %u (want 8), or no capture time", fi.bit_depth);
    CHECK(fi.chroma_siting == NVCAM_SITING_LEFT && fi.color_transfer <= NVCAM_TRANSFER_HLG,
          "an H.264 test stream's siting %u (want left, the default) transfer %u", fi.chroma_siting, fi.color_transfer);
    printf("   frame: %ux%u pitch %" PRIu64 " seq %" PRIu64 " pts %" PRId64 " us\n", fi.width, fi.height, fi.pitch,
           fi.seq, fi.pts_us);

    /* struct_size checks on info */
    nvcam_frame_info_t small;
    memset(&small, 0, sizeof small);
    small.struct_size = 8;
    EXPECT(nvcam_frame_info(f, &small), NVCAM_E_STRUCT_SIZE);
    CHECK(small.width == 0, "a refused frame_info wrote the struct");
    EXPECT(nvcam_frame_info(f, NULL), NVCAM_E_NULL_POINTER);
    struct { nvcam_frame_info_t i; uint64_t future[2]; } big;
    memset(&big, 0xEE, sizeof big);
    big.i.struct_size = sizeof big;
    OK(nvcam_frame_info(f, &big.i));
    CHECK(big.i.struct_size == sizeof big && big.i.width == 320, "larger info struct");
    CHECK(big.future[0] == 0xEEEEEEEEEEEEEEEEull && big.future[1] == 0xEEEEEEEEEEEEEEEEull,
          "frame_info wrote past its own struct");

    /* copy_nv12: packed, then pitched, then too small / bad pitch */
    const uint8_t *y = (const uint8_t *)(uintptr_t)fi.y_ptr;
    const uint8_t *uv = (const uint8_t *)(uintptr_t)fi.uv_ptr;
    size_t packed = (size_t)fi.nv12_size;
    uint8_t *buf = malloc(packed + 16);
    memset(buf, 0x5A, packed + 16);
    OK(nvcam_frame_copy_nv12(f, buf, 0, packed));
    int rows_ok = 1, distinct = 0;
    for (unsigned r = 0; r < 240; r++) rows_ok &= memcmp(buf + r * 320, y + r * fi.pitch, 320) == 0;
    for (unsigned r = 0; r < 120; r++) rows_ok &= memcmp(buf + 320 * 240 + r * 320, uv + r * fi.pitch, 320) == 0;
    for (size_t i = 1; i < 320 * 240; i++) distinct += buf[i] != buf[0];
    CHECK(rows_ok, "packed copy differs from the frame's planes");
    CHECK(distinct > 1000, "test pattern looks flat (%d pixels differ from the first)", distinct);
    CHECK(buf[packed] == 0x5A && buf[packed + 15] == 0x5A, "packed copy wrote past nv12_size");
    EXPECT(nvcam_frame_copy_nv12(f, buf, 0, packed - 1), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(strstr(last_error_text(), "NVCAM_E_BUFFER_TOO_SMALL") != NULL, "last error \"%s\"", last_error_text());
    EXPECT(nvcam_frame_copy_nv12(f, buf, 0, 0), NVCAM_E_BUFFER_TOO_SMALL);
    EXPECT(nvcam_frame_copy_nv12(f, NULL, 0, packed), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_frame_copy_nv12(f, buf, 319, packed), NVCAM_E_INVALID_ARGUMENT);
    free(buf);

    const size_t dp = 400;
    size_t pitched = dp * 360;
    buf = malloc(pitched + 16);
    memset(buf, 0x5A, pitched + 16);
    OK(nvcam_frame_copy_nv12(f, buf, dp, pitched));
    rows_ok = 1;
    for (unsigned r = 0; r < 240; r++) rows_ok &= memcmp(buf + r * dp, y + r * fi.pitch, 320) == 0;
    for (unsigned r = 0; r < 120; r++) rows_ok &= memcmp(buf + (240 + r) * dp, uv + r * fi.pitch, 320) == 0;
    CHECK(rows_ok, "pitched copy differs from the frame's planes");
    CHECK(buf[pitched] == 0x5A, "pitched copy wrote past its size");
    EXPECT(nvcam_frame_copy_nv12(f, buf, dp, pitched - 1), NVCAM_E_BUFFER_TOO_SMALL);
    EXPECT(nvcam_frame_copy_nv12(f, buf, dp, packed), NVCAM_E_BUFFER_TOO_SMALL);
    free(buf);

    /* frame_convert on a CPU frame: BGRA (alpha 255, exact size, nothing past it), gray at full
     * range equals the Y plane, hostile specs refused, and the stream hand-off calls. */
    _Static_assert(sizeof(nvcam_convert_t) == 112, "nvcam_convert_t size");
    nvcam_convert_t cs;
    memset(&cs, 0, sizeof cs);
    cs.struct_size = sizeof cs;
    cs.format = NVCAM_FORMAT_BGRA8;
    uint64_t need = 0;
    OK(nvcam_frame_convert_size(f, &cs, 0, &need));
    CHECK(need == 320 * 240 * 4, "BGRA size %" PRIu64, need);
    buf = malloc((size_t)need + 16);
    memset(buf, 0x5A, (size_t)need + 16);
    OK(nvcam_frame_convert(f, &cs, buf, 0, need, 0));
    int alpha_ok = 1;
    for (size_t i = 3; i < need; i += 4) alpha_ok &= buf[i] == 255;
    CHECK(alpha_ok, "BGRA alpha is not 255 everywhere");
    CHECK(buf[need] == 0x5A, "convert wrote past its size");
    EXPECT(nvcam_frame_convert(f, &cs, buf, 0, need - 1, 0), NVCAM_E_BUFFER_TOO_SMALL);
    EXPECT(nvcam_frame_convert(f, NULL, buf, 0, need, 0), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_frame_convert(f, &cs, NULL, 0, need, 0), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_frame_convert(f, &cs, buf, 1, need, 0), NVCAM_E_INVALID_ARGUMENT);
    cs.dst_memory = NVCAM_MEMORY_DEVICE;
    EXPECT(nvcam_frame_convert(f, &cs, buf, 0, need, 0), NVCAM_E_UNSUPPORTED);
    cs.dst_memory = NVCAM_MEMORY_HOST;
    cs.format = 99;
    EXPECT(nvcam_frame_convert(f, &cs, buf, 0, need, 0), NVCAM_E_INVALID_ARGUMENT);
    cs.format = NVCAM_FORMAT_GRAY8;
    cs.range = NVCAM_RANGE_FULL;
    cs.roi_x = 300;
    cs.roi_width = 40;
    cs.roi_height = 10;
    EXPECT(nvcam_frame_convert(f, &cs, buf, 0, need, 0), NVCAM_E_INVALID_ARGUMENT); /* ROI outside */
    cs.roi_x = cs.roi_width = cs.roi_height = 0;
    cs.struct_size = 8;
    EXPECT(nvcam_frame_convert(f, &cs, buf, 0, need, 0), NVCAM_E_STRUCT_SIZE);
    cs.struct_size = sizeof cs;
    OK(nvcam_frame_convert(f, &cs, buf, 0, need, 0));
    rows_ok = 1;
    for (unsigned r = 0; r < 240; r++) rows_ok &= memcmp(buf + r * 320, y + r * fi.pitch, 320) == 0;
    CHECK(rows_ok, "full-range GRAY8 at the frame's size differs from the Y plane");
    CHECK(fi.color_matrix == NVCAM_MATRIX_BT601 && fi.color_range == NVCAM_RANGE_LIMITED,
          "a 240-line stream without colour information reports matrix %u range %u (want BT.601, limited)",
          fi.color_matrix, fi.color_range);
    free(buf);
    uint64_t handoff = 0;
    OK(nvcam_frame_clone(f, &handoff));
    OK(nvcam_frame_wait_stream(handoff, 0));
    OK(nvcam_frame_release_after_stream(handoff, 0));
    EXPECT(nvcam_frame_release_after_stream(handoff, 0), NVCAM_E_STALE_HANDLE);

    /* wrong handle types, both ways */
    expect_frame_calls(cam, NVCAM_E_WRONG_HANDLE_TYPE, __LINE__);
    expect_camera_calls(f, NVCAM_E_WRONG_HANDLE_TYPE, __LINE__);
    EXPECT(nvcam_registry_force_release_owner(f, NULL), NVCAM_E_WRONG_HANDLE_TYPE);
    EXPECT(nvcam_registry_stats(f, NULL, NULL), NVCAM_E_WRONG_HANDLE_TYPE);
    CHECK(strstr(last_error_text(), "NVCAM_E_WRONG_HANDLE_TYPE") != NULL, "last error \"%s\"", last_error_text());
    OK(info_of(f, &fi)); /* both still fine */
    nvcam_camera_stats_t st;
    OK(stats_of(cam, &st));
    /* A real handle with its low bits altered (an index never issued) is an error, never a hit. */
    CHECK(nvcam_frame_info(f | 0x00FFFFFFull, &fi) != NVCAM_OK, "an altered frame handle worked");
    CHECK(nvcam_camera_get_frame(cam | 0x00FFFFFFull, 0, &(uint64_t){0}) != NVCAM_OK, "an altered camera handle worked");
    OK(info_of(f, &fi));

    /* clones: a new handle to the same pixels */
    uint64_t c1 = 0, c2 = 0;
    OK(nvcam_frame_clone(f, &c1));
    OK(nvcam_frame_clone(c1, &c2)); /* a clone of a clone */
    EXPECT(nvcam_frame_clone(f, NULL), NVCAM_E_NULL_POINTER);
    CHECK(c1 && c2 && c1 != f && c2 != f && c1 != c2, "clone handles %" PRIx64 " %" PRIx64, c1, c2);
    nvcam_frame_info_t ci;
    OK(info_of(c2, &ci));
    CHECK(ci.y_ptr == fi.y_ptr && ci.seq == fi.seq && ci.camera == cam, "clone shows other pixels");
    CHECK(live_for(cam) == 3 && live_total() == 3, "registry: %u for camera, %" PRIu64 " total (want 3, 3)",
          live_for(cam), live_total());
    OK(stats_of(cam, &st));
    CHECK(st.live_handles == 3, "stats.live_handles %" PRIu64 " (want 3)", st.live_handles);

    /* release, double release */
    OK(nvcam_frame_release(c1));
    EXPECT(nvcam_frame_release(c1), NVCAM_E_STALE_HANDLE);
    CHECK(strstr(last_error_text(), "NVCAM_E_STALE_HANDLE") != NULL, "last error \"%s\"", last_error_text());
    expect_frame_calls(c1, NVCAM_E_STALE_HANDLE, __LINE__);
    OK(info_of(f, &fi)); /* the original and the other clone live on */
    OK(info_of(c2, &ci));
    CHECK(live_for(cam) == 2, "after one release: %u", live_for(cam));
    /* the released frame's slot stays untouched while a clone holds it */
    OK(nvcam_frame_release(f));
    EXPECT(nvcam_frame_release(f), NVCAM_E_STALE_HANDLE);
    uint8_t first_row[320];
    memcpy(first_row, (const uint8_t *)(uintptr_t)ci.y_ptr, 320);
    for (int i = 0; i < 6; i++) {
        uint64_t g = get_frame(cam); /* the camera keeps writing other slots */
        if (g) OK(nvcam_frame_release(g));
    }
    CHECK(memcmp(first_row, (const uint8_t *)(uintptr_t)ci.y_ptr, 320) == 0, "a held clone's slot was rewritten");
    OK(nvcam_frame_release(c2));
    CHECK(live_for(cam) == 0 && live_total() == 0, "all released, yet %u live", live_for(cam));

    /* stats: wait a little over a second so fps is measured */
    sleep_ms(1300);
    uint64_t g = get_frame(cam);
    OK(stats_of(cam, &st));
    CHECK(st.struct_size == sizeof st, "stats struct_size changed to %u", st.struct_size);
    CHECK(st.state == NVCAM_STATE_STREAMING, "state %u", st.state);
    CHECK(st.width == 320 && st.height == 240, "stats size %ux%u", st.width, st.height);
    CHECK(st.frames_decoded >= 30 && st.frames_delivered >= 8 && st.frames_delivered <= st.frames_decoded,
          "decoded %" PRIu64 " delivered %" PRIu64, st.frames_decoded, st.frames_delivered);
    CHECK(st.frames_dropped + st.frames_skipped + st.frames_delivered <= st.frames_decoded + 1,
          "dropped %" PRIu64 " + skipped %" PRIu64 " + delivered %" PRIu64 " > decoded %" PRIu64, st.frames_dropped,
          st.frames_skipped, st.frames_delivered, st.frames_decoded);
    CHECK(st.frames_skipped > 0, "1.3 s without polling skipped nothing");
    CHECK(st.reconnects == 0 && st.reconnect_attempt == 0 && st.stream_changes == 0,
          "reconnects %" PRIu64 " attempt %u changes %u", st.reconnects, st.reconnect_attempt, st.stream_changes);
    CHECK(st.pool_slots_total == 4 && st.pool_slots_in_use >= 1 && st.pool_slots_in_use <= 4,
          "slots %u in use of %u", st.pool_slots_in_use, st.pool_slots_total);
    CHECK(st.bytes_held >= 4ull * 320 * 360, "bytes_held %" PRIu64, st.bytes_held);
    CHECK(st.fps > 15.0 && st.fps < 45.0, "fps %.2f for a 30 fps source", st.fps);
    CHECK(st.memory == NVCAM_MEMORY_HOST && st.device == -1 && st.decoder == NVCAM_DECODER_SOFTWARE,
          "memory %u device %d decoder %u", st.memory, st.device, st.decoder);
    CHECK(st.live_handles == (g ? 1u : 0u), "live_handles %" PRIu64, st.live_handles);
    CHECK(st.frames_corrupt == 0 && st.packets_lost == 0 && st.last_loss_ns == 0 && st._pad0 == 0, "loss counters or padding not zero on a test source");
    printf("   stats: state %u decoded %" PRIu64 " delivered %" PRIu64 " skipped %" PRIu64 " dropped %" PRIu64
           " fps %.1f slots %u/%u bytes %" PRIu64 "\n",
           st.state, st.frames_decoded, st.frames_delivered, st.frames_skipped, st.frames_dropped, st.fps,
           st.pool_slots_in_use, st.pool_slots_total, st.bytes_held);
    EXPECT(nvcam_camera_stats(cam, NULL), NVCAM_E_NULL_POINTER);
    nvcam_camera_stats_t sst;
    memset(&sst, 0, sizeof sst);
    sst.struct_size = 4;
    EXPECT(nvcam_camera_stats(cam, &sst), NVCAM_E_STRUCT_SIZE);
    CHECK(sst.width == 0, "a refused stats call wrote the struct");
    /* that failure is the camera's last error now, in its text and in its stats */
    char ctext[512];
    OK(nvcam_camera_last_error(cam, ctext, (int32_t)sizeof ctext));
    CHECK(strstr(ctext, "NVCAM_E_STRUCT_SIZE") != NULL, "camera last error \"%s\"", ctext);
    EXPECT(nvcam_camera_last_error(cam, NULL, 64), NVCAM_E_NULL_POINTER);
    OK(stats_of(cam, &st));
    CHECK(st.last_error_code == NVCAM_E_STRUCT_SIZE, "stats.last_error_code %d", st.last_error_code);
    EXPECT(nvcam_camera_get_frame(cam, 10, NULL), NVCAM_E_NULL_POINTER);
    if (g) OK(nvcam_frame_release(g));

    /* force_release_owner: every handle of the camera, clones included, turns stale */
    section("force_release_owner");
    uint64_t a = get_frame(cam), b = get_frame(cam);
    uint64_t ac[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) OK(nvcam_frame_clone(i == 2 ? b : a, &ac[i]));
    uint32_t n_for = 0;
    uint64_t n_total = 0;
    OK(nvcam_registry_stats(cam, &n_for, &n_total));
    CHECK(n_for == 5 && n_total == 5, "registry before force release: %u / %" PRIu64, n_for, n_total);
    OK(nvcam_registry_stats(cam, NULL, NULL));
    uint32_t released = 0;
    OK(nvcam_registry_force_release_owner(cam, &released));
    CHECK(released == 5, "force_release_owner released %u (want 5)", released);
    expect_frame_calls(a, NVCAM_E_STALE_HANDLE, __LINE__);
    expect_frame_calls(b, NVCAM_E_STALE_HANDLE, __LINE__);
    for (int i = 0; i < 3; i++) expect_frame_calls(ac[i], NVCAM_E_STALE_HANDLE, __LINE__);
    CHECK(live_for(cam) == 0 && live_total() == 0, "after force release: %u live", live_for(cam));
    OK(nvcam_registry_force_release_owner(cam, &released));
    CHECK(released == 0, "second force release released %u", released);
    OK(nvcam_registry_force_release_owner(cam, NULL));
    /* the camera keeps streaming, and its pool got the slots back */
    uint64_t h = get_frame(cam);
    OK(stats_of(cam, &st));
    CHECK(st.pool_slots_in_use <= 2, "slots still held after force release: %u", st.pool_slots_in_use);
    uint64_t hc = 0;
    if (h) OK(nvcam_frame_clone(h, &hc));

    /* reconnect keeps frame handles valid (default flags) */
    section("reconnect");
    OK(nvcam_camera_reconnect(cam));
    for (int i = 0; i < 100; i++) { /* up to 5 s for the worker to reconnect and stream again */
        OK(stats_of(cam, &st));
        if (st.reconnects >= 1 && st.state == NVCAM_STATE_STREAMING) break;
        sleep_ms(50);
    }
    CHECK(st.reconnects >= 1 && st.state == NVCAM_STATE_STREAMING, "reconnects %" PRIu64 " state %u", st.reconnects,
          st.state);
    uint64_t after = get_frame(cam);
    if (h) OK(info_of(h, &fi));
    if (hc) OK(info_of(hc, &fi));

    /* close: the camera and all its frame handles turn stale */
    section("close");
    OK(nvcam_camera_close(cam, 5000));
    expect_camera_calls(cam, NVCAM_E_STALE_HANDLE, __LINE__);
    if (h) expect_frame_calls(h, NVCAM_E_STALE_HANDLE, __LINE__);
    if (hc) expect_frame_calls(hc, NVCAM_E_STALE_HANDLE, __LINE__);
    if (after) expect_frame_calls(after, NVCAM_E_STALE_HANDLE, __LINE__);
    CHECK(live_total() == 0, "live handles after close: %" PRIu64, live_total());
    OK(nvcam_registry_force_release_owner(cam, &released)); /* documented to work on a closed camera */
    CHECK(released == 0, "force release after close released %u", released);
    OK(nvcam_registry_stats(cam, &n_for, NULL));
    CHECK(n_for == 0, "registry for a closed camera: %u", n_for);
}

static void check_logging(void) {
    section("logging");
    EXPECT(nvcam_log_init(NULL, 9), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_log_init("/nonexistent-dir/nvcam-harness/log.txt", NVCAM_LOG_INFO), NVCAM_E_IO);
    OK(nvcam_log_init("", NVCAM_LOG_INFO));
    EXPECT(nvcam_log_set_callback(on_log, &g_sink, 7), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_log_set_callback(on_log, &g_sink, -1), NVCAM_E_INVALID_ARGUMENT);

    /* drain the queue, checking every message */
    int32_t level = -1, len = -1;
    char msg[2048];
    int popped = 0, saw_warn = 0, bad = 0;
    for (;;) {
        OK(nvcam_log_pop(&level, msg, (int32_t)sizeof msg, &len));
        if (len == 0) break;
        popped++;
        if (level < NVCAM_LOG_ERROR || level > NVCAM_LOG_TRACE || (size_t)len != strlen(msg)) bad++;
        if (level == NVCAM_LOG_WARN && strstr(msg, "nvcam_")) saw_warn = 1;
        if (popped > 5000) break;
    }
    printf("   log_pop: %d queued messages\n", popped);
    CHECK(popped > 0 && saw_warn, "log_pop gave %d messages, a warning naming a call: %d", popped, saw_warn);
    CHECK(bad == 0, "%d popped messages had a bad level or length", bad);
    CHECK(level == 0 && msg[0] == 0, "empty queue: level %d text \"%s\"", level, msg);

    EXPECT(nvcam_log_pop(NULL, msg, (int32_t)sizeof msg, &len), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_log_pop(&level, NULL, (int32_t)sizeof msg, &len), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_log_pop(&level, msg, (int32_t)sizeof msg, NULL), NVCAM_E_NULL_POINTER);
    /* the log calls' own failures are not logged: a failing poll must not refill its queue */
    OK(nvcam_log_pop(&level, msg, (int32_t)sizeof msg, &len));
    CHECK(len == 0, "log_pop's own failures were queued: \"%s\"", msg);
    /* a message too long for the buffer stays queued; msg_len says how long it is */
    EXPECT(nvcam_frame_release(0xdeadbeefull), NVCAM_E_INVALID_HANDLE); /* queues a warning */
    char tiny[8];
    EXPECT(nvcam_log_pop(&level, tiny, (int32_t)sizeof tiny, &len), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(tiny[0] == 0 && len > 7 && level == NVCAM_LOG_WARN, "too-small pop \"%s\" len %d", tiny, len);
    int32_t need = len;
    OK(nvcam_log_pop(&level, msg, (int32_t)sizeof msg, &len));
    CHECK(len == need && (size_t)len == strlen(msg) && strstr(msg, "nvcam_frame_release") != NULL,
          "the kept message comes next, whole: len %d \"%s\"", len, msg);

    /* the callback: called synchronously for our own failed call, with our user pointer */
    OK(nvcam_log_set_callback(on_log, &g_sink, NVCAM_LOG_WARN));
    int before = atomic_load(&g_sink.calls);
    EXPECT(nvcam_frame_release(0xdeadbeefull), NVCAM_E_INVALID_HANDLE);
    int after = atomic_load(&g_sink.calls);
    char last[512];
    int last_level = 0;
    sink_last(last, sizeof last, &last_level);
    CHECK(after > before, "the callback was not called for a failed call");
    CHECK(strstr(last, "nvcam_frame_release") != NULL && last_level == NVCAM_LOG_WARN, "callback got level %d \"%s\"",
          last_level, last);
    /* a callback registered at debug gets the info/debug messages of opening and closing a camera */
    OK(nvcam_log_set_callback(on_log, &g_sink, NVCAM_LOG_DEBUG));
    before = atomic_load(&g_sink.calls);
    uint64_t cam = open_testsrc("testsrc://64x48@30");
    if (cam) OK(nvcam_camera_close(cam, 3000));
    CHECK(atomic_load(&g_sink.calls) > before, "no info/debug messages from open/close reached the callback");
    CHECK(atomic_load(&g_sink.wrong_user) == 0 && atomic_load(&g_sink.bad_level) == 0,
          "callback got a wrong user pointer (%d) or level (%d)", atomic_load(&g_sink.wrong_user),
          atomic_load(&g_sink.bad_level));
    /* cleared with NULL: no more calls */
    OK(nvcam_log_set_callback(NULL, NULL, NVCAM_LOG_WARN));
    before = atomic_load(&g_sink.calls);
    EXPECT(nvcam_frame_release(0xdeadbeefull), NVCAM_E_INVALID_HANDLE);
    CHECK(atomic_load(&g_sink.calls) == before, "a cleared callback was called");
    OK(nvcam_log_set_callback(on_log, &g_sink, NVCAM_LOG_WARN)); /* for the shutdown check */
}

typedef struct {
    int32_t code;
    char text[256];
} other_result;

/* Fails a call on its own thread and reads that thread's last error. */
static void *other_thread(void *arg) {
    other_result *o = arg;
    nvcam_frame_info_t fi;
    o->code = info_of(0, &fi);
    nvcam_last_error(o->text, (int32_t)sizeof o->text);
    return NULL;
}

static void check_last_error(void) {
    section("last error");
    char text[64];
    OK(nvcam_status_text(NVCAM_OK, text, (int32_t)sizeof text));
    CHECK(last_error_text()[0] == 0, "after a success: \"%s\"", last_error_text());
    EXPECT(nvcam_frame_clone(0xdeadbeefull, &(uint64_t){0}), NVCAM_E_INVALID_HANDLE);
    char small[10];
    EXPECT(nvcam_last_error(small, (int32_t)sizeof small), NVCAM_E_BUFFER_TOO_SMALL);
    CHECK(strlen(small) == 9 && strncmp(small, "NVCAM_E_I", 9) == 0, "truncated last error \"%s\"", small);
    /* reading it did not clear it */
    CHECK(strstr(last_error_text(), "nvcam_frame_clone") != NULL, "last error \"%s\"", last_error_text());

    /* per thread: another thread's failure does not show here */
    pthread_t t;
    other_result other = {0, ""};
    CHECK(pthread_create(&t, NULL, other_thread, &other) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(other.code == NVCAM_E_NULL_HANDLE && strstr(other.text, "nvcam_frame_info"), "other thread: %d \"%s\"",
          other.code, other.text);
    CHECK(strstr(last_error_text(), "nvcam_frame_clone") != NULL, "this thread's last error became \"%s\"",
          last_error_text());
}

/* A thread blocked in a frame wait: plain, or begun from a LabVIEW node instance (`slot` holds a
 * copy of that instance's slot value, as LabVIEW passes the same slot to the function and to the
 * callbacks). */
typedef struct {
    uint64_t cam;
    int lv;
    void *slot;
    int32_t code;
    atomic_int done;
    uint64_t done_ns;
    pthread_t thread;
} waiter;

static void *wait_thread(void *arg) {
    waiter *w = arg;
    uint64_t f = 0;
    w->code = w->lv ? nvcam_camera_get_frame_lv(w->cam, 30000, &f, &w->slot) : nvcam_camera_get_frame(w->cam, 30000, &f);
    w->done_ns = now_ns();
    atomic_store(&w->done, 1);
    return NULL;
}

static void start_waiter(waiter *w, uint64_t cam, int lv, void *slot) {
    w->cam = cam;
    w->lv = lv;
    w->slot = slot;
    w->code = 12345;
    atomic_store(&w->done, 0);
    CHECK(pthread_create(&w->thread, NULL, wait_thread, w) == 0, "pthread_create");
}

/* Joins `w` and checks it returned NVCAM_E_CANCELLED within 100 ms of `since_ns`. */
static void expect_cancelled(waiter *w, uint64_t since_ns, const char *what) {
    pthread_join(w->thread, NULL);
    double ms = (double)(int64_t)(w->done_ns - since_ns) / 1e6;
    CHECK(w->code == NVCAM_E_CANCELLED && ms < 100.0, "%s: returned %d (%s) %.1f ms after the cancel", what, w->code,
          code_name(w->code), ms);
}

static void check_cancel_and_lv_callbacks(void) {
    section("cancel_wait and LabVIEW's Reserve/Unreserve/Abort");
    /* Nothing listens on the discard port: the camera keeps reconnecting and never has a frame. */
    nvcam_camera_options_t o = cpu_options();
    o.flags = NVCAM_OPEN_ASYNC;
    uint64_t cam = 0;
    OK(nvcam_camera_open("rtsp://127.0.0.1:9/never", &o, &cam));
    if (!cam) return;
    void *a = NULL, *b = NULL;
    OK(nvcam_lv_reserve(&a));
    OK(nvcam_lv_reserve(&b));
    CHECK(a != NULL && b != NULL && a != b, "reserve stored %p and %p", a, b);
    static waiter wa, wb, wp;
    start_waiter(&wa, cam, 1, a);
    start_waiter(&wb, cam, 1, b);
    start_waiter(&wp, cam, 0, NULL);
    sleep_ms(300);
    CHECK(!atomic_load(&wa.done) && !atomic_load(&wb.done) && !atomic_load(&wp.done), "a wait returned early");

    uint64_t t0 = now_ns();
    OK(nvcam_lv_abort(&a));
    expect_cancelled(&wa, t0, "instance A's wait after nvcam_lv_abort(A)");
    sleep_ms(200);
    CHECK(!atomic_load(&wb.done), "nvcam_lv_abort(A) woke instance B's wait");
    CHECK(!atomic_load(&wp.done), "nvcam_lv_abort(A) woke a plain get_frame");
    uint64_t t1 = now_ns();
    OK(nvcam_camera_cancel_wait(cam));
    expect_cancelled(&wb, t1, "instance B's wait after cancel_wait");
    expect_cancelled(&wp, t1, "plain wait after cancel_wait");
    /* only waits in progress: later waits run to their timeout, the camera stays open */
    uint64_t f = 0;
    EXPECT(nvcam_camera_get_frame(cam, 100, &f), NVCAM_E_TIMEOUT);
    EXPECT(nvcam_camera_get_frame_lv(cam, 100, &f, &a), NVCAM_E_TIMEOUT);

    /* NULL, made-up and stale slots are errors, never dereferenced */
    EXPECT(nvcam_lv_reserve(NULL), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_lv_unreserve(NULL), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_lv_abort(NULL), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_camera_get_frame_lv(cam, 0, &f, NULL), NVCAM_E_NULL_POINTER);
    void *junk = (void *)(uintptr_t)0xdeadbeef;
    EXPECT(nvcam_lv_abort(&junk), NVCAM_E_INVALID_HANDLE);
    EXPECT(nvcam_lv_unreserve(&junk), NVCAM_E_INVALID_HANDLE);
    EXPECT(nvcam_camera_get_frame_lv(cam, 0, &f, &junk), NVCAM_E_INVALID_HANDLE);
    void *none = NULL;
    OK(nvcam_lv_abort(&none));
    OK(nvcam_lv_unreserve(&none));
    void *stale = a;
    OK(nvcam_lv_unreserve(&a));
    CHECK(a == NULL, "unreserve left %p in the slot", a);
    EXPECT(nvcam_lv_abort(&stale), NVCAM_E_STALE_HANDLE);
    EXPECT(nvcam_lv_unreserve(&stale), NVCAM_E_STALE_HANDLE);
    OK(nvcam_lv_unreserve(&b));
    OK(nvcam_camera_close(cam, 2000));
    EXPECT(nvcam_camera_cancel_wait(cam), NVCAM_E_STALE_HANDLE);
}

static void check_shutdown_and_reinit(void) {
    section("shutdown with leaked handles, re-init");
    uint64_t cams[2] = {open_testsrc("testsrc://160x120@30"), open_testsrc("testsrc://96x64@30")};
    uint64_t leaked[8];
    int nleaked = 0;
    for (int i = 0; i < 2; i++) {
        if (!cams[i]) continue;
        uint64_t f = get_frame(cams[i]);
        if (!f) continue;
        leaked[nleaked++] = f;
        for (int k = 0; k < 3; k++) {
            uint64_t c = 0;
            OK(nvcam_frame_clone(f, &c));
            if (c) leaked[nleaked++] = c;
        }
    }
    CHECK(live_total() == (uint64_t)nleaked && nleaked == 8, "live before shutdown: %" PRIu64 " of %d",
          live_total(), nleaked);

    int before = atomic_load(&g_sink.calls);
    OK(nvcam_shutdown(5000));
    /* shutdown logged the leak count (the queue keeps it) */
    int32_t level, len;
    char msg[1024];
    int saw_leak = 0;
    for (int i = 0; i < 5000; i++) {
        OK(nvcam_log_pop(&level, msg, (int32_t)sizeof msg, &len));
        if (len == 0) break;
        if (strstr(msg, "leaked 8 frame handle")) saw_leak = 1;
    }
    CHECK(saw_leak, "shutdown did not log \"leaked 8 frame handle(s)\"");
    CHECK(atomic_load(&g_sink.calls) >= before + 1, "the callback did not see shutdown's leak warning");

    for (int i = 0; i < nleaked; i++) expect_frame_calls(leaked[i], NVCAM_E_STALE_HANDLE, __LINE__);
    for (int i = 0; i < 2; i++)
        if (cams[i]) expect_camera_calls(cams[i], NVCAM_E_STALE_HANDLE, __LINE__);
    CHECK(live_total() == 0, "live after shutdown: %" PRIu64, live_total());
    /* shutdown cleared the callback */
    before = atomic_load(&g_sink.calls);
    EXPECT(nvcam_frame_release(0xdeadbeefull), NVCAM_E_INVALID_HANDLE);
    CHECK(atomic_load(&g_sink.calls) == before, "the callback was called after nvcam_shutdown");
    /* not initialized any more */
    EXPECT(nvcam_shutdown(100), NVCAM_E_NOT_INITIALIZED);
    nvcam_camera_options_t o = cpu_options();
    uint64_t cam = 0;
    EXPECT(nvcam_camera_open("testsrc://64x48@30", &o, &cam), NVCAM_E_NOT_INITIALIZED);

    /* re-init: works afresh; old handles stay stale and are not reused */
    OK(nvcam_init(NULL));
    for (int i = 0; i < nleaked; i++) expect_frame_calls(leaked[i], NVCAM_E_STALE_HANDLE, __LINE__);
    for (int i = 0; i < 2; i++)
        if (cams[i]) expect_camera_calls(cams[i], NVCAM_E_STALE_HANDLE, __LINE__);
    cam = open_testsrc("testsrc://320x240@30");
    if (cam) {
        CHECK(cam != cams[0] && cam != cams[1], "a new camera reused an old handle value");
        uint64_t f = get_frame(cam);
        if (f) {
            nvcam_frame_info_t fi;
            OK(info_of(f, &fi));
            CHECK(fi.camera == cam && fi.width == 320, "frame after re-init: camera %" PRIx64 " width %u", fi.camera,
                  fi.width);
            for (int i = 0; i < nleaked; i++) CHECK(f != leaked[i], "a new frame reused an old handle value");
            OK(nvcam_frame_release(f));
        }
    }
    OK(nvcam_shutdown(5000));
    if (cam) expect_camera_calls(cam, NVCAM_E_STALE_HANDLE, __LINE__);
    /* and once more, init/shutdown with nothing in between */
    OK(nvcam_init(NULL));
    OK(nvcam_shutdown(1000));
}

/* ---- latest of N and batches (nvcam_cameras_get_frames, nvcam_frames_convert_batch) ---- */
static void check_batches(void) {
    section("latest of N and batched conversion");
    uint64_t cams[3] = {open_testsrc("testsrc://64x48@30"), open_testsrc("testsrc://96x64@30"), 0};
    if (!cams[0] || !cams[1]) return;
    uint64_t fr[3] = {7, 7, 7};
    OK(nvcam_cameras_get_frames(cams, 2, 5000, fr));
    CHECK(fr[0] && fr[1] && fr[2] == 7, "get_frames: %" PRIx64 " %" PRIx64 " (and wrote past n: %" PRIx64 ")", fr[0], fr[1], fr[2]);
    nvcam_frame_info_t fi;
    memset(&fi, 0, sizeof fi);
    fi.struct_size = sizeof fi;
    OK(info_of(fr[1], &fi));
    CHECK(fi.camera == cams[1], "frames[1] belongs to camera %" PRIx64, fi.camera);

    /* One tensor of both frames, NHWC BGR at 40x30, a 16-byte gap between items. */
    nvcam_convert_t cs;
    memset(&cs, 0, sizeof cs);
    cs.struct_size = sizeof cs;
    cs.format = NVCAM_FORMAT_BGR8;
    cs.width = 40;
    cs.height = 30;
    cs.flags = NVCAM_CONVERT_LETTERBOX;
    uint64_t item = 0;
    OK(nvcam_frame_convert_size(fr[0], &cs, 0, &item));
    CHECK(item == 40 * 30 * 3, "item size %" PRIu64, item);
    uint64_t stride = item + 16, need = stride + item;
    uint8_t *t = malloc((size_t)need + 8), *one = malloc((size_t)item);
    memset(t, 0x5A, (size_t)need + 8);
    OK(nvcam_frames_convert_batch(fr, 2, &cs, t, stride, need, 0));
    for (int i = 0; i < 2; i++) {
        OK(nvcam_frame_convert(fr[i], &cs, one, 0, item, 0));
        CHECK(memcmp(t + i * stride, one, (size_t)item) == 0, "batch item %d differs from nvcam_frame_convert", i);
    }
    CHECK(t[item] == 0x5A && t[need] == 0x5A, "the batch wrote into the gap or past dst_size");
    EXPECT(nvcam_frames_convert_batch(fr, 2, &cs, t, stride, need - 1, 0), NVCAM_E_BUFFER_TOO_SMALL);
    EXPECT(nvcam_frames_convert_batch(fr, 2, &cs, t, 1, need, 0), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_frames_convert_batch(fr, 0, &cs, t, 0, need, 0), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_frames_convert_batch(NULL, 2, &cs, t, 0, need, 0), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_frames_convert_batch(fr, 2, NULL, t, 0, need, 0), NVCAM_E_NULL_POINTER);
    cs.width = cs.height = 0; /* source sizes differ: one tensor cannot hold both */
    EXPECT(nvcam_frames_convert_batch(fr, 2, &cs, t, 0, need, 0), NVCAM_E_INVALID_ARGUMENT);
    OK(nvcam_frame_release(fr[0]));
    OK(nvcam_frame_release(fr[1]));
    EXPECT(nvcam_frames_convert_batch(fr, 2, &cs, one, 0, 1, 0), NVCAM_E_STALE_HANDLE);
    free(t);
    free(one);

    /* Refusals take nothing and leave frames[] zeroed. */
    uint64_t dup[2] = {cams[0], cams[0]};
    fr[0] = fr[1] = 9;
    EXPECT(nvcam_cameras_get_frames(dup, 2, 100, fr), NVCAM_E_INVALID_ARGUMENT);
    CHECK(fr[0] == 0 && fr[1] == 0, "a refused get_frames left frames[] non-zero");
    EXPECT(nvcam_cameras_get_frames(cams, 0, 100, fr), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_cameras_get_frames(cams, NVCAM_BATCH_MAX + 1, 100, fr), NVCAM_E_INVALID_ARGUMENT);
    EXPECT(nvcam_cameras_get_frames(cams, 2, 100, NULL), NVCAM_E_NULL_POINTER);
    EXPECT(nvcam_cameras_get_frames(NULL, 2, 100, fr), NVCAM_E_NULL_POINTER);
    CHECK(live_for(cams[0]) == 0 && live_for(cams[1]) == 0, "a refused get_frames took a frame");
    OK(nvcam_camera_close(cams[1], 2000));
    EXPECT(nvcam_cameras_get_frames(cams, 2, 100, fr), NVCAM_E_STALE_HANDLE);
    OK(nvcam_camera_close(cams[0], 2000));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    check_versions_and_texts();
    OK(nvcam_log_init(NULL, NVCAM_LOG_INFO)); /* callable before init */
    check_before_init();
    check_init();
    check_null_pointers_and_sizes();
    check_made_up_handles();
    check_camera();
    check_batches();
    check_last_error();
    check_cancel_and_lv_callbacks();
    check_logging();
    check_shutdown_and_reinit();
    printf("c harness: %d checks, %d failed: %s\n", g_checks, g_failures,
           g_failures ? "FAILED" : "all checks passed");
    return g_failures ? 1 : 0;
}
