//! `locklab bench --class N`: a room of N followers on one backend, over
//! real WebSockets on loopback (issue 37's targets: N = 500, p99 fan-out
//! ≤ 100 ms, ≥ 2,000 answers/s, ≤ 64 KiB RSS per follower).
//!
//! The backend runs in this process; the presenter and the followers in a
//! child process (this binary again, `--class-room ADDR`), as a room's
//! browsers are other machines: so this process's RSS is the backend's
//! alone. Printed: the fan-out latency of a presenter's move (from the
//! presenter's send to each follower's receipt, p50 and p99 over every
//! follower and move, both clocks in the child), the answers per second of
//! the whole room answering at once (from the go to the last `answered`),
//! and the backend's RSS growth from before the first follower joined to
//! after the last, per follower. With `--class-store redis://…` the
//! classes live in that Redis (every move and answer goes through it).
//! Figures are wall-clock: printed, never asserted.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use locklab_core::class::ServerSays;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::BackendBenchError;
use crate::class::store::RedisStore;
use crate::class::ClassConfig;
use crate::real::process::RedisServer;
use crate::web::ApiState;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Moves timed, and questions the room answers.
const MOVES: usize = 20;
const QUESTIONS: usize = 5;

async fn say<S>(ws: &mut S, v: serde_json::Value) -> Result<(), BackendBenchError>
where
    S: SinkExt<Message, Error = tokio_tungstenite::tungstenite::Error> + Unpin,
{
    Ok(ws.send(Message::Text(v.to_string().into())).await?)
}

async fn next(ws: &mut Ws) -> Result<ServerSays, BackendBenchError> {
    loop {
        match tokio::time::timeout(Duration::from_secs(30), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                return serde_json::from_str(&t).map_err(|e| BackendBenchError::Misbehaved(e.to_string()))
            }
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => return Err(e.into()),
            Ok(None) | Err(_) => return Err(BackendBenchError::Closed),
        }
    }
}

/// This process's resident memory, from /proc (0 where there is none).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// A multiple-choice quiz of the catalogue: (lesson, step).
fn a_quiz() -> Result<(String, usize), BackendBenchError> {
    let lessons = locklab_core::lesson::builtin().map_err(|e| BackendBenchError::Misbehaved(e.to_string()))?;
    lessons
        .iter()
        .flat_map(|l| l.steps.iter().enumerate().map(move |(i, s)| (l, i, s)))
        .find(|(_, _, s)| s.quiz.as_ref().is_some_and(|q| q.choices.len() >= 2))
        .map(|(l, i, _)| (l.id.clone(), i))
        .ok_or_else(|| BackendBenchError::Misbehaved("no multiple-choice quiz".into()))
}

