// Header-only C++17 RAII wrapper over the nvcam C API (include/nvcam.h), for a library linked at
// build time (-lnvcam). Every failed call throws nvcam::Error with the status code and the
// library's message; destructors never throw (they release quietly: a handle already made stale
// by a close or a shutdown is not an error there).
//
//   nvcam::Library lib;                                   // nvcam_init ... nvcam_shutdown
//   auto cam = nvcam::Camera::open("testsrc://640x480@30", nvcam::Camera::Options().device(NVCAM_DEVICE_CPU));
//   nvcam::Frame f = cam.get_frame(1000);                 // move-only; f.clone() for a 2nd handle
//   std::vector<uint8_t> nv12 = f.copy_nv12();
//
// Frames and cameras are move-only: a handle is released exactly once, by whoever owns it last.
// Objects are thread-compatible (one object, one thread at a time); the library itself is
// thread-safe, so different objects may be used from different threads.
#pragma once

#include "nvcam.h"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace nvcam {

/// A failed nvcam call: code() is the NVCAM_E_* status, what() the library's message.
class Error : public std::runtime_error {
public:
    Error(int32_t code, std::string name, const std::string& message)
        : std::runtime_error(message), code_(code), name_(std::move(name)) {}
    int32_t code() const noexcept { return code_; }
    /// "NVCAM_E_STALE_HANDLE" etc.
    const std::string& name() const noexcept { return name_; }

private:
    int32_t code_;
    std::string name_;
};

namespace detail {

inline std::string text(int32_t (*fn)(char*, int32_t)) {
    std::vector<char> buf(4096);
    while (fn(buf.data(), int32_t(buf.size())) == NVCAM_E_BUFFER_TOO_SMALL && buf.size() < (1u << 20))
        buf.resize(buf.size() * 4);
    return std::string(buf.data());
}

inline std::string status_text(int32_t code) {
    std::vector<char> buf(512);
    nvcam_status_text(code, buf.data(), int32_t(buf.size()));
    return std::string(buf.data());
}

/// Builds the exception for a failed call; must run right after it, on the same thread
/// (nvcam_last_error is per thread and any nvcam call resets it).
[[noreturn]] inline void fail(int32_t code, const char* call) {
    std::string msg = text(nvcam_last_error);
    std::string st = status_text(code);
    std::string name = st.substr(0, st.find(':'));
    if (msg.empty()) msg = std::string(call) + ": " + st;
    throw Error(code, name, msg);
}

inline void check(int32_t code, const char* call) {
    if (code != NVCAM_OK) fail(code, call);
}

/// A struct the library fills for a handle; struct_size tells it which version the caller has.
template <class T> T filled(int32_t (*fn)(uint64_t, T*), uint64_t h, const char* call) {
    T v{};
    v.struct_size = sizeof v;
    check(fn(h, &v), call);
    return v;
}

/// A handle's text (a file name, an error message).
inline std::string handle_text(int32_t (*fn)(uint64_t, char*, int32_t), uint64_t h, const char* call) {
    std::vector<char> buf(4096);
    check(fn(h, buf.data(), int32_t(buf.size())), call);
    return std::string(buf.data());
}

}  // namespace detail

/// "NAME: description" of a status code.
inline std::string status_text(int32_t code) { return detail::status_text(code); }

/// The loaded library's version string.
inline std::string version() {
    std::vector<char> buf(256);
    detail::check(nvcam_version_string(buf.data(), int32_t(buf.size())), "nvcam_version_string");
    return std::string(buf.data());
}

/// Log to a file, to stderr ("-"), or only to the callback and the poll queue ("").
inline void log_init(const std::string& path, int32_t level) {
    detail::check(nvcam_log_init(path.c_str(), level), "nvcam_log_init");
}

struct LogMessage {
    int32_t level;
    std::string text;
};

/// The oldest queued log message, or nullopt when the queue is empty.
inline std::optional<LogMessage> log_pop() {
    std::vector<char> buf(4096);
    int32_t level = 0, n = 0;
    int32_t rc = nvcam_log_pop(&level, buf.data(), int32_t(buf.size()), &n);
    if (rc != NVCAM_OK && rc != NVCAM_E_BUFFER_TOO_SMALL) detail::fail(rc, "nvcam_log_pop");
    if (n == 0) return std::nullopt;
    return LogMessage{level, std::string(buf.data())};
}

