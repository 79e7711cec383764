//! Class mode's routes (issue 37) against a real backend on a free port:
//! a room of followers over real WebSockets, and the attacks a LAN allows.
//!
//! Every message the backend sends is read as core's typed `ServerSays`,
//! so a message the protocol cannot read fails here, not in a page.

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use locklab_backend::web::api::ApiState;
use locklab_core::class::{ClassError, ServerSays, FOLLOWER_FRAME_MAX, PRESENTER_FRAME_MAX};
use locklab_tests::ws::{get_json, serve, Ws};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

async fn open(addr: SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/api/class/ws"))
        .await
        .unwrap()
        .0
}

async fn say(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// The next message, typed; `None` once the socket closed.
async fn next(ws: &mut Ws) -> Option<ServerSays> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(60), ws.next())
            .await
            .expect("a message in time")?;
        match msg {
            Ok(Message::Text(t)) => {
                let says: ServerSays =
                    serde_json::from_str(&t).unwrap_or_else(|e| panic!("the protocol cannot read {t}: {e}"));
                assert_ne!(says, ServerSays::Unknown, "{t}");
                return Some(says);
            }
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

async fn next_error(ws: &mut Ws) -> String {
    match next(ws).await {
        Some(ServerSays::Error { message }) => message,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// A class on `addr`: the presenter's socket, the code and the secret.
async fn start(addr: SocketAddr) -> (Ws, String, String) {
    let mut p = open(addr).await;
    say(&mut p, json!({"type":"start"})).await;
    match next(&mut p).await {
        Some(ServerSays::Started {
            code, secret, qr_svg, ..
        }) => {
            assert!(qr_svg.contains("<svg"));
            (p, code.to_string(), secret)
        }
        other => panic!("{other:?}"),
    }
}

async fn join(addr: SocketAddr, code: &str, name: &str) -> Ws {
    let mut f = open(addr).await;
    say(&mut f, json!({"type":"join","code":code,"name":name})).await;
    match next(&mut f).await {
        Some(ServerSays::Joined { .. }) => f,
        other => panic!("{other:?}"),
    }
}

fn mv(secret: &str, step: usize) -> Value {
    json!({"type":"control","secret":secret,"control":{"do":"move","position":{"lesson":"05","step":step}}})
}

/// The next `moved`, skipping nothing else a follower could be sent.
async fn next_move(ws: &mut Ws) -> usize {
    match next(ws).await {
        Some(ServerSays::Moved { position, .. }) => position.step,
        other => panic!("expected a move, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_followers_see_every_move() {
    let addr = serve(ApiState::new(None)).await;
    let (mut p, code, secret) = start(addr).await;
    let mut followers = Vec::new();
    for i in 0..300 {
        followers.push(join(addr, &code, &format!("f{i}")).await);
    }
    for step in 1..=5 {
        say(&mut p, mv(&secret, step)).await;
    }
    let readers: Vec<_> = followers
        .into_iter()
        .map(|mut f| {
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 1..=5 {
                    seen.push(next_move(&mut f).await);
                }
                seen
            })
        })
        .collect();
    for (i, r) in readers.into_iter().enumerate() {
        assert_eq!(r.await.unwrap(), vec![1, 2, 3, 4, 5], "follower {i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cannot_drive_the_class() {
    let addr = serve(ApiState::new(None)).await;
    let (mut p, code, secret) = start(addr).await;
    let mut eve = join(addr, &code, "eve").await;
    let mut bob = join(addr, &code, "bob").await;
    let refused = ClassError::NotPresenter.to_string();
    // Even with the right secret: it is not the presenter's connection.
    for attempt in [mv("", 66), mv("wrong", 66), mv(&secret, 66)] {
        say(&mut eve, attempt).await;
        assert_eq!(next_error(&mut eve).await, refused);
    }
    say(&mut eve, json!({"type":"control","control":{"do":"end"}})).await;
    assert!(
        next_error(&mut eve).await.starts_with("bad message"),
        "no secret at all"
    );
    say(&mut eve, json!({"type":"start"})).await;
    assert_eq!(next_error(&mut eve).await, ClassError::AlreadyInClass.to_string());
    // Nothing of that reached bob: the next thing he sees is the presenter's move.
    say(&mut p, mv(&secret, 7)).await;
    assert_eq!(next_move(&mut bob).await, 7);
    assert_eq!(next_move(&mut eve).await, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_wrong_codes_are_throttled() {
    let addr = serve(ApiState::new(None)).await;
    let (_p, code, _) = start(addr).await;
    let mut ws = open(addr).await;
    let (mut unknown, mut throttled) = (0, 0);
    let throttled_prefix = "too many join attempts";
    for i in 0..10_000u32 {
        let alphabet = locklab_core::class::CODE_ALPHABET;
        let guess: String = (0..6)
            .map(|k| alphabet[((i / 31u32.pow(k)) % 31) as usize] as char)
            .collect();
        if guess == code {
            continue;
        }
        say(&mut ws, json!({"type":"join","code":guess})).await;
        let e = next_error(&mut ws).await;
        if e.starts_with("no class has code") {
            unknown += 1;
        } else {
            assert!(e.starts_with(throttled_prefix), "{e}");
            throttled += 1;
        }
    }
    assert_eq!(unknown, 20, "20 wrong codes a minute are answered");
    assert!(throttled >= 9_979, "{throttled}");
    // The right code is refused too from that peer now; the server is fine.
    say(&mut ws, json!({"type":"join","code":code})).await;
    assert!(next_error(&mut ws).await.starts_with(throttled_prefix));
    assert_eq!(get_json(addr, "/api/health").await["topology"], "managed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_malformed_frames_get_a_clear_answer() {
    let addr = serve(ApiState::new(None)).await;
    let (mut p, code, secret) = start(addr).await;
    let mut f = join(addr, &code, "f").await;
    let big = json!({"type":"answer","question":1,"answer":{"text":"a".repeat(FOLLOWER_FRAME_MAX)}});
    say(&mut f, big).await;
    assert!(next_error(&mut f).await.starts_with("message too large"));
    f.send(Message::Text("{\"type\":".into())).await.unwrap();
    assert!(next_error(&mut f).await.starts_with("bad message"));
    f.send(Message::Binary(vec![0xff; 16].into())).await.unwrap();
    say(&mut f, json!({"type":"answer","question":1,"answer":{"choice":0}})).await;
    assert_eq!(next_error(&mut f).await, ClassError::NoOpenQuestion.to_string());
    // Still in the class.
    say(&mut p, mv(&secret, 2)).await;
    assert_eq!(next_move(&mut f).await, 2);
    // Past what any frame may hold: closed with 1009, the server unharmed.
    let mut g = join(addr, &code, "g").await;
    let huge = "x".repeat(PRESENTER_FRAME_MAX + 1);
    let _ = g.send(Message::Text(huge.into())).await;
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(60), g.next()).await.unwrap() {
            Some(Ok(Message::Close(frame))) => break frame.map(|f| u16::from(f.code)),
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => break None,
        }
    };
    assert_eq!(closed, Some(1009));
    say(&mut p, mv(&secret, 3)).await;
    assert_eq!(next_move(&mut f).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_with_markup_is_relayed_as_cleaned_text() {
    let addr = serve(ApiState::new(None)).await;
    let (mut p, code, _) = start(addr).await;
    let mut f = open(addr).await;
    let name = "<b onmouseover=x>\u{202e}hi</b>\u{7}";
    say(&mut f, json!({"type":"join","code":code,"name":name})).await;
    match next(&mut f).await {
        Some(ServerSays::Joined { name, .. }) => assert_eq!(name.as_deref(), Some("<b onmouseover=x>hi</b>")),
        other => panic!("{other:?}"),
    }
    match next(&mut p).await {
        Some(ServerSays::Roster { members }) => {
            assert_eq!(members.len(), 1);
            assert_eq!(members[0].name.as_deref(), Some("<b onmouseover=x>hi</b>"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_presenter_resumes_with_the_secret_and_no_answer_is_lost() {
    let addr = serve(ApiState::new(None)).await;
    let (mut p, code, secret) = start(addr).await;
    let lessons = locklab_core::lesson::builtin().unwrap();
    let (lesson, step, right) = lessons
        .iter()
        .flat_map(|l| l.steps.iter().enumerate().map(move |(i, s)| (l, i, s)))
        .find_map(|(l, i, s)| {
            let q = s.quiz.as_ref()?;
            (q.choices.len() >= 2 && q.answer.is_some())
                .then(|| (l.id.clone(), i, locklab_core::class::right_choice(s, "").unwrap()))
        })
        .unwrap();
    let mut f = join(addr, &code, "f").await;
    let _roster = next(&mut p).await;
    let ask = json!({"type":"control","secret":secret,"control":{"do":"ask","lesson":lesson,"step":step,"reply":""}});
    say(&mut p, ask).await;
    let qid = match next(&mut f).await {
        Some(ServerSays::Asked { question, .. }) => question.id,
        other => panic!("{other:?}"),
    };
    drop(p);
    say(
        &mut f,
        json!({"type":"answer","question":qid,"answer":{"choice":right}}),
    )
    .await;
    assert!(matches!(
        next(&mut f).await,
        Some(ServerSays::Answered {
            right: None,
            score: 0,
            ..
        })
    ));
    // A new page with the secret; a wrong one is refused first.
    let mut p2 = open(addr).await;
    say(&mut p2, json!({"type":"resume","code":code,"secret":"x".repeat(32)})).await;
    assert_eq!(next_error(&mut p2).await, ClassError::NotPresenter.to_string());
    let mut p2 = open(addr).await;
    say(&mut p2, json!({"type":"resume","code":code,"secret":secret})).await;
    assert!(matches!(next(&mut p2).await, Some(ServerSays::Started { .. })));
    let mut tally = None;
    while tally.is_none() {
        if let Some(ServerSays::Tally { tally: t, .. }) = next(&mut p2).await {
            tally = Some(t);
        }
    }
    let tally = tally.unwrap();
    assert_eq!((tally.answered, tally.right, tally.counts[right]), (1, 1, 1));
    say(
        &mut p2,
        json!({"type":"control","secret":secret,"control":{"do":"reveal","question":qid}}),
    )
    .await;
    assert!(matches!(next(&mut f).await, Some(ServerSays::Revealed { .. })));
    assert!(
        matches!(
            next(&mut f).await,
            Some(ServerSays::Answered {
                right: Some(true),
                score: 1,
                ..
            })
        ),
        "the verdict and the score come with the reveal"
    );
    say(
        &mut p2,
        json!({"type":"control","secret":secret,"control":{"do":"end"}}),
    )
    .await;
    match next(&mut f).await {
        Some(ServerSays::Ended { summary }) => {
            assert_eq!(summary.members[0].score, 1);
            assert!(summary.to_csv().contains(",1,1,100,"), "{}", summary.to_csv());
        }
        other => panic!("{other:?}"),
    }
    assert!(next(&mut f).await.is_none(), "followers are closed at the end");
}

/// From another machine (this machine's own LAN address, which is not
/// loopback): the class routes answer, the real driver and the health
/// report do not, nor the trainer's notes, and a class cannot be started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_reaches_only_the_class_routes() {
    let Some(lan) = locklab_backend::web::peer::lan_ipv4() else {
        panic!("this machine has no non-loopback IPv4 address to test from (hostname -I)");
    };
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let state = ApiState::new(None);
    tokio::spawn(locklab_backend::web::api::serve_listener(listener, state));
    let local = SocketAddr::from(([127, 0, 0, 1], port));
    let remote = SocketAddr::from((lan, port));
    let (_p, code, _) = start(local).await;
    for path in ["/api/health", "/api/session", "/api/notes"] {
        let (status, body) = raw_get(remote, path).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("only on the lab's own machine"), "{body}");
        assert_ne!(raw_get(local, path).await.0, 403, "{path} from this machine");
    }
    let mut ws = open(remote).await;
    say(&mut ws, json!({"type":"start"})).await;
    assert_eq!(next_error(&mut ws).await, ClassError::LoopbackOnly.to_string());
    join(remote, &code, "from the LAN").await;
}

/// `GET path` with the remote's `Host`: (status, body).
async fn raw_get(addr: SocketAddr, path: &'static str) -> (u16, String) {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        (status, out)
    })
    .await
    .unwrap()
}
