//! The pool sessions are opened from ([`SessionPool`]): it counts live
//! sessions against [`SessionLimits::max_sessions`], shares the janitor that cleans
//! up after them, and builds a [`Session`] with its ACL user made on each
//! reachable node. Apart from the session because it is the one place a
//! session is put together, and the count outlives every session.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use locklab_core::actor::Names;

use super::janitor::Janitor;
use super::limits::{Bucket, Scripts, SessionLimits};
use super::preflight::Preflight;
use super::sandbox::Sandbox;
use super::{quota, Confinement, NodeSlot, NodeTarget, Session, SessionError};
use crate::real::conn::random_hex;
use crate::real::topology::{Servers, TopologyKind};

/// Counts live sessions and hands out new ones within [`SessionLimits`].
/// Cloning shares the count.
#[derive(Clone, Debug)]
pub struct SessionPool {
    live: Arc<AtomicUsize>,
    limits: SessionLimits,
    janitor: Janitor,
}

impl Default for SessionPool {
    fn default() -> Self {
        SessionPool::new(SessionLimits::default())
    }
}

impl SessionPool {
    pub fn new(limits: SessionLimits) -> Self {
        SessionPool {
            live: Arc::new(AtomicUsize::new(0)),
            limits,
            janitor: Janitor::default(),
        }
    }

    pub fn limits(&self) -> &SessionLimits {
        &self.limits
    }

    /// How many sessions are open now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// How many ended sessions still wait for their cleanup (their server
    /// was busy or down when they ended; retried every few seconds).
    pub fn pending_cleanups(&self) -> usize {
        self.janitor.pending()
    }

    /// Open a session on `nodes`, each key under the session's prefix: make
    /// its ACL user on each reachable node. A node that is down now is not
    /// an error — it is set up when the first command reaches it.
    pub fn open(&self, nodes: Vec<NodeTarget>) -> Result<Session, SessionError> {
        self.open_with(nodes, Confinement::Prefix, false)
    }

    /// Open a session on `topology`'s nodes, confined as that topology
    /// needs: a managed cluster is the session's own
    /// ([`Confinement::OwnCluster`]), everything else gets the prefix.
    pub fn open_on(&self, topology: &Servers) -> Result<Session, SessionError> {
        let confinement = match topology.kind() {
            Some(TopologyKind::Cluster3) => Confinement::OwnCluster,
            _ => Confinement::Prefix,
        };
        self.open_with(topology.targets(), confinement, topology.kind().is_some())
    }

    /// Open a session on `nodes`, confined as `confinement` says, on
    /// servers the lab started (`managed`) or someone's own: that decides
    /// how its scripts run ([`Scripts::on`]).
    pub fn open_with(
        &self,
        nodes: Vec<NodeTarget>,
        confinement: Confinement,
        managed: bool,
    ) -> Result<Session, SessionError> {
        let max = self.limits.max_sessions;
        let taken = self
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1));
        if taken.is_err() {
            return Err(SessionError::TooManySessions(max));
        }
        let slot = Slot(self.live.clone());
        let id = random_hex(12);
        let password = random_hex(32);
        let names = Names {
            clients: Vec::new(),
            nodes: nodes.iter().map(|n| n.name.clone()).collect(),
        };
        let scripts = Scripts::on(managed, &self.limits);
        let mut session = Session {
            sandbox: Sandbox::new(&id, confinement, self.limits.clone()),
            quota: quota::Quota::default(),
            console_notes: Vec::new(),
            preflight: Preflight::new(self.limits.max_tracked_keys, self.limits.max_log_bytes, scripts),
            scripts,
            multi: HashMap::new(),
            killers: HashMap::new(),
            janitor: self.janitor.clone(),
            slots: Vec::new(),
            user: format!("lab-{id}"),
            id,
            password,
            nodes: nodes
                .into_iter()
                .map(|target| NodeSlot {
                    target,
                    admin: None,
                    user_ready: false,
                    reader: None,
                })
                .collect(),
            conns: HashMap::new(),
            links: HashMap::new(),
            delays: HashMap::new(),
            clients: BTreeMap::new(),
            names,
            bucket: Bucket::new(self.limits.burst),
            started: Instant::now(),
            step: 0,
            req: 0,
            events: Vec::new(),
            stages: Default::default(),
            _slot: slot,
        };
        for i in 0..session.nodes.len() {
            match session.ensure_user(i) {
                Ok(()) => {}
                // Down now: retried on first use.
                Err(SessionError::Unreachable { .. }) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(session)
    }
}

/// Gives a pool slot back when the session drops.
#[derive(Debug)]
pub(super) struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
