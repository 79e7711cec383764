//! The backend's lab sessions and managed topologies, on real redis-server
//! processes: the sandbox walls hold (refusals before Redis, ACL inside
//! Lua, prefixes keep sessions apart), faults are real, and the session
//! survives its server dying. No fixed sleeps: every wait polls a deadline.

use std::time::{Duration, Instant};

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::session::{NodeTarget, SessionError, SessionLimits, SessionPool};
use locklab_backend::real::topology::{self, NodeFault, Servers, TopologyKind};
use locklab_core::cli::parse;
use locklab_core::reply::Reply;
use locklab_core::trace::EventKind;
use locklab_tests::RedisServer;

fn direct(conn: &mut RealConnection, line: &str) -> Reply {
    conn.execute(&parse(line).unwrap()).unwrap()
}

fn poll(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn one_node(url: &str) -> Vec<NodeTarget> {
    vec![NodeTarget::new("redis", url)]
}

#[test]
fn dangerous_commands_are_refused_and_outside_keys_survive() {
    let server = RedisServer::start();
    let mut admin = RealConnection::open(&server.url()).unwrap();
    direct(&mut admin, "SET outside precious");
    direct(&mut admin, "SET lab:other:k theirs");

    let pool = SessionPool::default();
    let mut s = pool.open(one_node(&server.url())).unwrap();
    for line in [
        "FLUSHALL",
        "CONFIG SET maxmemory 1",
        "KEYS *",
        "KEYS lab:other:*",
        "DEBUG SLEEP 0",
        "FLUSHDB",
        "SHUTDOWN",
    ] {
        let err = s.run_line("A", 0, line).unwrap_err();
        assert!(matches!(err, SessionError::NotAllowed { .. }), "{line}: {err}");
        let text = err.to_string();
        assert!(text.starts_with("ERR locklab: '"), "{text}");
        assert!(text.contains("is not allowed in a lab session"), "{text}");
    }
    assert_eq!(
        s.run_line("A", 0, "FLUSHALL").unwrap_err().to_string(),
        "ERR locklab: 'FLUSHALL' is not allowed in a lab session (it is dangerous or administrative)"
    );
    // Inside Lua: on a server the lab does not own a script runs on the
    // simulator, fenced to the lab's table and the keys it declares (the
    // ACL, Redis's own wall inside Lua, is checked where scripts run on
    // Redis: `tests/tests/security.rs`).
    for (script, why) in [
        ("return redis.call('FLUSHALL')", "not allowed"),
        ("return redis.call('GET','outside')", "did not declare"),
        ("return redis.call('SET','outside','x')", "did not declare"),
    ] {
        let r = s.run_line("A", 0, &format!("EVAL \"{script}\" 0"));
        assert!(
            matches!(&r, Err(SessionError::ScriptRefused(e)) if e.contains(why)),
            "{script}: {r:?}"
        );
    }
    // Server-wide function state is refused before Redis.
    assert!(s.run_line("A", 0, "FUNCTION FLUSH").is_err());
    // Inside the prefix, everything works, shown unprefixed.
    assert_eq!(s.run_line("A", 0, "SET lock A NX PX 10000").unwrap(), Reply::ok());
    assert_eq!(s.run_line("A", 0, "GET lock").unwrap(), Reply::bulk("A"));
    let r = s.run_line("A", 0, "SCAN 0 COUNT 1000").unwrap();
    assert_eq!(
        r,
        Reply::Array(vec![Reply::bulk("0"), Reply::Array(vec![Reply::bulk("lock")])])
    );
    assert_eq!(
        s.run_line("A", 0, "EVAL \"return KEYS[1]\" 1 lock").unwrap(),
        Reply::bulk("lock")
    );
    assert!(s
        .run_line("A", 0, "INFO stats")
        .unwrap()
        .to_cli()
        .contains("total_commands_processed"));
    // The real key is under the prefix.
    let real_key = format!("{}lock", s.prefix());
    assert_eq!(direct(&mut admin, &format!("GET {real_key}")), Reply::bulk("A"));

    // Trace: Sent / Executed / Received for a command; a Note for a refusal.
    let events = s.take_events();
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::Sent { .. })));
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::Executed { .. })));
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::Received { .. })));
    assert!(events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Note { text } if text.contains("FLUSHALL"))));
    assert!(events.windows(2).all(|w| w[0].step + 1 == w[1].step));

    let user = s.acl_user().to_owned();
    drop(s);
    assert_eq!(direct(&mut admin, "GET outside"), Reply::bulk("precious"));
    assert_eq!(direct(&mut admin, "GET lab:other:k"), Reply::bulk("theirs"));
    // Session end: its ACL user and its keys are gone.
    assert_eq!(direct(&mut admin, &format!("ACL GETUSER {user}")), Reply::Nil);
    assert_eq!(direct(&mut admin, &format!("EXISTS {real_key}")), Reply::Integer(0));
    assert_eq!(pool.live(), 0);
}

