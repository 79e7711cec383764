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
use crate::client::{
    Acquire, Backoff, Fencing, LockProgram, LockScripts, Program, RedlockProgram, Release, Retry, Token, Watchdog, Work,
};
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
    pub fn of(f: &crate::fault::Fault) -> Option<FaultKind> {
        use crate::fault::Fault;
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
    /// With fencing on: the token comes from a separate `INCR` after the
    /// acquire succeeded, not from the acquire's transaction (a pause
    /// between the two hands an earlier holder a larger token).
    pub fence_after: bool,
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
    /// A name for the design (shown in the page and the transcript).
    pub name: Option<String>,
    /// The name in Chinese, for the page in 中文 (absent: the Chinese
    /// summary, worded from the design's parts, stands in).
    pub name_zh: Option<String>,
    /// Renewal: none (absent), or a watchdog renewing every `interval_ms`
    /// (default a third of the TTL) up to `max_renewals` times (absent: no
    /// cap — Redisson's default).
    pub watchdog: Option<Watchdog>,
    /// The user's own acquire / release / extend scripts ("bring your own
    /// lock"); each one given replaces the built-in variant.
    pub scripts: Option<LockScripts>,
    /// The token source: unique per acquisition, or one fixed value.
    pub token: Token,
    /// Retry and backoff (absent: jittered exponential from TTL/40 to
    /// TTL/5, giving up after five TTLs).
    pub retry: Option<Retry>,
    /// Does the work check, on its own clock, that the lease is still valid
    /// before it writes?
    pub check_validity: bool,
    /// The critical section hangs (a stuck business thread): the case a
    /// watchdog without a cap turns into a lock held forever.
    pub work_hangs: bool,
    /// Redlock (`topology = redlock5`): the acquisition's decision as a
    /// written condition ([`crate::client::condition`]) instead of
    /// redis.io's rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redlock_acquired_if: Option<String>,
    /// Redlock: retries after the first attempt (absent: 8). A contender
    /// that gives up within one TTL is never there when a slow acquirer's
    /// keys expire, and a stale decision would go unpunished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redlock_retries: Option<u32>,
    /// Pauses land only on a client that holds no lock yet: a slow
    /// acquisition, not a pause in the work
    /// ([`WorldConfig::pause_only_acquiring`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pause_only_acquiring: bool,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            acquire: Acquire::SetNxPx,
            release: Release::Lua,
            fencing: false,
            fence_after: false,
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
            name: None,
            name_zh: None,
            watchdog: None,
            scripts: None,
            token: Token::Unique,
            retry: None,
            check_validity: false,
            work_hangs: false,
            redlock_acquired_if: None,
            redlock_retries: None,
            pause_only_acquiring: false,
        }
    }
}

/// Upper bounds that keep one exploration finite and a bad file harmless.
pub const MAX_CLIENTS: u32 = 8;
pub const MAX_FAULTS: u32 = 4;
pub const MAX_RANDOM_WALKS: u64 = 100_000_000;
pub const MAX_STEPS: u64 = 100_000;
/// The longest script a design may carry.
pub const MAX_SCRIPT: usize = 16 * 1024;

