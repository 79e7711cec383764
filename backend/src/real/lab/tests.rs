//! The real lab's unit tests: a [`RealLab`] driven by messages, on
//! redis-servers the tests start.

use super::*;
use crate::real::process::RedisServer;
use serde_json::{json, Value};

/// The bound counts processes, not runs: two lessons on all four lock
/// services (ten processes each, six of them Java) fill it, where four
/// of them used to fit; what a run gives back on drop is its own count.
#[test]
fn managed_servers_are_bounded_by_the_processes_they_run() {
    let count = Arc::new(AtomicUsize::new(0));
    let all = service::processes(LockService::All);
    assert_eq!(all, 10);
    let first = Slot::take(&count, all).expect("the first");
    let second = Slot::take(&count, all).expect("the second");
    let refused = Slot::take(&count, Servers::processes(TopologyKind::Single)).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "too many managed servers running (20 processes of at most 20; this needs 1); close another lab tab"
    );
    drop(first);
    assert_eq!(count.load(Ordering::SeqCst), 10);
    let sentinel = Slot::take(&count, Servers::processes(TopologyKind::Sentinel)).expect("room for 5");
    assert_eq!(count.load(Ordering::SeqCst), 15);
    let zk = Slot::take(&count, service::processes(LockService::Zk)).expect("room for 3");
    assert!(Slot::take(&count, all).is_err(), "18 running: no room for 10");
    drop((second, sentinel, zk));
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

/// The answer as the socket would send it: one JSON value a message.
async fn answer(lab: &mut RealLab, msg: Value) -> Vec<Value> {
    let msg = ClientMsg::from_json(&msg.to_string()).expect("a valid message");
    let out = lab.handle(msg).await;
    assert!(!lab.is_over());
    out.iter().map(|m| serde_json::to_value(m).unwrap()).collect()
}

fn types(got: &[Value]) -> Vec<&str> {
    got.iter().map(|m| m["type"].as_str().unwrap()).collect()
}

fn lock_events(got: &[Value]) -> Vec<String> {
    got.iter()
        .filter(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "lock")
        .map(|m| {
            let k = &m["event"]["kind"];
            format!("{} {} {}", k["key"], k["change"]["change"], k["via"]).replace('"', "")
        })
        .collect()
}

/// Free play on a user's server, without a socket: the first line opens
/// the session (`hello`, then `names` for the new client), a key taken
/// with `NX` is watched (its lock event before the reply), a repeated
/// line is rendered as redis-cli renders it, and a lesson step with no
/// lesson is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_play_answers_console_lines_and_watches_locks() {
    let server = RedisServer::start();
    let labs = Labs::new(Some(server.url()), SessionLimits::default());
    let mut lab = RealLab::new(labs.clone());
    let got = answer(
        &mut lab,
        json!({"type":"command","client":"A","line":"SET lock A NX PX 60000"}),
    )
    .await;
    assert_eq!(types(&got)[..2], ["hello", "names"], "{got:?}");
    assert_eq!(got.last().unwrap(), &json!({"type":"reply","client":"A","text":"OK"}));
    assert_eq!(lock_events(&got), ["lock acquired command"], "{got:?}");
    assert_eq!(labs.live_sessions(), 1);

    let got = answer(&mut lab, json!({"type":"command","client":"B","line":"2 INCR n"})).await;
    assert_eq!(types(&got)[0], "names", "B is new: {got:?}");
    assert_eq!(got.last().unwrap()["text"], "(integer) 1\n(integer) 2");
    let got = answer(&mut lab, json!({"type":"command","client":"B","line":"DEL lock"})).await;
    assert_eq!(lock_events(&got), ["lock removed command"], "{got:?}");
    let got = answer(&mut lab, json!({"type":"command","client":"A","line":"SET \"k v"})).await;
    assert_eq!(
        got.last().unwrap()["text"],
        "(error) ERR locklab: Invalid argument(s)",
        "{got:?}"
    );

    let got = answer(&mut lab, json!({"type":"lesson_step"})).await;
    assert_eq!(types(&got), ["error"]);
    assert!(
        got[0]["message"].as_str().unwrap().contains("no lesson is running"),
        "{got:?}"
    );
    let got = answer(&mut lab, json!({"type":"topology","kind":"replicated"})).await;
    assert_eq!(types(&got), ["error"]);
    assert!(
        got[0]["message"].as_str().unwrap().contains("your own server"),
        "{got:?}"
    );
    lab.close().await;
    assert_eq!(labs.live_sessions(), 0);
    assert_eq!(labs.live_processes(), 0, "the user's server is not the lab's");
}