/// Function libraries are server-wide in Redis, so each session's live in
/// a namespace of its own: a session loads, replaces and calls its own,
/// never another session's or the server's, and takes them with it when
/// it ends. (Before the namespaces, sessions shared function names and a
/// library was "owned" by whoever loaded it first; a `NAME=` spelling got
/// past that check.)
#[test]
fn function_libraries_belong_to_the_session_that_loaded_them() {
    let server = RedisServer::start();
    let mut admin = RealConnection::open(&server.url()).unwrap();
    let lib = |name: &str, ret: &str| {
        format!("FUNCTION LOAD REPLACE \"#!lua name={name}\\nredis.register_function('{name}_f', function() return {ret} end)\"")
    };
    direct(&mut admin, &lib("theirs", "1"));
    let pool = SessionPool::default();
    let mut a = pool.open(one_node(&server.url())).unwrap();
    let mut b = pool.open(one_node(&server.url())).unwrap();
    let load = lib("locklib", "1").replace("LOAD REPLACE", "LOAD");
    assert_eq!(a.run_line("A", 0, &load).unwrap(), Reply::bulk("locklib"));
    assert_eq!(
        a.run_line("A", 0, &lib("locklib", "2")).unwrap(),
        Reply::bulk("locklib")
    );
    assert_eq!(a.run_line("A", 0, "FCALL locklib_f 0").unwrap(), Reply::Integer(2));
    // B sees none of A's: it loads and replaces a `locklib` of its own.
    assert_eq!(
        b.run_line("A", 0, "FCALL locklib_f 0").unwrap(),
        Reply::Error("ERR Function not found".into())
    );
    assert_eq!(b.run_line("A", 0, &load).unwrap(), Reply::bulk("locklib"));
    assert_eq!(
        b.run_line("A", 0, &lib("locklib", "3")).unwrap(),
        Reply::bulk("locklib")
    );
    assert_eq!(b.run_line("A", 0, "FCALL locklib_f 0").unwrap(), Reply::Integer(3));
    assert_eq!(
        a.run_line("A", 0, "FCALL locklib_f 0").unwrap(),
        Reply::Integer(2),
        "A's unchanged"
    );
    // Replacing the server's library makes B one of its own of that name.
    assert_eq!(b.run_line("A", 0, &lib("theirs", "9")).unwrap(), Reply::bulk("theirs"));
    assert_eq!(direct(&mut admin, "FCALL theirs_f 0"), Reply::Integer(1));
    // Loading an existing library without REPLACE: Redis's own answer.
    let r = b.run_line("A", 0, &load).unwrap();
    assert_eq!(r, Reply::Error("ERR Library 'locklib' already exists".into()));
    drop(a);
    drop(b);
    // The sessions' libraries went with them; the server's own stayed.
    let Reply::Array(libs) = direct(&mut admin, "FUNCTION LIST") else {
        panic!()
    };
    assert_eq!(libs.len(), 1, "{libs:?}");
    assert_eq!(direct(&mut admin, "FCALL theirs_f 0"), Reply::Integer(1));
}

#[test]
fn limits_are_enforced() {
    let server = RedisServer::start();
    let limits = SessionLimits {
        commands_per_sec: 5.0,
        burst: 5.0,
        max_wait: Duration::from_millis(1),
        max_sessions: 2,
        ..SessionLimits::default()
    };
    let pool = SessionPool::new(limits);
    let mut s = pool.open(one_node(&server.url())).unwrap();
    let long = format!("SET k {}", "x".repeat(64 * 1024));
    assert!(matches!(s.run_line("A", 0, &long), Err(SessionError::TooLarge { .. })));
    let many = vec![b"DEL".to_vec(); 1025];
    assert!(matches!(s.run("A", 0, &many), Err(SessionError::TooLarge { .. })));
    let script = vec![b"EVAL".to_vec(), vec![b' '; 64 * 1024 + 1], b"0".to_vec()];
    assert!(matches!(
        s.run("A", 0, &script),
        Err(SessionError::TooLarge { what: "the script", .. })
    ));
    assert!(matches!(
        s.run_line("A", 0, "SET \"unbalanced"),
        Err(SessionError::BadLine)
    ));
    // The bucket: 5 go, the 6th within a millisecond is refused.
    let mut refused = 0;
    for _ in 0..8 {
        if let Err(SessionError::RateLimited(_)) = s.run_line("A", 0, "PING") {
            refused += 1;
        }
    }
    assert!(refused >= 2, "refused {refused}");
    let _s2 = pool.open(one_node(&server.url())).unwrap();
    assert!(matches!(
        pool.open(one_node(&server.url())),
        Err(SessionError::TooManySessions(2))
    ));
}

