//! # Fuzzing locklab on stable Rust
//!
//! Everything a user can hand the simulator — bytes on a RESP socket, a
//! redis-cli line, a lesson file, a sequence of commands, a Lua script —
//! goes through a generator here, seeded and deterministic, so a failure is
//! reproduced by its target, seed and index. Each input runs under
//! `catch_unwind`: a panic is a crash, saved under `fuzz/regressions/` and
//! replayed by the tests from then on. An abort (a stack overflow) ends the
//! process; `cargo xtask fuzz` runs the fuzzer as a child and reports the
//! seed and the last index logged.
//!
//! Time per input is bounded by work, not by a clock: the parsers are
//! linear in their input, and a script by the VM's budget (instructions
//! plus the native work of string and table builtins); the engine target
//! checks after each script that the VM still answers.
//!
//! The engine target also compares its replies with a real redis-server
//! 7.0.15 when one is given (`--diff`), on the commands the differential
//! suite (`tests/diff/*.redis`) covers.
//!
//! No coverage feedback (that needs nightly's sanitizer instrumentation):
//! the generators are grammar-based instead, built from what the inputs
//! look like — valid frames and lines bent at random places, lesson files
//! cut and spliced, Lua programs from a small grammar of statements and
//! builtin calls.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use locklab_backend::real::conn::RealConnection;
use locklab_core::cli::{parse_line, take_repeat};
use locklab_core::lesson::Lesson;
use locklab_core::server::{Node, Profile};
use locklab_core::Reply;

pub mod gen;
pub mod libcalls;
pub mod wire;

pub use gen::Draws;

/// What is fuzzed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuzzTarget {
    /// sim-server's request parser and reply encoder.
    Resp,
    /// redis-cli's line syntax and repeat prefix.
    Cli,
    /// Lesson files.
    Lesson,
    /// The command engine: random argv sequences on a node.
    Engine,
    /// Random Lua programs through EVAL.
    Lua,
    /// sim-server's connection loop over TCP: every stream cut at every
    /// byte, idle and while a script is busy (module `wire`).
    Wire,
    /// One call of Lua 5.1's library with edge arguments through EVAL,
    /// its reply compared with redis-server's (module `libcalls`). Last, so
    /// that the other targets' inputs of a seed stay what they were.
    LuaLib,
}

impl FuzzTarget {
    pub const ALL: [FuzzTarget; 7] = [
        FuzzTarget::Resp,
        FuzzTarget::Cli,
        FuzzTarget::Lesson,
        FuzzTarget::Engine,
        FuzzTarget::Lua,
        FuzzTarget::LuaLib,
        FuzzTarget::Wire,
    ];

    /// What a run without `--target` fuzzes: every target. (`lualib` was
    /// left out while it still found known differences; they are matched.)
    pub const DEFAULT: [FuzzTarget; 7] = FuzzTarget::ALL;

    pub fn name(self) -> &'static str {
        match self {
            FuzzTarget::Resp => "resp",
            FuzzTarget::Cli => "cli",
            FuzzTarget::Lesson => "lesson",
            FuzzTarget::Engine => "engine",
            FuzzTarget::Lua => "lua",
            FuzzTarget::LuaLib => "lualib",
            FuzzTarget::Wire => "wire",
        }
    }

    pub fn parse(s: &str) -> Option<FuzzTarget> {
        FuzzTarget::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Inputs of this target cost about this many of the cheapest one
    /// (a `--inputs` budget is shared out in inverse proportion).
    pub fn weight(self) -> u64 {
        match self {
            FuzzTarget::Resp | FuzzTarget::Cli => 1,
            FuzzTarget::Lesson => 8,
            FuzzTarget::Engine => 4,
            FuzzTarget::Lua => 40,
            // One EVAL on each side.
            FuzzTarget::LuaLib => 20,
            // Two connections and a pause per byte (≈ 20 ms an input).
            FuzzTarget::Wire => 400,
        }
    }
}

