//! Lock services that are not Redis, for real: a managed etcd cluster and
//! a managed ZooKeeper ensemble, played by core's lesson runner, the same
//! lessons the simulator's `core/src/service` plays.
//!
//! * [`etcd`] and [`zk`] — one folder per service, with the same four
//!   parts: the managed processes (`cluster`, `ensemble`), the `driver`
//!   that sends core's vocabulary through the service's client and answers
//!   with the simulator's replies, the numbers translated between a
//!   lesson's and the service's (`translate`, `zxid`), and the `run` that
//!   says what the service adds to the shared environment.
//! * [`env`] — [`ServiceEnv`], the one core lesson `Environment` both
//!   services are played through.
//!
//! * [`compare`] — lesson 45: a Redis, three Redlock masters, the etcd
//!   cluster and the ZooKeeper ensemble in one run, each played by its own
//!   driver, on one clock and one timeline.
//! * [`lesson_state`] — what both runs keep and judge alike: lesson time,
//!   client faults, the trace, core's observer, monitor and resource.
//! * [`stepped`] — either run one step at a time, for the browser.
//!
//! The error a managed service fails to start with lives here.

pub mod compare;
mod env;
pub mod etcd;
mod lesson_state;
mod member;
pub mod stepped;
pub mod zk;

use locklab_core::lesson::{Lang, Lesson, LockService};
use thiserror::Error;

pub use compare::{check_compare, run_compare, CompareEnv};
pub use env::ServiceEnv;
pub use etcd::{check_etcd, run_etcd, EtcdEnv, EtcdRun};
pub(crate) use lesson_state::belief_events;
pub use stepped::ServiceRun;
pub use zk::{check_zk, run_zk, ZkEnv, ZkRun};

/// Members of each managed etcd cluster and ZooKeeper ensemble.
pub const MEMBERS: usize = 3;

/// The processes a lesson on `service` makes the backend run (what the
/// backend's bound on managed processes counts): each service's members,
/// and for all four side by side the simulator's `compare` world's Redis
/// and three Redlock masters besides.
pub fn processes(service: LockService) -> usize {
    match service {
        LockService::Etcd | LockService::Zk => MEMBERS,
        LockService::All => 1 + 3 + 2 * MEMBERS,
    }
}

/// Can a lesson on `service` play on the one the lab starts? `Err` says
/// why not: the lesson's own text when it is marked `real = no`, else
/// what the service's runner cannot play.
pub fn check(lesson: &Lesson, service: LockService, lang: Lang) -> Result<(), String> {
    crate::real::lesson::check_marked_real(lesson, lang)?;
    match service {
        LockService::Etcd => check_etcd(lesson),
        LockService::Zk => check_zk(lesson),
        LockService::All => check_compare(lesson),
    }
}

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

/// The tokio runtime a service driver talks to its members on. It may be
/// dropped anywhere, also on a tokio worker (a lab's lesson goes with its
/// WebSocket's task when the server shuts down), where dropping a
/// `Runtime` panics: so it is shut down in the background instead.
pub(crate) struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    fn start() -> Result<OwnRuntime, ServiceError> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map(|rt| OwnRuntime(Some(rt)))
            .map_err(|e| ServiceError::Start(format!("tokio runtime: {e}")))
    }
}

impl std::ops::Deref for OwnRuntime {
    type Target = tokio::runtime::Runtime;

    fn deref(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("the runtime is only taken on drop")
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
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