#[test]
fn fifty_sessions_do_not_cross_talk() {
    let server = RedisServer::start();
    let pool = SessionPool::default();
    let started = Instant::now();
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let pool = pool.clone();
            let url = server.url();
            std::thread::spawn(move || {
                let mut s = pool.open(one_node(&url)).unwrap();
                let me = format!("session-{i}");
                for j in 0..250 {
                    let client = if j % 2 == 0 { "A" } else { "B" };
                    let r = s.run_line(client, 0, &format!("SET lock {me}-{j} PX 60000")).unwrap();
                    assert_eq!(r, Reply::ok(), "session {i} SET {j}");
                    let r = s.run_line(client, 0, "GET lock").unwrap();
                    assert_eq!(r, Reply::bulk(format!("{me}-{j}")), "session {i} GET {j}: cross-talk");
                }
                s.take_events().len()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 500 * 3);
    }
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert_eq!(pool.live(), 0);
}

#[test]
fn session_survives_its_server_dying() {
    let mut topo = Servers::start(TopologyKind::Single).unwrap();
    let pool = SessionPool::default();
    let mut s = pool.open(topo.targets()).unwrap();
    assert_eq!(s.run_line("A", 0, "SET lock A").unwrap(), Reply::ok());
    topo.fault(NodeFault::Crash { node: 0 }).unwrap();
    let err = s.run_line("A", 0, "GET lock").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, SessionError::Unreachable { .. }), "{text}");
    assert!(
        text.contains("is unreachable") && text.contains("reconnects on the next command"),
        "{text}"
    );
    assert!(s.take_events().iter().any(|e| matches!(e.kind, EventKind::Lost { .. })));
    topo.fault(NodeFault::Restart { node: 0 }).unwrap();
    // Restarted without persistence: empty, and the ACL user is re-made.
    assert_eq!(s.run_line("A", 0, "GET lock").unwrap(), Reply::Nil);
    assert_eq!(s.run_line("B", 0, "SET lock B NX").unwrap(), Reply::ok());
    assert!(s.run_line("A", 0, "FLUSHALL").is_err());
}

#[test]
fn paused_server_times_out_then_resumes() {
    let mut topo = Servers::start(TopologyKind::Single).unwrap();
    let pool = SessionPool::new(SessionLimits {
        reply_timeout: Duration::from_millis(300),
        ..SessionLimits::default()
    });
    let mut s = pool.open(topo.targets()).unwrap();
    assert_eq!(s.run_line("A", 0, "SET lock A").unwrap(), Reply::ok());
    topo.fault(NodeFault::Pause { node: 0 }).unwrap();
    assert!(matches!(
        s.run_line("A", 0, "GET lock"),
        Err(SessionError::Unreachable { .. })
    ));
    topo.fault(NodeFault::Resume { node: 0 }).unwrap();
    assert_eq!(s.run_line("A", 0, "GET lock").unwrap(), Reply::bulk("A"));
}

#[test]
fn external_topology_refuses_faults() {
    let server = RedisServer::start();
    let mut topo = Servers::external(server.url());
    let err = topo.fault(NodeFault::Crash { node: 0 }).unwrap_err().to_string();
    assert!(err.contains("never kills"), "{err}");
    assert!(topo.managed_node(0).is_none());
    // Still alive.
    let mut c = RealConnection::open(&server.url()).unwrap();
    assert_eq!(direct(&mut c, "PING"), Reply::status("PONG"));
}

