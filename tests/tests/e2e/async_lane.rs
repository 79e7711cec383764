//! The WebSocket's async lane (issue 18): free-play console commands run on
//! tokio, with the lock watch's peek written in the command's own round
//! trip. It must answer exactly as the blocking lane does (the lesson
//! runner's and the CLI's), and the peek must ride only where Redis runs it
//! as a command of its own.

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::session::SessionPool;
use locklab_backend::web::api::ApiState;
use locklab_core::console;
use locklab_core::reply::Reply;
use locklab_tests::ws::{connect, send, serve, until, Ws};
use locklab_tests::RedisServer;
use serde_json::json;

const RELEASE: &str =
    "EVAL \"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end\" 1";

/// (client, line) pairs covering what the lane does itself: replies of
/// every type, server errors, the lab's refusals, the repeat prefix,
/// scripts (pre-flight and watchdog), transactions (a script inside one,
/// a `WATCH` that fires), `SCAN` (run on the admin link), libraries (the
/// namespace check), a blocking command's null array.
fn script() -> Vec<(&'static str, String)> {
    let lines = [
        ("A", "SET lock tok NX PX 60000".to_owned()),
        ("B", "SET lock other NX PX 60000".to_owned()),
        ("A", "GET lock".to_owned()),
        ("A", "PTTL lock".to_owned()),
        ("B", format!("{RELEASE} lock other")),
        ("A", format!("{RELEASE} lock tok")),
        // A loop is judged on the simulator first; the release above was not.
        (
            "A",
            "EVAL \"for i = 1, 2 do redis.call('INCR', KEYS[1]) end return redis.call('GET', KEYS[1])\" 1 n2"
                .to_owned(),
        ),
        ("A", "SETNX lock2 a".to_owned()),
        ("A", "INCR lock2".to_owned()),
        ("A", "HSET h f v".to_owned()),
        ("A", "GET h".to_owned()),
        ("A", "MULTI".to_owned()),
        ("A", "SET k 1".to_owned()),
        ("A", "EVAL \"return redis.call('GET', KEYS[1])\" 1 k".to_owned()),
        ("A", "EXEC".to_owned()),
        ("A", "WATCH k".to_owned()),
        ("B", "SET k 2".to_owned()),
        ("A", "MULTI".to_owned()),
        ("A", "GET k".to_owned()),
        ("A", "EXEC".to_owned()),
        ("A", "SCAN 0 MATCH lock2".to_owned()),
        (
            "A",
            "FUNCTION LOAD \"#!lua name=lanelib\nredis.register_function('lanef', function() return 7 end)\""
                .to_owned(),
        ),
        ("A", "FCALL lanef 0".to_owned()),
        ("A", "DEBUG SLEEP 0".to_owned()),
        ("A", "FOO bar".to_owned()),
        ("A", "3 INCR n".to_owned()),
        ("A", "SET a b c".to_owned()),
        ("A", "BLPOP nolist 0.01".to_owned()),
        ("A", "KEYS *".to_owned()),
        ("A", "EVAL \"return {1, 'two', {err='boom'}, false}\" 0".to_owned()),
        ("A", "GET \"unbalanced".to_owned()),
    ];
    lines.to_vec()
}

