//! Two of issue 36's measures of the tree, printed and held by
//! `cargo xtask layout` beside its cycle and long-function checks:
//!
//! * **Big files.** Source files over [`BIG_FILE_LINES`] lines outside
//!   tests (the `tests` crate and test-only modules are left out). A file
//!   that big has more than one seam in it; the count is held to
//!   [`BIG_FILES_CEILING`], a ratchet: above it is a finding, and below it
//!   is a finding too until the ceiling is lowered to the new count, so the
//!   number can only go down.
//! * **Shared type names.** A `pub` struct, enum, trait, type or union whose
//!   name is defined in two or more crates (a newcomer reading `Session`
//!   must ask "which one?"). The ones the tree has today are listed in
//!   [`KNOWN_SHARED_NAMES`]; a new one is a finding, and so is a listed
//!   name that is no longer shared, so the list only shrinks. The same
//!   type seen across the wasm boundary ([`ACROSS_THE_WASM_BOUNDARY`]) is
//!   one concept and counted apart.
//!
//! Both read the same blanked-out text as the other checks (comments and
//! strings are not code), so a type named in a doc comment is not a
//! definition.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{cfg_test_blocks, short_from, SourceFile};

/// A file longer than this many lines counts as big.
pub(super) const BIG_FILE_LINES: usize = 800;
/// How many big files the tree may hold. Lower it when a split lands; the
/// check fails until it is lowered, so it never goes back up.
pub(super) const BIG_FILES_CEILING: usize = 5;
/// `pub` type names still defined in more than one crate for different
/// things (issue 36 began with 30). Remove a name when its twins are
/// renamed (the check fails until it is removed, so the list only
/// shrinks); never add one: give the new type its own name instead.
pub(super) const KNOWN_SHARED_NAMES: &[&str] = &[];
/// Names shared on purpose: one type seen from both sides of the wasm
/// boundary — core's pure engine or search, the `#[wasm_bindgen]` wrapper
/// that hands it to JavaScript under the same name, and the page's
/// `extern` import of that JavaScript class. One concept, so one name.
pub(super) const ACROSS_THE_WASM_BOUNDARY: &[&str] = &["Job", "LabEngine", "LessonEngine"];
/// The crate whose code is all tests: neither measure counts it.
const TESTS_CRATE: &str = "tests";

/// A source file over [`BIG_FILE_LINES`] lines.
#[derive(Debug, PartialEq)]
pub(super) struct BigFile {
    pub(super) place: String,
    pub(super) lines: usize,
}

/// The non-test files of `krate` over [`BIG_FILE_LINES`] lines.
pub(super) fn big_files(root: &Path, krate: &str, files: &[SourceFile]) -> Vec<BigFile> {
    if krate == TESTS_CRATE {
        return Vec::new();
    }
    files
        .iter()
        .filter(|f| !f.test_only)
        .map(|f| BigFile {
            place: short_from(root, &f.path),
            lines: f.code.lines().count(),
        })
        .filter(|b| b.lines > BIG_FILE_LINES)
        .collect()
}

/// The `pub` type names `files` define outside test code.
pub(super) fn pub_type_names(files: &[SourceFile]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in files.iter().filter(|f| !f.test_only) {
        let tests = cfg_test_blocks(&f.code);
        let mut at = 0;
        for line in f.code.split_inclusive('\n') {
            let start = at;
            at += line.len();
            if tests.iter().any(|&(a, b)| start >= a && start < b) {
                continue;
            }
            if let Some(name) = pub_type_name(line) {
                out.insert(name);
            }
        }
    }
    out
}

/// The name a line defines, if it is `pub struct|enum|trait|type|union Name`.
fn pub_type_name(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("pub ")?;
    let rest = ["struct ", "enum ", "trait ", "type ", "union "]
        .iter()
        .find_map(|k| rest.strip_prefix(k))?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    name.starts_with(|c: char| c.is_ascii_uppercase()).then_some(name)
}

/// Each name defined by two or more crates, with those crates.
pub(super) fn shared_names(by_crate: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (krate, names) in by_crate.iter().filter(|(k, _)| k.as_str() != TESTS_CRATE) {
        for name in names {
            out.entry(name.clone()).or_default().push(krate.clone());
        }
    }
    out.retain(|_, crates| crates.len() > 1);
    out
}

