//! `locklab cli`: a redis-cli work-alike over the simulator, a real server,
//! or a running lab backend's session (`--via`).
//!
//! It reads lines, splits them with redis-cli's own rules, sends them on one
//! connection (so MULTI and WATCH state carries from line to line) and prints
//! each reply exactly as `redis-cli --no-raw` would. On a terminal it shows
//! redis-cli's prompt, `(TX)` inside a transaction included; on a pipe it
//! prints only replies, so `locklab cli < file` and `redis-cli --no-raw <
//! file` can be compared byte for byte.
//!
//! The three [`ReplTarget`]s share everything but the last step: reading
//! bounded lines and `quit` happen here, the line limit, redis-cli's parse
//! errors and its repeat count in core's one console path
//! ([`locklab_core::console`], which the browser's consoles use too). The simulator and a real server
//! answer with a [`Reply`] that is rendered here; a lab backend renders its
//! replies itself, so [`BackendClient`] hands back text. Only `--via` has lab
//! commands (`:client B`, `:fault pause 0`): on the other targets a line
//! starting with `:` goes to Redis like any other, as in redis-cli.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Once};

use locklab_core::cli::render;
use locklab_core::console::{self, Limits, Typed, MAX_LINE};
use locklab_core::server::script::{set_thread_limits, ScriptControl, INSTRUCTION_LIMIT};
use locklab_core::server::{ConnId, Node, Profile};
use locklab_core::Reply;
use thiserror::Error;

use crate::cli::via::{BackendClient, ViaError};
use crate::real::conn::{RealConnection, RealError};

/// Where commands go.
pub enum ReplTarget {
    Sim {
        node: Box<Node>,
        conn: ConnId,
    },
    Real {
        conn: RealConnection,
        addr: String,
        in_multi: bool,
    },
    /// A `locklab serve` lab session over its WebSocket.
    Via(Box<BackendClient>),
}

/// Why the REPL stopped before the end of its input.
#[derive(Debug, Error)]
pub enum ReplError {
    /// Reading stdin or writing stdout failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The lab backend went away or stopped answering: there is no session
    /// left to send the next line to, so going on would only print errors.
    #[error(transparent)]
    Via(#[from] ViaError),
}

impl ReplTarget {
    pub fn sim(profile: Profile) -> ReplTarget {
        let mut node = Box::new(Node::new(profile));
        let conn = node.connect();
        ReplTarget::Sim { node, conn }
    }

    pub fn real(url: &str) -> Result<ReplTarget, RealError> {
        let conn = RealConnection::open(url)?;
        let addr = url.trim_start_matches("redis://").trim_end_matches('/').to_owned();
        Ok(ReplTarget::Real {
            conn,
            addr,
            in_multi: false,
        })
    }

    /// redis-cli's prompt: `host:port> `, with `(TX)` inside MULTI.
    pub fn prompt(&self) -> String {
        match self {
            ReplTarget::Sim { node, conn } => {
                let tx = if node.in_multi(*conn) { "(TX)" } else { "" };
                format!("sim:{}{tx}> ", node.profile())
            }
            ReplTarget::Real { addr, in_multi, .. } => {
                let tx = if *in_multi { "(TX)" } else { "" };
                format!("{addr}{tx}> ")
            }
            ReplTarget::Via(via) => via.prompt(),
        }
    }

    /// One command's output, as redis-cli prints it. `line` is the typed
    /// text when it is exactly `argv` (no repeat count) and UTF-8, for a
    /// lab backend, which takes lines rather than argvs.
    fn answer(&mut self, argv: &[Vec<u8>], line: Option<&str>) -> Result<String, ViaError> {
        match self {
            ReplTarget::Via(via) => via.command(argv, line),
            _ => Ok(render(argv, &self.execute(argv))),
        }
    }

