//! Lessons on a real three-member etcd cluster (Debian's etcd-server 3.4),
//! started by the runner on loopback ports: lesson 43 end to end, and the
//! translations and edges it rests on, each checked against the
//! simulator's replies for the same steps.
//!
//! etcd must be installed (CI installs etcd-server): without it these
//! tests fail and say so, they do not pass silently.

use locklab_backend::real::service::etcd::cluster::{etcd_binary, ETCD_NOT_FOUND};
use locklab_backend::real::service::EtcdEnv;
use locklab_core::invariants::Invariant;
use locklab_core::lesson::run::StepResult;
use locklab_core::lesson::Lesson;
use locklab_core::observe::{LockChange, Via};
use locklab_core::trace::EventKind;
use locklab_tests::service::{
    play_catalogue_lesson, play_over_the_api, play_steps, same_replies_as_the_simulator, service_lesson,
};

fn require_etcd() {
    assert!(etcd_binary().is_some(), "{ETCD_NOT_FOUND}");
}

/// A small etcd lesson around `steps` (TOML `[[steps]]` tables).
fn etcd_lesson(steps: &str) -> Lesson {
    service_lesson("etcd", "lock/x", steps)
}

/// Play `lesson` on a fresh cluster at 10×, keeping the environment for a
/// look at the cluster afterwards.
fn play(lesson: &Lesson) -> (EtcdEnv, Vec<StepResult>) {
    require_etcd();
    let mut env = EtcdEnv::start(lesson, 10).unwrap_or_else(|e| panic!("etcd cluster: {e}"));
    let results = play_steps(lesson, &mut env);
    (env, results)
}

#[test]
fn lesson_43_plays_on_a_real_etcd_cluster_with_the_simulators_replies() {
    require_etcd();
    // The crash of the leader is a real SIGKILL, and the step says so.
    play_catalogue_lesson("43", 10, "etcd 3.", "SIGKILL to etcd1");
}

/// A's key goes with its lease, and the timeline says so: the run only
/// looks after a request, but B's `LOCK` answered after A's lease ran out
/// did not remove A's key (the timeline read "B's LOCK removed A's lock").
#[test]
fn a_key_whose_lease_ran_out_is_shown_expired_not_removed_by_the_next_request() {
    let (env, _) = play(&locklab_tests::lesson("43"));
    let removals: Vec<&EventKind> = env
        .events()
        .iter()
        .map(|e| &e.kind)
        .filter(|k| {
            matches!(
                k,
                EventKind::Lock {
                    change: LockChange::Removed { .. },
                    ..
                }
            )
        })
        .collect();
    // A's key went with its lease; B's went with B's own UNLOCK.
    let expired = EventKind::Lock {
        key: "lock/order/1001".into(),
        change: LockChange::Removed { by: None },
        via: Via::Expiry,
    };
    let unlocked = EventKind::Lock {
        key: "lock/order/1001".into(),
        change: LockChange::Removed { by: Some(1) },
        via: Via::Command,
    };
    assert_eq!(removals, [&expired, &unlocked]);
}

/// Two holders' band lasts while both believe they hold, as in the
/// simulator: each time the run looks, the violation's grown copy goes on
/// the timeline (it was sent once, at its start, and drawn 4 px wide).
#[test]
fn an_overlap_on_a_lock_service_grows_while_it_lasts() {
    let (env, _) = play(&locklab_tests::lesson("43"));
    let copies: Vec<(u64, u64)> = (env.events().iter())
        .filter_map(|e| match &e.kind {
            EventKind::Violation { violation } if violation.invariant == Invariant::Overlap => {
                Some((violation.from_ms, violation.to_ms))
            }
            _ => None,
        })
        .collect();
    let (from, to) = *copies.last().expect("two holders");
    assert!(copies.len() > 2, "sent again as it grew: {copies:?}");
    assert!(
        copies.iter().all(|&(f, _)| f == from),
        "one overlap, growing: {copies:?}"
    );
    assert!(
        to >= from + 2000,
        "A and B both hold for seconds of the lesson: {copies:?}"
    );
}

