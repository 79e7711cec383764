//! Issue 19, item 4: a counterexample the explorer found on the simulator
//! is replayed on real redis-server (the lesson it becomes, on the managed
//! topology of its kind, faults as real faults, time compressed) and real
//! redis-server shows the same broken invariant.

use std::path::PathBuf;

use locklab_backend::real::play;
use locklab_core::explore::lesson::counterexample_lesson;
use locklab_core::explore::{designs, explore};

fn design(file: &str) -> locklab_core::explore::Spec {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../explore/designs")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    designs::parse(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn replay(file: &str) {
    let spec = design(file);
    let report = explore(&spec).expect("the search runs");
    let lesson = counterexample_lesson(&spec, &report).unwrap_or_else(|e| panic!("{file}: {e}"));
    // Real time (1×): the schedule the explorer found is milliseconds
    // apart, and a counterexample lasts seconds. A loaded machine can move
    // a real client by those milliseconds (a pause landing after the write
    // instead of before it), so the design must break on real Redis in one
    // of three runs, not in every one.
    let factor = 1;
    let mut transcripts = Vec::new();
    for _ in 0..3 {
        let real = play::run_managed(&lesson, factor).unwrap_or_else(|e| panic!("{file} on real redis-server: {e}"));
        if real.outcome == Some(true) {
            return;
        }
        transcripts.push(real.transcript(&lesson, locklab_core::lesson::Lang::En));
    }
    panic!(
        "{file}: real redis-server never showed {:?} as the simulator did, in 3 runs:\n{}",
        lesson.outcome.invariant,
        transcripts.join("\n")
    );
}

#[test]
fn the_gc_pause_counterexample_breaks_real_redis_on_one_node() {
    replay("04-no-fencing.toml");
}

#[test]
fn the_gc_pause_counterexample_breaks_real_redis_on_five_masters() {
    replay("07-redlock5-gc-pause.toml");
}

/// The page's way: the counterexample goes whole over the WebSocket (it is
/// not in the backend's catalogue) and plays on the managed topology; a
/// sent lesson that is not a counterexample, or would hold the session for
/// hours, is refused with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counterexample_sent_by_the_page_replays_on_real_redis() {
    use locklab_backend::web::api::ApiState;
    use locklab_core::protocol::ClientMsg;
    use locklab_tests::ws::{connect, send, send_msg, serve, until};

    let spec = design("04-no-fencing.toml");
    let report = explore(&spec).expect("the search runs");
    let lesson = counterexample_lesson(&spec, &report).expect("a counterexample lesson");
    let addr = serve(ApiState::new(None)).await;
    let mut ws = connect(addr).await;
    let sent = |lesson: locklab_core::lesson::Lesson| ClientMsg::Lesson {
        id: lesson.id.clone(),
        factor: Some(1),
        lang: None,
        lesson: Some(Box::new(lesson.worded())),
    };
    // Refused: a catalogue id sent whole, and waits adding up to hours.
    let mut not_ours = lesson.clone();
    not_ours.id = "05".into();
    send_msg(&mut ws, &sent(not_ours)).await;
    let error = until(&mut ws, "error").await.pop().unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("only a counterexample"),
        "{error}"
    );
    let mut endless = lesson.clone();
    endless.steps.extend(std::iter::repeat_n(
        locklab_core::lesson::Step {
            wait_ms: Some(3_600_000),
            ..Default::default()
        },
        2,
    ));
    send_msg(&mut ws, &sent(endless)).await;
    let error = until(&mut ws, "error").await.pop().unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("at most 600000 ms"),
        "{error}"
    );
    // Refused: a program the page passed on that does not decode (the
    // page keeps programs as JSON text; the backend is the one to read it).
    let mut with_program = lesson.clone();
    with_program.steps.push(locklab_core::lesson::Step {
        client: Some(lesson.actors[0].clone()),
        program: Some(locklab_core::client::Program::Commands(Default::default())),
        ..Default::default()
    });
    let at = with_program.steps.len() - 1;
    let mut garbled = serde_json::to_value(sent(with_program)).expect("a message");
    garbled["lesson"]["steps"][at]["program"]["program"] = r#"{"lock":{"key":7}}"#.into();
    send(&mut ws, garbled).await;
    let error = until(&mut ws, "error").await.pop().unwrap();
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("lesson 00, step {}: program: ", at + 1)),
        "{error}"
    );
    // Played.
    send_msg(&mut ws, &sent(lesson.clone())).await;
    let started = until(&mut ws, "lesson").await.pop().unwrap();
    assert_eq!(started["id"], "00");
    for _ in 0..started["steps"].as_u64().unwrap() {
        send_msg(&mut ws, &ClientMsg::LessonStep).await;
        until(&mut ws, "step").await;
    }
    let done = until(&mut ws, "lesson_done").await.pop().unwrap();
    assert_eq!(
        done["passed"], true,
        "real redis-server broke the design as the simulator did: {done}"
    );
}

#[test]
fn the_bare_del_counterexample_breaks_real_redis() {
    replay("01-bare-del.toml");
}