/// Prints both measures; returns how many findings they make.
pub(super) fn report(mut big: Vec<BigFile>, by_crate: &BTreeMap<String, BTreeSet<String>>) -> usize {
    let mut findings = 0;
    big.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.place.cmp(&b.place)));
    println!(
        "\nfiles over {BIG_FILE_LINES} lines outside tests: {} (ceiling {BIG_FILES_CEILING})",
        big.len()
    );
    for b in &big {
        println!("  {:>5} {}", b.lines, b.place);
    }
    if let Some(why) = ceiling_finding(big.len(), BIG_FILES_CEILING, "BIG_FILES_CEILING", "split a file") {
        findings += 1;
        println!("  {why}");
    }
    let mut shared = shared_names(by_crate);
    let boundary: Vec<_> = ACROSS_THE_WASM_BOUNDARY
        .iter()
        .filter_map(|n| shared.remove_entry(*n))
        .collect();
    println!(
        "\npub type names defined in more than one crate for different things: {} (besides {} across the wasm boundary)",
        shared.len(),
        boundary.len()
    );
    for (name, crates) in &shared {
        let known = if KNOWN_SHARED_NAMES.contains(&name.as_str()) {
            ""
        } else {
            findings += 1;
            "  NEW: give it a name of its own"
        };
        println!("  {name}: {}{known}", crates.join(", "));
    }
    for gone in KNOWN_SHARED_NAMES.iter().filter(|n| !shared.contains_key(**n)) {
        findings += 1;
        println!("  {gone}: no longer shared: drop it from KNOWN_SHARED_NAMES in xtask/src/layout/");
    }
    findings
}

/// Why `count` breaks the ratchet at `ceiling` (the constant `name`), if it
/// does; `fix` says what brings the count down.
pub(super) fn ceiling_finding(count: usize, ceiling: usize, name: &str, fix: &str) -> Option<String> {
    match count.cmp(&ceiling) {
        std::cmp::Ordering::Greater => Some(format!("over the ceiling by {}: {fix}", count - ceiling)),
        std::cmp::Ordering::Less => Some(format!(
            "under the ceiling: lower {name} in xtask/src/layout/ to {count}"
        )),
        std::cmp::Ordering::Equal => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::blank_out;
    use super::*;

    fn file(path: &str, text: &str, test_only: bool) -> SourceFile {
        SourceFile {
            path: PathBuf::from(path),
            module: Vec::new(),
            code: blank_out(text),
            test_only,
        }
    }

    #[test]
    fn big_files_are_counted_outside_tests_only() {
        let big = "x\n".repeat(BIG_FILE_LINES + 1);
        let edge = "x\n".repeat(BIG_FILE_LINES);
        let files = vec![
            file("/r/core/src/a.rs", &big, false),
            file("/r/core/src/b.rs", &edge, false),
            file("/r/core/src/c.rs", &big, true),
        ];
        let found = big_files(Path::new("/r"), "core", &files);
        assert_eq!(
            found,
            vec![BigFile {
                place: "core/src/a.rs".into(),
                lines: BIG_FILE_LINES + 1
            }]
        );
        assert!(big_files(Path::new("/r"), TESTS_CRATE, &files).is_empty());
    }

    #[test]
    fn the_ceiling_only_goes_down() {
        assert_eq!(ceiling_finding(5, 5, "C", "fix"), None);
        assert!(ceiling_finding(6, 5, "C", "fix")
            .unwrap()
            .contains("over the ceiling by 1: fix"));
        assert!(ceiling_finding(4, 5, "C", "fix").unwrap().contains("lower C in"));
    }

    #[test]
    fn pub_types_are_read_from_code_not_comments_strings_or_tests() {
        let text = "pub struct Session {\n}\n/// pub struct Ghost\npub(crate) enum Hidden {}\nstruct Private;\n\
                    pub enum Topology { A }\n  pub trait Driver {}\npub type Alias = u8;\npub fn f() {}\n\
                    const S: &str = \"pub struct InString\";\n#[cfg(test)]\nmod tests {\n    pub struct InTest;\n}\n";
        let names = pub_type_names(&[file("/r/x/src/lib.rs", text, false)]);
        let want: BTreeSet<String> = ["Alias", "Driver", "Session", "Topology"].map(String::from).into();
        assert_eq!(names, want);
        assert!(pub_type_names(&[file("/r/x/src/t.rs", "pub struct T;", true)]).is_empty());
    }

    #[test]
    fn names_shared_by_two_crates_are_found_but_not_with_the_tests_crate() {
        let by_crate: BTreeMap<String, BTreeSet<String>> = [
            ("core", vec!["Session", "Lane"]),
            ("backend", vec!["Session", "Room"]),
            (TESTS_CRATE, vec!["Lane", "Room"]),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_iter().map(String::from).collect()))
        .collect();
        let shared = shared_names(&by_crate);
        assert_eq!(shared.keys().collect::<Vec<_>>(), vec!["Session"]);
        assert_eq!(shared["Session"], vec!["backend", "core"]);
    }
}
