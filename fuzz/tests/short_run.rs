//! The fuzzers' short run, part of every `cargo test` (and so of CI): the
//! kept regression inputs, then a few thousand fresh inputs per target from
//! a fixed seed, the engine's compared with a real redis-server. The long
//! run is `cargo xtask fuzz`.

use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::process::RedisServer;
use locklab_core::server::{Node, Profile};
use locklab_fuzz::{fuzz, regressions, run_one, FuzzTarget};

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
