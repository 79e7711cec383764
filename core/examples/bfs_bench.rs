//! The bounded-exhaustive search's figures on issue 44's two designs, from
//! core alone (no backend build): design 07's shortest counterexample and
//! design 06 with 3 clients and at most 2 faults, with and without each
//! reduction. `cargo run --release -p locklab-core --example bfs_bench [-- SECONDS]`
use std::time::Instant;

use locklab_core::explore::bfs::{Bfs, Limits, Reductions};
use locklab_core::explore::{designs, Spec};

fn design(file: &str) -> Spec {
    let (_, text) = designs::FILES.iter().find(|(f, _)| *f == file).expect("design");
    designs::parse(text).expect("parse")
}

/// CPU time this thread has run, in seconds (Linux's schedstat; wall
/// time elsewhere), so the figures do not depend on the machine's load.
fn cpu(wall: Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(wall.elapsed().as_secs_f64(), |ns| ns as f64 / 1e9)
}

fn run(name: &str, spec: &Spec, r: Reductions, secs: f64) -> u64 {
    let frontier = std::env::var("FRONTIER").ok().and_then(|s| s.parse().ok());
    let limits = Limits {
        max_frontier: frontier.unwrap_or(Limits::default().max_frontier),
        ..Limits::default()
    };
    let mut b = Bfs::new(spec, 1, r, limits).expect("search");
    let t = Instant::now();
    let c0 = cpu(t);
    while !b.step(16) {
        if cpu(t) - c0 > secs {
            b.stop();
        }
    }
    let took = cpu(t) - c0;
    let s = b.stats();
    println!(
        "{name}: {took:.2} s CPU ({:.2} s wall), {} states, {} more in tails, {} transitions, {:.0} states/s\n  {}",
        t.elapsed().as_secs_f64(),
        s.states,
        s.tail_states,
        s.transitions,
        (s.states + s.tail_states) as f64 / took.max(1e-9),
        b.verdict()
    );
    s.states
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let which = std::env::args().nth(2).unwrap_or_default();
    if which.is_empty() || which == "07" {
        let mut d07 = design("07-redlock5-gc-pause.toml");
        d07.set_seed(894_627_100);
        run("07 seed 894627100", &d07, Reductions::default(), secs);
    }
    let clients = std::env::args().nth(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let faults = std::env::args().nth(4).and_then(|s| s.parse().ok()).unwrap_or(2);
    if which.is_empty() || which == "06" {
        let d06 = Spec {
            clients,
            faults,
            ..design("06-fenced-single.toml")
        };
        // NO_TAILS=1: the same bound without deterministic tails.
        let tails = std::env::var("NO_TAILS").is_err();
        let r = Reductions {
            tails,
            ..Reductions::default()
        };
        run(&format!("06 {clients} clients {faults} faults"), &d06, r, secs);
    }
}
