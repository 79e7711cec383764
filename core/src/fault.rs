//! Faults: the things that go wrong, on purpose.
//!
//! Each lesson's failure story is one or two of these at the right moment:
//! a client paused by its garbage collector past its lease (lessons 05, 13,
//! 22), a client crashing between `SETNX` and `EXPIRE` (03), a master dying
//! before it replicated the lock (15), a node restarting without its data
//! (21), a clock jumping (20). A fault is scheduled at a world time or at a
//! step of the trace ([`At`]); the explorer uses steps, because "right after
//! the node executed A's SET" is a point in the story, not in milliseconds.
//!
//! These are data, shared by everything that talks about faults: a lesson
//! file, the browser's fault menu, the protocol, the trace that records
//! them, the real driver that carries them out on redis-server. The
//! simulated world carries them out in `world/fault.rs`.

use serde::{Deserialize, Serialize};

use crate::actor::Names;
use crate::lang::Lang;
use crate::link::LinkConfig;

/// One end of a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    Client(String),
    Node(u32),
    Resource,
}

/// Whose clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockOf {
    Client(String),
    Node(u32),
}

/// A fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Fault {
    /// Stop the client's process (a stop-the-world GC, a VM migration, a
    /// `SIGSTOP`) for `ms` of real time, or until `resume_client`. Messages
    /// already on the wire keep going; what arrives waits in its socket.
    PauseClient {
        client: String,
        #[serde(default)]
        ms: Option<u64>,
    },
    ResumeClient {
        client: String,
    },
    /// Kill the client. Its locks stay until their TTL — if they have one.
    CrashClient {
        client: String,
    },
    /// Kill a node; it stays down. Requests to it are lost (clients time
    /// out), replication batches it had not yet sent are lost.
    CrashNode {
        node: u32,
    },
    /// Kill a node (if up) and bring it back after `down_ms`, with its data
    /// (`keep_data: true`, AOF) or empty (`false`), or as the world's
    /// persistence setting says (`null`).
    RestartNode {
        node: u32,
        #[serde(default)]
        down_ms: u64,
        #[serde(default)]
        keep_data: Option<bool>,
    },
    /// Make a replica the master, with whatever it has received so far.
    PromoteReplica {
        node: u32,
    },
    /// Sentinel's failover: crash the master, promote the replica that
    /// received the most (or `node`).
    Failover {
        #[serde(default)]
        node: Option<u32>,
    },
    /// Partition two endpoints (client–node, client–resource, or
    /// master–replica).
    CutLink {
        a: Endpoint,
        b: Endpoint,
    },
    HealLink {
        a: Endpoint,
        b: Endpoint,
    },
    /// Change a client–node or client–resource link's behaviour (a slow
    /// node, a lossy network).
    SetLink {
        a: Endpoint,
        b: Endpoint,
        config: LinkConfig,
    },
    /// Step a clock by `delta_ms` (negative: backwards).
    JumpClock {
        of: ClockOf,
        delta_ms: i64,
    },
    /// Make a clock run fast or slow from now on.
    SetDrift {
        of: ClockOf,
        ppm: i64,
    },
}

/// When a scheduled fault happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// At this world time (ms).
    Time(u64),
    /// Right after the trace has this many events (at the first moment
    /// between two deliveries when it has at least that many).
    Step(u64),
}

/// A fault and its moment, as a scenario lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledFault {
    pub at: At,
    pub fault: Fault,
}

fn endpoint(e: &Endpoint, names: &Names, lang: Lang) -> String {
    match (e, lang) {
        (Endpoint::Client(c), _) => c.clone(),
        (Endpoint::Node(n), _) => names.node(*n).to_owned(),
        (Endpoint::Resource, Lang::En) => "resource".to_owned(),
        (Endpoint::Resource, Lang::Zh) => "受保护资源".to_owned(),
    }
}

fn clock_of(c: &ClockOf, names: &Names) -> String {
    match c {
        ClockOf::Client(c) => c.clone(),
        ClockOf::Node(n) => names.node(*n).to_owned(),
    }
}

impl Fault {
    /// A short sentence for transcripts.
    pub fn describe(&self, names: &Names) -> String {
        self.describe_in(names, Lang::En)
    }

