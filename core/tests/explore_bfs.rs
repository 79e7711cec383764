//! The bounded-exhaustive search (`explore::bfs`): the classic designs keep
//! their verdicts, now with their bounds; its count of distinct states is
//! what a brute-force enumeration of every schedule reaches; the reductions
//! never change a verdict; a state space far past the limit ends "not
//! exhausted", never "held".

use std::collections::HashSet;

use locklab_core::client::Release;
use locklab_core::explore::bfs::{Bfs, Limits, Reductions, SearchStatus};
use locklab_core::explore::{designs, fault_options, FaultKind, Outcome, Spec};
use locklab_core::invariants::Invariant;
use locklab_core::world::{ClientId, World};

fn design(file: &str) -> Spec {
    let (_, text) = designs::FILES
        .iter()
        .find(|(f, _)| *f == file)
        .unwrap_or_else(|| panic!("no design {file}"));
    designs::parse(text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn search(spec: &Spec, reductions: Reductions, limits: Limits) -> Bfs {
    let mut b = Bfs::new(spec, 1, reductions, limits).expect("search");
    b.run();
    b
}

#[test]
fn the_classic_designs_keep_their_verdicts_with_their_bounds() {
    let cases = [
        ("01-bare-del.toml", Some(Invariant::WrongRelease)),
        ("02-get-then-del.toml", Some(Invariant::WrongRelease)),
        ("03-setnx-then-expire.toml", Some(Invariant::Deadlock)),
        ("04-no-fencing.toml", Some(Invariant::StaleWrite)),
        ("05-replicated-failover.toml", Some(Invariant::StaleWrite)),
        ("06-fenced-single.toml", None),
    ];
    for (file, want) in cases {
        let b = search(&design(file), Reductions::default(), Limits::default());
        let verdict = b.verdict();
        let report = b.report();
        match want {
            Some(inv) => {
                assert!(
                    matches!(b.status(), SearchStatus::Violated { invariant, .. } if invariant == inv),
                    "{file}: {verdict}"
                );
                assert!(verdict.starts_with(&format!("violated {}: a shortest counterexample within every schedule of 2 clients with at most 1 fault(s) from {{", inv.name())), "{verdict}");
                // The counterexample is an ordinary scenario: replayed on its
                // own, it breaks the same invariant.
                let Outcome::Violated {
                    invariant,
                    scenario,
                    steps,
                    ..
                } = &report.outcome
                else {
                    panic!("{file}: {:?}", report.outcome);
                };
                assert_eq!(*invariant, inv, "{file}");
                assert!(
                    report.transcript().contains("\nshortest counterexample (breadth-first"),
                    "{}",
                    report.transcript()
                );
                let mut w = World::from_scenario(scenario).expect("replays");
                w.run();
                assert_eq!(w.first_violation_step().map(|s| s + 1), Some(*steps), "{file}");
                assert_eq!(scenario.faults.len(), 1, "{file}: one fault within the budget");
            }
            None => {
                assert_eq!(b.status(), SearchStatus::Exhausted, "{file}: {verdict}");
                assert_eq!(report.outcome, Outcome::Held);
                assert_eq!(report.result_line(), format!("result: {verdict}"));
                assert!(!report.transcript().contains("sampled"), "{}", report.transcript());
                assert!(
                    verdict.starts_with("held: every schedule of 2 clients with at most 1 fault(s) from {pause, crash, restart, clock-jump} (16 fault options) at any point (a pause begins as an input reaches its client), network delays as world seed 1 draws them, runs of at most 2000 steps; "),
                    "{verdict}"
                );
                let s = b.stats();
                assert!(
                    verdict.ends_with(&format!(
                        "; {} more states checked along deterministic tails, {} distinct states",
                        s.tail_states, s.states
                    )),
                    "{verdict}"
                );
                assert!(s.states + s.tail_states > 1_000, "a real state space: {verdict}");
            }
        }
    }
}

/// Every state reachable from the roots by any sequence of transitions,
/// found by walking every schedule depth-first without remembering any:
/// the set of (fingerprint, faults used) pairs it meets.
fn brute_force(spec: &Spec, w: World, faults: u32, seen: &mut HashSet<(u64, u32)>, paths: &mut u64) {
    *paths += 1;
    seen.insert((w.fingerprint(), faults));
    if faults < spec.faults {
        let options: Vec<_> = fault_options(&spec.base_scenario(), spec.ttl_ms)
            .into_iter()
            .filter(|f| FaultKind::of(f).is_none_or(|k| spec.allows(k)))
            .collect();
        for f in options {
            let mut c = w.clone();
            if c.inject(f).is_ok() {
                brute_force(spec, c, faults + 1, seen, paths);
            }
        }
    }
    let mut w = w;
    if w.step_item() {
        brute_force(spec, w, faults, seen, paths);
    }
}

fn tiny() -> Spec {
    Spec {
        fencing: true,
        fault_kinds: vec![FaultKind::Crash],
        max_steps: 40,
        ..Spec::default()
    }
}

#[test]
fn a_tiny_models_count_equals_a_brute_force_enumeration() {
    let spec = tiny();
    let mut seen = HashSet::new();
    let mut paths = 0;
    let root = World::from_scenario(&spec.base_scenario()).expect("world");
    brute_force(&spec, root, 0, &mut seen, &mut paths);
    let plain = Reductions {
        fingerprints: true,
        no_op_faults: false,
        pause_at_input: false,
        symmetry: false,
        tails: false,
        sleep_sets: false,
    };
    let b = search(&spec, plain, Limits::default());
    assert_eq!(b.status(), SearchStatus::Exhausted, "{}", b.verdict());
    assert_eq!(b.stats().states, seen.len() as u64, "distinct states");
    // Without fingerprints the search is the tree of schedules itself.
    let tree = search(
        &spec,
        Reductions {
            fingerprints: false,
            no_op_faults: false,
            pause_at_input: false,
            symmetry: false,
            tails: false,
            sleep_sets: false,
        },
        Limits::default(),
    );
    assert_eq!(tree.status(), SearchStatus::Exhausted);
    assert_eq!(tree.stats().states, paths, "every schedule's every state");
    assert!(
        paths > seen.len() as u64,
        "schedules meet: {paths} paths, {} states",
        seen.len()
    );
}

/// Every combination of reductions gives one verdict and one
/// counterexample depth, on the designs of one release (three tests, one
/// per release, so that they run side by side): eight designs each (with
/// and without fencing, four fault sets); returns the verdicts seen.
fn the_reductions_agree_on(release: Release) -> HashSet<Option<Invariant>> {
    let r = |fingerprints, no_op_faults, pause_at_input, symmetry, tails, sleep_sets| Reductions {
        fingerprints,
        no_op_faults,
        pause_at_input,
        symmetry,
        tails,
        sleep_sets,
    };
    // (reductions, the symmetric model): symmetry needs its model, so the
    // combinations with it are compared with the same model without it.
    let all = [
        (r(true, true, true, false, true, true), false),
        (r(true, true, true, false, true, false), false),
        (r(true, true, true, false, false, true), false),
        (r(true, true, false, false, true, false), false),
        (r(true, false, false, false, false, false), false),
        (r(true, false, false, false, false, true), false),
        (r(true, false, false, false, true, false), false),
        (r(true, false, false, false, true, true), false),
        (r(false, true, true, false, true, true), false),
        (r(false, false, false, false, false, true), false),
        (r(false, false, false, false, false, false), false),
        (r(true, true, true, true, true, true), true),
        (r(true, true, true, true, false, true), true),
        (r(true, true, true, true, true, false), true),
        (r(true, false, false, true, false, false), true),
        (r(true, false, false, true, false, true), true),
        (r(true, true, true, false, true, true), true),
        (r(true, false, false, false, false, false), true),
    ];
    let mut compared = 0;
    let mut kinds_seen = HashSet::new();
    // Sleep sets need two faults at one instant on different actors: the
    // mixed kinds with a budget of 2, searched with fingerprints and tails
    // (without either that space is too big for a test).
    let kinds = [
        (vec![FaultKind::Pause], 1),
        (vec![FaultKind::Crash], 1),
        (vec![FaultKind::Restart], 1),
        (vec![FaultKind::Crash, FaultKind::Restart, FaultKind::Pause], 2),
    ];
    {
        for fencing in [false, true] {
            for (kind, faults) in &kinds {
                let spec = Spec {
                    release,
                    fencing,
                    fault_kinds: kind.clone(),
                    faults: *faults,
                    max_steps: 60,
                    ..Spec::default()
                };
                // With one fault there is no commuting pair of faults for
                // sleep sets to cut: a combination that differs from an
                // earlier one only in them is the same search, run once.
                let mut runs: Vec<(Reductions, bool)> = Vec::new();
                for &(r, model) in &all {
                    let same = |(o, m): &(Reductions, bool)| {
                        *m == model
                            && Reductions {
                                sleep_sets: r.sleep_sets,
                                ..*o
                            } == r
                    };
                    let wanted = if *faults == 1 {
                        !runs.iter().any(same)
                    } else {
                        r.fingerprints && r.tails
                    };
                    if wanted {
                        runs.push((r, model));
                    }
                }
                let verdicts: Vec<(bool, Option<Invariant>, Option<u64>)> = runs
                    .iter()
                    .map(|(r, model)| {
                        let mut b = Bfs::with_model(&spec, 1, *r, Limits::default(), *model).expect("search");
                        b.run();
                        assert_ne!(b.status(), SearchStatus::NotExhausted, "{:?} {release:?} {kind:?}", r);
                        let report = b.report();
                        let inv = match report.outcome {
                            Outcome::Violated { invariant, .. } => Some(invariant),
                            Outcome::Held => None,
                        };
                        (*model, inv, b.counterexample_len())
                    })
                    .collect();
                // Within one model every combination agrees, verdict and depth.
                for model in [false, true] {
                    let group: Vec<_> = verdicts.iter().filter(|v| v.0 == model).collect();
                    assert!(
                        group.windows(2).all(|w| w[0] == w[1]),
                        "{release:?} fencing {fencing} {kind:?}: {verdicts:?}"
                    );
                }
                kinds_seen.insert(verdicts[0].1);
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 8);
    kinds_seen
}

#[test]
fn the_reductions_never_change_a_verdict_with_a_bare_del() {
    the_reductions_agree_on(Release::Del);
}

#[test]
fn the_reductions_never_change_a_verdict_with_get_then_del() {
    the_reductions_agree_on(Release::GetThenDel);
}

#[test]
fn the_reductions_never_change_a_verdict_with_lua() {
    let kinds_seen = the_reductions_agree_on(Release::Lua);
    assert!(kinds_seen.len() >= 2, "both verdicts among the designs: {kinds_seen:?}");
}

/// Symmetry: in the symmetric model (clients alike), a world and the same
/// world with A's and B's roles swapped fingerprint alike, and the search
/// with the reduction explores fewer states for the same verdict and
/// depth. Before the reduction the two worlds had different fingerprints.
#[test]
fn clients_alike_are_interchangeable_and_symmetry_cuts_states() {
    let spec = Spec {
        fault_kinds: vec![FaultKind::Crash],
        ..design("06-fenced-single.toml")
    };
    let mut sc = spec.base_scenario();
    for c in &mut sc.clients {
        c.start_ms = 0;
    }
    sc.world.shared_client_stream = true;
    // Crash A in one world and B in the other, each before anything ran:
    // the same state up to the clients' names.
    let mut a = World::from_scenario(&sc).expect("world");
    let mut b = a.clone();
    a.inject(locklab_core::fault::Fault::CrashClient { client: "A".into() })
        .expect("crash A");
    b.inject(locklab_core::fault::Fault::CrashClient { client: "B".into() })
        .expect("crash B");
    for _ in 0..40 {
        a.step_item();
        b.step_item();
    }
    assert_ne!(
        a.fingerprint(),
        b.fingerprint(),
        "the plain fingerprints tell them apart"
    );
    assert_eq!(
        a.symmetric_fingerprint(),
        b.symmetric_fingerprint(),
        "up to renaming they are one"
    );
    // A world that is not a renaming of the other stays apart.
    let mut c = World::from_scenario(&sc).expect("world");
    for _ in 0..40 {
        c.step_item();
    }
    assert_ne!(a.symmetric_fingerprint(), c.symmetric_fingerprint());

    let three = Spec { clients: 3, ..spec };
    let run = |symmetry| {
        // Symmetry merges states after a fault swaps two clients' roles:
        // measured alone, with those states stored (no tails).
        let r = Reductions {
            symmetry,
            tails: false,
            ..Reductions::default()
        };
        assert!(!Reductions::default().symmetry, "opt-in: it needs its model");
        let mut b = Bfs::with_model(&three, 1, r, Limits::default(), true).expect("search");
        b.run();
        b
    };
    let (with, without) = (run(true), run(false));
    println!(
        "{}\nwith symmetry {} states, without {}",
        with.verdict(),
        with.stats().states,
        without.stats().states
    );
    assert_eq!(with.status(), without.status());
    assert_eq!(with.stats().depth, without.stats().depth);
    assert!(with
        .verdict()
        .contains("3 clients (alike: one start time, one random stream shape)"));
    // Few merges here: the model's order is deterministic (A's start is
    // queued before B's at the same time, the network's delays are drawn in
    // send order), so only faults make two clients' roles swap.
    assert!(
        with.stats().states < without.stats().states,
        "{} states with symmetry, {} without",
        with.stats().states,
        without.stats().states
    );
}

#[test]
fn a_state_space_far_past_the_limit_is_not_exhausted_and_not_held() {
    let spec = Spec {
        clients: 4,
        faults: 4,
        fencing: true,
        ..Spec::default()
    };
    let limits = Limits {
        max_states: 3_000,
        max_frontier: 1_000,
    };
    let b = search(&spec, Reductions::default(), limits);
    assert_eq!(b.status(), SearchStatus::NotExhausted);
    let s = b.stats();
    assert!(s.states <= 3_000 && s.frontier <= 2_000, "{s:?}");
    let v = b.verdict();
    assert!(v.starts_with("not exhausted within the limit: explored "), "{v}");
    assert!(!v.contains("held"), "{v}");
    // The caller's time limit ends a search the same way.
    let mut b = Bfs::new(&spec, 1, Reductions::default(), Limits::default()).expect("search");
    assert!(!b.step(50));
    b.stop();
    assert_eq!(b.status(), SearchStatus::NotExhausted);
    assert!(b.verdict().starts_with("not exhausted within the limit"));
}

/// A hostile design whose release loops for ever only once its lock is
/// gone, which only a fault brings about: the fault-free probe of the
/// sampling explorer passes it, and the breadth-first search ends at the
/// first schedule that reaches the loop, not exhausted and saying which
/// script was stopped, instead of spending an instruction budget on every
/// schedule that reaches it (or calling the design "held").
#[test]
fn a_script_that_runs_away_only_after_a_fault_ends_the_search_not_exhausted() {
    let text = r#"
name = "runaway once the lock is gone"
fencing = true

[scripts]
acquire = """
return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
"""
release = """
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
    while true do end
end
return redis.call("DEL", KEYS[1])
"""
"#;
    let spec = designs::parse(text).expect("compiles");
    locklab_core::explore::Explorer::new(&spec).expect("the fault-free run finishes");
    let b = search(&spec, Reductions::default(), Limits::default());
    assert_eq!(b.status(), SearchStatus::NotExhausted);
    let (role, reply) = b.stopped_script().expect("a stopped script");
    assert_eq!(role, "release");
    assert!(reply.contains("runaway script"), "{reply}");
    let v = b.verdict();
    assert!(
        v.starts_with(
            "not exhausted: on one schedule the release script was stopped ((error) ERR Error running script"
        ),
        "{v}"
    );
    assert!(!v.contains("held"), "{v}");
    assert!(b
        .verdict_zh()
        .starts_with("未穷尽：在某个调度上 release 脚本被模拟器停止"));
    assert!(b.stats().states < 10_000, "{:?}", b.stats());
}

/// Two worlds that differ only in a node's `math.random` state: a script
/// that draws from it answers differently in each, so the search must not
/// take one for the other (the fingerprint left the generator out before).
#[test]
fn the_fingerprint_sees_the_lua_random_generator() {
    let mut sc = Spec {
        clients: 1,
        ..Spec::default()
    }
    .base_scenario();
    sc.clients[0].program = None;
    let seeded = |seed: u32| {
        let mut w = World::from_scenario(&sc).expect("world");
        // One script (one cache entry) for both: only the generator differs.
        let line = format!("EVAL \"math.randomseed(tonumber(ARGV[1])) return 1\" 0 {seed}");
        let argv = locklab_core::cli::parse(&line).expect("parses");
        let reply = w.request(ClientId(0), 0, argv).expect("request");
        assert_eq!(reply, Some(locklab_core::Reply::Integer(1)));
        w
    };
    let (a, b, a2) = (seeded(1), seeded(2), seeded(1));
    assert_eq!(
        a.fingerprint(),
        a2.fingerprint(),
        "the same world, the same fingerprint"
    );
    assert_ne!(a.fingerprint(), b.fingerprint(), "math.random would answer differently");
}

/// A pause of a client whose program is done (nothing in flight, no timer)
/// changes nothing: the search does not spend a fault on it, and the
/// verdicts stay (the property test above covers that).
#[test]
fn a_pause_nothing_can_reach_is_not_taken() {
    let spec = Spec {
        fencing: true,
        fault_kinds: vec![FaultKind::Pause],
        ..Spec::default()
    };
    let mut w = World::from_scenario(&spec.base_scenario()).expect("world");
    assert!(!w.pause_is_idle("A"), "A has a program to start");
    while w.step_item() {}
    assert!(w.pause_is_idle("A") && w.pause_is_idle("B"), "both programs are done");
    assert!(!w.pause_is_idle("Z"), "no such client");
    // Landing pauses only at inputs skips idle pauses too: measured alone.
    let only = |no_op_faults| Reductions {
        no_op_faults,
        pause_at_input: false,
        ..Reductions::default()
    };
    let with = search(&spec, only(true), Limits::default());
    let without = search(&spec, only(false), Limits::default());
    assert_eq!(
        (with.status(), without.status()),
        (SearchStatus::Exhausted, SearchStatus::Exhausted)
    );
    println!(
        "states: {} with idle pauses skipped, {} without",
        with.stats().states,
        without.stats().states
    );
    assert!(
        with.stats().states < without.stats().states,
        "{} states with the reduction, {} without",
        with.stats().states,
        without.stats().states
    );
}

/// A pause changes nothing until an input reaches its client, so the
/// search lands pauses only there (`pause_at_input`): fewer states, the
/// same verdict at the same depth (a shortest counterexample as short).
#[test]
fn pauses_landing_at_inputs_cut_states_and_keep_the_shortest_counterexample() {
    let spec = Spec {
        fault_kinds: vec![FaultKind::Pause],
        ..design("04-no-fencing.toml")
    };
    let at_input = search(&spec, Reductions::default(), Limits::default());
    let anywhere = search(
        &spec,
        Reductions {
            pause_at_input: false,
            ..Reductions::default()
        },
        Limits::default(),
    );
    let (a, b) = (at_input.status(), anywhere.status());
    assert!(
        matches!(
            a,
            SearchStatus::Violated {
                invariant: Invariant::StaleWrite,
                ..
            }
        ),
        "{}",
        at_input.verdict()
    );
    assert!(
        matches!(
            b,
            SearchStatus::Violated {
                invariant: Invariant::StaleWrite,
                ..
            }
        ),
        "{}",
        anywhere.verdict()
    );
    assert_eq!(
        at_input.counterexample_len(),
        anywhere.counterexample_len(),
        "as short a counterexample"
    );
    println!(
        "design 04, pauses: {} states landing at inputs, {} anywhere",
        at_input.stats().states,
        anywhere.stats().states
    );
    assert!(
        at_input.stats().states * 2 < anywhere.stats().states,
        "{} states at inputs, {} anywhere",
        at_input.stats().states,
        anywhere.stats().states
    );
    assert!(at_input
        .verdict()
        .contains("(a pause begins as an input reaches its client)"));
}

/// Deterministic tails (`Reductions::tails`): once the fault budget is
/// spent, the rest of a run is stepped and checked, not stored. The same
/// verdicts, the counterexample as short and replaying to the same
/// violation, every state still visited, far fewer kept.
#[test]
fn deterministic_tails_are_checked_not_stored_and_keep_the_shortest_counterexample() {
    let no_tails = Reductions {
        tails: false,
        ..Reductions::default()
    };
    assert!(Reductions::default().tails, "on by default");
    let held = design("06-fenced-single.toml");
    let with = search(&held, Reductions::default(), Limits::default());
    let without = search(&held, no_tails, Limits::default());
    assert_eq!(
        (with.status(), without.status()),
        (SearchStatus::Exhausted, SearchStatus::Exhausted)
    );
    let (w, wo) = (with.stats(), without.stats());
    println!(
        "design 06: {} states stored and {} on tails, {} stored without tails",
        w.states, w.tail_states, wo.states
    );
    assert_eq!(wo.tail_states, 0);
    assert!(w.states * 4 < wo.states, "{w:?} {wo:?}");
    assert!(
        w.states + w.tail_states >= wo.states,
        "every state is still visited: {w:?} {wo:?}"
    );
    assert!(with
        .verdict()
        .contains(" more states checked along deterministic tails, "));
    for file in ["01-bare-del.toml", "04-no-fencing.toml", "05-replicated-failover.toml"] {
        let spec = design(file);
        let with = search(&spec, Reductions::default(), Limits::default());
        let without = search(&spec, no_tails, Limits::default());
        let inv = |b: &Bfs| match b.status() {
            SearchStatus::Violated { invariant, .. } => Some(invariant),
            _ => None,
        };
        assert!(inv(&with).is_some(), "{file}: {}", with.verdict());
        assert_eq!(inv(&with), inv(&without), "{file}");
        assert_eq!(
            with.counterexample_len(),
            without.counterexample_len(),
            "{file}: as short"
        );
        let Outcome::Violated {
            invariant,
            scenario,
            steps,
            ..
        } = with.report().outcome
        else {
            panic!("{file}: {}", with.verdict());
        };
        assert_eq!(Some(invariant), inv(&with), "{file}");
        let mut w = World::from_scenario(&scenario).expect("replays");
        w.run();
        assert_eq!(w.first_violation_step().map(|s| s + 1), Some(steps), "{file}");
    }
}

/// A counterexample exported (issue 44 item 4): a Mermaid sequence
/// diagram with the clients, the node and the resource, the requests as
/// arrows and the violation as a note; a redis-cli script of the commands
/// the node executed with the waits between them.
#[test]
fn a_counterexample_exports_as_mermaid_and_a_redis_cli_script() {
    use locklab_core::explore::export;
    let b = search(&design("04-no-fencing.toml"), Reductions::default(), Limits::default());
    let Outcome::Violated { trace, .. } = b.report().outcome else {
        panic!("{}", b.verdict());
    };
    let m = export::mermaid(&trace);
    println!("{m}");
    assert!(
        m.starts_with("sequenceDiagram\n    participant p_A as A\n    participant p_B as B\n"),
        "{m}"
    );
    assert!(m.contains("participant p__resource as resource"), "{m}");
    assert!(
        m.contains("p_A->>") && m.contains("-->>p_A"),
        "requests and replies as arrows: {m}"
    );
    assert!(
        m.contains("->>p__resource") && m.contains("p__resource-->>"),
        "writes: {m}"
    );
    assert!(
        m.lines()
            .any(|l| l.starts_with("    Note over ") && l.contains("stale")),
        "the violation: {m}"
    );
    assert!(m.lines().skip(1).all(|l| l.starts_with("    ")), "{m}");
    let s = export::cli_script(&trace);
    println!("{s}");
    assert!(s.starts_with("#!/bin/sh\n"), "{s}");
    assert!(s.contains("redis-cli $R0 SET lock "), "{s}");
    assert!(s.lines().any(|l| l.starts_with("sleep 0.")), "waits: {s}");
    assert!(
        s.lines().any(|l| l.starts_with("# ") && l.contains("paus")),
        "the fault as a comment: {s}"
    );
}

/// The "because" chain of a counterexample, in English and Chinese: the
/// pause, the expiry, the other client's acquisition, the wake-up, the
/// accepted writes, the violation, in that order.
#[test]
fn a_counterexample_is_explained_as_a_because_chain_in_en_and_zh() {
    use locklab_core::explore::export;
    let b = search(&design("04-no-fencing.toml"), Reductions::default(), Limits::default());
    let Outcome::Violated { trace, .. } = b.report().outcome else {
        panic!("{}", b.verdict());
    };
    let en = export::because(&trace, false);
    let zh = export::because(&trace, true);
    println!("{en}\n{zh}");
    let order = |s: &str, parts: &[&str]| {
        let mut at = 0;
        for p in parts {
            let Some(i) = s[at..].find(p) else {
                panic!("{p:?} not after byte {at} in {s}");
            };
            at += i + p.len();
        }
    };
    order(
        &en,
        &[
            "pause A for",
            " → lock expired on redis",
            " → B acquired lock (holder 2)",
            " → A resumed",
            " → A believed it held lock",
            " → the resource accepted A's write",
            " → stale-write broken: ",
        ],
    );
    order(
        &zh,
        &[
            "暂停 A",
            "lock 在 redis 上过期",
            "B 拿到了 lock（第 2 个持有者）",
            "A 恢复运行",
            "A 以为自己持有 lock",
            "资源接受了 A 的写入",
            "违反 stale-write",
        ],
    );
}

/// `--export lesson`: the shortest counterexample written as a lesson file
/// parses (`Lesson::parse` validates it as it does `lessons/*.toml`) and,
/// played, breaks the same invariant again. Before the export existed
/// there was no text to parse.
#[test]
fn a_counterexample_exports_as_a_lesson_that_replays_to_the_same_violation() {
    use locklab_core::explore::export;
    use locklab_core::lesson::run::LessonRun;
    use locklab_core::lesson::Lesson;
    for file in ["04-no-fencing.toml", "01-bare-del.toml"] {
        let spec = design(file);
        let b = search(&spec, Reductions::default(), Limits::default());
        let report = b.report();
        let Outcome::Violated { invariant, .. } = report.outcome else {
            panic!("{file}: {}", b.verdict());
        };
        let text = export::lesson_toml(&spec, &report).unwrap_or_else(|e| panic!("{file}: {e}"));
        println!("{text}");
        let lesson = Lesson::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}\n{text}"));
        assert!(lesson.narration.en.contains("shortest"), "{}", lesson.narration.en);
        assert!(lesson.narration.zh.contains("最短"), "{}", lesson.narration.zh);
        let mut run = LessonRun::new(&lesson).expect("a lesson run");
        run.run_all().expect("played");
        assert!(
            run.observed().contains(&invariant),
            "{file}: {:?} not among {:?}",
            invariant,
            run.observed()
        );
    }
    let held = search(
        &design("06-fenced-single.toml"),
        Reductions::default(),
        Limits::default(),
    );
    assert!(export::lesson_toml(&design("06-fenced-single.toml"), &held.report()).is_err());
}

/// The page's exports are the CLI's: the same because chain, diagram,
/// script and lesson, made from one report; a held design has none.
#[test]
fn a_counterexample_exports_everything_the_cli_prints_and_a_held_design_nothing() {
    use locklab_core::explore::export;
    let spec = design("04-no-fencing.toml");
    let report = search(&spec, Reductions::default(), Limits::default()).report();
    let Outcome::Violated { trace, .. } = &report.outcome else {
        panic!("04 holds");
    };
    let all = export::exports(&spec, &report).expect("a counterexample exports");
    assert_eq!(all.mermaid, export::mermaid(trace));
    assert_eq!(all.cli, export::cli_script(trace));
    assert_eq!(all.because_en, export::because(trace, false));
    assert_eq!(all.because_zh, export::because(trace, true));
    assert_eq!(
        all.lesson.as_deref(),
        export::lesson_toml(&spec, &report).ok().as_deref()
    );
    assert!(all.mermaid.starts_with("sequenceDiagram"), "{}", all.mermaid);
    let held = search(
        &design("06-fenced-single.toml"),
        Reductions::default(),
        Limits::default(),
    );
    assert_eq!(export::exports(&design("06-fenced-single.toml"), &held.report()), None);
}