/// nvcam_init on construction, nvcam_shutdown on destruction (or shutdown()). Shutdown closes every
/// camera and makes every handle stale, so let cameras and frames go out of scope first.
class Library {
public:
    explicit Library(const nvcam_config_t* config = nullptr) {
        detail::check(nvcam_init(config), "nvcam_init");
        up_ = true;
    }
    ~Library() {
        if (up_) nvcam_shutdown(5000);
    }
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    Library(Library&& o) noexcept : up_(std::exchange(o.up_, false)) {}
    Library& operator=(Library&& o) noexcept {
        if (this != &o) {
            if (up_) nvcam_shutdown(5000);
            up_ = std::exchange(o.up_, false);
        }
        return *this;
    }
    /// Throws NVCAM_E_TIMEOUT if a thread was still running at the end.
    void shutdown(uint32_t timeout_ms = 5000) {
        up_ = false;
        detail::check(nvcam_shutdown(timeout_ms), "nvcam_shutdown");
    }

private:
    bool up_ = false;
};

/// One frame handle. Move-only; clone() makes a second handle to the same pixels.
class Frame {
public:
    Frame() noexcept = default;
    explicit Frame(uint64_t handle) noexcept : h_(handle) {}
    ~Frame() { reset(); }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    Frame(Frame&& o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Frame& operator=(Frame&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }

    uint64_t handle() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != 0; }

    nvcam_frame_info_t info() const { return detail::filled(nvcam_frame_info, h_, "nvcam_frame_info"); }

    /// Copies into dst (dst_pitch 0 = packed: Y rows then UV rows, width rounded up to even).
    void copy_nv12(uint8_t* dst, uint64_t dst_pitch, uint64_t dst_size) const {
        detail::check(nvcam_frame_copy_nv12(h_, dst, dst_pitch, dst_size), "nvcam_frame_copy_nv12");
    }

    /// The packed NV12 pixels (nv12_size bytes).
    std::vector<uint8_t> copy_nv12() const {
        std::vector<uint8_t> v(size_t(info().nv12_size));
        copy_nv12(v.data(), 0, v.size());
        return v;
    }

    /// A conversion spec (zero fields = defaults: whole frame, its size, the stream's colours,
    /// host memory); set more fields on the result as needed.
    static nvcam_convert_t spec(uint32_t format, uint32_t width = 0, uint32_t height = 0, bool letterbox = false) {
        nvcam_convert_t c{};
        c.struct_size = sizeof c;
        c.format = format;
        c.width = width;
        c.height = height;
        c.flags = letterbox ? NVCAM_CONVERT_LETTERBOX : 0;
        return c;
    }

    /// Bytes convert() writes for `spec` at `dst_pitch` (0 = packed).
    uint64_t convert_size(const nvcam_convert_t& spec, uint64_t dst_pitch = 0) const {
        uint64_t n = 0;
        detail::check(nvcam_frame_convert_size(h_, &spec, dst_pitch, &n), "nvcam_frame_convert_size");
        return n;
    }

    /// Converts into `dst`: host memory (returns with the bytes), or device memory when
    /// spec.dst_memory is NVCAM_MEMORY_DEVICE (enqueued on `stream`, a CUstream, no host wait).
    void convert(const nvcam_convert_t& spec, void* dst, uint64_t dst_size, uint64_t dst_pitch = 0, uint64_t stream = 0) const {
        detail::check(nvcam_frame_convert(h_, &spec, dst, dst_pitch, dst_size, stream), "nvcam_frame_convert");
    }

    /// A host copy converted as `spec` says (spec.dst_memory must be NVCAM_MEMORY_HOST).
    std::vector<uint8_t> convert(const nvcam_convert_t& spec) const {
        std::vector<uint8_t> v(size_t(convert_size(spec)));
        convert(spec, v.data(), v.size());
        return v;
    }

    /// Makes `stream` (a CUstream of the frame's device's primary context, or 0) wait for the frame.
    void wait_stream(uint64_t stream) const {
        detail::check(nvcam_frame_wait_stream(h_, stream), "nvcam_frame_wait_stream");
    }

