//! The lab's WebSocket protocol, as types: what the page (or `locklab cli
//! --via`, or the bench) sends the backend's `/api/session`, what the
//! backend answers, and `/api/health`.
//!
//! Both ends compile this one definition — the backend serialises
//! [`ServerMsg`] and reads [`ClientMsg`], the browser and the CLI do the
//! opposite — so a changed message breaks the build, not the page. The JSON
//! shape is the one the browser has always spoken (`{"type":"command",…}`,
//! snake_case tags), so an older page still talks to a newer backend.
//!
//! Forward compatibility goes one way on purpose: a reader ignores what it
//! does not know *from the server* ([`ServerMsg::Unknown`], an unknown
//! [`NodeRole`] or [`NodeState`] is shown as such), because a newer backend may
//! say more than an older page understands; the backend refuses what it
//! does not know *from a client* with a clear error, because a request it
//! cannot carry out must not look as if it had been.
//!
//! Serde only, no I/O: this compiles to wasm32 with the rest of core.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::actor::Names;
use crate::lesson::run::StepResult;
use crate::lesson::worded::PageLesson;
use crate::lesson::Lang;
use crate::trace::Event;

/// The shapes of topology the backend starts (and the simulator models).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    /// One master.
    Single,
    /// A master and an asynchronous replica.
    Replicated,
    /// Five independent masters, for Redlock.
    Redlock5,
    /// A three-master Redis Cluster.
    Cluster3,
    /// A master, a replica and three Redis Sentinels that fail over by
    /// themselves (real servers only).
    Sentinel,
}

impl TopologyKind {
    /// Every kind, in the order the page lists them.
    pub const ALL: [TopologyKind; 5] = [
        TopologyKind::Single,
        TopologyKind::Replicated,
        TopologyKind::Redlock5,
        TopologyKind::Cluster3,
        TopologyKind::Sentinel,
    ];

    /// The wire name (`redlock5`), or `None` for a name no kind has.
    pub fn parse(s: &str) -> Option<TopologyKind> {
        TopologyKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyKind::Single => "single",
            TopologyKind::Replicated => "replicated",
            TopologyKind::Redlock5 => "redlock5",
            TopologyKind::Cluster3 => "cluster3",
            TopologyKind::Sentinel => "sentinel",
        }
    }

    /// "single, replicated, redlock5, cluster3 or sentinel": for an error that says
    /// what would have been accepted.
    pub fn choices() -> String {
        or_list(TopologyKind::ALL.iter().map(|k| k.as_str()))
    }
}

impl fmt::Display for TopologyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// "a, b or c".
fn or_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// What a session plays on: the user's own server (`--redis URL`, never
/// started, reconfigured or killed by the lab) or a managed topology.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Served {
    External,
    Single,
    Replicated,
    Redlock5,
    Cluster3,
    Sentinel,
    /// Three etcd members a lesson on etcd started (not a Redis topology:
    /// the page cannot switch to it, and its toolbox has no nodes).
    Etcd3,
    /// Three ZooKeeper servers a lesson on ZooKeeper started.
    Zk3,
    /// Lesson 45's four lock services side by side: a Redis, three Redlock
    /// masters, three etcd members and three ZooKeeper servers.
    Compare,
    /// A kind this build does not know (a newer backend), or none said.
    #[default]
    #[serde(other)]
    Unknown,
}

impl Served {
    /// The managed kind, if this is one.
    pub fn managed(self) -> Option<TopologyKind> {
        match self {
            Served::Single => Some(TopologyKind::Single),
            Served::Replicated => Some(TopologyKind::Replicated),
            Served::Redlock5 => Some(TopologyKind::Redlock5),
            Served::Cluster3 => Some(TopologyKind::Cluster3),
            Served::Sentinel => Some(TopologyKind::Sentinel),
            Served::External | Served::Etcd3 | Served::Zk3 | Served::Compare | Served::Unknown => None,
        }
    }

    pub fn is_external(self) -> bool {
        self == Served::External
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Served::External => "external",
            Served::Etcd3 => "etcd3",
            Served::Zk3 => "zk3",
            Served::Compare => "compare",
            Served::Unknown => "unknown",
            other => other.managed().map_or("unknown", TopologyKind::as_str),
        }
    }
}

