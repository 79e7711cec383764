//! How many replies redis-server writes for a command that answers once
//! per name, and which of them answers the console line: what keeps a
//! client's connection in step, on either lane ([`Link`](crate::real::session::link::Link)
//! and [`RealConnection`](crate::real::conn::RealConnection)).
//!
//! A (un)subscribe command answers once per name (`subscribeCommand`,
//! `unsubscribeCommand` and their pattern and shard twins in pubsub.c call
//! `addReplyPubsub(Un)Subscribed` in their loop), and without names once
//! per subscription held, or once when there is none
//! (`pubsubUnsubscribeAllChannels` and its twins). Every confirmation is
//! read and the last answers the line, as on the simulator's console (its
//! node queues the others as pushes: core's `server::cmd::pubsub`).
//!
//! Queued in `MULTI`, such a command breaks `EXEC`'s framing:
//! `execCommand` announces one value per queued command
//! (`addReplyArrayLen(c, c->mstate.count)`) and the extra confirmations
//! follow the array, so the array holds the first values written, whatever
//! command wrote them. They are taken back in the order written and each
//! command's last one answers it.
//!
//! Pure: the lanes read the socket, [`Replies`] says whether a reply is
//! still owed.

use std::collections::VecDeque;

use locklab_core::reply::Reply;

/// The six commands that answer once per channel or pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subscription {
    Subscribe,
    Unsubscribe,
    Psubscribe,
    Punsubscribe,
    Ssubscribe,
    Sunsubscribe,
}

impl Subscription {
    const ALL: [Subscription; 6] = [
        Subscription::Subscribe,
        Subscription::Unsubscribe,
        Subscription::Psubscribe,
        Subscription::Punsubscribe,
        Subscription::Ssubscribe,
        Subscription::Sunsubscribe,
    ];

    /// The command `name` names, if it is one of them.
    pub fn of(name: &[u8]) -> Option<Subscription> {
        Self::ALL
            .into_iter()
            .find(|k| name.eq_ignore_ascii_case(k.name().as_bytes()))
    }

    /// The command's name, which is also its confirmations' first element.
    fn name(self) -> &'static str {
        match self {
            Subscription::Subscribe => "subscribe",
            Subscription::Unsubscribe => "unsubscribe",
            Subscription::Psubscribe => "psubscribe",
            Subscription::Punsubscribe => "punsubscribe",
            Subscription::Ssubscribe => "ssubscribe",
            Subscription::Sunsubscribe => "sunsubscribe",
        }
    }

    fn unsubscribes(self) -> bool {
        matches!(
            self,
            Subscription::Unsubscribe | Subscription::Punsubscribe | Subscription::Sunsubscribe
        )
    }

    /// Which of [`Link`]'s counts it changes: channels, patterns, shard
    /// channels.
    fn slot(self) -> usize {
        match self {
            Subscription::Subscribe | Subscription::Unsubscribe => 0,
            Subscription::Psubscribe | Subscription::Punsubscribe => 1,
            Subscription::Ssubscribe | Subscription::Sunsubscribe => 2,
        }
    }
}

/// Subscriptions a connection holds — channels, patterns, shard channels —
/// as its server's confirmations counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Subscriptions([usize; 3]);

impl Subscriptions {
    /// If `reply` is a confirmation of `kind` (`[kind, name, count]`), keep
    /// its count. Whether it was one.
    fn note(&mut self, kind: Subscription, reply: &Reply) -> bool {
        let Reply::Array(parts) = reply else { return false };
        let [Reply::Bulk(name), _, Reply::Integer(count)] = parts.as_slice() else {
            return false;
        };
        if !name.eq_ignore_ascii_case(kind.name().as_bytes()) {
            return false;
        }
        let count = usize::try_from(*count).unwrap_or(0);
        // Channels and patterns share one count (`clientSubscriptionsCount`);
        // shard channels have their own.
        let held = &mut self.0;
        held[kind.slot()] = match kind.slot() {
            0 => count.saturating_sub(held[1]),
            1 => count.saturating_sub(held[0]),
            _ => count,
        };
        true
    }

    /// How many confirmations `kind` sent with `names` names writes.
    fn replies(&self, kind: Subscription, names: usize) -> usize {
        match names {
            0 if kind.unsubscribes() => self.0[kind.slot()].max(1),
            n => n,
        }
    }
}

/// The replies to one command (or an `EXEC`'s queue), taken in the order
/// written: feed it what the socket brings while [`Replies::owed`] says.
#[derive(Debug)]
pub struct Replies {
    /// Per command still to answer: its kind (if it confirms) and names.
    commands: VecDeque<Option<(Subscription, usize)>>,
    /// Values read and not yet taken.
    values: VecDeque<Reply>,
    /// The command being answered: its kind, confirmations still to take,
    /// the last taken.
    current: Option<(Subscription, usize, Reply)>,
    answers: Vec<Reply>,
    exec: bool,
}

impl Replies {
    /// After `sent`'s first reply, `first`. `queued`: an `EXEC`'s commands
    /// as sent (empty: `EXEC`'s array is taken as it is). `Err`: the array
    /// is shorter than its queue (a capped link dropped values), which
    /// command wrote which is lost.
    pub fn new(sent: &[Vec<u8>], queued: &[Vec<Vec<u8>>], first: Reply) -> Result<Replies, Reply> {
        let shape = |argv: &[Vec<u8>]| Subscription::of(&argv[0]).map(|k| (k, argv.len() - 1));
        let exec = !queued.is_empty() && sent[0].eq_ignore_ascii_case(b"exec");
        let (commands, values) = match first {
            Reply::Array(written) if exec => {
                if written.len() < queued.len() {
                    return Err(Reply::Array(written));
                }
                (queued.iter().map(|a| shape(a)).collect(), written.into())
            }
            first => ([shape(sent)].into(), [first].into()),
        };
        Ok(Replies {
            commands,
            values,
            current: None,
            answers: Vec::new(),
            exec,
        })
    }

    /// Take what was read; whether another reply is owed (then
    /// [`Replies::feed`] it).
    pub fn owed(&mut self, held: &mut Subscriptions) -> bool {
        loop {
            match self.current.take() {
                Some((kind, more, last)) if more > 0 => {
                    let Some(next) = self.values.pop_front() else {
                        self.current = Some((kind, more, last));
                        return true;
                    };
                    held.note(kind, &next);
                    self.current = Some((kind, more - 1, next));
                }
                Some((_, _, last)) => self.answers.push(last),
                None => {
                    let Some(shape) = self.commands.front().copied() else {
                        return false;
                    };
                    let Some(first) = self.values.pop_front() else {
                        return true;
                    };
                    self.commands.pop_front();
                    match shape {
                        // Counted before the first confirmation is noted;
                        // an error (arity, NOPERM) or `QUEUED` is the only
                        // reply.
                        Some((kind, names)) => {
                            let replies = held.replies(kind, names);
                            if held.note(kind, &first) {
                                self.current = Some((kind, replies - 1, first));
                            } else {
                                self.answers.push(first);
                            }
                        }
                        None => self.answers.push(first),
                    }
                }
            }
        }
    }

    /// The next reply read off the socket.
    pub fn feed(&mut self, reply: Reply) {
        self.values.push_back(reply);
    }

    /// The answer, once nothing is owed.
    pub fn answer(mut self) -> Reply {
        match self.exec {
            true => Reply::Array(self.answers),
            false => self.answers.pop().unwrap_or(Reply::Nil),
        }
    }
}