    /// Releases now; the slot is reused only after the work queued on `stream` so far. On failure
    /// the handle stays owned (and is released normally later).
    void release_after_stream(uint64_t stream) {
        detail::check(nvcam_frame_release_after_stream(h_, stream), "nvcam_frame_release_after_stream");
        h_ = 0;
    }

    /// A new handle to the same pixels; both must be released (destroyed).
    Frame clone() const {
        uint64_t c = 0;
        detail::check(nvcam_frame_clone(h_, &c), "nvcam_frame_clone");
        return Frame(c);
    }

    /// Releases the handle now and throws if the library refuses (stale, wrong type...).
    void release() {
        uint64_t h = std::exchange(h_, 0);
        detail::check(nvcam_frame_release(h), "nvcam_frame_release");
    }

    /// Gives up ownership without releasing (the caller now owns the raw handle).
    uint64_t detach() noexcept { return std::exchange(h_, 0); }

private:
    void reset() noexcept {
        if (h_) nvcam_frame_release(std::exchange(h_, 0));
    }
    uint64_t h_ = 0;
};

/// A recording (Camera::record). Move-only; releases on destruction (a running recording is
/// then stopped and its file finished). See docs/recording.md.
class Recording {
public:
    Recording() noexcept = default;
    explicit Recording(uint64_t handle) noexcept : h_(handle) {}
    ~Recording() { reset(); }
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;
    Recording(Recording&& o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Recording& operator=(Recording&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }

    uint64_t handle() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != 0; }

    /// Moves the end to now + post_ms (another trigger while it runs).
    void extend(uint32_t post_ms) { detail::check(nvcam_record_extend(h_, post_ms), "nvcam_record_extend"); }
    /// Ends it now; the file is finished with what was taken (NVCAM_RECORD_STOPPED).
    void stop() { detail::check(nvcam_record_stop(h_), "nvcam_record_stop"); }

    nvcam_record_status_t status() const { return detail::filled(nvcam_record_status, h_, "nvcam_record_status"); }
    /// Ended: NVCAM_RECORD_DONE, _STOPPED or _FAILED.
    bool ended() const { return status().state >= NVCAM_RECORD_DONE; }

    /// The file: NAME.part while written, NAME when complete.
    std::string file() const { return detail::handle_text(nvcam_record_file, h_, "nvcam_record_file"); }
    /// Why it failed ("" if it did not).
    std::string error() const { return detail::handle_text(nvcam_record_error, h_, "nvcam_record_error"); }

    /// Releases now and throws if the library refuses.
    void release() {
        uint64_t h = std::exchange(h_, 0);
        detail::check(nvcam_record_release(h), "nvcam_record_release");
    }

private:
    void reset() noexcept {
        if (h_) nvcam_record_release(std::exchange(h_, 0));
    }
    uint64_t h_ = 0;
};

/// An open camera. Move-only; closes on destruction.
class Camera {
public:
    /// nvcam_camera_options with the library's defaults and chainable setters.
    class Options {
    public:
        Options() {
            detail::check(nvcam_camera_options_init(&o_), "nvcam_camera_options_init");
        }
        Options& flags(uint32_t v) { o_.flags = v; return *this; }
        Options& device(int32_t v) { o_.device = v; return *this; }
        Options& pool_slots(uint32_t v) { o_.pool_slots = v; return *this; }
        Options& decoder(uint32_t v) { o_.decoder = v; return *this; }
        Options& open_timeout_ms(uint32_t v) { o_.open_timeout_ms = v; return *this; }
        Options& stall_timeout_ms(uint32_t v) { o_.stall_timeout_ms = v; return *this; }
        Options& reconnect_ms(uint32_t min, uint32_t max) {
            o_.reconnect_min_ms = min;
            o_.reconnect_max_ms = max;
            return *this;
        }
        Options& decode_threads(uint32_t v) { o_.decode_threads = v; return *this; }
        Options& reconnect_fast_ms(uint32_t v) { o_.reconnect_fast_ms = v; return *this; }
        /// NVCAM_LATENCY_*.
        Options& latency(uint32_t v) { o_.latency = v; return *this; }
        /// "key=value;key=value" FFmpeg demuxer/protocol options.
        Options& ffmpeg_options(std::string v) { ffmpeg_ = std::move(v); return *this; }

