//! `/api/session` and `/api/real/health`, driven over a real WebSocket
//! (tokio-tungstenite) against the backend's router on a loopback port.

use std::time::Duration;

use futures_util::StreamExt;
use locklab_backend::web::api::ApiState;
use locklab_core::protocol::{ClientMsg, Health};
use locklab_tests::RedisServer;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use locklab_tests::ws::{send, send_msg, serve, until, Ws};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_session_streams_events_and_replies() {
    let server = RedisServer::start();
    let addr = serve(ApiState::new(Some(server.url()))).await;

    let health: Health = serde_json::from_value(locklab_tests::ws::get_json(addr, "/api/real/health").await).unwrap();
    assert!(health.reachable);
    assert_eq!(health.version.as_deref(), Some("7.0.15"));
    assert_eq!(health.topology, locklab_core::protocol::Backing::External);
    assert!(!health.lessons.is_empty());

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET k v NX PX 100000"}),
    )
    .await;
    let got = until(&mut ws, "reply").await;
    assert!(
        got.iter().any(|m| m["type"] == "hello" && m["topology"] == "external"),
        "{got:?}"
    );
    let kinds: Vec<&str> = got
        .iter()
        .filter(|m| m["type"] == "event")
        .map(|m| m["event"]["kind"]["type"].as_str().unwrap())
        .collect();
    // SET … NX answered OK: a lock taken, observed on the server.
    assert_eq!(kinds, ["sent", "executed", "received", "lock"], "{got:?}");
    assert_eq!(got.last().unwrap(), &json!({"type":"reply","client":"A","text":"OK"}));

    send(&mut ws, json!({"type":"command","client":"B","line":"SET k w NX"})).await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "(nil)");
    // Rendered for the command, as redis-cli does: INFO is raw text.
    send(&mut ws, json!({"type":"command","client":"B","line":"INFO server"})).await;
    let info = until(&mut ws, "reply").await.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(info.lines().next(), Some("# Server"), "{info}");
    assert!(info.contains("redis_version:7.0.15"), "{info}");
    send(&mut ws, json!({"type":"command","client":"B","line":"FLUSHALL"})).await;
    let text = until(&mut ws, "reply").await.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("(error) ERR locklab: 'FLUSHALL' is not allowed"),
        "{text}"
    );
    // redis-cli's repeat prefix, as the simulator's console has it.
    send(&mut ws, json!({"type":"command","client":"B","line":"3 INCR n"})).await;
    let got = until(&mut ws, "reply").await;
    assert_eq!(got.last().unwrap()["text"], "(integer) 1\n(integer) 2\n(integer) 3");
    assert_eq!(
        got.iter().filter(|m| m["event"]["kind"]["type"] == "sent").count(),
        3,
        "{got:?}"
    );
    send(&mut ws, json!({"type":"command","client":"B","line":"0 INCR n"})).await;
    assert_eq!(
        until(&mut ws, "reply").await.last().unwrap()["text"],
        "Invalid redis-cli repeat command option value."
    );
    send(&mut ws, json!({"type":"command","client":"B","line":"SET k \"open"})).await;
    assert_eq!(
        until(&mut ws, "reply").await.last().unwrap()["text"],
        "(error) ERR locklab: Invalid argument(s)"
    );

    // The user's own server: faults refused.
    send(&mut ws, json!({"type":"fault","fault":"crash","node":0})).await;
    let m = until(&mut ws, "error").await;
    assert!(m.last().unwrap()["message"].as_str().unwrap().contains("never kills"));
    send(&mut ws, json!({"type":"nonsense"})).await;
    until(&mut ws, "error").await;
    // A lesson sent whole that is not one (an unknown field; a long title
    // and nothing else): an error each, and the socket stays usable.
    send(&mut ws, json!({"type":"lesson","id":"00","lesson":{"bogus":1}})).await;
    until(&mut ws, "error").await;
    send(
        &mut ws,
        json!({"type":"lesson","id":"00","lesson":{"id":"00","title":"x".repeat(30_000)}}),
    )
    .await;
    until(&mut ws, "error").await;
    send(&mut ws, json!({"type":"command","client":"A","line":"PING","node":0})).await;
    let after = until(&mut ws, "reply").await;
    assert_eq!(after.last().unwrap()["text"], "PONG", "{after:?}");
    // What the protocol does not declare is refused with the choices there are.
    send(&mut ws, json!({"type":"topology","kind":"ring7"})).await;
    assert_eq!(
        until(&mut ws, "error").await.last().unwrap()["message"],
        "unknown topology \"ring7\": single, replicated, redlock5, cluster3 or sentinel"
    );
    send(&mut ws, json!({"type":"fault","fault":"unplug","node":0})).await;
    assert!(until(&mut ws, "error").await.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .starts_with("unknown fault \"unplug\": pause, resume"));
    // A typed message, as the page and `cli --via` send them.
    send_msg(
        &mut ws,
        &ClientMsg::Command {
            client: "A".into(),
            line: "3 INCR typed:n".into(),
            node: 0,
        },
    )
    .await;
    assert_eq!(
        until(&mut ws, "reply").await.last().unwrap()["text"],
        "(integer) 1\n(integer) 2\n(integer) 3"
    );
    ws.close(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_managed_topology_and_faults() {
    let addr = serve(ApiState::new(None)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    send(&mut ws, json!({"type":"topology","kind":"replicated"})).await;
    let hello = until(&mut ws, "hello").await.pop().unwrap();
    assert_eq!(hello["topology"], "replicated");
    assert_eq!(hello["nodes"].as_array().unwrap().len(), 2);
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET lock A","node":0}),
    )
    .await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "OK");
    send(&mut ws, json!({"type":"fault","fault":"promote","node":1})).await;
    let got = until(&mut ws, "topology").await;
    assert!(
        got.iter()
            .any(|m| m["type"] == "event" && m["event"]["actor"] == "world"),
        "{got:?}"
    );
    assert_eq!(got.last().unwrap()["nodes"][1]["role"], "master");
    send(
        &mut ws,
        json!({"type":"command","client":"B","line":"SET lock B","node":1}),
    )
    .await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "OK");
    ws.close(None).await.unwrap();
}