/// One input that made the simulator panic or disagree with redis-server.
#[derive(Debug, Clone)]
pub struct FuzzFinding {
    pub target: FuzzTarget,
    pub index: u64,
    pub what: String,
    /// Where the input was saved, if it was.
    pub saved: Option<PathBuf>,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct FuzzReport {
    pub tried: u64,
    pub findings: Vec<FuzzFinding>,
    /// Replies compared with redis-server.
    pub compared: u64,
    /// Engine sequences left unjudged: redis-server's clock moved during
    /// every play (see [`compare_sequence`]).
    pub unjudged: Vec<u64>,
}

/// Where crash inputs are kept: `fuzz/regressions/<target>/`.
pub fn regressions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions")
}

/// Run `count` inputs of `target` from `seed`. With `real`, the engine's
/// replies are compared with that redis-server's. `save` keeps crash inputs.
pub fn fuzz(
    target: FuzzTarget,
    seed: u64,
    count: u64,
    mut real: Option<&mut RealConnection>,
    save: bool,
    mut progress: impl FnMut(u64),
) -> FuzzReport {
    let mut report = FuzzReport::default();
    let lessons = gen::lesson_corpus();
    let mut node = Node::new(Profile::V7_0);
    let mut conn = node.connect();
    for index in 0..count {
        if index % 10_000 == 0 {
            progress(index);
        }
        let input = generate(target, seed, index, &lessons);
        report.tried += 1;
        let outcome = catch_unwind(AssertUnwindSafe(|| match target {
            FuzzTarget::Engine => engine(&mut node, &mut conn, &input, real.as_deref_mut()),
            FuzzTarget::LuaLib => library_call(&mut node, conn, &input, real.as_deref_mut()).map(Some),
            _ => run_one(target, &mut node, conn, &input).map(Some),
        }));
        let what = match outcome {
            Ok(Ok(Some(compared))) => {
                report.compared += compared;
                continue;
            }
            Ok(Ok(None)) => {
                report.unjudged.push(index);
                continue;
            }
            Ok(Err(mismatch)) => mismatch,
            Err(payload) => format!("panic: {}", panic_text(&payload)),
        };
        let saved = save.then(|| save_input(target, &input)).flatten();
        report.findings.push(FuzzFinding {
            target,
            index,
            what,
            saved,
        });
        // Start over from a clean node after a failure.
        node = Node::new(Profile::V7_0);
        conn = node.connect();
    }
    report
}

/// Input number `index` of `target` from `seed`: how a finding is
/// reproduced.
pub fn input(target: FuzzTarget, seed: u64, index: u64) -> Vec<u8> {
    generate(target, seed, index, &gen::lesson_corpus())
}

fn generate(target: FuzzTarget, seed: u64, index: u64, lessons: &[String]) -> Vec<u8> {
    let mut rng = Draws::new(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ target as u64);
    match target {
        FuzzTarget::Resp => gen::resp_input(&mut rng),
        FuzzTarget::Cli => gen::cli_line(&mut rng),
        FuzzTarget::Lesson => gen::lesson_text(&mut rng, lessons),
        FuzzTarget::Engine => gen::argv_sequence(&mut rng),
        FuzzTarget::Lua => gen::lua_program(&mut rng),
        FuzzTarget::LuaLib => libcalls::library_call(&mut rng),
        FuzzTarget::Wire => gen::resp_input(&mut rng),
    }
}

