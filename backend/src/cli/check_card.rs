//! The report card of `locklab check --library`: library × fault → verdict,
//! each with the sub-history that witnesses it, as text, Markdown and JSON.
//!
//! A verdict is read off core's [`Report`] of the run's history, most
//! serious first: a stale write the resource accepted; another violation
//! (two holders' writes, a wrong release, extension after expiry, not
//! linearizable); the search's limit ("unknown"); no granted round at all
//! (nothing was tested); else the lock held for every round. Renewal gaps
//! alone do not fail a lock (its holder may simply not renew), so they are
//! listed but leave the verdict "held".

use locklab_core::history::{Check, Finding, Linearity, Op, OpKind, Report};
use locklab_core::invariants::Invariant;
use serde::Serialize;

use super::check_run::{LockLibrary, Nemesis, Run};

/// What one library under one fault came to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    StaleWriteFound,
    /// Another violation: its check's name.
    Violation {
        check: String,
    },
    /// The linearizability search gave up.
    UnknownLimit,
    NoRounds,
    /// Every granted round (the row's `rounds`) kept the lock's promise.
    Held,
    /// This library cannot be run under this fault (e.g. failover of five
    /// independent masters): why.
    NotRun {
        why: String,
    },
}

impl Verdict {
    pub fn text(&self, rounds: usize) -> String {
        match self {
            Verdict::StaleWriteFound => "stale write found".to_owned(),
            Verdict::Violation { check } => format!("{check} found"),
            Verdict::UnknownLimit => "unknown (limit)".to_owned(),
            Verdict::NoRounds => "no round was granted".to_owned(),
            Verdict::Held if rounds == 1 => "held in 1 round".to_owned(),
            Verdict::Held => format!("held in {rounds} rounds"),
            Verdict::NotRun { .. } => "not run".to_owned(),
        }
    }
}

/// One row of the card.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub library: LockLibrary,
    pub nemesis: Nemesis,
    pub fenced: bool,
    /// `sim-server` or `redis-server`.
    pub server: &'static str,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub rounds: usize,
    pub faults: usize,
    pub writes_accepted: usize,
    pub writes_refused: usize,
    /// The merged history, for `locklab check FILE` and the page's timeline.
    pub history: String,
    pub notes: Vec<String>,
    /// Every finding, each with its witnessing sub-history.
    pub findings: Vec<Finding>,
}

impl Row {
    pub fn new(library: LockLibrary, nemesis: Nemesis, fenced: bool, run: &Run, report: &Report) -> Row {
        let rounds = run
            .history
            .ops
            .iter()
            .filter(|o| o.op == OpKind::Acquire && o.ok == Some(true))
            .count();
        Row {
            library,
            nemesis,
            fenced,
            server: run.backend,
            verdict: verdict(report, rounds),
            rounds,
            faults: run.history.faults.len(),
            writes_accepted: run.accepted,
            writes_refused: run.refused,
            history: run.path.display().to_string(),
            notes: run.notes.clone(),
            findings: report.findings.clone(),
        }
    }

    /// A combination that cannot run, and why.
    pub fn not_run(library: LockLibrary, nemesis: Nemesis, fenced: bool, why: String) -> Row {
        Row {
            library,
            nemesis,
            fenced,
            server: "none",
            verdict: Verdict::NotRun { why: why.clone() },
            rounds: 0,
            faults: 0,
            writes_accepted: 0,
            writes_refused: 0,
            history: String::new(),
            notes: vec![why],
            findings: Vec::new(),
        }
    }

    /// The first finding of each other check than the verdict's: what else
    /// the history shows (a failover's stale write is also two holders'
    /// writes and a lock key that is not one register).
    pub fn also(&self) -> Vec<&Finding> {
        let main = self.witness().map(|f| f.check);
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for f in &self.findings {
            if Some(f.check) != main && f.check != Check::RenewalGap && !seen.contains(&f.check) {
                seen.push(f.check);
                out.push(f);
            }
        }
        out
    }

