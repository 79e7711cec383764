//! etcd, for real: a managed three-member cluster and lessons played on it
//! (core's side of the same service is `core/src/service/etcd.rs`).
//!
//! * [`cluster`] — three `etcd` processes on free loopback ports.
//! * [`driver`] — core's etcd vocabulary sent through etcd-client,
//!   answered with the simulator's replies.
//! * [`translate`] — lease ids, lock keys, revisions and TTLs between a
//!   lesson's numbers and a real cluster's.
//! * [`run`] — the cluster as core's lesson `Environment`.
//!
//! The ZooKeeper folder beside this one has the same four parts.

pub mod cluster;
pub mod driver;
pub mod run;
pub mod translate;

pub use run::{check_etcd, run_etcd, EtcdEnv, EtcdRun};