/// Run one input of a target other than the differential engine. `Err`
/// only for a broken invariant that is not a panic.
pub fn run_one(
    target: FuzzTarget,
    node: &mut Node,
    conn: locklab_core::server::ConnId,
    input: &[u8],
) -> Result<u64, String> {
    match target {
        FuzzTarget::Resp => {
            let chunks = gen::split_chunks(input);
            let refs: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let _ = locklab_backend::sim_server::fuzz_resp(&refs);
            // The same commands however the stream is cut.
            locklab_backend::sim_server::fuzz_resp_split(input)?;
        }
        FuzzTarget::Cli => {
            if let Ok(mut argv) = parse_line(input) {
                let _ = take_repeat(&mut argv);
                let _ = locklab_core::cli::render(&argv, &Reply::Nil);
            }
        }
        FuzzTarget::Lesson => {
            let text = String::from_utf8_lossy(input);
            let _ = Lesson::parse(&text);
        }
        FuzzTarget::Engine => {
            for argv in gen::decode_sequence(input) {
                let _ = node.execute(conn, &argv);
            }
        }
        FuzzTarget::Wire => wire::check(input)?,
        FuzzTarget::Lua | FuzzTarget::LuaLib => {
            let argv = vec![
                b"EVAL".to_vec(),
                input.to_vec(),
                b"1".to_vec(),
                b"k".to_vec(),
                b"1".to_vec(),
            ];
            let _ = node.execute(conn, &argv);
            // The VM is still whole after whatever the script did.
            let check = node.execute(conn, &[b"EVAL".to_vec(), b"return 1".to_vec(), b"0".to_vec()]);
            if check != Reply::Integer(1) {
                return Err(format!("the VM broke: `return 1` answered {check:?}"));
            }
        }
    }
    Ok(0)
}

/// The engine target: run the sequence on the node; with a real server,
/// on both from an empty keyspace, and compare reply by reply. `Ok(None)`:
/// unjudged (see [`compare_sequence`]).
fn engine(
    node: &mut Node,
    conn: &mut locklab_core::server::ConnId,
    input: &[u8],
    real: Option<&mut RealConnection>,
) -> Result<Option<u64>, String> {
    let seq = gen::decode_sequence(input);
    let Some(real) = real else {
        for argv in &seq {
            let _ = node.execute(*conn, argv);
        }
        return Ok(Some(0));
    };
    compare_sequence(node, conn, &seq, real, &mut |_, _| {})
}

/// How many times an engine sequence is played before it is left unjudged.
const MAX_PLAYS: u32 = 20;

/// Play `seq` on a fresh node and a flushed redis-server until its replies
/// are equal or a play that differs was *clean*. `Ok(Some(n))`: `n` replies
/// equal; `Err`: a clean play differed; `Ok(None)`: every play in
/// [`MAX_PLAYS`] differed and none was clean, so nothing is said.
///
/// The node's clock stands still while redis-server's runs, so a reply that
/// depends on time can differ without the simulator being wrong: `SET h -1
/// PX 100` then `DECR h` is -2 here and -1 there if 100 ms passed between
/// the two (CI's fuzz runs at nice 19 beside the tests, and both of its
/// plays of that sequence stalled that long); `SET k v EX 100` then `EXPIRE
/// k 100 GT` differs once a millisecond ticks. A play is clean when the
/// wall clock's millisecond is the same before its first command and after
/// its last reply: redis-server then read one time throughout, as the node
/// did, and a difference is the simulator's own (those are deterministic,
/// so an idle moment finds a clean play). Equal replies need no clean play. `stall(play, command)` runs
/// before each command reaches redis-server: the tests use it to stand in
/// for a loaded machine.
pub fn compare_sequence(
    node: &mut Node,
    conn: &mut locklab_core::server::ConnId,
    seq: &[Vec<Vec<u8>>],
    real: &mut RealConnection,
    stall: &mut dyn FnMut(u32, usize),
) -> Result<Option<u64>, String> {
    for play in 0..MAX_PLAYS {
        let (outcome, clean) = engine_sequence(node, conn, seq, real, &mut |i| stall(play, i));
        if clean || outcome.is_ok() {
            return outcome.map(Some);
        }
    }
    Ok(None)
}

