use super::*;
use crate::catalog;
use serde_json::json;

fn open() -> RealDriver {
    let mut d = RealDriver::new(Lang::En);
    d.opened();
    d.receive(r#"{"type":"hello","session":"s1","prefix":"lab:s1:","topology":"single","nodes":[{"name":"redis","url":"redis://127.0.0.1:7001","port":7001,"role":"master","state":"up"}],"names":{"clients":[],"nodes":["redis"]}}"#);
    d
}

fn step_json(index: usize, reply: &str, ok: bool) -> String {
    json!({ "type": "step", "result": {
        "index": index, "actor": "A", "shown": format!("cmd {index}"), "reply": reply,
        "expected": reply, "ok": ok, "at_ms": 100 * index as u64, "trace_len": index + 1 },
        "note": if index == 0 { json!("PX 30000 sent as PX 300 (time ÷100)") } else { json!(null) } })
    .to_string()
}

#[test]
fn a_lesson_is_started_then_its_steps_are_asked_back_to_back() {
    let mut d = open();
    let l = catalog::find("01").unwrap();
    d.start_lesson(l);
    let out = d.take_outbox();
    assert_eq!(out.len(), 1);
    assert!(
        out[0].contains(r#""type":"lesson""#) && out[0].contains(r#""id":"01""#),
        "{out:?}"
    );
    assert!(out[0].contains(r#""factor":1"#), "real time unless asked: {out:?}");
    // Asking before the backend accepted queues the wish.
    assert!(d.forward());
    assert!(d.take_outbox().is_empty());
    assert!(d.is_busy());
    d.receive(
        &json!({"type":"lesson","id":"01","steps":l.steps.len(),"server_version":"7.0.15","factor":100,
        "topology":"single","nodes":[],"names":{"clients":["A","B"],"nodes":["redis"]},"notice":null})
        .to_string(),
    );
    assert_eq!(d.take_outbox(), vec![r#"{"type":"lesson_step"}"#.to_owned()]);
    // A second forward while the first is in flight is asked at once:
    // the backend plays the steps back to back, not a page round trip
    // apart (on real servers that gap would be part of the run).
    d.forward();
    assert_eq!(d.take_outbox(), vec![r#"{"type":"lesson_step"}"#.to_owned()]);
    assert!(d.is_busy());
    d.receive(&step_json(0, "OK", true));
    assert_eq!(d.position(), 1);
    assert_eq!(d.step_note(0).as_deref(), Some("PX 30000 sent as PX 300 (time ÷100)"));
    assert!(d.take_outbox().is_empty());
    d.receive(&step_json(1, "(nil)", true));
    assert_eq!(d.position(), 2);
    assert!(d.take_outbox().is_empty());
    assert!(!d.is_busy());
    assert_eq!(d.run_info(), Some(("7.0.15".to_owned(), 100)));
}

#[test]
fn stepping_back_restarts_on_the_backend_and_replays_to_the_step() {
    let mut d = open();
    let l = catalog::find("01").unwrap();
    d.start_lesson(l);
    d.receive(
        &json!({"type":"lesson","id":"01","steps":3,"names":{"clients":["A"],"nodes":["redis"]},"notice":"n"})
            .to_string(),
    );
    d.goto(2);
    d.receive(&step_json(0, "OK", true));
    d.receive(&step_json(1, "OK", true));
    d.take_outbox();
    d.back();
    assert_eq!(d.position(), 0, "results are cleared until the replay arrives");
    let out = d.take_outbox();
    assert_eq!(out.len(), 1);
    assert!(out[0].contains(r#""type":"lesson""#));
    d.receive(
        &json!({"type":"lesson","id":"01","steps":3,"names":{"clients":["A"],"nodes":["redis"]},"notice":null})
            .to_string(),
    );
    assert_eq!(d.take_outbox(), vec![r#"{"type":"lesson_step"}"#.to_owned()]);
    d.receive(&step_json(0, "OK", true));
    assert_eq!(d.position(), 1);
    assert!(d.take_outbox().is_empty(), "one step back from 2 is 1");
}

#[test]
fn an_unsupported_lesson_shows_the_backends_reason() {
    let mut d = open();
    d.start_lesson(catalog::find("20").unwrap());
    d.take_outbox();
    d.receive(r#"{"type":"error","message":"lesson 20 cannot run on a real server: it needs a clock jump"}"#);
    assert!(d.error().unwrap().contains("clock jump"));
    assert!(!d.forward());
    assert!(!d.is_busy());
}

#[test]
fn typed_lines_get_their_replies_in_order_per_client() {
    let mut d = open();
    d.type_line("A", "SET k v NX");
    d.type_line("B", "GET k");
    d.type_line("A", "GET k");
    let out = d.take_outbox();
    assert_eq!(out.len(), 3);
    assert!(out[1].contains(r#""client":"B""#) && out[1].contains("GET k"));
    d.receive(r#"{"type":"reply","client":"A","text":"OK"}"#);
    d.receive(r#"{"type":"reply","client":"B","text":"\"v\""}"#);
    d.receive(r#"{"type":"reply","client":"A","text":"\"v\""}"#);
    let a: Vec<_> = d.free_transcript("A").into_iter().map(|e| e.output).collect();
    assert_eq!(a, ["OK", "\"v\""]);
    assert_eq!(d.free_transcript("B")[0].output, "\"v\"");
    assert_eq!(d.client_history("A"), ["SET k v NX", "GET k"]);
}

#[test]
fn losing_the_link_answers_what_was_waiting_and_reconnecting_replays_the_lesson() {
    let mut d = open();
    let l = catalog::find("01").unwrap();
    d.start_lesson(l);
    d.receive(
        &json!({"type":"lesson","id":"01","steps":3,"names":{"clients":["A"],"nodes":["redis"]},"notice":null})
            .to_string(),
    );
    d.goto(1);
    d.receive(&step_json(0, "OK", true));
    d.type_line("A", "GET k");
    d.take_outbox();
    d.lost("the lab backend went away".into());
    assert_eq!(d.problem().as_deref(), Some("the lab backend went away"));
    assert!(d.transcript(0).iter().any(|e| e.output.contains("lost")));
    // Offline: a line is answered at once, nothing is queued.
    d.type_line("A", "PING");
    assert!(d.take_outbox().is_empty());
    d.connecting();
    assert_eq!(d.attempt(), 1);
    d.opened();
    assert_eq!(d.problem(), None);
    let out = d.take_outbox();
    assert!(out[0].contains(r#""type":"lesson""#), "{out:?}");
    d.receive(
        &json!({"type":"lesson","id":"01","steps":3,"names":{"clients":["A"],"nodes":["redis"]},"notice":null})
            .to_string(),
    );
    assert_eq!(
        d.take_outbox(),
        vec![r#"{"type":"lesson_step"}"#.to_owned()],
        "played again to where the user was"
    );
}

#[test]
fn events_make_the_trace_and_unknown_messages_are_ignored() {
    let mut d = open();
    d.receive(
        r#"{"type":"event","event":{"step":0,"at_ms":5,"actor":{"client":0},"kind":{"type":"note","text":"hi"}}}"#,
    );
    d.receive(r#"{"type":"something_new","x":1}"#);
    assert_eq!(d.session_trace().events.len(), 1);
    assert_eq!(d.last_ms(), 5);
    assert_eq!(d.last_error, None);
    d.receive("not json");
    assert!(d.last_error.is_some());
}

#[test]
fn health_and_backoff() {
    let h = parse_health(
        r#"{"reachable":false,"version":null,"topology":"external","lessons":["01"],"error":"Connection refused"}"#,
    )
    .unwrap();
    assert!(h.is_external());
    let mut d = open();
    d.health_result(Ok(h));
    assert_eq!(d.problem().as_deref(), Some("Connection refused"));
    assert!(parse_health(r#"{"ok":true,"driver":"sim"}"#).is_ok_and(|h| !h.reachable));
    assert_eq!([0, 1, 2, 3, 9].map(reconnect_delay_ms), [500, 1000, 2000, 4000, 4000]);
}
