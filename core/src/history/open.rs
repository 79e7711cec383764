//! A file a user opens in the page: a history or a MONITOR capture, told
//! apart by its first line, checked, and made the trace the timeline draws
//! with its verdict card.
//!
//! The page's worker streams the file into [`open`] (the page itself only
//! shows the result), with the CLI's own caps: [`Limits`] for a history
//! (`locklab check`), [`ImportLimits`] for a capture (`locklab trace
//! import`). What `redis-cli MONITOR` prints starts with the time
//! (`1700000000.123456 [0 …`) or the `OK` that answered `MONITOR`; a
//! history's lines are JSON objects (`{`). Anything else is refused at its
//! first line, and a capture none of whose lines could be read is refused
//! with its first bad line's reason, so a garbage file gets an error that
//! names the line instead of an empty timeline.

use std::io::BufRead;

use serde::{Deserialize, Serialize};

use super::card::{capture_card, history_card, FileVerdict};
use super::linear::Search;
use super::monitor::{import, ImportLimits};
use super::{check, drawn, parse, HistoryError, Limits};
use crate::trace::Trace;

/// What a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpenedKind {
    /// A history: JSON lines of calls and faults.
    History,
    /// What `redis-cli MONITOR` printed.
    Capture,
}

/// An opened file: the timeline's trace and the verdict card.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub trace: Trace,
    pub card: FileVerdict,
}

/// Why a file could not be opened; every error names its line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OpenError {
    #[error("line {line}: neither a history (JSON lines, each a {{…}} object) nor a MONITOR capture (each line the time, then [db client] and the quoted command)")]
    Unknown { line: u64 },
    #[error("the file is empty")]
    Empty,
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error("line {line}: {why}")]
    Capture { line: u64, why: String },
}

/// Look at the first line that is not blank, without consuming it: what
/// kind of file this is, or the line that is neither.
pub fn detect<R: BufRead>(r: &mut R) -> Result<OpenedKind, OpenError> {
    let mut line = 1u64;
    loop {
        let buf = r.fill_buf().map_err(|e| OpenError::Capture {
            line,
            why: format!("could not read: {e}"),
        })?;
        let Some(&b) = buf.first() else {
            return Err(OpenError::Empty);
        };
        match b {
            b'\n' => line += 1,
            b' ' | b'\t' | b'\r' => {}
            b'{' => return Ok(OpenedKind::History),
            b'0'..=b'9' => return Ok(OpenedKind::Capture),
            b'O' if buf.starts_with(b"OK\n") || buf.starts_with(b"OK\r\n") || buf == b"OK" => {
                return Ok(OpenedKind::Capture)
            }
            _ => return Err(OpenError::Unknown { line }),
        }
        r.consume(1);
    }
}

