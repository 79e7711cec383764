//! Lessons on a real three-server ZooKeeper ensemble (Debian's zookeeperd
//! 3.8), started by the runner on loopback ports: lesson 44 end to end,
//! and the two things it rests on — a paused client's session expires and
//! takes its ephemeral znode with it, and a leader that goes is replaced
//! by one in a larger epoch — each checked against the simulator's
//! replies for the same steps.
//!
//! Without zookeeperd (or java) these tests say so and skip; CI installs
//! it (scripts/test), and there a missing ensemble is a failure.

use locklab_backend::real::lesson::{self as real_lesson, RealReport};
use locklab_backend::real::lockservice::ensemble::{zookeeper_installed, ZK_NOT_FOUND};
use locklab_backend::real::lockservice::ZkEnv;
use locklab_core::lesson::run::{LessonRun, Progress, StepResult};
use locklab_core::lesson::{Lang, Lesson};

use locklab_tests::lesson;

/// Is there an ensemble to test on? A skip says why, except on CI.
fn have_zookeeper() -> bool {
    if zookeeper_installed() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{ZK_NOT_FOUND}");
    eprintln!("skipped: {ZK_NOT_FOUND}");
    false
}

/// A small ZooKeeper lesson around `steps` (TOML `[[steps]]` tables).
fn zk_lesson(steps: &str) -> Lesson {
    let text = format!(
        r#"id = "99"
theme = "fencing"
title = {{ zh = "测试", en = "test" }}
narration = {{ zh = "测试", en = "test" }}
source = {{ seed = "B", file = "x.txt", section = "7" }}
actors = ["A", "B"]
world = {{ service = "zk", fencing = true, locks = ["/locks/x"] }}
{steps}
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "测试", en = "test" }}
"#
    );
    Lesson::parse(&text).unwrap_or_else(|e| panic!("test lesson: {e}"))
}

/// Play `lesson` on a fresh ensemble at 5×, keeping the environment for a
/// look at the ensemble afterwards.
fn play(lesson: &Lesson) -> (ZkEnv, Vec<StepResult>) {
    let mut env = ZkEnv::start(lesson, 5).unwrap_or_else(|e| panic!("ZooKeeper ensemble: {e}"));
    let mut progress = Progress::new(lesson);
    while progress
        .step(&mut env)
        .unwrap_or_else(|e| panic!("lesson {}: {e}", lesson.id))
        .is_some()
    {}
    let results = progress.results().to_vec();
    (env, results)
}

/// Every step's reply is the simulator's.
fn same_replies_as_the_simulator(lesson: &Lesson, real: &[StepResult]) -> Vec<String> {
    let mut sim = LessonRun::new(lesson).expect("sim run");
    sim.run_all().expect("sim runs");
    assert_eq!(real.len(), sim.results().len(), "both ran every step");
    real.iter()
        .zip(sim.results())
        .filter(|(r, s)| r.reply != s.reply)
        .map(|(r, s)| format!("step {}: real {:?} vs sim {:?}", r.index + 1, r.reply, s.reply))
        .collect()
}

#[test]
fn lesson_44_plays_on_a_real_zookeeper_ensemble_with_the_simulators_replies() {
    if !have_zookeeper() {
        return;
    }
    let l = lesson("44");
    assert!(
        real_lesson::check_supported(&l).is_ok(),
        "44 is playable on the real driver"
    );
    assert_eq!(real_lesson::default_factor(&l), 5);
    let why = real_lesson::check_browser(&l, Lang::En).expect_err("the browser's driver speaks Redis only");
    assert!(why.contains("locklab lesson run 44 --real"), "{why}");
    let report: RealReport = real_lesson::run_managed(&l, 5).unwrap_or_else(|e| panic!("lesson 44: {e}"));
    let transcript = report.transcript(&l, Lang::En);
    assert!(report.passed(), "{transcript}");
    assert_eq!(
        report.outcome,
        Some(true),
        "two holders overlapped, as taught\n{transcript}"
    );
    assert!(
        report.server_version.starts_with("ZooKeeper 3."),
        "{}",
        report.server_version
    );
    let mismatched = same_replies_as_the_simulator(&l, &report.results);
    assert!(mismatched.is_empty(), "{transcript}\n{}", mismatched.join("\n"));
    // The partition of the leader is a real SIGSTOP, and the step says so.
    assert!(
        report.notes.values().any(|n| n.contains("SIGSTOP to zk1")),
        "{transcript}"
    );
}

