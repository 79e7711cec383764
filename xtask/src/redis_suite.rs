//! `cargo xtask redis-suite`: Redis 7.0.15's own test suite against
//! `locklab sim-server` and against redis-server, side by side.
//!
//! The suite (`tests/` of the redis source tree, run by its `runtest` Tcl
//! driver) is the most thorough description of redis-server's behaviour
//! there is; how many of its tests pass on the simulator, next to how many
//! pass on the real server in the same mode, measures how far the simulator
//! is from a drop-in stand-in. It is not part of `scripts/test`: it needs
//! the redis source tree and tclsh, and takes minutes.
//!
//! Both servers run in the suite's external mode, `runtest --host 127.0.0.1
//! --port P --singledb --durable --clients 1 --single FILE`, on the seven
//! files issue 20 names and the four issue 43 adds ([`FILES`]), one runtest
//! and one fresh server per file. redis-server starts with no persistence and with
//! `enable-debug-command yes` (many tests call `DEBUG`); sim-server with
//! `--redis-version 7.0`. `--durable` keeps a failing test from aborting
//! its file, so the counts are per test. The full logs go to `--logs DIR`
//! (default: a fresh temporary directory), with ANSI colours removed.
//!
//! Getting a tree: with a clone of github.com/redis/redis,
//! `git -C redis archive 7.0.15 | tar x -C /tmp/redis-7.0.15`.

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

/// The test files, as `--single` arguments.
const FILES: &[&str] = &[
    "unit/type/incr",
    "unit/expire",
    "unit/multi",
    "unit/scripting",
    "unit/functions",
    "unit/type/hash",
    "unit/keyspace",
    // Issue 43's ladder: the data types' own files and pub/sub.
    "unit/type/list",
    "unit/type/set",
    "unit/type/zset",
    "unit/pubsub",
];

const USAGE: &str = "usage: cargo xtask redis-suite --tree DIR [--logs DIR] [--only sim|real]\n\
    \n\
    runs Redis 7.0.15's test suite (eleven files) against `locklab sim-server` and redis-server\n\
    and prints each one's [ok] count and their ratio. DIR is a redis 7.0.15 source tree\n\
    (or set LOCKLAB_REDIS_TREE); redis-server and tclsh must be on PATH.\n";

/// One server's result.
struct Count {
    ok: usize,
    err: usize,
    /// `[ok]` per test file, in [`FILES`] order.
    per_file: Vec<usize>,
    secs: f64,
    log: PathBuf,
}

/// `[ok]` lines per test file: each file's run ends with runtest's
/// `[1/1 done]: unit/… (t seconds)` line.
fn per_file(text: &str) -> Vec<usize> {
    let mut counts = vec![0; FILES.len()];
    let mut ok = 0;
    for line in text.lines() {
        if line.starts_with("[ok]") {
            ok += 1;
        } else if let Some((_, rest)) = line.split_once(" done]: ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            if let Some(i) = FILES.iter().position(|f| *f == name) {
                counts[i] += ok;
            }
            ok = 0;
        }
    }
    counts
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut tree = std::env::var_os("LOCKLAB_REDIS_TREE").map(PathBuf::from);
    let mut logs: Option<PathBuf> = None;
    let (mut sim, mut real) = (true, true);
    let mut rest = args.iter();
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--tree" => tree = Some(PathBuf::from(rest.next().context("--tree needs a directory")?)),
            "--logs" => logs = Some(PathBuf::from(rest.next().context("--logs needs a directory")?)),
            "--only" => match rest.next().map(String::as_str) {
                Some("sim") => real = false,
                Some("real") => sim = false,
                _ => bail!("--only takes sim or real\n\n{USAGE}"),
            },
            "-h" | "--help" => {
                print!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown option {other}\n\n{USAGE}"),
        }
    }
    let tree = tree.context(format!("no redis source tree given\n\n{USAGE}"))?;
    ensure!(
        tree.join("runtest").is_file() && tree.join("tests/test_helper.tcl").is_file(),
        "{} is not a redis source tree (no runtest / tests/test_helper.tcl)",
        tree.display()
    );
    let logs = match logs {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("locklab-redis-suite-{}", std::process::id())),
    };
    fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;

    let real_count = if real {
        Some(suite_on_redis_server(&tree, &logs)?)
    } else {
        None
    };
    let sim_count = if sim {
        Some(suite_on_sim_server(root, &tree, &logs)?)
    } else {
        None
    };
    print_counts(real_count.as_ref(), sim_count.as_ref());
    Ok(())
}

