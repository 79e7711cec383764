//! The interview drill: a flawed design, and the user names the failure
//! before the explorer runs.
//!
//! Each drill (`explore/drills/*.toml`) is a design from one of the
//! lessons' pitfalls (the articles' 易错点 and 常见坑), the lesson it comes
//! from, the pitfall in both languages, and the invariant it breaks. The
//! answer is data, but not taken on trust: a test runs the explorer on
//! every drill and requires the verdict to be that answer, so a drill can
//! never mark a right guess wrong.

use serde::{Deserialize, Serialize};

#[cfg(feature = "toml")]
use super::ExploreError;
use super::Spec;
use crate::invariants::Invariant;
use crate::lesson::Bilingual;

/// The drill files, by file name.
#[cfg(feature = "toml")]
pub static FILES: &[(&str, &str)] = &[
    (
        "01-bare-del.toml",
        include_str!("../../../explore/drills/01-bare-del.toml"),
    ),
    (
        "02-get-then-del.toml",
        include_str!("../../../explore/drills/02-get-then-del.toml"),
    ),
    ("03-getdel.toml", include_str!("../../../explore/drills/03-getdel.toml")),
    (
        "04-setnx-expire.toml",
        include_str!("../../../explore/drills/04-setnx-expire.toml"),
    ),
    (
        "05-fixed-token.toml",
        include_str!("../../../explore/drills/05-fixed-token.toml"),
    ),
    (
        "06-no-fencing-pause.toml",
        include_str!("../../../explore/drills/06-no-fencing-pause.toml"),
    ),
    (
        "07-failover.toml",
        include_str!("../../../explore/drills/07-failover.toml"),
    ),
    (
        "08-restart-without-persistence.toml",
        include_str!("../../../explore/drills/08-restart-without-persistence.toml"),
    ),
    (
        "09-uncapped-watchdog.toml",
        include_str!("../../../explore/drills/09-uncapped-watchdog.toml"),
    ),
    (
        "10-redlock-pause.toml",
        include_str!("../../../explore/drills/10-redlock-pause.toml"),
    ),
    (
        "11-check-validity.toml",
        include_str!("../../../explore/drills/11-check-validity.toml"),
    ),
    (
        "12-own-lua-no-check.toml",
        include_str!("../../../explore/drills/12-own-lua-no-check.toml"),
    ),
];

/// One drill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drill {
    /// The lesson whose pitfall this is.
    pub lesson: String,
    /// What the explorer finds broken.
    pub answer: Invariant,
    pub pitfall: Bilingual,
    pub design: Spec,
}

/// A drill as the page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillFile {
    pub file: String,
    pub drill: Drill,
}

/// The choices the user picks from: the four invariants.
pub const CHOICES: [Invariant; 4] = [
    Invariant::WrongRelease,
    Invariant::Deadlock,
    Invariant::StaleWrite,
    Invariant::Overlap,
];

/// How one answer scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillScore {
    /// The user named what the explorer found.
    pub right: bool,
    /// Points: 2 for a right guess, 0 otherwise.
    pub points: u32,
}

/// Score a guess against what the explorer found (`None`: it held, which
/// a drill design never should — then nobody scores).
pub fn score(guess: Invariant, found: Option<Invariant>) -> DrillScore {
    let right = found == Some(guess);
    DrillScore {
        right,
        points: if right { 2 } else { 0 },
    }
}

/// Read a drill file.
#[cfg(feature = "toml")]
pub fn parse(text: &str) -> Result<Drill, ExploreError> {
    let d: Drill = toml::from_str(text).map_err(|e| ExploreError::Invalid(e.to_string()))?;
    d.design.validate()?;
    if d.lesson.len() != 2 || !d.lesson.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ExploreError::Invalid(format!(
            "lesson {:?} must be a lesson id",
            d.lesson
        )));
    }
    Ok(d)
}

/// Every built-in drill.
#[cfg(feature = "toml")]
pub fn builtin() -> Result<Vec<DrillFile>, ExploreError> {
    FILES
        .iter()
        .map(|(file, text)| {
            let drill = parse(text).map_err(|e| ExploreError::Invalid(format!("{file}: {e}")))?;
            Ok(DrillFile {
                file: (*file).to_owned(),
                drill,
            })
        })
        .collect()
}

/// Question `n` of a round over `len` drills, drawn from the seed (so a
/// shared link asks the same drill).
pub fn pick(seed: u64, n: u64, len: usize) -> usize {
    let mut rng = crate::rng::Rng::derive(seed, 0xd111 + n);
    rng.below(len.max(1) as u64) as usize
}