    /// The finding the verdict is about, if any.
    pub fn witness(&self) -> Option<&Finding> {
        let want = match &self.verdict {
            Verdict::StaleWriteFound => Check::Invariant(Invariant::StaleWrite).name(),
            Verdict::Violation { check } => check.as_str(),
            _ => return None,
        };
        self.findings.iter().find(|f| f.check.name() == want)
    }
}

fn verdict(report: &Report, rounds: usize) -> Verdict {
    if report.found(Check::Invariant(Invariant::StaleWrite)) {
        return Verdict::StaleWriteFound;
    }
    if let Some(f) = report.findings.iter().find(|f| f.check != Check::RenewalGap) {
        return Verdict::Violation {
            check: f.check.name().to_owned(),
        };
    }
    if report.keys.iter().any(|k| k.linearity == Linearity::NotLinearizable) {
        return Verdict::Violation {
            check: Check::NotLinearizable.name().to_owned(),
        };
    }
    if report
        .keys
        .iter()
        .any(|k| matches!(k.linearity, Linearity::Unknown { .. }))
    {
        return Verdict::UnknownLimit;
    }
    if rounds == 0 {
        return Verdict::NoRounds;
    }
    Verdict::Held
}

/// The card: every run's row, and the same as a library × fault matrix
/// ([`Card::tabulate`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Card {
    pub rows: Vec<Row>,
    /// The faults, the matrix's columns, in the order they were asked for.
    pub faults: Vec<Nemesis>,
    /// One line per library (and fencing), a cell per fault.
    pub matrix: Vec<MatrixRow>,
}

/// A library (with or without the lab's fence) under every fault.
#[derive(Clone, Debug, Serialize)]
pub struct MatrixRow {
    pub library: LockLibrary,
    pub fenced: bool,
    pub cells: Vec<Cell>,
}

/// One library under one fault: the verdict and the sub-history that
/// witnesses it (empty when it held).
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub fault: Nemesis,
    pub verdict: String,
    /// The index of the run's row in `rows` (its history and findings).
    pub row: usize,
    /// The verdict's finding's calls, as `locklab check FILE` and the
    /// timeline read them: 2–4 calls for a lock invariant, a window of the
    /// register's calls for "not linearizable".
    pub witness: Vec<Op>,
}

/// `1 fault`, `2 faults`.
fn count(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

impl Row {
    /// What the row is called in the text and the Markdown card: library,
    /// fault, fencing, server and verdict.
    fn words(&self) -> (&str, &str, &'static str, &str, String) {
        let (library, nemesis) = (self.library.name(), self.nemesis.name());
        (
            library,
            nemesis,
            fence(self),
            self.server,
            self.verdict.text(self.rounds),
        )
    }
}

fn fence(row: &Row) -> &'static str {
    if row.fenced {
        "lab's fence"
    } else {
        "no fencing"
    }
}

fn witness_lines(ops: &[Op]) -> String {
    ops.iter()
        .map(|o| {
            let at = if o.line > 0 {
                format!("line {}: ", o.line)
            } else {
                String::new()
            };
            format!("{at}{}\n", o.to_line())
        })
        .collect()
}

impl Card {
    /// Fill the matrix from the rows: a line per (library, fencing), a
    /// column per fault, each in the order first met.
    pub fn tabulate(&mut self) {
        self.faults.clear();
        self.matrix.clear();
        for r in &self.rows {
            if !self.faults.contains(&r.nemesis) {
                self.faults.push(r.nemesis);
            }
        }
        for (i, r) in self.rows.iter().enumerate() {
            let cell = Cell {
                fault: r.nemesis,
                verdict: r.verdict.text(r.rounds),
                row: i,
                witness: r.witness().map(|f| f.witness.clone()).unwrap_or_default(),
            };
            match self
                .matrix
                .iter_mut()
                .find(|m| m.library == r.library && m.fenced == r.fenced)
            {
                Some(m) => m.cells.push(cell),
                None => self.matrix.push(MatrixRow {
                    library: r.library,
                    fenced: r.fenced,
                    cells: vec![cell],
                }),
            }
        }
    }

