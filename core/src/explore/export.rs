//! A counterexample exported: a Mermaid sequence diagram of its trace, a
//! redis-cli script that replays its commands with the waits between them,
//! and a lesson file (issue 44 item 4). Pure text from a [`Trace`] (or,
//! for the lesson, the report), so the CLI prints it and the page can offer
//! it as a download.

#[cfg(feature = "toml")]
use super::{
    lesson::{counterexample_lesson, ToLessonError},
    Report, Spec,
};
use serde::{Deserialize, Serialize};

use crate::actor::Actor;
use crate::lang::Lang;
use crate::trace::{EventKind, Trace};

/// Mermaid's sequence-diagram text: `:`, `;`, `#` and line ends end a
/// message, so they are replaced.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ':' | ';' | '#' => ' ',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// A participant's id: Mermaid ids may not contain spaces or punctuation.
fn id(name: &str) -> String {
    let s: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if s.is_empty() {
        "p".to_owned()
    } else {
        format!("p_{s}")
    }
}

/// The trace as a Mermaid `sequenceDiagram`: a participant per client, node
/// and the resource; a request and its reply as arrows; a fault, an expiry,
/// a grant, a belief and the violation as notes, each with its world time.
pub fn mermaid(trace: &Trace) -> String {
    let names = &trace.names;
    let mut out = String::from("sequenceDiagram\n");
    for c in &names.clients {
        out.push_str(&format!("    participant {} as {}\n", id(c), clean(c)));
    }
    for n in &names.nodes {
        out.push_str(&format!("    participant {} as {}\n", id(n), clean(n)));
    }
    out.push_str("    participant p__resource as resource\n");
    let who = |a: Actor| match a {
        Actor::Resource => "p__resource".to_owned(),
        Actor::World => id(names.nodes.first().map_or("world", String::as_str)),
        a => id(&names.actor(a)),
    };
    for e in &trace.events {
        let t = e.at_ms;
        let line = match &e.kind {
            EventKind::Sent { node, commands, .. } => format!(
                "{}->>{}: {} ms {}",
                who(e.actor),
                id(names.node(*node)),
                t,
                clean(&commands.iter().map(|c| c.join(" ")).collect::<Vec<_>>().join(" / "))
            ),
            EventKind::Received { node, .. } => format!(
                "{}-->>{}: {} ms {}",
                id(names.node(*node)),
                who(e.actor),
                t,
                clean(&e.describe(names))
            ),
            EventKind::WriteSent { .. } => {
                format!("{}->>p__resource: {} ms {}", who(e.actor), t, clean(&e.describe(names)))
            }
            EventKind::Write { client, .. } => format!(
                "p__resource-->>{}: {} ms {}",
                id(names.client(*client)),
                t,
                clean(&e.describe(names))
            ),
            EventKind::Fault { .. }
            | EventKind::Resumed
            | EventKind::Expired { .. }
            | EventKind::Granted { .. }
            | EventKind::Belief { .. }
            | EventKind::Restarted { .. }
            | EventKind::Overlap { .. }
            | EventKind::Violation { .. } => {
                format!("Note over {}: {} ms {}", who(e.actor), t, clean(&e.describe(names)))
            }
            _ => continue,
        };
        out.push_str("    ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A shell word for redis-cli: single-quoted unless plainly safe.
fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:/".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The trace's commands as a runnable shell script of `redis-cli` calls,
/// one per command in the order the nodes executed them, with `sleep`s for
/// the world time between them; faults are comments (a pause or a crash is
/// the client's, not a command). Each node is `$R<i>` (host and port
/// arguments, e.g. `R0="-p 6379"`), defaulting to one local server per
/// node on ports 6379 and up.
pub fn cli_script(trace: &Trace) -> String {
    let names = &trace.names;
    let mut out = String::from(
        "#!/bin/sh\n# The counterexample's commands, as the nodes executed them, with the waits.\nset -e\n",
    );
    for (i, n) in names.nodes.iter().enumerate() {
        out.push_str(&format!("R{i}=${{R{i}:-\"-p {}\"}}  # {n}\n", 6379 + i));
    }
    let mut last = 0u64;
    for e in &trace.events {
        let wait = |out: &mut String, last: &mut u64| {
            if e.at_ms > *last {
                out.push_str(&format!("sleep {:.3}\n", (e.at_ms - *last) as f64 / 1000.0));
                *last = e.at_ms;
            }
        };
        match &e.kind {
            EventKind::Executed { client, commands, .. } => {
                wait(&mut out, &mut last);
                let Actor::Node(n) = e.actor else { continue };
                for c in commands {
                    let words: Vec<String> = c.iter().map(|w| quote(w)).collect();
                    out.push_str(&format!(
                        "redis-cli $R{n} {}  # {} on {}\n",
                        words.join(" "),
                        names.client(*client),
                        names.node(n)
                    ));
                }
            }
            EventKind::Fault { .. } | EventKind::Violation { .. } | EventKind::Write { .. } => {
                wait(&mut out, &mut last);
                out.push_str(&format!("# {} ms: {}\n", e.at_ms, e.describe(names).replace('\n', " ")));
            }
            _ => {}
        }
    }
    out
}

/// The counterexample's "because" chain, in English (`zh` false) or
/// Chinese: the events that make the story, in order — each fault, a lock
/// expiring on a node, a client acquiring, a paused client resuming and
/// believing it holds, the resource accepting a write, the violation —
/// e.g. "pause A for 1250 ms (GC) → lock expired on redis → B acquired lock
/// (holder 2) → A resumed → A believed it held lock → …". At most
/// `MAX_LINKS` links (a long run's retries would drown the story).
pub fn because(trace: &Trace, zh: bool) -> String {
    const MAX_LINKS: usize = 24;
    let names = &trace.names;
    let mut links: Vec<String> = Vec::new();
    let mut resumed: Vec<u32> = Vec::new();
    for e in &trace.events {
        let who = names.actor(e.actor);
        let link = match (&e.kind, e.actor) {
            (EventKind::Fault { fault }, _) => Some(if zh {
                fault.describe_in(names, Lang::Zh)
            } else {
                fault.describe(names)
            }),
            (EventKind::Expired { key }, _) => Some(if zh {
                format!("{key} 在 {who} 上过期")
            } else {
                format!("{key} expired on {who}")
            }),
            (EventKind::Granted { key, seq }, _) => Some(if zh {
                format!("{who} 拿到了 {key}（第 {seq} 个持有者）")
            } else {
                format!("{who} acquired {key} (holder {seq})")
            }),
            (EventKind::Resumed, Actor::Client(c)) => {
                resumed.push(c);
                Some(if zh {
                    format!("{who} 恢复运行")
                } else {
                    format!("{who} resumed")
                })
            }
            (EventKind::Belief { key, holds: true }, Actor::Client(c)) if resumed.contains(&c) => Some(if zh {
                format!("{who} 以为自己持有 {key}")
            } else {
                format!("{who} believed it held {key}")
            }),
            (
                EventKind::Write {
                    client,
                    accepted: true,
                    value,
                    ..
                },
                _,
            ) => Some(if zh {
                format!("资源接受了 {} 的写入 {value:?}", names.client(*client))
            } else {
                format!("the resource accepted {}'s write {value:?}", names.client(*client))
            }),
            (EventKind::Violation { violation }, _) => Some(if zh {
                format!("违反 {}", violation.invariant.name())
            } else {
                format!(
                    "{} broken: {}",
                    violation.invariant.name(),
                    super::explain(violation.invariant)
                )
            }),
            _ => None,
        };
        if let Some(l) = link {
            if links.len() == MAX_LINKS {
                links.push("…".to_owned());
                break;
            }
            links.push(l);
        }
    }
    links.join(" → ")
}

/// The counterexample as a lesson file in the format of `lessons/*.toml`:
/// the lesson [`counterexample_lesson`] builds (and has already played
/// once, keeping it only if the same invariant broke again), written out
/// as TOML. Put in `lessons/` under a number of its own, it is a lesson
/// like any other; [`crate::lesson::Lesson::parse`] reads it back.
#[cfg(feature = "toml")]
pub fn lesson_toml(spec: &Spec, report: &Report) -> Result<String, ToLessonError> {
    let lesson = counterexample_lesson(spec, report)?;
    let text = toml::to_string(&lesson).map_err(|e| ToLessonError::Inexpressible(e.to_string()))?;
    Ok(format!(
        "# A counterexample from `locklab explore`: {}\n# {}\n{text}",
        report.summary.replace('\n', " "),
        report.result_line().replace('\n', " ")
    ))
}

/// Everything a counterexample exports, made once where the search ran (the
/// page's worker) so the page offers the same texts as `locklab explore
/// --explain --export mermaid|cli|lesson`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exports {
    /// [`because`] in English and in Chinese.
    pub because_en: String,
    pub because_zh: String,
    /// [`mermaid`].
    pub mermaid: String,
    /// [`cli_script`].
    pub cli: String,
    /// [`lesson_toml`], or why there is none.
    pub lesson: Option<String>,
    pub lesson_error: Option<String>,
}

/// The exports of `report`'s counterexample; `None` when the design held.
#[cfg(feature = "toml")]
pub fn exports(spec: &Spec, report: &Report) -> Option<Exports> {
    let super::Outcome::Violated { trace, .. } = &report.outcome else {
        return None;
    };
    let (lesson, lesson_error) = match lesson_toml(spec, report) {
        Ok(text) => (Some(text), None),
        Err(e) => (None, Some(e.to_string())),
    };
    Some(Exports {
        because_en: because(trace, false),
        because_zh: because(trace, true),
        mermaid: mermaid(trace),
        cli: cli_script(trace),
        lesson,
        lesson_error,
    })
}
