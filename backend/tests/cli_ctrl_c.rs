//! `locklab cli` on a terminal: Ctrl-C during a runaway script (issue 42).
//! A script's native work was free, so `EVAL "local s=string.rep('x',1e6)
//! for i=1,1e9 do local t=s..i end" 0` ran for about 37 minutes, and
//! Ctrl-C only set a flag checked between repeats: the CLI had to be
//! killed. Now the budget charges the copies and Ctrl-C kills the running
//! script through core's count hook, so the CLI is back at its prompt at
//! once.
//!
//! The CLI runs under `script` (util-linux), which gives it a terminal: its
//! stdin is a tty, so it is interactive, and the `^C` byte written to the
//! terminal is turned into SIGINT by the line discipline, as a keyboard's
//! is. Here rather than in `tests/` because only the backend package's own
//! integration tests get `CARGO_BIN_EXE_locklab`.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// How long the test waits for any expected output before calling it a
/// hang (a guard, not a timing threshold: each step takes milliseconds).
const PATIENCE: Duration = Duration::from_secs(30);

/// The CLI on a terminal, and what it prints.
struct Terminal {
    child: Child,
    output: Receiver<Vec<u8>>,
    seen: Vec<u8>,
}

impl Terminal {
    fn open() -> Terminal {
        let cli = format!("{} cli --redis-version 7.0", env!("CARGO_BIN_EXE_locklab"));
        let mut child = Command::new("script")
            .args(["-qfec", &cli, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run `script` (util-linux) around locklab cli");
        let mut stdout = child.stdout.take().expect("stdout");
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Terminal {
            child,
            output,
            seen: Vec::new(),
        }
    }

    fn type_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(bytes).expect("write to the terminal");
        stdin.flush().expect("flush");
    }

    /// Wait until `text` was printed after what earlier waits consumed;
    /// what came before it is returned, and consumed with it.
    fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(at) = self.seen.windows(text.len()).position(|w| w == text.as_bytes()) {
                let before = String::from_utf8_lossy(&self.seen[..at]).into_owned();
                self.seen.drain(..at + text.len());
                return before;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(chunk) => self.seen.extend_from_slice(&chunk),
                Err(_) => panic!(
                    "no {text:?} within {PATIENCE:?}; the terminal shows: {}",
                    String::from_utf8_lossy(&self.seen)
                ),
            }
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // Closing the terminal hangs the CLI up, whatever it is doing.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ctrl_c_stops_a_runaway_script_and_the_cli_answers_again() {
    let mut term = Terminal::open();
    term.wait_for("sim:7.0> ");
    // Repeated, so that the line would outlast the budget of one run.
    term.type_bytes(b"100000 EVAL \"local s=string.rep('x',1e6) for i=1,1e9 do local t=s..i end\" 0\n");
    term.wait_for("EVAL");
    std::thread::sleep(Duration::from_millis(500));
    term.type_bytes(b"\x03");
    let shown = term.wait_for("sim:7.0> ");
    assert!(
        shown.contains("Script killed by user") || shown.contains("the simulator stopped it"),
        "{shown}"
    );
    term.type_bytes(b"PING\n");
    term.wait_for("PONG");
    term.wait_for("sim:7.0> ");
    // Ctrl-C at the prompt ends the CLI, as redis-cli's does.
    term.type_bytes(b"\x03");
    let deadline = Instant::now() + PATIENCE;
    while term.child.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "the CLI did not exit on Ctrl-C at the prompt"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A lesson of 300 steps, each an endless script the default budget
/// (10⁷ units, a tenth of a second or more) has to stop: half a minute and
/// more of work.
fn endless_lesson(dir: &std::path::Path) {
    let step = "\n[[steps]]\nclient = \"A\"\ncmd = \"EVAL \\\"while true do end\\\" 0\"\n\
                expect = \"(error) ERR Error running script\"\nexplain = { zh = \"x\", en = \"x\" }\n";
    let lesson = format!(
        "id = \"99\"\ntheme = \"basics\"\ntitle = {{ zh = \"无尽\", en = \"Endless\" }}\n\
         narration.zh = \"x\"\nnarration.en = \"x\"\n\
         source = {{ seed = \"A\", file = \"x.txt\", section = \"1\" }}\n\
         topology = \"single\"\nworld = {{ locks = [\"k\"] }}\nactors = [\"A\"]\n{}\n\
         [outcome]\ninvariant = \"deadlock\"\nbroken = false\nexplain = {{ zh = \"x\", en = \"x\" }}\n",
        step.repeat(300)
    );
    std::fs::create_dir_all(dir).expect("lesson dir");
    std::fs::write(dir.join("99-endless.toml"), lesson).expect("write the lesson");
}

/// `locklab lesson run` on a lesson of endless scripts: SIGINT (Ctrl-C)
/// kills the running script through the same kill flag as SCRIPT KILL, and
/// the program ends with a message and status 130 — at once, where the
/// lesson would run for half a minute and more (before, SIGINT's default
/// action killed the process silently, with no status).
#[test]
fn ctrl_c_stops_lesson_run_with_a_message_and_status_130() {
    let dir = std::env::temp_dir().join(format!("locklab-ctrl-c-{}", std::process::id()));
    endless_lesson(&dir);
    let err_path = dir.join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("lesson")
        .arg("--dir")
        .arg(&dir)
        .args(["run", "99", "--lang", "en"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run locklab lesson run");
    // Into the lesson's scripts (loading it takes milliseconds).
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the lesson ended before Ctrl-C"
    );
    let sent = Instant::now();
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(kill.success());
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(
            sent.elapsed() < PATIENCE,
            "lesson run still going {PATIENCE:?} after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = sent.elapsed();
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read stdout");
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status.code(), Some(130), "{status:?}; stderr: {err}");
    assert!(err.contains("interrupted by Ctrl-C"), "{err}");
    assert!(out.is_empty(), "no transcript after a kill: {out}");
    // 100 ms is the goal; the bound is wide so that a loaded machine passes.
    assert!(took < Duration::from_secs(5), "exited {took:?} after Ctrl-C");
}
