//! The recorder's clock: how far the stream has gone, for the cache's bound and the recordings'
//! ends, whatever its timestamps do.

/// The recorder's stream clock: a decode-time clock that never jumps ahead. It follows the decode
/// timestamps; a packet without one (the first packets of an RTSP session), a step back or a jump
/// (more than 2 s), and a session's first packet move it by one frame's step. A presentation
/// time never moves it: a P picture's is frames ahead of its decode time (B-frames).
#[derive(Default)]
pub(super) struct Clock {
    last_us: Option<i64>,
    pub(super) now_us: i64,
    /// The last step between two decode times.
    step_us: i64,
    /// One frame's step from the session's frame rate (0: unknown).
    rate_us: i64,
    started: bool,
}

impl Clock {
    /// Moves the clock with a packet's decode time (`i64::MIN`: none); `duration_us` is the
    /// packet's duration (0: unknown). Where the decode time says nothing, the clock moves by
    /// one frame step: the packet's duration, else the last step between decode times, else the
    /// stream's frame rate (a demuxer's guess of the rate can be a multiple of it).
    pub(super) fn tick(&mut self, dts_us: i64, duration_us: i64) -> i64 {
        let step = [duration_us, self.step_us, self.rate_us].into_iter().find(|&s| s > 0).unwrap_or(1);
        let d = match (dts_us, self.last_us) {
            (t, Some(l)) if t != i64::MIN && t > l && t - l <= 2_000_000 => {
                self.step_us = t - l;
                t - l
            }
            _ if !self.started => 0,
            _ => step,
        };
        if dts_us != i64::MIN {
            self.last_us = Some(dts_us);
        } else {
            // The next decode time is the first one known after this packet: one step after it.
            self.last_us = None;
        }
        self.started = true;
        self.now_us += d;
        self.now_us
    }

    /// A new session (`rate_us`: one frame's step from its frame rate, 0 unknown): its decode
    /// times have nothing to do with the last one's, so its first packet comes one step after
    /// the last.
    pub(super) fn new_session(&mut self, rate_us: i64) {
        self.last_us = None;
        self.rate_us = rate_us;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A looped file or a camera that resets its clock must not stop the cache's trimming or a
    /// recording's end: the clock goes on by one frame's step where the timestamps go back or jump.
    #[test]
    fn the_clock_never_goes_back_or_jumps() {
        let mut c = Clock::default();
        let got: Vec<i64> = [0, 33_333, 66_666, 0, 33_333, 10_000_000, 10_033_333].iter().map(|&t| c.tick(t, 0)).collect();
        assert_eq!(got, vec![0, 33_333, 66_666, 99_999, 133_332, 166_665, 199_998]);
    }

    /// The first packets of an RTSP session come without decode times; taking their presentation
    /// times (a P picture's is frames ahead) ran the clock ahead and ended B-frame clips early.
    /// Each takes one frame's step, and the decode times go on from there.
    #[test]
    fn a_packet_without_a_decode_time_takes_one_frame_step() {
        let mut c = Clock::default();
        c.new_session(40_000);
        let got: Vec<i64> = [i64::MIN, i64::MIN, i64::MIN, 1_000_000, 1_040_000].iter().map(|&t| c.tick(t, 0)).collect();
        assert_eq!(got, vec![0, 40_000, 80_000, 120_000, 160_000]);
        // A new session whose rate is guessed at twice the real one: the last step between
        // decode times goes first; a packet's own duration before both.
        c.new_session(20_000);
        assert_eq!(c.tick(i64::MIN, 0), 200_000);
        assert_eq!(c.tick(90_000_000, 0), 240_000);
        assert_eq!(c.tick(i64::MIN, 30_000), 270_000);
    }
}
