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
use locklab_backend::cli::check_run::{LockLibrary, Nemesis, RunError};
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

fn args(library: LockLibrary, fenced: bool, redis: Vec<String>, out: &str) -> CheckArgs {
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

/// The first finding of check `name` in a row.
fn finding<'a>(row: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    (row["findings"].as_array().into_iter().flatten())
        .find(|f| f["check"] == name)
        .unwrap_or_else(|| panic!("no {name} finding: {row:#}"))
}

/// What a row says agrees with what its witnesses show, whatever the run
/// found: each witness call is a line of the history file; a stale
/// write's witness holds accepted writes of two clients; a violation's
/// finding is there; a lock that held has no finding but renewal gaps and
/// at least one granted round; a combination that did not run says why.
fn consistent(row: &serde_json::Value) {
    let verdict = row["verdict"].as_str().expect("a verdict");
    let findings = row["findings"].as_array().expect("findings");
    if verdict == "not-run" {
        assert!(row["why"].as_str().is_some_and(|w| !w.is_empty()), "{row:#}");
        return;
    }
    let history = std::fs::read_to_string(row["history"].as_str().unwrap_or_default()).expect("history");
    let lines: Vec<serde_json::Value> = history.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    for f in findings {
        for op in f["witness"].as_array().expect("witness") {
            assert!(lines.contains(op), "{op} is not a line of {}", row["history"]);
        }
    }
    let serious: Vec<&serde_json::Value> = findings.iter().filter(|f| f["check"] != "renewal-gap").collect();
    match verdict {
        "stale-write-found" => {
            let w = finding(row, "stale-write")["witness"].as_array().expect("witness");
            let mut writers: Vec<&str> = (w.iter())
                .filter(|o| o["op"] == "write" && o["ok"] == true)
                .filter_map(|o| o["client"].as_str())
                .collect();
            writers.sort_unstable();
            writers.dedup();
            assert!(
                writers.len() >= 2,
                "a stale write is two clients' accepted writes: {row:#}"
            );
        }
        "violation" => {
            let check = row["check"].as_str().expect("the violation's check");
            let f = finding(row, check);
            assert!(f["witness"].as_array().is_some_and(|w| !w.is_empty()), "{row:#}");
        }
        "held" => {
            assert!(serious.is_empty(), "held, yet: {row:#}");
            assert!(row["rounds"].as_u64() >= Some(1), "{row:#}");
        }
        "no-rounds" => assert_eq!(row["rounds"].as_u64(), Some(0), "{row:#}"),
        "unknown-limit" => {}
        other => panic!("unknown verdict {other}: {row:#}"),
    }
}

/// Unfenced: a stale write found, its witness the paused client's late
/// write; fenced: held, with the late writes refused by the resource.
fn verdicts(library: LockLibrary, redis: Vec<String>, name: &str) {
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
    verdicts(LockLibrary::RedisPy, Vec::new(), "redis-py-sim");
}

#[test]
fn redis_py_lock_under_client_pause_on_redis_server() {
    let real = RedisServer::start();
    verdicts(LockLibrary::RedisPy, vec![real.url()], "redis-py-real");
}

#[test]
fn node_redlock_under_client_pause_on_sim_server() {
    verdicts(LockLibrary::NodeRedlock, Vec::new(), "node-redlock-sim");
}