/// Issue 18: a user who picked the `sentinel` topology plays lesson 15 on
/// it (a master and a replica): its failover is Sentinel's, the step says
/// so, and the lesson still ends with two holders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_on_the_sentinel_topology_is_failed_over_by_sentinel() {
    let addr = serve(ApiState::new(None)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    send(&mut ws, json!({"type":"topology","kind":"sentinel"})).await;
    let hello = until(&mut ws, "hello").await.pop().unwrap();
    assert_eq!(hello["topology"], "sentinel");
    send(&mut ws, json!({"type":"lesson","id":"15","factor":100})).await;
    let lesson = until(&mut ws, "lesson").await.pop().unwrap();
    let mut notes = Vec::new();
    for _ in 0..lesson["steps"].as_u64().unwrap() {
        send(&mut ws, json!({"type":"lesson_step"})).await;
        let step = until(&mut ws, "step").await.pop().unwrap();
        assert_eq!(step["result"]["ok"], true, "{step}");
        notes.extend(step["note"].as_str().map(str::to_owned));
    }
    let done = until(&mut ws, "lesson_done").await.pop().unwrap();
    assert_eq!(done["passed"], true, "{done}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("Sentinel saw it down and promoted replica")),
        "{notes:?}"
    );
    ws.close(None).await.unwrap();
}

/// A whole lesson over the WebSocket: the `lesson` message, then per step
/// every message up to its `step` (events first), then `lesson_done`.
struct Played {
    hello: Value,
    lesson: Value,
    steps: Vec<Vec<Value>>,
    done: Value,
}

impl Played {
    fn results(&self) -> Vec<&Value> {
        self.steps.iter().map(|m| &m.last().unwrap()["result"]).collect()
    }

    fn replies(&self) -> Vec<Value> {
        self.results().iter().map(|r| r["reply"].clone()).collect()
    }

    fn events(&self) -> Vec<&Value> {
        self.steps
            .iter()
            .flatten()
            .filter(|m| m["type"] == "event")
            .map(|m| &m["event"])
            .collect()
    }
}

