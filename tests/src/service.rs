//! Lessons on real lock services (etcd, ZooKeeper): a small lesson around
//! a few steps, playing one on a managed service, and the comparison every
//! such test ends with — the simulator's replies for the same steps.

use locklab_backend::real::lesson::{self as real_lesson, RealReport};
use locklab_backend::real::play;
use locklab_core::lesson::run::{Environment, LessonRun, Progress, StepResult};
use locklab_core::lesson::{Lang, Lesson};

/// A test lesson on `service` (`etcd`, `zk`) guarding `lock`, around
/// `steps` (TOML `[[steps]]` tables).
pub fn service_lesson(service: &str, lock: &str, steps: &str) -> Lesson {
    let text = format!(
        r#"id = "99"
theme = "fencing"
title = {{ zh = "测试", en = "test" }}
narration = {{ zh = "测试", en = "test" }}
source = {{ seed = "B", file = "x.txt", section = "7" }}
actors = ["A", "B"]
world = {{ service = "{service}", fencing = true, locks = ["{lock}"] }}
{steps}
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "测试", en = "test" }}
"#
    );
    Lesson::parse(&text).unwrap_or_else(|e| panic!("test lesson: {e}"))
}

/// Is there a ZooKeeper ensemble to test on? A skip says why, except on
/// CI, where scripts/test installed zookeeperd and a missing one fails.
pub fn have_zookeeper() -> bool {
    use locklab_backend::real::service::zk::ensemble::{zookeeper_installed, ZK_NOT_FOUND};
    if zookeeper_installed() {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "{ZK_NOT_FOUND}");
    eprintln!("skipped: {ZK_NOT_FOUND}");
    false
}

/// Every step of `lesson` on `env`; the steps' results.
pub fn play_steps(lesson: &Lesson, env: &mut impl Environment) -> Vec<StepResult> {
    let mut progress = Progress::new(lesson);
    while progress
        .step(env)
        .unwrap_or_else(|e| panic!("lesson {}: {e}", lesson.id))
        .is_some()
    {}
    progress.results().to_vec()
}

/// Every step whose reply differs from the simulator's, in words.
pub fn same_replies_as_the_simulator(lesson: &Lesson, real: &[StepResult]) -> Vec<String> {
    let mut sim = LessonRun::new(lesson).expect("sim run");
    sim.run_all().expect("sim runs");
    assert_eq!(real.len(), sim.results().len(), "both ran every step");
    real.iter()
        .zip(sim.results())
        .filter(|(r, s)| r.reply != s.reply)
        .map(|(r, s)| format!("step {}: real {:?} vs sim {:?}", r.index + 1, r.reply, s.reply))
        .collect()
}

/// Catalogue lesson `id` on a managed service at its default `factor`:
/// it passes with two holders as taught, on a server whose version starts
/// with `version`, with the simulator's replies, and a step's note says
/// `fault_note` (how the real fault was made). The report.
pub fn play_catalogue_lesson(id: &str, factor: u64, version: &str, fault_note: &str) -> RealReport {
    let l = crate::lesson(id);
    assert!(play::check_supported(&l).is_ok(), "{id} is playable on the real driver");
    assert_eq!(real_lesson::default_factor(&l), factor);
    let report = play::run_managed(&l, factor).unwrap_or_else(|e| panic!("lesson {id}: {e}"));
    let transcript = report.transcript(&l, Lang::En);
    assert!(report.passed(), "{transcript}");
    assert_eq!(
        report.outcome,
        Some(true),
        "two holders overlapped, as taught\n{transcript}"
    );
    assert!(report.server_version.starts_with(version), "{}", report.server_version);
    // The header names the service, never redis-server, in both languages.
    let header = |t: &str| t.lines().nth(1).unwrap_or_default().to_owned();
    assert!(
        header(&transcript).starts_with(&format!("real {version}")),
        "{transcript}"
    );
    let zh = report.transcript(&l, Lang::Zh);
    assert!(header(&zh).starts_with(&format!("真实 {version}")), "{zh}");
    let mismatched = same_replies_as_the_simulator(&l, &report.results);
    assert!(mismatched.is_empty(), "{transcript}\n{}", mismatched.join("\n"));
    assert!(report.notes.values().any(|n| n.contains(fault_note)), "{transcript}");
    report
}

/// Catalogue lesson `id` from the browser's real driver (`/api/session`)
/// at `factor`: health lists it as playable; its `lesson` message says it
/// plays on `served` (a server whose version starts with `version`), with
/// the service's members as lanes and no Redis nodes; every `lesson_step`
/// answers with the simulator's reply, with the run's events; the lesson
/// passes; a console line meanwhile is refused, since the run has no
/// Redis. And a backend on the user's own server (`--redis`) refuses the
/// lesson with the command that plays it.
pub async fn play_over_the_api(id: &str, factor: u64, served: &str, version: &str) {
    use crate::ws::{connect, get_json, send, serve, until};
    use locklab_backend::web::api::ApiState;
    use serde_json::json;

    let addr = serve(ApiState::new(None)).await;
    let health = get_json(addr, "/api/health").await;
    assert!(
        health["lessons"].as_array().is_some_and(|l| l.iter().any(|x| x == id)),
        "{health}"
    );
    let mut ws = connect(addr).await;
    send(&mut ws, json!({"type":"lesson","id":id,"factor":factor})).await;
    let start = until(&mut ws, "lesson").await.pop().unwrap();
    assert_eq!(start["topology"], served, "{start}");
    assert!(
        start["server_version"].as_str().is_some_and(|v| v.starts_with(version)),
        "{start}"
    );
    assert_eq!(start["nodes"], json!([]), "{start}");
    let lesson = crate::lesson(id);
    let mut sim = LessonRun::new(&lesson).expect("sim run");
    sim.run_all().expect("sim runs");
    let mut events = 0;
    for (i, expected) in sim.results().iter().enumerate() {
        send(&mut ws, json!({"type":"lesson_step"})).await;
        let got = until(&mut ws, "step").await;
        events += got.iter().filter(|m| m["type"] == "event").count();
        let result = &got.last().unwrap()["result"];
        assert_eq!(result["ok"], true, "step {}: {result}", i + 1);
        assert_eq!(
            result["reply"],
            serde_json::to_value(&expected.reply).unwrap(),
            "step {}",
            i + 1
        );
        if i == 0 {
            send(&mut ws, json!({"type":"command","client":"A","line":"GET k"})).await;
            let reply = until(&mut ws, "reply").await.pop().unwrap();
            assert!(
                reply["text"].as_str().is_some_and(|t| t.contains("does not type to")),
                "{reply}"
            );
        }
    }
    assert!(events > sim.results().len(), "the run's events came with its steps");
    let done = until(&mut ws, "lesson_done").await.pop().unwrap();
    assert_eq!(done["passed"], true);
    drop(ws);

    let external = serve(ApiState::new(Some("redis://127.0.0.1:1".into()))).await;
    let health = get_json(external, "/api/health").await;
    let why = health["unsupported"][id].as_str().unwrap_or_else(|| panic!("{health}"));
    assert!(why.contains(&format!("locklab lesson run {id} --real")), "{why}");
}
