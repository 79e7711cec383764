//! The fuzzers' short run, part of every `cargo test` (and so of CI): the
//! kept regression inputs, then a few thousand fresh inputs per target from
//! a fixed seed, the engine's compared with a real redis-server. The long
//! run is `cargo xtask fuzz`.

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::process::RedisServer;
use locklab_core::server::{Node, Profile};
use locklab_fuzz::{compare_sequence, fuzz, regressions, run_one, FuzzTarget};

#[test]
fn kept_regressions_stay_fixed() {
    let mut node = Node::new(Profile::V7_0);
    let conn = node.connect();
    for (target, path) in regressions() {
        let input = std::fs::read(&path).expect("read a regression input");
        assert_eq!(run_one(target, &mut node, conn, &input), Ok(0), "{}", path.display());
    }
}

#[test]
fn a_short_run_finds_nothing() {
    let server = RedisServer::start();
    let mut real = RealConnection::open(&server.url()).expect("connect to redis-server");
    for (target, count) in [
        (FuzzTarget::Resp, 20_000),
        (FuzzTarget::Cli, 20_000),
        (FuzzTarget::Lesson, 2_000),
        (FuzzTarget::Engine, 300),
        (FuzzTarget::Lua, 300),
        (FuzzTarget::LuaLib, 2_000),
        (FuzzTarget::Wire, 60),
    ] {
        let compare = matches!(target, FuzzTarget::Engine | FuzzTarget::LuaLib);
        let real = compare.then_some(&mut real);
        let report = fuzz(target, 16, count, real, false, |_| {});
        assert_eq!(report.tried, count);
        assert!(
            report.findings.is_empty(),
            "{}: {:#?}",
            target.name(),
            &report.findings[..report.findings.len().min(5)]
        );
        if compare {
            assert!(report.compared > 0);
        }
    }
}

/// CI's fuzz run stalled 100 ms between `SET h -1 PX 100` and `DECR h` on
/// both plays of that sequence (nice 19 beside the tests), so redis-server
/// expired the key and the run reported the simulator's -2 against -1. A
/// play during which redis-server's clock moved is not judged.
#[test]
fn a_play_stalled_by_a_loaded_machine_is_played_again_not_reported() {
    let server = RedisServer::start();
    let mut real = RealConnection::open(&server.url()).expect("connect to redis-server");
    let seq: Vec<Vec<Vec<u8>>> = [&["SET", "h", "-1", "PX", "100"][..], &["DECR", "h"]]
        .iter()
        .map(|argv| argv.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect();
    let mut node = Node::new(Profile::V7_0);
    let mut conn = node.connect();
    // The first two plays stall past the TTL before DECR reaches redis-server.
    let mut stall = |play: u32, command: usize| {
        if play < 2 && command == 1 {
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
    };
    assert_eq!(
        compare_sequence(&mut node, &mut conn, &seq, &mut real, &mut stall),
        Ok(Some(2))
    );

    // Stalled past the TTL on every play: nothing is said.
    let mut always = |_: u32, command: usize| {
        if command == 1 {
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
    };
    assert_eq!(
        compare_sequence(&mut node, &mut conn, &seq, &mut real, &mut always),
        Ok(None)
    );

    // The simulator's own difference is still reported (its INFO is not
    // redis-server's).
    let info = vec![vec![b"INFO".to_vec(), b"server".to_vec()]];
    let judged = compare_sequence(&mut node, &mut conn, &info, &mut real, &mut |_, _| {});
    assert!(judged.is_err(), "{judged:?}");
}
