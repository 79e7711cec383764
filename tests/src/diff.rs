//! Differential runner: the same redis-cli lines on the simulator and on a
//! real redis-server, compared as redis-cli would print them.
//!
//! # File format (`tests/diff/*.redis`)
//!
//! One redis-cli line per line, in redis-cli's own syntax (double quotes
//! with `\n \t \xHH` escapes, single quotes). Blank lines and lines whose
//! first non-blank character is `#` are comments. A command line may end in
//! the annotation `#~N` (preceded by a blank): the reply must be an integer
//! on both sides and may differ by at most `N` — for `PTTL` after a real
//! `DEBUG SLEEP`, where wall time leaks into the reply. Nothing else is
//! normalised: error texts, SHA1s and array orders must match exactly.
//!
//! # What a run compares
//!
//! Each file runs top to bottom on one connection of a fresh simulated node
//! and on one connection of a real server, and every reply is rendered with
//! [`Reply::to_cli`]. All mismatches of a file are collected, so one failing
//! test shows everything that differs, each with `file:line`, the command and
//! both renderings.

use std::fmt;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use locklab_backend::real::conn::RealConnection;
use locklab_core::cli::parse_line;
use locklab_core::reply::Reply;
use locklab_core::server::{Node, Profile};

/// One command line of a script.
#[derive(Clone, Debug)]
pub struct ScriptLine {
    /// 1-based line number in the file.
    pub line_no: usize,
    /// The command as written, without its annotation.
    pub source: String,
    /// The argv redis-cli would send.
    pub argv: Vec<Vec<u8>>,
    /// `#~N`: integer replies may differ by up to `N`.
    pub tolerance: Option<i64>,
}

/// A parsed `.redis` file.
#[derive(Clone, Debug)]
pub struct Script {
    /// File name (`strings.redis`), used in reports.
    pub name: String,
    /// Its command lines, in order.
    pub lines: Vec<ScriptLine>,
}

impl Script {
    /// Does any line carry a `#~N` tolerance?
    pub fn has_tolerances(&self) -> bool {
        self.lines.iter().any(|l| l.tolerance.is_some())
    }

    /// The command lines alone, annotations stripped, one per line: what the
    /// redis-cli pipe test feeds to `redis-cli`.
    pub fn plain_text(&self) -> String {
        self.lines.iter().map(|l| format!("{}\n", l.source)).collect()
    }
}

/// Split a trailing `#~N` off a line: `Some((command, N))` when present.
fn split_annotation(line: &str) -> Option<(&str, i64)> {
    let at = line.rfind("#~")?;
    let (head, tail) = (&line[..at], &line[at + 2..]);
    let n: i64 = tail.trim_end().parse().ok()?;
    if !head.ends_with([' ', '\t']) || n < 0 {
        return None;
    }
    Some((head.trim_end(), n))
}

/// Parse a script's text. Every malformed line is reported, not just the
/// first.
pub fn parse_script(name: &str, text: &str) -> Result<Script, String> {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (source, tolerance) = match split_annotation(raw) {
            Some((cmd, n)) => (cmd.trim(), Some(n)),
            None => (raw.trim(), None),
        };
        match parse_line(source.as_bytes()) {
            Ok(argv) if !argv.is_empty() => lines.push(ScriptLine {
                line_no,
                source: source.to_owned(),
                argv,
                tolerance,
            }),
            Ok(_) => errors.push(format!("{name}:{line_no}: empty command")),
            Err(e) => errors.push(format!("{name}:{line_no}: {e}: {source}")),
        }
    }
    if errors.is_empty() {
        Ok(Script {
            name: name.to_owned(),
            lines,
        })
    } else {
        Err(errors.join("\n"))
    }
}

/// Read and parse one `.redis` file; panics with every parse error.
pub fn load(path: &Path) -> Script {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let name = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    parse_script(&name, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// `tests/diff/`.
pub fn diff_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("diff")
}

/// Every `.redis` file in [`diff_dir`], sorted by name.
pub fn script_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(diff_dir())
        .expect("read tests/diff")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "redis"))
        .collect();
    files.sort();
    files
}

