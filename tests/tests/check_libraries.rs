//! `locklab check --library … --nemesis pause` (issue 40): real lock
//! libraries, unchanged, as client processes under a client-pause nemesis,
//! on sim-server and on real redis-servers started here.
//!
//! A pause lasts three to four leases, so whichever client holds the lock
//! when it is stopped comes back long after the others took it: without
//! fencing the resource accepts its late write (a stale write, observed by
//! the resource), with the lab's fence it refuses it. The verdicts are
//! counts of what the resource accepted, never timings, so a slow machine
//! only makes the runs longer.
//!
//! Hostile workloads: one that writes garbage to its history (a clear error
//! naming the client and the line), one that never exits (killed at the
//! deadline, named on the card).

use std::path::PathBuf;

use locklab_backend::cli::check::{run, CheckArgs, CheckError};
use locklab_backend::cli::check_run::{Library, Nemesis, RunError};
use locklab_core::history::linear::Search;
use locklab_tests::RedisServer;

/// Where the libraries are installed: the sim-server tests' cache, so
/// they are downloaded once per target directory.
fn libs() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("locklibs")
}

fn out_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("check-libraries")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn args(library: Library, fenced: bool, redis: Vec<String>, out: &str) -> CheckArgs {
    CheckArgs {
        library: vec![library],
        nemesis: vec![Nemesis::Pause],
        clients: Some(2),
        seconds: 8,
        seed: 7,
        fenced,
        ttl_ms: 1000,
        redis,
        out: Some(out_dir(out)),
        json: true,
        libs: Some(libs()),
        limit: Search::default().limit,
        ..CheckArgs::default()
    }
}

/// One run's row of the card, as JSON.
fn row(a: &CheckArgs) -> serde_json::Value {
    let outcome = run(a).unwrap_or_else(|e| panic!("{e}"));
    let card: serde_json::Value = serde_json::from_str(&outcome.text).expect("the card is JSON");
    card["rows"][0].clone()
}

/// Unfenced: a stale write found, its witness the paused client's late
/// write; fenced: held, with the late writes refused by the resource.
fn verdicts(library: Library, redis: Vec<String>, name: &str) {
    let open = row(&args(library, false, redis.clone(), &format!("{name}-open")));
    assert!(open["faults"].as_u64() >= Some(1), "{open:#}");
    assert_eq!(open["verdict"], "stale-write-found", "{open:#}");
    let stale = open["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["check"] == "stale-write"))
        .expect("the stale write's finding");
    let witness = stale["witness"].as_array().expect("witness");
    assert!(
        witness.iter().any(|o| o["op"] == "write") && witness.iter().any(|o| o["op"] == "acquire"),
        "{stale:#}"
    );
    let history = std::fs::read_to_string(open["history"].as_str().unwrap_or_default()).expect("history");
    assert!(history.contains("\"fault\":\"pause\""), "faults are on the timeline");

    let fenced = row(&args(library, true, redis, &format!("{name}-fenced")));
    assert!(fenced["faults"].as_u64() >= Some(1), "{fenced:#}");
    assert_eq!(fenced["verdict"], "held", "{fenced:#}");
    assert!(fenced["rounds"].as_u64() >= Some(2), "{fenced:#}");
    assert!(
        fenced["writes_refused"].as_u64() >= Some(1),
        "the paused holder's late write is refused: {fenced:#}"
    );
}

#[test]
fn redis_py_lock_under_client_pause_on_sim_server() {
    verdicts(Library::RedisPy, Vec::new(), "redis-py-sim");
}

#[test]
fn redis_py_lock_under_client_pause_on_redis_server() {
    let real = RedisServer::start();
    verdicts(Library::RedisPy, vec![real.url()], "redis-py-real");
}

#[test]
fn node_redlock_under_client_pause_on_sim_server() {
    verdicts(Library::NodeRedlock, Vec::new(), "node-redlock-sim");
}

#[test]
fn node_redlock_under_client_pause_on_redis_server() {
    let real: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    verdicts(
        Library::NodeRedlock,
        real.iter().map(|r| r.url()).collect(),
        "node-redlock-real",
    );
}

/// A workload (the user's own, `--workload`) for the hostile cases.
fn workload(name: &str, body: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-libraries");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write the workload");
    path
}

#[test]
fn a_workload_writing_garbage_gets_an_error_naming_its_line() {
    let script = workload(
        "garbage.py",
        "import json, sys\ncfg = json.loads(sys.argv[1])\nopen(cfg['history'], 'ab').write(b'\\xff\\xfe garbage\\n')\n",
    );
    let mut a = args(Library::RedisPy, false, Vec::new(), "garbage");
    a.seconds = 1;
    a.workload = Some(script);
    match run(&a) {
        Err(CheckError::Run {
            source: RunError::History { client, source, .. },
            ..
        }) => {
            assert_eq!(client, "c1");
            assert!(source.to_string().starts_with("line 1:"), "{source}");
        }
        other => panic!("expected a history error, got {:?}", other.map(|o| o.text)),
    }
}

