//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, PUBSUB CHANNELS|NUMSUB|NUMPAT|HELP.
//!
//! Redisson's lock waits for its unlock message on a channel: `SUBSCRIBE
//! redisson_lock__channel:{name}`, and the unlock script `PUBLISH`es to it.
//!
//! A subscribe command with several channels answers once per channel. The
//! node returns the last confirmation as the command's reply and queues the
//! others, in order, as outbound pushes to the same connection, which the
//! host writes before the reply (see [`crate::server::Outbound`]).

use super::is;
use crate::reply::Reply;
use crate::server::{Ctx, Outbound};

type Op = fn(&mut crate::server::pubsub::PubSub, crate::server::ConnId, &[u8]) -> Reply;

/// Run `op` for each name; all confirmations but the last go out first.
fn each(cx: &mut Ctx<'_>, names: &[Vec<u8>], op: Op) -> Reply {
    let Some(conn) = cx.e.conn() else {
        return Reply::error("ERR pub/sub needs a client connection");
    };
    let mut last = None;
    for name in names {
        if let Some(prev) = last.take() {
            cx.e.outbound.push(Outbound { conn, reply: prev });
        }
        last = Some(op(&mut cx.e.pubsub, conn, name));
    }
    last.unwrap_or(Reply::Nil)
}

/// Without arguments: every channel (or pattern) of the connection, or
/// one `[kind, nil, 0]` when there is none.
fn each_or_all(cx: &mut Ctx<'_>, argv: &[Vec<u8>], patterns: bool, op: Op) -> Reply {
    let Some(conn) = cx.e.conn() else {
        return Reply::error("ERR pub/sub needs a client connection");
    };
    if argv.len() > 1 {
        return each(cx, &argv[1..], op);
    }
    let mine = cx.e.pubsub.channels_of(conn, patterns);
    if mine.is_empty() {
        let kind = if patterns { "punsubscribe" } else { "unsubscribe" };
        return cx.e.pubsub.confirm(kind, None, conn);
    }
    each(cx, &mine, op)
}

/// `SUBSCRIBE channel [channel ...]`
pub(crate) fn subscribe(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    each(cx, &argv[1..], |p, c, n| p.subscribe(c, n))
}

/// `UNSUBSCRIBE [channel ...]`
pub(crate) fn unsubscribe(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    each_or_all(cx, argv, false, |p, c, n| p.unsubscribe(c, n))
}

/// `PSUBSCRIBE pattern [pattern ...]`
pub(crate) fn psubscribe(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    each(cx, &argv[1..], |p, c, n| p.psubscribe(c, n))
}

/// `PUNSUBSCRIBE [pattern ...]`
pub(crate) fn punsubscribe(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    each_or_all(cx, argv, true, |p, c, n| p.punsubscribe(c, n))
}

/// `PUBLISH channel message`: how many subscriptions received it.
pub(crate) fn publish(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let mut out = std::mem::take(&mut cx.e.outbound);
    let n = cx.e.pubsub.publish(&argv[1], &argv[2], &mut out);
    cx.e.outbound = out;
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(n)
}

/// `PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | HELP`
// long: PUBSUB's subcommands, one arm each
pub(crate) fn pubsub(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let sub = &argv[1];
    let wrong = || {
        Reply::error(format!(
            "ERR wrong number of arguments for 'pubsub|{}' command",
            String::from_utf8_lossy(sub).to_lowercase()
        ))
    };
    if is(sub, "HELP") {
        if argv.len() != 2 {
            return wrong();
        }
        return Reply::Array(
            [
                "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "CHANNELS [<pattern>]",
                "    Return the currently active channels matching a <pattern> (default: '*').",
                "NUMPAT",
                "    Return number of subscriptions to patterns.",
                "NUMSUB [<channel> ...]",
                "    Return the number of subscribers for the specified channels, excluding",
                "    pattern subscriptions(default: no channels).",
                "SHARDCHANNELS [<pattern>]",
                "    Return the currently active shard level channels matching a <pattern> (default: '*').",
                "SHARDNUMSUB [<shardchannel> ...]",
                "    Return the number of subscribers for the specified shard level channel(s)",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|l| Reply::status(*l))
            .collect(),
        );
    }
    if is(sub, "CHANNELS") {
        if argv.len() > 3 {
            return wrong();
        }
        let pattern = argv.get(2).map(Vec::as_slice).filter(|p| *p != b"*");
        return Reply::Array(
            cx.e.pubsub
                .active_channels(pattern)
                .into_iter()
                .map(Reply::Bulk)
                .collect(),
        );
    }
    if is(sub, "NUMSUB") {
        return Reply::Array(
            argv[2..]
                .iter()
                .flat_map(|c| [Reply::Bulk(c.clone()), Reply::Integer(cx.e.pubsub.numsub(c) as i64)])
                .collect(),
        );
    }
    if is(sub, "NUMPAT") {
        if argv.len() != 2 {
            return wrong();
        }
        return Reply::Integer(cx.e.pubsub.numpat() as i64);
    }
    // SHARDCHANNELS / SHARDNUMSUB: no shard channels on this node.
    if is(sub, "SHARDCHANNELS") {
        if argv.len() > 3 {
            return wrong();
        }
        return Reply::Array(Vec::new());
    }
    if is(sub, "SHARDNUMSUB") {
        return Reply::Array(
            argv[2..]
                .iter()
                .flat_map(|c| [Reply::Bulk(c.clone()), Reply::Integer(0)])
                .collect(),
        );
    }
    Reply::error(format!(
        "ERR unknown subcommand '{}'. Try PUBSUB HELP.",
        String::from_utf8_lossy(sub)
    ))
}
