//! Class mode as the page holds it (sans-IO): the presenter's class (code,
//! join URL, roster, the live tally) or a follower's place in one
//! (following or looking around, the open question, its answer, the
//! reveal, its score), the link's reconnect schedule, and the frames to
//! send. The protocol's types are core's ([`locklab_core::class`]); the
//! socket is [`crate::socket`] and the glue [`crate::hooks`]'s `use_class`.
//!
//! A follower never receives a timeline: on each move it replays the
//! lesson to the presenter's [`Position`] with its own engine, which the
//! reducer does when [`Class::receive`] says [`Follow::Goto`]. Looking
//! around (any move of its own) stops that until "follow again".

use locklab_core::class::{
    Answer, ClassClientMsg, ClassCode, Control, Drill, Member, Position, Question, ServerSays, Summary, Tally,
};
use locklab_core::trace::Event;
use serde::{Deserialize, Serialize};

use crate::driver::real::SocketState;

/// The `sessionStorage` key a class's page keeps what a reload needs
/// (the presenter's secret, a follower's member id and stream id).
pub const STORAGE_KEY: &str = "locklab.class";

/// Relayed events a follower keeps of the presenter's real run.
pub const LIVE_MAX: usize = 5_000;

/// How long a follower (or presenter) waits before reconnect `attempt`
/// (1, 2, …): 1 s, 2 s, 4 s, 8 s, then 15 s — a room of phones coming
/// back from a dropped Wi-Fi spreads out instead of arriving at once.
pub fn rejoin_delay_ms(attempt: u32) -> u32 {
    1_000u32
        .saturating_mul(1 << attempt.saturating_sub(1).min(4))
        .min(15_000)
}

/// This page's own class socket (`ws://host/api/class/ws`, `wss:` under
/// https), as the reducer's reconnect rotation names it; empty off the
/// browser (native tests). Here, not in `socket`, which depends on the
/// reducer's module.
pub fn class_home() -> String {
    if !cfg!(target_arch = "wasm32") {
        return String::new();
    }
    let Some(loc) = web_sys::window().map(|w| w.location()) else {
        return String::new();
    };
    let scheme = if loc.protocol().ok().as_deref() == Some("https:") {
        "wss"
    } else {
        "ws"
    };
    loc.host()
        .map(|h| format!("{scheme}://{h}/api/class/ws"))
        .unwrap_or_default()
}

/// What a WebSocket reports ([`crate::socket`]'s, for a class and, as
/// a [`crate::state::RealInput`], for the real driver).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketEvent {
    Opened,
    Message(String),
    Closed(String),
}

/// Who this page is in the class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ClassRole {
    /// Holds the secret; `code` and `secret` are known once `Started` came.
    Presenter {
        code: Option<ClassCode>,
        secret: Option<String>,
        join_url: String,
    },
    /// Joined by code; `member` and `since` once `Joined` came.
    Follower {
        code: ClassCode,
        name: Option<String>,
        member: Option<String>,
        since: Option<String>,
    },
}

/// The open question as this page sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    Open(Question),
    /// A follower answered it (once).
    Answered(Question, Answer),
    /// The answer and the distribution, with this follower's answer and
    /// verdict when it gave one.
    Revealed {
        question: Question,
        tally: Tally,
        right_choice: Option<usize>,
        mine: Option<Answer>,
        right: Option<bool>,
    },
}

impl Ask {
    pub fn question(&self) -> &Question {
        match self {
            Ask::Open(q) | Ask::Answered(q, _) | Ask::Revealed { question: q, .. } => q,
        }
    }
}

/// What the reducer does with a follower's page after a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Replay to the presenter's position.
    Goto(Position),
}

/// Follower: the "break my lock" drill the presenter pushed, and what
/// this page's explorer made of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowerDrill {
    pub drill: Drill,
    /// Once searched: whether it found a counterexample, in how many
    /// schedules (sent to the presenter once).
    pub result: Option<(bool, u64)>,
}

/// Presenter: the room's reports on the drill pushed last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrillBoard {
    /// The design pushed (as `?explore=` names it).
    pub design: String,
    /// Followers who reported, of `of` present.
    pub reported: u32,
    pub of: u32,
    /// Who found a counterexample, as the server names them.
    pub found: Vec<String>,
}

