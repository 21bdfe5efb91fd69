//! What churn_bench measures with: percentiles and the process's CPU use.

use std::sync::Mutex;
use std::time::Instant;

/// The `q` quantile of `v` (sorted in place); NaN when empty.
pub fn pct(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Seconds of CPU this process has used (user + system), from /proc/self/stat; 0 elsewhere.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line (11 and 12 here), in 1/100 s.
    (ticks(11) + ticks(12)) / 100.0
}

/// (when, CPU seconds) every 100 ms, so a phase's CPU use can be read for any window.
pub static CPU_SAMPLES: Mutex<Vec<(Instant, f64)>> = Mutex::new(Vec::new());

pub fn cpu_cores_between(from: Instant, to: Instant) -> f64 {
    let s = CPU_SAMPLES.lock().unwrap();
    let at = |t: Instant| s.iter().min_by_key(|(w, _)| if *w > t { *w - t } else { t - *w }).copied();
    match (at(from), at(to)) {
        (Some((t0, c0)), Some((t1, c1))) if t1 > t0 => (c1 - c0) / t1.duration_since(t0).as_secs_f64(),
        _ => f64::NAN,
    }
}