    /// Send one argv to the simulator or a real server; transport failures
    /// come back as an error reply so the session goes on, as redis-cli's
    /// does. A lab backend answers text, not a [`Reply`], and goes through
    /// [`ReplTarget::answer`] instead; it never gets here.
    fn execute(&mut self, argv: &[Vec<u8>]) -> Reply {
        match self {
            ReplTarget::Via(_) => Reply::error("ERR locklab: a lab backend takes lines, not argvs"),
            ReplTarget::Sim { node, conn } => node.execute(*conn, argv),
            ReplTarget::Real { conn, in_multi, .. } => {
                let reply = conn.execute(argv).unwrap_or_else(|e| Reply::error(format!("ERR {e}")));
                let name = argv.first().map(|n| n.to_ascii_lowercase()).unwrap_or_default();
                match (name.as_slice(), &reply) {
                    (b"multi", Reply::Status(_)) => *in_multi = true,
                    (b"exec" | b"discard", _) => *in_multi = false,
                    _ => {}
                }
                reply
            }
        }
    }
}

/// Set by Ctrl-C while a line runs (see [`run`]).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// A line is running: Ctrl-C stops it rather than the program.
static RUNNING: AtomicBool = AtomicBool::new(false);
/// How Ctrl-C reaches a script the simulator is running on the REPL's
/// thread: core's count hook checks it (also during native work, which is
/// charged as instructions), as redis-server's checks SCRIPT KILL.
static SCRIPT_KILL: LazyLock<Arc<ScriptControl>> = LazyLock::new(|| Arc::new(ScriptControl::new()));

/// Ctrl-C as in redis-cli: it stops a repeated command (`1000000000 INCR
/// x`) and a running script (which ends with the killed script's error)
/// and, at the prompt, ends the program. Installed once, for an
/// interactive session; on a pipe the default signal action already stops
/// everything.
fn install_ctrl_c() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = std::thread::Builder::new().name("ctrl-c".into()).spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            rt.block_on(async {
                while tokio::signal::ctrl_c().await.is_ok() {
                    if !RUNNING.load(Ordering::SeqCst) {
                        std::process::exit(130);
                    }
                    INTERRUPTED.store(true, Ordering::SeqCst);
                    SCRIPT_KILL.kill();
                    if WHOLE.load(Ordering::SeqCst) {
                        // A whole command: its scripts die at their next
                        // count-hook tick and `run_killable` exits; work
                        // that runs no script (an explorer's search) is
                        // stopped here, after a grace period, instead.
                        tokio::time::sleep(KILL_GRACE).await;
                        exit_interrupted();
                    }
                }
            });
        });
    });
}

/// A whole command (`lesson run`, `explore`) is running under
/// [`run_killable`]: Ctrl-C ends the program once its script is killed.
static WHOLE: AtomicBool = AtomicBool::new(false);

