//! The explorer's required results: it finds each classic broken lock, it
//! reports `held` for the correct one within its bound, and its answer is
//! deterministic and replayable.

use locklab_core::client::{Acquire, Release};
use locklab_core::explore::{explore, Explorer, FaultKind, Finding, Outcome, Report, Spec, TopologyKind};
use locklab_core::trace::EventKind;
use locklab_core::world::{Persistence, World};

fn spec(f: impl FnOnce(&mut Spec)) -> Spec {
    let mut s = Spec::default();
    f(&mut s);
    s
}

fn result(s: &Spec) -> (String, Report) {
    let report = explore(s).expect("explores");
    let transcript = report.transcript();
    let last = transcript.lines().last().unwrap_or_default().to_owned();
    assert_eq!(
        transcript.lines().filter(|l| l.starts_with("result: ")).count(),
        1,
        "exactly one result line:\n{transcript}"
    );
    assert!(transcript.ends_with('\n'));
    (last, report)
}

fn assert_violated(s: &Spec, invariant: &str) -> Report {
    let (line, report) = result(s);
    let prefix = format!("result: violated {invariant} (seed ");
    assert!(
        line.starts_with(&prefix) && line.ends_with(" steps)"),
        "{line}\n{}",
        report.transcript()
    );
    report
}

#[test]
fn bare_del_releases_someone_elses_lock() {
    assert_violated(
        &spec(|s| {
            s.release = Release::Del;
            s.fencing = true;
        }),
        "wrong-release",
    );
}

#[test]
fn get_then_del_releases_someone_elses_lock() {
    assert_violated(
        &spec(|s| {
            s.release = Release::GetThenDel;
            s.fencing = true;
        }),
        "wrong-release",
    );
}

#[test]
fn getdel_releases_someone_elses_lock() {
    assert_violated(
        &spec(|s| {
            s.release = Release::Getdel;
            s.fencing = true;
        }),
        "wrong-release",
    );
}

#[test]
fn setnx_then_expire_with_a_crash_in_between_deadlocks() {
    let r = assert_violated(&spec(|s| s.acquire = Acquire::SetnxExpire), "deadlock");
    let t = r.transcript();
    assert!(t.contains("crash A") || t.contains("crash B"), "{t}");
    assert!(t.contains("no TTL"), "{t}");
}

#[test]
fn the_safe_lua_release_still_fails_over_asynchronously() {
    let r = assert_violated(
        &spec(|s| {
            s.release = Release::Lua;
            s.topology = TopologyKind::Replicated;
        }),
        "stale-write",
    );
    assert!(r.transcript().contains("failover"), "{}", r.transcript());
}

#[test]
fn without_fencing_a_paused_client_overwrites_the_next_holder() {
    let r = assert_violated(
        &spec(|s| {
            s.release = Release::Lua;
            s.fencing = false;
            s.fault_kinds = vec![FaultKind::Pause];
        }),
        "stale-write",
    );
    let t = r.transcript();
    assert!(t.contains("FAULT pause"), "{t}");
    assert!(!t.contains("clock jumps"), "{t}");
    // With every fault kind allowed, a clock jump on the node does it too.
    assert_violated(&spec(|s| s.fencing = false), "stale-write");
}

#[test]
fn token_lua_release_and_fencing_on_one_node_hold() {
    let s = spec(|s| {
        s.release = Release::Lua;
        s.fencing = true;
    });
    let (line, report) = result(&s);
    let ex = Explorer::new(&s).expect("explorer");
    assert_eq!(
        line,
        format!("result: sampled {} schedules: no violation found", ex.total()),
        "{}",
        report.transcript()
    );
    assert!(ex.total() >= 5_000, "a real bound: {}", ex.total());
}

#[test]
fn delex_release_and_fencing_on_one_node_hold() {
    let (line, _) = result(&spec(|s| {
        s.release = Release::Delex;
        s.fencing = true;
    }));
    assert!(
        line.starts_with("result: sampled ") && line.ends_with(" schedules: no violation found"),
        "{line}"
    );
}