/// A seed as a person types it: blank is "the design's own seed".
pub fn parse_seed(text: &str) -> Result<Option<u64>, ExploreError> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(None);
    }
    t.parse().map(Some).map_err(|_| {
        ExploreError::Invalid(format!(
            "the seed must be a whole number from 0 to {}, not {:?}",
            u64::MAX,
            t.chars().take(40).collect::<String>()
        ))
    })
}

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
        if self.fence_after && !self.fencing {
            return bad("fence_after needs fencing = true".into());
        }
        let custom = self.watchdog.is_some()
            || self.scripts.is_some()
            || self.token != Token::Unique
            || self.retry.is_some()
            || self.check_validity
            || self.work_hangs;
        if self.scenario.is_some() && custom {
            return bad("a design with a full scenario sets its clients' programs there, not with watchdog, scripts, token, retry, check_validity or work_hangs".into());
        }
        if self.scenario.is_none() && self.topology == TopologyKind::Redlock5 && custom {
            return Err(ExploreError::Unsupported(
                "watchdog, scripts, token, retry, check_validity or work_hangs with --topology redlock5 (the Redlock client has its own)".into(),
            ));
        }
        self.validate_redlock()?;
        if let Some(w) = &self.watchdog {
            if w.interval_ms.is_some_and(|i| i == 0 || i >= self.ttl_ms) {
                return bad("watchdog.interval_ms must be between 1 and the TTL".into());
            }
        }
        if let Some(scripts) = &self.scripts {
            if scripts.extend.is_some() && self.watchdog.is_none() {
                return bad("an extend script needs a watchdog to call it: add [watchdog]".into());
            }
            if let Some((role, src)) = scripts.given().into_iter().find(|(_, s)| s.len() > MAX_SCRIPT) {
                return bad(format!(
                    "the {} script is {} bytes; at most {MAX_SCRIPT}",
                    role.name(),
                    src.len()
                ));
            }
            scripts.check().map_err(|(role, reply)| ExploreError::Script {
                role: role.name(),
                reply,
            })?;
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

    /// The Redlock client's own knobs: its written decision and retries.
    fn validate_redlock(&self) -> Result<(), ExploreError> {
        if self.redlock_retries.is_some_and(|r| r > 100) {
            return Err(ExploreError::Invalid("redlock_retries must be at most 100".into()));
        }
        if let Some(rule) = &self.redlock_acquired_if {
            if self.scenario.is_some() || self.topology != TopologyKind::Redlock5 {
                return Err(ExploreError::Invalid(
                    "redlock_acquired_if is the Redlock client's decision: it needs topology redlock5".into(),
                ));
            }
            crate::client::condition::Condition::parse(rule)
                .map_err(|e| ExploreError::Invalid(format!("the Redlock condition: {e}")))?;
        }
        Ok(())
    }

    /// `--seed N`: the explorer's seed, and a full scenario's world seed
    /// with it — what `locklab explore FILE --seed N` does, and what the
    /// page's seed box does, so the two give the same answer.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        if let Some(sc) = &mut self.scenario {
            sc.seed = seed;
        }
    }

    /// The scenario every schedule starts from (no faults, seed unset).
    pub fn base_scenario(&self) -> Scenario {
        if let Some(s) = &self.scenario {
            let mut s = s.clone();
            s.world.stop_on_violation = true;
            s.world.pause_only_acquiring |= self.pause_only_acquiring;
            s.world.max_events = s.world.max_events.min(self.max_steps);
            return s;
        }
        let world = self.world_config();
        let program = self.program();
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

    /// The world of a scenario built from the design's fields: its
    /// topology, persistence and fencing, stopping at the first violation.
    fn world_config(&self) -> WorldConfig {
        let ttl = self.ttl_ms;
        let topology = match self.topology {
            TopologyKind::Single => Topology::Single,
            TopologyKind::Replicated => Topology::Replicated { replicas: 1 },
            TopologyKind::Redlock5 => Topology::Redlock { masters: 5 },
        };
        let mut world = WorldConfig {
            topology,
            persistence: self.persistence,
            fencing: self.fencing,
            stop_on_violation: true,
            max_events: self.max_steps,
            horizon_ms: ttl.saturating_mul(60),
            pause_only_acquiring: self.pause_only_acquiring,
            ..WorldConfig::default()
        };
        if self.watchdog.is_some() || self.work_hangs {
            // A lease that renews itself can outlive its owner's progress:
            // ten TTLs in one hand is a lock that never comes back.
            world.invariants.max_hold_ms = Some(ttl.saturating_mul(10));
        }
        world
    }

    /// The program every client of a built scenario runs: Redlock on five
    /// masters, the lock program otherwise, with the design's choices.
    fn program(&self) -> Program {
        let ttl = self.ttl_ms;
        let work = Work {
            min_ms: ttl / 20,
            max_ms: ttl * 2 / 5,
            hang: self.work_hangs,
        };
        match self.topology {
            TopologyKind::Redlock5 => Program::Redlock(RedlockProgram {
                ttl_ms: ttl,
                retry_count: self.redlock_retries.unwrap_or(8),
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
                acquired_if: self.redlock_acquired_if.clone(),
                ..RedlockProgram::default()
            }),
            _ => Program::Lock(LockProgram {
                ttl_ms: ttl,
                acquire: self.acquire,
                fencing: match (self.fencing, self.fence_after) {
                    (false, _) => Fencing::Off,
                    (true, false) => Fencing::Transaction {
                        counter: "fence".into(),
                    },
                    (true, true) => Fencing::IncrAfter {
                        counter: "fence".into(),
                    },
                },
                retry: self.retry.unwrap_or(Retry {
                    max_attempts: None,
                    backoff: Backoff::Jittered {
                        base_ms: ttl / 40,
                        max_ms: ttl / 5,
                    },
                    deadline_ms: Some(ttl * 5),
                }),
                work,
                release: self.release,
                timeout_ms: ttl / 5,
                token: self.token.clone(),
                watchdog: self.watchdog,
                scripts: self.scripts.clone(),
                check_validity: self.check_validity,
                ..LockProgram::default()
            }),
        }
    }

    /// Is this kind of fault allowed?
    pub fn allows(&self, kind: FaultKind) -> bool {
        self.fault_kinds.is_empty() || self.fault_kinds.contains(&kind)
    }

    /// One line saying what is being explored.
    pub fn summary(&self) -> String {
        let mut extras = Vec::new();
        if let Some(n) = &self.name {
            extras.push(format!("design {n:?}"));
        }
        if let Some(w) = &self.watchdog {
            extras.push(match w.max_renewals {
                Some(m) => format!("watchdog capped at {m} renewals"),
                None => "watchdog without a cap".to_owned(),
            });
        }
        if let Some(sc) = &self.scripts {
            let roles: Vec<&str> = sc.given().iter().map(|(r, _)| r.name()).collect();
            extras.push(format!("own Lua: {}", roles.join(", ")));
        }
        if let Token::Fixed(v) = &self.token {
            extras.push(format!("fixed token {v:?}"));
        }
        if self.check_validity {
            extras.push("work checks validity".to_owned());
        }
        if self.work_hangs {
            extras.push("work hangs".to_owned());
        }
        if let Some(rule) = &self.redlock_acquired_if {
            extras.push(format!("acquired if {rule}"));
        }
        if self.pause_only_acquiring {
            extras.push("pauses only while acquiring".to_owned());
        }
        let extras = if extras.is_empty() {
            String::new()
        } else {
            format!("; {}", extras.join(", "))
        };
        let kinds = if self.fault_kinds.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                self.fault_kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            )
        };
        self.summary_base() + &kinds + &extras
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
