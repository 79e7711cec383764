//! Issue 35, design item 3: no user Lua runs on a server the lab does not
//! own unless it cannot diverge. By default a session's script runs on the
//! simulator against its declared keys (read with `DUMP` and `PTTL` under
//! `WATCH`), and only its writes reach Redis, in one `MULTI … EXEC`; with
//! `--scripts=run` scripts are sent after the pre-flight, and those that
//! read the server's state are refused.
//!
//! The owner's server is a real redis-server 7.0.15 with a password,
//! `maxmemory`, keys and a function library of its own. Each test checks
//! the owner answers `PING` within a second throughout, runs no script of
//! the lab's (no `EVAL` in its command statistics, `SCRIPT KILL` finds
//! nothing running) and keeps its data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::faults::proxy::LinkFault;
use locklab_backend::real::session::effects::NOTE;
use locklab_backend::real::session::{NodeTarget, Session, SessionError, SessionLimits, SessionPool};
use locklab_backend::web::api::ApiState;
use locklab_core::reply::Reply;
use locklab_tests::ws::{connect, send, serve, until};
use locklab_tests::RedisServer;
use serde_json::json;

const PASSWORD: &str = "s3cret-owner-pw";

/// B4: writes, then loops only where `INFO server` names the kernel (the
/// simulator says `os:locklab simulator`).
const B4_INFO: &str =
    "EVAL \"redis.call('SET',KEYS[1],1) if string.find(redis.call('INFO','server'),'os:Linux',1,true) \
                       then while true do end end return 1\" 1 k";
/// B4 again, on `TIME`'s microseconds (a multiple of 1000 on the simulator).
const B4_TIME: &str = "EVAL \"redis.call('SET',KEYS[1],2) if tonumber(redis.call('TIME')[2]) % 1000 ~= 0 \
                       then while true do end end return 2\" 1 k2";

/// The owner's server.
struct Owner {
    server: RedisServer,
    conn: RealConnection,
}

impl Owner {
    fn start() -> Owner {
        let server = RedisServer::start();
        let mut conn = RealConnection::open(&server.url()).unwrap();
        for line in [
            "CONFIG SET maxmemory 512mb",
            "SET owner:secret production-data",
            "FUNCTION LOAD \"#!lua name=ownerlib\nredis.register_function('ownerfn', function() return 'owner' end)\"",
            &format!("CONFIG SET requirepass {PASSWORD}"),
            &format!("AUTH {PASSWORD}"),
            "CONFIG RESETSTAT",
        ] {
            let r = conn.execute(&locklab_core::cli::parse(line).unwrap()).unwrap();
            assert!(!r.is_error(), "{line}: {r:?}");
        }
        Owner { server, conn }
    }

    fn url(&self) -> String {
        format!("redis://default:{PASSWORD}@127.0.0.1:{}/", self.server.port())
    }

    fn run(&mut self, line: &str) -> Reply {
        self.conn.execute(&locklab_core::cli::parse(line).unwrap()).unwrap()
    }

    /// The calls of `command` since the last `CONFIG RESETSTAT`.
    fn calls(&mut self, command: &str) -> u64 {
        calls(&mut self.conn, command)
    }

    /// An `INFO` field as a number.
    fn info(&mut self, section: &str, field: &str) -> u64 {
        let Reply::Bulk(info) = self.run(&format!("INFO {section}")) else {
            panic!()
        };
        let prefix = format!("{field}:");
        String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()).map(|v| v.trim().parse().unwrap()))
            .unwrap()
    }

    /// No script of the lab's ran here, none runs now, and the owner's
    /// data and library are as they were.
    fn assert_no_lab_lua_and_untouched(&mut self) {
        for cmd in ["eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"] {
            assert_eq!(self.calls(cmd), 0, "the owner's Redis ran {cmd}");
        }
        assert_eq!(
            self.run("SCRIPT KILL"),
            Reply::Error("NOTBUSY No scripts in execution right now.".into())
        );
        assert_eq!(self.run("GET owner:secret"), Reply::bulk("production-data"));
        assert_eq!(self.run("FCALL ownerfn 0"), Reply::bulk("owner"));
    }
}