/// The report of `locklab bench --class n [--class-store URL]`.
pub fn class_report(n: usize, store: Option<&str>) -> Result<String, BackendBenchError> {
    use std::io::{BufRead, Write};
    let server = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("class-backend")
        .build()?;
    let cfg = ClassConfig {
        max_followers: n.max(1),
        ..Default::default()
    };
    let idle = cfg.idle;
    let mut state = ApiState::new(None).class_config(cfg);
    // `--class-store redis` (or the flag alone): a redis-server of the
    // bench's own on a free loopback port, so nothing need be prepared
    // (stopped when the report is done; its memory is not the backend's).
    let own = match store {
        Some("redis" | "") => Some(RedisServer::try_start(&[]).map_err(BackendBenchError::Misbehaved)?),
        _ => None,
    };
    let own_url = own.as_ref().map(RedisServer::url);
    let store = own_url.as_deref().or(store);
    if let Some(url) = store {
        let redis = RedisStore::open(url, idle).map_err(|e| BackendBenchError::Misbehaved(format!("{url}: {e}")))?;
        state = state.class_store(std::sync::Arc::new(redis));
    }
    let listener = server.block_on(tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)))?;
    let addr = listener.local_addr()?;
    server.spawn(crate::web::serve_listener(listener, state));
    let mut room = std::process::Command::new(std::env::current_exe()?)
        .args(["bench", "--class", &n.to_string(), "--class-room", &addr.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let (mut to_room, from_room) = (room.stdin.take(), room.stdout.take());
    let mut lines = std::io::BufReader::new(from_room.ok_or(BackendBenchError::Closed)?).lines();
    let mut line = || lines.next().transpose().map(Option::unwrap_or_default);
    // The room says when the presenter is in and when every follower is.
    let mut rss = [0u64; 3];
    for (i, marker) in ["presenter", "joined", "answered"].into_iter().enumerate() {
        let got = line()?;
        if got != marker {
            let _ = room.kill();
            return Err(BackendBenchError::Misbehaved(format!(
                "the room said {got:?}, not {marker:?}"
            )));
        }
        rss[i] = rss_bytes();
        if let Some(w) = to_room.as_mut() {
            writeln!(w, "go")?;
        }
    }
    let mut report = String::new();
    loop {
        let l = line()?;
        if l.is_empty() {
            break;
        }
        report.push_str(&l);
        report.push('\n');
    }
    let ok = room.wait()?.success();
    server.shutdown_background();
    if !ok || report.is_empty() {
        return Err(BackendBenchError::Misbehaved(format!("the room failed: {report}")));
    }
    let which = store.map_or("memory store".to_owned(), |u| format!("Redis store {u}"));
    let per = |at: u64| at.saturating_sub(rss[0]) as f64 / 1024.0 / n.max(1) as f64;
    Ok(format!(
        "class mode, {n} WebSocket followers on loopback ({which}):\n{report}  backend RSS: +{:.1} KiB per follower \
         once joined, +{:.1} KiB after the moves and answers (the backend process only; the room runs in a child \
         process)\n",
        per(rss[1]),
        per(rss[2]),
    ))
}

/// The child of [`class_report`]: the presenter and `n` followers on the
/// backend at `addr`; says `presenter`, `joined` and `answered` on stdout
/// (and waits for a line on stdin after each; every socket is still open at
/// `answered`), then prints the figures.
pub fn class_room(addr: std::net::SocketAddr, n: usize) -> Result<(), BackendBenchError> {
    let clients = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let report = clients.block_on(room(addr, n))?;
    print!("{report}");
    Ok(())
}

/// Tell the parent `marker`, and wait for its go.
async fn checkpoint(marker: &str) -> Result<(), BackendBenchError> {
    use std::io::{BufRead, Write};
    let marker = marker.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{marker}")?;
        out.flush()?;
        let mut go = String::new();
        std::io::stdin().lock().read_line(&mut go)?;
        Ok::<_, std::io::Error>(())
    })
    .await
    .map_err(|e| BackendBenchError::Misbehaved(e.to_string()))??;
    Ok(())
}