/// The same lesson from the page: the browser's real driver starts the
/// cluster and plays it step by step, judged as the CLI's run is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lesson_43_plays_from_the_browsers_real_driver() {
    require_etcd();
    play_over_the_api("43", 10, "etcd3", "etcd 3.").await;
}

/// B's `LOCK` queues behind A's key and is answered only once A's lease
/// (10 s of lesson time) has run out on the leader, with the next create
/// revision; and the ids, keys and revisions read as the simulator's.
#[test]
fn a_lock_waiting_behind_another_is_answered_when_the_holders_lease_expires() {
    let l = etcd_lesson(
        r#"
[[steps]]
client = "A"
cmd = "LEASE GRANT 10"
expect = "(integer) 7001"
[[steps]]
client = "A"
cmd = "LOCK lock/x 7001"
expect = """
1) "lock/x/1b59"
2) (integer) 2"""
[[steps]]
client = "B"
cmd = "LEASE GRANT 60"
expect = "(integer) 7002"
[[steps]]
client = "B"
cmd = "LOCK lock/x 7002"
expect = """
1) "lock/x/1b5a"
2) (integer) 3"""
[[steps]]
client = "A"
cmd = "LEASE TIMETOLIVE 7001"
expect = "(integer) -1"
[[steps]]
client = "A"
cmd = "LOCK lock/x 7001"
expect = "(error) etcdserver: requested lease not found"
[[steps]]
client = "B"
cmd = "LEASE GRANT"
expect = "(error) lease grant command needs TTL argument"
"#,
    );
    let (_env, results) = play(&l);
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // Not before A's lease could have run out: 10 s after its grant.
    let granted_a = results[0].at_ms;
    assert!(
        results[3].at_ms >= granted_a + 10_000,
        "B got the lock at {} ms, A's lease was granted at {granted_a} ms",
        results[3].at_ms
    );
    let mismatched = same_replies_as_the_simulator(&l, &results);
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}

/// SIGKILL of the leader: the other two elect a new one, B's lock key is
/// still there, and its lease has its full TTL again.
#[test]
fn sigkill_of_the_leader_keeps_the_lock() {
    let l = etcd_lesson(
        r#"
[[steps]]
client = "B"
cmd = "LEASE GRANT 30"
expect = "(integer) 7001"
[[steps]]
client = "B"
cmd = "LOCK lock/x 7001"
expect = """
1) "lock/x/1b59"
2) (integer) 2"""
[[steps]]
wait_ms = 12000
[[steps]]
fault = { type = "crash_node", node = 0 }
[[steps]]
client = "B"
cmd = "GET lock/x/1b59"
expect = '""'
[[steps]]
client = "B"
cmd = "LEASE TIMETOLIVE 7001"
expect = "(integer) 30"
"#,
    );
    let (mut env, results) = play(&l);
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}\n{:?}", env.notes());
    assert!(!env.driver().is_up(0), "etcd1 was killed");
    let leader = env.leader().expect("a new leader");
    assert_ne!(leader, 0, "etcd1 is dead; etcd2 or etcd3 leads");
    let mismatched = same_replies_as_the_simulator(&l, &results);
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}

/// A waiter whose own lease runs out while it waits gets `mutex: session
/// is expired`, on the real cluster as in the simulator.
#[test]
fn a_waiter_whose_own_lease_expires_gets_session_expired() {
    let l = etcd_lesson(
        r#"
[[steps]]
client = "A"
cmd = "LEASE GRANT 30"
[[steps]]
client = "A"
cmd = "LOCK lock/x 7001"
[[steps]]
client = "B"
cmd = "LEASE GRANT 10"
[[steps]]
client = "B"
cmd = "LOCK lock/x 7002"
expect = "(error) mutex: session is expired"
"#,
    );
    let (_env, results) = play(&l);
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    let mismatched = same_replies_as_the_simulator(&l, &results);
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}
