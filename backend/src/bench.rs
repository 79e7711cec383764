//! `locklab bench`: how fast is the simulator, next to a real redis-server?
//!
//! One run prints three figures and their ratios: simple commands per second
//! on the simulator (SET then GET, native, no I/O); lock cycles per second
//! on the simulator (`SET lock token NX PX 30000`, then the Lua
//! compare-and-delete by `EVALSHA`); and the same lock cycle against a real
//! redis-server over loopback, one round trip per command, as a client
//! library would do it. Numbers are wall-clock and belong here, never in a
//! test.

use std::time::{Duration, Instant};

use locklab_core::server::{Node, Profile};
use locklab_core::Reply;

use crate::real::{RealConnection, RealError};

/// The compare-and-delete release every lesson ends with.
pub const RELEASE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Operations per second of `f`, run in batches until `budget` has passed.
fn rate(budget: Duration, batch: u64, mut f: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    let mut done = 0u64;
    while start.elapsed() < budget {
        for i in 0..batch {
            f(done + i);
        }
        done += batch;
    }
    done as f64 / start.elapsed().as_secs_f64()
}

/// Simple commands per second on the simulator: alternating SET and GET.
pub fn sim_simple_ops(budget: Duration) -> f64 {
    let mut node = Node::new(Profile::V7_0);
    let c = node.connect();
    let set = args(&["SET", "bench:key", "value"]);
    let get = args(&["GET", "bench:key"]);
    rate(budget, 10_000, |i| {
        let r = node.execute(c, if i % 2 == 0 { &set } else { &get });
        debug_assert!(!r.is_error());
    })
}

/// Lock cycles (acquire + safe release) per second on the simulator.
pub fn sim_lock_cycles(budget: Duration) -> Result<f64, String> {
    let mut node = Node::new(Profile::V7_0);
    let c = node.connect();
    let sha = match node.execute(c, &args(&["SCRIPT", "LOAD", RELEASE])) {
        Reply::Bulk(s) => String::from_utf8_lossy(&s).into_owned(),
        other => return Err(format!("SCRIPT LOAD failed: {}", other.to_cli())),
    };
    let acquire = args(&["SET", "lock:bench", "token-1", "NX", "PX", "30000"]);
    let release = args(&["EVALSHA", &sha, "1", "lock:bench", "token-1"]);
    let first = node.execute(c, &acquire);
    let second = node.execute(c, &release);
    if first != Reply::ok() || second != Reply::Integer(1) {
        return Err(format!("lock cycle misbehaved: {} / {}", first.to_cli(), second.to_cli()));
    }
    Ok(rate(budget, 1_000, |_| {
        node.execute(c, &acquire);
        node.execute(c, &release);
    }))
}

/// Lock cycles per second against a real server, one round trip per command.
pub fn real_lock_cycles(url: &str, budget: Duration) -> Result<f64, RealError> {
    let mut conn = RealConnection::open(url)?;
    let sha = match conn.execute(&args(&["SCRIPT", "LOAD", RELEASE]))? {
        Reply::Bulk(s) => String::from_utf8_lossy(&s).into_owned(),
        other => return Err(RealError::Unsupported(format!("SCRIPT LOAD answered {}", other.to_cli()))),
    };
    let acquire = args(&["SET", "lock:bench", "token-1", "NX", "PX", "30000"]);
    let release = args(&["EVALSHA", &sha, "1", "lock:bench", "token-1"]);
    let mut failure = None;
    let r = rate(budget, 200, |_| {
        if failure.is_some() {
            return;
        }
        if let Err(e) = conn.execute(&acquire).and_then(|_| conn.execute(&release)) {
            failure = Some(e);
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

/// Run everything and print a report. `real` is a redis:// URL, if any.
pub fn report(real: Option<&str>, budget: Duration) -> String {
    let mut out = String::new();
    let simple = sim_simple_ops(budget);
    out.push_str(&format!("simulator, simple commands (SET/GET):  {simple:>12.0} ops/s  (target ≥ 5 000 000)\n"));
    let sim = sim_lock_cycles(budget);
    match &sim {
        Ok(s) => out.push_str(&format!("simulator, lock cycles (SET NX PX + EVALSHA release): {s:>10.0} cycles/s\n")),
        Err(e) => out.push_str(&format!("simulator, lock cycles: failed: {e}\n")),
    }
    match real {
        None => out.push_str("real redis-server: not measured (pass --redis redis://127.0.0.1:PORT or install redis-server)\n"),
        Some(url) => match real_lock_cycles(url, budget) {
            Ok(r) => {
                out.push_str(&format!("real redis-server {url}, lock cycles over loopback: {r:>10.0} cycles/s\n"));
                if let Ok(s) = sim {
                    out.push_str(&format!("ratio simulator / real: {:.1}×\n", s / r));
                }
            }
            Err(e) => out.push_str(&format!("real redis-server {url}: failed: {e}\n")),
        },
    }
    out
}

/// `redis-benchmark -t set,get,incr -n 200000 -P 16 -q` against the real
/// server on `real_port` and against a sim-server started here, with the
/// ratio (issue target: sim-server ≥ 0.8× redis-server).
pub fn wire_report(real_port: u16) -> std::io::Result<String> {
    use crate::sim_server::{self, Config};
    let Some(tool) = crate::redis_server::find_on_path("redis-benchmark") else {
        return Ok("redis-benchmark not found: install redis-tools to compare sim-server with redis-server\n".into());
    };
    let sim = sim_server::spawn(Config {
        bind: std::net::Ipv4Addr::LOCALHOST.into(),
        port: 0,
        profile: Profile::V7_0,
    })?;
    let mut out = String::from("\nredis-benchmark -t set,get,incr -n 200000 -P 16 -q, redis-server vs sim-server:\n");
    out.push_str(&sim_server::benchmark(&tool, real_port, sim.port())?);
    Ok(out)
}