/// The suite against redis-server itself (from PATH), without persistence
/// and with DEBUG enabled, as runtest's own servers run.
fn suite_on_redis_server(tree: &Path, logs: &Path) -> Result<Count> {
    let dir = logs.join("redis-server-data");
    fs::create_dir_all(&dir)?;
    let start = |port: u16| -> Result<Child> {
        Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--enable-debug-command", "yes", "--dir"])
            .arg(&dir)
            .stdout(Stdio::null())
            .spawn()
            .context("starting redis-server (is it on PATH?)")
    };
    suite(tree, &start, &logs.join("redis-server.log"))
}

/// The suite against `locklab sim-server` speaking as redis 7.0, built
/// first in release.
fn suite_on_sim_server(root: &Path, tree: &Path, logs: &Path) -> Result<Count> {
    let status = Command::new("cargo")
        .current_dir(root)
        .args(["build", "--release", "-q", "-p", "locklab-backend", "--bin", "locklab"])
        .status()
        .context("running cargo build")?;
    ensure!(status.success(), "building locklab failed");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let bin = target.join("release/locklab");
    let start = |port: u16| -> Result<Child> {
        Command::new(&bin)
            .args(["sim-server", "--port", &port.to_string(), "--redis-version", "7.0"])
            .stdout(Stdio::null())
            .spawn()
            .context("starting locklab sim-server")
    };
    suite(tree, &start, &logs.join("sim-server.log"))
}

/// Each server's totals, then (when both ran) the sim-server's passes as a
/// share of redis-server's, per file and overall.
fn print_counts(real_count: Option<&Count>, sim_count: Option<&Count>) {
    println!();
    for (name, c) in [("redis-server 7.0.15", real_count), ("locklab sim-server", sim_count)] {
        if let Some(c) = c {
            println!(
                "{name:<20} [ok] {:>4}  [err] {:>4}  ({:.0} s, log {})",
                c.ok,
                c.err,
                c.secs,
                c.log.display()
            );
        }
    }
    if let (Some(r), Some(s)) = (real_count, sim_count) {
        println!();
        for (i, file) in FILES.iter().enumerate() {
            let (r, s) = (r.per_file[i], s.per_file[i]);
            let pct = if r == 0 { 0.0 } else { 100.0 * s as f64 / r as f64 };
            println!("  {file:<20} {s:>4} / {r:>4} = {pct:5.1} %");
        }
        let pct = if r.ok == 0 {
            0.0
        } else {
            100.0 * s.ok as f64 / r.ok as f64
        };
        println!("sim-server / redis-server: {} / {} = {pct:.1} %", s.ok, r.ok);
    }
}

/// Run the suite, one file at a time, each against a fresh server that
/// `start` spawns on the port it is given and that is stopped after the
/// file. A fresh server per file keeps one file's leftovers (a test that
/// fails after `CONFIG SET maxmemory 1` never sets it back, and in external
/// mode runtest restores nothing) from failing the next file's tests. The
/// log is kept without colour codes.
fn suite(tree: &Path, start: &dyn Fn(u16) -> Result<Child>, log: &Path) -> Result<Count> {
    let started = Instant::now();
    let mut text = String::new();
    for file in FILES {
        let port = free_port()?;
        let mut child = start(port)?;
        let result = (|| {
            wait_for_port(port, &mut child)?;
            eprintln!("running {file} against port {port}…");
            let out = Command::new("./runtest")
                .current_dir(tree)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--singledb", "--durable", "--clients", "1", "--single", file])
                .stdin(Stdio::null())
                .output()
                .context("running runtest (is tclsh installed?)")?;
            Ok::<_, anyhow::Error>(
                strip_ansi(&String::from_utf8_lossy(&out.stdout)) + &String::from_utf8_lossy(&out.stderr),
            )
        })();
        let _ = child.kill();
        let _ = child.wait();
        let out = result?;
        // runtest numbers each run's files from 1; name the file instead.
        text.push_str(&out.replace("[1/1 done]: ", &format!("[{file} done]: ")));
    }
    fs::write(log, &text).with_context(|| format!("writing {}", log.display()))?;
    let count = |tag: &str| text.lines().filter(|l| l.starts_with(tag)).count();
    Ok(Count {
        ok: count("[ok]"),
        err: count("[err]"),
        per_file: per_file(&text),
        secs: started.elapsed().as_secs_f64(),
        log: log.into(),
    })
}

/// A port nobody listens on now (the OS picks it).
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Wait until the server accepts connections (at most ten seconds).
fn wait_for_port(port: u16, child: &mut Child) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("the server exited before listening on port {port}: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nothing listens on port {port} after 10 s")
}

/// Remove ANSI colour sequences (`ESC [ … m`), which runtest prints.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
