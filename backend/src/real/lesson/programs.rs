//! Client programs on the wall clock: core's sans-IO machines fed the
//! real servers' replies, their timers fired on the compressed clock, and
//! the runner as their [`ProgramHost`].

use super::*;

/// The longest a foreground program may run before the runner gives up on
/// it (wall time): a program that never finishes is a lesson bug, and a
/// step must not hang.
pub(super) const PROGRAM_DEADLINE: Duration = Duration::from_secs(60);

/// A client program being driven against the real servers.
pub(super) struct Running {
    /// Its place in the runner's programs.
    pub(super) slot: usize,
    pub(super) client: String,
    pub(super) cid: u32,
    pub(super) machine: Machine,
    pub(super) rng: Rng,
    pub(super) inbox: VecDeque<Input>,
    /// Timers by tag, due at a wall instant.
    pub(super) timers: BTreeMap<u32, Instant>,
    /// Requests the lab dropped (a cut link): `Failed` at the client's
    /// timeout.
    pub(super) fails: Vec<(u32, Instant)>,
    /// Paused (a GC pause, a frozen VM) until then: its timers fall due
    /// meanwhile and fire late, all at once, when it runs again — as in
    /// the simulator, where a paused client handles nothing.
    pub(super) paused_until: Option<Instant>,
    pub(super) done: bool,
}

impl Running {
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        if self.done {
            return None;
        }
        let due = self
            .timers
            .values()
            .chain(self.fails.iter().map(|(_, t)| t))
            .min()
            .copied();
        match self.paused_until {
            Some(resume) => due.map(|d| d.max(resume)),
            None => due,
        }
    }
}

/// A pause without an end lasts until the lesson resumes the client; far
/// enough that it never ends by itself.
pub(super) const PAUSED_FOR_GOOD: Duration = Duration::from_secs(365 * 24 * 3600);

impl RealLessonRun {
    /// Launch `program` for `client`: started at once, or (`start` false)
    /// enlisted to start with the other background programs launched next
    /// to it ([`RealLessonRun::start_enlisted`]).
    pub(super) fn launch(
        &mut self,
        env: &mut RealEnv<'_>,
        client: &str,
        program: &Program,
        start: bool,
    ) -> Result<usize, String> {
        refuse_crashed(&self.crashed, client)?;
        let nodes = env.topology.nodes().len() as u32;
        let machine = Machine::new(program, nodes).map_err(|e| e.to_string())?;
        let cid = env.session.client(client).map_err(|e| e.to_string())?;
        for k in program.lock_keys() {
            self.locks.add(&k);
            self.monitor.watch_key(&k);
        }
        // The simulator's stream for this client, so tokens and jitter
        // are drawn the same way.
        let rng = Rng::derive(self.lesson.seed, 1_000 + u64::from(cid));
        let mut inbox = VecDeque::new();
        inbox.push_back(Input::Start);
        let slot = self.programs.len();
        self.programs.push(Some(Running {
            slot,
            client: client.to_owned(),
            cid,
            machine,
            rng,
            inbox,
            timers: BTreeMap::new(),
            fails: Vec::new(),
            paused_until: None,
            done: false,
        }));
        if start {
            self.feed(env, slot)?;
        } else {
            self.crew.enlisted.push(slot);
        }
        Ok(slot)
    }

    /// Hand program `slot` its pending inputs, carrying out its actions
    /// (whose replies queue more inputs) until it has nothing left to do.
    pub(super) fn feed(&mut self, env: &mut RealEnv<'_>, slot: usize) -> Result<(), String> {
        let Some(mut p) = self.programs.get_mut(slot).and_then(Option::take) else {
            return Ok(());
        };
        let nodes = env.topology.nodes().len() as u32;
        let mut result = Ok(());
        while let Some(input) = p.inbox.pop_front() {
            if p.done {
                break;
            }
            let mut out = Vec::new();
            {
                let now = EPOCH_MS + self.now_lesson(env);
                let mut cx = Ctx::new(now, &mut p.rng, &p.client, nodes, &mut out);
                p.machine.handle(&mut cx, input);
            }
            let mut host = Host { run: self, env };
            for action in out {
                if let Err(e) = host::apply(&mut host, &mut p, action) {
                    result = Err(e);
                }
            }
        }
        self.programs[slot] = Some(p);
        result
    }

    /// Fire every timer and timeout that is due, in every program.
    pub(super) fn fire_due(&mut self, env: &mut RealEnv<'_>) -> Result<(), String> {
        for slot in 0..self.programs.len() {
            let now = Instant::now();
            let Some(p) = self.programs[slot].as_mut() else {
                continue;
            };
            if p.done || p.paused_until.is_some_and(|t| t > now) {
                continue;
            }
            if p.paused_until.take().is_some() {
                let cid = p.cid;
                self.record(env, None, Actor::Client(cid), EventKind::Resumed);
            }
            let Some(p) = self.programs[slot].as_mut() else {
                continue;
            };
            let mut due: Vec<(Instant, Input)> = Vec::new();
            p.timers.retain(|&tag, &mut t| {
                let fire = t <= now;
                if fire {
                    due.push((t, Input::Timer { tag }));
                }
                !fire
            });
            let mut gave_up = Vec::new();
            p.fails.retain(|&(tag, t)| {
                let fire = t <= now;
                if fire {
                    due.push((t, Input::Failed { tag }));
                    gave_up.push(tag);
                }
                !fire
            });
            let cid = p.cid;
            for tag in gave_up {
                // A request still on the wire: the client stops waiting.
                if let Some((Some(req), node)) = self.crew.give_up(slot, tag) {
                    self.record(env, None, Actor::Client(cid), EventKind::TimedOut { req, node });
                }
            }
            let Some(p) = self.programs[slot].as_mut() else {
                continue;
            };
            due.sort_by_key(|(t, _)| *t);
            p.inbox.extend(due.into_iter().map(|(_, i)| i));
            if !p.inbox.is_empty() {
                self.feed(env, slot)?;
            }
        }
        Ok(())
    }

