//! Who is in a run: the actors, and the names their indexes stand for.
//!
//! Every record of a run — a trace event, a violation, a fault's
//! description — says *who* by an [`Actor`], an index into the run's
//! [`Names`], not by a string, so the explorer can make hundreds of
//! thousands of traces a minute without cloning names. This module sits
//! below all of them (it depends on nothing in the crate), which is what
//! lets the trace hold violations and faults while those name actors.

use serde::{Deserialize, Serialize};

/// Whose lane an event is drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// A client, by index into [`Names::clients`].
    Client(u32),
    /// A Redis node, by index into [`Names::nodes`].
    Node(u32),
    /// The protected resource (the database, file or API the lock guards).
    Resource,
    /// The world itself: faults, holder bookkeeping, invariant checks.
    World,
}

/// The names the indexes in a trace refer to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Names {
    pub clients: Vec<String>,
    pub nodes: Vec<String>,
}

impl Names {
    pub fn client(&self, i: u32) -> &str {
        self.clients.get(i as usize).map_or("?", String::as_str)
    }

    pub fn node(&self, i: u32) -> &str {
        self.nodes.get(i as usize).map_or("?", String::as_str)
    }

    pub fn actor(&self, a: Actor) -> String {
        match a {
            Actor::Client(i) => self.client(i).to_owned(),
            Actor::Node(i) => self.node(i).to_owned(),
            Actor::Resource => "resource".to_owned(),
            Actor::World => "world".to_owned(),
        }
    }
}