/// How long a whole command may take to wind down after Ctrl-C killed its
/// script before the program ends anyway.
const KILL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The message and exit status of a command Ctrl-C stopped (128 + SIGINT,
/// as a shell reports a program the signal ended).
fn exit_interrupted() -> ! {
    eprintln!("locklab: interrupted by Ctrl-C; the running script was killed as SCRIPT KILL would");
    std::process::exit(130);
}

/// Run a whole command whose simulated scripts Ctrl-C must stop (`lesson
/// run`, `explore`): the scripts run on this thread under the REPL's kill
/// control, so Ctrl-C kills the running one at its next count-hook tick
/// (within [`INSTRUCTION_LIMIT`]'s check interval of work), and the
/// program then ends with a message on stderr and status 130 instead of
/// printing a transcript the kill made up.
pub fn run_killable<R>(f: impl FnOnce() -> R) -> R {
    install_ctrl_c();
    set_thread_limits(Some(script_kill()), INSTRUCTION_LIMIT);
    WHOLE.store(true, Ordering::SeqCst);
    RUNNING.store(true, Ordering::SeqCst);
    let out = f();
    RUNNING.store(false, Ordering::SeqCst);
    set_thread_limits(None, INSTRUCTION_LIMIT);
    if INTERRUPTED.load(Ordering::SeqCst) {
        exit_interrupted();
    }
    out
}

/// The control Ctrl-C kills, for the threads a whole command spawns
/// (`set_thread_limits` is per thread).
pub fn script_kill() -> Arc<ScriptControl> {
    Arc::clone(&SCRIPT_KILL)
}

/// Run one input line, writing each reply as it comes (a repeated command
/// streams, as redis-cli's does, in bounded memory) until the line is done
/// or `stop` is set. `Err` when the output fails or a lab backend is gone.
pub fn run_line(
    target: &mut ReplTarget,
    line: &[u8],
    output: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<(), ReplError> {
    // The lab commands of `--via` are not Redis: they skip the console.
    if let ReplTarget::Via(via) = target {
        if let Some(lab) = line.trim_ascii_start().strip_prefix(b":") {
            output.write_all(via.lab_command(lab)?.as_bytes())?;
            return Ok(());
        }
    }
    let (argv, repeat) = match console::read(line, Limits::REPL) {
        Typed::Empty => return Ok(()),
        Typed::Refused(why) => {
            writeln!(output, "{why}")?;
            return Ok(());
        }
        Typed::Run { argv, repeat } => (argv, repeat),
    };
    let text = (repeat == 1).then(|| std::str::from_utf8(line).ok()).flatten();
    for _ in 0..repeat {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        output.write_all(target.answer(&argv, text)?.as_bytes())?;
        output.flush()?;
    }
    Ok(())
}

/// Is this line one of redis-cli's own `quit` / `exit`?
fn is_quit(line: &[u8]) -> bool {
    let t = line.trim_ascii();
    t.eq_ignore_ascii_case(b"quit") || t.eq_ignore_ascii_case(b"exit")
}

/// The REPL: read `input` to the end (or `quit`), write replies to `output`.
/// Lines longer than [`MAX_LINE`] are skipped to their end and answered with
/// an error, without holding them in memory.
pub fn run(
    target: &mut ReplTarget,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
    interactive: bool,
) -> Result<(), ReplError> {
    if interactive {
        install_ctrl_c();
        // The simulator's scripts run on this thread, with the default
        // budget, and Ctrl-C can kill them.
        set_thread_limits(Some(Arc::clone(&SCRIPT_KILL)), INSTRUCTION_LIMIT);
    }
    loop {
        if interactive {
            write!(output, "{}", target.prompt())?;
            output.flush()?;
        }
        let (line, too_long) = match read_bounded_line(input)? {
            Some(l) => l,
            None => return Ok(()),
        };
        if too_long {
            writeln!(output, "(error) ERR line too long: the limit is {MAX_LINE} bytes")?;
            continue;
        }
        if is_quit(&line) {
            return Ok(());
        }
        INTERRUPTED.store(false, Ordering::SeqCst);
        SCRIPT_KILL.reset();
        RUNNING.store(true, Ordering::SeqCst);
        let ran = run_line(target, &line, output, &INTERRUPTED);
        RUNNING.store(false, Ordering::SeqCst);
        ran?;
        output.flush()?;
    }
}

/// One line without its terminator, or `None` at end of input. A line over
/// the limit is consumed and reported as too long.
fn read_bounded_line(input: &mut dyn BufRead) -> std::io::Result<Option<(Vec<u8>, bool)>> {
    let mut line = Vec::new();
    let mut too_long = false;
    let mut saw_any = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        saw_any = true;
        let (chunk, done) = match buf.iter().position(|&c| c == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > MAX_LINE {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !saw_any {
        return Ok(None);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some((line, too_long)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(input: &str) -> String {
        let mut t = ReplTarget::sim(Profile::V7_0);
        let mut out = Vec::new();
        run(&mut t, &mut input.as_bytes(), &mut out, false).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn keeps_transaction_state_across_lines() {
        let out = session("MULTI\nSET k v\nGET k\nEXEC\n");
        assert_eq!(out, "OK\nQUEUED\nQUEUED\n1) OK\n2) \"v\"\n");
    }

    #[test]
    fn bad_quotes_and_repeat_and_quit() {
        assert_eq!(session("SET k \"open\n"), "Invalid argument(s)\n");
        assert_eq!(
            session("3 INCR n\nquit\nGET n\n"),
            "(integer) 1\n(integer) 2\n(integer) 3\n"
        );
    }

    /// A sink that sets `stop` once it has seen `after` lines, and counts
    /// what it got.
    struct Tripwire<'a> {
        lines: usize,
        after: usize,
        stop: &'a AtomicBool,
    }

    impl Write for Tripwire<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.lines += buf.iter().filter(|&&c| c == b'\n').count();
            if self.lines >= self.after {
                self.stop.store(true, Ordering::SeqCst);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn repeated_commands_stream_and_stop() {
        // Issue 16: `1000000000 INCR x` printed nothing and grew to 770 MB;
        // redis-cli prints each reply as it comes, and Ctrl-C stops it.
        let mut t = ReplTarget::sim(Profile::V7_0);
        let stop = AtomicBool::new(false);
        let mut sink = Tripwire {
            lines: 0,
            after: 1000,
            stop: &stop,
        };
        run_line(&mut t, b"1000000000 INCR x", &mut sink, &stop).unwrap();
        assert_eq!(sink.lines, 1000);
        let mut out = Vec::new();
        run_line(&mut t, b"GET x", &mut out, &AtomicBool::new(false)).unwrap();
        assert_eq!(out, b"\"1000\"\n");
    }

    #[test]
    fn over_long_lines_are_refused_not_buffered() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\nPING\n");
        let mut t = ReplTarget::sim(Profile::V7_0);
        let mut out = Vec::new();
        run(&mut t, &mut input.as_slice(), &mut out, false).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("(error) ERR line too long"));
        assert!(out.ends_with("PONG\n"));
    }
}
