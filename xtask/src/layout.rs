//! `cargo xtask layout`: two checks on how the code is laid out, re-runnable
//! by anyone (issue 14: "no import cycles between modules; no function over
//! ~80 lines without a reason in a comment").
//!
//! `--root DIR` checks another checkout of the workspace.
//!
//! * **Module cycles.** For each crate of the workspace, the graph whose
//!   nodes are the crate's top-level modules (`core/src/world/…` is
//!   `world`) and whose edges are the paths a module's code names in
//!   another: `use crate::trace::Event`, `crate::cli::parse(…)`, a `super::`
//!   that climbs out of the module. A strongly connected component of more
//!   than one module is a cycle, printed with the lines that make it.
//!   Test-only code (`#[cfg(test)] mod …`, inline or in its own file) is left
//!   out: a test may use anything.
//! * **Long functions.** Every `fn` whose text (signature to closing brace)
//!   spans more than `--max-lines` lines (80). One that is long for a reason
//!   says so in a `// long: <why>` comment just above its `fn` line (among
//!   its doc comments and attributes) or as the first line of its body;
//!   those are listed apart and do not count as findings.
//! * **Measures** (issue 36, see `measures` and `twins`): files over 800
//!   lines outside tests and duplicate logic pairs, each held to a ceiling
//!   that only goes down, and `pub` type names defined in two crates.
//!
//! This is a lexical scan, not a compiler: it skips comments, strings and
//! character literals when it matches braces and finds paths, which is all
//! rustfmt-formatted code needs. Exits 1 when it found a cycle or an
//! unexplained long function, so it can gate CI.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

mod measures;
mod twins;

/// The workspace's crates, by their source directory.
const CRATES: &[&str] = &[
    "redis",
    "core",
    "backend",
    "frontend",
    "tests",
    "xtask",
    "engine",
    "explore-worker",
    "fuzz",
];
/// The marker a long function's reason starts with.
const MARKER: &str = "// long:";

pub(crate) fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut max_lines = 80;
    let mut root = root.to_path_buf();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--max-lines" => {
                max_lines = rest
                    .next()
                    .context("--max-lines needs a number")?
                    .parse()
                    .context("--max-lines needs a number")?
            }
            "--root" => root = PathBuf::from(rest.next().context("--root needs a directory")?),
            other => bail!("unknown option {other}"),
        }
    }
    let mut findings = 0;
    let mut long = Vec::new();
    let mut big = Vec::new();
    let mut type_names = BTreeMap::new();
    let mut shaped = Vec::new();
    println!("module cycles (top-level modules of each crate):");
    for name in CRATES {
        let src = root.join(name).join("src");
        if !src.is_dir() {
            continue;
        }
        let files = crate_files(&src)?;
        let cycles = cycles(&files);
        if cycles.is_empty() {
            println!("  {name}: none");
        }
        for (modules, edges) in cycles {
            findings += 1;
            println!("  {name}: cycle {}", modules.join(" <-> "));
            for e in edges {
                println!("    {e}");
            }
        }
        for f in &files {
            long.extend(long_fns(&root, f, max_lines));
        }
        big.extend(measures::big_files(&root, name, &files));
        type_names.insert(name.to_string(), measures::pub_type_names(&files));
        if *name != "tests" {
            for f in files.iter().filter(|f| !f.test_only) {
                let text = fs::read_to_string(&f.path).with_context(|| format!("reading {}", f.path.display()))?;
                shaped.push(twins::shaped(short_from(&root, &f.path), &text));
            }
        }
    }
    long.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.place.cmp(&b.place)));
    let (kept, bare): (Vec<&LongFn>, Vec<&LongFn>) = long.iter().partition(|l| l.reason.is_some());
    println!(
        "\nfunctions over {max_lines} lines without a `{MARKER}` reason: {}",
        bare.len()
    );
    for l in &bare {
        println!("  {:>4} {} {}", l.lines, l.place, l.name);
    }
    println!("\nfunctions over {max_lines} lines kept for a reason: {}", kept.len());
    for l in &kept {
        println!(
            "  {:>4} {} {}: {}",
            l.lines,
            l.place,
            l.name,
            l.reason.as_deref().unwrap_or_default()
        );
    }
    findings += bare.len();
    findings += measures::report(big, &type_names);
    findings += twins::report(&shaped);
    if findings > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// One source file of a crate.
struct SourceFile {
    path: PathBuf,
    /// Its module path inside the crate (`["world", "queue"]`; empty for the
    /// crate root and for `src/bin/*.rs`, which are roots of their own).
    module: Vec<String>,
    /// The text with comments, strings and char literals blanked out
    /// (same length and line breaks as the original).
    code: String,
    /// Only compiled for tests.
    test_only: bool,
}

