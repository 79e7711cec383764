//! Every class this backend serves, as one state machine without sockets:
//! a connection's text frame in ([`Hub::handle_text`], with the time and
//! the connection's peer), messages out ([`Out`]), as `real::lab` is the
//! real driver's state machine without its socket. `web::class` pumps each
//! WebSocket through it, delivering each [`Out`] to the sockets named.
//!
//! # Rules held here
//!
//! * A frame is at most [`FOLLOWER_FRAME_MAX`] bytes, or
//!   [`PRESENTER_FRAME_MAX`] once the connection is a class's presenter;
//!   a larger or malformed frame gets an `error` and the connection stays.
//! * `start` only from a loopback peer (the presenter runs the lab);
//!   `join` from anyone, but a peer (an IPv4 address, an IPv6 /64) whose
//!   joins named no class (or were malformed) [`ClassConfig::bad_joins`]
//!   times within a minute is answered `Throttled` until the minute is over.
//! * Every `control` is checked against the class's secret
//!   ([`super::same_secret`]) and must come from the connection that is
//!   the class's presenter; anything else is refused and nothing relayed.
//! * A follower's first answer to the open question counts (judged by
//!   core's one quiz judge, [`judge`], against the reply the presenter's
//!   step got); later ones get the first's verdict again.
//! * The presenter's tally, roster and drill tally are coalesced to at
//!   most one of each per [`FLUSH_EVERY`] (10/s), however fast the room
//!   answers or joins.
//! * What followers are sent (moves, questions, reveals, drills, live
//!   events) is kept in the class's stream, numbered; a follower that
//!   reconnects with `since` gets what it missed that is still kept
//!   (bounded by [`ClassConfig::log_bytes`]), then `joined` with the
//!   class as it is now.
//! * A class whose presenter has neither sent a control nor come or gone
//!   for [`ClassConfig::idle`] ends by itself ([`Hub::tick`]), whether its
//!   page is still connected or not: a tab left open on a projector does
//!   not keep a class (and its join code) alive for ever.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locklab_core::class::{
    clean_name, judge, right_choice, Answer, ClassClientMsg, ClassCode, ClassError, Control, Drill, Member, Position,
    Question, QuestionSummary, ServerSays, Summary, Tally, ANSWER_MAX_CHARS, DEFAULT_MAX_FOLLOWERS, FOLLOWER_FRAME_MAX,
    PRESENTER_FRAME_MAX,
};
use locklab_core::lesson::{Lesson, Step};
use locklab_core::rng::Rng;

pub use log::{Admit, LogEntry, What};

/// A connection's number, given by [`Hub::connect`].
pub type SocketId = u64;

/// The presenter's tally, roster and drill tally: at most one of each per
/// this long (the page redraws a chart; 10/s is smooth).
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// The window [`ClassConfig::bad_joins`] counts in.
const THROTTLE_WINDOW: Duration = Duration::from_secs(60);
/// Peers whose bad joins are remembered at once; past it, a new peer's
/// join is throttled until old windows expire (an attacker with many
/// addresses cannot grow the table without bound).
const THROTTLE_PEERS: usize = 10_000;
/// Questions and drills per class.
const MAX_QUESTIONS: usize = 1000;
/// The reply a question is judged against, and a drill's design, in bytes.
const MAX_REPLY: usize = 16 * 1024;

/// The limits of the class routes (`locklab serve --class-max` …).
#[derive(Clone, Debug)]
pub struct ClassConfig {
    /// Followers per class (`--class-max`).
    pub max_followers: usize,
    /// Classes at once.
    pub max_classes: usize,
    /// A class whose presenter is silent (or gone) this long ends.
    pub idle: Duration,
    /// The page's URL followers open (`--class-url`, or the LAN address);
    /// the join URL is it with `?class=CODE`.
    pub join_base: String,
    /// Joins naming no class, per peer per minute, before `Throttled`.
    pub bad_joins: u32,
    /// The bytes of a class's stream kept for followers that reconnect.
    pub log_bytes: usize,
}

impl Default for ClassConfig {
    fn default() -> Self {
        ClassConfig {
            max_followers: DEFAULT_MAX_FOLLOWERS,
            max_classes: 16,
            idle: Duration::from_secs(2 * 3600),
            join_base: "http://127.0.0.1:8080/".into(),
            bad_joins: 20,
            log_bytes: 4 << 20,
        }
    }
}

