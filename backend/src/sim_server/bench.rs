//! Throughput of the wire layer: the real `redis-benchmark` against a real
//! redis-server and against sim-server, same flags, figures side by side.
//!
//! `-c 50 -P 16` (50 clients, 16 pipelined requests per round trip) is the
//! setting that exposes the server rather than the loopback: with one
//! request per round trip both servers mostly wait for the kernel. Besides
//! redis-benchmark's default tests and a lock's compare-and-delete `EVAL`,
//! [`benchmark`] times 20 000 one-element pushes to one key of each type
//! (issue 42: quadratic when every write copied the value) and the
//! sim-server process's resident memory at the start, middle and end of a
//! soak (`--soak N`). The
//! figures are wall-clock and machine-dependent, so they belong in a
//! report, never in a test assertion.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// redis-benchmark's default tests (those it runs without `-t`, but
/// `ping_*`, `lpush` for LRANGE's list and the `lrange_300+`).
const TESTS: &str = "set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,lrange_100,mset";
/// Requests per test in [`benchmark`] unless told otherwise.
pub const REQUESTS: u64 = 200_000;
/// Requests per round trip.
const PIPELINE: u32 = 16;
/// Clients.
const CLIENTS: u32 = 50;
/// The script of the `EVAL` figure: a lock's compare-and-delete release.
const RELEASE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";
/// One-element pushes per type in the push timing.
const PUSHES: usize = 20_000;

/// One line of `redis-benchmark -q`: `SET: 812345.69 requests per second, …`.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchLine {
    /// The test's name as redis-benchmark prints it (`SET`, `GET`, `INCR`).
    pub test: String,
    pub requests_per_second: f64,
}

/// Run `redis-benchmark -t set,get,incr -n requests -P 16 -q` against
/// `127.0.0.1:port` and parse its figures. A non-zero exit, or output with
/// no figures, is an error carrying what redis-benchmark said.
pub fn run_redis_benchmark(redis_benchmark: &Path, port: u16, requests: u64) -> io::Result<Vec<BenchLine>> {
    run_with(redis_benchmark, port, requests, &["-t", "set,get,incr"])
}