    /// [`Fault::describe`] in `lang`, both languages side by side (node and
    /// client names as they are).
    // long: one sentence per fault kind, in each language
    pub fn describe_in(&self, names: &Names, lang: Lang) -> String {
        let zh = lang == Lang::Zh;
        let link = |a: &Endpoint, b: &Endpoint| format!("{} ↔ {}", endpoint(a, names, lang), endpoint(b, names, lang));
        let node = |n: &u32| names.node(*n).to_owned();
        match (self, zh) {
            (Fault::PauseClient { client, ms: Some(ms) }, false) => format!("pause {client} for {ms} ms (GC)"),
            (Fault::PauseClient { client, ms: Some(ms) }, true) => format!("暂停 {client} {ms} ms（GC）"),
            (Fault::PauseClient { client, ms: None }, false) => format!("pause {client}"),
            (Fault::PauseClient { client, ms: None }, true) => format!("暂停 {client}"),
            (Fault::ResumeClient { client }, false) => format!("resume {client}"),
            (Fault::ResumeClient { client }, true) => format!("恢复 {client}"),
            (Fault::CrashClient { client }, false) => format!("crash {client}"),
            (Fault::CrashClient { client }, true) => format!("{client} 崩溃"),
            (Fault::CrashNode { node: n }, false) => format!("crash {}", node(n)),
            (Fault::CrashNode { node: n }, true) => format!("{} 宕机", node(n)),
            (
                Fault::RestartNode {
                    node: n,
                    down_ms,
                    keep_data,
                },
                false,
            ) => format!(
                "restart {} after {down_ms} ms{}",
                node(n),
                match keep_data {
                    Some(true) => " with its data",
                    Some(false) => " without its data",
                    None => "",
                }
            ),
            (
                Fault::RestartNode {
                    node: n,
                    down_ms,
                    keep_data,
                },
                true,
            ) => format!(
                "{} 宕机 {down_ms} ms 后重启{}",
                node(n),
                match keep_data {
                    Some(true) => "，保留数据",
                    Some(false) => "，数据丢失",
                    None => "",
                }
            ),
            (Fault::PromoteReplica { node: n }, false) => format!("promote {}", node(n)),
            (Fault::PromoteReplica { node: n }, true) => format!("提升 {} 为主节点", node(n)),
            (Fault::Failover { node: Some(n) }, false) => format!("failover to {}", node(n)),
            (Fault::Failover { node: Some(n) }, true) => format!("故障切换到 {}", node(n)),
            (Fault::Failover { node: None }, false) => "failover (master dies, best replica promoted)".to_owned(),
            (Fault::Failover { node: None }, true) => "故障切换（主节点宕机，提升数据最全的从节点）".to_owned(),
            (Fault::CutLink { a, b }, false) => format!("cut {}", link(a, b)),
            (Fault::CutLink { a, b }, true) => format!("断开 {}", link(a, b)),
            (Fault::HealLink { a, b }, false) => format!("heal {}", link(a, b)),
            (Fault::HealLink { a, b }, true) => format!("恢复 {}", link(a, b)),
            (Fault::SetLink { a, b, config }, false) => format!(
                "link {}: {} ms ± {} ms, {}‰ replies lost",
                link(a, b),
                config.latency_ms,
                config.jitter_ms,
                config.drop_reply_permille
            ),
            (Fault::SetLink { a, b, config }, true) => format!(
                "链路 {}：{} ms ± {} ms，丢失 {}‰ 的回复",
                link(a, b),
                config.latency_ms,
                config.jitter_ms,
                config.drop_reply_permille
            ),
            (Fault::JumpClock { of, delta_ms }, false) => {
                format!("{}'s clock jumps {delta_ms:+} ms", clock_of(of, names))
            }
            (Fault::JumpClock { of, delta_ms }, true) => format!("{} 的时钟跳变 {delta_ms:+} ms", clock_of(of, names)),
            (Fault::SetDrift { of, ppm }, false) => format!("{}'s clock drifts {ppm:+} ppm", clock_of(of, names)),
            (Fault::SetDrift { of, ppm }, true) => format!("{} 的时钟漂移 {ppm:+} ppm", clock_of(of, names)),
        }
    }
}
