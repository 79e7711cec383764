//! Issue 40: a real redis-server's MONITOR capture, imported.
//!
//! A lesson plays on a real redis-server through the real runner (the
//! lab's session, time-compressed) while the real `redis-cli MONITOR`
//! writes what the server ran to a file (`locklab_tests::monitor`, which
//! the page's test `browser_open.rs` uses too). `locklab trace import`'s replay of
//! that file must draw the lock bars the lesson's own run drew on the same
//! server — the same changes, by the same clients, in the same order — and
//! flag the same violations. Then hostile captures: each bad line is
//! skipped with its number and reason, never a crash.

use std::io::Read;

use locklab_core::actor::Actor;
use locklab_core::history::monitor::{import, import_str, ImportLimits};
use locklab_core::observe::LockChange;
use locklab_core::trace::{Event, EventKind};
use locklab_tests::monitor::capture_lesson;
use locklab_tests::server::RedisServer;

/// The lock bars of a trace, as `(change, whose value, by whom)` with
/// clients named by `who`.
fn bars(events: &[Event], who: &dyn Fn(u32) -> String) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Lock { change, .. } => Some(match change {
                LockChange::Acquired { owner, .. } => format!("acquired by {}", owner.map_or("-".into(), who)),
                LockChange::Renewed { .. } => "renewed".to_owned(),
                LockChange::Removed { by } => format!("removed by {}", by.map_or("-".into(), who)),
            }),
            _ => None,
        })
        .collect()
}

/// The violations, as `invariant: clients`.
fn violations(events: &[Event], who: &dyn Fn(u32) -> String) -> Vec<String> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for e in events {
        if let EventKind::Violation { violation: v } = &e.kind {
            let clients: Vec<String> = v
                .actors
                .iter()
                .filter_map(|a| match a {
                    Actor::Client(c) => Some(who(*c)),
                    _ => None,
                })
                .collect();
            let line = format!("{}: {}", v.invariant.name(), clients.join(" "));
            // A streamed violation comes again as it grows: keep one.
            if !out.iter().any(|(from, l)| *from == v.from_ms && *l == line) {
                out.push((v.from_ms, line));
            }
        }
    }
    out.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn a_lessons_monitor_capture_imports_into_the_lessons_lock_bars_and_violations() {
    let server = RedisServer::start();
    let dir = std::env::temp_dir().join(format!("locklab-monitor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("capture.txt");
    // Lesson 05: A's lease runs out in a pause, B acquires, A's bare DEL
    // removes B's lock, C acquires: two pairs of holders and a wrong release.
    let (events, names) = capture_lesson(&server, "05", &path);

    let file = std::fs::File::open(&path).expect("capture");
    let imported = import(std::io::BufReader::new(file), &[], &ImportLimits::default()).expect("imports");
    let s = &imported.summary;
    assert_eq!(
        s.skipped, 0,
        "every line of a real capture reads: {:?}",
        s.skipped_lines
    );
    // The import knows clients by address: name each by the token it took.
    let lanes = &imported.trace.names;
    let letter = |c: u32| -> String {
        imported
            .trace
            .events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Lock {
                    change:
                        LockChange::Acquired {
                            owner: Some(o), value, ..
                        },
                    ..
                } if *o == c => value.rsplit('-').next().map(str::to_owned),
                _ => None,
            })
            .unwrap_or_else(|| lanes.client(c).to_owned())
    };
    let lesson_bars = bars(&events, &|c| names.client(c).to_owned());
    assert_eq!(
        lesson_bars,
        [
            "acquired by A",
            "removed by -",
            "acquired by B",
            "removed by A",
            "acquired by C",
            "removed by C",
        ],
        "the lesson's own run on the real server"
    );
    // The lab runs a lesson's scripts in its own sandbox and applies their
    // writes as WATCH … MULTI … EXEC on a connection of its own, so the
    // server (and MONITOR) saw C's checked release come from that
    // connection: the replay says so, and counts it as a non-owner's delete.
    let imported_bars = bars(&imported.trace.events, &letter);
    let last = lesson_bars.len() - 1;
    assert_eq!(
        imported_bars[..last],
        lesson_bars[..last],
        "the capture's replay draws the lesson's bars ({:?})",
        imported.trace.names
    );
    assert_eq!(imported_bars.len(), lesson_bars.len());
    let script_conn = imported_bars[last].strip_prefix("removed by ").expect("removed");
    assert!(script_conn.starts_with("127.0.0.1:"), "{script_conn}");
    let lesson_violations = violations(&events, &|c| names.client(c).to_owned());
    assert_eq!(
        lesson_violations,
        ["overlap: A B", "wrong-release: A B", "overlap: B C"],
        "the lesson's own run"
    );
    let imported_violations = violations(&imported.trace.events, &letter);
    assert_eq!(imported_violations[..3], lesson_violations[..], "the same violations");
    assert_eq!(imported_violations[3..], [format!("wrong-release: {script_conn} C")]);
    assert_eq!(s.holds, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hostile captures: a truncated line, unbalanced quotes, binary garbage,
/// a 100 MB line — each skipped with its number, in bounded memory.
#[test]
fn hostile_captures_are_skipped_line_by_line_in_bounded_memory() {
    let good = "1700000000.000000 [0 10.0.0.1:1] \"SET\" \"lock\" \"a\" \"NX\" \"PX\" \"100\"\n";
    let mut bytes = good.as_bytes().to_vec();
    bytes.extend_from_slice(b"1700000000.000100 [0 10.0.0.2:2] \"SET\" \"lock\n");
    bytes.extend_from_slice(&[0u8, 0xff, 0x13, 0x37, b'\n']);
    // A 100 MB line, streamed: never stored.
    struct Huge {
        left: u64,
    }
    impl Read for Huge {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (buf.len() as u64).min(self.left) as usize;
            buf[..n].fill(b'"');
            self.left -= n as u64;
            if self.left == 0 && n > 0 {
                buf[n - 1] = b'\n';
            }
            Ok(n)
        }
    }
    let tail = b"1700000000.000300 [0 10.0.0.2:2] \"SET\" \"lock\" \"b\" \"N".to_vec();
    let reader = bytes.as_slice().chain(Huge { left: 100 << 20 }).chain(tail.as_slice());
    let before = locklab_tests::peak_rss();
    let imported = import(std::io::BufReader::new(reader), &[], &ImportLimits::default()).expect("reads");
    let grew = locklab_tests::peak_rss().saturating_sub(before);
    assert!(grew < 50 << 20, "a 100 MB line is not held: peak grew by {grew} bytes");
    let skipped: Vec<(u64, &str)> = imported
        .summary
        .skipped_lines
        .iter()
        .map(|s| (s.line, s.why.as_str()))
        .collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert_eq!(skipped[0].0, 2);
    assert!(skipped[0].1.contains("unbalanced quotes"));
    assert_eq!(skipped[1].0, 3);
    assert_eq!(skipped[2].0, 4);
    assert!(skipped[2].1.contains("longer than"));
    assert_eq!(skipped[3].0, 5);
    assert!(skipped[3].1.contains("truncated"));
    assert_eq!(imported.summary.commands, 1);
    assert_eq!(imported.summary.holds, 1);
    // Not a capture at all.
    let i = import_str("{\"client\":\"a\",\"op\":\"acquire\"}\n", &[], &ImportLimits::default());
    assert_eq!((i.summary.commands, i.summary.skipped), (0, 1));
}
