//! The host a client program runs on, and the one dispatch of its actions.
//!
//! A program ([`Machine`](super::Machine)) only *asks* — send this, wake me
//! then, write that, I now hold the lock. Two hosts carry the asks out: the
//! simulated world (virtual time, modelled links and clocks) and the real
//! runner in the backend (wall clock, real redis-server processes). What an
//! action means — which node `Target::Master` is, that `Hold` and `Unhold`
//! are one belief switched on or off — is decided here, once, by [`apply`];
//! how each thing is done (a cut link, a dead node, a client's clock drift)
//! stays in each host's implementation of [`ProgramHost`].

use super::{Argv, ProgramAction, Target};

/// Whoever carries out a client program's actions.
pub trait ProgramHost {
    /// The client as the host knows it: an index, or the running program
    /// with its timers and inbox.
    type Client: ?Sized;
    /// Why an action could not be carried out (the world never fails).
    type Error;

    /// The node a request for [`Target::Master`] goes to right now.
    fn master(&self) -> u32;
    /// Send `commands` (one request, a pipeline run back to back) to
    /// `node`; answer with `Input::Reply { tag }`, or `Input::Failed { tag }`
    /// after `timeout_ms` on the client's clock when no reply comes.
    fn send(
        &mut self,
        client: &mut Self::Client,
        tag: u32,
        node: u32,
        commands: Vec<Argv>,
        timeout_ms: Option<u64>,
    ) -> Result<(), Self::Error>;
    /// Fire `Input::Timer { tag }` after `after_ms` on the client's clock,
    /// replacing a pending timer with the same tag.
    fn timer(&mut self, client: &mut Self::Client, tag: u32, after_ms: u64);
    /// Forget the pending timer `tag`.
    fn cancel(&mut self, client: &mut Self::Client, tag: u32);
    /// Write to the protected resource.
    fn write(&mut self, client: &mut Self::Client, token: Option<i64>, value: String);
    /// The client now believes (or no longer believes) it holds `key`.
    fn believe(&mut self, client: &mut Self::Client, key: &str, holds: bool);
    /// Narrate a decision in the trace.
    fn note(&mut self, client: &mut Self::Client, text: String);
    /// The program has finished.
    fn done(&mut self, client: &mut Self::Client);
}

/// Carry out one action of `client`'s program on `host`.
pub fn apply<H: ProgramHost + ?Sized>(
    host: &mut H,
    client: &mut H::Client,
    action: ProgramAction,
) -> Result<(), H::Error> {
    match action {
        ProgramAction::Send {
            tag,
            target,
            commands,
            timeout_ms,
        } => {
            let node = match target {
                Target::Master => host.master(),
                Target::Node(n) => n,
            };
            return host.send(client, tag, node, commands, timeout_ms);
        }
        ProgramAction::Timer { tag, after_ms } => host.timer(client, tag, after_ms),
        ProgramAction::Cancel { tag } => host.cancel(client, tag),
        ProgramAction::Write { token, value } => host.write(client, token, value),
        ProgramAction::Hold { key } => host.believe(client, &key, true),
        ProgramAction::Unhold { key } => host.believe(client, &key, false),
        ProgramAction::Note(text) => host.note(client, text),
        ProgramAction::Done => host.done(client),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::argv;

    /// A host that writes down what it was asked, to check the dispatch.
    struct Log {
        master: u32,
        calls: Vec<String>,
    }

    impl ProgramHost for Log {
        type Client = u32;
        type Error = String;
        fn master(&self) -> u32 {
            self.master
        }
        fn send(
            &mut self,
            c: &mut u32,
            tag: u32,
            node: u32,
            commands: Vec<Argv>,
            t: Option<u64>,
        ) -> Result<(), String> {
            if node > 9 {
                return Err(format!("no node {node}"));
            }
            self.calls
                .push(format!("{c} send {tag} to {node} x{} {t:?}", commands.len()));
            Ok(())
        }
        fn timer(&mut self, c: &mut u32, tag: u32, after_ms: u64) {
            self.calls.push(format!("{c} timer {tag} {after_ms}"));
        }
        fn cancel(&mut self, c: &mut u32, tag: u32) {
            self.calls.push(format!("{c} cancel {tag}"));
        }
        fn write(&mut self, c: &mut u32, token: Option<i64>, value: String) {
            self.calls.push(format!("{c} write {token:?} {value}"));
        }
        fn believe(&mut self, c: &mut u32, key: &str, holds: bool) {
            self.calls.push(format!("{c} believe {key} {holds}"));
        }
        fn note(&mut self, c: &mut u32, text: String) {
            self.calls.push(format!("{c} note {text}"));
        }
        fn done(&mut self, c: &mut u32) {
            self.calls.push(format!("{c} done"));
        }
    }

    #[test]
    fn every_action_reaches_its_host_method() {
        let mut host = Log {
            master: 2,
            calls: Vec::new(),
        };
        let send = |target, timeout_ms| ProgramAction::Send {
            tag: 7,
            target,
            commands: vec![argv(&["GET", "k"])],
            timeout_ms,
        };
        let actions = vec![
            send(Target::Master, Some(50)),
            send(Target::Node(4), None),
            ProgramAction::Timer { tag: 1, after_ms: 40 },
            ProgramAction::Cancel { tag: 1 },
            ProgramAction::Write {
                token: Some(3),
                value: "v".into(),
            },
            ProgramAction::Hold { key: "lock".into() },
            ProgramAction::Unhold { key: "lock".into() },
            ProgramAction::Note("why".into()),
            ProgramAction::Done,
        ];
        for a in actions {
            apply(&mut host, &mut 5, a).unwrap();
        }
        assert_eq!(
            host.calls,
            [
                "5 send 7 to 2 x1 Some(50)",
                "5 send 7 to 4 x1 None",
                "5 timer 1 40",
                "5 cancel 1",
                "5 write Some(3) v",
                "5 believe lock true",
                "5 believe lock false",
                "5 note why",
                "5 done",
            ]
        );
        let err = apply(&mut host, &mut 5, send(Target::Node(12), None));
        assert_eq!(err, Err("no node 12".to_owned()));
    }
}
