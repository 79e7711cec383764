//! Lock services that are not Redis, for real: a managed etcd cluster
//! played by core's lesson runner, the same lessons the simulator's
//! `core/src/service` plays.
//!
//! * [`cluster`] — three `etcd` processes on free loopback ports.
//! * [`etcd`] — core's etcd vocabulary sent through etcd-client, answered
//!   with the simulator's replies.
//! * [`translate`] — lease ids, lock keys, revisions and TTLs between a
//!   lesson's numbers and a real cluster's.
//! * [`run`] — the cluster as core's lesson `Environment`.
//!
//! What is shared by etcd and (later) ZooKeeper lives here: the error a
//! managed service fails to start with. ZooKeeper has no real driver yet
//! (its lessons say `real = no`).

pub mod cluster;
pub mod etcd;
pub mod run;
pub mod translate;

use thiserror::Error;

pub use run::{check_etcd, run_etcd, EtcdEnv};

/// Why a managed lock service could not be used.
#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    Start(String),
}
