//! The shapes a laid-out timeline is drawn with: marks (commands, replies,
//! faults, expiries), arrows (a request and its reply), lock bars, shaded
//! spans (paused, down, cut off) and violation bands, and the folding of
//! marks closer together than a pixel.

use super::*;

/// How a reply reads at a glance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Ok,
    /// `(nil)`, `(integer) 0`: the command did nothing (a failed NX, a
    /// release that found another token).
    Nil,
    Error,
    Neutral,
}

impl Tone {
    pub(super) fn of(replies: &[Reply]) -> Tone {
        if replies.iter().any(Reply::is_error) {
            Tone::Error
        } else if replies
            .iter()
            .all(|r| matches!(r, Reply::Nil | Reply::NilArray | Reply::Integer(0)))
        {
            Tone::Nil
        } else {
            Tone::Ok
        }
    }

    pub fn class(self) -> &'static str {
        match self {
            Tone::Ok => "ok",
            Tone::Nil => "nil",
            Tone::Error => "error",
            Tone::Neutral => "neutral",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum MarkKind {
    /// A command, on the client's lane (when it was sent, or when it ran if
    /// it took no time).
    Command(Tone),
    /// A node ran a request that took time to arrive.
    Executed(Tone),
    /// The client got the reply.
    Reply(Tone),
    Expired {
        key: String,
    },
    Lost,
    TimedOut,
    Fault,
    Write {
        accepted: bool,
    },
    /// Notes, resumes, restarts, replication batches: a small dot.
    Info,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub lane: usize,
    pub x: f64,
    pub y: f64,
    pub kind: MarkKind,
    /// Short text under the mark, when there is room.
    pub label: Option<String>,
    /// The whole story, for the tooltip.
    pub title: String,
    /// The client the mark belongs to, for colour.
    pub client: Option<u32>,
    /// How many events it stands for: 1, more when [`merge_marks`] folded
    /// its neighbours into it (their labels count them: `SET lock ×5`).
    pub count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrowKind {
    Request,
    Reply,
    Lost,
    Replication,
    Write,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arrow {
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub kind: ArrowKind,
}

/// How a lock bar ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarEnd {
    Expired,
    /// Deleted, overwritten, lost in a restart or a resync.
    Gone,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    pub y: f64,
    /// Where the TTL would end, while the bar is open.
    pub deadline_x: Option<f64>,
    pub key: String,
    pub owner: Option<u32>,
    /// The owner's name (`A`), empty when unknown.
    pub owner_name: String,
    pub end: Option<BarEnd>,
    /// A client's belief rather than a key on a node.
    pub belief: bool,
    pub title: String,
}

/// A stretch of time a lane spent paused, crashed or cut off: shaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub lane: usize,
    pub x0: f64,
    pub x1: f64,
    /// `paused`, `crashed`, `down`, `cut`.
    pub kind: &'static str,
    pub open: bool,
    pub title: String,
}

/// A broken invariant, across all lanes.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub name: &'static str,
    pub title: String,
    /// The one line drawn in the band, in the page's language.
    pub explain: String,
    /// Its human title with who was involved: `two holders (B, C)`.
    pub heading: String,
}

/// Fold marks that land within a pixel of the previous kept mark on the
/// same lane (same kind of mark) into it: the tooltip counts them, and the
/// DOM stays bounded by the plot's width, not by the trace's length.
/// Arrows get the same treatment. Returns how many marks were folded.
pub fn merge_marks(marks: &mut Vec<Mark>, arrows: &mut Vec<Arrow>) -> usize {
    let before = marks.len();
    let mut kept: Vec<Mark> = Vec::with_capacity(marks.len());
    let mut last: HashMap<(usize, std::mem::Discriminant<MarkKind>), usize> = HashMap::new();
    for m in marks.drain(..) {
        let slot = (m.lane, std::mem::discriminant(&m.kind));
        match last.get(&slot) {
            Some(&i) if (m.x - kept[i].x).abs() < 1.0 => kept[i].count += m.count,
            _ => {
                last.insert(slot, kept.len());
                kept.push(m);
            }
        }
    }
    for m in kept.iter_mut().filter(|m| m.count > 1) {
        m.title.push_str(&format!(" (+{})", m.count - 1));
    }
    *marks = kept;
    let mut prev: HashMap<(u8, i64, i64), f64> = HashMap::new();
    arrows.retain(|a| {
        let key = (a.kind as u8, a.y1 as i64, a.y2 as i64);
        match prev.get(&key) {
            Some(&x) if (a.x1 - x).abs() < 1.0 => false,
            _ => {
                prev.insert(key, a.x1);
                true
            }
        }
    });
    before - marks.len()
}
