//! `locklab-fuzz`: run the fuzz targets for a number of inputs and report.
//!
//! ```text
//! locklab-fuzz [--inputs N] [--seed S] [--target resp|cli|lesson|engine|lua|lualib|wire] [--diff] [--no-save] [--show N]
//! ```
//!
//! `--inputs` is shared among the targets by their cost (a Lua program
//! costs about forty RESP frames); `--diff` starts a redis-server and
//! compares the engine's replies and the Lua library calls' with it. Progress goes to stderr as
//! `<target> <index>` lines, so whoever runs this (cargo xtask fuzz) can
//! name the input an abort happened at. Exit status 1 when anything was
//! found.

use anyhow::{bail, Context, Result};
use locklab_backend::real::conn::RealConnection;
use locklab_backend::real::process::RedisServer;
use locklab_core::server::{Node, Profile};
use locklab_fuzz::{fuzz, regressions, run_one, FuzzTarget};

/// The command line.
struct Options {
    inputs: u64,
    seed: u64,
    targets: Vec<FuzzTarget>,
    diff: bool,
    save: bool,
    /// How many findings per target are printed.
    show: usize,
}

fn options() -> Result<Options> {
    let mut inputs: u64 = 100_000;
    let mut seed: u64 = 1;
    let mut only: Option<FuzzTarget> = None;
    let mut diff = false;
    let mut save = true;
    let mut show = 20;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--inputs" => inputs = args.next().context("--inputs needs a number")?.parse()?,
            "--seed" => seed = args.next().context("--seed needs a number")?.parse()?,
            "--target" => {
                let t = args.next().context("--target needs a name")?;
                only = Some(FuzzTarget::parse(&t).with_context(|| format!("unknown target {t}"))?);
            }
            "--diff" => diff = true,
            "--no-save" => save = false,
            "--show" => show = args.next().context("--show needs a number")?.parse()?,
            other => bail!("unknown option {other}"),
        }
    }
    let targets: Vec<FuzzTarget> = only.map_or_else(|| FuzzTarget::DEFAULT.to_vec(), |t| vec![t]);
    Ok(Options {
        inputs,
        seed,
        targets,
        diff,
        save,
        show,
    })
}

/// Every kept crash first: each must pass again before new inputs are tried.
fn replay_regressions() -> Result<()> {
    let mut node = Node::new(Profile::V7_0);
    let conn = node.connect();
    let kept = regressions();
    for (t, path) in &kept {
        let input = std::fs::read(path)?;
        if let Err(e) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_one(*t, &mut node, conn, &input)))
            .map_err(|_| "panic".to_owned())
            .and_then(|r| r)
        {
            bail!("regression {} fails again: {e}", path.display());
        }
    }
    println!("regressions: {} kept inputs replayed, all fine", kept.len());
    Ok(())
}

/// One target's line of the report, and its first findings.
fn print_report(t: FuzzTarget, report: &locklab_fuzz::FuzzReport, show: usize) {
    println!(
        "{:<7} {:>10} inputs, {} found{}",
        t.name(),
        report.tried,
        report.findings.len(),
        if report.compared > 0 {
            format!(", {} replies equal to redis-server's", report.compared)
        } else {
            String::new()
        }
    );
    if !report.unjudged.is_empty() {
        // Not a finding: the machine was too loaded to tell (each is
        // reproduced with `--seed` and its index on an idle one).
        let first: Vec<String> = report.unjudged.iter().take(show).map(|i| format!("#{i}")).collect();
        println!(
            "  {} sequences unjudged: redis-server's clock moved during each of their plays ({})",
            report.unjudged.len(),
            first.join(" ")
        );
    }
    for f in report.findings.iter().take(show) {
        println!(
            "  #{}: {}{}",
            f.index,
            f.what,
            f.saved
                .as_ref()
                .map(|p| format!(" (kept as {})", p.display()))
                .unwrap_or_default()
        );
    }
}

fn main() -> Result<()> {
    let Options {
        inputs,
        seed,
        targets,
        diff,
        save,
        show,
    } = options()?;
    replay_regressions()?;

    let server = if diff { Some(RedisServer::start()) } else { None };
    let mut real = match &server {
        Some(s) => Some(RealConnection::open(&s.url()).context("connecting to redis-server")?),
        None => None,
    };
    // Shares inverse to cost: a Lua program costs about forty RESP frames.
    let total_share: f64 = targets.iter().map(|t| 1.0 / t.weight() as f64).sum();
    let mut counts: Vec<u64> = (targets.iter())
        .map(|t| ((inputs as f64 / t.weight() as f64 / total_share) as u64).max(1))
        .collect();
    // What the shares' rounding left goes to the first target, so a run of
    // N inputs tries N.
    let left = inputs.saturating_sub(counts.iter().sum());
    if let Some(first) = counts.first_mut() {
        *first += left;
    }
    let (mut tried, mut found, mut compared) = (0u64, 0usize, 0u64);
    for (t, count) in targets.into_iter().zip(counts) {
        let real = if matches!(t, FuzzTarget::Engine | FuzzTarget::LuaLib) {
            real.as_mut()
        } else {
            None
        };
        let report = fuzz(t, seed, count, real, save, |i| eprintln!("{} {i}", t.name()));
        print_report(t, &report, show);
        tried += report.tried;
        found += report.findings.len();
        compared += report.compared;
    }
    println!("total: {tried} inputs tried, {found} crashes or mismatches found, {compared} replies compared");
    if found > 0 {
        std::process::exit(1);
    }
    Ok(())
}