/// Open a history or a capture streamed from `r`: check it (the history)
/// or replay it (the capture), and draw it.
pub fn open<R: BufRead>(mut r: R, search: &Search) -> Result<Opened, OpenError> {
    match detect(&mut r)? {
        OpenedKind::History => {
            let history = parse(r, &Limits::default())?;
            let report = check(&history, search);
            Ok(Opened {
                trace: drawn::trace(&history, &report),
                card: history_card(&report, history.faults.len()),
            })
        }
        OpenedKind::Capture => {
            let imported = import(r, &[], &ImportLimits::default()).map_err(|e| OpenError::Capture {
                line: e.line,
                why: format!("could not read: {}", e.msg),
            })?;
            let s = &imported.summary;
            if s.commands == 0 {
                if let Some(k) = s.skipped_lines.first() {
                    return Err(OpenError::Capture {
                        line: k.line,
                        why: format!("not a MONITOR line: {}", k.why),
                    });
                }
            }
            Ok(Opened {
                card: capture_card(&imported),
                trace: imported.trace,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::Invariant;
    use crate::observe::LockChange;
    use crate::trace::EventKind;

    fn open_str(s: &str) -> Result<Opened, OpenError> {
        open(s.as_bytes(), &Search::default())
    }

    /// A holds the lock, is paused past its lease, B takes it and writes,
    /// A wakes and writes with its older token: the stale write.
    const STALE: &str = r#"{"client":"a","op":"acquire","key":"lock","token":"ta","ttl_ms":100,"invoke_ms":0,"complete_ms":5,"ok":true}
{"fault":"pause","target":"a","from_ms":10,"to_ms":300}
{"client":"b","op":"acquire","key":"lock","token":"tb","ttl_ms":1000,"invoke_ms":150,"complete_ms":155,"ok":true}
{"client":"b","op":"write","key":"lock","fence":2,"value":"b","invoke_ms":160,"complete_ms":165,"ok":true}
{"client":"a","op":"write","key":"lock","fence":1,"value":"a","invoke_ms":300,"complete_ms":305,"ok":true}
"#;

    #[test]
    fn a_history_with_a_stale_write_gets_a_card_naming_it() {
        let o = open_str(STALE).expect("opens");
        let c = &o.card;
        assert_eq!(c.kind, "history");
        assert!(!c.clean);
        assert!(c.headline.en.contains("4 operations of 2 clients"), "{}", c.headline.en);
        let stale = c
            .found
            .iter()
            .find(|f| f.name == "stale-write")
            .expect("the stale write is listed");
        assert!(
            stale.witness.iter().any(|w| w.starts_with("line 5: ")),
            "{:?}",
            stale.witness
        );
        assert_eq!(stale.title.zh, "过期写入被接受");
        assert!(
            stale.detail.starts_with("the resource accepted a's write"),
            "{}",
            stale.detail
        );
        assert!(
            stale
                .detail_zh
                .starts_with("资源先接受了 b 的写入（令牌 2，第 2 任持有者）"),
            "{}",
            stale.detail_zh
        );
        let overlap = c.found.iter().find(|f| f.name == "overlap").expect("two holders");
        assert!(
            overlap.detail_zh.contains("a 和 b 都认为自己持有 lock"),
            "{}",
            overlap.detail_zh
        );
        assert!(
            c.checked
                .iter()
                .any(|l| l.en == "1 fault the nemesis injected, marked on the lanes"),
            "one fault, not \"1 faults\": {:?}",
            c.checked
        );
        assert!(
            c.checked.iter().any(|l| l.zh.contains("注入了 1 个故障")),
            "{:?}",
            c.checked
        );
    }

    #[test]
    fn a_history_with_a_stale_write_is_drawn_with_its_bars_and_fault() {
        let o = open_str(STALE).expect("opens");
        assert_eq!(o.trace.names.clients, ["a", "b"]);
        let kinds: Vec<String> = o
            .trace
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Lock { change, .. } => Some(format!("{} lock {change:?}", e.at_ms)),
                EventKind::Fault { .. } => Some(format!("{} fault", e.at_ms)),
                EventKind::Resumed => Some(format!("{} resumed", e.at_ms)),
                EventKind::Violation { violation } => Some(format!("{} {}", e.at_ms, violation.invariant.name())),
                _ => None,
            })
            .collect();
        assert_eq!(
            kinds,
            [
                format!(
                    "5 lock {:?}",
                    LockChange::Acquired {
                        owner: Some(0),
                        value: "ta".into(),
                        ttl_ms: Some(100)
                    }
                ),
                "10 fault".to_owned(),
                format!("100 lock {:?}", LockChange::Removed { by: None }),
                format!(
                    "155 lock {:?}",
                    LockChange::Acquired {
                        owner: Some(1),
                        value: "tb".into(),
                        ttl_ms: Some(1000)
                    }
                ),
                "300 resumed".to_owned(),
                "305 overlap".to_owned(),
                "305 stale-write".to_owned(),
                format!("1150 lock {:?}", LockChange::Removed { by: None }),
            ]
        );
        let steps: Vec<u64> = o.trace.events.iter().map(|e| e.step).collect();
        assert!(steps.windows(2).all(|w| w[1] == w[0] + 1));
        assert!(
            o.trace.events.windows(2).all(|w| w[0].at_ms <= w[1].at_ms),
            "in time order"
        );
    }

    #[test]
    fn a_capture_is_replayed_and_its_violations_witnessed() {
        let at = |ms: u64, who: &str, args: &str| {
            let t = 1_700_000_000_000u64 + ms;
            format!("{}.{:06} [0 {who}] {args}\n", t / 1000, (t % 1000) * 1000)
        };
        let a = "10.0.0.1:5001";
        let b = "10.0.0.2:5002";
        let capture = [
            "OK\n".to_owned(),
            at(0, a, r#""SET" "lock" "tok-a" "NX" "PX" "1000""#),
            at(1500, b, r#""SET" "lock" "tok-b" "NX" "PX" "1000""#),
            at(1800, a, r#""DEL" "lock""#),
        ]
        .concat();
        let o = open_str(&capture).expect("opens");
        let c = &o.card;
        assert_eq!(c.kind, "capture");
        let names: Vec<&str> = c.found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, [Invariant::Overlap.name(), Invariant::WrongRelease.name()]);
        assert_eq!(
            c.found[1].detail_zh,
            "10.0.0.1:5001 的命令删除了 10.0.0.2:5002 于 1500 ms 在 redis 上获得的锁 lock"
        );
        assert!(c.headline.en.contains("3 commands of 2 clients"), "{}", c.headline.en);
        let w = &c.found[1].witness;
        assert!(w.iter().any(|l| l.contains("10.0.0.1:5001: DEL lock")), "{w:?}");
        assert!(w.iter().any(|l| l.contains("SET lock tok-b NX PX 1000 ⇒ OK")), "{w:?}");
        assert_eq!(o.trace.names.clients, [a, b]);
    }

    #[test]
    fn garbage_gets_an_error_naming_its_line() {
        let e = |s: &[u8]| open(s, &Search::default()).expect_err("refused").to_string();
        assert_eq!(e(b"\n\n\x7fELF\x02\x01"), OpenError::Unknown { line: 3 }.to_string());
        assert!(e(b"").contains("empty"));
        let bad = e(b"1700000000.000000 [0 1.2.3.4:5] \"SET\" \"k\n\x00\x01\n");
        assert!(
            bad.starts_with("line 1: not a MONITOR line: unbalanced quotes"),
            "{bad}"
        );
        let cut = e(&STALE.as_bytes()[..STALE.len() - 20]);
        assert_eq!(cut, "line 5: truncated (the file ends inside a JSON object)");
        let huge = format!("{{\"client\":\"{}\"}}\n", "x".repeat(70_000));
        assert!(e(huge.as_bytes()).starts_with("line 1: longer than 65536 bytes"));
    }
}