/// A paused client sends no heartbeats: after its timeout the ensemble
/// expires its session and deletes its ephemeral znode (another client
/// sees it gone, and its watch fires), and the client's next request
/// learns `Session expired`.
#[test]
fn a_paused_clients_session_expires_and_its_ephemeral_node_goes() {
    if !have_zookeeper() {
        return;
    }
    let l = zk_lesson(
        r#"
[[steps]]
client = "A"
cmd = "SESSION 4000"
expect = "(integer) 4097"
[[steps]]
client = "A"
cmd = "CREATE /e '' EPHEMERAL"
expect = """
1) "/e"
2) (integer) 4294967297"""
[[steps]]
fault = { type = "pause_client", client = "A", ms = 20000 }
[[steps]]
client = "B"
cmd = "SESSION 30000"
expect = "(integer) 4098"
[[steps]]
client = "B"
cmd = "EXISTS /e WATCH"
expect = "(integer) 4294967297"
[[steps]]
wait_ms = 3000
[[steps]]
client = "B"
cmd = "EXISTS /e"
expect = "(integer) 4294967297"
[[steps]]
wait_ms = 2000
[[steps]]
client = "B"
cmd = "EXISTS /e"
expect = "(nil)"
[[steps]]
client = "A"
cmd = "GET /e"
expect = "(error) KeeperErrorCode = Session expired for /e"
"#,
    );
    let (env, results) = play(&l);
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}\n{:?}", env.notes());
    let mismatched = same_replies_as_the_simulator(&l, &results);
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
    let watched = env.events().iter().any(|e| {
        matches!(&e.kind, locklab_core::trace::EventKind::Note { text }
            if text == "WatchedEvent state:SyncConnected type:NodeDeleted path:/e")
    });
    assert!(watched, "B's watch fired when A's node was deleted");
}

/// SIGKILL of the leader: the other two elect a new one in a larger
/// epoch; B's session and its znode survive, and the next write's zxid is
/// the new epoch's first, larger than every earlier one.
#[test]
fn a_killed_leader_is_replaced_in_a_larger_epoch() {
    if !have_zookeeper() {
        return;
    }
    let l = zk_lesson(
        r#"
[[steps]]
client = "B"
cmd = "SESSION 30000"
[[steps]]
client = "B"
cmd = "CREATE /locks ''"
expect = """
1) "/locks"
2) (integer) 4294967297"""
[[steps]]
client = "B"
cmd = "SET /locks a"
expect = "(integer) 4294967298"
[[steps]]
fault = { type = "crash_node", node = 0 }
[[steps]]
client = "B"
cmd = "SET /locks b"
expect = "(integer) 8589934593"
[[steps]]
client = "B"
cmd = "GET /locks"
expect = '"b"'
"#,
    );
    let (mut env, results) = play(&l);
    let failed: Vec<&StepResult> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:#?}\n{:?}", env.notes());
    let mismatched = same_replies_as_the_simulator(&l, &results);
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
    assert!(env.driver().pid(0).is_none(), "zk1 was killed");
    let leader = env.leader().expect("a new leader");
    assert_ne!(leader, 0, "zk1 is dead; zk2 or zk3 leads");
    let zxid = env.driver_mut().leader_zxid().expect("the leader answers srvr");
    assert!(zxid >> 32 >= 2, "the new leader's epoch is larger: {zxid:#x}");
    assert!(
        env.notes()
            .values()
            .any(|n| n.contains("SIGKILL to zk1") && n.contains("epoch 2")),
        "{:?}",
        env.notes()
    );
}