/// One line whose renderings differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// File name.
    pub file: String,
    /// 1-based line number.
    pub line_no: usize,
    /// The command as written.
    pub command: String,
    /// What the simulator's reply prints as.
    pub sim: String,
    /// What the real server's reply prints as.
    pub real: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}:{}: {}", self.file, self.line_no, self.command)?;
        writeln!(f, "  sim:  {}", indent(&self.sim))?;
        write!(f, "  real: {}", indent(&self.real))
    }
}

fn indent(s: &str) -> String {
    s.replace('\n', "\n        ")
}

/// Format a list of mismatches as one report.
pub fn report(mismatches: &[Mismatch]) -> String {
    let mut out = format!("{} mismatch(es) between sim and real:\n", mismatches.len());
    for m in mismatches {
        out.push_str(&m.to_string());
        out.push_str("\n\n");
    }
    out
}

/// Run a script on a real connection. A transport failure is a test
/// failure (the server died, not a semantic difference).
pub fn run_real(script: &Script, conn: &mut RealConnection) -> Vec<Reply> {
    script
        .lines
        .iter()
        .map(|l| {
            conn.execute(&l.argv)
                .unwrap_or_else(|e| panic!("{}:{}: {}: real redis failed: {e}", script.name, l.line_no, l.source))
        })
        .collect()
}

/// What to record when the simulator panics on a line, so that one panic
/// shows up as a mismatch instead of hiding the rest of the file.
fn sim_panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".to_owned());
    format!("<sim panicked: {msg}>")
}

/// One step's rendering: a reply, or a note that the simulator panicked.
pub type Rendered = Result<Reply, String>;

/// Run a script on one connection of a fresh simulated node.
pub fn run_sim(script: &Script, profile: Profile) -> Vec<Rendered> {
    let mut node = Node::new(profile);
    let conn = node.connect();
    let mut out = Vec::with_capacity(script.lines.len());
    for l in &script.lines {
        let r = catch_unwind(AssertUnwindSafe(|| node.execute(conn, &l.argv)));
        out.push(r.map_err(sim_panic_text));
    }
    out
}

/// Compare the two sides line by line.
pub fn compare(script: &Script, sim: &[Rendered], real: &[Reply]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for ((line, s), r) in script.lines.iter().zip(sim).zip(real) {
        let sim_text = match s {
            Ok(reply) => reply.to_cli(),
            Err(panic) => panic.clone(),
        };
        let real_text = r.to_cli();
        let same = match (line.tolerance, s, r) {
            (Some(n), Ok(Reply::Integer(a)), Reply::Integer(b)) => a.abs_diff(*b) <= n as u64,
            _ => sim_text == real_text,
        };
        if !same {
            out.push(Mismatch {
                file: script.name.clone(),
                line_no: line.line_no,
                command: line.source.clone(),
                sim: sim_text,
                real: real_text,
            });
        }
    }
    out
}

/// Run `script` on the real server at `url` and on a fresh sim node with
/// `profile`; every mismatch.
pub fn diff_script(script: &Script, url: &str, profile: Profile) -> Vec<Mismatch> {
    let mut conn = RealConnection::open(url).unwrap_or_else(|e| panic!("{e}"));
    let real = run_real(script, &mut conn);
    let sim = run_sim(script, profile);
    compare(script, &sim, &real)
}

/// What `redis-cli --no-raw` prints for these replies, one per line.
pub fn cli_transcript(replies: &[Reply]) -> String {
    replies.iter().map(|r| format!("{}\n", r.to_cli())).collect()
}

