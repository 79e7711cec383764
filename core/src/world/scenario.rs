//! A scenario: a whole run written down.
//!
//! Topology, clients with their programs and clocks, scheduled faults, and
//! the seed. Given the same scenario, [`World::from_scenario`] builds the
//! same world and [`replay`] produces the same trace, event for event — so a
//! scenario is how a lesson, a bug report or an explorer counterexample is
//! shared. It is plain serde data: JSON works as is, TOML through any serde
//! TOML crate.

use serde::{Deserialize, Serialize};

use super::clock::ClockConfig;
use super::topology::WorldConfig;
use super::{World, WorldError};
use crate::client::Program;
use crate::fault::ScheduledFault;

/// One client in a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSpec {
    pub name: String,
    #[serde(default)]
    pub clock: ClockConfig,
    /// World time at which its program starts.
    #[serde(default)]
    pub start_ms: u64,
    #[serde(default)]
    pub program: Option<Program>,
}

/// A complete, replayable run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub seed: u64,
    pub world: WorldConfig,
    pub clients: Vec<ClientSpec>,
    pub faults: Vec<ScheduledFault>,
}

impl World {
    /// Build the world a scenario describes, with its programs and faults
    /// scheduled but nothing run yet.
    pub fn from_scenario(s: &Scenario) -> Result<World, WorldError> {
        let mut w = World::new(s.world.clone(), s.seed)?;
        for c in &s.clients {
            let id = w.add_client_with(&c.name, c.clock)?;
            if let Some(p) = &c.program {
                w.run_program_at(id, p.clone(), c.start_ms)?;
            }
        }
        for f in &s.faults {
            w.schedule(f.at, f.fault.clone())?;
        }
        Ok(w)
    }
}

/// The world after `n_steps` events of the scenario: "go to step n". Step
/// back is `replay(s, n − 1)`.
pub fn replay(s: &Scenario, n_steps: u64) -> Result<World, WorldError> {
    let mut w = World::from_scenario(s)?;
    for _ in 0..n_steps {
        if w.step().is_none() {
            break;
        }
    }
    Ok(w)
}