#[test]
fn replicated_topology_replicates_cuts_and_promotes() {
    let mut topo = Servers::start(TopologyKind::Replicated).unwrap();
    let pool = SessionPool::default();
    let mut s = pool.open(topo.targets()).unwrap();
    assert_eq!(s.run_line("A", 0, "SET lock A PX 60000").unwrap(), Reply::ok());
    poll("replication to the replica", || {
        s.run_line("B", 1, "GET lock").unwrap() == Reply::bulk("A")
    });
    let r = s.run_line("B", 1, "SET lock B").unwrap();
    assert!(matches!(&r, Reply::Error(e) if e.starts_with("READONLY")), "{r:?}");

    // Cut: the master's next write does not arrive.
    topo.fault(NodeFault::CutReplication { node: 1 }).unwrap();
    let replica = topo.managed_node(1).unwrap().port();
    poll("link down", || {
        topology::info_field(replica, "replication", "master_link_status").as_deref() == Some("down")
    });
    assert_eq!(s.run_line("A", 0, "SET lock A2 PX 60000").unwrap(), Reply::ok());
    assert_eq!(s.run_line("B", 1, "GET lock").unwrap(), Reply::bulk("A"));
    topo.fault(NodeFault::HealReplication { node: 1 }).unwrap();
    poll("heal", || s.run_line("B", 1, "GET lock").unwrap() == Reply::bulk("A2"));

    topo.fault(NodeFault::Promote { node: 1 }).unwrap();
    poll("promotion", || {
        topology::info_field(replica, "replication", "role").as_deref() == Some("master")
    });
    assert_eq!(s.run_line("B", 1, "SET lock B").unwrap(), Reply::ok());
    assert_eq!(topo.nodes()[1].role, locklab_core::protocol::NodeRole::Master);
}

#[test]
fn redlock5_starts_five_independent_masters() {
    let topo = Servers::start(TopologyKind::Redlock5).unwrap();
    let nodes = topo.nodes();
    assert_eq!(nodes.len(), 5);
    let pool = SessionPool::default();
    let mut s = pool.open(topo.targets()).unwrap();
    for i in 0..5u32 {
        let port = topo.managed_node(i).unwrap().port();
        assert_eq!(
            topology::info_field(port, "replication", "role").as_deref(),
            Some("master")
        );
        assert_eq!(s.run_line("A", i, "SET lock A NX PX 10000").unwrap(), Reply::ok());
    }
    // Independent: a key deleted on one is still on the others.
    assert_eq!(s.run_line("A", 0, "DEL lock").unwrap(), Reply::Integer(1));
    assert_eq!(s.run_line("A", 1, "GET lock").unwrap(), Reply::bulk("A"));
}

#[test]
fn cluster3_forms_and_refuses_undeclared_keys() {
    let topo = Servers::start(TopologyKind::Cluster3).unwrap();
    let port = topo.managed_node(0).unwrap().port();
    let mut c = RealConnection::open(&format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut saw = None;
    for i in 0..64 {
        let r = direct(&mut c, &format!("EVAL \"return redis.call('GET','key{i}')\" 0"));
        if let Reply::Error(e) = r {
            saw = Some(e);
            break;
        }
    }
    let e = saw.expect("some key lives on another node");
    assert!(
        e.starts_with("ERR Script attempted to access a non local key in a cluster node"),
        "{e}"
    );
}

/// A session on the lab's own cluster behaves like `redis-cli -c`: keys as
/// typed, routed by slot, and a `MOVED` from a stale slot map followed.
#[test]
fn cluster3_session_routes_by_slot_and_follows_moved() {
    let topo = Servers::start(TopologyKind::Cluster3).unwrap();
    let pool = SessionPool::default();
    let mut s = pool.open_on(&topo).unwrap();
    assert_eq!(s.prefix(), "");
    let port = |i: u32| topo.managed_node(i).unwrap().port();
    let mut admin: Vec<RealConnection> = (0..3)
        .map(|i| RealConnection::open(&format!("redis://127.0.0.1:{}/", port(i))).unwrap())
        .collect();
    // bar is in slot 5061 (c1), foo in 12182 (c3).
    assert_eq!(s.run_line("A", 2, "SET bar 1").unwrap(), Reply::ok());
    assert_eq!(direct(&mut admin[0], "GET bar"), Reply::bulk("1"));
    assert_eq!(s.run_line("A", 0, "SET foo 2").unwrap(), Reply::ok());
    assert_eq!(direct(&mut admin[2], "GET foo"), Reply::bulk("2"));
    let events = s.take_events();
    assert!(events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Note { text } if text.starts_with("routed to c1"))));

    // Move slot 12182's neighbour, the empty slot of "baz" (4813, c1), to
    // c2 behind the session's back: its cached map is now stale, c1
    // answers MOVED, and the session follows it.
    assert_eq!(locklab_core::server::cluster::key_slot(b"baz"), 4813);
    let Reply::Bulk(c2_id) = direct(&mut admin[1], "CLUSTER MYID") else {
        panic!("c2 has an id")
    };
    let c2_id = String::from_utf8(c2_id).unwrap();
    for c in &mut admin {
        assert_eq!(direct(c, &format!("CLUSTER SETSLOT 4813 NODE {c2_id}")), Reply::ok());
    }
    assert_eq!(s.run_line("A", 0, "SET baz 3").unwrap(), Reply::ok());
    assert_eq!(direct(&mut admin[1], "GET baz"), Reply::bulk("3"));
    let events = s.take_events();
    let moved = events.iter().any(|e| {
        matches!(&e.kind, EventKind::Executed { replies, .. }
            if matches!(replies.first(), Some(Reply::Error(t)) if t.starts_with("MOVED 4813 ")))
    });
    assert!(moved, "{events:?}");
    let followed = format!("-> Redirected to slot [4813] located at 127.0.0.1:{}", port(1));
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Note { text } if *text == followed)),
        "{events:?}"
    );

    // The walls that stay: the table, and the ACL's command rules in Lua.
    assert!(matches!(
        s.run_line("A", 0, "FLUSHALL"),
        Err(SessionError::NotAllowed { .. })
    ));
    let r = s.run_line("A", 0, "EVAL \"return redis.call('FLUSHALL')\" 0").unwrap();
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("can't run this command")),
        "{r:?}"
    );
    // Dropping the session empties the cluster it owned.
    drop(s);
    assert_eq!(direct(&mut admin[1], "DBSIZE"), Reply::Integer(0));
    assert_eq!(direct(&mut admin[2], "DBSIZE"), Reply::Integer(0));
}

