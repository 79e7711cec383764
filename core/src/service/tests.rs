//! The lock services' models, one promise per test: majority commit,
//! leases and sessions running out on the leader's clock, waiters in
//! creation order, fencing numbers that only grow.

use super::{Answer, Happened, Request, Service, ServiceKind};
use crate::reply::Reply;

fn argv(line: &str) -> Vec<Vec<u8>> {
    crate::cli::parse(line).expect("a valid line")
}

/// Send `line` from `client` through `member` with every clock at `t`.
fn send(s: &mut Service, t: u64, member: u32, client: u32, req: u64, line: &str) -> Answer {
    let clocks = vec![t; s.quorum().members() as usize];
    let a = argv(line);
    s.execute(
        &clocks,
        Request {
            member,
            client,
            req,
            argv: &a,
        },
    )
}

fn now(s: &mut Service, t: u64, client: u32, line: &str) -> Reply {
    match send(s, t, 0, client, 0, line) {
        Answer::Now(r) => r,
        Answer::Later => panic!("{line}: blocked"),
    }
}

fn int(r: &Reply) -> i64 {
    match r {
        Reply::Integer(i) => *i,
        Reply::Array(v) => int(v.last().expect("a non-empty array")),
        other => panic!("not an integer: {other:?}"),
    }
}

fn clocks(t: u64) -> Vec<u64> {
    vec![t; 3]
}

#[test]
fn etcd_commits_only_through_a_majority() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    s.set_down(&clocks(0), 1, true);
    assert_eq!(
        now(&mut s, 0, 0, "PUT k v"),
        Reply::Status("OK".into()),
        "two of three are a majority"
    );
    s.set_down(&clocks(0), 2, true);
    assert_eq!(
        now(&mut s, 0, 0, "PUT k w"),
        Reply::Error("etcdserver: no leader".into())
    );
    let read = now(&mut s, 0, 0, "GET k");
    assert_eq!(
        read,
        Reply::Error("etcdserver: no leader".into()),
        "a linearizable read needs a quorum too"
    );
    s.set_down(&clocks(0), 2, false);
    assert_eq!(
        now(&mut s, 0, 0, "GET k"),
        Reply::Bulk(b"v".to_vec()),
        "the refused write left nothing"
    );
}

#[test]
fn etcd_minority_member_answers_no_leader() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    s.set_cut(&clocks(0), 0, 1, true);
    s.set_cut(&clocks(0), 0, 2, true);
    assert_eq!(s.quorum().leader(), Some(1));
    let a = send(&mut s, 0, 0, 0, 1, "PUT k v");
    assert_eq!(a, Answer::Now(Reply::Error("etcdserver: no leader".into())));
    assert_eq!(
        send(&mut s, 0, 2, 0, 2, "PUT k v"),
        Answer::Now(Reply::Status("OK".into()))
    );
}

#[test]
fn etcd_lease_expires_on_the_leaders_clock_and_takes_its_keys() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    let id = int(&now(&mut s, 0, 0, "LEASE GRANT 10"));
    now(&mut s, 0, 0, &format!("PUT job A LEASE {id}"));
    s.advance(&clocks(9_999));
    assert_eq!(now(&mut s, 9_999, 1, "GET job"), Reply::Bulk(b"A".to_vec()));
    // Followers' clocks do not matter: only the leader's (member 0) does.
    s.advance(&[10_000, 0, 0]);
    assert_eq!(now(&mut s, 10_000, 1, "GET job"), Reply::Nil);
    let expired = s.take_happened();
    assert!(
        expired.contains(&Happened::Expired {
            what: format!("lease {id}"),
            deleted: vec!["job".into()],
        }),
        "{expired:?}"
    );
    let gone = now(&mut s, 10_000, 0, &format!("LEASE KEEPALIVE {id}"));
    assert_eq!(gone, Reply::Error("etcdserver: requested lease not found".into()));
}

#[test]
fn etcd_keepalive_extends_the_lease() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    let id = int(&now(&mut s, 0, 0, "LEASE GRANT 10"));
    assert_eq!(
        now(&mut s, 8_000, 0, &format!("LEASE KEEPALIVE {id}")),
        Reply::Integer(10)
    );
    s.advance(&clocks(17_000));
    assert_eq!(
        now(&mut s, 17_000, 0, &format!("LEASE TIMETOLIVE {id}")),
        Reply::Integer(1)
    );
    s.advance(&clocks(18_000));
    assert_eq!(
        now(&mut s, 18_000, 0, &format!("LEASE TIMETOLIVE {id}")),
        Reply::Integer(-1)
    );
}