/// `redis-benchmark -c 50 -n requests -P 16 -q` plus `what` (`-t …`, or a
/// command of its own) against `127.0.0.1:port`.
fn run_with(redis_benchmark: &Path, port: u16, requests: u64, what: &[&str]) -> io::Result<Vec<BenchLine>> {
    let out = Command::new(redis_benchmark)
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-c", &CLIENTS.to_string()])
        .args(["-n", &requests.to_string(), "-P", &PIPELINE.to_string(), "-q"])
        .args(what)
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

/// redis-benchmark's default tests and the lock release's `EVAL`
/// (`-c 50 -n requests -P 16 -q`) against the real server on `real_port`
/// and sim-server on `sim_port` (both on 127.0.0.1), a table of the figures
/// with the simulator's ratio, then the push timing and, when `soak` is
/// given, the resident memory of this process (where sim-server runs) over
/// a soak of that many `SET`/`GET` requests.
///
/// The two are measured alternately, three times each, and each side
/// keeps its best figure per test: on a shared machine a compile starting
/// in the middle of one run would otherwise decide the ratio.
pub fn benchmark(redis_benchmark: &Path, real_port: u16, sim_port: u16) -> io::Result<String> {
    benchmark_with(redis_benchmark, real_port, sim_port, REQUESTS, None)
}

/// [`benchmark`] with its request count and an optional soak.
pub fn benchmark_with(
    redis_benchmark: &Path,
    real_port: u16,
    sim_port: u16,
    requests: u64,
    soak: Option<u64>,
) -> io::Result<String> {
    let mut real = Vec::new();
    let mut sim = Vec::new();
    let eval = ["EVAL", RELEASE, "1", "lock", "token"];
    for _ in 0..ROUNDS {
        for (port, best) in [(real_port, &mut real), (sim_port, &mut sim)] {
            keep_best(best, run_with(redis_benchmark, port, requests, &["-t", TESTS])?);
            let mut lines = run_with(redis_benchmark, port, requests, &eval)?;
            for l in &mut lines {
                l.test = "EVAL (lock release)".into();
            }
            keep_best(best, lines);
        }
    }
    let mut out = report(&real, &sim, requests);
    out.push_str(&push_report(real_port, sim_port)?);
    if let Some(n) = soak {
        out.push_str(&soak_report(redis_benchmark, sim_port, n)?);
    }
    Ok(out)
}

/// The soak: `requests` requests in all (`SET`, `GET`, `LPUSH`, `LPOP` over
/// 100 000 random keys, `-c 50 -P 16`), in two halves, with the resident
/// memory of this process (where sim-server runs) at the start, between
/// the halves and at the end. The keyspace is full after the first half,
/// so a server that frees what it should reads the same in the middle and
/// at the end (issue 42: "RSS flat over 10 M requests").
fn soak_report(redis_benchmark: &Path, sim_port: u16, requests: u64) -> io::Result<String> {
    // Four tests per run, two runs.
    let per_test = (requests / 8).max(1);
    let mut rss = vec![rss_bytes()];
    for _ in 0..2 {
        run_with(
            redis_benchmark,
            sim_port,
            per_test,
            &["-t", "set,get,lpush,lpop", "-r", "100000"],
        )?;
        rss.push(rss_bytes());
    }
    Ok(format!(
        "RSS of this process (sim-server in it) over a soak of {} requests (SET/GET/LPUSH/LPOP, 100000 keys): \
         start {} MB, middle {} MB, end {} MB\n",
        per_test * 8,
        rss[0] >> 20,
        rss[1] >> 20,
        rss[2] >> 20
    ))
}

/// 20 000 one-element pushes to one key of each type, pipelined on one
/// connection, on each server: seconds and the simulator's time as a
/// multiple of redis-server's (issue 42's target: within 3×).
fn push_report(real_port: u16, sim_port: u16) -> io::Result<String> {
    let mut out = format!("{PUSHES} one-element pushes to one key (seconds):\n");
    out.push_str(&format!(
        "{:<6} {:>14} {:>14} {:>9}\n",
        "cmd", "redis-server", "sim-server", "sim/real"
    ));
    for cmd in ["LPUSH", "HSET", "SADD", "ZADD"] {
        let real = time_pushes(real_port, cmd)?;
        let sim = time_pushes(sim_port, cmd)?;
        out.push_str(&format!(
            "{cmd:<6} {:>14.3} {:>14.3} {:>8.2}x\n",
            real.as_secs_f64(),
            sim.as_secs_f64(),
            sim.as_secs_f64() / real.as_secs_f64().max(1e-9)
        ));
    }
    Ok(out)
}

/// Send `PUSHES` one-element `cmd`s to a fresh key and read every reply.
fn time_pushes(port: u16, cmd: &str) -> io::Result<Duration> {
    let key = format!("bench:push:{}", cmd.to_lowercase());
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(600)))?;
    let mut reqs = format!("DEL {key}\r\n").into_bytes();
    for i in 0..PUSHES {
        let line = match cmd {
            "HSET" => format!("HSET {key} f{i} v\r\n"),
            "ZADD" => format!("ZADD {key} {i} m{i}\r\n"),
            "SADD" => format!("SADD {key} m{i}\r\n"),
            _ => format!("LPUSH {key} e{i}\r\n"),
        };
        reqs.extend_from_slice(line.as_bytes());
    }
    let t0 = Instant::now();
    let writer = {
        let mut w = s.try_clone()?;
        std::thread::spawn(move || w.write_all(&reqs))
    };
    // Every reply is one line (`:n`); the last one ends the run.
    let mut lines = 0;
    let mut buf = vec![0u8; 1 << 16];
    while lines < PUSHES + 1 {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(io::Error::other("the server closed the connection"));
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
    }
    let took = t0.elapsed();
    writer.join().map_err(|_| io::Error::other("writer panicked"))??;
    s.write_all(format!("DEL {key}\r\n").as_bytes())?;
    Ok(took)
}

/// This process's resident memory, from /proc (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
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

fn report(real: &[BenchLine], sim: &[BenchLine], requests: u64) -> String {
    let mut out = format!(
        "redis-benchmark -c {CLIENTS} -n {requests} -P {PIPELINE} -q, default tests and EVAL \
         (requests per second, best of {ROUNDS} alternating runs)\n\
         {:<22} {:>14} {:>14} {:>9}\n",
        "test", "redis-server", "sim-server", "sim/real"
    );
    let mut ratios = Vec::new();
    for r in real {
        let s = sim.iter().find(|s| s.test == r.test);
        let (sim_rps, ratio) = match s {
            Some(s) if r.requests_per_second > 0.0 => {
                ratios.push(s.requests_per_second / r.requests_per_second);
                (
                    format!("{:.0}", s.requests_per_second),
                    format!("{:.2}x", s.requests_per_second / r.requests_per_second),
                )
            }
            Some(s) => (format!("{:.0}", s.requests_per_second), "-".into()),
            None => ("-".into(), "-".into()),
        };
        out.push_str(&format!(
            "{:<22} {:>14.0} {:>14} {:>9}\n",
            r.test, r.requests_per_second, sim_rps, ratio
        ));
    }
    if !ratios.is_empty() {
        let mean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        out.push_str(&format!("geometric mean of the ratios: {mean:.2}x\n"));
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
        let table = report(&lines, &lines[..1], 10);
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
