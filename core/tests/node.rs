//! The simulated node's own behaviour beyond what the differential suite
//! compares with redis-server: the 8.4 profile (which Debian's 7.0 server
//! cannot check, so these pin the Redis 8.4 documentation), the virtual
//! clock, expiry events, replication batches and the replica role.

use locklab_core::cli::parse;
use locklab_core::server::{Node, NodeEvent, Profile, Role, EPOCH_MS};
use locklab_core::Reply;

fn run(node: &mut Node, line: &str) -> Reply {
    let c = locklab_core::server::ConnId(1);
    node.execute(c, &parse(line).expect("valid line"))
}

fn cli(node: &mut Node, line: &str) -> String {
    run(node, line).to_cli()
}

#[test]
fn delex_ifeq_deletes_only_the_owners_lock() {
    // redis.io/commands/delex: 1 when deleted, 0 when missing or the
    // condition is false.
    let mut n = Node::new(Profile::V8_4);
    assert_eq!(cli(&mut n, "SET lock:order:1 token-B-222 NX PX 30000"), "OK");
    assert_eq!(cli(&mut n, "DELEX lock:order:1 IFEQ token-A-111"), "(integer) 0");
    assert_eq!(cli(&mut n, "GET lock:order:1"), "\"token-B-222\"");
    assert_eq!(cli(&mut n, "DELEX lock:order:1 IFEQ token-B-222"), "(integer) 1");
    assert_eq!(cli(&mut n, "EXISTS lock:order:1"), "(integer) 0");
    assert_eq!(cli(&mut n, "DELEX lock:order:1 IFEQ token-B-222"), "(integer) 0");
}