#[test]
fn etcd_waiters_are_granted_in_create_revision_order_with_growing_revisions() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    let ids: Vec<i64> = (0..3).map(|c| int(&now(&mut s, 0, c, "LEASE GRANT 60"))).collect();
    let a = now(&mut s, 0, 0, &format!("LOCK job {}", ids[0]));
    let a_rev = int(&a);
    assert_eq!(
        send(&mut s, 0, 1, 1, 11, &format!("LOCK job {}", ids[1])),
        Answer::Later
    );
    assert_eq!(
        send(&mut s, 0, 2, 2, 12, &format!("LOCK job {}", ids[2])),
        Answer::Later
    );
    assert_eq!(s.holder("job").map(|h| (h.owner, h.token)), Some((0, a_rev)));
    now(&mut s, 1_000, 0, &format!("UNLOCK job/{:x}", ids[0]));
    let woke = s.take_happened();
    let [Happened::Answer {
        client: 1,
        req: 11,
        reply,
        ..
    }] = woke.as_slice()
    else {
        panic!("only B, the next oldest, is woken: {woke:?}");
    };
    let b_rev = int(reply);
    assert!(b_rev > a_rev, "{b_rev} > {a_rev}");
    // C's lease runs out while it waits: its key goes, and it is told so.
    now(&mut s, 1_000, 2, &format!("LEASE REVOKE {}", ids[2]));
    let woke = s.take_happened();
    assert!(
        matches!(woke.as_slice(), [Happened::Answer { client: 2, reply: Reply::Error(e), .. }] if e == "mutex: session is expired"),
        "{woke:?}"
    );
    assert_eq!(s.holder("job").map(|h| h.owner), Some(1));
}

#[test]
fn etcd_a_new_leader_extends_leases_and_no_majority_expires_nothing() {
    let mut s = Service::new(ServiceKind::Etcd, 3);
    let id = int(&now(&mut s, 0, 0, "LEASE GRANT 10"));
    now(&mut s, 0, 0, &format!("LOCK job {id}"));
    s.set_down(&clocks(9_000), 0, true);
    assert_eq!(s.quorum().leader(), Some(1));
    s.advance(&clocks(12_000));
    assert!(s.holder("job").is_some(), "the new leader gave the lease its TTL again");
    s.set_down(&clocks(12_000), 2, true);
    s.advance(&clocks(60_000));
    assert!(s.holder("job").is_some(), "without a majority no lease is revoked");
    s.set_down(&clocks(60_000), 2, false);
    s.advance(&clocks(69_999));
    assert!(s.holder("job").is_some(), "the re-election extended it once more");
    s.advance(&clocks(70_000));
    assert!(s.holder("job").is_none());
}

#[test]
fn zk_session_expiry_deletes_ephemeral_znodes_and_fires_the_watch() {
    let mut s = Service::new(ServiceKind::Zk, 3);
    now(&mut s, 0, 0, "SESSION 6000");
    now(&mut s, 0, 1, "SESSION 6000");
    now(&mut s, 0, 0, "CREATE /locks ''");
    let a = now(&mut s, 0, 0, "CREATE /locks/lock- '' EPHEMERAL SEQUENTIAL");
    let b = now(&mut s, 0, 1, "CREATE /locks/lock- '' EPHEMERAL SEQUENTIAL");
    let names = now(&mut s, 0, 1, "CHILDREN /locks");
    assert_eq!(
        names,
        Reply::Array(vec![
            Reply::Bulk(b"lock-0000000000".to_vec()),
            Reply::Bulk(b"lock-0000000001".to_vec())
        ])
    );
    assert!(int(&b) > int(&a));
    assert_eq!(
        now(&mut s, 0, 1, "EXISTS /locks/lock-0000000000 WATCH"),
        Reply::Integer(int(&a))
    );
    assert_eq!(s.holder("/locks").map(|h| h.owner), Some(0));
    // B keeps its session alive; A does not.
    now(&mut s, 5_000, 1, "PING");
    s.advance(&clocks(6_000));
    let happened = s.take_happened();
    assert!(
        happened
            .iter()
            .any(|h| matches!(h, Happened::Expired { deleted, .. } if deleted == &["/locks/lock-0000000000"])),
        "{happened:?}"
    );
    assert!(happened.iter().any(|h| matches!(h, Happened::Watch { client: 1, text } if text.contains("NodeDeleted path:/locks/lock-0000000000"))), "{happened:?}");
    assert_eq!(s.holder("/locks").map(|h| h.owner), Some(1));
    let late = now(&mut s, 6_000, 0, "GET /locks");
    assert_eq!(
        late,
        Reply::Error("KeeperErrorCode = Session expired for /locks".into())
    );
}