fn wall_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// One play of an engine sequence on a fresh node and a flushed server,
/// and whether it was clean (one wall-clock millisecond from its first
/// command to its last reply).
fn engine_sequence(
    node: &mut Node,
    conn: &mut locklab_core::server::ConnId,
    seq: &[Vec<Vec<u8>>],
    real: &mut RealConnection,
    stall: &mut dyn FnMut(usize),
) -> (Result<u64, String>, bool) {
    // A fresh node and a flushed server for each sequence.
    *node = Node::new(Profile::V7_0);
    *conn = node.connect();
    if let Err(e) = real.execute(&[b"FLUSHALL".to_vec()]) {
        return (Err(format!("redis-server: {e}")), true);
    }
    let start = wall_ms();
    let outcome = play_sequence(node, *conn, seq, real, stall);
    (outcome, wall_ms() == start)
}

fn play_sequence(
    node: &mut Node,
    conn: locklab_core::server::ConnId,
    seq: &[Vec<Vec<u8>>],
    real: &mut RealConnection,
    stall: &mut dyn FnMut(usize),
) -> Result<u64, String> {
    let mut compared = 0;
    for (i, argv) in seq.iter().enumerate() {
        let ours = flatten(node.execute(conn, argv));
        stall(i);
        let theirs = flatten(real.execute(argv).map_err(|e| format!("redis-server: {e}"))?);
        if ours != theirs {
            // Leave no transaction open on the real connection.
            let _ = real.execute(&[b"DISCARD".to_vec()]);
            return Err(format!(
                "differs from redis-server on {}: ours {ours:?}, redis-server {theirs:?}",
                gen::show_argv(argv)
            ));
        }
        compared += 1;
    }
    let _ = real.execute(&[b"DISCARD".to_vec()]);
    Ok(compared)
}

/// The library-call target: the script through EVAL on the node and, with
/// a real server, on redis-server; the two replies must be equal, error
/// texts included.
fn library_call(
    node: &mut Node,
    conn: locklab_core::server::ConnId,
    input: &[u8],
    real: Option<&mut RealConnection>,
) -> Result<u64, String> {
    let Some(real) = real else {
        return run_one(FuzzTarget::LuaLib, node, conn, input);
    };
    let argv = vec![b"EVAL".to_vec(), input.to_vec(), b"0".to_vec()];
    let ours = flatten(node.execute(conn, &argv));
    let theirs = flatten(real.execute(&argv).map_err(|e| format!("redis-server: {e}"))?);
    if ours != theirs {
        return Err(format!(
            "differs from redis-server on EVAL {:?} 0:\n    ours:         {}\n    redis-server: {}",
            libcalls::shown(input),
            ours.to_cli().replace('\n', " | "),
            theirs.to_cli().replace('\n', " | ")
        ));
    }
    Ok(1)
}

/// RESP2 shapes: a map is its flattened pairs.
fn flatten(r: Reply) -> Reply {
    match r {
        Reply::Map(pairs) => Reply::Array(pairs.into_iter().flat_map(|(k, v)| [flatten(k), flatten(v)]).collect()),
        Reply::Array(items) => Reply::Array(items.into_iter().map(flatten).collect()),
        other => other,
    }
}

fn panic_text(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".to_owned())
}

/// Keep a crash input as `regressions/<target>/<hash>.bin`.
fn save_input(target: FuzzTarget, input: &[u8]) -> Option<PathBuf> {
    let dir = regressions_dir().join(target.name());
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("{}.bin", &locklab_core::server::script::sha1_hex(input)[..16]));
    std::fs::write(&path, input).ok()?;
    Some(path)
}

/// Every kept regression input, with its target.
pub fn regressions() -> Vec<(FuzzTarget, PathBuf)> {
    let mut out = Vec::new();
    for t in FuzzTarget::ALL {
        let Ok(entries) = std::fs::read_dir(regressions_dir().join(t.name())) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        out.extend(files.into_iter().map(|p| (t, p)));
    }
    out
}