/// One console line as `client` over the WebSocket: the reply text.
async fn ws_line(ws: &mut Ws, client: &str, line: &str) -> String {
    send(ws, json!({"type":"command","client":client,"line":line})).await;
    until(ws, "reply").await.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A `PTTL` reply's number is the server's clock, not the lane's: both
/// must be a TTL under the one set.
fn same(line: &str, a: &str, b: &str) -> bool {
    if line.starts_with("PTTL") {
        let ttl = |t: &str| t.strip_prefix("(integer) ").and_then(|n| n.parse::<i64>().ok());
        return matches!((ttl(a), ttl(b)), (Some(x), Some(y)) if (1..=60_000).contains(&x) && (1..=60_000).contains(&y));
    }
    a == b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_answers_as_the_blocking_lane_does() {
    let server = RedisServer::start();
    let url = server.url();
    // The blocking lane: a session in this process, each line down core's
    // console path as the WebSocket used to run it.
    let blocking = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            let pool = SessionPool::default();
            let mut s = pool
                .open(vec![locklab_backend::real::session::NodeTarget::new("redis", url)])
                .unwrap();
            script()
                .iter()
                .map(|(client, line)| {
                    let text = console::run(line.as_bytes(), console::Limits::BROWSER, |argv| {
                        Some(s.run(client, 0, argv).unwrap_or_else(|e| e.to_reply()))
                    });
                    text.trim_end_matches(['\r', '\n']).to_owned()
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap()
    };
    let addr = serve(ApiState::new(Some(url))).await;
    let mut ws = connect(addr).await;
    for ((client, line), want) in script().iter().zip(&blocking) {
        let got = ws_line(&mut ws, client, line).await;
        if line.starts_with("GET \"") {
            // Unbalanced quotes: the session's own refusal, on both lanes.
            assert_eq!(got, "(error) ERR locklab: Invalid argument(s)", "{line}");
            continue;
        }
        assert!(
            same(line, &got, want),
            "{client}> {line}\nasync lane:    {got}\nblocking lane: {want}"
        );
    }
}

/// The session user's connection as `CLIENT LIST` shows it.
fn user_client(admin: &mut RealConnection, session: &str) -> String {
    let Reply::Bulk(list) = admin.execute(&[b"CLIENT".to_vec(), b"LIST".to_vec()]).unwrap() else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    let mine: Vec<&str> = list
        .lines()
        .filter(|l| l.contains(&format!(" user=lab-{session} ")))
        .collect();
    assert_eq!(mine.len(), 1, "one connection of the session user: {list}");
    mine[0].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_watch_peek_rides_in_the_commands_round_trip_but_never_into_a_transaction() {
    let server = RedisServer::start();
    let mut admin = RealConnection::open(&server.url()).unwrap();
    let addr = serve(ApiState::new(Some(server.url()))).await;
    let mut ws = connect(addr).await;
    send(
        &mut ws,
        json!({"type":"command","client":"A","line":"SET lock tok NX PX 60000"}),
    )
    .await;
    let msgs = until(&mut ws, "reply").await;
    let session = msgs[0]["session"].as_str().unwrap().to_owned();
    assert_eq!(msgs.last().unwrap()["text"], "OK");
    // The lock bar starts: the peek read the key…
    assert!(
        msgs.iter()
            .any(|m| m["type"] == "event" && m["event"]["kind"]["type"] == "lock"),
        "{msgs:?}"
    );
    // …on the client's own connection, written behind the SET: the last
    // command that connection ran is the peek's last read, a TYPE.
    let me = user_client(&mut admin, &session);
    assert!(me.contains(" cmd=type "), "{me}");
    // In a transaction the peek would be queued (and show in EXEC's
    // answer): it goes on the admin link instead.
    assert_eq!(ws_line(&mut ws, "A", "MULTI").await, "OK");
    assert_eq!(ws_line(&mut ws, "A", "SET lock other PX 60000").await, "QUEUED");
    assert_eq!(ws_line(&mut ws, "A", "EXEC").await, "1) OK");
    assert_eq!(ws_line(&mut ws, "A", "GET lock").await, "\"other\"");
    // After EXEC the connection runs commands again: the peek rode there.
    let me = user_client(&mut admin, &session);
    assert!(me.contains(" cmd=type ") || me.contains(" cmd=get "), "{me}");
    assert!(me.contains(" multi=-1 "), "{me}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_on_a_unix_socket_is_served_by_the_async_lane_too() {
    // `locklab serve --redis unix:///path` worked on the blocking lane,
    // which the redis crate connects; the async lane connects it itself.
    let dir = std::env::temp_dir().join(format!("locklab-lane-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("redis.sock");
    let sock_arg = sock.to_str().unwrap().to_owned();
    let _server = RedisServer::start_with(&["--unixsocket", &sock_arg, "--unixsocketperm", "700"]);
    let addr = serve(ApiState::new(Some(format!("unix://{sock_arg}")))).await;
    let mut ws = connect(addr).await;
    assert_eq!(ws_line(&mut ws, "A", "SET lock tok NX PX 60000").await, "OK");
    assert_eq!(
        ws_line(&mut ws, "A", &format!("{RELEASE} lock tok")).await,
        "(integer) 1"
    );
    assert_eq!(ws_line(&mut ws, "A", "GET lock").await, "(nil)");
    let _ = std::fs::remove_dir_all(&dir);
}