    /// Serve the programs: what is due now (`until: None`), or everything
    /// that falls due until `until` (a wait step), sleeping in between.
    pub(super) fn pump(&mut self, env: &mut RealEnv<'_>, until: Option<Instant>) -> Result<(), String> {
        loop {
            self.land_ready(env)?;
            self.fire_due(env)?;
            let now = Instant::now();
            let next = self.next_timer();
            let Some(u) = until else {
                if next.is_some_and(|d| d <= now) {
                    continue;
                }
                return Ok(());
            };
            if now >= u {
                return Ok(());
            }
            let wake = next.map_or(u, |d| d.min(u));
            self.await_landing(env, wake)?;
        }
    }

    /// Serve every program until the one in `slot` has finished.
    pub(super) fn run_until_done(&mut self, env: &mut RealEnv<'_>, slot: usize) -> Result<(), String> {
        let deadline = Instant::now() + PROGRAM_DEADLINE;
        loop {
            self.land_ready(env)?;
            self.fire_due(env)?;
            let Some(p) = self.programs.get(slot).and_then(Option::as_ref) else {
                return Ok(());
            };
            if p.done {
                return Ok(());
            }
            let next = self.next_timer();
            if next.is_none() && !self.crew.busy() {
                return Err(format!(
                    "{}'s program is waiting for something that will never come",
                    p.client
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{}'s program did not finish within {} s",
                    p.client,
                    PROGRAM_DEADLINE.as_secs()
                ));
            }
            self.await_landing(env, next.map_or(deadline, |d| d.min(deadline)))?;
        }
    }
}

/// The real servers as the host of client programs: a request runs on the
/// real node at once (loopback answers within microseconds), timers are
/// wall instants on the compressed clock, a cut link drops the request so
/// the client sees its timeout, and a dead node refuses it at once.
pub(super) struct Host<'r, 'e, 'b> {
    run: &'r mut RealLessonRun,
    env: &'e mut RealEnv<'b>,
}

impl ProgramHost for Host<'_, '_, '_> {
    type Client = Running;
    type Error = String;

    fn master(&self) -> u32 {
        self.run.master
    }

    fn send(
        &mut self,
        p: &mut Running,
        tag: u32,
        node: u32,
        commands: Vec<Argv>,
        timeout_ms: Option<u64>,
    ) -> Result<(), String> {
        let (run, env) = (&mut *self.run, &mut *self.env);
        if run.cut.contains(&(p.client.clone(), node)) {
            let shown = commands
                .iter()
                .map(|c| c.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect())
                .collect();
            run.record_cut(env, p.cid, node, shown);
            if let Some(t) = timeout_ms {
                p.fails.push((tag, Instant::now() + run.wall(t)));
            }
            return Ok(());
        }
        if let [argv] = commands.as_slice() {
            if env.session.async_ready() {
                // Its own connection, on its own thread: concurrent with
                // every other program's requests. Its timeout is armed on a
                // link the lab slowed: on plain loopback the reply is there
                // within microseconds, and a timeout compressed by the
                // factor would only time the machine.
                let timeout = timeout_ms
                    .filter(|_| env.session.has_delay(&p.client, node))
                    .map(|t| Instant::now() + run.wall(t));
                return run.take_off(env, p, tag, node, argv, timeout);
            }
        }
        let mut replies = Vec::new();
        for argv in &commands {
            match run.exec(env, &p.client, node, argv, None)? {
                Some(r) => replies.push(r),
                None => {
                    // A dead node: connection refused, at once.
                    p.inbox.push_back(Input::Failed { tag });
                    return Ok(());
                }
            }
        }
        p.inbox.push_back(Input::Reply { tag, replies });
        Ok(())
    }

    fn timer(&mut self, p: &mut Running, tag: u32, after_ms: u64) {
        p.timers.insert(tag, Instant::now() + self.run.wall(after_ms));
    }

    fn cancel(&mut self, p: &mut Running, tag: u32) {
        p.timers.remove(&tag);
    }

    fn write(&mut self, p: &mut Running, token: Option<i64>, value: String) {
        self.run.write(self.env, p.cid, None, token, value);
    }

    fn believe(&mut self, p: &mut Running, key: &str, holds: bool) {
        self.run.belief(self.env, p.cid, key, holds);
    }

    fn note(&mut self, p: &mut Running, text: String) {
        self.run
            .record(self.env, None, Actor::Client(p.cid), EventKind::Note { text });
    }

    fn done(&mut self, p: &mut Running) {
        p.done = true;
        self.run.record(self.env, None, Actor::Client(p.cid), EventKind::Done);
    }
}