/// A class, from this page's side.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    pub role: ClassRole,
    pub link: SocketState,
    /// The presenter's QR code of the join URL, as the server drew it (SVG).
    pub qr_svg: String,
    /// Presenter: the followers.
    pub roster: Vec<Member>,
    /// Presenter: the open question's answers so far.
    pub tally: Option<Tally>,
    /// Presenter: who has answered the open question (as the server names
    /// them, [`Member::shown`]).
    pub answered_by: Vec<String>,
    pub ask: Option<Ask>,
    /// Follower: where the presenter is.
    pub presenter_at: Position,
    /// Follower: replaying the presenter's moves (not looking around).
    pub following: bool,
    pub score: u32,
    /// Follower: the presenter's real run, as relayed.
    pub live: Vec<Event>,
    /// Presenter: where the page is, the position last sent, and how many
    /// of the real run's events were.
    here: Option<Position>,
    sent: Option<Position>,
    live_sent: usize,
    /// Presenter: the step asked, until the server numbers the question.
    asking: Option<(String, usize)>,
    pub summary: Option<Summary>,
    /// The last error the server sent.
    pub error: Option<String>,
    /// Follower: the drill pushed last.
    pub drill: Option<FollowerDrill>,
    /// Presenter: the drill pushed last and the room's reports.
    pub board: Option<DrillBoard>,
    /// The class sockets of the instances serving the class, as the
    /// server advertised them, and the one this page is on (none: its own).
    instances: Vec<String>,
    socket: Option<String>,
    outbox: Vec<String>,
}

fn frame(m: &ClassClientMsg) -> String {
    serde_json::to_string(m).unwrap_or_default()
}

impl Class {
    fn new(role: ClassRole) -> Class {
        Class {
            role,
            link: SocketState::Connecting { attempt: 0 },
            qr_svg: String::new(),
            roster: Vec::new(),
            tally: None,
            answered_by: Vec::new(),
            ask: None,
            presenter_at: Position::default(),
            following: true,
            score: 0,
            live: Vec::new(),
            here: None,
            sent: None,
            live_sent: 0,
            asking: None,
            summary: None,
            error: None,
            drill: None,
            board: None,
            instances: Vec::new(),
            socket: None,
            outbox: Vec::new(),
        }
    }

    /// A new class, started by this page once the socket opens.
    pub fn start() -> Class {
        Class::new(ClassRole::Presenter {
            code: None,
            secret: None,
            join_url: String::new(),
        })
    }

    /// A follower joining `code`.
    pub fn join(code: ClassCode, name: Option<String>) -> Class {
        Class::new(ClassRole::Follower {
            code,
            name: name.and_then(|n| locklab_core::class::clean_name(&n)),
            member: None,
            since: None,
        })
    }

    /// The class a reload finds in `sessionStorage` ([`Class::saved`]):
    /// the presenter resumes with its secret, a follower rejoins as the
    /// same member from the last stream id it saw.
    pub fn restore(saved: &str) -> Option<Class> {
        let role: ClassRole = serde_json::from_str(saved).ok()?;
        match &role {
            ClassRole::Presenter { code, secret, .. } if code.is_none() || secret.is_none() => None,
            _ => Some(Class::new(role)),
        }
    }

    /// What a reload needs, for `sessionStorage`; `None` once the class ended.
    pub fn saved(&self) -> Option<String> {
        self.summary
            .is_none()
            .then(|| serde_json::to_string(&self.role).unwrap_or_default())
    }

    /// Follower: the seed its choices are shuffled by
    /// (`Quiz::choice_order`): the class code and the member id, so the
    /// followers of one room see different orders and a reload (the same
    /// member) the same one. The answer sent is the choice's own index.
    pub fn choice_seed(&self) -> u64 {
        match &self.role {
            ClassRole::Follower { code, member, .. } => {
                locklab_core::rng::Rng::seed_of(&format!("{code}/{}", member.as_deref().unwrap_or_default()))
            }
            ClassRole::Presenter { .. } => 0,
        }
    }