#[test]
fn node_redlock_under_client_pause_on_redis_server() {
    let real: Vec<RedisServer> = (0..5).map(|_| RedisServer::start()).collect();
    verdicts(
        LockLibrary::NodeRedlock,
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
    let mut a = args(LockLibrary::RedisPy, false, Vec::new(), "garbage");
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
    let mut a = args(LockLibrary::RedisPy, false, Vec::new(), "forever");
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
    let mut a = args(LockLibrary::RedisPy, false, Vec::new(), "nemeses");
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
            // The holder's work reads across its slow link and outlasts
            // the lease: its write lands after the next holder's.
            Nemesis::LinkDelay => assert_eq!(row["verdict"], "stale-write-found", "{name}: {row:#}"),
            _ => {}
        }
        consistent(row);
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
            LockLibrary::RedisPy,
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
/// is granted the same lock within the first one's lease. Each writes right
/// after its grant and after its work, so the resource witnesses it: two
/// holders' writes and a stale write, not only a lock key that is not one
/// register. sim-server cannot replicate: the card says where it ran.
/// The client whose call hit the killed master logs an acquire of unknown
/// outcome, with no token (not `"None"`).
#[test]
fn failover_loses_redis_py_lock() {
    let mut a = args(LockLibrary::RedisPy, false, Vec::new(), "failover");
    a.nemesis = vec![Nemesis::Failover];
    a.seconds = 6;
    let md = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-libraries-failover.md");
    a.markdown = Some(md.clone());
    let r = row(&a);
    assert_eq!(r["faults"].as_u64(), Some(1), "{r:#}");
    assert_eq!(r["server"], "redis-server (master + replica)", "{r:#}");
    let history = std::fs::read_to_string(r["history"].as_str().unwrap_or_default()).expect("history");
    assert!(history.contains("\"fault\":\"failover\""), "{history}");
    assert!(
        !history.contains("\"token\":\"None\""),
        "an unknown acquire has no token: {history}"
    );
    assert_eq!(r["verdict"], "stale-write-found", "{r:#}");
    let overlap = finding(&r, "overlap");
    let writers: Vec<&str> = (overlap["witness"].as_array().into_iter().flatten())
        .filter(|o| o["op"] == "write" && o["ok"] == true)
        .filter_map(|o| o["client"].as_str())
        .collect();
    assert!(
        writers.len() == 2 && writers[0] != writers[1],
        "two holders' writes witness it: {overlap:#}"
    );
    assert!(
        r["notes"].to_string().contains("sim-server has no replication"),
        "the card says failover did not run on sim-server: {r:#}"
    );
    consistent(&r);
    // The Markdown card names both, each with its witnessing writes.
    let card = std::fs::read_to_string(&md).expect("the card's Markdown");
    assert!(
        card.contains("stale write found") && card.contains("Also: two holders wrote to the resource"),
        "{card}"
    );
    // Redlock libraries have no replica to promote.
    let mut a = args(LockLibrary::NodeRedlock, false, Vec::new(), "failover-redlock");
    a.nemesis = vec![Nemesis::Failover];
    match run(&a) {
        Err(CheckError::Run {
            source: RunError::FailoverNeedsOneNode(_),
            ..
        }) => {}
        other => panic!("expected a refusal, got {:?}", other.map(|o| o.text)),
    }
}

/// A link fault that stretches the holder's work past its lease: redis-py
/// with no fencing loses an update under a delayed link; with the lab's
/// fence the late write is refused and the lock holds.
#[test]
fn redis_py_under_link_delay_is_broken_without_fencing_and_held_with_it() {
    let mut open = args(LockLibrary::RedisPy, false, Vec::new(), "link-delay-open");
    open.nemesis = vec![Nemesis::LinkDelay];
    let r = row(&open);
    assert!(r["faults"].as_u64() >= Some(1), "{r:#}");
    assert_eq!(r["verdict"], "stale-write-found", "{r:#}");
    consistent(&r);
    let mut fenced = args(LockLibrary::RedisPy, true, Vec::new(), "link-delay-fenced");
    fenced.nemesis = vec![Nemesis::LinkDelay];
    let r = row(&fenced);
    assert!(r["faults"].as_u64() >= Some(1), "{r:#}");
    assert_eq!(r["verdict"], "held", "{r:#}");
    assert!(
        r["writes_refused"].as_u64() >= Some(1),
        "the late write is refused: {r:#}"
    );
    consistent(&r);
}

/// redis-py #4279 on a real redis-server: `Lock(timeout=0)` means "held
/// until released" (SET NX, no PX), but `reacquire()` sends `PEXPIRE key
/// 0`, which deletes the key, and reports success. With no fault at all,
/// the renewing holder believes it still holds the lock while the other
/// client is granted it and writes.
#[test]
fn redis_py_timeout_0_renewal_deletes_the_lock_on_redis_server() {
    let real = RedisServer::start();
    let mut a = args(LockLibrary::RedisPyTimeout0, false, vec![real.url()], "timeout-0");
    a.nemesis = vec![Nemesis::None];
    a.seconds = 4;
    let r = row(&a);
    assert_eq!(r["server"], "redis-server", "{r:#}");
    assert_eq!(r["faults"].as_u64(), Some(0), "{r:#}");
    assert_ne!(r["verdict"], "held", "{r:#}");
    consistent(&r);
    let names: Vec<&str> = (r["findings"].as_array().into_iter().flatten())
        .filter_map(|f| f["check"].as_str())
        .collect();
    assert!(names.contains(&"not-linearizable"), "{names:?}");
    assert!(
        names.contains(&"overlap") || names.contains(&"stale-write"),
        "{names:?}"
    );
    // In the history: a renewal reported success, then another client was
    // granted the lock before the renewer let go.
    let history = std::fs::read_to_string(r["history"].as_str().unwrap_or_default()).expect("history");
    let ops: Vec<serde_json::Value> = (history.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|o: &serde_json::Value| o.get("op").is_some())
        .collect();
    let shown = ops.iter().enumerate().any(|(i, e)| {
        e["op"] == "extend"
            && e["ok"] == true
            && ops[i + 1..]
                .iter()
                .take_while(|o| !(o["client"] == e["client"] && o["op"] == "release"))
                .any(|o| o["op"] == "acquire" && o["ok"] == true && o["client"] != e["client"])
    });
    assert!(
        shown,
        "a successful renewal, then another's grant before its release: {history}"
    );
}

/// pottery and python-redis-lock under every fault, one card: a row per
/// library with a verdict per fault, each consistent with its witnesses
/// (whatever the run found); pottery's five masters have no replica to
/// fail over to, a cell that says so.
#[test]
fn pottery_and_python_redis_lock_under_every_fault_in_the_matrix() {
    let mut a = args(LockLibrary::Pottery, false, Vec::new(), "matrix");
    a.library = vec![LockLibrary::Pottery, LockLibrary::PythonRedisLock];
    a.nemesis = vec![
        Nemesis::Pause,
        Nemesis::NodePause,
        Nemesis::ClockJump,
        Nemesis::ClockDrift,
        Nemesis::Restart,
        Nemesis::LinkDelay,
        Nemesis::LinkCut,
        Nemesis::Failover,
    ];
    a.seconds = 6;
    let md = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-libraries-matrix.md");
    a.markdown = Some(md.clone());
    let started = std::time::Instant::now();
    let outcome = run(&a).unwrap_or_else(|e| panic!("{e}"));
    let card: serde_json::Value = serde_json::from_str(&outcome.text).expect("the card is JSON");
    let matrix = card["matrix"].as_array().expect("the matrix");
    let libraries: Vec<&str> = matrix.iter().filter_map(|m| m["library"].as_str()).collect();
    assert_eq!(libraries, ["pottery", "python-redis-lock"], "{card:#}");
    for m in matrix {
        let cells = m["cells"].as_array().expect("cells");
        let faults: Vec<&str> = cells.iter().filter_map(|c| c["fault"].as_str()).collect();
        let asked: Vec<&str> = a.nemesis.iter().map(|n| n.name()).collect();
        assert_eq!(faults, asked, "{m:#}");
        for c in cells {
            assert!(c["verdict"].as_str().is_some_and(|v| !v.is_empty()), "{c:#}");
        }
    }
    let rows = card["rows"].as_array().expect("rows");
    for r in rows {
        eprintln!(
            "{} × {}: {} ({} rounds, {} faults, writes {} / {})",
            r["library"],
            r["nemesis"],
            r["verdict"],
            r["rounds"],
            r["faults"],
            r["writes_accepted"],
            r["writes_refused"]
        );
        consistent(r);
        if r["verdict"] != "not-run" {
            assert!(r["faults"].as_u64() >= Some(1), "the fault fired: {r:#}");
        }
    }
    let not_run: Vec<(&str, &str)> = (rows.iter())
        .filter(|r| r["verdict"] == "not-run")
        .filter_map(|r| Some((r["library"].as_str()?, r["nemesis"].as_str()?)))
        .collect();
    assert_eq!(not_run, [("pottery", "failover")], "{card:#}");
    let markdown = std::fs::read_to_string(&md).expect("the card's Markdown");
    assert!(
        markdown.contains("| pottery |") && markdown.contains("| python-redis-lock |"),
        "{markdown}"
    );
    eprintln!("{markdown}");
    eprintln!("16 runs in {:.0} s", started.elapsed().as_secs_f64());
}

/// `check --help` says where failover runs.
#[test]
fn check_help_says_failover_needs_redis_server() {
    let out = std::process::Command::new(locklab_tests::locklab_binary())
        .args(["check", "--help"])
        .output()
        .expect("locklab check --help");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("sim-server does not have") && help.contains("real redis-servers"),
        "{help}"
    );
}
