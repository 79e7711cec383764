//! # locklab-tests
//!
//! The end-to-end harness: locklab's simulator is only worth teaching with
//! if it answers exactly as redis-server does, so these tests run the same
//! commands on both and compare what redis-cli would print.
//!
//! # Layout
//!
//! * [`server`] — a `RedisServer` guard: a real redis-server on a free
//!   loopback port for the duration of one test, killed on drop.
//! * [`ws`] — a client of the backend's `/api/session` WebSocket.
//! * [`diff`] — the differential runner for `tests/diff/*.redis` command
//!   files: parse, run on sim and real, collect every mismatch.
//! * [`service`] — lessons on real etcd and ZooKeeper, compared with the
//!   simulator's replies.
//! * [`monitor`] — a real `redis-cli MONITOR` capture of a lesson played on
//!   a real redis-server.
//!
//! The integration tests under `tests/tests/` use them:
//! `differential.rs` (one test per command file, plus a check of our
//! redis-cli rendering against the real `redis-cli` binary), `real.rs`
//! (the real connection's reply conversion) and `proptest_diff.rs` (random
//! command sequences on both sides).
//!
//! Everything needs `redis-server` and `redis-cli` on `PATH`; a missing
//! binary fails the test with the command that installs it.

pub mod browser;
pub mod diff;
pub mod monitor;
pub mod service;
pub mod ws;

/// Every command file of `tests/diff/`, as `name => "file",`, handed to the
/// caller's macro `$m`: the differential suite and the sim-server suite each
/// make one test per file from the one list (and each fails when a file on
/// disk is missing from it).
#[macro_export]
macro_rules! with_diff_files {
    ($m:ident) => {
        $m! {
            bzpop => "bzpop.redis",
            cjson => "cjson.redis",
            cmsgpack => "cmsgpack.redis",
            commands_edges => "commands_edges.redis",
            counters => "counters.redis",
            digest => "digest.redis",
            errors => "errors.redis",
            expire => "expire.redis",
            hashes => "hashes.redis",
            info_debug => "info_debug.redis",
            keys => "keys.redis",
            keys_more => "keys_more.redis",
            list_ops => "list_ops.redis",
            lists => "lists.redis",
            maxmemory => "maxmemory.redis",
            mpop => "mpop.redis",
            memory_usage => "memory_usage.redis",
            locks => "locks.redis",
            lua_library => "lua_library.redis",
            lua_struct => "lua_struct.redis",
            lua_values => "lua_values.redis",
            replication => "replication.redis",
            scripting => "scripting.redis",
            select => "select.redis",
            set_algebra => "set_algebra.redis",
            set_options => "set_options.redis",
            sort => "sort.redis",
            sets_zsets => "sets_zsets.redis",
            strings => "strings.redis",
            strings_more => "strings_more.redis",
            transactions => "transactions.redis",
            zset_algebra => "zset_algebra.redis",
            zset_lex_store => "zset_lex_store.redis",
        }
    };
}
/// The redis-server guard lives in the backend (the bench and managed
/// topologies use it too); tests reach it here as before.
pub use locklab_backend::real::process as server;

pub use server::RedisServer;

/// The `locklab` binary of this build (`target/<profile>/locklab`), for
/// tests that run `locklab serve` as processes; it must be newer than the
/// sources it is built from, or the test would test old code.
pub fn locklab_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/<test>-<hash>
    let profile = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let bin = profile.join(format!("locklab{}", std::env::consts::EXE_SUFFIX));
    let flag = if profile.ends_with("release") { " --release" } else { "" };
    let hint = format!("build it with `cargo build{flag} -p locklab-backend --bin locklab`");
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} is missing: {hint}", bin.display()));
    for src in ["backend/src", "redis/src", "core/src"] {
        if let Some((t, path)) = browser::newest_mtime(&browser::root().join(src)) {
            assert!(t <= built, "{} is older than {}: {hint}", bin.display(), path.display());
        }
    }
    bin
}

/// The catalogue's lesson `id` (the lessons built into core).
pub fn lesson(id: &str) -> locklab_core::lesson::Lesson {
    locklab_core::lesson::builtin()
        .expect("lessons parse")
        .into_iter()
        .find(|l| l.id == id)
        .unwrap_or_else(|| panic!("lesson {id} exists"))
}

/// This process's peak resident memory (`VmHWM`, in bytes): the backend
/// runs in-process in the security tests, so its peak is the test's. It is
/// the whole process's: a test that measures it holds [`measuring`] so no
/// other measuring test of its binary runs beside it.
pub fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status is readable");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM is in /proc/self/status")
        * 1024
}

/// The process-wide peak (and the `clear_refs` reset before it) that
/// [`peak_rss`] reads is shared by every test of a binary, which the harness
/// runs on parallel threads: a test that measures it holds [`measuring`]
/// (alone), every other test of its binary [`beside_measuring`] (together),
/// so nobody's memory is counted as the measured one's (seen: a range read
/// "grew" the backend by 102 MB while the 64 MiB `GET` test ran beside it).
static MEASURING: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Held for as long as a test measures [`peak_rss`]: no other test of the
/// binary runs meanwhile.
pub async fn measuring() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    MEASURING.write().await
}

/// Held by the tests of a binary that measures [`peak_rss`] which do not
/// measure it themselves: they run together, never beside a measurement.
pub async fn beside_measuring() -> tokio::sync::RwLockReadGuard<'static, ()> {
    MEASURING.read().await
}

/// Run `play`, a test of real processes in real time, up to `runs` times:
/// a run that panics is reported on stderr and played again from scratch,
/// and the last run's panic is the test's. For checks whose moments are a
/// few milliseconds of wall time (a lesson's staged race, a pause timed
/// against a lease): on a loaded 2-core machine one run can miss its
/// moment, while a real regression fails every run.
pub fn real_time_runs(what: &str, runs: usize, play: impl Fn()) {
    for run in 1..runs {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&play)) {
            Ok(()) => return,
            Err(e) => {
                let why = e
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| e.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                eprintln!("{what}: run {run} of {runs} failed, playing it again: {why}");
            }
        }
    }
    play();
}