/// What the hub asks its sockets to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Out {
    To(SocketId, ServerSays),
    /// One message to many connections (serialised once).
    Many(Vec<SocketId>, ServerSays),
    /// Close this connection (after what was sent to it before).
    Close(SocketId),
}

/// Random numbers the secrets, member ids and codes are drawn from (the
/// OS's, in the server; a seeded sequence in tests).
pub type Entropy = Box<dyn FnMut() -> u64 + Send>;

enum Role {
    None,
    Presenter(ClassCode),
    Follower(ClassCode, String),
}

struct Conn {
    peer: IpAddr,
    role: Role,
    /// The class this connection's last logged entry went to: its `Left`
    /// goes there too, so every instance sees it leave.
    logged: Option<ClassCode>,
}

struct Follower {
    name: Option<String>,
    score: u32,
    conn: Option<SocketId>,
    /// Question id → whether the first answer was right.
    answers: BTreeMap<u32, bool>,
}

struct Asked {
    question: Question,
    reply: String,
    tally: Tally,
    /// Revealed: its right answers are in the followers' scores.
    revealed: bool,
}

struct DrillState {
    drill: Drill,
    /// Member → found a counterexample (first report).
    reports: BTreeMap<String, bool>,
}

struct Class {
    code: ClassCode,
    /// [`super::secret_hash`] of the presenter secret: the secret itself is
    /// only ever in the presenter's page (and in the log as this hash).
    secret_hash: String,
    presenter: Option<SocketId>,
    members: BTreeMap<String, Follower>,
    position: Position,
    questions: Vec<Asked>,
    /// Index into `questions` of the open one.
    open: Option<usize>,
    drills: u32,
    drill: Option<DrillState>,
    /// (stream id, message, its size) of what followers were sent.
    log: VecDeque<(u64, ServerSays, usize)>,
    log_bytes: usize,
    last_id: u64,
    /// When the presenter last spoke or left.
    last_presenter: Instant,
    due_tally: bool,
    due_roster: bool,
    due_drill: bool,
    last_flush: Option<Instant>,
}

struct Window {
    start: Instant,
    bad: u32,
}

/// Every class of this backend and every connection to the class routes.
pub struct Hub {
    cfg: ClassConfig,
    lessons: Arc<Vec<Lesson>>,
    entropy: Entropy,
    classes: HashMap<ClassCode, Class>,
    conns: HashMap<SocketId, Conn>,
    next_conn: SocketId,
    throttle: HashMap<IpAddr, Window>,
    /// This process's name in the class logs ([`log::LogEntry::instance`]).
    instance: String,
    /// The connections of other instances, by (instance, their number):
    /// each is a connection here too (its role, its class), with no socket.
    ghosts: HashMap<(String, SocketId), SocketId>,
    /// The secret a local `start` or `resume` was given, until its entry is
    /// applied and `started` is sent with it.
    secrets: HashMap<SocketId, String>,
    /// The class URLs of the live instances (the store's heartbeat), told
    /// to every page in a class so one whose instance dies reconnects to
    /// another; empty with one instance.
    urls: Vec<String>,
}

fn error(e: ClassError) -> ServerSays {
    ServerSays::Error { message: e.to_string() }
}

