//! Lock services that are not Redis, for real: a managed etcd cluster and
//! a managed ZooKeeper ensemble, played by core's lesson runner, the same
//! lessons the simulator's `core/src/service` plays.
//!
//! * [`cluster`] — three `etcd` processes on free loopback ports.
//! * [`etcd`] — core's etcd vocabulary sent through etcd-client, answered
//!   with the simulator's replies.
//! * [`translate`] — lease ids, lock keys, revisions and TTLs between a
//!   lesson's numbers and a real cluster's.
//! * [`etcdrun`] — the cluster as core's lesson `Environment`.
//! * [`ensemble`] — three ZooKeeper servers (Debian's zookeeperd) on free
//!   loopback ports.
//! * [`zk`] — core's ZooKeeper vocabulary sent through zookeeper-client,
//!   answered with the simulator's replies; [`zxid`] — session ids and
//!   zxids between the two.
//! * [`zkrun`] — the ensemble as core's lesson `Environment`.
//!
//! * [`lesson_state`] — what both runs keep and judge alike: lesson time,
//!   client faults, the trace, core's observer, monitor and resource.
//!
//! The error a managed service fails to start with lives here.

pub mod cluster;
pub mod ensemble;
pub mod etcd;
pub mod etcdrun;
mod lesson_state;
pub mod translate;
pub mod zk;
pub mod zkrun;
pub mod zxid;

use thiserror::Error;

pub use etcdrun::{check_etcd, run_etcd, EtcdEnv};
pub use zkrun::{check_zk, run_zk, ZkEnv};

/// Why a managed lock service could not be used.
#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    Start(String),
}