    pub fn is_presenter(&self) -> bool {
        matches!(self.role, ClassRole::Presenter { .. })
    }

    pub fn code(&self) -> Option<&ClassCode> {
        match &self.role {
            ClassRole::Presenter { code, .. } => code.as_ref(),
            ClassRole::Follower { code, .. } => Some(code),
        }
    }

    /// Follower: the timeline shows the presenter's relayed real run.
    pub fn shows_live(&self) -> bool {
        !self.is_presenter()
            && self.following
            && self.presenter_at.driver == locklab_core::class::ClassDriver::Real
            && !self.live.is_empty()
    }

    /// Followers connected now.
    pub fn joined(&self) -> usize {
        self.roster.iter().filter(|m| m.connected).count()
    }

    /// The socket opened: introduce this page (start, resume or join), and
    /// as presenter say again where it is.
    pub fn opened(&mut self) {
        self.link = SocketState::Open;
        self.error = None;
        let hello = match &self.role {
            ClassRole::Presenter {
                code: Some(code),
                secret: Some(secret),
                ..
            } => ClassClientMsg::Resume {
                code: code.clone(),
                secret: secret.clone(),
            },
            ClassRole::Presenter { .. } => ClassClientMsg::Start,
            ClassRole::Follower {
                code,
                name,
                member,
                since,
            } => ClassClientMsg::Join {
                code: code.clone(),
                name: name.clone(),
                member: member.clone(),
                since: since.clone(),
            },
        };
        self.outbox.push(frame(&hello));
        self.sent = None;
        self.send_move();
    }

    /// The socket closed; the page reconnects after [`rejoin_delay_ms`],
    /// to the next instance serving the class ([`Class::socket_url`]).
    pub fn lost(&mut self, reason: String, home: &str) {
        let attempt = match &self.link {
            SocketState::Connecting { attempt } | SocketState::Lost { attempt, .. } => attempt + 1,
            SocketState::Open => 1,
        };
        self.link = SocketState::Lost { reason, attempt };
        let mut candidates = vec![home.to_owned()];
        for url in &self.instances {
            if !candidates.contains(url) {
                candidates.push(url.clone());
            }
        }
        let current = self.socket.as_deref().unwrap_or(home);
        self.socket = locklab_core::class::reconnect_url(&candidates, current)
            .filter(|u| u.as_str() != home)
            .cloned();
    }

    /// The class socket to open: this page's own (`home`), or after a loss
    /// the next live instance's, in turn.
    pub fn socket_url(&self, home: &str) -> String {
        self.socket.clone().unwrap_or_else(|| home.to_owned())
    }

    /// A reconnect is under way.
    pub fn connecting(&mut self) {
        if let SocketState::Lost { attempt, .. } = self.link {
            self.link = SocketState::Connecting { attempt };
        }
    }

    /// Whether the link should be (re)opened at all: not once the class ended.
    pub fn wants_link(&self) -> bool {
        self.summary.is_none()
    }

    /// The frames to send, oldest first (sent only while the link is open).
    pub fn take_outbox(&mut self) -> Vec<String> {
        if self.link == SocketState::Open {
            std::mem::take(&mut self.outbox)
        } else {
            Vec::new()
        }
    }

    fn control(&mut self, control: Control) -> bool {
        let ClassRole::Presenter {
            secret: Some(secret), ..
        } = &self.role
        else {
            return false;
        };
        let m = ClassClientMsg::Control {
            secret: secret.clone(),
            control,
        };
        self.outbox.push(frame(&m));
        true
    }

    /// Presenter: the page is at `p`; relayed when it changed (and again
    /// after a reconnect).
    pub fn moved(&mut self, p: Position) {
        if self.is_presenter() {
            self.here = Some(p);
            self.send_move();
        }
    }

    fn send_move(&mut self) {
        let Some(p) = self.here.clone() else { return };
        if self.link == SocketState::Open
            && self.sent.as_ref() != Some(&p)
            && self.control(Control::Move { position: p.clone() })
        {
            self.sent = Some(p);
        }
    }