#[test]
fn a_look_at_lock_keys_reads_value_ttl_and_type_without_a_script() {
    let server = RedisServer::start();
    let mut admin = RealConnection::open(&server.url()).unwrap();
    let pool = SessionPool::default();
    for url in [server.url(), format!("{}?protocol=resp3", server.url())] {
        let mut s = pool.open(one_node(&url)).unwrap();
        for line in [
            "SET held tok PX 60000",
            "SET forever tok",
            "HSET reentrant A 2",
            "PEXPIRE reentrant 60000",
            "SET gone tok PX 1",
        ] {
            s.run_line("A", 0, line).unwrap();
        }
        poll("the 1 ms key to expire", || {
            direct(&mut admin, &format!("PTTL {}gone", s.prefix())) == Reply::Integer(-2)
        });
        direct(&mut admin, "CONFIG RESETSTAT");
        let keys = ["held", "forever", "reentrant", "missing", "gone"].map(String::from);
        let seen = s.peek_many(0, &keys).unwrap();
        assert!(
            matches!(&seen[0], Some((v, ttl)) if v == "tok" && (1..=60_000).contains(ttl)),
            "{seen:?}"
        );
        assert_eq!(seen[1], Some(("tok".to_owned(), -1)), "{url}");
        // A non-string shows as its type (Redisson's locks are hashes).
        assert!(
            matches!(&seen[2], Some((v, ttl)) if v == "(hash)" && *ttl > 0),
            "{seen:?}"
        );
        assert_eq!(seen[3..], [None, None], "{url}");
        // Plain reads only: a look costs Redis no script.
        let Reply::Bulk(stats) = direct(&mut admin, "INFO commandstats") else {
            panic!()
        };
        let stats = String::from_utf8_lossy(&stats);
        assert!(!stats.contains("cmdstat_eval"), "{stats}");
        assert!(stats.contains("cmdstat_mget:calls=5,"), "{stats}");
    }
}

#[test]
fn bench_backend_reports_both_rates() {
    let server = RedisServer::start();
    let report = locklab_backend::cli::bench::backend_report(&server.url(), 0.5);
    // Its parts, never its speed: direct, the in-process session, the
    // bare relay and the lab's WebSocket, each path's overhead, the target
    // and the ceiling the relay shows.
    for part in [
        "direct",
        "lab session",
        "bare WebSocket relay",
        "backend over WebSocket",
        "overhead",
        "target",
        "ceiling: a bare WebSocket relay",
        "% of the relay",
    ] {
        assert!(report.contains(part), "{part:?} missing from:\n{report}");
    }
    assert!(!report.contains("failed"), "{report}");
    eprintln!("{report}");
}
