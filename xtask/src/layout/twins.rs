//! Issue 36's third measure: **duplicate logic pairs**. Two places that
//! share [`MIN_RUN`] or more consecutive lines of the same shape are one
//! piece of logic written twice; the second copy is where the next fix is
//! forgotten.
//!
//! * A line's *shape* is its code with every identifier read as `i`, every
//!   number as `0` and every string or char literal as `"` (so a twin whose
//!   names were changed still matches), whitespace dropped; keywords and
//!   punctuation stay.
//! * Lines that say nothing are skipped before lines are compared: blank,
//!   comment-only and brace-only lines (`}`, `});`, `{`), attributes, and
//!   `use` declarations (an import list is not logic).
//! * Test code is left out: the `tests` crate, a crate's `tests/` folder
//!   (never read: only `src/` is), test-only files and `#[cfg(test)]`
//!   modules. `vendor/` is not a workspace crate here and is not read.
//! * Thin runs do not count: a run needs [`MIN_DISTINCT`] different shapes
//!   (a table of twenty `A => "a",` arms is one shape twenty times) and
//!   [`MIN_LOGIC`] lines that do something (an enum's variants beside
//!   another enum's are alike but are not logic), and a six-line shape that
//!   stands in more than [`TOO_COMMON`] places is an idiom, not a twin.
//!
//! Pairs are counted by pair of files: two files that share three runs are
//! one pair (printed with its longest run and `+2 more runs`). The count is
//! held to [`TWIN_PAIRS_CEILING`] the way big files are: it only goes down.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use super::measures::ceiling_finding;
use super::{blank_marked, cfg_test_blocks};

/// Consecutive same-shape lines that make a twin.
pub(super) const MIN_RUN: usize = 6;
/// Different line shapes a run needs to be logic rather than a table.
const MIN_DISTINCT: usize = 4;
/// Lines that do something ([`is_logic`]) a run needs.
const MIN_LOGIC: usize = 4;
/// A run's first six shapes standing in more places than this are an idiom.
const TOO_COMMON: usize = 8;
/// How many duplicate pairs the tree may hold. Lower it when a fold lands;
/// the check fails until it is lowered, so it never goes back up.
pub(super) const TWIN_PAIRS_CEILING: usize = 13;

/// One counted line of a file: its number (1-based), its shape's hash and
/// whether it does something (see [`is_logic`]).
#[derive(Clone, Copy)]
struct Line {
    no: usize,
    shape: u64,
    logic: bool,
}

/// A file's counted lines.
pub(super) struct Shaped {
    place: String,
    lines: Vec<Line>,
}

/// The counted lines of `text` (the file's original text), named `place`.
pub(super) fn shaped(place: String, text: &str) -> Shaped {
    let code = blank_marked(text);
    let tests = cfg_test_blocks(&code);
    let mut lines = Vec::new();
    let mut in_use = false;
    let mut at = 0;
    for (i, line) in code.split_inclusive('\n').enumerate() {
        let start = at;
        at += line.len();
        if tests.iter().any(|&(a, b)| start >= a && start < b) {
            continue;
        }
        let t = line.trim();
        if in_use {
            in_use = !t.ends_with(';');
            continue;
        }
        if is_use(t) {
            in_use = !t.ends_with(';');
            continue;
        }
        if t.starts_with("#[") || t.starts_with("#![") || t.chars().all(|c| "{}()[];,".contains(c)) {
            continue;
        }
        let shape = shape(line);
        let mut h = DefaultHasher::new();
        shape.hash(&mut h);
        lines.push(Line {
            no: i + 1,
            shape: h.finish(),
            logic: is_logic(&shape),
        });
    }
    Shaped { place, lines }
}

/// Whether a (trimmed) line opens a `use` declaration.
fn is_use(t: &str) -> bool {
    let t = t.strip_prefix("pub").map_or(t, |r| {
        let r = r.trim_start();
        match r.strip_prefix('(') {
            Some(inner) => inner.split_once(')').map_or(r, |(_, after)| after.trim_start()),
            None => r,
        }
    });
    t.starts_with("use ")
}

/// The shape of one line of [`blank_marked`] code: identifiers read as
/// `i`, numbers as `0`, a literal as its `"` mark, keywords and punctuation
/// as they are, whitespace dropped.
fn shape(code: &str) -> String {
    let c: Vec<char> = code.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_alphabetic() || ch == '_' {
            let word: String = c[i..]
                .iter()
                .take_while(|x| x.is_alphanumeric() || **x == '_')
                .collect();
            i += word.chars().count();
            if KEYWORDS.contains(&word.as_str()) {
                out.push_str(&word);
                out.push(' ');
            } else {
                out.push('i');
            }
        } else if ch.is_ascii_digit() {
            let number = |k: usize| {
                c[k].is_alphanumeric() || c[k] == '_' || c[k] == '.' && c.get(k + 1).is_some_and(char::is_ascii_digit)
            };
            while i < c.len() && number(i) {
                i += 1;
            }
            out.push('0');
        } else {
            if !ch.is_whitespace() {
                out.push(ch);
            }
            i += 1;
        }
    }
    out
}

