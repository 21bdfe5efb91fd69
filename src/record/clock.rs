//! The recorder's clock: how far the stream has gone, for the cache's bound and the recordings'
//! ends, whatever its timestamps do.

/// The recorder's stream clock: decode timestamps, with steps back and jumps (more than 2 s)
/// replaced by one frame's step.
#[derive(Default)]
pub(super) struct Clock {
    last_us: Option<i64>,
    pub(super) now_us: i64,
    step_us: i64,
}

impl Clock {
    pub(super) fn tick(&mut self, dts_us: i64) -> i64 {
        if dts_us == i64::MIN {
            return self.now_us;
        }
        let d = match self.last_us {
            Some(l) if dts_us > l && dts_us - l <= 2_000_000 => {
                self.step_us = dts_us - l;
                dts_us - l
            }
            Some(_) => self.step_us.max(1),
            None => 0,
        };
        self.last_us = Some(dts_us);
        self.now_us += d;
        self.now_us
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
        let got: Vec<i64> = [0, 33_333, 66_666, 0, 33_333, 10_000_000, 10_033_333].iter().map(|&t| c.tick(t)).collect();
        assert_eq!(got, vec![0, 33_333, 66_666, 99_999, 133_332, 166_665, 199_998]);
        assert_eq!(c.tick(i64::MIN), 199_998, "a packet without timestamps does not move it");
    }
}