        /// The C struct; valid while this Options lives and is not modified.
        const nvcam_camera_options_t* get() {
            o_.ffmpeg_options = ffmpeg_.empty() ? nullptr : ffmpeg_.c_str();
            return &o_;
        }

    private:
        nvcam_camera_options_t o_{};
        std::string ffmpeg_;
    };

    Camera() noexcept = default;
    explicit Camera(uint64_t handle) noexcept : h_(handle) {}
    ~Camera() { reset(); }
    Camera(const Camera&) = delete;
    Camera& operator=(const Camera&) = delete;
    Camera(Camera&& o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Camera& operator=(Camera&& o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }

    static Camera open(const std::string& url, Options options = Options()) {
        uint64_t h = 0;
        detail::check(nvcam_camera_open(url.c_str(), options.get(), &h), "nvcam_camera_open");
        return Camera(h);
    }

    uint64_t handle() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != 0; }

    /// The newest frame not yet handed out; throws NVCAM_E_TIMEOUT if none came in time.
    Frame get_frame(uint32_t timeout_ms) {
        uint64_t f = 0;
        detail::check(nvcam_camera_get_frame(h_, timeout_ms, &f), "nvcam_camera_get_frame");
        return Frame(f);
    }

    /// Like get_frame, but nullopt on a timeout (other failures still throw).
    std::optional<Frame> try_get_frame(uint32_t timeout_ms) {
        uint64_t f = 0;
        int32_t rc = nvcam_camera_get_frame(h_, timeout_ms, &f);
        if (rc == NVCAM_E_TIMEOUT) return std::nullopt;
        detail::check(rc, "nvcam_camera_get_frame");
        return Frame(f);
    }

    /// Wakes every thread blocked in get_frame/try_get_frame on this camera now: get_frame throws
    /// NVCAM_E_CANCELLED (try_get_frame too). Only waits in progress; the camera stays open.
    void cancel_wait() { detail::check(nvcam_camera_cancel_wait(h_), "nvcam_camera_cancel_wait"); }

    nvcam_camera_stats_t stats() const { return detail::filled(nvcam_camera_stats, h_, "nvcam_camera_stats"); }

    /// The camera's last error ("" if none), from its worker or a call on it.
    std::string last_error() const { return detail::handle_text(nvcam_camera_last_error, h_, "nvcam_camera_last_error"); }

    void reconnect() { detail::check(nvcam_camera_reconnect(h_), "nvcam_camera_reconnect"); }

    /// Keeps the last pre_ms of packets (at most max_bytes, 0 = 32 MiB) for record()'s pre-roll.
    void record_cache(uint32_t pre_ms, uint64_t max_bytes = 0) {
        detail::check(nvcam_camera_record_cache(h_, pre_ms, max_bytes), "nvcam_camera_record_cache");
    }

    /// Records the stream into `path` (.mkv or .mp4) from now - pre_ms to now + post_ms.
    Recording record(const std::string& path, uint32_t pre_ms, uint32_t post_ms) {
        uint64_t r = 0;
        detail::check(nvcam_camera_record_start(h_, path.c_str(), pre_ms, post_ms, &r), "nvcam_camera_record_start");
        return Recording(r);
    }

    /// Records continuously into files of about segment_ms in `dir` ("mkv" or "mp4"), named by
    /// UTC time; the oldest beyond keep_count files or keep_bytes (0 = no limit) are deleted.
    Recording record_segments(const std::string& dir, const std::string& container, uint32_t segment_ms,
                              uint32_t keep_count, uint64_t keep_bytes = 0) {
        uint64_t r = 0;
        detail::check(nvcam_camera_record_segments(h_, dir.c_str(), container.c_str(), segment_ms, keep_count, keep_bytes, &r),
                      "nvcam_camera_record_segments");
        return Recording(r);
    }

    nvcam_record_stats_t record_stats() const { return detail::filled(nvcam_camera_record_stats, h_, "nvcam_camera_record_stats"); }

