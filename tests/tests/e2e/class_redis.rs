//! Class mode on the Redis store (issue 37, item 5): a real redis-server
//! and two `locklab serve --class --class-store redis://…` processes
//! started here. The presenter is on one instance, followers on both; the
//! presenter's instance is killed mid-question, its followers reconnect to
//! the other with their member id and the last stream id they saw, the
//! presenter resumes there with the secret, and the reveal and summary
//! count every answer, including those given on the instance that died.
//! Each instance advertises its `--class-url`; the pages are told the live
//! ones, and a follower of the dead instance goes to the next one in
//! turn (core's rotation, as the page does it).
//! A follower of the dead instance that does not come back is shown away
//! once that instance's heartbeat expired.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use locklab_core::class::{ServerSays, Tally};
use locklab_tests::ws::Ws;
use locklab_tests::RedisServer;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

/// `locklab serve` as a process, killed on drop.
struct Instance {
    child: Child,
    addr: SocketAddr,
    _dist: TempDir,
}

/// A directory removed on drop.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Instance {
    fn start(store: &str) -> Instance {
        let port = locklab_tests::server::free_port();
        // The page itself is not under test: a stand-in `dist/`.
        let dist = std::env::temp_dir().join(format!("locklab-class-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(dist.join("index.html"), "<!doctype html><title>locklab</title>").unwrap();
        let child = Command::new(locklab_tests::locklab_binary())
            .args(["serve", "--class", "--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--class-url", &format!("http://127.0.0.1:{port}/")])
            .args(["--class-store", store])
            .arg("--dist")
            .arg(&dist)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("locklab serve starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "locklab serve did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Instance {
            child,
            addr,
            _dist: TempDir(dist),
        }
    }

    /// Gone at once, as a crash: SIGKILL, every socket with it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn open(addr: SocketAddr) -> Ws {
    open_url(&format!("ws://{addr}/api/class/ws")).await
}

async fn open_url(url: &str) -> Ws {
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The class socket of `instance`, opened by a page from `origin`.
async fn open_from(instance: SocketAddr, origin: &str) -> Result<Ws, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("ws://{instance}/api/class/ws").into_client_request().unwrap();
    req.headers_mut().insert("origin", origin.parse().unwrap());
    tokio_tungstenite::connect_async(req)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// The class URL `locklab serve` was given (`--class-url`).
fn class_url(i: &Instance) -> String {
    format!("http://127.0.0.1:{}/", i.addr.port())
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
            Ok(Message::Text(t)) => return Some(serde_json::from_str(&t).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// Messages until one `pick` takes (the ones before it are returned too).
async fn until<T>(ws: &mut Ws, what: &str, mut pick: impl FnMut(&ServerSays) -> Option<T>) -> (T, Vec<ServerSays>) {
    let mut before = Vec::new();
    loop {
        let m = next(ws)
            .await
            .unwrap_or_else(|| panic!("closed while waiting for {what}; saw {before:?}"));
        if let Some(t) = pick(&m) {
            return (t, before);
        }
        before.push(m);
    }
}

/// A follower: its socket, member id and the last stream id it saw, and
/// the instances it was told serve the class.
struct Follower {
    ws: Ws,
    member: String,
    since: String,
    instances: Vec<String>,
}

impl Follower {
    async fn join(addr: SocketAddr, code: &str, name: &str) -> Follower {
        let mut ws = open(addr).await;
        say(&mut ws, json!({"type":"join","code":code,"name":name})).await;
        let ((member, since), _) = until(&mut ws, "joined", |m| match m {
            ServerSays::Joined { member, since, .. } => Some((member.clone(), since.clone())),
            _ => None,
        })
        .await;
        Follower {
            ws,
            member,
            since,
            instances: Vec::new(),
        }
    }

    /// Wait until it has been told `n` live instances.
    async fn told_instances(&mut self, n: usize) {
        (self.instances, _) = until(&mut self.ws, "the live instances", |m| match m {
            ServerSays::Instances { urls } if urls.len() == n => Some(urls.clone()),
            _ => None,
        })
        .await;
    }

    /// Where a page on `home` (a class URL) whose link dropped tries next,
    /// as the page does it: its own socket, then the advertised ones in
    /// turn (core's rotation).
    fn reconnects_to(&self, home: &str) -> String {
        let home = locklab_core::class::socket_url(home).unwrap();
        let mut candidates = vec![home.clone()];
        for url in self.instances.iter().filter_map(|u| locklab_core::class::socket_url(u)) {
            if !candidates.contains(&url) {
                candidates.push(url);
            }
        }
        locklab_core::class::reconnect_url(&candidates, &home).unwrap().clone()
    }

    /// Back on `url` after its instance died: what it missed, then `joined`.
    async fn rejoin(&mut self, url: &str, code: &str) -> Vec<ServerSays> {
        self.ws = open_url(url).await;
        let msg = json!({"type":"join","code":code,"member":self.member,"since":self.since});
        say(&mut self.ws, msg).await;
        let ((member, since), missed) = until(&mut self.ws, "joined", |m| match m {
            ServerSays::Joined { member, since, .. } => Some((member.clone(), since.clone())),
            _ => None,
        })
        .await;
        assert_eq!(member, self.member, "the same member again");
        self.since = since;
        missed
    }

    /// The next relayed message of kind `what`, noting its stream id.
    async fn expect(&mut self, what: &str) -> ServerSays {
        let (m, _) = until(&mut self.ws, what, |m| {
            let id = match m {
                ServerSays::Moved { id, .. }
                | ServerSays::Asked { id, .. }
                | ServerSays::Revealed { id, .. }
                | ServerSays::DrillAsked { id, .. }
                | ServerSays::Live { id, .. } => Some(id.clone()),
                _ => None,
            };
            let kind = serde_json::to_value(m).unwrap()["type"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (kind == what).then(|| (m.clone(), id))
        })
        .await;
        if let Some(id) = m.1 {
            self.since = id;
        }
        m.0
    }
}

fn control(secret: &str, control: Value) -> Value {
    json!({"type":"control","secret":secret,"control":control})
}

/// A multiple-choice quiz step of the catalogue: (lesson, step, right choice, choices).
fn quiz() -> (String, usize, usize, usize) {
    let lessons = locklab_core::lesson::builtin().unwrap();
    lessons
        .iter()
        .flat_map(|l| l.steps.iter().enumerate().map(move |(i, s)| (l, i, s)))
        .find_map(|(l, i, s)| {
            let q = s.quiz.as_ref()?;
            (q.choices.len() >= 2 && q.answer.is_some()).then(|| {
                let right = locklab_core::class::right_choice(s, "").unwrap();
                (l.id.clone(), i, right, q.choices.len())
            })
        })
        .unwrap()
}

async fn answer(f: &mut Follower, question: u32, choice: usize) {
    say(
        &mut f.ws,
        json!({"type":"answer","question":question,"answer":{"choice":choice}}),
    )
    .await;
    let (right, _) = until(&mut f.ws, "answered", |m| match m {
        ServerSays::Answered { right, .. } => Some(*right),
        _ => None,
    })
    .await;
    assert_eq!(right, None, "the verdict waits for the reveal");
}

async fn tally_of(p: &mut Ws, answered: u32) -> Tally {
    until(p, "a tally", |m| match m {
        ServerSays::Tally { tally, .. } if tally.answered == answered => Some(tally.clone()),
        _ => None,
    })
    .await
    .0
}

/// Every value the store holds under the class's keys, as text.
fn stored(redis: &RedisServer, code: &str) -> (String, i64, i64) {
    let mut c = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let hash_key = format!("locklab:class:{code}");
    let log_key = format!("{hash_key}:log");
    let hash: Vec<String> = redis::cmd("HGETALL").arg(&hash_key).query(&mut c).unwrap();
    let log: redis::Value = redis::cmd("XRANGE")
        .arg(&log_key)
        .arg("-")
        .arg("+")
        .query(&mut c)
        .unwrap();
    let mut ttl = |k: &str| redis::cmd("TTL").arg(k).query::<i64>(&mut c).unwrap();
    let (t1, t2) = (ttl(&hash_key), ttl(&log_key));
    (format!("{hash:?} {log:?}"), t1, t2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_serve_one_class_and_a_killed_one_loses_no_answer() {
    let redis = RedisServer::start();
    let store = redis.url();
    let mut a = Instance::start(&store);
    let b = Instance::start(&store);

    // The presenter on A; two followers on each instance.
    let mut p = open(a.addr).await;
    say(&mut p, json!({"type":"start"})).await;
    let ((code, secret), _) = until(&mut p, "started", |m| match m {
        ServerSays::Started { code, secret, .. } => Some((code.to_string(), secret.clone())),
        _ => None,
    })
    .await;
    let mut on_a = [
        Follower::join(a.addr, &code, "ann").await,
        Follower::join(a.addr, &code, "al").await,
    ];
    let mut on_b = [
        Follower::join(b.addr, &code, "bea").await,
        Follower::join(b.addr, &code, "bo").await,
    ];
    // ash, on A too, never comes back after A dies.
    let ash = Follower::join(a.addr, &code, "ash").await;

    // Each instance advertises its --class-url in its heartbeat, and the
    // pages are told the live ones: where to go when theirs dies.
    let mut both = vec![class_url(&a), class_url(&b)];
    both.sort();
    for f in on_a.iter_mut() {
        f.told_instances(2).await;
        assert_eq!(f.instances, both);
    }
    // B takes a page of A (a live instance of the class) as the lab's own;
    // a page of any other origin is refused as before.
    let a_origin = class_url(&a).trim_end_matches('/').to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Err(e) = open_from(b.addr, &a_origin).await {
        assert!(Instant::now() < deadline, "B refuses A's page: {e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let refused = open_from(b.addr, "http://127.0.0.1:1").await;
    assert!(refused.is_err_and(|e| e.contains("403")), "another origin is refused");

    // Moves reach every follower, on both instances.
    for step in 1..=2 {
        say(
            &mut p,
            control(&secret, json!({"do":"move","position":{"lesson":"05","step":step}})),
        )
        .await;
    }
    for f in on_a.iter_mut().chain(on_b.iter_mut()) {
        for step in 1..=2 {
            match f.expect("moved").await {
                ServerSays::Moved { position, .. } => assert_eq!(position.step, step),
                other => panic!("{other:?}"),
            }
        }
    }

    // A question; ann (on A) answers right, bea (on B) wrong.
    let (lesson, step, right, choices) = quiz();
    let wrong = (right + 1) % choices;
    say(
        &mut p,
        control(&secret, json!({"do":"ask","lesson":lesson,"step":step,"reply":""})),
    )
    .await;
    let mut qid = 0;
    for f in on_a.iter_mut().chain(on_b.iter_mut()) {
        match f.expect("asked").await {
            ServerSays::Asked { question, .. } => qid = question.id,
            other => panic!("{other:?}"),
        }
    }
    answer(&mut on_a[0], qid, right).await;
    answer(&mut on_b[0], qid, wrong).await;
    let t = tally_of(&mut p, 2).await;
    assert_eq!((t.right, t.counts[right], t.counts[wrong], t.of), (1, 1, 1, 5), "{t:?}");

    // A dies mid-question. Its followers come back on B where they left off.
    a.kill();
    while next(&mut p).await.is_some() {} // the presenter's socket went with A
    for f in on_a.iter_mut() {
        let next = f.reconnects_to(&class_url(&a));
        assert_eq!(next, format!("ws://{}/api/class/ws", b.addr), "the other live instance");
        let missed = f.rejoin(&next, &code).await;
        assert!(missed.is_empty(), "nothing was relayed since: {missed:?}");
    }
    // al answers on B now; ann's answer again changes nothing.
    answer(&mut on_a[1], qid, right).await;
    answer(&mut on_a[0], qid, wrong).await;

    // The presenter resumes on B with the secret (a wrong one is refused).
    let mut p2 = open(b.addr).await;
    say(&mut p2, json!({"type":"resume","code":code,"secret":"0".repeat(32)})).await;
    assert!(matches!(next(&mut p2).await, Some(ServerSays::Error { .. })));
    let mut p2 = open(b.addr).await;
    say(&mut p2, json!({"type":"resume","code":code,"secret":secret})).await;
    until(&mut p2, "started", |m| {
        matches!(m, ServerSays::Started { .. }).then_some(())
    })
    .await;
    // A's heartbeat expires: ash (A's and not back) is shown away on B,
    // and is no longer counted among those who may answer.
    until(&mut p2, "ash away", |m| match m {
        ServerSays::Roster { members } => members
            .iter()
            .any(|m| m.member == ash.member && !m.connected)
            .then_some(()),
        _ => None,
    })
    .await;
    let t = tally_of(&mut p2, 3).await;
    assert_eq!((t.right, t.counts[right], t.counts[wrong], t.of), (2, 2, 1, 4), "{t:?}");

    // Reveal: every follower sees it; the three who answered their verdict.
    say(&mut p2, control(&secret, json!({"do":"reveal","question":qid}))).await;
    for (f, verdict) in on_a
        .iter_mut()
        .chain(on_b.iter_mut())
        .zip([Some(true), Some(true), Some(false), None])
    {
        match f.expect("revealed").await {
            ServerSays::Revealed {
                tally, right_choice, ..
            } => {
                assert_eq!((tally.answered, tally.right, right_choice), (3, 2, Some(right)));
            }
            other => panic!("{other:?}"),
        }
        if let Some(v) = verdict {
            let (got, _) = until(&mut f.ws, "its verdict", |m| match m {
                ServerSays::Answered { right, score, .. } => Some((*right, *score)),
                _ => None,
            })
            .await;
            assert_eq!(got, (Some(v), u32::from(v)), "{}", f.member);
        }
    }

    // The store never saw the secret; the keys expire.
    let (text, ttl_hash, ttl_log) = stored(&redis, &code);
    assert!(!text.contains(&secret), "the secret is stored in clear");
    assert!(text.contains(&locklab_backend::class::secret_hash(&secret)));
    assert!(ttl_hash > 0 && ttl_log > 0, "TTLs {ttl_hash} {ttl_log}");

    // The end: the summary counts every answer and score.
    say(&mut p2, control(&secret, json!({"do":"end"}))).await;
    let (summary, _) = until(&mut on_b[1].ws, "ended", |m| match m {
        ServerSays::Ended { summary } => Some(summary.clone()),
        _ => None,
    })
    .await;
    let q = &summary.questions[0].tally;
    assert_eq!((q.answered, q.right, q.counts[right], q.counts[wrong]), (3, 2, 2, 1));
    let scores: std::collections::BTreeMap<_, _> = summary
        .members
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.score))
        .collect();
    let want: std::collections::BTreeMap<_, _> = [("al", 1), ("ann", 1), ("ash", 0), ("bea", 0), ("bo", 0)]
        .map(|(n, s)| (n.to_owned(), s))
        .into();
    assert_eq!(scores, want);
    let (_, ttl_hash, ttl_log) = stored(&redis, &code);
    assert!(
        (1..=60).contains(&ttl_hash) && (1..=60).contains(&ttl_log),
        "an ended class goes soon: {ttl_hash} {ttl_log}"
    );
}

/// `locklab bench --class` at a small room, on both stores (the Redis one
/// given, and one the bench starts itself), so the bench
/// does not rot between the runs at 500: every follower gets every move
/// and every answer comes back. Its figures are printed, never asserted.
#[test]
fn the_class_bench_runs_a_small_room_on_both_stores() {
    let redis = RedisServer::start();
    let url = redis.url();
    // `redis` alone: the bench starts a redis-server of its own.
    for store in [None, Some(url.as_str()), Some("redis")] {
        let mut bench = Command::new(locklab_tests::locklab_binary());
        bench.args(["bench", "--class", "20"]);
        if let Some(url) = store {
            bench.args(["--class-store", url]);
        }
        let out = bench.stderr(Stdio::inherit()).output().expect("locklab bench runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{store:?}: {text}");
        eprintln!("{text}");
        // 20 moves to each of 20 followers.
        assert!(text.contains("(400 receipts)"), "{store:?}: {text}");
        for figure in ["p50 ", "p99 ", "answers: ", "KiB per follower once joined"] {
            assert!(text.contains(figure), "{store:?} lacks {figure:?}: {text}");
        }
        let which = match store {
            None => "(memory store)".to_owned(),
            Some("redis") => "(Redis store redis://127.0.0.1:".to_owned(),
            Some(u) => format!("(Redis store {u})"),
        };
        assert!(text.contains(&which), "{text}");
    }
}