#[test]
fn without_persistence_a_restart_reuses_the_fencing_token() {
    let r = assert_violated(
        &spec(|s| {
            s.release = Release::Lua;
            s.fencing = true;
            s.persistence = Persistence::Off;
        }),
        "stale-write",
    );
    let t = r.transcript();
    assert!(t.contains("restarted EMPTY"), "{t}");
    assert!(t.contains("handed out twice"), "{t}");
}

#[test]
fn the_counterexample_replays_exactly() {
    let s = spec(|s| s.release = Release::Del);
    let report = explore(&s).expect("explores");
    let Outcome::Violated {
        scenario,
        trace,
        steps,
        invariant,
        ..
    } = &report.outcome
    else {
        panic!("expected a violation");
    };
    assert_eq!(trace.events.len() as u64, *steps);
    let mut w = World::from_scenario(scenario).expect("replayable");
    w.run();
    assert_eq!(w.first_violation_step(), Some(steps - 1));
    assert_eq!(&w.trace()[..*steps as usize], &trace.events[..]);
    match &trace.events.last().map(|e| &e.kind) {
        Some(EventKind::Violation { violation }) => assert_eq!(violation.invariant, *invariant),
        other => panic!("the transcript ends at the violation: {other:?}"),
    }
    // And the scenario survives JSON, so it can be saved and shared.
    let json = serde_json::to_string(scenario).expect("ser");
    let back: locklab_core::world::Scenario = serde_json::from_str(&json).expect("de");
    assert_eq!(&back, &**scenario);
}

#[test]
fn sharding_does_not_change_the_answer() {
    let s = spec(|s| {
        s.release = Release::Del;
        s.random_walks = 300;
        s.exhaustive_seeds = 2;
    });
    let ex = Explorer::new(&s).expect("explorer");
    let one = ex.search(0, 1);
    let merged = (0..3).map(|k| ex.search(k, 3)).fold(Finding::default(), Finding::merge);
    assert_eq!(one.best, merged.best);
    assert_eq!(one.explored, merged.explored);
    assert_eq!(one.explored, ex.total());
    assert_eq!(ex.report(&one).transcript(), ex.report(&merged).transcript());
    // Same spec, same transcript.
    assert_eq!(
        explore(&s).expect("a").transcript(),
        explore(&s).expect("b").transcript()
    );
}

#[test]
fn zero_faults_and_many_clients_use_random_walks_only() {
    let s = spec(|s| {
        s.clients = 3;
        s.faults = 0;
        s.random_walks = 50;
        s.release = Release::Lua;
    });
    let (line, report) = result(&s);
    assert!(
        line.starts_with("result: sampled ") && line.ends_with(" schedules: no violation found"),
        "{line}"
    );
    assert!(report.plan.contains("random walks"));
}

#[test]
fn redlock_without_faults_holds_quickly() {
    let s = spec(|s| {
        s.topology = TopologyKind::Redlock5;
        s.faults = 0;
        s.random_walks = 30;
    });
    let (line, _) = result(&s);
    assert!(
        line.starts_with("result: sampled ") && line.ends_with(" schedules: no violation found"),
        "{line}"
    );
}

#[test]
fn bad_specs_are_errors() {
    assert!(Explorer::new(&spec(|s| s.clients = 0)).is_err());
    assert!(Explorer::new(&spec(|s| s.faults = 99)).is_err());
    assert!(Explorer::new(&spec(|s| {
        s.topology = TopologyKind::Redlock5;
        s.acquire = Acquire::SetnxExpire;
    }))
    .is_err());
    let json = r#"{ "release": "lua", "fencing": true, "bogus": 1 }"#;
    assert!(
        serde_json::from_str::<Spec>(json).is_err(),
        "unknown fields are refused"
    );
    let ok: Spec = serde_json::from_str(r#"{ "release": "get-del", "topology": "redlock5" }"#).expect("spec");
    assert_eq!((ok.release, ok.topology), (Release::GetThenDel, TopologyKind::Redlock5));
}