impl From<TopologyKind> for Served {
    fn from(kind: TopologyKind) -> Served {
        match kind {
            TopologyKind::Single => Served::Single,
            TopologyKind::Replicated => Served::Replicated,
            TopologyKind::Redlock5 => Served::Redlock5,
            TopologyKind::Cluster3 => Served::Cluster3,
            TopologyKind::Sentinel => Served::Sentinel,
        }
    }
}

impl fmt::Display for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node's role, as the backend arranged it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRole {
    #[default]
    Master,
    Replica,
    /// A Redis Sentinel watching the master (the `sentinel` topology).
    Sentinel,
    /// The user's own server: the lab does not know, and does not change,
    /// what it is.
    External,
    #[serde(other)]
    Unknown,
}

impl NodeRole {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeRole::Master => "master",
            NodeRole::Replica => "replica",
            NodeRole::Sentinel => "sentinel",
            NodeRole::External => "external",
            NodeRole::Unknown => "unknown",
        }
    }
}

impl fmt::Display for NodeRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a node is now, as far as the backend arranged it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    #[default]
    Up,
    /// SIGSTOPped: the process exists and holds its data, but answers
    /// nothing.
    Paused,
    /// Killed (crashed), until restarted.
    Down,
    #[serde(other)]
    Unknown,
}

impl NodeState {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Up => "up",
            NodeState::Paused => "paused",
            NodeState::Down => "down",
            NodeState::Unknown => "unknown",
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node of the session's topology, as `hello` and `topology` list it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub name: String,
    /// `redis://host:port`, never with a password (the backend redacts it).
    #[serde(default)]
    pub url: String,
    /// 0 for the user's own server.
    #[serde(default)]
    pub port: u16,
    #[serde(default)]
    pub role: NodeRole,
    #[serde(default)]
    pub state: NodeState,
}

/// The faults the page's toolbox and `cli --via`'s `:fault` inject on a
/// managed node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// SIGSTOP: the process freezes (a GC pause, a VM migration).
    Pause,
    /// SIGCONT.
    Resume,
    /// SIGKILL: the process and everything not persisted are gone.
    Crash,
    /// Start a crashed node again, with its persistence.
    Restart,
    /// The replica stops receiving its master's stream.
    CutReplication,
    HealReplication,
    /// `REPLICAOF NO ONE` on a replica: the failover.
    Promote,
}

