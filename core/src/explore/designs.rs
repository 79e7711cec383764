//! The lab's lock designs as data: `explore/designs/*.toml`.
//!
//! A design file is an exploration [`Spec`] written in TOML — the built-in
//! variants (`acquire`, `release`, `fencing`, `topology`, `watchdog`, …)
//! or the user's own Lua in `[scripts]` — exactly what
//! `locklab explore design.toml` reads and what the browser's explore
//! screen edits. The files ship inside the crate (feature `toml`) so the
//! CLI, the tests and the explore worker offer the same list; adding one is
//! adding a file here and a line below.

use serde::{Deserialize, Serialize};

#[cfg(feature = "toml")]
use super::ExploreError;
use super::Spec;

/// The design files, by file name.
#[cfg(feature = "toml")]
pub static FILES: &[(&str, &str)] = &[
    (
        "01-bare-del.toml",
        include_str!("../../../explore/designs/01-bare-del.toml"),
    ),
    (
        "02-get-then-del.toml",
        include_str!("../../../explore/designs/02-get-then-del.toml"),
    ),
    (
        "03-setnx-then-expire.toml",
        include_str!("../../../explore/designs/03-setnx-then-expire.toml"),
    ),
    (
        "04-no-fencing.toml",
        include_str!("../../../explore/designs/04-no-fencing.toml"),
    ),
    (
        "05-replicated-failover.toml",
        include_str!("../../../explore/designs/05-replicated-failover.toml"),
    ),
    (
        "06-fenced-single.toml",
        include_str!("../../../explore/designs/06-fenced-single.toml"),
    ),
    (
        "07-redlock5-gc-pause.toml",
        include_str!("../../../explore/designs/07-redlock5-gc-pause.toml"),
    ),
    (
        "08-own-lua-forgot-token.toml",
        include_str!("../../../explore/designs/08-own-lua-forgot-token.toml"),
    ),
    (
        "09-own-lua-compare-and-delete.toml",
        include_str!("../../../explore/designs/09-own-lua-compare-and-delete.toml"),
    ),
];

/// One design as the page lists it: its file name, its source text (what
/// the editor shows) and the parsed spec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Design {
    pub file: String,
    pub text: String,
    pub spec: Spec,
}

/// Read a design file: a TOML [`Spec`], checked (scripts compiled) before
/// anything runs.
#[cfg(feature = "toml")]
pub fn parse(text: &str) -> Result<Spec, ExploreError> {
    let spec: Spec = toml::from_str(text).map_err(|e| ExploreError::Invalid(e.to_string()))?;
    spec.validate()?;
    Ok(spec)
}

/// Every built-in design, parsed.
#[cfg(feature = "toml")]
pub fn builtin() -> Result<Vec<Design>, ExploreError> {
    FILES
        .iter()
        .map(|(file, text)| {
            let spec = parse(text).map_err(|e| ExploreError::Invalid(format!("{file}: {e}")))?;
            Ok(Design {
                file: (*file).to_owned(),
                text: (*text).to_owned(),
                spec,
            })
        })
        .collect()
}
