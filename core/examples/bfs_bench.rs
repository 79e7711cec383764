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

fn run(name: &str, spec: &Spec, r: Reductions, secs: f64) -> u64 {
    let frontier = std::env::var("FRONTIER").ok().and_then(|s| s.parse().ok());
    let limits = Limits {
        max_frontier: frontier.unwrap_or(Limits::default().max_frontier),
        ..Limits::default()
    };
    let mut b = Bfs::new(spec, 1, r, limits).expect("search");
    let t = Instant::now();
    while !b.step(64) {
        if t.elapsed().as_secs_f64() > secs {
            b.stop();
        }
    }
    let took = t.elapsed().as_secs_f64();
    let s = b.stats();
    println!(
        "{name}: {took:.2} s, {} states, {} transitions, {:.0} states/s\n  {}",
        s.states,
        s.transitions,
        s.states as f64 / took.max(1e-9),
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
    if which.is_empty() || which == "06" {
        let d06 = Spec {
            clients: 3,
            faults: 2,
            ..design("06-fenced-single.toml")
        };
        run("06 3 clients 2 faults", &d06, Reductions::default(), secs);
    }
}
