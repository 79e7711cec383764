//! Where a breadth-first search's states go (issue 44): the frontier per
//! depth, and which parts of the world tell neighbouring states of a layer
//! apart, from [`World::fingerprint_text`]. The same transitions as
//! `explore::bfs` with fingerprints and no other reduction.
//!
//! `cargo run --release -p locklab-core --example states -- DESIGN.toml CLIENTS FAULTS [DEPTH [SEED]]`
//! (`SHOW=1` prints the first differing lines of the last layer.)
use std::collections::{BTreeMap, HashSet};

use locklab_core::explore::{designs, fault_options, FaultKind, Spec};
use locklab_core::world::World;

/// Which part of [`World::fingerprint_text`] line `i` is: the header, a
/// queue item (the first `queue` lines after it), or the n-th line after
/// the queue (nodes, then clients, then the rest).
fn part(i: usize, queue: usize) -> String {
    if i == 0 {
        "header".into()
    } else if i <= queue {
        "queue".into()
    } else {
        format!("line{}", i - queue)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = args.get(1).cloned().unwrap_or("06-fenced-single.toml".into());
    let clients: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2);
    let faults: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let max_depth: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(400);
    let (_, text) = designs::FILES.iter().find(|(f, _)| *f == file).expect("design");
    let mut spec: Spec = designs::parse(text).expect("parse");
    spec.clients = clients;
    spec.faults = faults;
    if let Some(s) = args.get(5).and_then(|s| s.parse().ok()) {
        spec.set_seed(s);
    }
    let base = spec.base_scenario();
    let options: Vec<_> = fault_options(&base, spec.ttl_ms)
        .into_iter()
        .filter(|f| FaultKind::of(f).is_none_or(|k| spec.allows(k)))
        .collect();
    let mut seen = HashSet::new();
    let mut layer = vec![(World::from_scenario(&base).expect("world"), 0u32)];
    let mut total = 1;
    for depth in 0..max_depth {
        let mut next = Vec::new();
        for (w, f) in &layer {
            if *f < faults {
                for o in &options {
                    let mut c = w.clone();
                    if c.inject(o.clone()).is_ok() && seen.insert((c.fingerprint(), f + 1)) {
                        c.forget_trace();
                        next.push((c, f + 1));
                    }
                }
            }
            let mut c = w.clone();
            if c.step_item() && seen.insert((c.fingerprint(), *f)) {
                c.forget_trace();
                next.push((c, *f));
            }
        }
        total += next.len();
        // Which lines tell states apart: for each pair of neighbours in the
        // layer with the same number of lines per section, count differing
        // parts.
        let mut diff: BTreeMap<String, usize> = BTreeMap::new();
        let texts: Vec<String> = next.iter().take(400).map(|(w, _)| w.fingerprint_text()).collect();
        let mut shown = 0;
        for pair in texts.windows(2) {
            let a: Vec<&str> = pair[0].lines().collect();
            let b: Vec<&str> = pair[1].lines().collect();
            if a.len() != b.len() {
                *diff.entry("shape".into()).or_default() += 1;
                continue;
            }
            let q = a
                .iter()
                .skip(1)
                .take_while(|l| l.contains(':') && l.ends_with(';') && !l.starts_with("Node"))
                .count();
            let mut which = Vec::new();
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                if x != y {
                    which.push(part(i, q));
                    if std::env::var("SHOW").is_ok() && shown < 3 && depth + 1 == max_depth {
                        shown += 1;
                        println!(
                            "--- {}\n  {}\n  {}",
                            part(i, q),
                            &x[..x.len().min(600)],
                            &y[..y.len().min(600)]
                        );
                    }
                }
            }
            *diff.entry(which.join("+")).or_default() += 1;
        }
        let mut top: Vec<_> = diff.into_iter().collect();
        top.sort_by_key(|t| std::cmp::Reverse(t.1));
        top.truncate(4);
        println!(
            "depth {:>3}: frontier {:>7}, total {:>8}; differ in {:?}",
            depth + 1,
            next.len(),
            total,
            top
        );
        if next.is_empty() {
            break;
        }
        layer = next;
    }
}