impl FaultKind {
    pub const ALL: [FaultKind; 7] = [
        FaultKind::Pause,
        FaultKind::Resume,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::CutReplication,
        FaultKind::HealReplication,
        FaultKind::Promote,
    ];

    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// "pause, resume, …, heal_replication or promote".
    pub fn choices() -> String {
        or_list(FaultKind::ALL.iter().map(|k| k.as_str()))
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Resume => "resume",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
            FaultKind::CutReplication => "cut_replication",
            FaultKind::HealReplication => "heal_replication",
            FaultKind::Promote => "promote",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A message to the backend.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// A redis-cli line typed at `client`'s console, for node `node`.
    Command {
        client: String,
        line: String,
        #[serde(default)]
        node: u32,
    },
    /// Replace the managed topology (and the session) with a fresh one.
    Topology { kind: TopologyKind },
    Fault {
        fault: FaultKind,
        #[serde(default)]
        node: u32,
    },
    /// Play a lesson from scratch on a fresh session. `factor`: time
    /// compression (1–10000, default per lesson); `lang`: the language of
    /// a refusal's reason.
    Lesson {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        factor: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lang: Option<Lang>,
        /// A lesson that is not in the catalogue — a counterexample the
        /// explorer found in the page — sent whole, to replay it on real
        /// servers. The backend plays it only after
        /// [`Lesson::validate_sent`](crate::lesson::Lesson::validate_sent).
        /// It comes as the page holds it: programs worded, not decoded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lesson: Option<Box<PageLesson>>,
    },
    /// The running lesson's next step.
    LessonStep,
}

impl ClientMsg {
    /// Read a client's text frame, with an error a person can act on: an
    /// unknown topology or fault names the ones there are, rather than
    /// serde's "unknown variant".
    pub fn from_json(text: &str) -> Result<ClientMsg, String> {
        serde_json::from_str(text).map_err(|e| {
            let v: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
            let field = |name: &str| v.get(name).and_then(|f| f.as_str()).map(str::to_owned);
            match field("type").as_deref() {
                Some("topology") if field("kind").is_some_and(|k| TopologyKind::parse(&k).is_none()) => {
                    format!(
                        "unknown topology {:?}: {}",
                        field("kind").unwrap_or_default(),
                        TopologyKind::choices()
                    )
                }
                Some("fault") if field("fault").is_some_and(|f| FaultKind::parse(&f).is_none()) => {
                    format!(
                        "unknown fault {:?}: {}",
                        field("fault").unwrap_or_default(),
                        FaultKind::choices()
                    )
                }
                _ => format!("bad message: {e}"),
            }
        })
    }
}

/// A message from the backend.
///
/// Its `Deserialize` is written by hand ([`decode`]), as
/// [`crate::class::ServerSays`]' is: serde's derive of an internally
/// tagged enum was the page's second largest function.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// A session started: its id, key prefix, topology and names.
    Hello {
        session: String,
        prefix: String,
        #[serde(default)]
        topology: Served,
        #[serde(default)]
        nodes: Vec<NodeInfo>,
        names: Names,
    },
    /// One event of the run, exactly as the simulator's traces serialise it.
    Event {
        event: Event,
    },
    /// A console line's output, rendered as redis-cli prints it.
    Reply {
        client: String,
        text: String,
    },
    /// A new client appeared.
    Names {
        names: Names,
    },
    /// The topology after a start or a fault.
    Topology {
        kind: Served,
        #[serde(default)]
        nodes: Vec<NodeInfo>,
    },
    /// A lesson run started.
    Lesson {
        id: String,
        steps: usize,
        #[serde(default)]
        server_version: String,
        #[serde(default)]
        factor: u64,
        /// The lesson's topology kind (the hello says whether it is the
        /// user's server): what the page lays its lanes out by.
        #[serde(default)]
        topology: Served,
        #[serde(default)]
        nodes: Vec<NodeInfo>,
        names: Names,
        /// A run-wide remark ("DELEX needs Redis 8.4; …").
        #[serde(default)]
        notice: Option<String>,
    },
    /// A lesson step's result; `note` says how it was sent when that
    /// differs from the lesson's line (time compression, DELEX on 7.x).
    Step {
        result: StepResult,
        #[serde(default)]
        note: Option<String>,
    },
    LessonDone {
        passed: bool,
    },
    /// Something the lab refused that is not a command reply.
    Error {
        message: String,
    },
    /// A message this build does not know (a newer backend): ignored.
    Unknown,
}

mod decode;

/// Whether `/api/health` describes the user's server or managed ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backing {
    /// `--redis URL`: the user's own server, never killed or reconfigured.
    External,
    /// Servers the backend starts on loopback ports.
    Managed,
    #[default]
    #[serde(other)]
    Unknown,
}

/// `GET /api/health`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// The user's server answers `PING`, or (managed) a `redis-server`
    /// binary is there to start servers from.
    #[serde(default)]
    pub reachable: bool,
    /// `redis_version` of the user's server, or of the binary.
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub topology: Backing,
    /// Ids of the lessons this backend can play on real servers.
    #[serde(default)]
    pub lessons: Vec<String>,
    /// Every other lesson, with the reason it cannot run here.
    #[serde(default)]
    pub unsupported: BTreeMap<String, String>,
    /// Why not reachable, when it is not.
    #[serde(default)]
    pub error: Option<String>,
}

