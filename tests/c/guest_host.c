/*
 * A C host linked against the distribution's FFmpeg (Debian's libavutil.so.57 and libavformat.so.59,
 * ahead of libnvcam on its link line, so they come first in the process's global scope) that also
 * uses nvcam: tests/guest.rs builds and runs it. It sets its own av_log callback on Debian's
 * libavutil, then runs the guest checks through nvcam and prints one line per check, which the
 * test reads (tests/support/guest_host.py prints the same lines from Python):
 *
 *   INIT <rc> <last error>
 *   MAPPED <file>                    each FFmpeg library file mapped in this process
 *   TLS <rc> <last error>            an rtsps camera with a CA that did not sign its certificate
 *   AV1 <rc> <width> <height>        one frame of an AV1 file (dav1d)
 *   LOSS <rc> <packets lost> <frames> an RTSP camera over TCP through a lossy server, until it
 *                                    reports a loss or for 10 s
 *   HOSTLOG <own line seen> <other lines>   the host's av_log line reached the host's callback,
 *                                    and how many lines not its own did (nvcam's FFmpeg's)
 *
 *   nvcam-guest-host RTSPS_URL WRONG_CA_FILE AV1_FILE LOSSY_RTSP_URL
 *
 * Debian ships no FFmpeg headers without its -dev packages: the few functions used are declared
 * here by hand, as they are in FFmpeg 5.1.
 */
#include "nvcam.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void av_log_set_callback(void (*callback)(void *, int, const char *, va_list));
void av_log_set_level(int level);
void av_log(void *avcl, int level, const char *fmt, ...);
unsigned avformat_version(void);

#define AV_LOG_ERROR 16
#define AV_LOG_DEBUG 48

static int own_seen, others;

static void host_log(void *avcl, int level, const char *fmt, va_list vl) {
    (void)avcl;
    (void)level;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, vl);
    if (strstr(line, "guest-host line 42"))
        __atomic_add_fetch(&own_seen, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_add_fetch(&others, 1, __ATOMIC_SEQ_CST);
}

static void last_error(char *buf, int len) {
    if (nvcam_last_error(buf, len) != NVCAM_OK) snprintf(buf, (size_t)len, "(no text)");
}

static void options(nvcam_camera_options_t *o) {
    nvcam_camera_options_init(o);
    o->device = NVCAM_DEVICE_CPU;
    o->open_timeout_ms = 5000;
    o->stall_timeout_ms = 3000;
    o->reconnect_min_ms = 200;
    o->reconnect_max_ms = 1000;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s RTSPS_URL WRONG_CA_FILE AV1_FILE LOSSY_RTSP_URL\n", argv[0]);
        return 2;
    }
    char err[2048], opts[4096];
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* The host's own FFmpeg, used before nvcam is: its log goes to the host's callback. */
    av_log_set_level(AV_LOG_DEBUG);
    av_log_set_callback(host_log);
    printf("HOST libavformat %u\n", avformat_version());

    int rc = nvcam_init(NULL);
    last_error(err, sizeof err);
    printf("INIT %d %s\n", rc, rc == NVCAM_OK ? "" : err);
    if (rc != NVCAM_OK) return 1;

    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096], seen[16][512];
    int n_seen = 0;
    while (maps && fgets(line, sizeof line, maps)) {
        char *p = strchr(line, '/');
        if (!p || (!strstr(p, "/libav") && !strstr(p, "/libsw"))) continue;
        p[strcspn(p, "\n")] = 0;
        int dup = 0;
        for (int i = 0; i < n_seen; i++) dup |= strcmp(seen[i], p) == 0;
        if (!dup && n_seen < 16) {
            snprintf(seen[n_seen++], sizeof seen[0], "%s", p);
            printf("MAPPED %s\n", p);
        }
    }
    if (maps) fclose(maps);

    nvcam_camera_options_t o;
    uint64_t cam = 0, frame = 0;

    options(&o);
    snprintf(opts, sizeof opts, "ca_file=%s", argv[2]);
    o.ffmpeg_options = opts;
    rc = nvcam_camera_open(argv[1], &o, &cam);
    last_error(err, sizeof err);
    printf("TLS %d %s\n", rc, err);
    if (rc == NVCAM_OK) nvcam_camera_close(cam, 2000);

    options(&o);
    nvcam_frame_info_t fi;
    memset(&fi, 0, sizeof fi);
    fi.struct_size = sizeof fi;
    rc = nvcam_camera_open(argv[3], &o, &cam);
    if (rc == NVCAM_OK) {
        rc = nvcam_camera_get_frame(cam, 5000, &frame);
        if (rc == NVCAM_OK) {
            nvcam_frame_info(frame, &fi);
            nvcam_frame_release(frame);
        }
        nvcam_camera_close(cam, 2000);
    }
    printf("AV1 %d %u %u\n", rc, fi.width, fi.height);

    options(&o);
    o.transport = NVCAM_TRANSPORT_TCP;
    uint64_t frames = 0;
    nvcam_camera_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    rc = nvcam_camera_open(argv[4], &o, &cam);
    if (rc == NVCAM_OK) {
        /* Until a loss is reported or 10 s have passed (5 % of a few hundred packets a second). */
        double end = now() + 10.0;
        while (now() < end && rc == NVCAM_OK && st.packets_lost == 0) {
            if (nvcam_camera_get_frame(cam, 200, &frame) == NVCAM_OK) {
                frames++;
                nvcam_frame_release(frame);
            }
            rc = nvcam_camera_stats(cam, &st);
        }
        nvcam_camera_close(cam, 2000);
    }
    printf("LOSS %d %llu %llu\n", rc, (unsigned long long)st.packets_lost, (unsigned long long)frames);

    /* The host's FFmpeg logs after nvcam has run: still through the host's callback. */
    av_log(NULL, AV_LOG_ERROR, "guest-host line %d\n", 42);
    printf("HOSTLOG %d %d\n", __atomic_load_n(&own_seen, __ATOMIC_SEQ_CST), __atomic_load_n(&others, __ATOMIC_SEQ_CST));
    return nvcam_shutdown(5000) == NVCAM_OK ? 0 : 1;
}
