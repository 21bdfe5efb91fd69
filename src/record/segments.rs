//! Continuous recording: the stream cut into files of about N seconds at key frames, named by the
//! wall-clock time (UTC) of their start, the oldest deleted beyond a count or a byte limit.

use crate::status::{Error, Result};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a segmented recording was asked for.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub dir: PathBuf,
    /// "mkv" or "mp4".
    pub ext: String,
    pub every_us: i64,
    /// Finished segments kept (0: no limit).
    pub keep_count: u32,
    /// Bytes of finished segments kept (0: no limit).
    pub keep_bytes: u64,
    /// The last name's time and suffix: a later segment of the same second gets the next suffix,
    /// never a name that retention freed (names sort in recording order).
    pub last: (String, u32),
}

impl Plan {
    /// A plan from the host's words: `container` "mkv" or "mp4" (a leading dot and any case
    /// taken), segments of at least a second.
    pub(crate) fn new(dir: &Path, container: &str, segment_ms: u32, keep_count: u32, keep_bytes: u64) -> Result<Plan> {
        let ext = container.trim_start_matches('.').to_ascii_lowercase();
        if ext != "mkv" && ext != "mp4" {
            return Err(Error::arg(format!("container '{container}': \"mkv\" or \"mp4\"")));
        }
        if segment_ms < 1000 {
            return Err(Error::arg(format!("segment_ms {segment_ms}: at least 1000")));
        }
        Ok(Plan { dir: dir.to_path_buf(), ext, every_us: segment_ms as i64 * 1000, keep_count, keep_bytes, last: Default::default() })
    }

    /// `DIR/YYYYMMDD-HHMMSS.EXT` for now (UTC), with `-2`, `-3`, ... for later segments of the
    /// same second or when that name is taken.
    pub(crate) fn next_name(&mut self) -> PathBuf {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let stem = utc_stamp(secs);
        let mut n = if self.last.0 == stem { self.last.1 + 1 } else { 1 };
        let name = |n: u32| if n == 1 { format!("{stem}.{}", self.ext) } else { format!("{stem}-{n}.{}", self.ext) };
        let mut p = self.dir.join(name(n));
        while p.exists() || super::muxer::part_path(&p).exists() {
            n += 1;
            p = self.dir.join(name(n));
        }
        self.last = (stem, n);
        p
    }
}

/// The finished segments still on disk, oldest first.
#[derive(Default)]
pub(crate) struct Kept {
    files: VecDeque<(PathBuf, u64)>,
    bytes: u64,
}

impl Kept {
    /// A segment was finished: keep it, then delete the oldest beyond the plan's limits (the
    /// newest finished segment always stays). Returns how many were deleted.
    pub(crate) fn add(&mut self, plan: &Plan, file: &Path) -> u32 {
        let size = std::fs::metadata(file).map_or(0, |m| m.len());
        self.files.push_back((file.to_path_buf(), size));
        self.bytes += size;
        let mut deleted = 0;
        while self.files.len() > 1
            && ((plan.keep_count > 0 && self.files.len() > plan.keep_count as usize) || (plan.keep_bytes > 0 && self.bytes > plan.keep_bytes))
        {
            let Some((old, size)) = self.files.pop_front() else { break };
            self.bytes -= size;
            match std::fs::remove_file(&old) {
                Ok(()) => deleted += 1,
                Err(e) => log::warn!("recording: cannot delete the old segment {}: {e}", old.display()),
            }
        }
        deleted
    }
}

/// `YYYYMMDD-HHMMSS` of a Unix time (UTC; the civil-from-days algorithm of H. Hinnant).
fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_utc_wall_clock_times() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400 + 3_723), "20000229-010203");
        assert_eq!(utc_stamp(1_795_000_000), "20261118-110640");
    }
}