/// The throttle's key: an IPv4 address, or an IPv6 address's /64 (one
/// host usually holds a whole /64).
fn throttle_key(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

impl Hub {
    pub fn new(cfg: ClassConfig, lessons: Arc<Vec<Lesson>>, entropy: Entropy) -> Hub {
        Hub {
            cfg,
            lessons,
            entropy,
            classes: HashMap::new(),
            conns: HashMap::new(),
            next_conn: 1,
            throttle: HashMap::new(),
            instance: String::new(),
            ghosts: HashMap::new(),
            secrets: HashMap::new(),
            urls: Vec::new(),
        }
    }

    /// The live instances' class URLs, as the heartbeat last read them.
    pub fn instance_urls(&self) -> &[String] {
        &self.urls
    }

    /// The heartbeat read the live instances' class URLs: when they
    /// changed, every connection in a class is told
    /// ([`ServerSays::Instances`]; a ghost's copy is dropped by the pump).
    pub fn set_instance_urls(&mut self, mut urls: Vec<String>) -> Vec<Out> {
        urls.sort();
        urls.dedup();
        if urls == self.urls {
            return Vec::new();
        }
        self.urls = urls;
        let conns: Vec<SocketId> = self
            .conns
            .iter()
            .filter(|(_, c)| !matches!(c.role, Role::None))
            .map(|(id, _)| *id)
            .collect();
        if conns.is_empty() {
            return Vec::new();
        }
        vec![Out::Many(conns, self.instances())]
    }

    fn instances(&self) -> ServerSays {
        ServerSays::Instances {
            urls: self.urls.clone(),
        }
    }

    pub fn config(&self) -> &ClassConfig {
        &self.cfg
    }

    /// Classes running now.
    pub fn classes(&self) -> usize {
        self.classes.len()
    }

    /// A new connection from `peer`.
    pub fn connect(&mut self, peer: IpAddr) -> SocketId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(
            id,
            Conn {
                peer,
                role: Role::None,
                logged: None,
            },
        );
        id
    }

    /// `conn` closed (or was dropped for being slow): its class notes it.
    pub fn disconnect(&mut self, conn: SocketId, now: Instant) -> Vec<Out> {
        let Some(c) = self.conns.remove(&conn) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        match c.role {
            Role::None => {}
            Role::Presenter(code) => {
                if let Some(class) = self.classes.get_mut(&code) {
                    if class.presenter == Some(conn) {
                        class.presenter = None;
                        class.last_presenter = now;
                    }
                }
            }
            Role::Follower(code, member) => {
                if let Some(class) = self.classes.get_mut(&code) {
                    if let Some(f) = class.members.get_mut(&member).filter(|f| f.conn == Some(conn)) {
                        f.conn = None;
                        class.due_roster = true;
                        class.due_tally |= class.open.is_some();
                        class.flush(now, &mut out);
                    }
                }
            }
        }
        out
    }

    /// The presenter's coalesced updates that are due, idle classes ended,
    /// expired throttle windows forgotten. Called every [`FLUSH_EVERY`] or so.
    pub fn tick(&mut self, now: Instant) -> Vec<Out> {
        let mut out = Vec::new();
        let idle = self.cfg.idle;
        let ended: Vec<ClassCode> = self
            .classes
            .values()
            .filter(|c| now.saturating_duration_since(c.last_presenter) >= idle)
            .map(|c| c.code.clone())
            .collect();
        for code in ended {
            self.end(&code, &mut out);
        }
        for class in self.classes.values_mut() {
            class.flush(now, &mut out);
        }
        self.throttle
            .retain(|_, w| now.saturating_duration_since(w.start) < THROTTLE_WINDOW);
        out
    }

    /// One text frame from `conn`, on a hub that is the only instance:
    /// admitted ([`Hub::admit_text`]) and applied at once ([`Hub::settle`]).
    pub fn handle_text(&mut self, conn: SocketId, text: &str, now: Instant) -> Vec<Out> {
        let admitted = self.admit_text(conn, text, now);
        self.settle(admitted, now)
    }

    /// One message from `conn`, on a hub that is the only instance.
    pub fn handle(&mut self, conn: SocketId, msg: ClassClientMsg, now: Instant) -> Vec<Out> {
        let admitted = self.admit(conn, msg, now);
        self.settle(admitted, now)
    }

    /// One text frame from `conn`, read and checked against what this hub
    /// knows, before any class changes ([`Hub::admit`]).
    pub fn admit_text(&mut self, conn: SocketId, text: &str, now: Instant) -> Admit {
        let Some(c) = self.conns.get(&conn) else {
            return Admit::Done(Vec::new());
        };
        let (presenter, roleless) = (matches!(c.role, Role::Presenter(_)), matches!(c.role, Role::None));
        let max = if presenter {
            PRESENTER_FRAME_MAX
        } else {
            FOLLOWER_FRAME_MAX
        };
        if text.len() > max {
            let e = ClassError::TooLarge { size: text.len(), max };
            return Admit::Done(vec![Out::To(conn, error(e))]);
        }
        match serde_json::from_str::<ClassClientMsg>(text) {
            Ok(msg) => self.admit(conn, msg, now),
            Err(e) => {
                if roleless {
                    // A join the server cannot read counts as a bad one.
                    let peer = c.peer;
                    self.bad_attempt(peer, now);
                }
                Admit::Done(vec![Out::To(conn, error(ClassError::Malformed(e.to_string())))])
            }
        }
    }

    fn role_free(&self, conn: SocketId) -> Result<&Conn, ClassError> {
        match self.conns.get(&conn) {
            Some(c @ Conn { role: Role::None, .. }) => Ok(c),
            Some(_) => Err(ClassError::AlreadyInClass),
            None => Err(ClassError::Ended),
        }
    }

    fn random_hex(&mut self, words: usize) -> String {
        (0..words).map(|_| format!("{:016x}", (self.entropy)())).collect()
    }

    /// A `start`: from a loopback peer, while fewer than
    /// [`ClassConfig::max_classes`] run here; a fresh code and secret, the
    /// secret kept for `started` and only its hash logged.
    fn admit_start(&mut self, conn: SocketId) -> Result<(ClassCode, String), ClassError> {
        if !self.role_free(conn)?.peer.to_canonical().is_loopback() {
            return Err(ClassError::LoopbackOnly);
        }
        if self.classes.len() >= self.cfg.max_classes {
            return Err(ClassError::TooManyClasses(self.cfg.max_classes));
        }
        let code = loop {
            let code = ClassCode::generate(&mut Rng::new((self.entropy)()));
            if !self.classes.contains_key(&code) {
                break code;
            }
        };
        let secret = self.random_hex(2);
        let hash = super::secret_hash(&secret);
        self.secrets.insert(conn, secret);
        Ok((code, hash))
    }

    fn start(&mut self, conn: SocketId, code: &ClassCode, secret_hash: String, now: Instant, out: &mut Vec<Out>) {
        if self.classes.contains_key(code) {
            return;
        }
        self.classes
            .insert(code.clone(), Class::new(code.clone(), secret_hash, conn, now));
        self.set_role(conn, Role::Presenter(code.clone()));
        if let Some(secret) = self.secrets.remove(&conn) {
            out.push(Out::To(conn, self.started(code, secret)));
            if !self.urls.is_empty() {
                out.push(Out::To(conn, self.instances()));
            }
        }
    }

    fn started(&self, code: &ClassCode, secret: String) -> ServerSays {
        let join_url = join_url(&self.cfg.join_base, code);
        ServerSays::Started {
            code: code.clone(),
            secret,
            qr_svg: super::qr_svg(&join_url),
            join_url,
        }
    }

    fn set_role(&mut self, conn: SocketId, role: Role) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.role = role;
        }
    }

    fn resume(
        &mut self,
        conn: SocketId,
        code: &ClassCode,
        secret_hash: &str,
        now: Instant,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        let peer = self.role_free(conn)?.peer;
        let Some(class) = self.classes.get_mut(code) else {
            self.bad_attempt(peer, now);
            return Err(ClassError::NoSuchClass(code.to_string()));
        };
        if !super::same_secret(secret_hash, &class.secret_hash) {
            self.bad_attempt(peer, now);
            return Err(ClassError::NotPresenter);
        }
        let old = class.presenter.replace(conn);
        class.last_presenter = now;
        class.due_roster = true;
        class.due_tally = class.open.is_some();
        class.due_drill = class.drill.is_some();
        class.last_flush = None;
        if let Some(old) = old {
            let message = "another page resumed this class as its presenter".to_owned();
            out.push(Out::To(old, ServerSays::Error { message }));
            out.push(Out::Close(old));
            self.set_role(old, Role::None);
        }
        self.set_role(conn, Role::Presenter(code.clone()));
        if let Some(secret) = self.secrets.remove(&conn) {
            out.push(Out::To(conn, self.started(code, secret)));
            if !self.urls.is_empty() {
                out.push(Out::To(conn, self.instances()));
            }
        }
        if let Some(class) = self.classes.get_mut(code) {
            class.flush(now, out);
        }
        Ok(())
    }

    /// Is `peer` throttled? The seconds until it may try again.
    fn throttled(&self, peer: IpAddr, now: Instant) -> Option<u64> {
        let key = throttle_key(peer);
        match self.throttle.get(&key) {
            Some(w) if w.bad >= self.cfg.bad_joins => {
                let left = THROTTLE_WINDOW.saturating_sub(now.saturating_duration_since(w.start));
                (!left.is_zero()).then(|| left.as_secs().max(1))
            }
            Some(_) => None,
            None => (self.throttle.len() >= THROTTLE_PEERS).then_some(THROTTLE_WINDOW.as_secs()),
        }
    }

    fn bad_attempt(&mut self, peer: IpAddr, now: Instant) {
        let key = throttle_key(peer);
        if self.throttle.len() >= THROTTLE_PEERS && !self.throttle.contains_key(&key) {
            self.throttle
                .retain(|_, w| now.saturating_duration_since(w.start) < THROTTLE_WINDOW);
            if self.throttle.len() >= THROTTLE_PEERS {
                return;
            }
        }
        let w = self.throttle.entry(key).or_insert(Window { start: now, bad: 0 });
        if now.saturating_duration_since(w.start) >= THROTTLE_WINDOW {
            *w = Window { start: now, bad: 0 };
        }
        w.bad = w.bad.saturating_add(1);
    }

    #[allow(clippy::too_many_arguments)]
    fn join(
        &mut self,
        conn: SocketId,
        code: &ClassCode,
        name: Option<String>,
        member: Option<String>,
        (fresh, since): (String, Option<String>),
        now: Instant,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        // The throttle was checked when the join was admitted: here, where
        // every instance applies it alike, only the class decides.
        self.role_free(conn)?;
        let class = self
            .classes
            .get_mut(code)
            .ok_or_else(|| ClassError::NoSuchClass(code.to_string()))?;
        let name = name.as_deref().and_then(clean_name);
        let mut replaced = None;
        let member = match member.filter(|m| class.members.contains_key(m)) {
            Some(m) => {
                let f = class.members.get_mut(&m).ok_or(ClassError::Ended)?;
                replaced = f.conn.replace(conn);
                if let Some(old) = replaced {
                    out.push(Out::Close(old));
                }
                if name.is_some() {
                    f.name = name;
                }
                m
            }
            None => {
                if class.members.len() >= self.cfg.max_followers {
                    return Err(ClassError::Full(self.cfg.max_followers));
                }
                let f = Follower {
                    name,
                    score: 0,
                    conn: Some(conn),
                    answers: BTreeMap::new(),
                };
                class.members.insert(fresh.clone(), f);
                fresh
            }
        };
        // What it missed, then where the class is now.
        if let Some(since) = since.and_then(|s| s.parse::<u64>().ok()) {
            for (_, msg, _) in class.log.iter().filter(|(id, _, _)| *id > since) {
                out.push(Out::To(conn, msg.clone()));
            }
        }
        out.push(Out::To(conn, class.joined(&member)));
        if !self.urls.is_empty() {
            out.push(Out::To(
                conn,
                ServerSays::Instances {
                    urls: self.urls.clone(),
                },
            ));
        }
        class.due_roster = true;
        class.due_tally |= class.open.is_some();
        class.flush(now, out);
        if let Some(old) = replaced {
            self.set_role(old, Role::None);
        }
        self.set_role(conn, Role::Follower(code.clone(), member));
        Ok(())
    }

    fn control(
        &mut self,
        conn: SocketId,
        secret_hash: &str,
        control: Control,
        now: Instant,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        let code = match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Presenter(code)) => code.clone(),
            _ => return Err(ClassError::NotPresenter),
        };
        let class = self.classes.get_mut(&code).ok_or(ClassError::Ended)?;
        if class.presenter != Some(conn) || !super::same_secret(secret_hash, &class.secret_hash) {
            return Err(ClassError::NotPresenter);
        }
        class.last_presenter = now;
        match control {
            Control::Move { position } => {
                class.position = position.clone();
                class.relay(|id| ServerSays::Moved { id, position }, self.cfg.log_bytes, out);
            }
            Control::Ask { lesson, step, reply } => {
                let step_of = find_step(&self.lessons, &lesson, step)?;
                class.ask(lesson, step, reply, step_of, self.cfg.log_bytes, out)?;
            }
            Control::Reveal { question } => {
                let step = class.question(question).and_then(|q| {
                    find_step(&self.lessons, &q.question.lesson, q.question.step).map(|s| (s, q.reply.clone()))
                })?;
                class.reveal(question, step, self.cfg.log_bytes, out);
            }
            Control::Drill { design } => class.push_drill(design, self.cfg.log_bytes, out)?,
            Control::Live { events } => class.relay(|id| ServerSays::Live { id, events }, self.cfg.log_bytes, out),
            Control::End => {
                self.end(&code, out);
                return Ok(());
            }
        }
        class.flush(now, out);
        Ok(())
    }

    /// End class `code`: everyone gets the summary, followers are closed.
    fn end(&mut self, code: &ClassCode, out: &mut Vec<Out>) {
        let Some(class) = self.classes.remove(code) else { return };
        let summary = class.summary();
        let mut to = class.followers();
        to.extend(class.presenter);
        out.push(Out::Many(to.clone(), ServerSays::Ended { summary }));
        for &conn in &to {
            self.set_role(conn, Role::None);
            if Some(conn) != class.presenter {
                out.push(Out::Close(conn));
            }
        }
        self.forget_ghosts(&to);
    }

    fn follower_of(&self, conn: SocketId) -> Result<(ClassCode, String), ClassError> {
        match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Follower(code, member)) => Ok((code.clone(), member.clone())),
            _ => Err(ClassError::Malformed("join a class first".into())),
        }
    }

    fn answer(
        &mut self,
        conn: SocketId,
        question: u32,
        answer: &Answer,
        now: Instant,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        let (code, member) = self.follower_of(conn)?;
        let class = self.classes.get_mut(&code).ok_or(ClassError::Ended)?;
        let open = class.open.and_then(|i| class.questions.get(i));
        let asked = open
            .filter(|a| a.question.id == question)
            .ok_or(ClassError::NoOpenQuestion)?;
        match answer {
            Answer::Choice(i) if *i >= asked.question.choices => return Err(ClassError::NoSuchChoice),
            Answer::Text(t) if t.chars().count() > ANSWER_MAX_CHARS => {
                return Err(ClassError::TooLarge {
                    size: t.chars().count(),
                    max: ANSWER_MAX_CHARS,
                })
            }
            _ => {}
        }
        let step = find_step(&self.lessons, &asked.question.lesson, asked.question.step)?;
        let right = judge(step, answer, &asked.reply)?;
        let f = class.members.get_mut(&member).ok_or(ClassError::Ended)?;
        // The first answer counts; a second changes nothing.
        if let std::collections::btree_map::Entry::Vacant(first) = f.answers.entry(question) {
            first.insert(right);
            let tally = &mut class.questions[class.open.unwrap_or_default()].tally;
            let slot = match answer {
                Answer::Choice(i) => *i,
                Answer::Text(_) => usize::from(!right),
            };
            if let Some(n) = tally.counts.get_mut(slot) {
                *n += 1;
            }
            tally.answered += 1;
            tally.right += u32::from(right);
            class.due_tally = true;
        }
        // The verdict waits for the reveal; so does the score.
        let score = class.members.get(&member).map_or(0, |f| f.score);
        out.push(Out::To(
            conn,
            ServerSays::Answered {
                question,
                right: None,
                score,
            },
        ));
        class.flush(now, out);
        Ok(())
    }

    /// A drill report; the presenter's tally goes out with the next tick
    /// (no socket waits for it).
    fn drill_result(&mut self, conn: SocketId, drill: u32, found: bool) -> Result<(), ClassError> {
        let (code, member) = self.follower_of(conn)?;
        let class = self.classes.get_mut(&code).ok_or(ClassError::Ended)?;
        let d = class
            .drill
            .as_mut()
            .filter(|d| d.drill.id == drill)
            .ok_or_else(|| ClassError::Malformed(format!("no drill {drill} is open")))?;
        d.reports.entry(member).or_insert(found);
        class.due_drill = true;
        Ok(())
    }
}

fn join_url(base: &str, code: &ClassCode) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}class={code}")
}

/// Step `step` (0-based) of built-in lesson `lesson`, which must have a quiz.
fn find_step<'l>(lessons: &'l [Lesson], lesson: &str, step: usize) -> Result<&'l Step, ClassError> {
    lessons
        .iter()
        .find(|l| l.id == lesson)
        .and_then(|l| l.steps.get(step))
        .filter(|s| s.quiz.is_some())
        .ok_or_else(|| ClassError::Malformed(format!("lesson {lesson:?} has no quiz at step {}", step + 1)))
}

mod log;
mod room;
#[cfg(test)]
mod tests;