// long: one run of the room, in its order: join, moves timed, questions answered
async fn room(addr: std::net::SocketAddr, n: usize) -> Result<String, BackendBenchError> {
    let url = format!("ws://{addr}/api/class/ws");
    let mut p = tokio_tungstenite::connect_async(&url).await?.0;
    say(&mut p, json!({"type":"start"})).await?;
    let (code, secret) = match next(&mut p).await? {
        ServerSays::Started { code, secret, .. } => (code.to_string(), secret),
        other => return Err(BackendBenchError::Misbehaved(format!("{other:?}"))),
    };
    // The presenter's updates are drained, as its page would; its tallies
    // say how many have answered (question, answered).
    let (p_tx, mut p_rx) = p.split();
    let (tally_tx, mut tallies) = tokio::sync::watch::channel((0u32, 0u32));
    let drain = tokio::spawn(async move {
        while let Some(Ok(m)) = p_rx.next().await {
            if let Message::Text(t) = m {
                if let Ok(ServerSays::Tally { tally, .. }) = serde_json::from_str(&t) {
                    tally_tx.send_replace((tally.question, tally.answered));
                }
            }
        }
    });
    let mut p_tx = p_tx;
    checkpoint("presenter").await?;
    let mut followers = Vec::with_capacity(n);
    for i in 0..n {
        let mut f = tokio_tungstenite::connect_async(&url).await?.0;
        say(&mut f, json!({"type":"join","code":code,"name":format!("f{i}")})).await?;
        match next(&mut f).await? {
            ServerSays::Joined { .. } => followers.push(f),
            other => return Err(BackendBenchError::Misbehaved(format!("join: {other:?}"))),
        }
    }
    checkpoint("joined").await?;
    let (lesson, step) = a_quiz()?;
    // Each follower: the receipt time of every move, then answers each question.
    let (sent_tx, sent_rx) = tokio::sync::watch::channel(0u32);
    let tasks: Vec<_> = followers
        .into_iter()
        .map(|mut f| {
            let mut asked = sent_rx.clone();
            tokio::spawn(async move {
                let mut moves = Vec::with_capacity(MOVES);
                let mut answered = Vec::new();
                while moves.len() < MOVES || answered.len() < QUESTIONS {
                    match next(&mut f).await? {
                        ServerSays::Moved { .. } => moves.push(Instant::now()),
                        ServerSays::Asked { question, .. } => {
                            let _ = asked.wait_for(|go| *go >= question.id).await;
                            let a = json!({"type":"answer","question":question.id,"answer":{"choice":0}});
                            say(&mut f, a).await?;
                        }
                        ServerSays::Answered { .. } => answered.push(Instant::now()),
                        // Said at once, not after a 30 s wait for what will not come.
                        ServerSays::Error { message } => {
                            return Err(BackendBenchError::Misbehaved(format!("a follower was told: {message}")))
                        }
                        _ => {}
                    }
                }
                Ok::<_, BackendBenchError>((moves, answered, f))
            })
        })
        .collect();
    let mut sent = Vec::with_capacity(MOVES);
    for s in 0..MOVES {
        sent.push(Instant::now());
        let m = json!({"type":"control","secret":secret,"control":{"do":"move","position":{"lesson":lesson,"step":s}}});
        say(&mut p_tx, m).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut asked_at = Vec::with_capacity(QUESTIONS);
    for q in 0..QUESTIONS {
        let ask =
            json!({"type":"control","secret":secret,"control":{"do":"ask","lesson":lesson,"step":step,"reply":""}});
        say(&mut p_tx, ask).await?;
        // Every follower holds its answer until the presenter says go.
        tokio::time::sleep(Duration::from_millis(200 + n as u64)).await;
        asked_at.push(Instant::now());
        sent_tx.send_replace(q as u32 + 1);
        // The next question waits for every answer to this one: asked
        // sooner, it would close this one while answers are still on their
        // way (under load, through Redis), and those would be refused with
        // "no open question" — the bench's own race, seen at N = 500.
        let all = (q as u32 + 1, n as u32);
        let arrived = matches!(
            tokio::time::timeout(Duration::from_secs(30), tallies.wait_for(|t| *t == all)).await,
            Ok(Ok(_))
        );
        if !arrived {
            let (_, got) = *tallies.borrow();
            return Err(BackendBenchError::Misbehaved(format!(
                "question {}: {got} of {n} answers arrived",
                q + 1
            )));
        }
    }
    let mut latencies = Vec::with_capacity(n * MOVES);
    let mut last_answer = [asked_at[0]; QUESTIONS];
    let mut still_open = Vec::with_capacity(n);
    for t in tasks {
        let (moves, answered, f) = t.await.map_err(|e| BackendBenchError::Misbehaved(e.to_string()))??;
        latencies.extend(
            moves
                .iter()
                .zip(&sent)
                .map(|(got, at)| got.saturating_duration_since(*at)),
        );
        for (q, at) in answered.iter().enumerate() {
            last_answer[q] = last_answer[q].max(*at);
        }
        still_open.push(f);
    }
    // The backend's memory is read while every follower is still in.
    checkpoint("answered").await?;
    drop(still_open);
    drain.abort();
    latencies.sort();
    let busy: f64 = last_answer
        .iter()
        .zip(&asked_at)
        .map(|(end, start)| end.saturating_duration_since(*start).as_secs_f64())
        .sum();
    let answers = (n * QUESTIONS) as f64;
    Ok(format!(
        "  fan-out of a move: p50 {:.1} ms, p99 {:.1} ms ({} receipts)\n  answers: {:.0}/s (the whole room answering \
         at once, {QUESTIONS} questions)\n",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.len(),
        answers / busy.max(1e-9),
    ))
}
