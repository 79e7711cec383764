//! What to explore: the `locklab explore` flags as one serde type.
//!
//! A [`Spec`] is either shorthand (`acquire`, `release`, `fencing`,
//! `topology`, `clients` — the explorer builds the scenario: every client
//! runs the same lock program against the same key) or a full
//! [`Scenario`] in `scenario`, whose clients and topology the explorer then
//! attacks with the same fault budget. Either way the explorer owns the
//! seed and the faults: those are what it searches over.

use serde::{Deserialize, Serialize};

use super::ExploreError;
use crate::client::{Acquire, Backoff, Fencing, LockProgram, Program, RedlockProgram, Release, Retry, Work};
use crate::world::{ClientSpec, Persistence, Scenario, Topology, WorldConfig};

/// The topologies the explorer's shorthand knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyKind {
    /// One node.
    #[default]
    Single,
    /// A master and one replica, asynchronous, with Sentinel-style failover.
    Replicated,
    /// Five independent masters and the Redlock client.
    Redlock5,
}

impl TopologyKind {
    pub fn name(self) -> &'static str {
        match self {
            TopologyKind::Single => "single",
            TopologyKind::Replicated => "replicated",
            TopologyKind::Redlock5 => "redlock5",
        }
    }

    pub fn parse(s: &str) -> Option<TopologyKind> {
        [TopologyKind::Single, TopologyKind::Replicated, TopologyKind::Redlock5]
            .into_iter()
            .find(|t| t.name() == s)
    }
}

/// The families of faults the explorer may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Stop-the-world pauses of a client.
    Pause,
    /// Client crashes.
    Crash,
    /// Node restarts (with or without data, as `persistence` says).
    Restart,
    /// Master crash plus replica promotion.
    Failover,
    /// Node clock jumps.
    ClockJump,
}

impl FaultKind {
    pub const ALL: [FaultKind; 5] = [
        FaultKind::Pause,
        FaultKind::Crash,
        FaultKind::Restart,
        FaultKind::Failover,
        FaultKind::ClockJump,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Pause => "pause",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
            FaultKind::Failover => "failover",
            FaultKind::ClockJump => "clock-jump",
        }
    }

    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Which family a fault belongs to.
    pub fn of(f: &crate::world::Fault) -> Option<FaultKind> {
        use crate::world::Fault;
        match f {
            Fault::PauseClient { .. } => Some(FaultKind::Pause),
            Fault::CrashClient { .. } => Some(FaultKind::Crash),
            Fault::RestartNode { .. } | Fault::CrashNode { .. } => Some(FaultKind::Restart),
            Fault::Failover { .. } | Fault::PromoteReplica { .. } => Some(FaultKind::Failover),
            Fault::JumpClock { .. } | Fault::SetDrift { .. } => Some(FaultKind::ClockJump),
            _ => None,
        }
    }
}

/// An exploration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Spec {
    pub acquire: Acquire,
    pub release: Release,
    /// Fencing tokens on (taken in the acquire's transaction; the resource
    /// rejects lower tokens) or off.
    pub fencing: bool,
    pub topology: TopologyKind,
    pub clients: u32,
    /// The fault budget: how many faults one schedule may contain.
    pub faults: u32,
    /// What a restarted node keeps.
    pub persistence: Persistence,
    pub seed: u64,
    /// The lock TTL the generated programs use (and fault sizes scale with).
    pub ttl_ms: u64,
    /// Seeded random walks after the exhaustive phase.
    pub random_walks: u64,
    /// Seeds the exhaustive phase enumerates every fault at every step for.
    pub exhaustive_seeds: u32,
    /// Longest trace one schedule may produce.
    pub max_steps: u64,
    /// Only these kinds of faults (empty: all of them).
    pub fault_kinds: Vec<FaultKind>,
    /// A full scenario to explore instead of the shorthand.
    pub scenario: Option<Scenario>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            acquire: Acquire::SetNxPx,
            release: Release::Lua,
            fencing: false,
            topology: TopologyKind::Single,
            clients: 2,
            faults: 1,
            persistence: Persistence::Aof,
            seed: 1,
            ttl_ms: 1_000,
            random_walks: 4_000,
            exhaustive_seeds: 8,
            max_steps: 2_000,
            fault_kinds: Vec::new(),
            scenario: None,
        }
    }
}

/// Upper bounds that keep one exploration finite and a bad file harmless.
pub const MAX_CLIENTS: u32 = 8;
pub const MAX_FAULTS: u32 = 4;
pub const MAX_RANDOM_WALKS: u64 = 100_000_000;
pub const MAX_STEPS: u64 = 100_000;

fn client_name(i: u32) -> String {
    const LETTERS: &[u8] = b"ABCDEFGH";
    (LETTERS[(i as usize) % LETTERS.len()] as char).to_string()
}