    /// Presenter on the real driver: the run's events not yet relayed (a
    /// run started over is relayed from its start).
    pub fn relay_live(&mut self, events: &[Event]) {
        if events.len() < self.live_sent {
            self.live_sent = 0;
        }
        if events.len() > self.live_sent
            && self.control(Control::Live {
                events: events[self.live_sent..].to_vec(),
            })
        {
            self.live_sent = events.len();
        }
    }

    /// Presenter: ask the room step `step`'s quiz, judged against `reply`.
    pub fn ask(&mut self, lesson: String, step: usize, reply: String) {
        self.asking = Some((lesson.clone(), step));
        self.control(Control::Ask { lesson, step, reply });
    }

    /// Presenter: reveal the open question.
    pub fn reveal(&mut self) {
        if let Some(q) = self.ask.as_ref().map(|a| a.question().id) {
            self.control(Control::Reveal { question: q });
        }
    }

    pub fn end(&mut self) {
        self.control(Control::End);
    }

    /// Presenter: push a "break my lock" drill (`design` as `?explore=`
    /// names it) to the room.
    pub fn push_drill(&mut self, design: String) {
        if self.control(Control::Drill { design: design.clone() }) {
            self.board = Some(DrillBoard {
                design,
                of: self.joined() as u32,
                ..DrillBoard::default()
            });
        }
    }

    /// Follower: take the drill (look around in the explorer); the design
    /// to search, if a drill is open.
    pub fn take_drill(&mut self) -> Option<String> {
        let design = self.drill.as_ref()?.drill.design.clone();
        self.following = false;
        Some(design)
    }

    /// Follower: this page's explorer finished searching `design`: the
    /// open drill's result, reported once.
    pub fn drill_done(&mut self, design: &str, found: bool, schedules: u64) {
        let Some(d) = self
            .drill
            .as_mut()
            .filter(|d| d.drill.design == design && d.result.is_none())
        else {
            return;
        };
        d.result = Some((found, schedules));
        let drill = d.drill.id;
        self.outbox.push(frame(&ClassClientMsg::DrillResult {
            drill,
            found,
            steps: None,
            schedules: Some(schedules),
        }));
    }

    fn drill_pushed(&mut self, drill: Drill) {
        if self.drill.as_ref().map(|d| d.drill.id) != Some(drill.id) {
            self.drill = Some(FollowerDrill { drill, result: None });
        }
    }

    /// Follower: answer the open question; only the first answer is sent.
    pub fn answer(&mut self, answer: Answer) {
        if let Some(Ask::Open(q)) = &self.ask {
            let q = q.clone();
            self.outbox.push(frame(&ClassClientMsg::Answer {
                question: q.id,
                answer: answer.clone(),
            }));
            self.ask = Some(Ask::Answered(q, answer));
        }
    }

    /// Follower: a move of its own (a step, a line, a fault).
    pub fn look_around(&mut self) {
        if !self.is_presenter() {
            self.following = false;
        }
    }

    /// Follower: back to the presenter's position.
    pub fn follow_again(&mut self) -> Position {
        self.following = true;
        self.presenter_at.clone()
    }

    fn seen(&mut self, id: &str) {
        if let ClassRole::Follower { since, .. } = &mut self.role {
            *since = Some(id.to_owned());
        }
    }

    fn presenter_moved(&mut self, p: Position) -> Option<Follow> {
        self.presenter_at = p.clone();
        if p.driver == locklab_core::class::ClassDriver::Sim {
            self.live.clear();
        }
        self.following.then_some(Follow::Goto(p))
    }

