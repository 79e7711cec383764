//! `locklab check`: a lock library's history, checked.
//!
//! The checking is all in `locklab_core::history` (pure, also in the page's
//! worker); this module opens the file, streams it through core's reader
//! (which bounds the memory a hostile file can take), and prints the report
//! as text or JSON. `--bench` checks a generated 8-client history instead
//! and prints how fast.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use locklab_core::history::linear::Search;
use locklab_core::history::{check, generate, parse, History, HistoryError, Limits, Linearity, Report};
use thiserror::Error;

/// Check a lock library's history (JSON lines) for broken lock invariants and linearizability.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CheckArgs {
    /// The history: one call or fault per line (see README, "Check your own locks").
    #[arg(required_unless_present = "bench")]
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
    /// With --bench: clients in the generated history.
    #[arg(long, default_value_t = 8, requires = "bench")]
    pub clients: u32,
    /// With --bench: the generator's seed.
    #[arg(long, default_value_t = 1, requires = "bench")]
    pub seed: u64,
}

#[derive(Debug, Error)]
pub enum CheckError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    History { path: String, source: HistoryError },
    #[error("cannot write the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// What `locklab check` prints, and whether it found anything wrong (the
/// exit status).
pub struct Outcome {
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
pub fn run(args: &CheckArgs) -> Result<Outcome, CheckError> {
    let search = Search { limit: args.limit };
    if args.bench {
        return Ok(bench(args, &search));
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
    Ok(Outcome {
        text: render(&report, args.json)?,
        clean: clean(&report),
    })
}

/// Check a generated history and say how fast.
fn bench(args: &CheckArgs, search: &Search) -> Outcome {
    let history = generate(args.seed, args.clients, args.ops);
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
    Outcome {
        text,
        clean: clean(&report),
    }
}
