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