#[test]
fn a_client_that_never_exits_is_killed_at_the_deadline() {
    let script = workload(
        "forever.py",
        "import json, os, signal, sys, time\ncfg = json.loads(sys.argv[1])\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
         open(os.path.join(os.path.dirname(cfg['history']), cfg['client'] + '.pid'), 'w').write(str(os.getpid()))\n\
         while True:\n    time.sleep(1)\n",
    );
    let mut a = args(Library::RedisPy, false, Vec::new(), "forever");
    a.seconds = 1;
    a.clients = Some(1);
    a.workload = Some(script);
    let dir = a.out.clone().expect("out");
    let r = row(&a);
    assert_eq!(r["verdict"], "no-rounds", "{r:#}");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("c1 had not exited") && notes.contains("killed"),
        "{notes}"
    );
    let pid_file = dir.join("redis-py-pause-unfenced").join("c1.pid");
    let pid = std::fs::read_to_string(&pid_file).expect("the workload wrote its pid");
    assert!(
        !PathBuf::from(format!("/proc/{}", pid.trim())).exists(),
        "the client is gone"
    );
}

/// Every new nemesis fires and leaves its marker in the history; where the
/// behaviour is known, the checker finds it. redis-py's `Lock` on one node:
/// a clock jumped or drifting forward, or a restart without persistence,
/// lets a second client in within the first one's lease (the lock key as a
/// register is not linearizable); a node that is only paused keeps the
/// lock (nothing expires unseen: the paused node answers nobody).
#[test]
fn every_node_and_link_nemesis_fires_on_redis_py() {
    let mut a = args(Library::RedisPy, false, Vec::new(), "nemeses");
    a.nemesis = vec![
        Nemesis::NodePause,
        Nemesis::ClockJump,
        Nemesis::ClockDrift,
        Nemesis::Restart,
        Nemesis::LinkDelay,
        Nemesis::LinkCut,
    ];
    a.seconds = 6;
    let md = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-libraries-nemeses.md");
    a.markdown = Some(md.clone());
    let outcome = run(&a).unwrap_or_else(|e| panic!("{e}"));
    let card: serde_json::Value = serde_json::from_str(&outcome.text).expect("the card is JSON");
    let rows = card["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), a.nemesis.len(), "{card:#}");
    for (row, nemesis) in rows.iter().zip(&a.nemesis) {
        let name = nemesis.name();
        assert_eq!(row["nemesis"], name, "{row:#}");
        assert!(row["faults"].as_u64() >= Some(1), "{name} never fired: {row:#}");
        let history = std::fs::read_to_string(row["history"].as_str().unwrap_or_default()).expect("history");
        assert!(
            history.contains(&format!("\"fault\":\"{name}\"")),
            "{name}'s marker is in the history"
        );
        assert!(row["rounds"].as_u64() >= Some(1), "{name}: {row:#}");
        match nemesis {
            Nemesis::ClockJump | Nemesis::ClockDrift | Nemesis::Restart => {
                assert_eq!(row["verdict"], "violation", "{name}: {row:#}");
            }
            Nemesis::NodePause => assert_eq!(row["verdict"], "held", "{name}: {row:#}"),
            _ => {}
        }
    }
    let matrix = std::fs::read_to_string(&md).expect("the card's Markdown");
    assert!(
        matrix.contains("| library | node-pause | clock-jump | clock-drift | restart | link-delay | link-cut |"),
        "{matrix}"
    );
    let cells = card["matrix"][0]["cells"].as_array().expect("the matrix's cells");
    assert_eq!(cells.len(), a.nemesis.len(), "{card:#}");
    let jump = &cells[1];
    assert_eq!(jump["fault"], "clock-jump");
    assert!(
        jump["witness"].as_array().is_some_and(|w| !w.is_empty()),
        "the cell carries its witness: {jump:#}"
    );
}

/// A node fault is never injected into a server the lab was given.
#[test]
fn node_faults_are_refused_on_a_given_server() {
    for nemesis in [
        Nemesis::NodePause,
        Nemesis::ClockJump,
        Nemesis::ClockDrift,
        Nemesis::Restart,
    ] {
        let mut a = args(
            Library::RedisPy,
            false,
            vec!["redis://127.0.0.1:1/".to_owned()],
            "refused",
        );
        a.nemesis = vec![nemesis];
        match run(&a) {
            Err(CheckError::Run {
                source: RunError::NeedsOwnNodes(name),
                ..
            }) => assert_eq!(name, nemesis.name()),
            other => panic!("expected a refusal, got {:?}", other.map(|o| o.text)),
        }
    }
}

/// `failover` on a real master + replica: the replica, cut from its master,
/// is promoted while a client holds a lock it never got; the next client
/// is granted the same lock within the first one's lease.
#[test]
fn failover_loses_redis_py_lock() {
    let mut a = args(Library::RedisPy, false, Vec::new(), "failover");
    a.nemesis = vec![Nemesis::Failover];
    a.seconds = 6;
    let r = row(&a);
    assert_eq!(r["faults"].as_u64(), Some(1), "{r:#}");
    assert_eq!(r["server"], "redis-server (master + replica)", "{r:#}");
    let history = std::fs::read_to_string(r["history"].as_str().unwrap_or_default()).expect("history");
    assert!(history.contains("\"fault\":\"failover\""), "{history}");
    assert_eq!(r["verdict"], "violation", "{r:#}");
    // Redlock libraries have no replica to promote.
    let mut a = args(Library::NodeRedlock, false, Vec::new(), "failover-redlock");
    a.nemesis = vec![Nemesis::Failover];
    match run(&a) {
        Err(CheckError::Run {
            source: RunError::FailoverNeedsOneNode(_),
            ..
        }) => {}
        other => panic!("expected a refusal, got {:?}", other.map(|o| o.text)),
    }
}
