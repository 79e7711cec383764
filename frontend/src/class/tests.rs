use locklab_core::class::{Answer, ClassClientMsg, ClassCode, Control, Position};

use super::*;

fn sent(c: &mut Class) -> Vec<ClassClientMsg> {
    c.take_outbox()
        .iter()
        .map(|f| serde_json::from_str(f).expect("a frame is a ClassClientMsg"))
        .collect()
}

fn at(lesson: &str, step: usize) -> Position {
    Position {
        lesson: Some(lesson.into()),
        step,
        seed: Some(1),
        ..Position::default()
    }
}

fn moved(id: &str, lesson: &str, step: usize) -> String {
    format!(r#"{{"type":"moved","id":"{id}","position":{{"lesson":"{lesson}","step":{step},"seed":1}}}}"#)
}

const HOME: &str = "ws://127.0.0.1:8080/api/class/ws";
const JOINED: &str =
    r#"{"type":"joined","member":"m7","name":"Ada","position":{"lesson":"05","step":1},"score":0,"since":"1-0"}"#;
const ASKED: &str = r#"{"type":"asked","id":"4-0","question":{"id":3,"lesson":"05","step":2,"choices":3}}"#;
const REVEALED: &str = r#"{"type":"revealed","id":"5-0","tally":{"question":3,"counts":[1,2,0],"answered":3,"of":3,"right":2},"right_choice":1}"#;

#[test]
fn backoff_is_one_two_four_then_at_most_fifteen_seconds() {
    assert_eq!(
        [1, 2, 3, 4, 5, 6, 40].map(rejoin_delay_ms),
        [1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000]
    );
    let mut c = Class::join(ClassCode::parse("abc234").unwrap(), None);
    c.lost("gone".into(), HOME);
    c.connecting();
    c.lost("gone again".into(), HOME);
    assert_eq!(
        c.link,
        SocketState::Lost {
            reason: "gone again".into(),
            attempt: 2
        },
        "each failed try waits longer"
    );
    c.opened();
    c.lost("dropped".into(), HOME);
    assert!(
        matches!(c.link, SocketState::Lost { attempt: 1, .. }),
        "an open link starts over"
    );
}

/// Following, looking around, following again; the question answered
/// once, then revealed; a reconnect resumes as the same member from the
/// last stream id seen.
#[test]
// long: one follower's class, from joining to the end, in order
fn a_follower_follows_looks_around_answers_once_and_sees_the_reveal() {
    let mut c = Class::join(ClassCode::parse("ABC234").unwrap(), Some("  Ada \u{202e}".into()));
    assert!(c.take_outbox().is_empty(), "nothing goes out before the link opens");
    c.opened();
    assert_eq!(
        sent(&mut c),
        [ClassClientMsg::Join {
            code: ClassCode::parse("ABC234").unwrap(),
            name: Some("Ada".into()),
            member: None,
            since: None
        }]
    );
    assert_eq!(c.receive(JOINED), Some(Follow::Goto(at_no_seed("05", 1))));
    assert_eq!(c.receive(&moved("2-0", "05", 2)), Some(Follow::Goto(at("05", 2))));
    // Looking around: the presenter's moves are kept, not replayed.
    c.look_around();
    assert_eq!(c.receive(&moved("3-0", "05", 3)), None);
    assert_eq!(c.follow_again(), at("05", 3));
    assert_eq!(c.receive(&moved("3-1", "05", 4)), Some(Follow::Goto(at("05", 4))));

    assert_eq!(c.receive(ASKED), None);
    assert!(matches!(&c.ask, Some(Ask::Open(q)) if q.id == 3));
    c.answer(Answer::Choice(1));
    c.answer(Answer::Choice(2));
    assert_eq!(
        sent(&mut c),
        [ClassClientMsg::Answer {
            question: 3,
            answer: Answer::Choice(1)
        }],
        "answered once"
    );
    c.receive(r#"{"type":"answered","question":3,"right":true,"score":1}"#);
    assert_eq!(c.score, 1);
    c.receive(REVEALED);
    match &c.ask {
        Some(Ask::Revealed {
            right_choice,
            mine,
            right,
            tally,
            ..
        }) => {
            assert_eq!(
                (*right_choice, mine.clone(), *right),
                (Some(1), Some(Answer::Choice(1)), Some(true))
            );
            assert_eq!(tally.counts, [1, 2, 0]);
        }
        other => panic!("not revealed: {other:?}"),
    }
    c.answer(Answer::Choice(0));
    assert!(c.take_outbox().is_empty(), "no answer after the reveal");

    // Reconnect: the same member, from the last id seen.
    c.lost("wifi".into(), HOME);
    let saved = c.saved().expect("kept for a reload");
    let mut again = Class::restore(&saved).expect("restored");
    again.opened();
    assert_eq!(
        sent(&mut again),
        [ClassClientMsg::Join {
            code: ClassCode::parse("ABC234").unwrap(),
            name: Some("Ada".into()),
            member: Some("m7".into()),
            since: Some("5-0".into())
        }]
    );
    // A follower has no secret: nothing it does sends a control.
    again.end();
    again.reveal();
    again.moved(at("01", 1));
    assert!(again.take_outbox().is_empty());
    again.receive(r#"{"type":"ended","summary":{"code":"ABC234","questions":[],"members":[]}}"#);
    assert!(
        again.saved().is_none() && !again.wants_link(),
        "an ended class is not rejoined"
    );
}

fn at_no_seed(lesson: &str, step: usize) -> Position {
    Position {
        seed: None,
        ..at(lesson, step)
    }
}

/// The presenter starts, learns its secret, relays every move once,
/// resumes with the secret after a reconnect, asks, tallies, reveals.
#[test]
fn a_presenter_starts_relays_moves_resumes_and_asks() {
    let mut c = Class::start();
    c.moved(at("05", 0));
    c.opened();
    assert_eq!(sent(&mut c), [ClassClientMsg::Start]);
    c.receive(r#"{"type":"started","code":"ABC234","secret":"s3","join_url":"http://10.0.0.2:8080/?class=ABC234","qr_svg":"<svg/>"}"#);
    assert_eq!(c.qr_svg, "<svg/>");
    let control = |position| ClassClientMsg::Control {
        secret: "s3".into(),
        control: Control::Move { position },
    };
    assert_eq!(
        sent(&mut c),
        [control(at("05", 0))],
        "where it stands goes out once started"
    );
    c.moved(at("05", 0));
    c.moved(at("05", 1));
    assert_eq!(
        sent(&mut c),
        [control(at("05", 1))],
        "an unchanged position is not sent again"
    );

    c.lost("restart".into(), HOME);
    c.moved(at("05", 2));
    let restored = Class::restore(&c.saved().unwrap()).unwrap();
    assert!(restored.is_presenter());
    c.opened();
    let resumed = sent(&mut c);
    assert_eq!(
        resumed,
        [
            ClassClientMsg::Resume {
                code: ClassCode::parse("ABC234").unwrap(),
                secret: "s3".into()
            },
            control(at("05", 2))
        ]
    );

    c.receive(r#"{"type":"roster","members":[{"member":"a","name":null,"score":0,"connected":true},{"member":"b","name":"<b>x</b>","score":0,"connected":true},{"member":"c","name":null,"score":0,"connected":false}]}"#);
    assert_eq!(c.joined(), 2);
    c.ask("05".into(), 2, "OK".into());
    assert!(matches!(
        &sent(&mut c)[..],
        [ClassClientMsg::Control {
            control: Control::Ask { step: 2, .. },
            ..
        }]
    ));
    // The server numbers the question: its `asked`, then tallies naming
    // who answered.
    c.receive(r#"{"type":"asked","id":"4","question":{"id":3,"lesson":"05","step":2,"choices":3}}"#);
    assert_eq!(c.ask.as_ref().map(|a| a.question().id), Some(3));
    c.receive(r#"{"type":"tally","tally":{"question":3,"counts":[0,2,0],"answered":2,"of":2,"right":2},"names":["a","<b>x</b>"]}"#);
    assert_eq!(c.tally.as_ref().map(|t| (t.answered, t.of)), Some((2, 2)));
    assert_eq!(c.answered_by, ["a", "<b>x</b>"]);
    c.reveal();
    assert!(matches!(
        &sent(&mut c)[..],
        [ClassClientMsg::Control {
            control: Control::Reveal { question: 3 },
            ..
        }]
    ));
    assert_eq!(share(2, 3), 66);
    assert_eq!(share(0, 0), 0);
}

#[test]
fn hostile_or_unknown_frames_change_nothing() {
    let mut c = Class::join(ClassCode::parse("ABC234").unwrap(), None);
    let before = c.clone();
    for junk in ["", "{", "null", r#"{"type":"future","x":1}"#, r#"{"type":"moved"}"#] {
        assert_eq!(c.receive(junk), None);
    }
    assert_eq!(c, before);
    assert!(Class::restore("{}").is_none());
    assert!(Class::restore(r#"{"role":"presenter","code":null,"secret":null,"join_url":""}"#).is_none());
}

/// The presenter's real run goes out as it grows (from its start again
/// when it starts over); a following follower draws what it is sent.
#[test]
fn a_real_run_is_relayed_once_and_drawn_by_followers() {
    use locklab_core::actor::Actor;
    use locklab_core::trace::{Event, EventKind};
    let ev = |step| Event {
        step,
        at_ms: step * 10,
        actor: Actor::Node(0),
        kind: EventKind::Expired { key: "lock".into() },
    };
    let mut p = Class::start();
    p.opened();
    p.receive(r#"{"type":"started","code":"ABC234","secret":"k","join_url":""}"#);
    p.take_outbox();
    let live = |c: &mut Class| -> Vec<usize> {
        sent(c)
            .into_iter()
            .filter_map(|m| match m {
                ClassClientMsg::Control {
                    control: Control::Live { events },
                    ..
                } => Some(events.len()),
                _ => None,
            })
            .collect()
    };
    p.relay_live(&[ev(0), ev(1)]);
    p.relay_live(&[ev(0), ev(1)]);
    p.relay_live(&[ev(0), ev(1), ev(2)]);
    assert_eq!(live(&mut p), [2, 1], "each event once");
    p.relay_live(&[ev(0)]);
    assert_eq!(live(&mut p), [1], "a new run from its start");

    let mut f = Class::join(ClassCode::parse("ABC234").unwrap(), None);
    f.receive(r#"{"type":"moved","id":"1-0","position":{"lesson":"01","step":0,"driver":"real"}}"#);
    assert!(!f.shows_live(), "nothing relayed yet");
    let frame = serde_json::json!({"type": "live", "id": "2-0", "events": [ev(0), ev(1)]}).to_string();
    f.receive(&frame);
    assert!(f.shows_live() && f.live.len() == 2);
    f.look_around();
    assert!(!f.shows_live(), "looking around shows its own run");
}

/// Reconnecting across instances: the server's list of live instances
/// (their class URLs) becomes sockets; each lost link tries the next one
/// round the list, its own instance included, with the backoff between
/// tries; the rejoin carries the member id and the last stream id seen.
#[test]
fn a_lost_follower_rotates_through_the_live_instances_and_resumes() {
    let mut c = Class::join(ClassCode::parse("abc234").unwrap(), None);
    assert_eq!(c.socket_url(HOME), HOME, "first its own instance");
    c.opened();
    c.take_outbox();
    c.receive(JOINED);
    c.receive(r#"{"type":"moved","id":"9-0","position":{"lesson":"05","step":2}}"#);
    c.receive(
        r#"{"type":"instances","urls":["http://127.0.0.1:8080/","http://10.0.0.2:8081/?class=ABC234","ftp://x/"]}"#,
    );
    let b = "ws://10.0.0.2:8081/api/class/ws";
    c.lost("instance died".into(), HOME);
    assert_eq!(
        c.socket_url(HOME),
        b,
        "the other live instance next (its own is listed too)"
    );
    assert_eq!(rejoin_delay_ms(1), 1_000);
    c.connecting();
    c.lost("refused".into(), HOME);
    assert_eq!(c.socket_url(HOME), HOME, "round the list, back to its own");
    assert!(
        matches!(c.link, SocketState::Lost { attempt: 2, .. }),
        "with the backoff growing"
    );
    c.connecting();
    c.lost("refused".into(), HOME);
    assert_eq!(c.socket_url(HOME), b);
    c.connecting();
    c.opened();
    let hello: ClassClientMsg = serde_json::from_str(&c.take_outbox()[0]).unwrap();
    assert_eq!(
        hello,
        ClassClientMsg::Join {
            code: ClassCode::parse("ABC234").unwrap(),
            name: Some("Ada".into()),
            member: Some("m7".into()),
            since: Some("9-0".into()),
        },
        "the same member, from the last stream id seen"
    );
    // A page that never heard of other instances stays on its own.
    let mut alone = Class::join(ClassCode::parse("abc234").unwrap(), None);
    alone.lost("gone".into(), HOME);
    assert_eq!(alone.socket_url(HOME), HOME);
}

/// The drill: pushed by the presenter (a control with the secret), shown
/// to a follower, taken (looking around), its result reported once and
/// only for the drill open; the presenter's board counts the reports.
#[test]
fn a_drill_is_pushed_taken_reported_once_and_tallied() {
    let mut p = Class::start();
    p.opened();
    p.take_outbox();
    p.receive(r#"{"type":"started","code":"ABC234","secret":"s3","join_url":"http://x/?class=ABC234"}"#);
    p.take_outbox();
    p.push_drill("01-bare-del".into());
    let sent: ClassClientMsg = serde_json::from_str(&p.take_outbox()[0]).unwrap();
    assert_eq!(
        sent,
        ClassClientMsg::Control {
            secret: "s3".into(),
            control: Control::Drill {
                design: "01-bare-del".into()
            }
        }
    );
    p.receive(r#"{"type":"drill_tally","drill":1,"found":["Ada"],"reported":2,"of":3}"#);
    let b = p.board.clone().unwrap();
    assert_eq!(
        (b.design.as_str(), b.reported, b.of, b.found),
        ("01-bare-del", 2, 3, vec!["Ada".to_owned()])
    );

    let mut f = Class::join(ClassCode::parse("abc234").unwrap(), None);
    f.opened();
    f.take_outbox();
    f.receive(JOINED);
    assert_eq!(f.take_drill(), None, "no drill yet");
    f.receive(r#"{"type":"drill_asked","id":"6-0","drill":{"id":1,"design":"01-bare-del"}}"#);
    assert_eq!(f.drill.as_ref().map(|d| d.drill.id), Some(1));
    assert_eq!(f.take_drill().as_deref(), Some("01-bare-del"));
    assert!(!f.following, "taking the drill is looking around");
    f.drill_done("02-other", true, 5);
    assert!(f.take_outbox().is_empty(), "another design's search is not the drill's");
    f.drill_done("01-bare-del", true, 40);
    f.drill_done("01-bare-del", false, 41);
    let sent: Vec<ClassClientMsg> = f
        .take_outbox()
        .iter()
        .map(|t| serde_json::from_str(t).unwrap())
        .collect();
    assert_eq!(
        sent,
        vec![ClassClientMsg::DrillResult {
            drill: 1,
            found: true,
            steps: None,
            schedules: Some(40)
        }],
        "reported once"
    );
    assert_eq!(f.drill.as_ref().and_then(|d| d.result), Some((true, 40)));
    // A rejoin keeps the result of the same drill.
    f.receive(r#"{"type":"joined","member":"m7","position":{},"drill":{"id":1,"design":"01-bare-del"},"score":0,"since":"7-0"}"#);
    assert_eq!(f.drill.as_ref().and_then(|d| d.result), Some((true, 40)));
    assert_eq!(f.follow_again(), Position::default());
}