    /// A message from the server. Anything it cannot read is ignored (a
    /// newer server's messages, a damaged frame).
    // long: one arm per message the server sends
    pub fn receive(&mut self, text: &str) -> Option<Follow> {
        let msg: ServerSays = serde_json::from_str(text).ok()?;
        match msg {
            ServerSays::Started {
                code,
                secret,
                join_url,
                qr_svg,
            } => {
                self.qr_svg = qr_svg;
                self.role = ClassRole::Presenter {
                    code: Some(code),
                    secret: Some(secret),
                    join_url,
                };
                // Where the presenter stands goes out at once.
                self.send_move();
            }
            ServerSays::Joined {
                member,
                name,
                position,
                question,
                drill,
                score,
                since,
            } => {
                if let ClassRole::Follower {
                    member: m,
                    name: n,
                    since: s,
                    ..
                } = &mut self.role
                {
                    *m = Some(member);
                    *n = name;
                    *s = Some(since);
                }
                self.score = score;
                match drill {
                    Some(d) => self.drill_pushed(d),
                    None => self.drill = None,
                }
                // A rejoin keeps the answer already given to the same question.
                let same = self.ask.as_ref().map(|a| a.question().id) == question.as_ref().map(|q| q.id);
                if !same {
                    self.ask = question.map(Ask::Open);
                }
                return self.presenter_moved(position);
            }
            ServerSays::Moved { id, position } => {
                self.seen(&id);
                return self.presenter_moved(position);
            }
            ServerSays::Asked { id, question } => {
                self.seen(&id);
                self.answered_by.clear();
                self.tally = self.is_presenter().then(|| Tally {
                    question: question.id,
                    counts: vec![0; question.choices.max(2)],
                    of: self.joined() as u32,
                    ..Tally::default()
                });
                self.ask = Some(Ask::Open(question));
            }
            ServerSays::Tally { tally, names } => {
                let known = self.ask.as_ref().is_some_and(|a| a.question().id == tally.question);
                // The presenter's own question, numbered by the server.
                if let (false, Some((lesson, step))) = (known, self.asking.clone()) {
                    self.ask = Some(Ask::Open(Question {
                        id: tally.question,
                        lesson,
                        step,
                        choices: tally.counts.len(),
                    }));
                }
                if known || self.asking.is_some() {
                    self.tally = Some(tally);
                    self.answered_by = names;
                }
            }
            ServerSays::Revealed {
                id,
                tally,
                right_choice,
            } => {
                self.seen(&id);
                self.asking = None;
                let ask = self.ask.take()?;
                let (question, mine, right) = match ask {
                    Ask::Open(q) => (q, None, None),
                    Ask::Answered(q, a) => {
                        let right = match (&a, right_choice) {
                            (Answer::Choice(i), Some(r)) => Some(*i == r),
                            _ => None,
                        };
                        (q, Some(a), right)
                    }
                    Ask::Revealed {
                        question, mine, right, ..
                    } => (question, mine, right),
                };
                self.tally = Some(tally.clone());
                self.ask = Some(Ask::Revealed {
                    question,
                    tally,
                    right_choice,
                    mine,
                    right,
                });
            }
            ServerSays::Answered { question, right, score } => {
                self.score = score;
                if let Some(Ask::Revealed {
                    question: q, right: r, ..
                }) = &mut self.ask
                {
                    // The server says nothing of it before the reveal.
                    if q.id == question && right.is_some() {
                        *r = right;
                    }
                }
            }
            ServerSays::Live { id, events } => {
                self.seen(&id);
                self.live.extend(events);
                let over = self.live.len().saturating_sub(LIVE_MAX);
                self.live.drain(..over);
            }
            ServerSays::Roster { members } => self.roster = members,
            ServerSays::Ended { summary } => {
                self.summary = Some(summary);
                self.ask = None;
            }
            ServerSays::Error { message } => self.error = Some(message),
            ServerSays::DrillAsked { id, drill } => {
                self.seen(&id);
                if !self.is_presenter() {
                    self.drill_pushed(drill);
                }
            }
            ServerSays::DrillTally {
                found, reported, of, ..
            } => {
                if let Some(b) = &mut self.board {
                    (b.found, b.reported, b.of) = (found, reported, of);
                }
            }
            ServerSays::Instances { urls } => {
                self.instances = urls.iter().filter_map(|u| locklab_core::class::socket_url(u)).collect();
            }
            ServerSays::Unknown => {}
        }
        None
    }
}

/// A choice's share of the answers, in percent (for the bars).
pub fn share(count: u32, answered: u32) -> u32 {
    (u64::from(count) * 100).checked_div(u64::from(answered)).unwrap_or(0) as u32
}

#[cfg(test)]
mod tests;