#[test]
fn delex_other_conditions_and_errors() {
    let mut n = Node::new(Profile::V8_4);
    run(&mut n, "SET k v1");
    assert_eq!(cli(&mut n, "DELEX k IFNE v1"), "(integer) 0");
    assert_eq!(cli(&mut n, "DELEX k IFNE other"), "(integer) 1");
    run(&mut n, "SET k v1");
    let digest = match run(&mut n, "DIGEST k") {
        Reply::Bulk(d) => String::from_utf8(d).unwrap(),
        other => panic!("DIGEST gave {other:?}"),
    };
    assert_eq!(digest.len(), 16);
    assert_eq!(
        cli(&mut n, "DELEX k IFDNE {digest}".replace("{digest}", &digest).as_str()),
        "(integer) 0"
    );
    assert_eq!(cli(&mut n, &format!("DELEX k IFDEQ {digest}")), "(integer) 1");
    // Without a condition DELEX is DEL, whatever the type.
    run(&mut n, "HSET h f v");
    assert_eq!(
        cli(&mut n, "DELEX h IFEQ v"),
        "(error) WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    assert_eq!(cli(&mut n, "DELEX h"), "(integer) 1");
    assert_eq!(cli(&mut n, "DELEX k IFEQ"), "(error) ERR syntax error");
    assert_eq!(cli(&mut n, "DELEX k FOO bar"), "(error) ERR syntax error");
    assert_eq!(cli(&mut n, "DIGEST missing"), "(nil)");
}

#[test]
fn set_if_conditions() {
    let mut n = Node::new(Profile::V8_4);
    // IFEQ never creates a missing key.
    assert_eq!(cli(&mut n, "SET lock t2 IFEQ t1"), "(nil)");
    assert_eq!(cli(&mut n, "EXISTS lock"), "(integer) 0");
    // IFNE does.
    assert_eq!(cli(&mut n, "SET lock t1 IFNE t0 PX 10000"), "OK");
    assert_eq!(cli(&mut n, "SET lock t2 IFEQ t0"), "(nil)");
    assert_eq!(cli(&mut n, "SET lock t2 IFEQ t1 GET"), "\"t1\"");
    assert_eq!(cli(&mut n, "GET lock"), "\"t2\"");
    assert_eq!(cli(&mut n, "SET lock t3 NX IFEQ t2"), "(error) ERR syntax error");
    assert_eq!(cli(&mut n, "SET lock t3 IFEQ t2 XX"), "(error) ERR syntax error");
}

#[test]
fn profile_7_0_has_no_8_4_commands() {
    let mut n = Node::new(Profile::V7_0);
    assert_eq!(
        cli(&mut n, "DELEX lock IFEQ t"),
        "(error) ERR unknown command 'DELEX', with args beginning with: 'lock' 'IFEQ' 't' "
    );
    assert_eq!(cli(&mut n, "SET lock t IFEQ x"), "(error) ERR syntax error");
    let info = match run(&mut n, "INFO server") {
        Reply::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(info.contains("redis_version:7.0.15\r\n"), "{info}");
    let mut n = Node::new(Profile::V8_4);
    assert!(cli(&mut n, "INFO server").contains("redis_version:8.4.0"));
}

#[test]
fn virtual_clock_expires_keys_and_reports_when() {
    let mut n = Node::new(Profile::V7_0);
    n.record_events(true);
    assert_eq!(n.now(), EPOCH_MS);
    run(&mut n, "SET lock:order:1 token-A-111 NX PX 30000");
    n.advance(30_000);
    // At exactly the deadline the key still exists (redis: now > when).
    assert_eq!(cli(&mut n, "PTTL lock:order:1"), "(integer) 0");
    n.advance(1);
    assert_eq!(cli(&mut n, "PTTL lock:order:1"), "(integer) -2");
    assert_eq!(
        n.take_events(),
        vec![NodeEvent::Expired {
            db: 0,
            key: "lock:order:1".into(),
            at_ms: EPOCH_MS + 30_000
        }]
    );
    // DEBUG SLEEP moves the same clock.
    run(&mut n, "SET k v PX 100");
    assert_eq!(cli(&mut n, "DEBUG SLEEP 0.2"), "OK");
    assert_eq!(n.last_stall_ms(), 200);
    assert_eq!(cli(&mut n, "GET k"), "(nil)");
    // WAIT on a lone node: 0 after the timeout, on the virtual clock.
    let before = n.now();
    assert_eq!(cli(&mut n, "WAIT 1 150"), "(integer) 0");
    assert_eq!(n.now(), before + 150);
    assert_eq!(cli(&mut n, "WAIT 0 0"), "(integer) 0");
    assert!(cli(&mut n, "WAIT 1 0").starts_with("(error) ERR WAIT with timeout 0 would block forever"));
}

#[test]
fn writes_are_propagated_as_redis_does() {
    let mut n = Node::new(Profile::V7_0);
    n.record_propagation(true);
    run(&mut n, "SET lock tok NX PX 30000");
    run(&mut n, "SET lock tok2 NX PX 30000"); // refused: nothing to propagate
    run(&mut n, "PEXPIRE lock 20000");
    run(&mut n, "GET lock");
    run(&mut n, "GETDEL lock");
    let batches: Vec<Vec<String>> = n
        .take_propagated()
        .into_iter()
        .map(|b| {
            b.iter()
                .map(|argv| {
                    argv.iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .collect();
    let t = EPOCH_MS;
    assert_eq!(
        batches,
        vec![
            vec![format!("SET lock tok PXAT {}", t + 30_000)],
            vec![format!("PEXPIREAT lock {}", t + 20_000)],
            vec!["DEL lock".to_string()],
        ]
    );
}

#[test]
fn replica_applies_batches_refuses_writes_and_waits_for_del() {
    let mut master = Node::new(Profile::V7_0);
    master.record_propagation(true);
    let mut replica = Node::new(Profile::V7_0);
    replica.set_role(Role::Replica);
    run(&mut master, "SET lock tok PX 1000");
    for batch in master.take_propagated() {
        replica.apply_replicated(&batch);
    }
    assert_eq!(cli(&mut replica, "GET lock"), "\"tok\"");
    assert_eq!(
        cli(&mut replica, "SET x y"),
        "(error) READONLY You can't write against a read only replica."
    );
    // The replica's clock passes the deadline: the key is hidden, not deleted.
    replica.advance(2_000);
    assert_eq!(cli(&mut replica, "GET lock"), "(nil)");
    assert_eq!(replica.dbsize(0), 1);
    assert!(replica.take_events().is_empty());
    // Promoted, it expires what it hid.
    replica.set_role(Role::Master);
    assert_eq!(replica.dbsize(0), 0);
}

#[test]
fn watched_key_that_expires_aborts_exec() {
    let mut n = Node::new(Profile::V7_0);
    let (a, b) = (n.connect(), n.connect());
    let go = |n: &mut Node, c, l: &str| n.execute(c, &parse(l).unwrap()).to_cli();
    go(&mut n, a, "SET stock 10 PX 100");
    go(&mut n, a, "WATCH stock");
    n.advance(200);
    go(&mut n, a, "MULTI");
    go(&mut n, a, "DECR stock");
    assert_eq!(go(&mut n, a, "EXEC"), "(nil)");
    // Another connection's write aborts a watcher's EXEC too.
    go(&mut n, a, "SET stock 10");
    go(&mut n, a, "WATCH stock");
    go(&mut n, b, "DECR stock");
    go(&mut n, a, "MULTI");
    go(&mut n, a, "DECR stock");
    assert_eq!(go(&mut n, a, "EXEC"), "(nil)");
    assert_eq!(go(&mut n, a, "GET stock"), "\"9\"");
}

#[test]
fn sixteen_databases() {
    let mut n = Node::new(Profile::V7_0);
    let c = n.connect();
    n.execute(c, &parse("SET k zero").unwrap());
    assert!(n.select(c, 15));
    assert!(!n.select(c, 16));
    assert_eq!(n.execute(c, &parse("GET k").unwrap()), Reply::Nil);
    n.execute(c, &parse("SET k fifteen").unwrap());
    assert!(n
        .execute(c, &parse("INFO keyspace").unwrap())
        .to_cli()
        .contains("db15:keys=1"));
}

#[test]
fn wait_inside_exec_answers_at_once() {
    let mut n = Node::new(Profile::V7_0);
    let before = n.now();
    run(&mut n, "MULTI");
    run(&mut n, "WAIT 1 5000");
    assert_eq!(cli(&mut n, "EXEC"), "1) (integer) 0");
    assert_eq!(n.now(), before);
}

#[test]
fn cluster_mode_checks_slots_and_script_keys() {
    use locklab_core::server::cluster::{key_slot, ClusterConfig};
    let mut n = Node::new(Profile::V7_0);
    n.set_cluster(Some(ClusterConfig::first_of_three()));
    // "bar" is slot 5061 (local), "foo" 12182 (elsewhere).
    assert_eq!(key_slot(b"bar"), 5061);
    assert_eq!(cli(&mut n, "SET bar 1"), "OK");
    assert_eq!(cli(&mut n, "GET foo"), "(error) MOVED 12182 127.0.0.1:7002");
    assert_eq!(
        cli(&mut n, "DEL bar foo"),
        "(error) CROSSSLOT Keys in request don't hash to the same slot"
    );
    // A script that builds a key name instead of declaring it.
    let out = cli(&mut n, "EVAL \"return redis.call('GET', 'foo')\" 0");
    assert!(
        out.starts_with("(error) ERR Script attempted to access a non local key in a cluster node script: "),
        "{out}"
    );
    // Declared, local keys are fine.
    assert_eq!(cli(&mut n, "EVAL \"return redis.call('GET', KEYS[1])\" 1 bar"), "\"1\"");
}
