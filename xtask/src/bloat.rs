//! `cargo xtask bloat`: what is in the browser app's `.wasm`, by part.
//!
//! A small size profiler (what `twiggy top` and `cargo bloat --crates` do)
//! over a module that still has its `name` section: every function body is
//! charged to a *part* named from its demangled symbol — the crate, and for
//! locklab's own crates the module too (`locklab_core::server::script`) — and the
//! data segments, the other sections and the unnamed functions each get a
//! line of their own. Each part is shown raw and gzipped on its own (its
//! bytes concatenated and compressed alone: a part compresses a little worse
//! alone than inside the whole module, so the gzip column adds up to a bit
//! more than the module's gzip size).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use wasmparser::{KnownCustom, Name, Parser, Payload};

/// One part of the module: its bytes, concatenated.
#[derive(Default)]
struct Part {
    bytes: Vec<u8>,
    functions: usize,
}

/// The breakdown of one module.
pub(crate) struct Breakdown {
    groups: Vec<(String, usize, usize, usize)>,
    parts: Vec<(String, usize, usize, usize)>,
    largest: Vec<(String, usize)>,
    total: usize,
    named: bool,
}

/// The part a demangled symbol belongs to: its first path segment (the
/// crate), with the module for locklab's own crates. `<T as Trait>::f` is
/// charged to `T`'s crate, and `core::ptr::drop_in_place<T>` to `T`'s: they
/// are there because of `T`.
fn part_of(symbol: &str) -> String {
    let mut s = symbol.trim_start_matches(['<', '&', '*', ' ']);
    for prefix in ["core::ptr::drop_in_place<", "mut ", "const ", "dyn "] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.trim_start_matches(['<', '&', '*', ' ']);
        }
    }
    let mut segments = s.split("::").map(|seg| {
        seg.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default()
    });
    let krate = segments.next().unwrap_or_default();
    if krate.is_empty() {
        return "(other symbols)".to_owned();
    }
    if krate.starts_with("locklab") {
        if let Some(module) = segments
            .next()
            .filter(|m| m.chars().next().is_some_and(char::is_lowercase))
        {
            // The server's Lua glue is a part of its own (see `group_of`).
            if module == "server" && segments.next() == Some("script") {
                return format!("{krate}::server::script");
            }
            return format!("{krate}::{module}");
        }
    }
    krate.to_owned()
}

/// core's modules that run the simulation (a node, the world, its clients,
/// faults and observers), as against the data types the page reads and
/// draws (lessons, traces, the protocol): the line along which a simulator
/// module of its own would split the page.
const SIMULATOR_MODULES: [&str; 10] = [
    "server",
    "world",
    "client",
    "service",
    "observe",
    "invariants",
    "fault",
    "link",
    "actor",
    "resource",
];

/// The group a part is summed into for the first table: what one decision
/// about the page would keep or drop together.
fn group_of(part: &str) -> &'static str {
    let krate = part.split("::").next().unwrap_or_default();
    match krate {
        _ if krate.starts_with("lua_") || krate == "omnilua" => "Lua VM (omnilua, lua_*)",
        "locklab_core" if part == "locklab_core::server::script" => "locklab_core::server::script (Lua glue)",
        "locklab_core" if SIMULATOR_MODULES.contains(&part.split("::").nth(1).unwrap_or_default()) => {
            "locklab_core: simulator (server, world, …)"
        }
        "locklab_core" => "locklab_core: page data (lesson, trace, …)",
        "locklab_frontend" => "locklab_frontend",
        "yew"
        | "implicit_clone"
        | "indexmap"
        | "gloo_events"
        | "gloo_timers"
        | "gloo_utils"
        | "web_sys"
        | "js_sys"
        | "wasm_bindgen"
        | "wasm_bindgen_futures" => "yew + web bindings",
        _ if krate.starts_with("__wbindgen") => "yew + web bindings",
        "serde" | "serde_core" | "serde_json" | "zmij" | "itoa" | "ryu" => "serde + serde_json",
        "num_bigint" | "num_traits" | "num_integer" => "num-bigint (INCRBYFLOAT)",
        _ if ["(data", "(custom", "(types"].iter().any(|p| part.starts_with(p)) => "sections and data",
        _ => "Rust std and the rest (alloc, core, hashbrown, …)",
    }
}

