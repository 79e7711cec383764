//! `locklab cli` on the simulator against hostile input (issue 16): the
//! built binary, a piped script, its exit status and output.
//!
//! Here rather than in `tests/` because only the backend package's own
//! integration tests get `CARGO_BIN_EXE_locklab`.

use std::io::Write;
use std::process::{Command, Stdio};

/// Run `locklab cli` on `input`; its exit status and stdout.
fn cli(input: &str) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("cli")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the locklab binary");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    (out.status, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn deep_patterns_and_native_loops_get_errors_not_an_abort() {
    // It aborted with rc 134 ("has overflowed its stack") at n = 100000.
    let (status, out) = cli(concat!(
        "EVAL \"return {string.find(string.rep('a', 100000), string.rep('a?', 100000))}\" 0\n",
        "EVAL \"local s = string.rep('x', 4000000) for i = 1, 8000 do s:find('y', 1, true) end\" 0\n",
        "PING\n",
    ));
    assert!(status.success(), "{status}: {out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("(error) ERR ") && lines[0].contains("pattern too complex"),
        "{out}"
    );
    assert!(lines[1].contains("the simulator stopped it after"), "{out}");
    assert_eq!(lines[2], "PONG");
}
