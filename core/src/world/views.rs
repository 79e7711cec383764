//! Read-only views of a world, for the timeline, the lab and tests.
//!
//! Nothing here changes the world: replay depends on every change going
//! through the queue.

use serde::{Deserialize, Serialize};

use super::{ClientId, World, WorldConfig};
use crate::actor::Names;
use crate::invariants::{InvariantConfig, Monitor, Violation};
use crate::resource::Resource;
use crate::server::{Node, Role};
use crate::trace::{Event, Trace};

/// A lock key as one node has it right now (for views and tests).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockView {
    pub node: u32,
    pub key: String,
    pub value: String,
    pub owner: Option<u32>,
    pub ttl_ms: Option<u64>,
    pub since_ms: u64,
}

/// A client's process state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientState {
    pub crashed: bool,
    pub paused: bool,
    pub done: bool,
    pub running: bool,
}

/// A node's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub down: bool,
    pub role: Role,
    pub master_of: Option<u32>,
    pub offset: u64,
    pub applied: u64,
    /// The node's own clock (Unix ms).
    pub clock_ms: u64,
}

impl World {
    /// World time (ms since the start).
    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn config(&self) -> &WorldConfig {
        &self.cfg
    }

    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The events stepped to so far.
    pub fn trace(&self) -> &[Event] {
        &self.events[..self.cursor]
    }

    /// The stepped-to events with their name tables, for a view.
    pub fn to_trace(&self) -> Trace {
        Trace {
            names: self.names.clone(),
            events: self.trace().to_vec(),
        }
    }

    /// Did the world stop (horizon, event limit, or a violation with
    /// `stop_on_violation`)? A world with an empty queue is merely quiet.
    pub fn is_halted(&self) -> bool {
        self.halted
    }

    /// Nothing left to happen.
    pub fn is_quiet(&self) -> bool {
        self.queue.is_empty() && self.step_faults.is_empty()
    }

    /// Every violation so far.
    pub fn violations(&self) -> &[Violation] {
        self.monitor.violations()
    }

    /// The step of the first `Violation` event.
    pub fn first_violation_step(&self) -> Option<u64> {
        self.first_violation
    }

    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }

    pub fn invariant_config(&self) -> &InvariantConfig {
        self.monitor.config()
    }

    pub fn node_count(&self) -> u32 {
        self.nodes.len() as u32
    }

    pub fn client_count(&self) -> u32 {
        self.clients.len() as u32
    }

    /// A node, read-only (`peek`, `dbsize`, `stats`…). Mutate it only
    /// through the world, or replay breaks.
    pub fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize).map(|s| &*s.node)
    }

    pub fn node_state(&self, i: u32) -> Option<NodeState> {
        self.nodes.get(i as usize).map(|s| NodeState {
            down: s.down,
            role: s.node.role(),
            master_of: s.master_of,
            offset: s.offset,
            applied: s.applied,
            clock_ms: s.clock.local(self.now),
        })
    }

    /// The current master (for single and replicated topologies).
    pub fn master(&self) -> u32 {
        self.master
    }

    pub fn client_state(&self, c: ClientId) -> Option<ClientState> {
        self.clients.get(c.0 as usize).map(|s| ClientState {
            crashed: s.crashed,
            paused: s.paused,
            done: s.done,
            running: s.machine.is_some() && !s.done && !s.crashed,
        })
    }

    /// A client's clock now (Unix ms).
    pub fn client_clock(&self, c: ClientId) -> Option<u64> {
        self.clients.get(c.0 as usize).map(|s| s.clock.local(self.now))
    }

    /// Every lock key on every node, as the world tracks it.
    pub fn locks(&self) -> Vec<LockView> {
        let mut out = Vec::new();
        for (i, s) in self.nodes.iter().enumerate() {
            // A lock service's deadlines are on the members' clocks; a
            // Redis node's on its keyspace's.
            let node_now = if self.member_of(i as u32).is_some() {
                s.clock.local(self.now)
            } else {
                s.node.now()
            };
            for (key, sh) in self.locks.held_on(i as u32) {
                out.push(LockView {
                    node: i as u32,
                    key: key.clone(),
                    value: String::from_utf8_lossy(&sh.value).into_owned(),
                    owner: sh.owner,
                    ttl_ms: sh.deadline.map(|d| d.saturating_sub(node_now)),
                    since_ms: sh.since,
                });
            }
        }
        out
    }

    /// Who owns `key` on node `i`, as far as the world can tell.
    pub fn lock_owner(&self, i: u32, key: &str) -> Option<u32> {
        self.locks.held(i, key)?.owner
    }

    /// The clients that believe they hold `key` now.
    pub fn believers(&self, key: &str) -> Vec<u32> {
        self.monitor.believers(key)
    }
}