/// A symbol as a person reads it: mangled names demangled, and the
/// `::h0123456789abcdef` hash that rustc's name section keeps dropped.
fn readable(symbol: &str) -> String {
    let s = format!("{:#}", rustc_demangle::demangle(symbol));
    match s.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => path.to_owned(),
        _ => s,
    }
}

/// What [`breakdown`] reads from a module before attributing it.
#[derive(Default)]
struct Sections<'a> {
    /// Imported functions come first in the function index space.
    imported_functions: u32,
    /// Every function body, in index order after the imports.
    bodies: Vec<&'a [u8]>,
    /// Readable function names by index, from the name section.
    names: BTreeMap<u32, String>,
    /// What is not code: data segments, custom sections, the tables.
    parts: BTreeMap<String, Part>,
}

/// One pass over the module's sections.
fn read_sections(wasm: &[u8]) -> Result<Sections<'_>> {
    let mut found = Sections::default();
    let Sections {
        imported_functions,
        bodies,
        names,
        parts,
    } = &mut found;
    let mut other = |name: &str, bytes: &[u8]| {
        parts.entry(name.to_owned()).or_default().bytes.extend_from_slice(bytes);
    };
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.context("parsing the module")? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if matches!(import?.ty, wasmparser::TypeRef::Func(_)) {
                        *imported_functions += 1;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(&wasm[body.range()]),
            Payload::DataSection(reader) => {
                for data in reader {
                    other("(data segments)", data?.data);
                }
            }
            Payload::CustomSection(section) => match section.as_known() {
                KnownCustom::Name(reader) => {
                    for sub in reader {
                        if let Name::Function(map) = sub? {
                            for naming in map {
                                let naming = naming?;
                                names.insert(naming.index, readable(naming.name));
                            }
                        }
                    }
                }
                _ => other(&format!("(custom section {})", section.name()), section.data()),
            },
            Payload::TypeSection(r) => other("(types, imports, exports, tables)", &wasm[r.range()]),
            Payload::ExportSection(r) => other("(types, imports, exports, tables)", &wasm[r.range()]),
            Payload::ElementSection(r) => other("(types, imports, exports, tables)", &wasm[r.range()]),
            _ => {}
        }
    }
    Ok(found)
}

/// Profile `wasm`; `top` is how many of the largest functions to list.
pub(crate) fn breakdown(wasm: &[u8], top: usize) -> Result<Breakdown> {
    let Sections {
        imported_functions,
        bodies,
        names,
        mut parts,
    } = read_sections(wasm)?;
    let mut largest = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let index = imported_functions + i as u32;
        let name = names.get(&index);
        let part = name.map_or_else(|| "(unnamed functions)".to_owned(), |n| part_of(n));
        let entry = parts.entry(part).or_default();
        entry.bytes.extend_from_slice(body);
        entry.functions += 1;
        largest.push((
            name.cloned().unwrap_or_else(|| format!("function[{index}]")),
            body.len(),
        ));
    }
    largest.sort_by_key(|f| std::cmp::Reverse(f.1));
    largest.truncate(top);
    let mut groups: BTreeMap<&str, Part> = BTreeMap::new();
    for (name, part) in &parts {
        let group = groups.entry(group_of(name)).or_default();
        group.bytes.extend_from_slice(&part.bytes);
        group.functions += part.functions;
    }
    let groups = rows(groups.into_iter().map(|(g, p)| (g.to_owned(), p)).collect())?;
    let parts = rows(parts.into_iter().collect())?;
    Ok(Breakdown {
        groups,
        parts,
        largest,
        total: wasm.len(),
        named: !names.is_empty(),
    })
}

