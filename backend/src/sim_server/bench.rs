//! Throughput of the wire layer: the real `redis-benchmark` against a real
//! redis-server and against sim-server, same flags, figures side by side.
//!
//! `-P 16` (16 pipelined requests per round trip, 50 clients) is the
//! setting that exposes the server rather than the loopback: with one
//! request per round trip both servers mostly wait for the kernel. The
//! figures are wall-clock and machine-dependent, so they belong in a report,
//! never in a test assertion.

use std::io;
use std::path::Path;
use std::process::{Command, Stdio};

/// The commands measured.
const TESTS: &str = "set,get,incr";
/// Requests per command in [`benchmark`].
const REQUESTS: u64 = 200_000;
/// Requests per round trip.
const PIPELINE: u32 = 16;

/// One line of `redis-benchmark -q`: `SET: 812345.69 requests per second, …`.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchLine {
    /// The test's name as redis-benchmark prints it (`SET`, `GET`, `INCR`).
    pub test: String,
    pub requests_per_second: f64,
}

/// Run `redis-benchmark -t set,get,incr -n REQUESTS -P 16 -q` against
/// `127.0.0.1:port` and parse its figures. A non-zero exit, or output with
/// no figures, is an error carrying what redis-benchmark said.
pub fn run_redis_benchmark(redis_benchmark: &Path, port: u16, requests: u64) -> io::Result<Vec<BenchLine>> {
    let out = Command::new(redis_benchmark)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", TESTS])
        .args(["-n", &requests.to_string(), "-P", &PIPELINE.to_string(), "-q"])
        .stdin(Stdio::null())
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "redis-benchmark on port {port} exited with {}: {}{}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let lines = parse_quiet_output(&stdout);
    if lines.is_empty() {
        return Err(io::Error::other(format!(
            "redis-benchmark on port {port} printed no figures: {stdout:?}"
        )));
    }
    Ok(lines)
}

/// `-q` output: progress updates separated by `\r`, then one final line per
/// test, `NAME: N requests per second, p50=… msec`.
fn parse_quiet_output(stdout: &str) -> Vec<BenchLine> {
    stdout
        .split(['\r', '\n'])
        .filter_map(|seg| {
            let (name, rest) = seg.split_once(": ")?;
            let figure = rest
                .strip_suffix("requests per second")
                .or_else(|| rest.split_once(" requests per second").map(|(f, _)| f))?;
            let rps = figure.trim().parse::<f64>().ok()?;
            Some(BenchLine {
                test: name.trim().to_owned(),
                requests_per_second: rps,
            })
        })
        .collect()
}

/// `redis-benchmark -t set,get,incr -n 200000 -P 16 -q` against the real
/// server on `real_port` and sim-server on `sim_port` (both on 127.0.0.1),
/// and a table of the figures with the simulator's ratio.
///
/// The two are measured alternately, three times each, and each side
/// keeps its best figure per test: on a shared machine a compile starting
/// in the middle of one run would otherwise decide the ratio.
pub fn benchmark(redis_benchmark: &Path, real_port: u16, sim_port: u16) -> io::Result<String> {
    let mut real = Vec::new();
    let mut sim = Vec::new();
    for _ in 0..ROUNDS {
        keep_best(&mut real, run_redis_benchmark(redis_benchmark, real_port, REQUESTS)?);
        keep_best(&mut sim, run_redis_benchmark(redis_benchmark, sim_port, REQUESTS)?);
    }
    Ok(report(&real, &sim))
}

/// Rounds per server in [`benchmark`].
const ROUNDS: usize = 3;

fn keep_best(best: &mut Vec<BenchLine>, run: Vec<BenchLine>) {
    for line in run {
        match best.iter_mut().find(|b| b.test == line.test) {
            Some(b) if b.requests_per_second >= line.requests_per_second => {}
            Some(b) => *b = line,
            None => best.push(line),
        }
    }
}

fn report(real: &[BenchLine], sim: &[BenchLine]) -> String {
    let mut out = format!(
        "redis-benchmark -t {TESTS} -n {REQUESTS} -P {PIPELINE} -q \
         (requests per second, best of {ROUNDS} alternating runs)\n\
         {:<6} {:>14} {:>14} {:>9}\n",
        "test", "redis-server", "sim-server", "sim/real"
    );
    for r in real {
        let s = sim.iter().find(|s| s.test == r.test);
        let (sim_rps, ratio) = match s {
            Some(s) if r.requests_per_second > 0.0 => (
                format!("{:.0}", s.requests_per_second),
                format!("{:.2}x", s.requests_per_second / r.requests_per_second),
            ),
            Some(s) => (format!("{:.0}", s.requests_per_second), "-".into()),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<6} {:>14.0} {:>14} {:>9}\n",
            r.test, r.requests_per_second, sim_rps, ratio
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_quiet_output_with_progress() {
        let text = "SET: rps=0.0 (overall: nan) avg_msec=nan (overall: nan)\r\
                    SET: 1176470.62 requests per second, p50=0.527 msec\n\
                    GET: 1234567.88 requests per second, p50=0.495 msec\n";
        let lines = parse_quiet_output(text);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            BenchLine {
                test: "SET".into(),
                requests_per_second: 1176470.62
            }
        );
        let table = report(&lines, &lines[..1]);
        assert!(table.contains("1.00x") && table.contains("GET"), "{table}");
    }

    #[test]
    fn keeps_the_best_of_each_test() {
        let line = |t: &str, r: f64| BenchLine {
            test: t.into(),
            requests_per_second: r,
        };
        let mut best = Vec::new();
        keep_best(&mut best, vec![line("SET", 10.0), line("GET", 30.0)]);
        keep_best(&mut best, vec![line("SET", 20.0), line("GET", 5.0)]);
        assert_eq!(best, vec![line("SET", 20.0), line("GET", 30.0)]);
    }
}