impl Spec {
    pub fn validate(&self) -> Result<(), ExploreError> {
        let bad = |m: String| Err(ExploreError::Invalid(m));
        if self.scenario.is_none() && !(1..=MAX_CLIENTS).contains(&self.clients) {
            return bad(format!("--clients must be 1 to {MAX_CLIENTS}"));
        }
        if self.faults > MAX_FAULTS {
            return bad(format!("--faults must be 0 to {MAX_FAULTS}"));
        }
        if !(10..=3_600_000).contains(&self.ttl_ms) {
            return bad("ttl_ms must be 10 to 3600000".into());
        }
        if self.random_walks > MAX_RANDOM_WALKS {
            return bad(format!("random_walks must be at most {MAX_RANDOM_WALKS}"));
        }
        if self.exhaustive_seeds > 64 {
            return bad("exhaustive_seeds must be at most 64".into());
        }
        if !(10..=MAX_STEPS).contains(&self.max_steps) {
            return bad(format!("max_steps must be 10 to {MAX_STEPS}"));
        }
        if self.scenario.is_none() && self.topology == TopologyKind::Redlock5 && self.acquire == Acquire::SetnxExpire {
            return Err(ExploreError::Unsupported(
                "--acquire setnx-expire with --topology redlock5 (Redlock always uses SET NX PX)".into(),
            ));
        }
        if let Some(s) = &self.scenario {
            if s.clients.is_empty() {
                return bad("the scenario has no clients".into());
            }
            if s.clients.len() > MAX_CLIENTS as usize {
                return bad(format!("the scenario has more than {MAX_CLIENTS} clients"));
            }
        }
        Ok(())
    }

    /// The scenario every schedule starts from (no faults, seed unset).
    pub fn base_scenario(&self) -> Scenario {
        if let Some(s) = &self.scenario {
            let mut s = s.clone();
            s.world.stop_on_violation = true;
            s.world.max_events = s.world.max_events.min(self.max_steps);
            return s;
        }
        let ttl = self.ttl_ms;
        let topology = match self.topology {
            TopologyKind::Single => Topology::Single,
            TopologyKind::Replicated => Topology::Replicated { replicas: 1 },
            TopologyKind::Redlock5 => Topology::Redlock { masters: 5 },
        };
        let world = WorldConfig {
            topology,
            persistence: self.persistence,
            fencing: self.fencing,
            stop_on_violation: true,
            max_events: self.max_steps,
            horizon_ms: ttl.saturating_mul(60),
            ..WorldConfig::default()
        };
        let work = Work {
            min_ms: ttl / 20,
            max_ms: ttl * 2 / 5,
            hang: false,
        };
        let program = match self.topology {
            TopologyKind::Redlock5 => Program::Redlock(RedlockProgram {
                ttl_ms: ttl,
                retry_count: 8,
                retry_delay_ms: ttl / 5,
                fencing: if self.fencing {
                    Fencing::IncrAfter {
                        counter: "fence".into(),
                    }
                } else {
                    Fencing::Off
                },
                work,
                release: self.release,
                ..RedlockProgram::default()
            }),
            _ => Program::Lock(LockProgram {
                ttl_ms: ttl,
                acquire: self.acquire,
                fencing: if self.fencing {
                    Fencing::Transaction {
                        counter: "fence".into(),
                    }
                } else {
                    Fencing::Off
                },
                retry: Retry {
                    max_attempts: None,
                    backoff: Backoff::Jittered {
                        base_ms: ttl / 40,
                        max_ms: ttl / 5,
                    },
                    deadline_ms: Some(ttl * 5),
                },
                work,
                release: self.release,
                timeout_ms: ttl / 5,
                ..LockProgram::default()
            }),
        };
        let clients = (0..self.clients)
            .map(|i| ClientSpec {
                name: client_name(i),
                clock: Default::default(),
                start_ms: u64::from(i) * 3,
                program: Some(program.clone()),
            })
            .collect();
        Scenario {
            seed: self.seed,
            world,
            clients,
            faults: Vec::new(),
        }
    }

    /// Is this kind of fault allowed?
    pub fn allows(&self, kind: FaultKind) -> bool {
        self.fault_kinds.is_empty() || self.fault_kinds.contains(&kind)
    }

    /// One line saying what is being explored.
    pub fn summary(&self) -> String {
        let kinds = if self.fault_kinds.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                self.fault_kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            )
        };
        self.summary_base() + &kinds
    }

    fn summary_base(&self) -> String {
        match &self.scenario {
            Some(s) => format!(
                "scenario from file: topology {}, {} clients ({}), fencing {}, persistence {}, fault budget {}, seed {}",
                s.world.topology.name(),
                s.clients.len(),
                s.clients.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
                if s.world.fencing { "on" } else { "off" },
                s.world.persistence.name(),
                self.faults,
                self.seed
            ),
            None => format!(
                "topology {}, {} clients, acquire {}, release {}, fencing {}, persistence {}, fault budget {}, seed {}",
                self.topology.name(),
                self.clients,
                if self.topology == TopologyKind::Redlock5 { "redlock (SET NX PX on 5 masters)" } else { self.acquire.name() },
                self.release.name(),
                if self.fencing { "on" } else { "off" },
                self.persistence.name(),
                self.faults,
                self.seed
            ),
        }
    }
}