async fn play(ws: &mut Ws, id: &str) -> Played {
    play_at(ws, json!({"type":"lesson","id":id})).await
}

async fn play_at(ws: &mut Ws, start: Value) -> Played {
    send(ws, start).await;
    let got = until(ws, "lesson").await;
    let hello = got
        .iter()
        .find(|m| m["type"] == "hello")
        .cloned()
        .unwrap_or_else(|| panic!("no hello: {got:?}"));
    let lesson = got.last().unwrap().clone();
    let n = lesson["steps"].as_u64().unwrap_or_else(|| panic!("{lesson}"));
    let mut steps = Vec::new();
    for i in 0..n {
        send(ws, json!({"type":"lesson_step"})).await;
        let msgs = until(ws, "step").await;
        assert!(
            msgs.iter().all(|m| m["type"] == "event" || m["type"] == "step"),
            "step {}: {msgs:?}",
            i + 1
        );
        steps.push(msgs);
    }
    let done = until(ws, "lesson_done").await.pop().unwrap();
    Played {
        hello,
        lesson,
        steps,
        done,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lessons_play_step_by_step_over_the_websocket() {
    let server = RedisServer::start();
    let addr = serve(ApiState::new(Some(server.url()))).await;

    let health = locklab_tests::ws::get_json(addr, "/api/health").await;
    let lessons: Vec<&str> = health["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(lessons.contains(&"05") && !lessons.contains(&"15"), "{health}");
    assert!(
        health["unsupported"]["15"].as_str().unwrap().contains("replicated"),
        "{health}"
    );
    assert!(health["unsupported"]["20"].is_string(), "{health}");
    assert_eq!(
        locklab_tests::ws::get_json(addr, "/api/real/health").await["lessons"],
        health["lessons"]
    );

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    send(&mut ws, json!({"type":"lesson_step"})).await;
    assert!(until(&mut ws, "error").await.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("no lesson"));

    let first = play(&mut ws, "05").await;
    assert_eq!(first.lesson["id"], "05");
    assert_eq!(first.lesson["server_version"], "7.0.15");
    assert_eq!(first.lesson["factor"], 100);
    assert_eq!(first.lesson["topology"], "single");
    assert_eq!(first.lesson["names"]["clients"], json!(["A", "B", "C"]));
    assert!(first.lesson["notice"].is_null());
    for r in first.results() {
        assert_eq!(r["ok"], true, "{r}");
    }
    assert_eq!(first.done, json!({"type":"lesson_done","passed":true}));
    // The first step's TTL was compressed, and the note says so.
    assert!(
        first.steps[0].last().unwrap()["note"]
            .as_str()
            .unwrap()
            .contains("PX 300"),
        "{:?}",
        first.steps[0]
    );
    // Lock events, as the simulator's trace has them: A's lock acquired by
    // a command, removed by expiry, B's acquired, B's removed by A's DEL.
    let locks: Vec<(&str, &str)> = first
        .events()
        .iter()
        .filter(|e| e["kind"]["type"] == "lock")
        .map(|e| {
            (
                e["kind"]["change"]["change"].as_str().unwrap(),
                e["kind"]["via"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(locks.contains(&("acquired", "command")), "{locks:?}");
    assert!(locks.contains(&("removed", "expiry")), "{locks:?}");
    assert!(locks.contains(&("removed", "command")), "{locks:?}");
    assert!(first.events().iter().any(|e| e["kind"]["type"] == "executed"));
    // trace_len counts the events sent so far, as the simulator's does.
    let last = first.results().last().unwrap()["trace_len"].as_u64().unwrap();
    assert_eq!(last as usize, first.events().len());
    // Lesson time: after the 31 000 ms wait, the axis is past 31 s.
    let after_wait = first.results().iter().find(|r| r["shown"] == "wait 31000 ms").unwrap()["at_ms"]
        .as_u64()
        .unwrap();
    assert!(after_wait >= 31_000, "{after_wait}");

    send(&mut ws, json!({"type":"lesson_step"})).await;
    assert!(until(&mut ws, "error").await.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("finished"));
    // Off script on the run's session: lesson 05 ends with C releasing
    // its lock (issue 17: B and C act inside before they let go).
    send(
        &mut ws,
        json!({"type":"command","client":"C","line":"EXISTS lock:order:1"}),
    )
    .await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "(integer) 0");

    // Again: a fresh session, the same replies.
    let second = play(&mut ws, "05").await;
    assert_ne!(first.hello["prefix"], second.hello["prefix"]);
    assert_eq!(first.replies(), second.replies());
    assert_eq!(second.done["passed"], true);

    // Lesson 08 on 7.0: the DELEX notice.
    send(&mut ws, json!({"type":"lesson","id":"08"})).await;
    let l = until(&mut ws, "lesson").await.pop().unwrap();
    assert!(
        l["notice"]
            .as_str()
            .unwrap()
            .contains("DELEX needs Redis 8.4; this server is 7.0.15"),
        "{l}"
    );

    // Refusals: the lesson's own reason, in either language; a topology
    // the user's server cannot be; bad input.
    // (No catalogue lesson is simulator-only now; a counterexample that
    // says so is refused with its own words.)
    let mut sim_only = locklab_tests::lesson("05");
    sim_only.id = "00".into();
    let why = locklab_core::lesson::Bilingual {
        zh: "这个反例只在模拟器上成立".into(),
        en: "this counterexample holds on the simulator only".into(),
    };
    sim_only.real = locklab_core::lesson::RealRun::No { why: why.clone() };
    send(&mut ws, json!({"type":"lesson","id":"00","lesson":sim_only.worded()})).await;
    let m = until(&mut ws, "error").await.pop().unwrap();
    assert_eq!(
        m["message"],
        format!("lesson 00 cannot run on a real server: {}", why.en)
    );
    send(
        &mut ws,
        json!({"type":"lesson","id":"00","lesson":sim_only.worded(),"lang":"zh"}),
    )
    .await;
    let m = until(&mut ws, "error").await.pop().unwrap();
    assert_eq!(
        m["message"],
        format!("lesson 00 cannot run on a real server: {}", why.zh)
    );
    send(&mut ws, json!({"type":"lesson","id":"15"})).await;
    assert!(until(&mut ws, "error").await.pop().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("replicated"));
    // 51 jumps the server's own clock: never the user's server's.
    send(&mut ws, json!({"type":"lesson","id":"51"})).await;
    let refused = until(&mut ws, "error").await.pop().unwrap();
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("never faults your own server"),
        "{refused}"
    );
    send(&mut ws, json!({"type":"lesson","id":"99"})).await;
    assert!(until(&mut ws, "error").await.pop().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("99"));
    send(&mut ws, json!({"type":"lesson","id":"05","factor":0})).await;
    assert!(until(&mut ws, "error").await.pop().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("factor"));
    send(&mut ws, json!({"type":"lesson_step"})).await;
    assert!(until(&mut ws, "error").await.pop().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("no lesson"));
    ws.close(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicated_lesson_replays_on_a_reset_managed_topology() {
    let addr = serve(ApiState::new(None)).await;
    let health = locklab_tests::ws::get_json(addr, "/api/health").await;
    let lessons: Vec<&str> = health["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // 20 since the clock-shift preload: one node's clock jumps for real;
    // 42 since its slow link goes through the session's delaying proxy.
    // 18 since its slow node is the delaying proxy and its race concurrent
    // programs: every lesson of the catalogue plays on real servers.
    for id in [
        "05", "15", "16", "17", "18", "19", "20", "21", "25", "26", "27", "31", "42",
    ] {
        assert!(lessons.contains(&id), "{id}: {health}");
    }
    // Every lesson of the catalogue plays on managed servers: 49's Redis
    // 8.4 `SET … IFEQ` and `DELEX` go to 7.0.15 as the Lua they stand for,
    // 51's wall-clock jump moves a managed server's clock (the preload).
    let unsupported: Vec<&str> = health["unsupported"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(unsupported, Vec::<&str>::new(), "{health}");
    let catalogue = locklab_core::lesson::builtin().unwrap();
    assert_eq!(lessons.len() + unsupported.len(), catalogue.len(), "{health}");

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    let first = play(&mut ws, "15").await;
    assert_eq!(first.lesson["topology"], "replicated");
    assert_eq!(first.lesson["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(first.done["passed"], true, "{:?}", first.results());
    assert!(first.events().iter().any(|e| e["kind"]["type"] == "fault"));
    assert!(first
        .events()
        .iter()
        .any(|e| e["kind"]["type"] == "overlap" && e["kind"]["begin"] == true));
    // The failover crashed the master and promoted the replica; a re-run
    // gets them back as they were, on the same ports.
    let second = play(&mut ws, "15").await;
    assert_eq!(first.lesson["nodes"][0]["port"], second.lesson["nodes"][0]["port"]);
    assert_eq!(second.lesson["nodes"][1]["role"], "replica");
    assert_eq!(second.lesson["nodes"][0]["state"], "up");
    assert_eq!(first.replies(), second.replies());
    assert_eq!(second.done["passed"], true, "{:?}", second.results());

    // Redlock on five real masters (10×: see real_lesson::default_factor),
    // three of which the lesson crashes; then again on the reset topology.
    let redlock = play_at(&mut ws, json!({"type":"lesson","id":"17","factor":10})).await;
    assert_eq!(redlock.lesson["topology"], "redlock5");
    assert_eq!(redlock.lesson["names"]["nodes"], json!(["r1", "r2", "r3", "r4", "r5"]));
    assert_eq!(redlock.done["passed"], true, "{:?}", redlock.results());
    assert!(
        redlock.events().iter().any(|e| e["kind"]["type"] == "granted"),
        "a majority grant"
    );
    // Without a factor, a Redlock lesson gets its own default of 10×.
    let again = play(&mut ws, "17").await;
    assert_eq!(again.lesson["factor"], 10);
    assert_eq!(again.done["passed"], true, "{:?}", again.results());

    // A background program runs on between steps: start A's Redlock
    // (step 2, background, 3 s of work) and send nothing more; its release
    // arrives on its own.
    send(&mut ws, json!({"type":"lesson","id":"17","factor":10})).await;
    until(&mut ws, "lesson").await;
    for _ in 0..2 {
        send(&mut ws, json!({"type":"lesson_step"})).await;
        until(&mut ws, "step").await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut removed = 0;
    while removed < 5 {
        assert!(std::time::Instant::now() < deadline, "A's release never came");
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("event in time")
            .unwrap()
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(&t).unwrap();
        assert_eq!(v["type"], "event", "{v}");
        if v["event"]["kind"]["type"] == "lock" && v["event"]["kind"]["change"]["change"] == "removed" {
            assert_eq!(v["event"]["kind"]["change"]["by"], 0, "removed by A: {v}");
            removed += 1;
        }
    }
    ws.close(None).await.unwrap();
}

/// Lesson 31 over the WebSocket on a real three-master cluster, then the
/// console on the same cluster: keys keep their hash slots (no prefix on
/// the lab's own cluster), a keyed command goes to the node serving its
/// slot, and the dangerous commands are still refused, in a script too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_lesson_and_console_on_a_real_cluster() {
    let addr = serve(ApiState::new(None)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    let played = play(&mut ws, "31").await;
    assert_eq!(played.lesson["topology"], "cluster3");
    assert_eq!(played.lesson["names"]["nodes"], json!(["c1", "c2", "c3"]));
    assert_eq!(
        played.hello["prefix"], "",
        "the lab's own cluster keeps the keys as typed"
    );
    assert_eq!(played.done["passed"], true, "{:?}", played.results());
    let replies: Vec<String> = played
        .results()
        .iter()
        .filter_map(|r| r["reply"].as_str().map(str::to_owned))
        .collect();
    assert!(
        replies
            .iter()
            .any(|r| r == "(error) CROSSSLOT Keys in request don't hash to the same slot"),
        "{replies:?}"
    );
    assert!(
        replies
            .iter()
            .any(|r| r.starts_with("(error) ERR Script attempted to access a non local key")),
        "{replies:?}"
    );

    // foo is in slot 12182, served by c3: asked of c1, it goes to c3.
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET foo bar","node":0}),
    )
    .await;
    let got = until(&mut ws, "reply").await;
    assert_eq!(got.last().unwrap()["text"], "OK");
    let executed = got.iter().find(|m| m["event"]["kind"]["type"] == "executed").unwrap();
    assert_eq!(executed["event"]["actor"], json!({"node": 2}), "{got:?}");
    assert!(
        got.iter().any(|m| m["event"]["kind"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("routed to c3"))),
        "{got:?}"
    );
    send(&mut ws, json!({"type":"command","client":"A","line":"FLUSHALL"})).await;
    let text = until(&mut ws, "reply").await.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("(error) ERR locklab: 'FLUSHALL' is not allowed"),
        "{text}"
    );
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"EVAL \"return redis.call('FLUSHALL')\" 0"}),
    )
    .await;
    let text = until(&mut ws, "reply").await.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("can't run this command"), "{text}");
    send(
        &mut ws,
        json!({"type":"command","client":"B","line":"GET foo","node":1}),
    )
    .await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "\"bar\"");
    ws.close(None).await.unwrap();
}

/// Free play on the real driver has lock bars, as the simulator's console
/// does: a `SET … NX` that answers OK is a lock taken, a `DEL` of it ends
/// it at once, and an expiry ends it on its own, without anyone typing.
/// During a lesson run, an off-script command that removes the lesson's
/// lock shows at once, not at the next step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_lines_get_lock_events_in_free_play_and_during_a_run() {
    let server = RedisServer::start();
    let addr = serve(ApiState::new(Some(server.url()))).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap();
    let lock_events = |got: &[Value]| -> Vec<String> {
        got.iter()
            .filter(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "lock")
            .map(|m| {
                let k = &m["event"]["kind"];
                format!(
                    "{} {} {}",
                    k["key"].as_str().unwrap(),
                    k["change"]["change"].as_str().unwrap(),
                    k["via"].as_str().unwrap()
                )
            })
            .collect()
    };
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET lock A NX PX 60000"}),
    )
    .await;
    let got = until(&mut ws, "reply").await;
    assert_eq!(lock_events(&got), ["lock acquired command"], "{got:?}");
    // A read does not change it; a DEL by B ends it, by B.
    send(&mut ws, json!({"type":"command","client":"B","line":"GET lock"})).await;
    assert!(lock_events(&until(&mut ws, "reply").await).is_empty());
    send(&mut ws, json!({"type":"command","client":"B","line":"DEL lock"})).await;
    let got = until(&mut ws, "reply").await;
    assert_eq!(lock_events(&got), ["lock removed command"], "{got:?}");
    let removed = got.iter().find(|m| m["event"]["kind"]["type"] == "lock").unwrap();
    assert_eq!(removed["event"]["kind"]["change"]["by"], 1, "B is client 1: {removed}");

    // Expiry with nobody typing: the backend looks when the TTL runs out.
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET lock2 A NX PX 200"}),
    )
    .await;
    assert_eq!(lock_events(&until(&mut ws, "reply").await), ["lock2 acquired command"]);
    let got = until(&mut ws, "event").await;
    assert_eq!(lock_events(&got), ["lock2 removed expiry"], "{got:?}");

    // A lesson run: lesson 07's lock, deleted off script by B.
    send(&mut ws, json!({"type":"lesson","id":"07","factor":1})).await;
    until(&mut ws, "lesson").await;
    for _ in 0..3 {
        send(&mut ws, json!({"type":"lesson_step"})).await;
        until(&mut ws, "step").await;
    }
    send(
        &mut ws,
        json!({"type":"command","client":"B","line":"DEL lock:order:1001"}),
    )
    .await;
    let got = until(&mut ws, "reply").await;
    assert_eq!(got.last().unwrap()["text"], "(integer) 1");
    assert_eq!(lock_events(&got), ["lock:order:1001 removed command"], "{got:?}");
    ws.close(None).await.unwrap();
}
