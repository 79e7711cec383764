//! `locklab check`: a lock library's history, checked.
//!
//! The checking is all in `locklab_core::history` (pure, also in the page's
//! worker); this module opens the file, streams it through core's reader
//! (which bounds the memory a hostile file can take), and prints the report
//! as text or JSON. `--bench` checks a generated 8-client history instead
//! and prints how fast. `--library L --nemesis F` runs a real lock library
//! under a fault first (`check_run`), checks the history it produced, and
//! prints the report card (`check_card`).

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use locklab_core::history::linear::Search;
use locklab_core::history::{check, generate, parse, History, HistoryError, Limits, Linearity, Report};
use thiserror::Error;

use super::check_card::{Card, Row};
use super::check_libs::Libraries;
use super::check_run::{self, LockLibrary, Nemesis, RunError, RunSpec, TTL_MS};

/// Check a lock library's history (JSON lines) for broken lock invariants and linearizability.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CheckArgs {
    /// The history: one call or fault per line (see README, "Check your own locks").
    #[arg(required_unless_present_any = ["bench", "library"], conflicts_with = "library")]
    pub history: Option<PathBuf>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Most model steps the linearizability search may take per key before it answers "unknown".
    #[arg(long, value_name = "STEPS", default_value_t = Search::default().limit)]
    pub limit: u64,
    /// Check a generated history (N clients contending on one key) and print operations per second.
    #[arg(long, conflicts_with = "history")]
    pub bench: bool,
    /// With --bench: operations in the generated history.
    #[arg(long, default_value_t = 10_000, requires = "bench")]
    pub ops: usize,
    /// Clients: in the generated history with --bench (8), or client processes per run with --library (2).
    #[arg(long)]
    pub clients: Option<u32>,
    /// With --bench: the generator's seed; with --library: the nemesis's seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run these lock libraries (comma-separated), unchanged, under the nemesis and check their histories.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        requires = "nemesis",
        conflicts_with = "bench"
    )]
    pub library: Vec<LockLibrary>,
    /// The faults to inject (comma-separated): every library × every fault is one run, one row of the card.
    /// `failover` needs replication, which sim-server does not have: it runs on a master + replica of real
    /// redis-servers the lab starts on loopback ports (the card says so). In a matrix, a library × fault that
    /// cannot run (failover of a five-master Redlock, a node fault on --redis) is a cell saying why.
    #[arg(long, value_enum, value_delimiter = ',', requires = "library")]
    pub nemesis: Vec<Nemesis>,
    /// With --library: seconds each run's clients loop.
    #[arg(long, default_value_t = 10, requires = "library")]
    pub seconds: u64,
    /// With --library: the workloads write to the lab's fenced resource with the lab's fence.
    #[arg(long, requires = "library")]
    pub fenced: bool,
    /// With --library: the lease in milliseconds (pauses last 3–4 of them).
    #[arg(long, value_name = "MS", default_value_t = TTL_MS, requires = "library")]
    pub ttl_ms: u64,
    /// With --library: real Redis servers instead of sim-server nodes (one, or five for Redlock).
    #[arg(long, value_name = "URL", requires = "library")]
    pub redis: Vec<String>,
    /// With --library: your own workload (.py or .js, see checks/) in place of the library's.
    #[arg(long, value_name = "FILE", requires = "library")]
    pub workload: Option<PathBuf>,
    /// With --library: where the histories go (a new directory under the temporary one otherwise).
    #[arg(long, value_name = "DIR", requires = "library")]
    pub out: Option<PathBuf>,
    /// With --library: where the lock libraries are installed (default: $LOCKLAB_LIBS, else ~/.cache/locklab/libs).
    #[arg(long, value_name = "DIR", requires = "library")]
    pub libs: Option<PathBuf>,
    /// With --library: also write the card as Markdown to FILE.
    #[arg(long, value_name = "FILE", requires = "library")]
    pub markdown: Option<PathBuf>,
}

#[derive(Debug, Error)]
pub enum CheckError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    History { path: String, source: HistoryError },
    #[error("cannot write the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{library} under {nemesis}: {source}")]
    Run {
        library: &'static str,
        nemesis: &'static str,
        source: RunError,
    },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// What `locklab check` prints, and whether it found anything wrong (the