impl Health {
    pub fn is_external(&self) -> bool {
        self.topology == Backing::External
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(json: &str) -> ClientMsg {
        serde_json::from_str(json).unwrap()
    }

    /// A counterexample sent whole reads back, its programs intact, though
    /// the message is internally tagged.
    #[cfg(feature = "toml")]
    #[test]
    fn a_lesson_sent_whole_reads_back_with_its_programs() {
        let lessons = crate::lesson::builtin().unwrap();
        let mut lesson = lessons
            .iter()
            .find(|l| l.steps.iter().any(|s| s.program.is_some()))
            .unwrap()
            .clone();
        lesson.id = crate::lesson::COUNTEREXAMPLE_ID.into();
        let msg = ClientMsg::Lesson {
            id: lesson.id.clone(),
            factor: None,
            lang: None,
            lesson: Some(Box::new(lesson.worded())),
        };
        let text = serde_json::to_string(&msg).unwrap();
        let ClientMsg::Lesson { lesson: Some(back), .. } = ClientMsg::from_json(&text).unwrap() else {
            panic!("not a lesson message")
        };
        assert_eq!(back.decoded().unwrap(), lesson.without_notes());
    }

    #[test]
    fn client_messages_read_the_pages_json() {
        assert_eq!(
            client(r#"{"type":"command","client":"A","line":"GET k"}"#),
            ClientMsg::Command {
                client: "A".into(),
                line: "GET k".into(),
                node: 0
            }
        );
        assert_eq!(
            client(r#"{"type":"fault","fault":"cut_replication","node":1}"#),
            ClientMsg::Fault {
                fault: FaultKind::CutReplication,
                node: 1
            }
        );
        assert_eq!(
            client(r#"{"type":"lesson","id":"05","lang":"zh"}"#),
            ClientMsg::Lesson {
                lesson: None,
                id: "05".into(),
                factor: None,
                lang: Some(Lang::Zh)
            }
        );
        assert_eq!(client(r#"{"type":"lesson_step"}"#), ClientMsg::LessonStep);
    }

    #[test]
    fn a_client_message_round_trips() {
        for msg in [
            ClientMsg::Topology {
                kind: TopologyKind::Redlock5,
            },
            ClientMsg::Lesson {
                lesson: None,
                id: "17".into(),
                factor: Some(10),
                lang: None,
            },
        ] {
            let json = serde_json::to_string(&msg).unwrap();
            assert_eq!(client(&json), msg, "{json}");
        }
        assert_eq!(
            serde_json::to_string(&ClientMsg::Topology {
                kind: TopologyKind::Cluster3
            })
            .unwrap(),
            r#"{"type":"topology","kind":"cluster3"}"#
        );
    }

    #[test]
    fn the_backend_refuses_what_it_does_not_know_from_a_client() {
        let refused = |json: &str| ClientMsg::from_json(json).unwrap_err();
        assert_eq!(
            refused(r#"{"type":"topology","kind":"ring7"}"#),
            "unknown topology \"ring7\": single, replicated, redlock5, cluster3 or sentinel"
        );
        assert_eq!(
            refused(r#"{"type":"fault","fault":"unplug","node":0}"#),
            "unknown fault \"unplug\": pause, resume, crash, restart, cut_replication, heal_replication or promote"
        );
        assert!(refused(r#"{"type":"teleport"}"#).starts_with("bad message: unknown variant `teleport`"));
        assert!(refused("{").starts_with("bad message: "));
    }

    #[test]
    fn a_reader_ignores_what_a_newer_backend_adds() {
        let m: ServerMsg = serde_json::from_str(r#"{"type":"metrics","x":{"y":1}}"#).unwrap();
        assert_eq!(m, ServerMsg::Unknown);
        let n: NodeInfo = serde_json::from_str(
            r#"{"name":"n1","url":"redis://127.0.0.1:7000","port":7000,"role":"witness","state":"frozen"}"#,
        )
        .unwrap();
        assert_eq!((n.role, n.state), (NodeRole::Unknown, NodeState::Unknown));
        let h: ServerMsg = serde_json::from_str(
            r#"{"type":"hello","session":"s","prefix":"lab:s:","topology":"ring7","names":{"clients":[],"nodes":[]}}"#,
        )
        .unwrap();
        assert!(
            matches!(
                h,
                ServerMsg::Hello {
                    topology: Served::Unknown,
                    ..
                }
            ),
            "{h:?}"
        );
    }

    #[test]
    fn names_and_choices() {
        for k in TopologyKind::ALL {
            assert_eq!(TopologyKind::parse(k.as_str()), Some(k));
            assert_eq!(Served::from(k).managed(), Some(k));
            assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
        }
        for f in FaultKind::ALL {
            assert_eq!(FaultKind::parse(f.as_str()), Some(f));
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{f}\""));
        }
        assert_eq!(
            TopologyKind::choices(),
            "single, replicated, redlock5, cluster3 or sentinel"
        );
        assert_eq!(Served::External.managed(), None);
    }
}