/// A lesson on a managed `single`, without a socket: the lab starts the
/// redis-server (one process of the shared count), opens a fresh
/// session (`hello`), announces the run (`lesson`), and a step answers
/// with its events and its `step`; closing the lab stops the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_starts_on_a_managed_single_and_steps() {
    let labs = Labs::new(None, SessionLimits::default());
    let mut lab = RealLab::new(labs.clone());
    let got = answer(&mut lab, json!({"type":"lesson","id":"5","factor":100})).await;
    assert_eq!(types(&got), ["hello", "lesson"], "{got:?}");
    let lesson = &got[1];
    assert_eq!(lesson["id"], "05");
    assert_eq!(lesson["topology"], "single");
    assert_eq!(lesson["server_version"], "7.0.15");
    assert_eq!(lesson["names"]["clients"], json!(["A", "B", "C"]));
    assert_eq!(labs.live_processes(), 1);
    assert_eq!(labs.live_sessions(), 1);

    let got = answer(&mut lab, json!({"type":"lesson_step"})).await;
    assert_eq!(types(&got).last(), Some(&"step"), "{got:?}");
    let step = &got.last().unwrap()["result"];
    assert_eq!(
        (step["index"].as_u64(), step["ok"].as_bool()),
        (Some(0), Some(true)),
        "{step}"
    );
    assert!(got
        .iter()
        .any(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "executed"));
    assert_eq!(lock_events(&got), ["lock:order:1 acquired command"], "{got:?}");

    let got = answer(&mut lab, json!({"type":"lesson","id":"05","factor":0})).await;
    assert_eq!(types(&got), ["error"]);
    assert!(got[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("factor 0 is out of range"));
    lab.close().await;
    assert_eq!(labs.live_processes(), 0);
    assert_eq!(labs.live_sessions(), 0);
}

/// Issue 41: a lock cycle down the socket's own path (its JSON read, the
/// lab, its JSON written) is measured in every stage `locklab bench`
/// prints, and counted as two commands; a stage left unmeasured fails
/// here. The release runs on the simulator with the lock watch's look
/// behind its writes: the lock's end is still seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_cycle_is_measured_in_every_stage() {
    use crate::real::stages::Stage;
    let server = RedisServer::start();
    let labs = Labs::new(Some(server.url()), SessionLimits::default());
    let mut lab = RealLab::new(labs.clone());
    let release = format!(
        "EVAL \"{}\" 1 lock tok",
        crate::cli::bench::RELEASE.replace('"', "\\\"")
    );
    let mut seen = Vec::new();
    for line in ["SET lock tok NX PX 10000", release.as_str()] {
        let text = json!({"type":"command","client":"A","line":line}).to_string();
        let msg = lab.read(&text).expect("a valid message");
        let out = lab.handle(msg).await;
        let frames = lab.encode(&out);
        assert_eq!(frames.len(), out.len());
        seen.extend(frames.iter().map(|f| serde_json::from_str::<Value>(f).unwrap()));
    }
    let replies: Vec<_> = seen
        .iter()
        .filter(|m| m["type"] == "reply")
        .map(|m| &m["text"])
        .collect();
    assert_eq!(replies, ["OK", "(integer) 1"], "{seen:?}");
    assert_eq!(
        lock_events(&seen),
        ["lock acquired command", "lock removed command"],
        "{seen:?}"
    );
    let stages = lab.stages();
    assert_eq!(stages.commands, 2, "{stages:?}");
    for st in Stage::ALL {
        assert!(stages.ns(st) > 0, "{} was not measured: {stages:?}", st.label());
    }
    lab.close().await;
}
