//! Building a world: clients, programs, watched keys, cluster slots.
//!
//! Everything here is done before or between steps, and validated: a
//! scenario from a lesson file or the browser names clients and nodes by
//! name and number, and a wrong one is a [`WorldError`], never a panic.

use super::queue::Item;
use super::{link, ClientId, ClientSlot, Clock, ClockConfig, World, WorldError};
use crate::client::{Machine, Program};
use crate::rng::Rng;
use crate::server::EPOCH_MS;
use std::collections::BTreeMap;

impl World {
    /// Add a client with a perfect clock.
    pub fn add_client(&mut self, name: &str) -> Result<ClientId, WorldError> {
        self.add_client_with(name, ClockConfig::default())
    }

    /// Add a client whose clock has an offset and drift.
    pub fn add_client_with(&mut self, name: &str, clock: ClockConfig) -> Result<ClientId, WorldError> {
        if name.is_empty() {
            return Err(WorldError::EmptyName);
        }
        if self.names.clients.iter().any(|c| c == name) {
            return Err(WorldError::DuplicateClient(name.to_owned()));
        }
        let idx = self.clients.len() as u32;
        let n = self.nodes.len() as u32;
        let links = (0..=n)
            .map(|j| {
                let default = if j == n { self.cfg.resource_link } else { self.cfg.link };
                let wanted = if j == n { None } else { Some(j) };
                let cfg = self
                    .cfg
                    .links
                    .iter()
                    .rev()
                    .find(|o| o.client == name && o.node == wanted)
                    .map_or(default, |o| o.config);
                link::Link::new(cfg)
            })
            .collect();
        self.clients.push(ClientSlot {
            clock: Clock::new(EPOCH_MS, clock),
            rng: Rng::derive(
                self.seed,
                1_000
                    + if self.cfg.shared_client_stream {
                        0
                    } else {
                        u64::from(idx)
                    },
            ),
            machine: None,
            exits: false,
            crashed: false,
            done: false,
            paused: false,
            pause_gen: 0,
            inbox: Vec::new(),
            gen: 0,
            timers: BTreeMap::new(),
            pending: BTreeMap::new(),
            links,
            conns: vec![None; n as usize],
        });
        self.names.clients.push(name.to_owned());
        self.monitor.add_client();
        Ok(ClientId(idx))
    }

    /// The client called `name`.
    pub fn client_id(&self, name: &str) -> Option<ClientId> {
        self.names
            .clients
            .iter()
            .position(|c| c == name)
            .map(|i| ClientId(i as u32))
    }

    pub(super) fn client_index(&self, name: &str) -> Result<u32, WorldError> {
        self.client_id(name)
            .map(|c| c.0)
            .ok_or_else(|| WorldError::UnknownClient(name.to_owned()))
    }

    pub(super) fn check_client(&self, c: ClientId) -> Result<u32, WorldError> {
        if (c.0 as usize) < self.clients.len() {
            Ok(c.0)
        } else {
            Err(WorldError::UnknownClient(format!("#{}", c.0)))
        }
    }

    pub(super) fn check_node(&self, n: u32) -> Result<u32, WorldError> {
        if (n as usize) < self.nodes.len() {
            Ok(n)
        } else {
            Err(WorldError::UnknownNode(n, self.nodes.len() as u32))
        }
    }

    /// Start a program on a client now (replacing any it was running).
    pub fn run_program(&mut self, client: ClientId, program: Program) -> Result<(), WorldError> {
        self.run_program_at(client, program, self.now)
    }

    /// Start a program on a client at world time `at_ms`.
    pub fn run_program_at(&mut self, client: ClientId, program: Program, at_ms: u64) -> Result<(), WorldError> {
        let c = self.check_client(client)?;
        let machine = Machine::new(&program, self.nodes.len() as u32).map_err(|source| WorldError::Program {
            client: self.names.client(c).to_owned(),
            source,
        })?;
        for k in program.lock_keys() {
            self.watch_key(&k);
        }
        let exits = program.exits_when_done();
        self.push(
            at_ms.max(self.now),
            Item::Start {
                client: c,
                machine: Box::new(machine),
                exits,
            },
        );
        Ok(())
    }

    /// From now on `client`'s writes to the resource are made under `lock`
    /// (`None`: under no lock in particular): its store, and the client's
    /// grants of that lock, judge them.
    pub fn write_under(&mut self, client: ClientId, lock: Option<&str>) -> Result<(), WorldError> {
        let c = self.check_client(client)?;
        match lock {
            Some(l) => self.write_locks.insert(c, l.to_owned()),
            None => self.write_locks.remove(&c),
        };
        Ok(())
    }

    /// Treat `key` as a lock: track it on every node and check invariants.
    pub fn watch_key(&mut self, key: &str) {
        if !self.locks.is_watched(key) {
            self.monitor.watch_key(key);
            self.locks.watch(key);
        }
    }

    /// Make node `i` one node of a Redis Cluster owning some slots (lesson
    /// 31), or standalone again.
    pub fn set_node_cluster(
        &mut self,
        i: u32,
        cfg: Option<crate::server::cluster::ClusterConfig>,
    ) -> Result<(), WorldError> {
        let n = self.check_node(i)?;
        self.nodes[n as usize].node.set_cluster(cfg);
        Ok(())
    }
}
