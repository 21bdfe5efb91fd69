// Opens a camera with the C++ wrapper, takes frames, prints their info and the camera's stats.
//
//   c++ -std=c++17 -I include -I bindings/cpp bindings/cpp/example.cpp
//       -L target/release -lnvcam -Wl,-rpath,$PWD/target/release -o nvcam_example
//   ./nvcam_example [URL] [FRAMES]          (default: testsrc://320x240@30, 10 frames, CPU)

#include "nvcam.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    const std::string url = argc > 1 ? argv[1] : "testsrc://320x240@30";
    const int count = argc > 2 ? std::atoi(argv[2]) : 10;
    try {
        nvcam::Library lib;
        std::printf("%s\n", nvcam::version().c_str());
        nvcam::Camera cam = nvcam::Camera::open(url, nvcam::Camera::Options().device(NVCAM_DEVICE_CPU));

        uint64_t last_seq = 0;
        nvcam::Frame kept;  // a clone of the first frame, held across the loop
        for (int n = 0; n < count; ++n) {
            nvcam::Frame f = cam.get_frame(2000);
            nvcam_frame_info_t i = f.info();
            if (i.seq <= last_seq) {
                std::fprintf(stderr, "sequence went backwards: %" PRIu64 " after %" PRIu64 "\n", i.seq, last_seq);
                return 1;
            }
            last_seq = i.seq;
            std::vector<uint8_t> px = f.copy_nv12();
            if (px.size() != i.nv12_size) return 1;
            std::printf("frame %d: seq=%" PRIu64 " %ux%u pitch=%" PRIu64 " nv12_size=%" PRIu64 " pts_us=%" PRId64 " Y[0]=%u\n",
                        n, i.seq, i.width, i.height, i.pitch, i.nv12_size, i.pts_us, unsigned(px[0]));
            // BGRA for a display (LabVIEW's picture control takes the same bytes as U32s).
            std::vector<uint8_t> bgra = f.convert(nvcam::Frame::spec(NVCAM_FORMAT_BGRA8));
            if (bgra.size() != size_t(i.width) * i.height * 4 || bgra[3] != 255) return 1;
            if (!kept) kept = f.clone();
        }  // each frame is released when f goes out of scope

        // A double release is an exception, never a crash.
        nvcam::Frame twice = kept.clone();
        uint64_t raw = twice.handle();
        twice.release();
        try {
            nvcam::Frame(raw).release();
            std::fprintf(stderr, "second release did not fail\n");
            return 1;
        } catch (const nvcam::Error& e) {
            std::printf("second release: %s (%d) %s\n", e.name().c_str(), e.code(), e.what());
            if (e.code() != NVCAM_E_STALE_HANDLE) return 1;
        }
        kept = nvcam::Frame();  // releases the clone

        nvcam_camera_stats_t s = cam.stats();
        std::printf("stats: state=%s decoded=%" PRIu64 " delivered=%" PRIu64 " skipped=%" PRIu64 " dropped=%" PRIu64
                    " reconnects=%" PRIu64 " %ux%u fps=%.1f slots=%u/%u live_handles=%" PRIu64 "\n",
                    nvcam::state_name(s.state), s.frames_decoded, s.frames_delivered, s.frames_skipped,
                    s.frames_dropped, s.reconnects, s.width, s.height, s.fps, s.pool_slots_in_use,
                    s.pool_slots_total, s.live_handles);
        if (s.frames_delivered != uint64_t(count) || s.live_handles != 0) return 1;

        // cancel_wait wakes the waits in progress (another thread's get_frame throws
        // NVCAM_E_CANCELLED); it leaves nothing behind for the waits that come later.
        cam.cancel_wait();
        {
            nvcam::Frame after = cam.get_frame(2000);
            std::printf("after cancel_wait: frame seq=%" PRIu64 "\n", after.info().seq);
        }

        // Latest of N, then one tensor of both (NHWC BGR, 64x48 each, on the host here).
        {
            nvcam::Camera other = nvcam::Camera::open("testsrc://160x120@30", nvcam::Camera::Options().device(NVCAM_DEVICE_CPU));
            nvcam::FrameBatch b = nvcam::get_frames({cam, other}, 3000);
            if (!b.complete()) return 1;
            nvcam_convert_t spec = nvcam::Frame::spec(NVCAM_FORMAT_BGR8, 64, 48, true);
            const size_t item = size_t(b.frames[0].convert_size(spec));
            std::vector<uint8_t> tensor(2 * item);
            nvcam::convert_batch(b.frames, spec, tensor.data(), tensor.size());
            if (b.frames[1].convert(spec) != std::vector<uint8_t>(tensor.begin() + item, tensor.end())) return 1;
            std::printf("batch: 2 cameras, %zu bytes per item\n", item);
        }

        try {
            nvcam::Camera::open("nosuch://camera");
            return 1;
        } catch (const nvcam::Error& e) {
            std::printf("bad URL: %s (%d)\n", e.what(), e.code());
        }

        cam.close();
        lib.shutdown();
        std::printf("ok\n");
        return 0;
    } catch (const nvcam::Error& e) {
        std::fprintf(stderr, "nvcam error %s (%d): %s\n", e.name().c_str(), e.code(), e.what());
        return 1;
    }
}