/// Whether a line's shape does something: binds, branches, loops, returns,
/// calls or computes. An enum's variants, a struct's fields and a match arm
/// that maps a variant to a literal are declarations: a run of them is a
/// table, however many of its lines match another table's.
fn is_logic(shape: &str) -> bool {
    const WORDS: &[&str] = &[
        "let ", "if ", "match ", "for ", "while ", "loop ", "return ", "fn ", "?",
    ];
    if WORDS.iter().any(|w| shape.contains(w)) {
        return true;
    }
    // `->` and `=>` are punctuation; `<` and `>` are read as generics (a
    // comparison stands in an `if`, `while` or `let`).
    let bare = shape.replace("=>", "").replace("->", "");
    let b = bare.as_bytes();
    let call = b.windows(2).any(|w| matches!(w, [b'i' | b')' | b'!', b'(']));
    call || bare.contains(['+', '-', '*', '/', '%', '='])
}

/// Words a shape keeps: they make the logic.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "false", "fn", "for", "if",
    "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static",
    "struct", "super", "trait", "true", "type", "unsafe", "where", "while", "Some", "None", "Ok", "Err",
];

/// Prints the pairs `files` hold; returns how many findings they make (one
/// when the count is off its ceiling).
pub(super) fn report(files: &[Shaped]) -> usize {
    let found = twins(files);
    println!(
        "\nduplicate logic pairs outside tests ({MIN_RUN}+ same-shape lines): {} (ceiling {TWIN_PAIRS_CEILING})",
        found.len()
    );
    for (k, t) in found.iter().enumerate() {
        let more = match t.more {
            0 => String::new(),
            1 => " (+1 more run)".to_owned(),
            n => format!(" (+{n} more runs)"),
        };
        println!("  D{} {} ~ {} ({} lines){more}", k + 1, t.a, t.b, t.lines);
    }
    let why = ceiling_finding(found.len(), TWIN_PAIRS_CEILING, "TWIN_PAIRS_CEILING", "fold a twin");
    why.inspect(|w| println!("  {w}")).map_or(0, |_| 1)
}

/// One pair of files that share runs: the longest, and how many more.
#[derive(Debug, PartialEq)]
pub(super) struct Twin {
    pub(super) a: String,
    pub(super) b: String,
    pub(super) lines: usize,
    pub(super) more: usize,
}

/// Every pair of places in `files` that shares a run of [`MIN_RUN`] or more
/// same-shape counted lines, longest first.
pub(super) fn twins(files: &[Shaped]) -> Vec<Twin> {
    let mut windows: HashMap<u64, Vec<(usize, usize)>> = HashMap::new();
    for (f, file) in files.iter().enumerate() {
        for p in 0..file.lines.len().saturating_sub(MIN_RUN - 1) {
            let mut h = DefaultHasher::new();
            for l in &file.lines[p..p + MIN_RUN] {
                l.shape.hash(&mut h);
            }
            windows.entry(h.finish()).or_default().push((f, p));
        }
    }
    // (file a, start a, file b, start b) → run length, each maximal run once.
    let mut runs: BTreeMap<(usize, usize, usize, usize), usize> = BTreeMap::new();
    for places in windows.values().filter(|v| v.len() > 1 && v.len() <= TOO_COMMON) {
        for (k, &a) in places.iter().enumerate() {
            for &b in &places[k + 1..] {
                if let Some((start_a, start_b, len)) = maximal_run(files, a, b) {
                    runs.insert((a.0, start_a, b.0, start_b), len);
                }
            }
        }
    }
    // (file a, file b) → their runs as (start a, start b, length).
    type Runs = Vec<(usize, usize, usize)>;
    let mut by_files: BTreeMap<(usize, usize), Runs> = BTreeMap::new();
    for (&(fa, sa, fb, sb), &len) in &runs {
        let run = &files[fa].lines[sa..sa + len];
        let distinct: BTreeSet<u64> = run.iter().map(|l| l.shape).collect();
        if distinct.len() >= MIN_DISTINCT && run.iter().filter(|l| l.logic).count() >= MIN_LOGIC {
            by_files.entry((fa, fb)).or_default().push((sa, sb, len));
        }
    }
    let mut out: Vec<Twin> = by_files
        .into_iter()
        .map(|((fa, fb), mut rs)| {
            rs.sort_by_key(|r| std::cmp::Reverse(r.2));
            let (sa, sb, len) = rs[0];
            let span = |f: usize, s: usize| {
                let l = &files[f].lines;
                format!("{}:{}-{}", files[f].place, l[s].no, l[s + len - 1].no)
            };
            Twin {
                a: span(fa, sa),
                b: span(fb, sb),
                lines: len,
                more: rs.len() - 1,
            }
        })
        .collect();
    out.sort_by(|x, y| y.lines.cmp(&x.lines).then_with(|| x.a.cmp(&y.a)));
    out
}

