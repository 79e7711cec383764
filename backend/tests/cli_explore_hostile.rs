//! `locklab explore FILE` on hostile files (issue 19): the built binary,
//! its exit status and its error line. A design file comes from anyone, so
//! a huge, deeply nested, malformed or runaway one must end in one clear
//! line and exit status 1 — never a panic, a stack overflow, a hang or
//! unbounded memory.
//!
//! Here rather than in `tests/` because only the backend package's own
//! integration tests get `CARGO_BIN_EXE_locklab`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("locklab-hostile-{}-{name}", std::process::id()));
    std::fs::write(&path, bytes).expect("write temp file");
    path
}

/// Run `locklab explore <args>`; exit status and stderr. A guard, not a
/// timing threshold: a run still going after five minutes is a hang.
/// (stderr goes to a file: a long message must not block the child on a
/// full pipe while nobody reads it.)
fn explore(args: &[&str]) -> (Option<i32>, String) {
    static RUNS: AtomicU32 = AtomicU32::new(0);
    let err_path = temp(&format!("stderr-{}", RUNS.fetch_add(1, Ordering::Relaxed)), b"");
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("explore")
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run the locklab binary");
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("locklab explore {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(err_path);
    (status.code(), err)
}

fn assert_error(args: &[&str], want: &str) {
    let (code, err) = explore(args);
    assert_eq!(code, Some(1), "{args:?}: {err}");
    assert!(!err.contains("panicked") && !err.contains("overflow"), "{err}");
    assert!(
        err.len() < 4000,
        "a readable message, not the file: {} bytes",
        err.len()
    );
    assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
}

#[test]
fn huge_files_are_refused_before_they_are_read() {
    let big = temp("huge.toml", &vec![b'#'; 3 << 20]);
    assert_error(
        &[big.to_str().unwrap()],
        &format!(
            "{} is 3145728 bytes; a design file holds at most 1048576",
            big.display()
        ),
    );
    let _ = std::fs::remove_file(big);
    // No length to trust: a device that never ends.
    assert_error(
        &["/dev/zero"],
        "/dev/zero is a character device, not a regular file: a design file must be",
    );
}

#[test]
fn deeply_nested_files_are_parse_errors_not_stack_overflows() {
    let depth = 200_000;
    let toml = format!("name = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
    let json = format!("{{\"name\": {}1{}}}", "[".repeat(depth), "]".repeat(depth));
    let toml_path = temp("deep.toml", toml.as_bytes());
    let json_path = temp("deep.json", json.as_bytes());
    assert_error(
        &[toml_path.to_str().unwrap()],
        "is neither an exploration spec nor a scenario",
    );
    assert_error(
        &[json_path.to_str().unwrap()],
        "as a spec: invalid type: sequence, expected a string",
    );
    let _ = std::fs::remove_file(toml_path);
    let _ = std::fs::remove_file(json_path);
}

#[test]
fn malformed_files_say_what_is_wrong() {
    let binary = temp("binary.toml", &[0xff, 0xfe, 0x00, 0x80]);
    assert_error(
        &[binary.to_str().unwrap()],
        "invalid utf-8 sequence of 1 bytes from index 0",
    );
    let typo = temp("typo.toml", b"relase = \"del\"\n");
    assert_error(&[typo.to_str().unwrap()], "unknown field `relase`");
    let unclosed = temp("unclosed.toml", b"[scripts]\nrelease = '''\nreturn 1\n");
    assert_error(
        &[unclosed.to_str().unwrap()],
        "is neither an exploration spec nor a scenario",
    );
    assert_error(&["/nonexistent/design.toml"], "cannot read /nonexistent/design.toml");
    for p in [binary, typo, unclosed] {
        let _ = std::fs::remove_file(p);
    }
}

/// A release that never returns, an acquire that allocates without bound:
/// reported with the reply the simulator gives the `EVAL` (redis-server
/// would answer BUSY until SCRIPT KILL), before any search.
#[test]
fn runaway_and_memory_hungry_scripts_are_reported_as_redis_would() {
    let runaway = temp("runaway.toml", b"[scripts]\nrelease = '''\nwhile true do end\n'''\n");
    assert_error(
        &[runaway.to_str().unwrap(), "--seed", "3"],
        "the release script was stopped on its first run: (error) ERR Error running script: the simulator stopped it \
         after 10000000 instructions (runaway script; Redis would reply BUSY and need SCRIPT KILL)",
    );
    let hungry = temp(
        "hungry.toml",
        b"[scripts]\nacquire = '''\nlocal big = string.rep('x', 1e9)\nreturn redis.call('SET', KEYS[1], big, 'NX')\n'''\n",
    );
    assert_error(
        &[hungry.to_str().unwrap()],
        "the acquire script was stopped on its first run: (error) ERR Error running script: the simulator stopped it \
         when its Lua memory passed 32 MiB",
    );
    let _ = std::fs::remove_file(runaway);
    let _ = std::fs::remove_file(hungry);
}
