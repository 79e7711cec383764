//! `locklab explore --bench`: the bounded-exhaustive search on the designs
//! issue 44 measures, in CPU time of the one thread that searches, and the
//! states stored with and without each reduction on one bound.

use std::time::Instant;

use locklab_core::explore::bfs::{Bfs, Limits, Reductions};
use locklab_core::explore::Spec;

use super::explore::thousands;

/// CPU seconds this thread has run (wall time where Linux's schedstat is
/// missing): the benchmark's budgets and figures, so they do not depend
/// on what else the machine runs.
fn cpu_secs(wall: Instant) -> f64 {
    match super::bench::thread_cpu_us() {
        (us, _) if us > 0.0 => us / 1e6,
        _ => wall.elapsed().as_secs_f64(),
    }
}

/// One bench line's search: `alike` is the symmetric model (clients
/// alike), so a line without the symmetry reduction can be on the same
/// bound as one with it; `cpu` the CPU budget in seconds.
struct Line<'a> {
    name: &'a str,
    spec: &'a Spec,
    reductions: Reductions,
    alike: bool,
    cpu: f64,
}

/// What a bench line measured: states stored, and whether the search
/// ended.
#[derive(Clone, Copy)]
struct Measured {
    stored: u64,
    /// Transitions taken (what sleep sets save while fingerprints are on).
    transitions: u64,
    ended: bool,
}

/// One exhaustive search for the benchmark: its verdict, CPU time and rate.
fn bench_line(l: &Line) -> (String, Measured) {
    let limits = Limits {
        max_frontier: 50_000,
        ..Limits::default()
    };
    let mut bfs = match Bfs::with_model(l.spec, 1, l.reductions, limits, l.alike) {
        Ok(b) => b,
        Err(e) => {
            return (
                format!("  {}: cannot build: {e}\n", l.name),
                Measured {
                    stored: 0,
                    transitions: 0,
                    ended: false,
                },
            )
        }
    };
    let wall = Instant::now();
    let c0 = cpu_secs(wall);
    while !bfs.step(16) {
        if cpu_secs(wall) - c0 >= l.cpu {
            bfs.stop();
        }
    }
    let secs = (cpu_secs(wall) - c0).max(1e-9);
    let s = bfs.stats();
    let visited = s.states + s.tail_states;
    let line = format!(
        "  {}: {:.2} s CPU ({:.2} s wall), {} distinct states stored, {} more on deterministic tails, {} transitions, {} states/s\n    {}\n",
        l.name,
        secs,
        wall.elapsed().as_secs_f64(),
        thousands(s.states),
        thousands(s.tail_states),
        thousands(s.transitions),
        thousands((visited as f64 / secs) as u64),
        bfs.verdict()
    );
    let ended = !matches!(bfs.status(), locklab_core::explore::bfs::SearchStatus::NotExhausted);
    (
        line,
        Measured {
            stored: s.states,
            transitions: s.transitions,
            ended,
        },
    )
}

/// "12.3x"; "at least 12.3x" when the search without the reduction did
/// not end within its budget (it would have stored more); no figure when
/// the search with it did not end either, since two searches cut short
/// say nothing about each other's size.
fn factor(without: Measured, with: Measured) -> String {
    ratio((without.stored, without.ended), (with.stored, with.ended))
}

fn ratio((without, without_ended): (u64, bool), (with, with_ended): (u64, bool)) -> String {
    let r = without as f64 / with.max(1) as f64;
    match (without_ended, with_ended) {
        (true, true) => format!("{r:.1}x"),
        (false, true) => format!("at least {r:.1}x (not exhausted without it)"),
        (_, false) => "no figure (not exhausted with it)".to_owned(),
    }
}

/// `locklab explore --bench`: the bounded-exhaustive search on the designs
/// issue 44 measures, and what the reductions save on its bound. Budgets
/// and times are CPU time of the one thread that searches.
pub fn exhaustive_bench() -> String {
    let design = |file: &str| -> Option<Spec> {
        let (_, text) = locklab_core::explore::designs::FILES.iter().find(|(f, _)| *f == file)?;
        locklab_core::explore::designs::parse(text).ok()
    };
    let mut out =
        String::from("locklab explore --bench: bounded-exhaustive breadth-first search, one thread, CPU time\n");
    let all = Reductions::default();
    let line = |name, spec, reductions, alike, cpu| {
        bench_line(&Line {
            name,
            spec,
            reductions,
            alike,
            cpu,
        })
    };
    if let Some(mut d07) = design("07-redlock5-gc-pause.toml") {
        // The world seed whose network delays let a GC pause of one of the
        // six lengths break Redlock (the sampling explorer's seed 894627100).
        d07.set_seed(894_627_100);
        out.push_str("design 07 (Redlock, five masters, GC pause), world seed 894627100, 1 pause:\n");
        out.push_str(&line("shortest counterexample", &d07, all, false, 60.0).0);
        let anywhere = Reductions {
            pause_at_input: false,
            ..all
        };
        out.push_str(&line("the same, pauses landing anywhere", &d07, anywhere, false, 60.0).0);
    }
    if let Some(d06) = design("06-fenced-single.toml") {
        let three = Spec {
            clients: 3,
            faults: 2,
            ..d06.clone()
        };
        out.push_str(&three_clients(&three, 60.0));
        out.push_str(&reductions_table(&d06, 20.0));
    }
    out
}

