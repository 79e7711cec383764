//! One class's room: its followers, its questions and their tallies, its
//! drill, and what it relays and flushes to the presenter and followers
//! (split from `hub.rs`, which keeps the connections, roles and admission).

use super::*;

impl Class {
    pub(super) fn new(code: ClassCode, secret_hash: String, presenter: SocketId, now: Instant) -> Class {
        Class {
            code,
            secret_hash,
            presenter: Some(presenter),
            members: BTreeMap::new(),
            position: Position::default(),
            questions: Vec::new(),
            open: None,
            drills: 0,
            drill: None,
            log: VecDeque::new(),
            log_bytes: 0,
            last_id: 0,
            last_presenter: now,
            due_tally: false,
            due_roster: false,
            due_drill: false,
            last_flush: None,
        }
    }

    /// The connections of the followers present.
    pub(super) fn followers(&self) -> Vec<SocketId> {
        self.members.values().filter_map(|f| f.conn).collect()
    }

    pub(super) fn connected(&self) -> u32 {
        self.members.values().filter(|f| f.conn.is_some()).count() as u32
    }

    /// Send followers the message `make` builds with the next stream id,
    /// and keep it in the stream (the oldest dropped past `max_bytes`).
    pub(super) fn relay(&mut self, make: impl FnOnce(String) -> ServerSays, max_bytes: usize, out: &mut Vec<Out>) {
        self.last_id += 1;
        let msg = make(self.last_id.to_string());
        let size = serde_json::to_vec(&msg).map_or(0, |v| v.len());
        self.log.push_back((self.last_id, msg.clone(), size));
        self.log_bytes += size;
        while self.log_bytes > max_bytes {
            let Some((_, _, s)) = self.log.pop_front() else { break };
            self.log_bytes -= s;
        }
        out.push(Out::Many(self.followers(), msg));
    }

    pub(super) fn question(&self, id: u32) -> Result<&Asked, ClassError> {
        self.questions
            .iter()
            .find(|q| q.question.id == id)
            .ok_or(ClassError::NoOpenQuestion)
    }

    pub(super) fn ask(
        &mut self,
        lesson: String,
        step: usize,
        reply: String,
        step_of: &Step,
        max_bytes: usize,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        if self.questions.len() >= MAX_QUESTIONS {
            return Err(ClassError::Malformed(format!(
                "a class asks at most {MAX_QUESTIONS} questions"
            )));
        }
        if reply.len() > MAX_REPLY {
            return Err(ClassError::TooLarge {
                size: reply.len(),
                max: MAX_REPLY,
            });
        }
        let choices = step_of.quiz.as_ref().map_or(0, |q| q.choices.len());
        let id = self.questions.len() as u32 + 1;
        let question = Question {
            id,
            lesson,
            step,
            choices,
        };
        let tally = Tally {
            question: id,
            counts: vec![0; if choices == 0 { 2 } else { choices }],
            answered: 0,
            of: self.connected(),
            right: 0,
        };
        self.questions.push(Asked {
            question: question.clone(),
            reply,
            tally,
            revealed: false,
        });
        self.open = Some(self.questions.len() - 1);
        self.due_tally = true;
        self.last_flush = None;
        self.relay(|id| ServerSays::Asked { id, question }, max_bytes, out);
        // The presenter learns its question's id from the server too (its
        // reveal names it), as the followers do.
        if let (Some(p), Some((_, asked, _))) = (self.presenter, self.log.back()) {
            out.push(Out::To(p, asked.clone()));
        }
        Ok(())
    }

    pub(super) fn reveal(
        &mut self,
        question: u32,
        (step, reply): (&Step, String),
        max_bytes: usize,
        out: &mut Vec<Out>,
    ) {
        let connected = self.connected();
        let Some(i) = self.questions.iter().position(|q| q.question.id == question) else {
            return;
        };
        let asked = &mut self.questions[i];
        if self.open == Some(i) {
            asked.tally.of = connected;
            self.open = None;
        }
        let tally = asked.tally.clone();
        let first_reveal = !std::mem::replace(&mut asked.revealed, true);
        let right_choice = right_choice(step, &reply);
        self.relay(
            |id| ServerSays::Revealed {
                id,
                tally: tally.clone(),
                right_choice,
            },
            max_bytes,
            out,
        );
        if let Some(p) = self.presenter {
            let id = self.last_id.to_string();
            out.push(Out::To(
                p,
                ServerSays::Revealed {
                    id,
                    tally,
                    right_choice,
                },
            ));
        }
        // Each follower who answered learns its own verdict, now, and its
        // score counts the question (once, however often it is revealed).
        for f in self.members.values_mut() {
            let Some(&right) = f.answers.get(&question) else {
                continue;
            };
            if first_reveal {
                f.score += u32::from(right);
            }
            if let Some(conn) = f.conn {
                let score = f.score;
                let right = Some(right);
                out.push(Out::To(conn, ServerSays::Answered { question, right, score }));
            }
        }
    }

