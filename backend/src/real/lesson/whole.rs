//! A whole lesson in one call, as the CLI and the tests run one: on a
//! server by URL ([`run`]), on a topology the lab starts ([`run_managed`])
//! or on one the caller holds ([`run_on`]), each step until the last; and
//! the checks made before (the server's version, the actors' connections).

use locklab_core::lesson::stand_in;
use locklab_core::lesson::{Lang, Lesson};
use locklab_core::Reply;

use crate::real::conn::{RealConnection, RealError};
use crate::real::session::{SessionLimits, SessionPool};
use crate::real::topology::Servers;

use super::support::{check_supported, check_target, topology_kind};
use super::{RealEnv, RealLessonError, RealLessonRun, RealReport};
/// Play `lesson` on the user's server at `url` (single-node lessons only),
/// compressing time by `factor`. With `flush`, the server is emptied first
/// (a test server only: it clears function libraries a previous run left).
pub fn run(lesson: &Lesson, url: &str, factor: u64, flush: bool) -> Result<RealReport, RealLessonError> {
    let mut topology = Servers::external(url);
    check_target(lesson, &topology, Lang::En).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    if flush {
        let mut admin = RealConnection::open(url)?;
        for cmd in [&["FLUSHALL"][..], &["SCRIPT", "FLUSH"], &["FUNCTION", "FLUSH"]] {
            admin.execute(&cmd.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>())?;
        }
    }
    run_on(lesson, &mut topology, factor)
}

/// Start the managed topology `lesson` needs, play it there, and stop it
/// (a lesson on Redis; [`crate::real::play::run_managed`] plays any).
pub fn run_managed(lesson: &Lesson, factor: u64) -> Result<RealReport, RealLessonError> {
    check_supported(lesson).map_err(|why| RealLessonError::Unsupported {
        id: lesson.id.clone(),
        why,
    })?;
    let mut topology = Servers::start(topology_kind(lesson))?;
    run_on(lesson, &mut topology, factor)
}

/// Play `lesson` to the end on `topology`, through a fresh session.
pub fn run_on(lesson: &Lesson, topology: &mut Servers, factor: u64) -> Result<RealReport, RealLessonError> {
    let pool = SessionPool::new(SessionLimits {
        commands_per_sec: f64::INFINITY,
        ..SessionLimits::default()
    });
    let mut session = pool.open_on(topology)?;
    let mut env = RealEnv {
        session: &mut session,
        topology,
    };
    let mut run = RealLessonRun::start(lesson, &mut env, factor, Lang::En)?;
    while run.step(&mut env)?.is_some() {}
    Ok(run.report())
}

/// What the run tells the user before it starts, when the lesson uses a
/// Redis 8.4 command (`DELEX`, `SET … IFEQ`) and the server is older: the
/// commands the lab will send as Lua instead (core's [`stand_in`]).
pub(super) fn newer_commands_notice(lesson: &Lesson, version: &str, has_8_4: bool) -> Option<String> {
    if has_8_4 {
        return None;
    }
    let mut named: Vec<&'static str> = Vec::new();
    let cmds = lesson.steps.iter().filter_map(|s| s.cmd.as_deref());
    for argv in cmds.filter_map(|c| locklab_core::cli::parse_line(c.as_bytes()).ok()) {
        if let Ok(Some(s)) = stand_in::for_7_0(&argv) {
            if !named.contains(&s.stands_for) {
                named.push(s.stands_for);
            }
        }
    }
    (!named.is_empty()).then(|| {
        format!(
            "{} needs Redis 8.4; this server is {version}, so the lab sends the Lua equivalent instead",
            named.join(" and ")
        )
    })
}

/// Every actor of the lesson gets its connections to the `nodes` up front.
/// Function libraries need no tidying here: a session's live in its own
/// namespace (`lab_<id>_…`) and go with it, so a run never touches a
/// library it did not load (the owner's `locklib` least).
pub(super) fn connect_actors(lesson: &Lesson, env: &mut RealEnv<'_>, nodes: u32) -> Result<(), RealLessonError> {
    for a in &lesson.actors {
        env.session.client(a)?;
        for n in 0..nodes {
            // Best effort: a node that is down is connected to later.
            let _ = env.session.connect(a, n);
        }
    }
    Ok(())
}

/// The server's `redis_version`.
pub(super) fn server_version(conn: &mut RealConnection) -> Result<String, RealError> {
    let info = conn.execute(&[b"INFO".to_vec(), b"server".to_vec()])?;
    let text = match info {
        Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("unknown")
        .trim()
        .to_owned())
}

pub(super) fn at_least_8_4(version: &str) -> bool {
    let mut parts = version.split('.').filter_map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (8, 4)
}