/// The calls of `command` on `conn`'s server since the last `CONFIG RESETSTAT`.
fn calls(conn: &mut RealConnection, command: &str) -> u64 {
    let Ok(Reply::Bulk(stats)) = conn.execute(&[b"INFO".to_vec(), b"commandstats".to_vec()]) else {
        panic!()
    };
    let prefix = format!("cmdstat_{command}:calls=");
    String::from_utf8_lossy(&stats)
        .lines()
        .find_map(|l| {
            l.strip_prefix(prefix.as_str())
                .map(|v| v.split(',').next().unwrap().parse().unwrap())
        })
        .unwrap_or(0)
}

/// Pings the owner every 20 ms on a connection of its own and keeps the
/// slowest answer (a `PING` unanswered for 3 s counts as 3 s).
struct Pinger {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Duration>,
}

impl Pinger {
    fn start(owner: &Owner) -> Pinger {
        let url = owner.url();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut conn = RealConnection::open(&url).unwrap();
            conn.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let mut worst = Duration::ZERO;
            while !flag.load(Ordering::SeqCst) {
                let t = Instant::now();
                match conn.execute(&[b"PING".to_vec()]) {
                    Ok(Reply::Status(s)) if s == "PONG" => worst = worst.max(t.elapsed()),
                    _ => return Duration::from_secs(3),
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            worst
        });
        Pinger { stop, thread }
    }

    /// Stop; the slowest `PING` must have been answered within 1 s.
    fn assert_responsive(self) {
        self.stop.store(true, Ordering::SeqCst);
        let worst = self.thread.join().unwrap();
        assert!(
            worst < Duration::from_secs(1),
            "the owner's Redis took {worst:?} to answer PING"
        );
    }
}

fn pool(run_scripts: bool) -> SessionPool {
    SessionPool::new(SessionLimits {
        commands_per_sec: f64::INFINITY,
        run_scripts,
        ..SessionLimits::default()
    })
}

fn session(pool: &SessionPool, owner: &Owner) -> Session {
    pool.open(vec![NodeTarget::new("redis", owner.url())]).unwrap()
}

/// The refusal of a script the lab did not send, with `why` in it.
fn assert_refused(got: Result<Reply, SessionError>, why: &str) {
    match got {
        Err(SessionError::ScriptRefused(text)) => assert!(text.contains(why), "{text}"),
        other => panic!("not refused ({why}): {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b4_a_script_that_loops_only_on_redis_never_runs_there() {
    let mut owner = Owner::start();
    let pinger = Pinger::start(&owner);
    let mut ws = connect(serve(ApiState::new(Some(owner.url()))).await).await;
    for (script, answer, key, value) in [
        (B4_INFO, "(integer) 1", "k", "\"1\""),
        (B4_TIME, "(integer) 2", "k2", "\"2\""),
    ] {
        send(&mut ws, json!({"type":"command","client":"A","line":script})).await;
        let msgs = until(&mut ws, "reply").await;
        assert_eq!(msgs.last().unwrap()["text"], answer, "{msgs:?}");
        // The console and the trace say how it ran.
        let text = msgs.iter().map(|m| m.to_string()).collect::<String>();
        assert!(text.contains(NOTE), "{text}");
        // Its write reached Redis, as a write.
        send(
            &mut ws,
            json!({"type":"command","client":"A","line":format!("GET {key}")}),
        )
        .await;
        assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], value);
    }
    assert_eq!(owner.calls("exec"), 2, "each script's write went as one MULTI … EXEC");
    owner.assert_no_lab_lua_and_untouched();
    pinger.assert_responsive();
}