/// Pipe `input` through the real `redis-cli --no-raw -p port` and return
/// its stdout.
pub fn run_redis_cli(port: u16, input: &str) -> String {
    let bin = crate::server::redis_cli_binary()
        .unwrap_or_else(|| panic!("redis-cli not found: install it with `sudo apt-get install -y redis-tools`"));
    let mut child = Command::new(bin)
        .args(["--no-raw", "-h", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redis-cli");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_owned();
    // Write from a thread so a large output cannot deadlock against us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("redis-cli output");
    let _ = writer.join();
    assert!(
        out.status.success(),
        "redis-cli failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Check redis-cli's stdout for `script` against our rendering of the real
/// replies. Each reply owns as many output lines as its rendering has; a
/// `#~N` line must print as `(integer) M` within `N` of ours. Returns a
/// description of every difference (empty when they agree).
pub fn compare_cli_output(script: &Script, replies: &[Reply], cli_stdout: &str) -> String {
    let mut cli_lines = cli_stdout.lines();
    let mut out = String::new();
    for (line, reply) in script.lines.iter().zip(replies) {
        let ours = reply.to_cli();
        let n = ours.lines().count().max(1);
        let theirs: Vec<&str> = cli_lines.by_ref().take(n).collect();
        let theirs = theirs.join("\n");
        let same = match (line.tolerance, reply) {
            (Some(tol), Reply::Integer(a)) => theirs
                .strip_prefix("(integer) ")
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|b| a.abs_diff(b) <= tol as u64),
            _ => ours == theirs,
        };
        if !same {
            out.push_str(&format!(
                "{}:{}: {}\n  ours:      {}\n  redis-cli: {}\n",
                script.name,
                line.line_no,
                line.source,
                indent(&ours),
                indent(&theirs)
            ));
        }
    }
    let rest: Vec<&str> = cli_lines.collect();
    if !rest.is_empty() {
        out.push_str(&format!("redis-cli printed {} extra line(s): {:?}\n", rest.len(), rest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_blanks_and_annotations() {
        let s = parse_script(
            "t.redis",
            "# c\n\nSET k v\n  # indented comment\nPTTL k  #~5\nECHO \"a #~3\"\nGET '#'\n",
        )
        .unwrap();
        let got: Vec<(usize, &str, Option<i64>)> = s
            .lines
            .iter()
            .map(|l| (l.line_no, l.source.as_str(), l.tolerance))
            .collect();
        assert_eq!(
            got,
            vec![
                (3, "SET k v", None),
                (5, "PTTL k", Some(5)),
                (6, "ECHO \"a #~3\"", None),
                (7, "GET '#'", None)
            ]
        );
        assert!(s.has_tolerances());
        assert_eq!(s.lines[1].argv, vec![b"PTTL".to_vec(), b"k".to_vec()]);
    }

    #[test]
    fn compare_applies_tolerances_only_to_integers() {
        let s = parse_script("t.redis", "PTTL k  #~5\nPTTL k  #~5\nGET k\nGET k\n").unwrap();
        let sim = vec![
            Ok(Reply::Integer(1000)),
            Ok(Reply::Integer(1000)),
            Ok(Reply::bulk("v")),
            Err("<sim panicked: x>".to_owned()),
        ];
        let real = vec![Reply::Integer(996), Reply::Integer(994), Reply::bulk("v"), Reply::Nil];
        let m = compare(&s, &sim, &real);
        assert_eq!(m.len(), 2, "{m:?}");
        assert_eq!(
            (m[0].line_no, m[0].sim.as_str(), m[0].real.as_str()),
            (2, "(integer) 1000", "(integer) 994")
        );
        assert_eq!((m[1].line_no, m[1].real.as_str()), (4, "(nil)"));
        let text = report(&m);
        assert!(
            text.starts_with("2 mismatch(es)") && text.contains("t.redis:2: PTTL k"),
            "{text}"
        );
    }

    #[test]
    fn cli_output_is_matched_reply_by_reply() {
        let s = parse_script("t.redis", "KEYS *\nPTTL k  #~5\nGET k\n").unwrap();
        let replies = vec![
            Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")]),
            Reply::Integer(100),
            Reply::Nil,
        ];
        assert_eq!(
            compare_cli_output(&s, &replies, "1) \"a\"\n2) \"b\"\n(integer) 97\n(nil)\n"),
            ""
        );
        let bad = compare_cli_output(&s, &replies, "1) \"a\"\n2) \"b\"\n(integer) 90\n\"x\"\nextra\n");
        assert!(
            bad.contains("t.redis:2:") && bad.contains("t.redis:3:") && bad.contains("extra"),
            "{bad}"
        );
    }

    #[test]
    fn bad_lines_are_all_reported() {
        let e = parse_script("t.redis", "GET \"a\nSET 'b\n").unwrap_err();
        assert!(e.contains("t.redis:1:") && e.contains("t.redis:2:"), "{e}");
    }
}
