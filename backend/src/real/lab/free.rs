//! Free play's console: a typed line run on the session (blocking or async
//! lane) down core's one console path, and the lock watch that follows
//! what it may change. Apart from the lab's message handling because it is
//! the one part that touches a session command by command.

use locklab_core::cli::{self, CliError};
use locklab_core::console;
use locklab_core::reply::Reply;
use locklab_core::server::table::{self, flags};
use locklab_core::server::Profile;

use crate::real::observe::{acquired_key, LockWatch, Look};
use crate::real::session::Session;
use crate::real::stages::Stage;
use crate::real::topology::NodeInfo;
use std::time::Instant;
/// One console line, down core's one console path ([`console::run`]: the
/// split, the repeat prefix at most [`console::Limits::BROWSER`] times,
/// redis-cli's rendering). A line the session refuses before splitting it
/// (too long for the session, unbalanced quotes, empty) gets the session's
/// own error, which also notes it on the client's lane. `after` runs after
/// each command that got a reply, with the client's index and the node the
/// command went to (a cluster routes it by slot).
pub(super) fn console_line(
    s: &mut Session,
    client: &str,
    node: u32,
    line: &str,
    max_line: usize,
    mut after: impl FnMut(&mut Session, u32, u32, &[Vec<u8>], &Reply),
) -> String {
    let limits = console::Limits {
        max_line,
        ..console::Limits::BROWSER
    };
    let typed = match console::read(line.as_bytes(), limits) {
        typed @ console::Typed::Run { .. } => typed,
        // redis-cli's own refusal of a repeat count: nothing was sent.
        console::Typed::Refused(why @ console::ConsoleRefusal::Cli(CliError::InvalidRepeat)) => return why.to_string(),
        // Too long, unbalanced, empty: the session's own error (and note).
        _ => {
            return match s.run_line(client, node, line) {
                Err(e) => e.to_reply().to_cli(),
                Ok(reply) => reply.to_cli(),
            }
        }
    };
    let text = typed.run(|argv| {
        Some(match s.run_routed(client, node, argv) {
            Ok((at, reply)) => {
                if let Ok(cid) = s.client(client) {
                    after(s, cid, at, argv, &reply);
                }
                reply
            }
            Err(e) => e.to_reply(),
        })
    });
    let mut text = text.trim_end_matches(['\r', '\n']).to_owned();
    for note in s.take_console_notes() {
        text.push_str(&format!("\n(locklab) {note}"));
    }
    text
}

/// Free play's lock watch and the nodes it looks at.
pub(super) struct FreeWatch<'a> {
    pub(super) free: &'a mut LockWatch,
    pub(super) nodes: Vec<NodeInfo>,
}

/// [`console_line`] on the session's async lane, with free play's lock
/// watch: the same split, repeat and rendering (core's [`console::read`]
/// and [`cli::render`]).
pub(super) async fn console_line_async(
    s: &mut Session,
    mut watch: FreeWatch<'_>,
    client: &str,
    node: u32,
    line: &str,
    max_line: usize,
) -> String {
    let limits = console::Limits {
        max_line,
        ..console::Limits::BROWSER
    };
    let t = Instant::now();
    let typed = console::read(line.as_bytes(), limits);
    s.stage(Stage::Parse, t);
    let (argv, repeat) = match typed {
        console::Typed::Run { argv, repeat } => (argv, repeat),
        // redis-cli's own refusal of a repeat count: nothing was sent.
        console::Typed::Refused(why @ console::ConsoleRefusal::Cli(CliError::InvalidRepeat)) => return why.to_string(),
        // Too long, unbalanced, empty: the session's own error (and note),
        // refused before anything would be sent, so no I/O blocks here.
        _ => {
            return match s.run_line(client, node, line) {
                Err(e) => e.to_reply().to_cli(),
                Ok(reply) => reply.to_cli(),
            }
        }
    };
    let mut out = String::new();
    for _ in 0..repeat {
        let reply = free_command(s, &mut watch, client, node, &argv).await;
        let t = Instant::now();
        out.push_str(&cli::render(&argv, &reply));
        for note in s.take_console_notes() {
            out.push_str(&format!("(locklab) {note}\n"));
        }
        s.stage(Stage::Encode, t);
    }
    out.truncate(out.trim_end_matches(['\r', '\n']).len());
    out
}

/// One free-play command on the async lane, and free play's lock watch
/// after it, as [`LabState::handle`]'s does it: a key a client takes with
/// `SET … NX` or `SETNX` is watched from then on, and the watched keys are
/// looked at after a command that may change them. The look is asked for
/// before the reply is known (the keys watched, and the key this command
/// would take), so it rides in the command's round trip; what the reply
/// turns out not to need is not used.
pub(super) async fn free_command(
    s: &mut Session,
    watch: &mut FreeWatch<'_>,
    client: &str,
    node: u32,
    argv: &[Vec<u8>],
) -> Reply {
    let t = Instant::now();
    let free = &mut *watch.free;
    let would_take = acquired_key(argv, &Reply::ok()).or_else(|| acquired_key(argv, &Reply::Integer(1)));
    let changes = may_change_locks(argv);
    let mut peek = Vec::new();
    if would_take.is_some() || (!free.keys().is_empty() && changes) {
        peek = free.keys().to_vec();
        if let Some((k, _)) = would_take.filter(|(k, _)| !peek.contains(k)) {
            peek.push(k);
        }
    }
    s.stage(Stage::Watch, t);
    let (reply, peeked) = match s.run_async(client, node, argv, &peek).await {
        Ok(r) => r,
        Err(e) => return e.to_reply(),
    };
    let t = Instant::now();
    let took = acquired_key(argv, &reply);
    if let Some((key, _)) = &took {
        let max = s.limits().max_watched_locks;
        for dropped in free.add_bounded(key, max) {
            s.note_console(client, unwatched(max, &dropped));
        }
    }
    if took.is_some() || (!free.keys().is_empty() && changes) {
        if let Ok(cid) = s.client(client) {
            let cause = Look::Cmd { client: cid, node };
            free.observe_with(s, &watch.nodes, Some(node), cause, |_, _, want| {
                // What the peek read of each key watched (a few keys: a
                // look down the list, no hashing).
                let seen = peeked.as_ref()?;
                want.iter()
                    .map(|k| peek.iter().position(|p| p == k).and_then(|i| seen.get(i).cloned()))
                    .collect()
            });
        }
    }
    s.stage(Stage::Watch, t);
    reply
}

/// The console's note for a lock free play stopped watching.
pub(super) fn unwatched(max: usize, key: &str) -> String {
    format!("the lab watches at most {max} locks: '{key}', the oldest, is no longer watched")
}

/// Can `argv` change a lock key? A write, a script or function (whatever
/// it touches), or `EXEC` (whatever it queued). Reads cannot, so free play
/// does not look after them.
pub(super) fn may_change_locks(argv: &[Vec<u8>]) -> bool {
    let Some(cmd) = argv.first().and_then(|name| table::find(name, Profile::V8_4)) else {
        return false;
    };
    cmd.flags & flags::WRITE != 0 || matches!(cmd.name, "eval" | "evalsha" | "fcall" | "exec")
}