    /// Invalidates every frame handle of this camera; returns how many.
    uint32_t force_release_frames() {
        uint32_t n = 0;
        detail::check(nvcam_registry_force_release_owner(h_, &n), "nvcam_registry_force_release_owner");
        return n;
    }

    /// Closes now and throws on failure (NVCAM_E_TIMEOUT: closed, but its thread outlived the wait).
    void close(uint32_t timeout_ms = 5000) {
        uint64_t h = std::exchange(h_, 0);
        detail::check(nvcam_camera_close(h, timeout_ms), "nvcam_camera_close");
    }

private:
    void reset() noexcept {
        if (h_) nvcam_camera_close(std::exchange(h_, 0), 5000);
    }
    uint64_t h_ = 0;
};

/// What get_frames returns: one Frame per camera (empty where a camera had none) and the call's
/// status: NVCAM_OK when every camera has a frame, else NVCAM_E_TIMEOUT, NVCAM_E_CANCELLED or the
/// first camera's hard error (NVCAM_E_CLOSED, NVCAM_E_FAILED, NVCAM_E_IO, ...). The frames that
/// came are valid whatever the status (released with the batch).
struct FrameBatch {
    std::vector<Frame> frames;
    int32_t status = NVCAM_OK;
    bool complete() const noexcept { return status == NVCAM_OK; }
};

/// "Latest of N" (nvcam_cameras_get_frames): a new frame of each camera (each at most once),
/// waiting up to timeout_ms in all. Throws only when no frame came and the status is not a
/// timeout or a cancel (bad arguments: repeated or stale cameras, more than NVCAM_BATCH_MAX).
inline FrameBatch get_frames(const std::vector<uint64_t>& cameras, uint32_t timeout_ms) {
    std::vector<uint64_t> out(cameras.size(), 0);
    int32_t rc = nvcam_cameras_get_frames(cameras.data(), uint32_t(cameras.size()), timeout_ms, out.data());
    FrameBatch b;
    b.status = rc;
    bool any = false;
    b.frames.reserve(out.size());
    for (uint64_t h : out) {
        any = any || h != 0;
        b.frames.emplace_back(h);
    }
    if (rc != NVCAM_OK && !any && rc != NVCAM_E_TIMEOUT && rc != NVCAM_E_CANCELLED) detail::fail(rc, "nvcam_cameras_get_frames");
    return b;
}

inline FrameBatch get_frames(std::initializer_list<std::reference_wrapper<const Camera>> cameras, uint32_t timeout_ms) {
    std::vector<uint64_t> hs;
    for (const Camera& c : cameras) hs.push_back(c.handle());
    return get_frames(hs, timeout_ms);
}

/// nvcam_frames_convert_batch: the frames into one tensor at dst (NCHW for the planar float
/// formats, NHWC for 8-bit ones), item i at i * item_stride bytes (0 = packed). Device memory
/// (spec.dst_memory): enqueued on `stream`, no host wait; host memory: the bytes are there on
/// return. Empty frames are refused (NVCAM_E_NULL_HANDLE).
inline void convert_batch(const std::vector<Frame>& frames, const nvcam_convert_t& spec, void* dst, uint64_t dst_size,
                          uint64_t item_stride = 0, uint64_t stream = 0) {
    std::vector<uint64_t> hs;
    hs.reserve(frames.size());
    for (const Frame& f : frames) hs.push_back(f.handle());
    detail::check(nvcam_frames_convert_batch(hs.data(), uint32_t(hs.size()), &spec, dst, item_stride, dst_size, stream),
                  "nvcam_frames_convert_batch");
}

/// NVCAM_STATE_* as text.
inline const char* state_name(uint32_t state) noexcept {
    switch (state) {
        case NVCAM_STATE_CONNECTING: return "CONNECTING";
        case NVCAM_STATE_STREAMING: return "STREAMING";
        case NVCAM_STATE_STALLED: return "STALLED";
        case NVCAM_STATE_RECONNECTING: return "RECONNECTING";
        case NVCAM_STATE_CLOSED: return "CLOSED";
        case NVCAM_STATE_FAILED: return "FAILED";
        case NVCAM_STATE_ENDED: return "ENDED";
        default: return "?";
    }
}

}  // namespace nvcam