#[test]
fn b8_and_b2_scripts_reach_nothing_the_lab_refuses() {
    let mut owner = Owner::start();
    let pinger = Pinger::start(&owner);
    let pool = pool(false);
    let mut s = session(&pool, &owner);
    s.run_line("A", 0, "SADD s a b c").unwrap();
    // B8: the command comes from ARGV. On the simulator the fence sees it:
    // one the lab's table refuses (PFADD is not in it), or one past the
    // table's bound (SRANDMEMBER's count), refuses the whole script, and
    // nothing of it reaches Redis.
    let b8 = "EVAL \"return redis.call(ARGV[1], KEYS[1], ARGV[2])\" 1 s";
    for (args, why) in [
        ("PFADD x", "not allowed"),
        ("SRANDMEMBER -5000", "the lab's bound is 1000"),
        ("MEMORY PURGE", "not allowed"),
        ("CONFIG maxmemory", "not allowed"),
        ("DEBUG SLEEP", "not allowed"),
        ("FLUSHALL x", "not allowed"),
    ] {
        assert_refused(s.run_line("A", 0, &format!("{b8} {args}")), why);
    }
    // One the table has runs on the simulator: a read, so nothing is sent.
    assert_eq!(
        s.run_line("A", 0, &format!("{b8} SISMEMBER a")).unwrap(),
        Reply::Integer(1)
    );
    // A key the script did not declare: the simulator does not have it.
    assert_refused(
        s.run_line("A", 0, "EVAL \"return redis.call('GET', 'owner:secret')\" 0"),
        "did not declare",
    );
    // B2's script: loops inside pcall, only on Linux. On the simulator it
    // does not loop, and nothing of it runs on Redis.
    let b2 = "EVAL \"pcall(function() if string.find(redis.call('INFO','server'),'os:Linux',1,true) then \
              while true do end end end) redis.call('SET', KEYS[1], 'ran') return 1\" 1 b2";
    assert_eq!(s.run_line("A", 0, b2).unwrap(), Reply::Integer(1));
    assert_eq!(s.run_line("A", 0, "GET b2").unwrap(), Reply::bulk("ran"));
    // And one that loops on the simulator too: refused, or stopped there.
    let spin = "EVAL \"pcall(function() while true do end end) return 1\" 0";
    let _ = s.run_line("A", 0, spin);
    // A script in a transaction would run on Redis: refused, discarded.
    s.run_line("A", 0, "MULTI").unwrap();
    s.run_line("A", 0, "SET t 1").unwrap();
    s.run_line("A", 0, "EVAL \"return 1\" 0").unwrap();
    assert_refused(s.run_line("A", 0, "EXEC"), "MULTI");
    assert_eq!(s.run_line("A", 0, "GET t").unwrap(), Reply::Nil);
    assert_eq!(owner.calls("memory"), 0);
    assert_eq!(owner.calls("debug"), 0);
    owner.assert_no_lab_lua_and_untouched();
    pinger.assert_responsive();
}

#[test]
fn b10_a_script_reads_only_its_declared_keys_with_plain_commands() {
    let mut owner = Owner::start();
    let pool = pool(false);
    let mut s = session(&pool, &owner);
    const KEYS: usize = 50;
    for i in 0..KEYS {
        s.run_line("A", 0, &format!("SETRANGE s{i} 262143 x")).unwrap();
    }
    owner.run("CONFIG RESETSTAT");
    let processed = owner.info("stats", "total_commands_processed");
    let lua = owner.info("memory", "used_memory_lua");
    const SCRIPTS: u64 = 10;
    let pinger = Pinger::start(&owner);
    for _ in 0..SCRIPTS {
        let looped = "EVAL \"local n = 0 for i = 1, 2 do n = n + redis.call('STRLEN', KEYS[1]) end return n\" 1 s7";
        assert_eq!(s.run_line("A", 0, looped).unwrap(), Reply::Integer(2 * 262_144));
    }
    pinger.assert_responsive();
    // Per script: WATCH, TIME, DUMP and PTTL of its one key, UNWATCH (it
    // writes nothing); and the INFO calls of this test.
    let per_script = (owner.info("stats", "total_commands_processed") - processed) as f64 / SCRIPTS as f64;
    assert!(
        per_script <= 8.0,
        "{per_script} commands on the owner's Redis per script"
    );
    assert_eq!(owner.calls("dump"), SCRIPTS, "only the declared key is read");
    assert!(
        owner.info("memory", "used_memory_lua") <= lua,
        "the owner's Lua heap grew"
    );
    owner.assert_no_lab_lua_and_untouched();
}

