//! Sleep sets (`Reductions::sleep_sets`, `explore::sleep`): the faults the
//! reduction calls independent really commute, and the reduction is no
//! no-op — it takes fewer transitions for the same states and verdict, and
//! cuts the tree of schedules itself. (That it never changes a verdict or a
//! counterexample's length is `explore_bfs`'s property test.)

use locklab_core::explore::bfs::{Bfs, Limits, Reductions, SearchStatus};
use locklab_core::explore::sleep::independent;
use locklab_core::explore::{designs, fault_options, FaultKind, Spec};
use locklab_core::world::World;

fn design(file: &str) -> Spec {
    let (_, text) = designs::FILES
        .iter()
        .find(|(f, _)| *f == file)
        .unwrap_or_else(|| panic!("no design {file}"));
    designs::parse(text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Every pair of faults `independent` calls commuting, injected at one
/// instant in either order, gives the same world (fingerprint), at every
/// point of the fault-free run of designs on one node, on five masters and
/// with a replica; and pairs on one actor are not called independent.
#[test]
fn independent_faults_commute() {
    let mut pairs = 0;
    let mut bad = Vec::new();
    for (file, clients) in [
        ("06-fenced-single.toml", 3),
        ("07-redlock5-gc-pause.toml", 2),
        ("05-replicated-failover.toml", 2),
    ] {
        let spec = Spec {
            clients,
            fault_kinds: FaultKind::ALL.to_vec(),
            faults: 2,
            ..design(file)
        };
        let base = spec.base_scenario();
        let options = fault_options(&base, spec.ttl_ms);
        let mut w = World::from_scenario(&base).expect("world");
        let mut at = 0;
        loop {
            for (i, f) in options.iter().enumerate() {
                for g in &options[i + 1..] {
                    if !independent(f, g) {
                        continue;
                    }
                    assert!(independent(g, f), "symmetric: {f:?} {g:?}");
                    let mut fg = w.clone();
                    let mut gf = w.clone();
                    let ok_fg = fg.inject(f.clone()).is_ok() && fg.inject(g.clone()).is_ok();
                    let ok_gf = gf.inject(g.clone()).is_ok() && gf.inject(f.clone()).is_ok();
                    assert_eq!(ok_fg, ok_gf, "{file} step {at}: {f:?} {g:?}");
                    if ok_fg {
                        if fg.fingerprint() != gf.fingerprint() {
                            bad.push(format!("{file} step {at}: {f:?} then {g:?}"));
                        }
                        pairs += 1;
                    }
                }
                assert!(!independent(f, f), "{f:?} with itself");
            }
            if !w.step_item() {
                break;
            }
            at += 1;
        }
    }
    println!("{pairs} commuting pairs checked");
    assert!(
        bad.is_empty(),
        "{} of {pairs} do not commute:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert!(pairs > 1000, "{pairs}");
}

fn search(spec: &Spec, r: Reductions) -> Bfs {
    let mut b = Bfs::new(spec, 1, r, Limits::default()).expect("search");
    b.run();
    b
}

/// With fingerprints the reduction keeps every state and takes fewer
/// transitions; on the tree of schedules (no fingerprints) it cuts states.
/// Both measured on a design where two faults can land at one instant on
/// different actors (crashes of two clients, a node's restart).
#[test]
fn sleep_sets_cut_transitions_and_the_tree_of_schedules() {
    let spec = Spec {
        fault_kinds: vec![FaultKind::Crash, FaultKind::Restart],
        faults: 2,
        max_steps: 40,
        ..design("06-fenced-single.toml")
    };
    let r = |sleep_sets, fingerprints| Reductions {
        sleep_sets,
        fingerprints,
        ..Reductions::default()
    };
    let (with, without) = (search(&spec, r(true, true)), search(&spec, r(false, true)));
    let (ws, wo) = (with.stats(), without.stats());
    println!(
        "fingerprints: {} states, {} transitions with sleep sets; {} states, {} transitions without",
        ws.states, ws.transitions, wo.states, wo.transitions
    );
    assert_eq!(with.status(), SearchStatus::Exhausted, "{}", with.verdict());
    assert_eq!(with.status(), without.status());
    assert_eq!(ws.states, wo.states, "every state is still reached");
    assert_eq!(ws.tail_states, wo.tail_states);
    assert!(ws.transitions < wo.transitions, "{ws:?} {wo:?}");

    let (with, without) = (search(&spec, r(true, false)), search(&spec, r(false, false)));
    let (ws, wo) = (with.stats(), without.stats());
    println!(
        "tree: {} states ({} on tails) with sleep sets; {} ({}) without",
        ws.states, ws.tail_states, wo.states, wo.tail_states
    );
    assert_eq!(with.status(), without.status());
    assert!(ws.states + ws.tail_states < wo.states + wo.tail_states, "{ws:?} {wo:?}");
}