/// The maximal run through the matching windows at `a` and `b` (file,
/// position): its starts and length, or `None` when the windows do not
/// really match or overlap each other in one file.
fn maximal_run(files: &[Shaped], a: (usize, usize), b: (usize, usize)) -> Option<(usize, usize, usize)> {
    let (la, lb) = (&files[a.0].lines, &files[b.0].lines);
    let same = |i: usize, j: usize| la[i].shape == lb[j].shape;
    if !(0..MIN_RUN).all(|k| same(a.1 + k, b.1 + k)) {
        return None;
    }
    let (mut sa, mut sb) = (a.1, b.1);
    while sa > 0 && sb > 0 && same(sa - 1, sb - 1) {
        sa -= 1;
        sb -= 1;
    }
    let mut len = a.1 - sa + MIN_RUN;
    while sa + len < la.len() && sb + len < lb.len() && same(sa + len, sb + len) {
        len += 1;
    }
    if a.0 == b.0 {
        // A run that overlaps itself is a repeated block: keep what does not.
        let (lo, hi) = (sa.min(sb), sa.max(sb));
        len = len.min(hi - lo);
        if len < MIN_RUN {
            return None;
        }
        return Some((lo, hi, len));
    }
    Some((sa, sb, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOGIC: &str = "fn settle(x: &mut Node, now: u64) -> u64 {
    let held = x.locks.get(\"k\").copied();
    if held.is_none() {
        x.count += 1;
    }
    let mut total = 0;
    for v in x.values.iter() {
        total += v.weight * 2;
    }
    x.last = now;
    total
}
";

    fn pairs(files: &[(&str, &str)]) -> Vec<Twin> {
        let shaped: Vec<Shaped> = files.iter().map(|(p, t)| shaped(p.to_string(), t)).collect();
        twins(&shaped)
    }

    #[test]
    fn a_planted_twin_is_found_even_with_other_names() {
        let renamed = LOGIC
            .replace("settle", "drain")
            .replace("held", "owner")
            .replace("\"k\"", "\"other\"")
            .replace("2", "7")
            .replace("total", "sum");
        let found = pairs(&[("a.rs", LOGIC), ("b.rs", &format!("use x::y;\n\n{renamed}"))]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].a, "a.rs:1-11");
        assert_eq!(found[0].b, "b.rs:3-13");
        // Different logic (a `while` for the `for`, a `-=`) breaks the run.
        let other = LOGIC.replace("for v in", "while let Some(v) =").replace("+= 1", "-= 1");
        assert!(pairs(&[("a.rs", LOGIC), ("b.rs", &other)]).is_empty());
    }

    #[test]
    fn a_twin_in_a_test_module_is_not_found() {
        let in_tests = format!("fn f() {{}}\n#[cfg(test)]\nmod tests {{\n{LOGIC}}}\n");
        assert!(pairs(&[("a.rs", LOGIC), ("b.rs", &in_tests)]).is_empty());
    }

    #[test]
    fn comments_uses_and_tables_do_not_make_twins() {
        let commented: String = LOGIC.lines().map(|l| format!("{l} // why\n")).collect();
        assert_eq!(pairs(&[("a.rs", LOGIC), ("b.rs", &commented)]).len(), 1);
        let table = "match k {\n".to_owned() + &"    K::A => \"a\",\n".repeat(12) + "}\n";
        assert!(pairs(&[("a.rs", &table), ("b.rs", &table)]).is_empty());
        let uses = "use a::b;\nuse c::{\n    d,\n    e,\n    f,\n    g,\n};\nuse h::i;\n".repeat(2);
        assert!(pairs(&[("a.rs", &uses), ("b.rs", &uses)]).is_empty());
    }

    #[test]
    fn a_block_written_twice_in_one_file_is_one_pair() {
        let twice = format!("{LOGIC}\n{}", LOGIC.replace("settle", "settle_again"));
        let found = pairs(&[("a.rs", &twice)]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].a.as_str(), found[0].b.as_str()), ("a.rs:1-11", "a.rs:14-24"));
    }
}
