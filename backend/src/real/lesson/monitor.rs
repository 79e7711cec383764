//! The lesson's lock keys read back off the real servers and judged by
//! core's lock observer and invariant monitor (grants, Redlock majority,
//! wrong releases, beliefs and overlaps, stale writes), so the violation
//! bands are the simulator's.

use super::*;
use crate::real::service::belief_events;

impl RealLessonRun {
    /// After an off-script console command of client `cid` on `node`: the
    /// lesson's lock keys it may have changed, now rather than at the next
    /// step. Its events (the command's too) are in
    /// [`take_events`](RealLessonRun::take_events).
    pub fn observe_console(&mut self, env: &mut RealEnv<'_>, cid: u32, node: u32) {
        self.observe(env, Some(node), Look::Cmd { client: cid, node });
    }

    /// Read the watched keys on `only` (or every live node) and turn what
    /// changed into lock events; core's observer says which change is a
    /// grant (on the master, or by Redlock majority) and which a wrong
    /// release.
    pub(super) fn observe(&mut self, env: &mut RealEnv<'_>, only: Option<u32>, cause: Look) {
        let infos = env.topology.nodes();
        self.locks.set_busy(self.busy_for(cause));
        let observed = self.locks.observe(env.session, &infos, only, cause);
        self.judge(env, observed);
        self.drain(env);
    }

    /// What the lock observer saw beyond lock bars: numbered grants and
    /// wrong releases, through core's monitor as the simulator does.
    pub(super) fn judge(&mut self, env: &mut RealEnv<'_>, observed: Vec<Observed>) {
        for o in observed {
            match o {
                Observed::Lock { .. } => {}
                Observed::Granted { client, key } => {
                    let seq = self.monitor.grant(client, &key);
                    self.record(env, None, Actor::Client(client), EventKind::Granted { key, seq });
                }
                mut not_owner => {
                    // The observer's clock is the session's; the trace's is
                    // the lesson's.
                    if let Some(held) = not_owner.held_mut() {
                        held.since = self.lesson_ms(held.since);
                    }
                    let now = self.now_lesson(env);
                    let names = env.session.names().clone();
                    let client = |i| names.client(i).to_owned();
                    if let Some(v) = self
                        .monitor
                        .not_owner(&not_owner, now, &client, &|i| names.node(i).to_owned())
                    {
                        self.violate(env, v);
                    }
                }
            }
        }
    }

    pub(super) fn violate(&mut self, env: &mut RealEnv<'_>, violation: Violation) {
        self.monitor.record(violation.clone());
        self.record(env, None, Actor::World, EventKind::Violation { violation });
    }

    /// A client starts or stops believing it holds `key`; two believers at
    /// once is the overlap the timeline paints red (core's monitor decides,
    /// as in the simulator).
    pub(super) fn belief(&mut self, env: &mut RealEnv<'_>, cid: u32, key: &str, holds: bool) {
        let now = self.now_lesson(env);
        let names = env.session.names();
        let changed = belief_events(&mut self.monitor, names, &mut self.overlapped, cid, key, holds, now);
        for (actor, kind) in changed {
            self.record(env, None, actor, kind);
        }
    }

    /// A write to the protected resource (simulated even on a real run:
    /// it is the business system, not Redis), made under `lock` when the
    /// step names one: that lock's store and grants judge it.
    pub(super) fn write(
        &mut self,
        env: &mut RealEnv<'_>,
        cid: u32,
        lock: Option<&str>,
        token: Option<i64>,
        value: String,
    ) -> bool {
        self.record(
            env,
            None,
            Actor::Client(cid),
            EventKind::WriteSent {
                token,
                value: value.clone(),
            },
        );
        let at = self.now_lesson(env);
        let accepted = self.resource.write_under(cid, lock, at, token, value.clone());
        self.record(
            env,
            None,
            Actor::Resource,
            EventKind::Write {
                client: cid,
                token,
                value,
                accepted,
            },
        );
        if accepted {
            // Judged by grant order, as in the simulator: a write from an
            // earlier holder after a later one's is a lost update.
            let names = env.session.names().clone();
            if let Some(v) = self
                .monitor
                .accepted_write_under(cid, lock, at, token, &|i| names.client(i).to_owned())
            {
                self.violate(env, v);
            }
        }
        accepted
    }
}