/// Every `.rs` file under `src`, with its module path and whether only
/// tests compile it.
fn crate_files(src: &Path) -> Result<Vec<SourceFile>> {
    let mut paths = Vec::new();
    walk(src, &mut paths)?;
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let rel = path.strip_prefix(src).expect("walked under src");
        let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        let last = module.pop().unwrap_or_default();
        let stem = last.trim_end_matches(".rs");
        let is_root = module.is_empty() && matches!(stem, "lib" | "main");
        if module.first().is_some_and(|m| m == "bin") {
            module.clear();
        } else if !is_root && stem != "mod" {
            module.push(stem.to_owned());
        }
        files.push(SourceFile {
            path,
            module,
            code: blank_out(&text),
            test_only: false,
        });
    }
    // A file its parent declares as `#[cfg(test)] mod x;` is test-only, and
    // so is everything under it.
    let mut test_mods: BTreeSet<Vec<String>> = BTreeSet::new();
    for f in &files {
        for name in cfg_test_mod_decls(&f.code) {
            let mut m = f.module.clone();
            m.push(name);
            test_mods.insert(m);
        }
    }
    for f in &mut files {
        f.test_only = test_mods.iter().any(|t| f.module.starts_with(t));
    }
    Ok(files)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `text` with every comment, string literal and char literal replaced by
/// spaces (newlines kept), so that braces and paths found in what is left
/// are code. Handles nested block comments, escapes, raw strings
/// (`r#"…"#`, `br"…"`) and tells `'a'` from a lifetime `'a`.
fn blank_out(text: &str) -> String {
    blank(text, false)
}

/// [`blank_out`], but each string or char literal keeps a `"` where it
/// opens, so a line's shape still shows that a literal stood there.
fn blank_marked(text: &str) -> String {
    blank(text, true)
}

fn blank(text: &str, mark: bool) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = b.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in out.iter_mut().take(to).skip(from) {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = b[i..].iter().position(|&x| x == '\n').map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let end = block_comment_end(&b, i);
            blank(&mut out, i, end);
            i = end;
        } else if let Some(end) = raw_string_end(&b, i) {
            blank(&mut out, i, end);
            if mark {
                out[i] = '"';
            }
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            if mark {
                out[i] = '"';
            }
            i = j + 1;
        } else if c == '\'' {
            // 'x' or '\n' / '\u{..}' is a char; 'a (no closing quote right
            // after one char) is a lifetime or a label.
            if next == Some('\\') {
                let end = b[i + 2..]
                    .iter()
                    .position(|&x| x == '\'')
                    .map_or(b.len(), |p| i + 2 + p + 1);
                blank(&mut out, i, end);
                if mark {
                    out[i] = '"';
                }
                i = end;
            } else if b.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                if mark {
                    out[i] = '"';
                }
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Just past the end of the (nested) block comment opening at `b[i]`.
fn block_comment_end(b: &[char], i: usize) -> usize {
    let (mut depth, mut j) = (1, i + 2);
    while j < b.len() && depth > 0 {
        if b[j] == '/' && b.get(j + 1) == Some(&'*') {
            depth += 1;
            j += 2;
        } else if b[j] == '*' && b.get(j + 1) == Some(&'/') {
            depth -= 1;
            j += 2;
        } else {
            j += 1;
        }
    }
    j
}

/// If a raw string (`r"…"`, `r#"…"#`, `br"…"`) opens at `b[i]`, just past
/// its end.
fn raw_string_end(b: &[char], i: usize) -> Option<usize> {
    let c = b[i];
    let byte = c == 'b' && b.get(i + 1) == Some(&'r');
    if !(c == 'r' || byte)
        || b.get(i.wrapping_sub(1))
            .is_some_and(|p| p.is_alphanumeric() || *p == '_')
    {
        return None;
    }
    let start = i + usize::from(byte) + 1;
    let hashes = raw_string_start(b, start)?;
    let mut j = start + hashes + 1;
    while j < b.len() {
        if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
            return Some(j + hashes + 1);
        }
        j += 1;
    }
    Some(b.len())
}

/// At `b[i]`, `#…#"` or `"` opening a raw string: the number of `#`s.
fn raw_string_start(b: &[char], i: usize) -> Option<usize> {
    let hashes = b[i.min(b.len())..].iter().take_while(|&&c| c == '#').count();
    (b.get(i + hashes) == Some(&'"')).then_some(hashes)
}

