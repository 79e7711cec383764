//! The real servers as core's lesson [`Environment`]: what each kind of
//! step does on a real session and topology.

use super::*;

/// The real servers as core's lesson [`Environment`], for one step: the
/// run's state and the session and topology it borrows.
pub(crate) struct Stepping<'r, 'e, 'b> {
    pub(super) run: &'r mut RealLessonRun,
    pub(super) env: &'e mut RealEnv<'b>,
}

impl Environment for Stepping<'_, '_, '_> {
    fn begin_step(&mut self, index: usize) -> Result<(), String> {
        // Background programs launched by consecutive steps start together,
        // at the first step that is not another such launch.
        let launching = self
            .run
            .lesson
            .steps
            .get(index)
            .is_some_and(|s| matches!(s.kind(), Ok(StepKind::Program { background: true, .. })));
        if !launching {
            self.run.start_enlisted(self.env)?;
        }
        self.run.pump(self.env, None)
    }

    fn command(
        &mut self,
        index: usize,
        client: &str,
        node: Option<u32>,
        argv: &[Vec<u8>],
    ) -> Result<Option<Reply>, String> {
        let run = &mut *self.run;
        refuse_crashed(&run.crashed, client)?;
        let node = node.unwrap_or(run.master);
        let reply = run.exec(self.env, client, node, argv, Some(index))?;
        // A client whose replies are all dropped ran the command and never
        // heard back.
        Ok(reply.filter(|_| !run.deaf.contains(client)))
    }

    fn wait(&mut self, index: usize, ms: u64) -> Result<(), String> {
        let run = &mut *self.run;
        let until = Instant::now() + run.wall(ms);
        run.pump(self.env, Some(until))?;
        run.observe(self.env, None, Look::None);
        if let Some(lag) = run.held_replication.filter(|lag| ms >= *lag) {
            let text = self
                .env
                .topology
                .fault(topology::NodeFault::HealReplication { node: 1 })
                .map_err(|e| e.to_string())?;
            self.env
                .session
                .note_world(format!("{text}: {lag} ms of lag have passed"));
            run.held_replication = None;
            run.add_note(index, format!("replication restored: the {lag} ms of lag have passed"));
        }
        Ok(())
    }

    fn fault(&mut self, index: usize, fault: &Fault) -> Result<(), String> {
        let run = &mut *self.run;
        run.settle(self.env)?;
        run.record(self.env, None, Actor::World, EventKind::Fault { fault: fault.clone() });
        let before = Instant::now();
        let result = run.fault(self.env, fault);
        // A fault is an instant in the lesson; starting a process or
        // promoting a replica takes milliseconds of wall time, which ×100
        // would be seconds the lesson never had. Lesson time and the
        // programs' timers stand still meanwhile (the servers' TTLs cannot,
        // which costs them those few milliseconds).
        let spent = before.elapsed().saturating_sub(run.wall(fault_wait(fault)));
        run.freeze(spent);
        if let Some(note) = result? {
            run.add_note(index, note);
        }
        run.observe(self.env, None, Look::None);
        Ok(())
    }

    fn launch(&mut self, _index: usize, client: &str, program: &Program, background: bool) -> Result<(), String> {
        if background {
            self.run.launch(self.env, client, program, false)?;
            return Ok(());
        }
        let slot = self.run.launch(self.env, client, program, true)?;
        self.run.run_until_done(self.env, slot)
    }

    fn write(&mut self, index: usize, client: &str, token: Option<i64>, value: &str) -> Result<String, String> {
        self.write_under(index, client, None, token, value)
    }

    fn write_under(
        &mut self,
        _index: usize,
        client: &str,
        lock: Option<&str>,
        token: Option<i64>,
        value: &str,
    ) -> Result<String, String> {
        let cid = self.env.session.client(client).map_err(|e| e.to_string())?;
        let accepted = self.run.write(self.env, cid, lock, token, value.to_owned());
        Ok(if accepted { "accepted" } else { "rejected" }.to_owned())
    }

    fn hold(&mut self, _index: usize, client: &str, key: &str, holds: bool) -> Result<(), String> {
        let cid = self.env.session.client(client).map_err(|e| e.to_string())?;
        self.run.belief(self.env, cid, key, holds);
        Ok(())
    }

    /// Core's figures over the real run's own events (requests sent,
    /// beliefs, programs' ends), as the simulator measures its trace.
    fn metrics(&mut self, _index: usize, spec: &MetricsSpec, clients: &[String]) -> Result<Metrics, String> {
        let run = &mut *self.run;
        run.drain(self.env);
        let from = if spec.since_last { run.metrics_from } else { 0 };
        run.metrics_from = run.history.len();
        let ids = clients
            .iter()
            .map(|c| self.env.session.client(c).map_err(|e| e.to_string()))
            .collect::<Result<Vec<u32>, String>>()?;
        Ok(measure_events(&run.history, &ids, from.min(run.history.len())))
    }

    fn end_step(&mut self, _index: usize, last: bool) {
        let run = &mut *self.run;
        // Stretches every overlap still going on to now.
        run.drain(self.env);
        if last {
            // A lesson that ends on a launch still starts it.
            let _ = run.start_enlisted(self.env);
            // An overlap still going on ends with the lesson (lesson 15: A
            // and B both hold): its band stops here.
            run.monitor.stop_ongoing();
        }
    }

    fn now(&self) -> u64 {
        self.run.now_lesson(self.env).max(self.run.last_at)
    }

    fn trace_len(&self) -> usize {
        self.run.emitted
    }

    fn names(&self) -> &Names {
        self.env.session.names()
    }
}
