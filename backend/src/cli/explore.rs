//! `locklab explore`: the schedule and fault explorer on the command line.
//!
//! All the searching happens in `locklab_core::explore`; this module only
//! turns flags and files into a [`Spec`], splits the search across threads
//! (core never spawns one, so it stays wasm32-clean), and returns the
//! transcript for `main` to print. Splitting is safe for determinism: each
//! thread searches every n-th schedule, and merging keeps the shortest
//! counterexample with the earliest schedule number, which is what a single
//! thread would have found.
//!
//! A FILE is JSON, or TOML if its name ends in `.toml`. It holds either an
//! exploration spec (the same fields as the flags, plus an optional full
//! `scenario`) or a bare scenario (topology, clients with programs). Flags
//! given on the command line override the file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use locklab_core::client::{Acquire, Release};
use locklab_core::explore::bfs::{Bfs, Limits, Reductions};

pub use super::explore_bench::exhaustive_bench;
use locklab_core::explore::{Explorer, FaultKind, Finding, Outcome, Spec, TopologyKind};
use locklab_core::server::script::{set_thread_limits, INSTRUCTION_LIMIT};
use locklab_core::world::{Persistence, Scenario};
use thiserror::Error;

/// Search schedules and faults for the shortest trace that breaks a lock
/// invariant.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ExploreArgs {
    /// An exploration spec or a scenario (JSON; TOML if it ends in .toml).
    pub file: Option<PathBuf>,
    /// How the lock is taken.
    #[arg(long, value_parser = ["set-nx-px", "setnx-expire"])]
    pub acquire: Option<String>,
    /// How the lock is released.
    #[arg(long, value_parser = ["del", "get-del", "getdel", "lua", "delex"])]
    pub release: Option<String>,
    /// Fencing tokens (taken atomically with the lock; the resource rejects lower ones).
    #[arg(long, value_parser = ["on", "off"])]
    pub fencing: Option<String>,
    #[arg(long, value_parser = ["single", "replicated", "redlock5"])]
    pub topology: Option<String>,
    /// Number of competing clients.
    #[arg(long)]
    pub clients: Option<u32>,
    /// The fault budget per schedule: pauses, crashes, failovers, restarts, clock jumps.
    #[arg(long)]
    pub faults: Option<u32>,
    /// What a restarted node keeps: aof = its data, none = nothing.
    #[arg(long, value_parser = ["aof", "none"])]
    pub persistence: Option<String>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only these fault kinds (comma-separated): pause, crash, restart, failover, clock-jump.
    #[arg(long, value_delimiter = ',', value_parser = ["pause", "crash", "restart", "failover", "clock-jump"])]
    pub fault_kinds: Vec<String>,
    /// Random walks after the exhaustive phase.
    #[arg(long)]
    pub walks: Option<u64>,
    /// Worker threads (default 2).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Bounded-exhaustive breadth-first search instead of sampling: "held"
    /// only once every schedule within the stated bounds was explored.
    #[arg(long)]
    pub exhaustive: bool,
    /// With --exhaustive: world seeds to start from (network delays), from --seed on.
    #[arg(long)]
    pub seeds: Option<u32>,
    /// With --exhaustive: give up after this many seconds, "not exhausted" (default 60).
    #[arg(long)]
    pub time_limit: Option<f64>,
    /// With --exhaustive: give up after this many distinct states (default 2 000 000).
    #[arg(long)]
    pub max_states: Option<u64>,
    /// Measure the exhaustive search: design 07's shortest counterexample, design 06
    /// with 3 clients and 2 faults, distinct states per second, reduction factors.
    #[arg(long)]
    pub bench: bool,
    /// After the transcript, the counterexample as a Mermaid sequence diagram
    /// (`mermaid`), a redis-cli script with the waits (`cli`), or a lesson file
    /// in the format of `lessons/*.toml` (`lesson`).
    #[arg(long, value_parser = ["mermaid", "cli", "lesson"])]
    pub export: Option<String>,
    /// After the transcript, the counterexample's "because" chain in English and Chinese.
    #[arg(long)]
    pub explain: bool,
}

