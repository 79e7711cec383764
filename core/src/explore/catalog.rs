//! The explore screen's catalogue, as the page shows it: each built-in
//! design's file, name and text, and each drill's question parts with its
//! design as the text the editor holds.
//!
//! The engine's worker sends this, not the [`Design`]s and [`DrillFile`]s
//! themselves, so the page decodes a handful of strings instead of whole
//! [`Spec`]s (scenarios, topologies, fault plans): the page only shows a
//! design and sends its text back to be explored, and decoding specs was a
//! tenth of the page's wasm.

use serde::{Deserialize, Serialize};

#[cfg(feature = "toml")]
use super::{designs, drill, ExploreError};
use super::{designs::Design, drill::DrillFile, Spec};
use crate::invariants::Invariant;
use crate::lesson::Bilingual;

/// A built-in design as the screen lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignEntry {
    pub file: String,
    /// The design's own name, if it gives one.
    pub name: Option<String>,
    /// The name in Chinese (a design file's `name_zh`), for the page in 中文.
    #[serde(default)]
    pub name_zh: Option<String>,
    /// The TOML the editor shows.
    pub text: String,
}

/// A drill as the screen asks it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillEntry {
    pub file: String,
    /// The lesson whose pitfall this is.
    pub lesson: String,
    /// What the explorer finds broken.
    pub answer: Invariant,
    pub pitfall: Bilingual,
    /// The design, as the text the editor holds ([`design_text`]).
    pub design: String,
}

/// The designs and drills the screen offers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    pub designs: Vec<DesignEntry>,
    pub drills: Vec<DrillEntry>,
}

/// A spec as the editor holds it: JSON is a design too (the explorer reads
/// either), and a drill's design has no file text of its own.
pub fn design_text(spec: &Spec) -> String {
    serde_json::to_string_pretty(spec).unwrap_or_default()
}

impl From<&Design> for DesignEntry {
    fn from(d: &Design) -> DesignEntry {
        DesignEntry {
            file: d.file.clone(),
            name: d.spec.name.clone(),
            name_zh: d.spec.name_zh.clone(),
            text: d.text.clone(),
        }
    }
}

impl From<&DrillFile> for DrillEntry {
    fn from(f: &DrillFile) -> DrillEntry {
        DrillEntry {
            file: f.file.clone(),
            lesson: f.drill.lesson.clone(),
            answer: f.drill.answer,
            pitfall: f.drill.pitfall.clone(),
            design: design_text(&f.drill.design),
        }
    }
}

impl Catalog {
    /// The built-in designs and drills.
    #[cfg(feature = "toml")]
    pub fn builtin() -> Result<Catalog, ExploreError> {
        Ok(Catalog {
            designs: designs::builtin()?.iter().map(DesignEntry::from).collect(),
            drills: drill::builtin()?.iter().map(DrillEntry::from).collect(),
        })
    }
}
