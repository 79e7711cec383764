//! `locklab trace import`: a `redis-cli MONITOR` capture as a lock timeline.
//!
//! The replay is all in `locklab_core::history::monitor` (pure, the page's
//! too); this module streams the file into it, prints the summary (lanes,
//! holds, violations, skipped lines with their numbers) and writes the
//! trace as JSON for the page when asked. `--bench` writes a synthetic
//! capture of 8 clients contending on one lock (1,000,000 lines by
//! default), imports it from the file, and prints the time and the peak
//! RSS — issue 40's target is ≤ 10 s and ≤ 300 MB.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use locklab_core::history::monitor::{import, Import, ImportError, ImportLimits};
use locklab_core::rng::Rng;
use thiserror::Error;

/// Replay a `redis-cli MONITOR` capture through the simulator: lanes per client, lock bars, violations.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ImportArgs {
    /// The capture: what `redis-cli MONITOR > capture.txt` wrote.
    #[arg(required_unless_present = "bench")]
    pub capture: Option<PathBuf>,
    /// A lock key (repeatable). Default: keys taken with `SET … NX` answered OK.
    #[arg(long = "lock", value_name = "KEY")]
    pub locks: Vec<String>,
    /// Write the trace and summary as JSON here (what the page opens).
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Import a generated capture (8 clients, one lock) and print the time and peak RSS.
    #[arg(long, conflicts_with = "capture")]
    pub bench: bool,
    /// With --bench: lines in the generated capture.
    #[arg(long, default_value_t = 1_000_000, requires = "bench")]
    pub lines: u64,
}

#[derive(Debug, Error)]
pub enum ImportCliError {
    #[error("cannot open {path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Read { path: String, source: ImportError },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("cannot write the trace as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// What `locklab trace import` prints, and whether the capture showed a
/// violation (the exit status).
pub struct ImportOutcome {
    pub text: String,
    pub clean: bool,
}

fn open(path: &Path) -> Result<BufReader<File>, ImportCliError> {
    File::open(path)
        .map(BufReader::new)
        .map_err(|source| ImportCliError::Open {
            path: path.display().to_string(),
            source,
        })
}

fn import_file(path: &Path, locks: &[String]) -> Result<Import, ImportCliError> {
    import(open(path)?, locks, &ImportLimits::default()).map_err(|source| ImportCliError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Run `locklab trace import`.
pub fn run(args: &ImportArgs) -> Result<ImportOutcome, ImportCliError> {
    if args.bench {
        return bench(args.lines);
    }
    let path = args.capture.clone().unwrap_or_default();
    let imported = import_file(&path, &args.locks)?;
    let mut text = imported.summary.text(&imported.trace.names);
    if let Some(out) = &args.json {
        let werr = |source| ImportCliError::Write {
            path: out.display().to_string(),
            source,
        };
        let mut w = BufWriter::new(File::create(out).map_err(werr)?);
        serde_json::to_writer(&mut w, &imported)?;
        w.flush().map_err(werr)?;
        text.push_str(&format!(
            "trace ({} events) written to {}\n",
            imported.trace.events.len(),
            out.display()
        ));
    }
    Ok(ImportOutcome {
        text,
        clean: imported.summary.violations.is_empty(),
    })
}

/// Lines of a synthetic capture, counted.
struct CaptureWriter {
    w: BufWriter<File>,
    lines: u64,
}

impl CaptureWriter {
    /// One MONITOR line at `t` µs from client `c` (`lua`: its script).
    fn line(&mut self, t: u64, c: u64, lua: bool, args: &str) -> std::io::Result<()> {
        self.lines += 1;
        let who = if lua {
            "lua".to_owned()
        } else {
            format!("10.0.0.{}:{}", c + 1, 40000 + c)
        };
        writeln!(self.w, "{}.{:06} [0 {who}] {args}", t / 1_000_000, t % 1_000_000)
    }
}

/// A realistic capture: 8 clients, each looping acquire (`SET … NX PX 30`);
/// the holder writes its orders and releases with a checked `EVALSHA`
/// (with the script's `[0 lua]` lines); the others retry. 10 µs apart.
fn write_capture(path: &Path, lines: u64) -> std::io::Result<()> {
    let release = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end";
    let sha = locklab_core::server::script::sha1_hex(release.as_bytes());
    let mut w = CaptureWriter {
        w: BufWriter::new(File::create(path)?),
        lines: 0,
    };
    let mut rng = Rng::new(40);
    let mut t = 1_700_000_000_000_000u64;
    // Who holds the lock, and until when (µs).
    let mut holder: Option<(u64, u64)> = None;
    w.line(
        t,
        0,
        false,
        &format!("\"SCRIPT\" \"LOAD\" \"{}\"", release.replace('"', "\\\"")),
    )?;
    while w.lines < lines {
        t += 10;
        let c = rng.below(8);
        match holder {
            Some((h, until)) if h == c && t < until => {
                if rng.below(4) == 0 {
                    w.line(
                        t,
                        c,
                        false,
                        &format!("\"EVALSHA\" \"{sha}\" \"1\" \"lock:orders\" \"tok-{c}\""),
                    )?;
                    w.line(t + 1, c, true, "\"get\" \"lock:orders\"")?;
                    w.line(t + 2, c, true, "\"del\" \"lock:orders\"")?;
                    holder = None;
                } else {
                    let order = rng.below(1000);
                    w.line(t, c, false, &format!("\"HSET\" \"order:{order}\" \"state\" \"paid\""))?;
                }
            }
            _ => {
                w.line(
                    t,
                    c,
                    false,
                    &format!("\"SET\" \"lock:orders\" \"tok-{c}\" \"NX\" \"PX\" \"30\""),
                )?;
                if holder.is_none_or(|(_, until)| t >= until) {
                    holder = Some((c, t + 30_000));
                }
            }
        }
    }
    w.w.flush()
}

/// Peak resident set of this process, from `/proc/self/status` (Linux).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

fn bench(lines: u64) -> Result<ImportOutcome, ImportCliError> {
    let path = std::env::temp_dir().join(format!("locklab-monitor-bench-{}.txt", std::process::id()));
    write_capture(&path, lines).map_err(|source| ImportCliError::Write {
        path: path.display().to_string(),
        source,
    })?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let started = Instant::now();
    let imported = import_file(&path, &[]);
    let secs = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    let imported = imported?;
    let s = &imported.summary;
    let rss = peak_rss_mb().map_or("unknown".to_owned(), |mb| format!("{mb:.0} MB"));
    let text = format!(
        "imported {} lines ({:.1} MB): {} commands of {} clients, {} script lines, {} holds, {} violations, {} trace events, in {secs:.2} s ({:.0} lines/s); peak RSS {rss}\n",
        s.lines,
        bytes as f64 / 1e6,
        s.commands,
        s.lanes.len(),
        s.script_lines,
        s.holds,
        s.violations.len(),
        imported.trace.events.len(),
        s.lines as f64 / secs.max(1e-9),
    );
    Ok(ImportOutcome { text, clean: true })
}