/// The names of `#[cfg(test)] mod x;` declarations (a test module in its
/// own file).
fn cfg_test_mod_decls(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_cfg_test = false;
    for line in code.lines() {
        let t = line.trim();
        if t.starts_with("#[cfg(test)]") {
            after_cfg_test = true;
            continue;
        }
        if after_cfg_test {
            let decl = t.strip_prefix("pub ").unwrap_or(t);
            if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                out.push(name.trim().to_owned());
            }
            if !t.starts_with("#[") && !t.is_empty() {
                after_cfg_test = false;
            }
        }
    }
    out
}

/// Byte ranges of `#[cfg(test)] mod x { … }` bodies in `code`.
fn cfg_test_blocks(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("#[cfg(test)]") {
        let at = from + p;
        from = at + 1;
        let rest = &code[at + "#[cfg(test)]".len()..];
        let item = rest.trim_start();
        let item = item.strip_prefix("pub ").unwrap_or(item);
        if !item.starts_with("mod ") {
            continue;
        }
        let Some(open) = rest.find(['{', ';']) else { continue };
        if rest.as_bytes()[open] == b';' {
            continue;
        }
        let start = at + "#[cfg(test)]".len() + open;
        let end = matching_brace(code, start).unwrap_or(code.len());
        out.push((at, end));
        from = end;
    }
    out
}