#[test]
fn zk_zxids_grow_across_a_leader_change_and_errors_read_as_the_java_client_prints_them() {
    let mut s = Service::new(ServiceKind::Zk, 3);
    assert_eq!(
        now(&mut s, 0, 0, "GET /x"),
        Reply::Error("KeeperErrorCode = ConnectionLoss for /x".into())
    );
    now(&mut s, 0, 0, "SESSION 1");
    let first = int(&now(&mut s, 0, 0, "CREATE /a ''"));
    assert_eq!(
        now(&mut s, 0, 0, "CREATE /a ''"),
        Reply::Error("KeeperErrorCode = NodeExists for /a".into())
    );
    assert_eq!(
        now(&mut s, 0, 0, "CREATE /b/c ''"),
        Reply::Error("KeeperErrorCode = NoNode for /b/c".into())
    );
    s.set_down(&clocks(0), 0, true);
    let after = match send(&mut s, 0, 1, 0, 1, "CREATE /b ''") {
        Answer::Now(r) => int(&r),
        Answer::Later => panic!("blocked"),
    };
    assert!(after > first, "{after:#x} > {first:#x}");
    assert_eq!(after >> 32, 2, "the new epoch is in the high half");
    assert_eq!(
        now(&mut s, 0, 0, "GET /b"),
        Reply::Error("KeeperErrorCode = ConnectionLoss for /b".into())
    );
}

#[test]
fn zk_session_timeout_is_negotiated_into_two_to_twenty_ticks() {
    let mut s = Service::new(ServiceKind::Zk, 3);
    now(&mut s, 0, 0, "SESSION 1000");
    now(&mut s, 0, 0, "CREATE /e '' EPHEMERAL");
    s.advance(&clocks(3_999));
    assert!(matches!(now(&mut s, 3_999, 1, "SESSION 40000"), Reply::Integer(_)));
    assert_eq!(
        now(&mut s, 3_999, 1, "EXISTS /e"),
        Reply::Integer(1 << 32 | 1),
        "1000 ms was raised to 4000"
    );
    s.advance(&clocks(7_999));
    assert_eq!(now(&mut s, 7_999, 1, "EXISTS /e"), Reply::Nil);
}

/// Anything a socket or a lesson can send gets a reply or a wait, never
/// a panic: every vocabulary word with every kind of argument.
#[test]
fn any_argv_gets_an_answer() {
    let words = [
        "LEASE",
        "GRANT",
        "KEEPALIVE",
        "REVOKE",
        "TIMETOLIVE",
        "LOCK",
        "UNLOCK",
        "PUT",
        "GET",
        "DEL",
        "SESSION",
        "CREATE",
        "CHILDREN",
        "EXISTS",
        "WATCH",
        "DELETE",
        "SET",
        "PING",
        "CLOSE",
        "EPHEMERAL",
        "SEQUENTIAL",
        "/",
        "/a",
        "/a/",
        "a",
        "",
        "-1",
        "0",
        "7001",
        "99999999999999999999",
        "9000000001",
        "\u{0}",
    ];
    let mut rng = crate::rng::Rng::new(21);
    for kind in [ServiceKind::Etcd, ServiceKind::Zk] {
        let mut s = Service::new(kind, 3);
        for i in 0..20_000u64 {
            let n = 1 + rng.below(5) as usize;
            let argv: Vec<Vec<u8>> = (0..n)
                .map(|_| words[rng.below(words.len() as u64) as usize].as_bytes().to_vec())
                .collect();
            let t = i * 7;
            let _ = s.execute(
                &clocks(t),
                Request {
                    member: (i % 3) as u32,
                    client: (i % 4) as u32,
                    req: i,
                    argv: &argv,
                },
            );
            if i % 997 == 0 {
                s.set_down(&clocks(t), (i % 3) as u32, i % 2 == 0);
            }
            s.advance(&clocks(t));
            s.take_happened();
        }
    }
}