/// Why `locklab explore` could not run.
#[derive(Debug, Error)]
pub enum ExploreCliError {
    #[error(transparent)]
    File(#[from] crate::userfile::FileError),
    #[error("{path} is neither an exploration spec nor a scenario:\n  as a spec: {spec}\n  as a scenario: {scenario}")]
    Parse {
        path: PathBuf,
        spec: String,
        scenario: String,
    },
    #[error("--threads must be 1 to 64")]
    Threads,
    #[error(transparent)]
    Explore(#[from] locklab_core::explore::ExploreError),
}

fn parse_file(path: &Path) -> Result<Spec, ExploreCliError> {
    let text = crate::userfile::read(path, crate::userfile::DESIGN)?;
    let is_toml = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    // A bare scenario is recognised by its top-level `clients`; anything
    // else must be a spec (which refuses unknown fields, so typos surface).
    let (has_clients, spec, scenario) = if is_toml {
        (
            toml::from_str::<toml::Table>(&text).is_ok_and(|t| t.contains_key("clients")),
            toml::from_str::<Spec>(&text).map_err(|e| e.to_string()),
            toml::from_str::<Scenario>(&text).map_err(|e| e.to_string()),
        )
    } else {
        (
            serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| v.get("clients").is_some()),
            serde_json::from_str::<Spec>(&text).map_err(|e| e.to_string()),
            serde_json::from_str::<Scenario>(&text).map_err(|e| e.to_string()),
        )
    };
    match (has_clients, spec, scenario) {
        (false, Ok(spec), _) => Ok(spec),
        (true, _, Ok(sc)) => Ok(Spec {
            seed: sc.seed,
            scenario: Some(sc),
            ..Spec::default()
        }),
        (_, spec, scenario) => Err(ExploreCliError::Parse {
            path: path.to_path_buf(),
            spec: clip(
                spec.err()
                    .unwrap_or_else(|| "it has a `clients` list, so it was read as a scenario".into()),
            ),
            scenario: clip(scenario.err().unwrap_or_else(|| "it has no `clients` list".into())),
        }),
    }
}

/// A parser's message cut to a readable size: the TOML parser quotes the
/// offending line, and a hostile file's line can be a megabyte long.
fn clip(message: String) -> String {
    const MAX: usize = 600;
    message
        .lines()
        .map(|l| match l.char_indices().nth(MAX) {
            Some((i, _)) => format!("{}…", &l[..i]),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The spec the arguments describe: the file's, with flags on top.
pub fn spec_from_args(args: &ExploreArgs) -> Result<Spec, ExploreCliError> {
    let mut spec = match &args.file {
        Some(path) => parse_file(path)?,
        None => Spec::default(),
    };
    // clap has already checked every value against its list.
    if let Some(a) = args.acquire.as_deref().and_then(Acquire::parse) {
        spec.acquire = a;
    }
    if let Some(r) = args.release.as_deref().and_then(Release::parse) {
        spec.release = r;
    }
    if let Some(f) = &args.fencing {
        spec.fencing = f == "on";
    }
    if let Some(t) = args.topology.as_deref().and_then(TopologyKind::parse) {
        spec.topology = t;
    }
    if let Some(c) = args.clients {
        spec.clients = c;
    }
    if let Some(f) = args.faults {
        spec.faults = f;
    }
    if let Some(p) = args.persistence.as_deref().and_then(Persistence::parse) {
        spec.persistence = p;
    }
    if let Some(s) = args.seed {
        spec.set_seed(s);
    }
    if !args.fault_kinds.is_empty() {
        spec.fault_kinds = args.fault_kinds.iter().filter_map(|k| FaultKind::parse(k)).collect();
    }
    if let Some(w) = args.walks {
        spec.random_walks = w;
    }
    Ok(spec)
}

/// The scripts this search thread runs are killed by Ctrl-C, as those of
/// the main thread are (`repl::run_killable`; the limits are per thread).
fn killable_by_ctrl_c() {
    set_thread_limits(Some(super::repl::script_kill()), INSTRUCTION_LIMIT);
}

/// Search all schedules on `threads` threads and merge.
pub fn search(explorer: &Explorer, threads: usize) -> Finding {
    let shards = threads.max(1) as u64;
    if shards == 1 {
        return explorer.search(0, 1);
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..shards)
            .map(|k| {
                s.spawn(move || {
                    killable_by_ctrl_c();
                    explorer.search(k, shards)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .fold(Finding::default(), Finding::merge)
    })
}

/// Run the explorer; the whole transcript, ending in its `result:` line.
pub fn run(args: &ExploreArgs) -> Result<String, ExploreCliError> {
    let threads = args.threads.unwrap_or(2);
    if !(1..=64).contains(&threads) {
        return Err(ExploreCliError::Threads);
    }
    if args.bench {
        return Ok(exhaustive_bench());
    }
    let spec = spec_from_args(args)?;
    if args.exhaustive {
        let limits = Limits {
            max_states: args.max_states.unwrap_or(Limits::default().max_states),
            ..Limits::default()
        };
        let seconds = args
            .time_limit
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(locklab_core::explore::job::TIME_LIMIT_S);
        let mut bfs = Bfs::new(&spec, args.seeds.unwrap_or(1), Reductions::default(), limits)?;
        timed_bfs(&mut bfs, Duration::from_secs_f64(seconds.min(86_400.0)));
        return Ok(with_export(&spec, &bfs.report(), args));
    }
    let explorer = Explorer::new(&spec)?;
    let finding = search(&explorer, threads);
    Ok(with_export(&spec, &explorer.report(&finding), args))
}

/// The transcript, then the counterexample exported as `--export` asks
/// (core's `explore::export`); a held result has nothing to export.
fn with_export(spec: &Spec, report: &locklab_core::explore::Report, args: &ExploreArgs) -> String {
    let export = args.export.as_deref();
    let mut out = report.transcript();
    let Outcome::Violated { trace, .. } = &report.outcome else {
        if export.is_some() || args.explain {
            out.push_str("\nnothing to export: no counterexample\n");
        }
        return out;
    };
    use locklab_core::explore::export as ex;
    if args.explain {
        out.push_str(&format!(
            "\nbecause: {}\n因为：{}\n",
            ex::because(trace, false),
            ex::because(trace, true)
        ));
    }
    match export {
        Some("mermaid") => out.push_str(&format!("\n{}", ex::mermaid(trace))),
        Some("cli") => out.push_str(&format!("\n{}", ex::cli_script(trace))),
        Some("lesson") => match ex::lesson_toml(spec, report) {
            Ok(text) => out.push_str(&format!("\n{text}")),
            Err(e) => out.push_str(&format!("\nno lesson: {e}\n")),
        },
        _ => {}
    }
    out
}

/// Run a breadth-first search until it ends or `budget` is spent (then it
/// ends "not exhausted"); the time it took.
fn timed_bfs(bfs: &mut Bfs, budget: Duration) -> Duration {
    let start = Instant::now();
    while !bfs.step(64) {
        if start.elapsed() >= budget {
            bfs.stop();
        }
    }
    start.elapsed()
}

/// Time-box a search: both threads take chunks of schedules until the
/// deadline; returns (schedules, events).
fn timed(explorer: &Explorer, threads: usize, budget: Duration) -> (u64, u64) {
    const CHUNK: u64 = 32;
    let total = explorer.total().max(1);
    let next = std::sync::atomic::AtomicU64::new(0);
    let deadline = Instant::now() + budget;
    let per_thread: Vec<Finding> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let next = &next;
                s.spawn(move || {
                    killable_by_ctrl_c();
                    let mut f = Finding::default();
                    while Instant::now() < deadline {
                        let start = next.fetch_add(CHUNK, std::sync::atomic::Ordering::Relaxed);
                        // Wrap around the index space, forgetting the best
                        // so far each lap so pruning does not make later
                        // laps free.
                        let from = start % total;
                        let to = (from + CHUNK).min(total);
                        let keep = Finding { best: None, ..f };
                        f = explorer.search_range(from..to, if from == 0 { keep } else { f });
                    }
                    f
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    per_thread
        .iter()
        .fold((0, 0), |(s, e), f| (s + f.explored, e + f.events))
}

pub(super) fn thousands(n: u64) -> String {
    locklab_core::explore::job::thousands(n, ' ')
}

/// The benchmark's cases: the two-client scenarios, the first one held
/// (nothing pruned), so that it runs every schedule to the end.
fn bench_cases() -> [(&'static str, Spec); 4] {
    [
        (
            "single, lua release, fencing on (held: nothing pruned)",
            Spec {
                release: Release::Lua,
                fencing: true,
                ..Spec::default()
            },
        ),
        (
            "single, bare DEL",
            Spec {
                release: Release::Del,
                ..Spec::default()
            },
        ),
        (
            "single, setnx-expire",
            Spec {
                acquire: Acquire::SetnxExpire,
                ..Spec::default()
            },
        ),
        (
            "replicated, lua release, failover",
            Spec {
                topology: TopologyKind::Replicated,
                ..Spec::default()
            },
        ),
    ]
}

/// World events per second and explorer schedules per minute for the
/// two-client scenarios, on two threads, `seconds` in total.
pub fn bench_report(seconds: f64) -> String {
    let seconds = if seconds.is_finite() {
        seconds.clamp(0.2, 600.0)
    } else {
        2.0
    };
    let threads = 2;
    let cases = bench_cases();
    let slice = Duration::from_secs_f64(seconds / (cases.len() as f64 + 1.0));
    let mut out = format!("locklab explore benchmark: {threads} threads, {seconds:.1} s\n");
    out.push_str(&events_per_second(&cases[0].1, threads, slice));
    out.push_str(&schedules_per_minute(&cases, threads, slice));
    out
}

/// World events per second: the held scenario's schedules run to the end
/// (no violation cuts them short), so this is raw simulation speed.
fn events_per_second(spec: &Spec, threads: usize, slice: Duration) -> String {
    match Explorer::new(spec) {
        Ok(ex) => {
            let t = Instant::now();
            let (schedules, events) = timed(&ex, threads, slice);
            let secs = t.elapsed().as_secs_f64().max(1e-9);
            format!(
                "world events per second: {} ({} schedules, {} events)\n",
                thousands((events as f64 / secs) as u64),
                thousands(schedules),
                thousands(events)
            )
        }
        Err(e) => format!("world events per second: cannot build the scenario: {e}\n"),
    }
}

/// Explorer schedules per minute for each case, and whether the slowest
/// meets the target.
fn schedules_per_minute(cases: &[(&str, Spec)], threads: usize, slice: Duration) -> String {
    let mut out = String::new();
    let mut worst = u64::MAX;
    out.push_str("explorer schedules per minute (two clients, one fault):\n");
    for (name, spec) in cases {
        let ex = match Explorer::new(spec) {
            Ok(ex) => ex,
            Err(e) => {
                out.push_str(&format!("  {name}: cannot build: {e}\n"));
                continue;
            }
        };
        let t = Instant::now();
        let (schedules, _) = timed(&ex, threads, slice);
        let per_min = (schedules as f64 * 60.0 / t.elapsed().as_secs_f64().max(1e-9)) as u64;
        worst = worst.min(per_min);
        out.push_str(&format!("  {name}: {}\n", thousands(per_min)));
    }
    if worst != u64::MAX {
        out.push_str(&format!(
            "target ≥ 100 000 schedules per minute: {} (slowest case {})\n",
            if worst >= 100_000 { "met" } else { "NOT met" },
            thousands(worst)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("locklab-explore-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("write temp file");
        path
    }

    fn last_line(s: &str) -> &str {
        s.lines().last().unwrap_or_default()
    }

    #[test]
    fn flags_override_the_defaults() {
        let args = ExploreArgs {
            release: Some("get-del".into()),
            fencing: Some("on".into()),
            topology: Some("replicated".into()),
            persistence: Some("none".into()),
            fault_kinds: vec!["pause".into(), "clock-jump".into()],
            seed: Some(9),
            ..ExploreArgs::default()
        };
        let spec = spec_from_args(&args).expect("spec");
        assert_eq!(spec.release, Release::GetThenDel);
        assert!(spec.fencing);
        assert_eq!(spec.topology, TopologyKind::Replicated);
        assert_eq!(spec.persistence, Persistence::Off);
        assert_eq!(spec.fault_kinds, vec![FaultKind::Pause, FaultKind::ClockJump]);
        assert_eq!(spec.seed, 9);
    }

    #[test]
    fn a_json_spec_file_with_flags_on_top() {
        let path = temp(
            "spec.json",
            r#"{ "release": "del", "fencing": true, "random_walks": 100, "exhaustive_seeds": 2 }"#,
        );
        let args = ExploreArgs {
            file: Some(path.clone()),
            threads: Some(2),
            ..ExploreArgs::default()
        };
        let out = run(&args).expect("runs");
        assert!(
            last_line(&out).starts_with("result: violated wrong-release (seed "),
            "{out}"
        );
        let held = ExploreArgs {
            release: Some("lua".into()),
            ..args
        };
        assert!(last_line(&run(&held).expect("runs")).starts_with("result: sampled "));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_toml_scenario_file() {
        let path = temp(
            "scenario.toml",
            r#"
seed = 4
[world]
fencing = false
[[clients]]
name = "A"
program = { type = "lock", release = "del" }
[[clients]]
name = "B"
start_ms = 3
program = { type = "lock", release = "del" }
"#,
        );
        let args = ExploreArgs {
            file: Some(path.clone()),
            walks: Some(50),
            threads: Some(1),
            ..ExploreArgs::default()
        };
        let out = run(&args).expect("runs");
        assert!(out.starts_with("locklab explore: scenario from file"), "{out}");
        assert!(last_line(&out).starts_with("result: violated "), "{out}");
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_design_file_with_the_users_own_lua() {
        let path = temp(
            "design.toml",
            "fencing = true\nexhaustive_seeds = 2\nrandom_walks = 100\n[scripts]\nrelease = '''\nreturn redis.call('DEL', KEYS[1])\n'''\n",
        );
        let args = ExploreArgs {
            file: Some(path.clone()),
            threads: Some(2),
            ..ExploreArgs::default()
        };
        let out = run(&args).expect("runs");
        assert!(out.contains("own Lua: release"), "{out}");
        assert!(
            last_line(&out).starts_with("result: violated wrong-release (seed "),
            "{out}"
        );
        std::fs::write(&path, "[scripts]\nrelease = 'return redis.call(\"DEL\", KEYS[1]'\n").expect("rewrite");
        let err = run(&args).expect_err("does not compile").to_string();
        assert!(
            err.starts_with("the release script does not compile: (error) ERR Error compiling script (new function): user_script:1: "),
            "{err}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn bad_files_and_flags_are_errors() {
        let missing = ExploreArgs {
            file: Some("/nonexistent/locklab.json".into()),
            ..ExploreArgs::default()
        };
        assert!(matches!(run(&missing), Err(ExploreCliError::File(_))));
        let path = temp("bad.json", r#"{ "release": "sometimes" }"#);
        let bad = ExploreArgs {
            file: Some(path.clone()),
            ..ExploreArgs::default()
        };
        assert!(matches!(run(&bad), Err(ExploreCliError::Parse { .. })));
        let _ = std::fs::remove_file(path);
        assert!(matches!(
            run(&ExploreArgs {
                threads: Some(0),
                ..ExploreArgs::default()
            }),
            Err(ExploreCliError::Threads)
        ));
        assert!(matches!(
            run(&ExploreArgs {
                clients: Some(0),
                ..ExploreArgs::default()
            }),
            Err(ExploreCliError::Explore(_))
        ));
    }

    #[test]
    fn threads_do_not_change_the_answer() {
        let args = |t| ExploreArgs {
            release: Some("getdel".into()),
            walks: Some(200),
            threads: Some(t),
            ..ExploreArgs::default()
        };
        assert_eq!(run(&args(1)).expect("1"), run(&args(2)).expect("2"));
    }

    #[test]
    fn bench_report_smoke() {
        let r = bench_report(0.5);
        assert!(r.contains("world events per second"), "{r}");
        assert!(r.contains("schedules per minute"), "{r}");
    }

    /// The figures for the report: `cargo test --release -p locklab-backend
    /// explore::tests::bench -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn bench() {
        println!("{}", bench_report(10.0));
    }

    /// `--exhaustive` says "held" only with its bounds, a broken design's
    /// counterexample is the shortest within them, and a limit too small
    /// for the state space is "not exhausted", never "held".
    #[test]
    fn exhaustive_states_its_bounds() {
        let fenced = ExploreArgs {
            release: Some("lua".into()),
            fencing: Some("on".into()),
            exhaustive: true,
            ..ExploreArgs::default()
        };
        let out = run(&fenced).expect("runs");
        assert!(
            last_line(&out).starts_with("result: held: every schedule of 2 clients with at most 1 fault(s) from {"),
            "{out}"
        );
        assert!(last_line(&out).ends_with(" distinct states"), "{out}");
        let broken = ExploreArgs {
            release: Some("del".into()),
            ..fenced.clone()
        };
        let out = run(&broken).expect("runs");
        assert!(
            last_line(&out).starts_with("result: violated wrong-release (seed "),
            "{out}"
        );
        assert!(out.contains("\nshortest counterexample (breadth-first"), "{out}");
        let tight = ExploreArgs {
            max_states: Some(50),
            ..fenced
        };
        let out = run(&tight).expect("runs");
        assert!(
            last_line(&out).starts_with("result: not exhausted within the limit: explored "),
            "{out}"
        );
    }

    #[test]
    #[ignore]
    fn exhaustive_bench_figures() {
        println!("{}", exhaustive_bench());
    }
}
