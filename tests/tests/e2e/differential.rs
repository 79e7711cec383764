//! Differential tests: every `tests/diff/*.redis` file on the simulator
//! (profile 7.0) and on a real redis-server, reply by reply.
//!
//! * `sim_vs_real::<file>` — one test per file; a failure lists every line
//!   whose rendering differs, with both outputs.
//! * `redis_cli::<file>` — the same file piped through the real `redis-cli
//!   --no-raw`, whose stdout must equal our rendering of the real replies
//!   line for line: this keeps [`Reply::to_cli`] honest.
//! * `every_diff_file_has_a_test` — adding a file without listing it here
//!   fails, so no file is silently skipped.
//!
//! [`Reply::to_cli`]: locklab_core::reply::Reply::to_cli

use locklab_backend::real::conn::RealConnection;
use locklab_core::server::Profile;
use locklab_tests::diff::{self, Script};
use locklab_tests::RedisServer;

fn script(file: &str) -> Script {
    diff::load(&diff::diff_dir().join(file))
}

fn sim_vs_real(file: &str) {
    let script = script(file);
    let server = RedisServer::start();
    let mismatches = diff::diff_script(&script, &server.url(), Profile::V7_0);
    assert!(mismatches.is_empty(), "{}", diff::report(&mismatches));
}

/// Our rendering of the real replies against what `redis-cli` prints for
/// the same lines. Each run gets a fresh server so that both start from the
/// same state (script caches and functions survive `FLUSHALL`). Lines of a
/// `#~N` command are single integers, compared within `N` like the diff.
fn redis_cli_agrees(file: &str) {
    let script = script(file);
    let ours = {
        let server = RedisServer::start();
        let mut conn = RealConnection::open(&server.url()).unwrap_or_else(|e| panic!("{e}"));
        diff::run_real(&script, &mut conn)
    };
    let theirs = {
        let server = RedisServer::start();
        diff::run_redis_cli(server.port(), &script.plain_text())
    };
    let problems = diff::compare_cli_output(&script, &ours, &theirs);
    assert!(
        problems.is_empty(),
        "{file}: our rendering differs from redis-cli:\n{problems}"
    );
}

macro_rules! per_file {
    ($($name:ident => $file:literal,)*) => {
        const FILES: &[&str] = &[$($file),*];

        mod sim_vs_real {
            $(#[test] fn $name() { super::sim_vs_real($file) })*
        }

        mod redis_cli {
            $(#[test] fn $name() { super::redis_cli_agrees($file) })*
        }
    };
}

locklab_tests::with_diff_files!(per_file);

#[test]
fn every_diff_file_has_a_test() {
    let on_disk: Vec<String> = diff::script_files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut listed: Vec<String> = FILES.iter().map(|s| (*s).to_owned()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "add new tests/diff files to with_diff_files! in tests/src/lib.rs"
    );
}

#[test]
fn diff_files_are_well_formed() {
    let mut total = 0;
    for path in diff::script_files() {
        let s = diff::load(&path);
        let first = s.lines.first().map(|l| l.source.to_ascii_uppercase());
        assert_eq!(
            first.as_deref(),
            Some("FLUSHALL"),
            "{} must start with FLUSHALL",
            s.name
        );
        total += s.lines.len();
    }
    assert!(total >= 220, "only {total} diff lines");
}