/// exit status).
pub struct CheckOutcome {
    pub text: String,
    pub clean: bool,
}

fn render(report: &Report, json: bool) -> Result<String, CheckError> {
    if json {
        Ok(serde_json::to_string_pretty(report)? + "\n")
    } else {
        Ok(report.text())
    }
}

fn clean(report: &Report) -> bool {
    report.findings.is_empty() && report.keys.iter().all(|k| k.linearity == Linearity::Linearizable)
}

/// Run `locklab check`.
pub fn run(args: &CheckArgs) -> Result<CheckOutcome, CheckError> {
    let search = Search { limit: args.limit };
    if args.bench {
        return Ok(bench(args, &search));
    }
    if !args.library.is_empty() {
        return libraries(args, &search);
    }
    let path = args.history.clone().unwrap_or_default();
    let name = path.display().to_string();
    let file = File::open(&path).map_err(|source| CheckError::Open {
        path: name.clone(),
        source,
    })?;
    let history: History =
        parse(BufReader::new(file), &Limits::default()).map_err(|source| CheckError::History { path: name, source })?;
    let report = check(&history, &search);
    Ok(CheckOutcome {
        text: render(&report, args.json)?,
        clean: clean(&report),
    })
}

/// Check a generated history and say how fast.
fn bench(args: &CheckArgs, search: &Search) -> CheckOutcome {
    let history = generate(args.seed, args.clients.unwrap_or(8), args.ops);
    let started = Instant::now();
    let report = check(&history, search);
    let secs = started.elapsed().as_secs_f64();
    let verdict = report
        .keys
        .iter()
        .map(|k| format!("{}: {:?}", k.key, k.linearity))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "checked {} operations of {} clients on one key in {:.3} s: {:.0} ops/s ({verdict}; {} findings)\n",
        report.ops,
        report.clients.len(),
        secs,
        report.ops as f64 / secs.max(1e-9),
        report.findings.len()
    );
    CheckOutcome {
        text,
        clean: clean(&report),
    }
}

/// Every library × every fault: run, check, and make the card.
fn libraries(args: &CheckArgs, search: &Search) -> Result<CheckOutcome, CheckError> {
    let base = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("locklab-check-{}-{}", std::process::id(), args.seed)));
    let libs = args.libs.clone().map_or_else(Libraries::from_env, Libraries::new);
    let mut card = Card::default();
    let matrix = args.library.len() * args.nemesis.len() > 1;
    for &library in &args.library {
        for &nemesis in &args.nemesis {
            let fence = if args.fenced { "fenced" } else { "unfenced" };
            let spec = RunSpec {
                library,
                nemesis,
                clients: args.clients.unwrap_or(2),
                seconds: args.seconds,
                seed: args.seed,
                fenced: args.fenced,
                ttl_ms: args.ttl_ms.max(1),
                redis: args.redis.clone(),
                workload: args.workload.clone(),
                dir: base.join(format!("{}-{}-{fence}", library.name(), nemesis.name())),
                libs: libs.clone(),
            };
            let run = match check_run::run(&spec) {
                Ok(run) => run,
                // One combination that cannot run does not stop a matrix.
                Err(e @ (RunError::FailoverNeedsOneNode(_) | RunError::NeedsOwnNodes(_))) if matrix => {
                    card.rows
                        .push(Row::not_run(library, nemesis, args.fenced, e.to_string()));
                    continue;
                }
                Err(source) => {
                    return Err(CheckError::Run {
                        library: library.name(),
                        nemesis: nemesis.name(),
                        source,
                    })
                }
            };
            let report = check(&run.history, search);
            card.rows.push(Row::new(library, nemesis, args.fenced, &run, &report));
        }
    }
    card.tabulate();
    if let Some(path) = &args.markdown {
        std::fs::write(path, card.markdown()).map_err(|source| CheckError::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    let text = if args.json {
        serde_json::to_string_pretty(&card)? + "\n"
    } else {
        card.text()
    };
    Ok(CheckOutcome {
        text,
        clean: card.clean(),
    })
}