/// The index just past the `}` that closes the `{` at `open`.
fn matching_brace(code: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// The top-level module each path in this file's (non-test) code reaches
/// outside its own top-level module, with the line it is on.
fn references(f: &SourceFile) -> Vec<(String, usize)> {
    let own = f.module.first().cloned();
    let skip = cfg_test_blocks(&f.code);
    let mut out = Vec::new();
    let code = &f.code;
    let bytes = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !code.is_char_boundary(i) || skip.iter().any(|&(a, b)| i >= a && i < b) || (i > 0 && is_ident(bytes[i - 1]))
        {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        // The module path the reference starts from, and what follows it.
        let (base, after): (Vec<String>, &str) = if let Some(r) = rest.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if rest.starts_with("super::") {
            let mut base = f.module.clone();
            let mut r = rest;
            while let Some(x) = r.strip_prefix("super::") {
                base.pop();
                r = x;
            }
            (base, r)
        } else {
            i += 1;
            continue;
        };
        let line = code[..i].matches('\n').count() + 1;
        let mut targets = Vec::new();
        if let Some(group) = after.strip_prefix('{') {
            // `crate::{a::X, b::{Y, Z}}`: the first segment of each entry.
            let end = matching_brace(after, 0).unwrap_or(after.len());
            let mut depth = 0;
            let mut entry_start = true;
            for (k, c) in group[..end.saturating_sub(2)].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => entry_start = true,
                    c if entry_start && (c.is_alphanumeric() || c == '_') => {
                        let name: String = group[k..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        targets.push(name);
                        entry_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            targets.push(name);
        }
        for t in targets {
            let top = base.first().cloned().unwrap_or(t);
            if Some(&top) != own.as_ref() && top != "self" {
                out.push((top, line));
            }
        }
        i += 1;
    }
    out
}

/// The crate's module cycles: each strongly connected component of more
/// than one top-level module, with the references that make it.
fn cycles(files: &[SourceFile]) -> Vec<(Vec<String>, Vec<String>)> {
    let modules: BTreeSet<String> = files.iter().filter_map(|f| f.module.first().cloned()).collect();
    // edge → where it is named ("file:line")
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.test_only) {
        let Some(from) = f.module.first() else { continue };
        for (to, line) in references(f) {
            if modules.contains(&to) {
                let at = format!("{}:{line}", short(&f.path));
                edges.entry((from.clone(), to)).or_default().push(at);
            }
        }
    }
    let graph: BTreeMap<&str, Vec<&str>> = modules
        .iter()
        .map(|m| {
            let to = edges.keys().filter(|(a, _)| a == m).map(|(_, b)| b.as_str()).collect();
            (m.as_str(), to)
        })
        .collect();
    let mut out = Vec::new();
    for scc in strongly_connected(&graph) {
        if scc.len() < 2 {
            continue;
        }
        let set: BTreeSet<&str> = scc.iter().copied().collect();
        let mut why = Vec::new();
        for ((a, b), at) in &edges {
            if set.contains(a.as_str()) && set.contains(b.as_str()) {
                why.push(format!("{a} -> {b}: {}", at.join(", ")));
            }
        }
        out.push((scc.iter().map(|s| s.to_string()).collect(), why));
    }
    out
}

/// Tarjan's strongly connected components.
fn strongly_connected<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in g.get(v).map(Vec::as_slice).unwrap_or_default() {
            if !s.index.contains_key(w) {
                visit(w, g, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                scc.push(w);
                if w == v {
                    break;
                }
            }
            scc.sort();
            s.out.push(scc);
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(v, graph, &mut s);
        }
    }
    s.out
}

/// A function over the limit.
struct LongFn {
    place: String,
    name: String,
    lines: usize,
    reason: Option<String>,
}

/// The functions in `f` longer than `max` lines.
fn long_fns(root: &Path, f: &SourceFile, max: usize) -> Vec<LongFn> {
    let Ok(text) = fs::read_to_string(&f.path) else {
        return Vec::new();
    };
    let original: Vec<&str> = text.lines().collect();
    let code = &f.code;
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("fn ") {
        let at = from + p;
        from = at + 3;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let name: String = code[at + 3..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue; // `fn(` — a function pointer type
        }
        let Some(open) = code[at..].find(['{', ';']).map(|o| at + o) else {
            continue;
        };
        if bytes[open] == b';' {
            continue;
        }
        let Some(end) = matching_brace(code, open) else {
            continue;
        };
        let first = code[..at].matches('\n').count();
        let last = code[..end].matches('\n').count();
        let lines = last - first + 1;
        if lines <= max {
            continue;
        }
        out.push(LongFn {
            place: format!("{}:{}", short_from(root, &f.path), first + 1),
            name,
            lines,
            reason: reason(&original, first),
        });
    }
    out
}

/// The `// long: …` reason of the function whose `fn` is on line `fn_line`
/// (0-based): above it among its docs and attributes, or on the first line
/// of its body.
fn reason(lines: &[&str], fn_line: usize) -> Option<String> {
    let found = |l: &str| l.trim().strip_prefix(MARKER).map(|r| r.trim().to_owned());
    let mut i = fn_line;
    while i > 0 {
        i -= 1;
        let t = lines[i].trim();
        if let Some(r) = found(t) {
            return Some(r);
        }
        if !(t.starts_with("//") || t.starts_with("#[")) {
            break;
        }
    }
    // The body's first line: after the signature's `{`.
    let open = (fn_line..lines.len()).find(|&k| lines[k].trim_end().ends_with('{'))?;
    lines.get(open + 1).and_then(|l| found(l))
}

fn short(path: &Path) -> String {
    let s = path.to_string_lossy();
    match s.find("/src/") {
        Some(p) => s[s[..p].rfind('/').map_or(0, |q| q + 1)..].to_owned(),
        None => s.into_owned(),
    }
}

fn short_from(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .map_or_else(|_| short(path), |p| p.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blanking_keeps_code_and_drops_comments_strings_and_chars() {
        let src = "let a = \"{ crate::x }\"; // crate::y {\nlet b = '{'; /* crate::z { */ fn f<'a>() {}\nr#\"}\"#;";
        let out = blank_out(src);
        assert_eq!(out.len(), src.len());
        assert!(!out.contains("crate::"));
        assert_eq!(out.matches('{').count(), 1, "{out}");
        assert_eq!(out.matches('}').count(), 1, "{out}");
        assert!(out.contains("fn f<'a>() {}"));
    }

    fn file(module: &[&str], code: &str) -> SourceFile {
        SourceFile {
            path: PathBuf::from(format!("x/src/{}.rs", module.join("/"))),
            module: module.iter().map(|s| s.to_string()).collect(),
            code: blank_out(code),
            test_only: false,
        }
    }

    #[test]
    fn a_cycle_through_use_super_and_a_group_is_found_and_tests_are_not_edges() {
        let files = vec![
            file(
                &["a"],
                "use crate::{b::X, c};\n#[cfg(test)]\nmod tests { use crate::d::Y; }",
            ),
            file(&["b", "inner"], "fn f() { super::super::a::g() }"),
            file(&["c"], "use crate::a::Z;"),
            file(&["d"], "use crate::a::W;"),
        ];
        let found = cycles(&files);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, vec!["a", "b", "c"]);
        let acyclic = vec![
            file(&["a"], "use crate::b::X;"),
            file(&["b"], "use super::b::Y; use self::q;"),
        ];
        assert!(cycles(&acyclic).is_empty());
    }

    #[test]
    fn long_functions_are_measured_and_their_reason_read() {
        let lines: Vec<&str> = vec!["/// doc", "// long: one arm per command", "fn f() {", "}"];
        assert_eq!(reason(&lines, 2).as_deref(), Some("one arm per command"));
        let lines: Vec<&str> = vec!["fn f() {", "    // long: a view's html!", "}"];
        assert_eq!(reason(&lines, 0).as_deref(), Some("a view's html!"));
        let lines: Vec<&str> = vec!["// long: not mine", "", "fn f() {", "    x();", "}"];
        assert_eq!(reason(&lines, 2), None);
    }
}
