//! Network links: latency, jitter, partitions and lost replies.
//!
//! Every client has a link to every node and to the resource; every master
//! has a replication link to each of its replicas. A message on a link
//! arrives after `latency + uniform(0..=jitter)` milliseconds — but never
//! before the message sent ahead of it on the same link, because Redis
//! connections are TCP streams and TCP does not reorder. A cut link loses
//! what is sent on it and what is in flight on it when it arrives.
//!
//! Lost replies are their own knob (`drop_reply_permille`) because they are
//! their own lesson (33): the command *ran*, the client just never hears
//! about it, and must not assume the worst or the best.

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// How one link behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkConfig {
    pub latency_ms: u64,
    pub jitter_ms: u64,
    /// Replies lost on the way back, per thousand.
    pub drop_reply_permille: u32,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            latency_ms: 1,
            jitter_ms: 2,
            drop_reply_permille: 0,
        }
    }
}

/// Master → replica: how long a write takes to reach a replica. This is
/// the window in which a failover forgets a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplicationConfig {
    pub lag_ms: u64,
    pub jitter_ms: u64,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        ReplicationConfig {
            lag_ms: 20,
            jitter_ms: 20,
        }
    }
}

/// One direction of one link.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lane {
    last_arrival: u64,
}

impl Lane {
    /// When a message sent now arrives, keeping the lane in order.
    pub(crate) fn transit(&mut self, now: u64, latency: u64, jitter: u64, rng: &mut Rng) -> u64 {
        let t = now
            .saturating_add(latency)
            .saturating_add(rng.below(jitter.saturating_add(1)));
        let t = t.max(self.last_arrival);
        self.last_arrival = t;
        t
    }
}

/// A client's link to one node (or to the resource): both directions.
#[derive(Clone, Debug, Default)]
pub(crate) struct Link {
    pub(crate) config: LinkConfig,
    pub(crate) cut: bool,
    pub(crate) out: Lane,
    pub(crate) back: Lane,
}

impl Link {
    pub(crate) fn new(config: LinkConfig) -> Link {
        Link {
            config,
            cut: false,
            out: Lane::default(),
            back: Lane::default(),
        }
    }

    pub(crate) fn send_time(&mut self, now: u64, rng: &mut Rng) -> u64 {
        self.out
            .transit(now, self.config.latency_ms, self.config.jitter_ms, rng)
    }

    pub(crate) fn reply_time(&mut self, now: u64, rng: &mut Rng) -> u64 {
        self.back
            .transit(now, self.config.latency_ms, self.config.jitter_ms, rng)
    }
}