    /// The matrix as a Markdown table: library × fault → verdict (in bold
    /// when the lock did not hold).
    fn matrix_markdown(&self) -> String {
        let names: Vec<&str> = self.faults.iter().map(|f| f.name()).collect();
        let mut out = format!(
            "| library | {} |\n|---|{}\n",
            names.join(" | "),
            "---|".repeat(names.len())
        );
        for m in &self.matrix {
            let fence = if m.fenced { " (lab's fence)" } else { "" };
            let cells: Vec<String> = self
                .faults
                .iter()
                .map(|f| match m.cells.iter().find(|c| c.fault == *f) {
                    Some(c) if matches!(self.rows[c.row].verdict, Verdict::Held | Verdict::NotRun { .. }) => {
                        c.verdict.clone()
                    }
                    Some(c) => format!("**{}**", c.verdict),
                    None => "–".to_owned(),
                })
                .collect();
            out.push_str(&format!("| {}{fence} | {} |\n", m.library.name(), cells.join(" | ")));
        }
        out
    }

    /// Did every run hold (the exit status)? A combination that could not
    /// run is no failure of the lock.
    pub fn clean(&self) -> bool {
        self.rows
            .iter()
            .all(|r| matches!(r.verdict, Verdict::Held | Verdict::NotRun { .. }))
    }

    /// For a terminal: a line per row, then each verdict's witness.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for r in &self.rows {
            let (library, nemesis, fence, server, verdict) = r.words();
            let (rounds, faults) = (count(r.rounds, "round"), count(r.faults, "fault"));
            let (accepted, refused, history) = (r.writes_accepted, r.writes_refused, &r.history);
            out.push_str(&format!(
                "{library} × {nemesis} ({fence}, {server}): {verdict} — {rounds}, {faults}, writes {accepted} accepted / {refused} refused\n  history: {history}\n"
            ));
            for n in &r.notes {
                out.push_str(&format!("  note: {n}\n"));
            }
            let found = r.witness().map(|f| ("", f)).into_iter();
            for (also, f) in found.chain(r.also().into_iter().map(|f| ("also ", f))) {
                let (title, from, to, detail) = (f.check.title(), f.from_ms, f.to_ms, &f.detail);
                let name = if also.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", f.check.name())
                };
                out.push_str(&format!("  {also}{title}{name} [{from}–{to} ms]: {detail}\n"));
                for l in witness_lines(&f.witness).lines() {
                    out.push_str(&format!("    {l}\n"));
                }
            }
        }
        if self.rows.len() > 1 {
            out.push('\n');
            out.push_str(&self.matrix_markdown());
        }
        out
    }

    /// The card as Markdown: the table, then each verdict's witness.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "# Lock libraries under faults\n\n{}\n## Runs\n\n",
            self.matrix_markdown()
        );
        out.push_str(
            "| library | fault | fencing | server | verdict | rounds | faults | writes accepted / refused |\n|---|---|---|---|---|---|---|---|\n",
        );
        for r in &self.rows {
            let (library, nemesis, fence, server, verdict) = r.words();
            let (rounds, faults, accepted, refused) = (r.rounds, r.faults, r.writes_accepted, r.writes_refused);
            out.push_str(&format!(
                "| {library} | {nemesis} | {fence} | {server} | **{verdict}** | {rounds} | {faults} | {accepted} / {refused} |\n"
            ));
        }
        for r in &self.rows {
            let (library, nemesis, fence, _, verdict) = r.words();
            let history = &r.history;
            out.push_str(&format!(
                "\n## {library} × {nemesis} ({fence})\n\n{verdict}. History: `{history}`.\n"
            ));
            for n in &r.notes {
                out.push_str(&format!("\n- {n}\n"));
            }
            let found = r.witness().map(|f| ("", f)).into_iter();
            for (also, f) in found.chain(r.also().into_iter().map(|f| ("Also: ", f))) {
                let (title, from, to, detail) = (f.check.title(), f.from_ms, f.to_ms, &f.detail);
                let witness = witness_lines(&f.witness);
                out.push_str(&format!(
                    "\n{also}{title} ({from}–{to} ms): {detail}\n\n```text\n{witness}```\n"
                ));
            }
        }
        out
    }
}