/// Design 06 with 3 clients and at most 2 faults: held with every
/// reduction, and the states stored without them on the same bound (each
/// of those given `cpu` seconds: they need not end).
fn three_clients(three: &Spec, cpu: f64) -> String {
    let all = Reductions::default();
    let line = |name, reductions, alike, cpu| {
        bench_line(&Line {
            name,
            spec: three,
            reductions,
            alike,
            cpu,
        })
    };
    let mut out = String::from("design 06 (fenced, one node), 3 clients, at most 2 faults:\n");
    let (text, with) = line("every reduction (the default)", all, false, 60.0);
    out.push_str(&text);
    let no_tails = Reductions { tails: false, ..all };
    let (text, without_tails) = line("without deterministic tails", no_tails, false, cpu);
    out.push_str(&text);
    let bare = Reductions {
        fingerprints: true,
        no_op_faults: false,
        pause_at_input: false,
        symmetry: false,
        tails: false,
        sleep_sets: false,
    };
    let (text, fp_only) = line("fingerprints only (no other reduction)", bare, false, cpu);
    out.push_str(&text);
    let every = Reductions { symmetry: true, ..all };
    out.push_str(&line("every reduction and symmetry, clients alike", every, true, 60.0).0);
    out.push_str(&line("the same bound without symmetry", all, true, 60.0).0);
    out.push_str(&format!(
        "  states stored, without / with: deterministic tails {}; every reduction {}\n",
        factor(without_tails, with),
        factor(fp_only, with)
    ));
    out
}

/// What each reduction saves on one bound (design 06, 2 clients, at most
/// 2 faults, clients alike: two faults at one instant is where sleep sets
/// apply): the states explored with none (the tree of schedules), with
/// each alone, with all, and with each one left out of all. Each line gets
/// `cpu` seconds; one that did not end gives an "at least" factor.
// long: one table: each bench line a search to run and print, in the order printed
fn reductions_table(d06: &Spec, cpu: f64) -> String {
    let spec = Spec {
        clients: 2,
        faults: 2,
        ..d06.clone()
    };
    let none = Reductions {
        fingerprints: false,
        no_op_faults: false,
        pause_at_input: false,
        symmetry: false,
        tails: false,
        sleep_sets: false,
    };
    let all = Reductions {
        fingerprints: true,
        no_op_faults: true,
        pause_at_input: true,
        symmetry: true,
        tails: true,
        sleep_sets: true,
    };
    let line = |name: &str, reductions| {
        bench_line(&Line {
            name,
            spec: &spec,
            reductions,
            alike: true,
            cpu,
        })
    };
    let mut out =
        String::from("reductions on design 06, 2 clients, at most 2 faults, clients alike (states stored):\n");
    let (text, tree) = line("none (the tree of schedules)", none);
    out.push_str(&text);
    let (text, with) = line(
        "all (fingerprints, no-op faults, pauses at inputs, symmetry, tails, sleep sets)",
        all,
    );
    out.push_str(&text);
    let fp_only = Reductions {
        fingerprints: true,
        ..none
    };
    // Symmetry acts through fingerprints (it is what they compare), so
    // alone it is measured on top of them, against fingerprints alone.
    let alone = [
        ("fingerprints", fp_only, tree),
        (
            "no-op faults",
            Reductions {
                no_op_faults: true,
                ..none
            },
            tree,
        ),
        (
            "pauses at inputs",
            Reductions {
                pause_at_input: true,
                ..none
            },
            tree,
        ),
        ("deterministic tails", Reductions { tails: true, ..none }, tree),
        (
            "sleep sets",
            Reductions {
                sleep_sets: true,
                ..none
            },
            tree,
        ),
    ];
    let mut factors = Vec::new();
    let mut fp_alone = tree;
    for (name, r, base) in alone {
        let (text, m) = line(&format!("{name} alone"), r);
        out.push_str(&text);
        factors.push(format!(
            "{name} {}",
            ratio((base.stored, base.ended), (m.stored, m.ended))
        ));
        if name == "fingerprints" {
            fp_alone = m;
        }
    }
    let (text, m) = line(
        "symmetry alone (with fingerprints)",
        Reductions {
            symmetry: true,
            ..fp_only
        },
    );
    out.push_str(&text);
    factors.push(format!("symmetry {} against fingerprints alone", factor(fp_alone, m)));
    out.push_str(&format!(
        "  each alone (states stored, none / it): {}\n",
        factors.join(", ")
    ));
    let mut factors = Vec::new();
    let without = [
        ("symmetry", Reductions { symmetry: false, ..all }),
        (
            "pauses at inputs",
            Reductions {
                pause_at_input: false,
                ..all
            },
        ),
        (
            "no-op faults",
            Reductions {
                no_op_faults: false,
                ..all
            },
        ),
        ("deterministic tails", Reductions { tails: false, ..all }),
        (
            "sleep sets",
            Reductions {
                sleep_sets: false,
                ..all
            },
        ),
        (
            "fingerprints",
            Reductions {
                fingerprints: false,
                ..all
            },
        ),
    ];
    for (name, r) in without {
        let (text, m) = line(&format!("without {name}"), r);
        out.push_str(&text);
        factors.push(format!("{name} {}", factor(m, with)));
        if name == "sleep sets" {
            factors.push(format!(
                "(sleep sets: transitions {})",
                ratio((m.transitions, m.ended), (with.transitions, with.ended))
            ));
        }
    }
    out.push_str(&format!(
        "  each left out (states stored without it / with all): {}; all together against none {}\n",
        factors.join(", "),
        factor(tree, with)
    ));
    out
}
