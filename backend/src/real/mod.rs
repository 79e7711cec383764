//! Real redis-server, from one connection to a lesson on a managed
//! topology.
//!
//! * [`conn`] — one connection through the `redis` crate, answering in
//!   core's [`Reply`](locklab_core::Reply) type.
//! * [`process`] — a redis-server process on a free loopback port.
//! * [`reaper`] — pid files, so no managed process outlives its backend.
//! * [`topology`] — managed topologies (single, replicated, redlock5,
//!   cluster3, sentinel) and the faults a signal or a command makes.
//! * [`faults`] — the faults that need more: a delaying link proxy, a clock
//!   shift, failover by Redis Sentinel.
//! * [`session`] — a sandboxed lab session: key prefix, function
//!   namespace, ACL user, refused commands, limits, script pre-flight and
//!   watchdog, and the same trace events as the simulator.
//! * [`observe`] — lock keys read on real servers, shown to core's lock
//!   observer.
//! * [`lesson`] — real servers as the environment of core's lesson runner.
//! * [`service`] — the lock services that are not Redis (a managed etcd cluster and ZooKeeper ensemble), and lessons played on them.
//! * [`play`] — where a lesson plays (Redis, etcd, ZooKeeper or all four),
//!   chosen once for the lab and the CLI.
//! * [`stages`] — where a lab command's time goes, stage by stage.
//! * [`lab`] — one socket's lab ([`lab::RealLab`]): protocol messages in,
//!   protocol messages out, on a session, a topology or a lock service.

pub mod conn;
pub mod faults;
pub mod lab;
pub mod lesson;
pub mod observe;
pub mod play;
pub mod process;
pub mod reaper;
pub mod replies;
pub mod service;
pub mod session;
pub mod stages;
pub mod topology;
