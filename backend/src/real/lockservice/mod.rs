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
//! * [`stepped`] — either run one step at a time, for the browser.
//!
//! The error a managed service fails to start with lives here.

pub mod cluster;
pub mod ensemble;
pub mod etcd;
pub mod etcdrun;
mod lesson_state;
pub mod stepped;
pub mod translate;
pub mod zk;
pub mod zkrun;
pub mod zxid;

use thiserror::Error;

pub use etcdrun::{check_etcd, run_etcd, EtcdEnv};
pub use stepped::ServiceRun;
pub use zkrun::{check_zk, run_zk, ZkEnv};

/// Why a managed lock service could not be used.
#[derive(Debug, Error)]
pub enum ServiceError {
    #[error("{0}")]
    Start(String),
}

/// Start a managed service, and start it again on fresh ports (twice at
/// most) when a member lost the race for one: a free port is found by
/// binding and releasing it, so another process (a test running beside
/// this one, another lab) can take it before the member binds it.
pub(crate) fn on_free_ports<T>(mut start: impl FnMut() -> Result<T, ServiceError>) -> Result<T, ServiceError> {
    let mut again = 2;
    loop {
        match start() {
            Err(ServiceError::Start(why))
                if again > 0 && why.to_ascii_lowercase().contains("address already in use") =>
            {
                again -= 1
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_port_race_starts_again_and_nothing_else_does() {
        let lost = || ServiceError::Start("etcd3 exited: listen tcp 127.0.0.1:1: bind: address already in use".into());
        let mut tries = 0;
        let r = on_free_ports(|| {
            tries += 1;
            if tries < 3 {
                Err(lost())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(r.ok(), Some(3), "two more starts on fresh ports");
        let mut tries = 0;
        let r: Result<(), _> = on_free_ports(|| {
            tries += 1;
            Err(lost())
        });
        assert!(r.is_err() && tries == 3, "three starts at most");
        let mut tries = 0;
        let r: Result<(), _> = on_free_ports(|| {
            tries += 1;
            Err(ServiceError::Start("java not found".into()))
        });
        assert!(r.is_err() && tries == 1, "any other failure is final");
    }
}