/// One row per part: name, functions, raw bytes, gzipped bytes; the
/// largest gzipped first.
fn rows(parts: Vec<(String, Part)>) -> Result<Vec<(String, usize, usize, usize)>> {
    let mut rows = Vec::new();
    for (name, part) in parts {
        rows.push((name, part.functions, part.bytes.len(), crate::gzip_len(&part.bytes)?));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.3));
    Ok(rows)
}

impl Breakdown {
    pub(crate) fn print(&self) {
        if !self.named {
            println!("  (the module has no name section: functions are not attributed)");
        }
        for (title, rows) in [("group", &self.groups), ("part", &self.parts)] {
            println!(
                "  {title:<50} {:>6} {:>11} {:>10} {:>6}",
                "fns", "raw bytes", "gzipped", "raw %"
            );
            for (name, functions, raw, gz) in rows {
                println!(
                    "  {name:<50} {functions:>6} {:>11} {:>10} {:>5.1}%",
                    crate::thousands(*raw),
                    crate::thousands(*gz),
                    100.0 * *raw as f64 / self.total as f64
                );
            }
        }
        println!("  largest functions:");
        for (name, len) in &self.largest {
            let short: String = name.chars().take(100).collect();
            println!("  {:>9}  {short}", crate::thousands(*len));
        }
    }
}

/// `wasm` without its custom section `name`. The `wasm-size` build keeps
/// its symbols, and with them rustc's `target_features` section, which names
/// reference types (the precompiled std was built with them): wasm-bindgen
/// would then expect an externref table the code does not have. The page's
/// build loses that section to `strip = true`; this one loses it here.
pub(crate) fn without_custom_section(wasm: &[u8], name: &str) -> Result<Vec<u8>> {
    let mut out = wasm.get(..8).context("not a wasm module")?.to_vec();
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload?;
        let Some((id, range)) = payload.as_section() else {
            continue;
        };
        if let Payload::CustomSection(section) = &payload {
            if section.name() == name {
                continue;
            }
        }
        out.push(id);
        let mut len = range.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            out.push(if len == 0 { byte } else { byte | 0x80 });
            if len == 0 {
                break;
            }
        }
        out.extend_from_slice(&wasm[range]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{group_of, part_of};

    #[test]
    fn symbols_lose_their_hash() {
        assert_eq!(
            super::readable("lua_vm::vm::execute::hc9f9707b8d7abf67"),
            "lua_vm::vm::execute"
        );
        assert_eq!(
            super::readable("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(super::readable("main"), "main");
    }

    #[test]
    fn parts_are_named_by_crate_and_by_module_for_our_own() {
        assert_eq!(
            part_of("locklab_core::server::script::vm::Vm::run"),
            "locklab_core::server::script"
        );
        assert_eq!(
            part_of("<locklab_core::reply::Reply as core::fmt::Debug>::fmt"),
            "locklab_core::reply"
        );
        assert_eq!(part_of("core::ptr::drop_in_place<yew::html::Html>"), "yew");
        assert_eq!(part_of("<&mut serde_json::de::Deserializer<R>>::parse"), "serde_json");
        assert_eq!(part_of("core::fmt::write"), "core");
        assert_eq!(part_of("locklab_core::Reply::new"), "locklab_core");
        assert_eq!(part_of("<[T]>::sort"), "(other symbols)");
        assert_eq!(group_of("lua_vm"), "Lua VM (omnilua, lua_*)");
        assert_eq!(
            group_of("locklab_core::server::script"),
            "locklab_core::server::script (Lua glue)"
        );
        assert_eq!(
            group_of("locklab_core::server"),
            "locklab_core: simulator (server, world, …)"
        );
        assert_eq!(
            group_of("locklab_core::trace"),
            "locklab_core: page data (lesson, trace, …)"
        );
        assert_eq!(group_of("(data segments)"), "sections and data");
    }
}