    pub(super) fn push_drill(
        &mut self,
        design: String,
        max_bytes: usize,
        out: &mut Vec<Out>,
    ) -> Result<(), ClassError> {
        if design.len() > MAX_REPLY {
            return Err(ClassError::TooLarge {
                size: design.len(),
                max: MAX_REPLY,
            });
        }
        if self.drills as usize >= MAX_QUESTIONS {
            return Err(ClassError::Malformed(format!(
                "a class pushes at most {MAX_QUESTIONS} drills"
            )));
        }
        self.drills += 1;
        let drill = Drill {
            id: self.drills,
            design,
        };
        self.drill = Some(DrillState {
            drill: drill.clone(),
            reports: BTreeMap::new(),
        });
        self.due_drill = true;
        self.relay(|id| ServerSays::DrillAsked { id, drill }, max_bytes, out);
        Ok(())
    }

    pub(super) fn roster(&self) -> Vec<Member> {
        self.members
            .iter()
            .map(|(id, f)| Member {
                member: id.clone(),
                name: f.name.clone(),
                score: f.score,
                connected: f.conn.is_some(),
            })
            .collect()
    }

    /// Who has answered question `id`, as the roster shows them.
    pub(super) fn answered_by(&self, id: u32) -> Vec<String> {
        self.roster()
            .into_iter()
            .filter(|m| self.members.get(&m.member).is_some_and(|f| f.answers.contains_key(&id)))
            .map(|m| m.shown().to_owned())
            .collect()
    }

    pub(super) fn joined(&self, member: &str) -> ServerSays {
        let f = self.members.get(member);
        ServerSays::Joined {
            member: member.to_owned(),
            name: f.and_then(|f| f.name.clone()),
            position: self.position.clone(),
            question: self
                .open
                .and_then(|i| self.questions.get(i))
                .map(|q| q.question.clone()),
            drill: self.drill.as_ref().map(|d| d.drill.clone()),
            score: f.map_or(0, |f| f.score),
            since: self.last_id.to_string(),
        }
    }

    /// The presenter's due updates, at most one of each per [`FLUSH_EVERY`].
    pub(super) fn flush(&mut self, now: Instant, out: &mut Vec<Out>) {
        let Some(p) = self.presenter else { return };
        if !(self.due_tally || self.due_roster || self.due_drill) {
            return;
        }
        if self
            .last_flush
            .is_some_and(|t| now.saturating_duration_since(t) < FLUSH_EVERY)
        {
            return;
        }
        self.last_flush = Some(now);
        let of = self.connected();
        if std::mem::take(&mut self.due_roster) {
            out.push(Out::To(p, ServerSays::Roster { members: self.roster() }));
        }
        if std::mem::take(&mut self.due_tally) {
            if let Some(q) = self.open.and_then(|i| self.questions.get(i)) {
                let mut tally = q.tally.clone();
                tally.of = of;
                let names = self.answered_by(q.question.id);
                out.push(Out::To(p, ServerSays::Tally { tally, names }));
            }
        }
        if std::mem::take(&mut self.due_drill) {
            if let Some(d) = &self.drill {
                let name = |m: &String| self.members.get(m).and_then(|f| f.name.clone()).unwrap_or(m.clone());
                out.push(Out::To(
                    p,
                    ServerSays::DrillTally {
                        drill: d.drill.id,
                        found: d.reports.iter().filter(|(_, f)| **f).map(|(m, _)| name(m)).collect(),
                        reported: d.reports.len() as u32,
                        of,
                    },
                ));
            }
        }
    }

    pub(super) fn summary(&self) -> Summary {
        Summary {
            code: self.code.to_string(),
            questions: self
                .questions
                .iter()
                .map(|q| QuestionSummary {
                    question: q.question.clone(),
                    tally: q.tally.clone(),
                })
                .collect(),
            members: self.roster(),
        }
    }
}
