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
    std::fs::read_to_string("/proc/self/stat").map(|s| stat_cpu_seconds(&s)).unwrap_or(0.0)
}

/// User + system seconds of a `/proc/.../stat` line (a process's or a thread's).
fn stat_cpu_seconds(stat: &str) -> f64 {
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.get(stat.rfind(')').map_or(0, |i| i + 2)..).unwrap_or("");
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

/// CPU seconds per thread name (digits and hex tails dropped, so a camera's threads count as
/// one group), from /proc/self/task/*/stat; empty elsewhere. Threads that ended are not counted.
pub fn cpu_by_thread() -> std::collections::BTreeMap<String, f64> {
    let mut m = std::collections::BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return m };
    for t in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else { continue };
        let (Some(a), Some(b)) = (stat.find('('), stat.rfind(')')) else { continue };
        let name = stat[a + 1..b].trim_end_matches(|c: char| c.is_ascii_hexdigit() || c == '-' || c == '_').to_string();
        *m.entry(if name.is_empty() { "?".into() } else { name }).or_insert(0.0) += stat_cpu_seconds(&stat);
    }
    m
}

/// The CPU cores each thread group used between two `cpu_by_thread` readings `secs` apart,
/// largest first.
pub fn cores_by_thread(before: &std::collections::BTreeMap<String, f64>, after: &std::collections::BTreeMap<String, f64>, secs: f64) -> String {
    let mut v: Vec<(String, f64)> = after.iter().map(|(k, a)| (k.clone(), (a - before.get(k).copied().unwrap_or(0.0)) / secs)).filter(|x| x.1 >= 0.005).collect();
    v.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
    v.iter().map(|(k, c)| format!("{k} {c:.2}")).collect::<Vec<_>>().join(", ")
}
