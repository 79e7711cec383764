//! ZooKeeper, for real: a managed three-server ensemble and lessons played
//! on it (core's side of the same service is `core/src/service/zk.rs`).
//!
//! * [`ensemble`] — three ZooKeeper servers (Debian's zookeeperd) on free
//!   loopback ports.
//! * [`driver`] — core's ZooKeeper vocabulary sent through
//!   zookeeper-client, answered with the simulator's replies.
//! * [`zxid`] — session ids and zxids between a lesson's numbers and a
//!   real ensemble's.
//! * [`run`] — the ensemble as core's lesson `Environment`.
//!
//! The etcd folder beside this one has the same four parts.

pub mod driver;
pub mod ensemble;
pub mod run;
pub mod zxid;

pub use run::{check_zk, run_zk, ZkEnv, ZkRun};
