//! Where a lesson plays on real servers, chosen once: on Redis (a session
//! on a topology: the user's server or a managed one), on a managed etcd
//! cluster, on a ZooKeeper ensemble, or on all four side by side (lesson
//! 45, `service = "all"`).
//!
//! The two runners sit below this choice and know nothing of each other's
//! lessons: [`crate::real::lesson`] plays Redis and refuses a lesson on a
//! lock service; [`crate::real::service`] plays the services (and, for
//! lesson 45, the Redis runner for its Redis part). The lab
//! ([`crate::real::lab`]), the health report and the CLI (`locklab lesson
//! run --real`) ask here, so a lesson is checked and run by the same rule
//! wherever it is played.

use locklab_core::lesson::{Lang, Lesson, LockService};

use crate::real::lesson::{self as real_lesson, RealLessonError, RealReport};
use crate::real::service;
use crate::real::topology::Servers;

/// Where a lesson plays: what its file's `world.service` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Play {
    /// On Redis: a session on the user's server or a managed topology.
    Redis,
    /// On the lock service (or, for `All`, the four services) the lab
    /// starts for the run.
    Service(LockService),
}

impl Play {
    pub fn of(lesson: &Lesson) -> Play {
        match lesson.world.service {
            None => Play::Redis,
            Some(service) => Play::Service(service),
        }
    }
}

/// Can a real run play this lesson, where it plays? `Err` says why not:
/// the lesson's own text when it is marked `real = no`, else which step
/// needs what.
pub fn check_supported(lesson: &Lesson) -> Result<(), String> {
    check_supported_lang(lesson, Lang::En)
}

/// [`check_supported`], with the lesson's own why-not text in `lang`. What
/// the browser's real driver checks before it starts anything.
pub fn check_supported_lang(lesson: &Lesson, lang: Lang) -> Result<(), String> {
    match Play::of(lesson) {
        Play::Redis => real_lesson::check_supported_lang(lesson, lang),
        Play::Service(service) => service::check(lesson, service, lang),
    }
}

/// [`check_supported_lang`] with this backend's `topology`: the user's own
/// server (`External`) takes single-node lessons on Redis only (the lab
/// neither faults it nor starts a service beside it), a managed one must
/// be the lesson's kind.
pub fn check_target(lesson: &Lesson, topology: &Servers, lang: Lang) -> Result<(), String> {
    check_supported_lang(lesson, lang)?;
    real_lesson::check_topology(lesson, topology)
}

/// Play `lesson` on the user's server at `url` (single-node lessons on
/// Redis only), compressing time by `factor`; with `flush`, the server is
/// emptied first (a test server only).
pub fn run(lesson: &Lesson, url: &str, factor: u64, flush: bool) -> Result<RealReport, RealLessonError> {
    check_target(lesson, &Servers::external(url), Lang::En).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    real_lesson::run(lesson, url, factor, flush)
}

/// Start what `lesson` plays on (the managed topology, or the lock
/// service), play it there to the end, and stop it.
pub fn run_managed(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_supported(lesson).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    match Play::of(lesson) {
        Play::Redis => real_lesson::run_managed(lesson, factor),
        // Three etcd members instead of Redis nodes.
        Play::Service(LockService::Etcd) => service::run_etcd(lesson, factor),
        // Three ZooKeeper servers.
        Play::Service(LockService::Zk) => service::run_zk(lesson, factor),
        // All four side by side.
        Play::Service(LockService::All) => service::run_compare(lesson, factor),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The choice follows the lesson file: 43 on etcd, 44 on ZooKeeper, 45
    /// on all four, the rest on Redis; each is checked by its own runner,
    /// and the Redis runner refuses a lesson on a service by name.
    #[test]
    fn each_lesson_is_checked_where_it_plays() {
        let all = locklab_core::lesson::builtin().unwrap();
        let get = |id: &str| all.iter().find(|l| l.id == id).unwrap();
        assert_eq!(Play::of(get("05")), Play::Redis);
        assert_eq!(Play::of(get("43")), Play::Service(LockService::Etcd));
        assert_eq!(Play::of(get("44")), Play::Service(LockService::Zk));
        assert_eq!(Play::of(get("45")), Play::Service(LockService::All));
        for id in ["05", "15", "43", "44", "45"] {
            assert_eq!(check_supported(get(id)), Ok(()), "lesson {id}");
        }
        assert_eq!(
            real_lesson::check_supported(get("43")).unwrap_err(),
            "it plays on an etcd cluster, which the Redis runner does not play"
        );
        let external = Servers::external("redis://127.0.0.1:1/");
        assert!(check_target(get("05"), &external, Lang::En).is_ok());
        let why = check_target(get("44"), &external, Lang::En).unwrap_err();
        assert!(
            why.starts_with("it plays on a ZooKeeper ensemble the lab starts"),
            "{why}"
        );
    }
}