#[test]
fn a_declared_key_changed_before_exec_runs_the_script_again() {
    let mut owner = Owner::start();
    let pool = pool(false);
    let mut s = session(&pool, &owner);
    assert_eq!(s.run_line("A", 0, "SET w orig").unwrap(), Reply::ok());
    let key = format!("{}w", s.prefix());
    // A's link is slow, so the owner's change lands between the lab's read
    // (WATCH …) and its EXEC with 300 ms to spare.
    s.set_link(
        "A",
        0,
        LinkFault {
            latency_ms: 300,
            ..LinkFault::default()
        },
    )
    .unwrap();
    owner.run("CONFIG RESETSTAT");
    let url = owner.url();
    let changer = std::thread::spawn(move || {
        let mut other = RealConnection::open(&url).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while calls(&mut other, "watch") == 0 {
            assert!(Instant::now() < deadline, "the lab never watched the key");
            std::thread::sleep(Duration::from_millis(1));
        }
        let set = [b"SET".to_vec(), key.into_bytes(), b"changed".to_vec()];
        assert_eq!(other.execute(&set).unwrap(), Reply::ok());
    });
    let script =
        "EVAL \"local v = redis.call('GET', KEYS[1]) redis.call('SET', KEYS[1], v .. '+script') return v\" 1 w";
    let reply = s.run_line("A", 0, script).unwrap();
    changer.join().unwrap();
    // The first EXEC failed on the watched key; the second run read the
    // owner's change and wrote on top of it.
    assert_eq!(reply, Reply::bulk("changed"));
    assert_eq!(
        owner.run(&format!("GET {}w", s.prefix())),
        Reply::bulk("changed+script")
    );
    assert_eq!(owner.calls("watch"), 2);
    owner.assert_no_lab_lua_and_untouched();
}

#[test]
fn scripts_run_refuses_scripts_that_read_the_servers_state() {
    let mut owner = Owner::start();
    let pinger = Pinger::start(&owner);
    let pool = pool(true);
    let mut s = session(&pool, &owner);
    let why = "reads what only your server has";
    assert_refused(
        s.run_line("A", 0, "EVAL \"return redis.call('INFO', 'server')\" 0"),
        why,
    );
    assert_refused(s.run_line("A", 0, B4_INFO), why);
    assert_refused(s.run_line("A", 0, B4_TIME), why);
    assert_refused(
        s.run_line("A", 0, "EVAL \"return redis.call('PTTL', KEYS[1])\" 1 k"),
        why,
    );
    // B8: a command named by ARGV is no straight-line script: the
    // pre-flight sees what it calls.
    s.run_line("A", 0, "SADD s a b c").unwrap();
    assert_refused(
        s.run_line(
            "A",
            0,
            "EVAL \"return redis.call(ARGV[1], KEYS[1], ARGV[2])\" 1 s SRANDMEMBER -5",
        ),
        why,
    );
    // What cannot diverge still runs on Redis: the release, one EVAL (the
    // refused ones were never sent; the pre-flight's own reads of the
    // session's keys are the EVALs before).
    s.run_line("A", 0, "SET lock tok NX PX 60000").unwrap();
    let before = owner.calls("eval");
    let release = "EVAL \"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else \
                   return 0 end\" 1 lock tok";
    assert_eq!(s.run_line("A", 0, release).unwrap(), Reply::Integer(1));
    assert_eq!(owner.calls("eval"), before + 1);
    assert_eq!(owner.run("GET owner:secret"), Reply::bulk("production-data"));
    pinger.assert_responsive();
}
