//! The lab's rules for a server it does not own: which (command,
//! subcommand) pairs a lab session may send, and what each argument that
//! sizes work or memory may cost.
//!
//! The rules are a column of the command table ([`Command::lab`]), so one
//! row says everything about a command: its arity and keys for the
//! simulator, its rule for the real driver. Nothing is allowed unless its
//! row says so: a command the table does not have is refused, a row's
//! [`Lab::Deny`] is refused with its reason, and a container
//! ([`Lab::Subs`]) passes only the subcommands it lists. The real driver's
//! per-session ACL user is *generated* from the same column
//! ([`acl_commands`]: `-@all` plus exactly the allowed pairs), so what a
//! script calls inside Redis meets the same list as what is typed.
//!
//! The costs are pure arithmetic on the argv: a count bounded
//! ([`Cost::Count`], [`Cost::OptionCount`]), an offset bounded
//! ([`Cost::Offset`]), and what a write can add to the bytes its keys hold
//! ([`charges`]), an upper bound the real driver sums into its per-session
//! quota before it sends anything.

use super::table::{flags, Command, COMMANDS};

/// Bytes charged for a key itself, whatever it holds: redis-server's
/// `dictEntry` (24) and the key's `sds` and `robj` (16) headers, the entry
/// in the expires dict (24) a TTL adds, and jemalloc's rounding. Meant to be
/// more than a key costs, so the account stays an upper bound.
pub const KEY_BYTES: u64 = 128;
/// Bytes charged for each stored argument on top of its length (an element
/// of a list, a member of a set, a field or value of a hash, a member or
/// score of a sorted set): its `sds` header and rounding, and its share of
/// a `dictEntry` or skiplist node.
pub const ARG_BYTES: u64 = 64;
/// A number stored by `INCR` and friends: at most 20 digits, or a long
/// double's 5 KiB-bounded text in the rare `INCRBYFLOAT` case (charged as
/// its 17 significant digits plus exponent, padded).
pub const NUMBER_BYTES: u64 = 64;

/// A row's rule for the lab's real driver on a server it does not own.
#[derive(Clone, Copy, Debug)]
pub enum Lab {
    /// Refused before it is sent, and why (the console says so).
    Deny(&'static str),
    /// Allowed, with the cost rules of its arguments.
    Allow(&'static [Cost]),
    /// Allowed, but run by the lab itself on its administrative connection
    /// (`SCAN`: key patterns do not confine what it returns), so it is not
    /// in the session user's ACL.
    Admin(&'static [Cost]),
    /// A container: only these subcommands (lower case), each with its
    /// cost rules.
    Subs(&'static [(&'static str, &'static [Cost])]),
}

/// A rule for an argument that sizes the work a command does, the reply it
/// makes or the memory it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// `argv[at]`, when present and a number, is a count of items the
    /// reply holds: its absolute value at most `max` (`HRANDFIELD h -n`
    /// repeats fields, so a negative count is not bounded by the hash).
    Count { at: usize, max: u64 },
    /// `argv[at]` and `argv[at + 1]` are the start and stop indexes of a
    /// range read (`LRANGE`, `ZRANGE`, `ZREVRANGE`; not with `BYSCORE` or
    /// `BYLEX`, where they are scores or members). With both of one sign
    /// the reply holds at most `stop - start + 1` items whatever the key,
    /// and that span is at most `max`. A span from a start to a stop
    /// counted from the end (`0 -1`) reaches as far as the key does: the
    /// session's quota bounds the key, and a client's link keeps at most a
    /// page's reply of it (the backend's `Link::keep_at_most`).
    Span { at: usize, max: u64 },
    /// The number after the option `word` (`SCAN … COUNT n`, any case) is
    /// at most `max`: how much of the keyspace one call walks.
    OptionCount { word: &'static str, max: u64 },
    /// `argv[at]` is a byte offset the write extends the value to
    /// (`SETRANGE k off v`): at most `max`, and the value then ends at
    /// `off + len(argv[at + 1])`.
    Offset { at: usize, max: u64 },
    /// The key's value becomes `argv[value]` (`SET`, `SETNX`, `GETSET`;
    /// `SETEX`/`PSETEX` at 3).
    Replaces { value: usize },
    /// Key–value pairs, each value replacing its key's (`MSET`).
    Pairs,
    /// Every argument after the key is added to what it holds (`HSET`,
    /// `LPUSH`, `SADD`, `ZADD`, …).
    Adds,
    /// The argument after the key is appended to a string (`APPEND`).
    Appends,
    /// The key becomes a number (`INCR`, `DECRBY`, …).
    Number,
    /// An element moves from the first key to the second (`LMOVE`,
    /// `RPOPLPUSH`): the second grows by one element of the first.
    Moves,
    /// The first key's value moves to the second (`RENAME`).
    Renames,
    /// `argv[at]` is a script body the server caches (`EVAL`, `SCRIPT
    /// LOAD`).
    Script { at: usize },
    /// The last argument is a library the server keeps (`FUNCTION LOAD`).
    Library,
}

/// What a write can do to the bytes one key holds, by the lab's account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// The key holds at most this many bytes now, if it held less.
    AtMost(u64),
    /// The key grows by at most this many bytes.
    Add(u64),
    /// The key grows by at most one element of the key at this argv index
    /// (the account knows how big that key may be).
    ElementOf(usize),
    /// The key holds at most what the key at this argv index held.
    ValueOf(usize),
}

/// Why the lab refuses an argv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The row (or subcommand) is denied, for this reason.
    Denied(&'static str),
    /// A container's subcommand the row does not list.
    Subcommand,
    /// An argument past its bound: what it is, what was asked (its
    /// absolute value, saturated), and the bound.
    Bound { what: &'static str, got: u64, max: u64 },
}

/// Commands a lab session may not run: what it can reach would be the
/// server's, not the session's.
pub mod why {
    pub const DANGEROUS: &str = "it is dangerous or administrative";
    pub const OUTSIDE: &str = "it returns keys outside the session; SCAN lists the session's keys";
    pub const COUNTS: &str = "it counts keys outside the session; SCAN lists the session's keys";
    pub const COPY: &str = "it can copy into another database";
    pub const MOVE: &str = "it moves a key into another database";
    pub const MEMORY: &str = "it reports on the server's allocator and memory as a whole";
    pub const PUBSUB: &str = "it names channels outside the session";
    pub const SELECT: &str = "it switches to another database";
    pub const SORT: &str = "its BY and GET patterns read keys outside the session";
    /// SDIFFSTORE, SINTERSTORE, SUNIONSTORE: the stored set's size is
    /// computed on the server from sets the account cannot bound before
    /// it is sent (`Cost` has no rule for a result), so the session quota
    /// could be passed on an owner's Redis.
    pub const SET_STORE: &str = "it stores a set whose size the lab cannot bound before sending it";
    /// ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE, ZRANGESTORE: as [`SET_STORE`],
    /// a sorted set computed on the server from keys the account cannot
    /// bound before it is sent.
    pub const ZSET_STORE: &str = "it stores a sorted set whose size the lab cannot bound before sending it";
}

impl Command {
    /// The cost rules of `argv` if the lab may send it, or why not. Looks
    /// at the row once and allocates nothing.
    pub fn lab_check(&self, argv: &[Vec<u8>]) -> Result<&'static [Cost], Refusal> {
        let costs: &'static [Cost] = match self.lab {
            Lab::Deny(why) => return Err(Refusal::Denied(why)),
            Lab::Allow(c) | Lab::Admin(c) => c,
            Lab::Subs(subs) => match argv.get(1) {
                // No subcommand: Redis answers the arity error itself.
                None => &[],
                Some(sub) => match subs.iter().find(|(s, _)| sub.eq_ignore_ascii_case(s.as_bytes())) {
                    Some(&(_, c)) => c,
                    None => return Err(Refusal::Subcommand),
                },
            },
        };
        for cost in costs {
            bound(cost, argv)?;
        }
        Ok(costs)
    }

    /// Is this row run by the lab on its administrative connection?
    pub fn lab_admin(&self) -> bool {
        matches!(self.lab, Lab::Admin(_))
    }
}

/// `cost`'s bound on `argv`. A count or offset that is not a number is
/// Redis's to refuse (it answers its own error), so it passes here.
fn bound(cost: &Cost, argv: &[Vec<u8>]) -> Result<(), Refusal> {
    let (what, arg, max) = match *cost {
        Cost::Span { at, max } => return check_span(argv, at, max),
        Cost::Count { at, max } => ("the count", argv.get(at), max),
        Cost::Offset { at, max } => ("the offset", argv.get(at), max),
        Cost::OptionCount { word, max } => {
            // Options come in pairs after the cursor; the last one wins in
            // Redis, and every one must be within the bound here.
            let mut i = 2;
            while i + 1 < argv.len() {
                if argv[i].eq_ignore_ascii_case(word.as_bytes()) {
                    check_number("the COUNT", &argv[i + 1], max)?;
                }
                i += 2;
            }
            return Ok(());
        }
        _ => return Ok(()),
    };
    match arg {
        Some(a) => check_number(what, a, max),
        None => Ok(()),
    }
}

/// [`Cost::Span`]'s bound: `LRANGE`'s `rangelen = end - start + 1` when
/// both indexes count from the same end (`listTypeRange` after
/// `start < 0 → start + llen` needs the length otherwise).
fn check_span(argv: &[Vec<u8>], at: usize, max: u64) -> Result<(), Refusal> {
    let by_value = argv
        .iter()
        .skip(at + 2)
        .any(|a| a.eq_ignore_ascii_case(b"byscore") || a.eq_ignore_ascii_case(b"bylex"));
    let (Some(start), Some(stop)) = (
        argv.get(at).and_then(|a| signed(a)),
        argv.get(at + 1).and_then(|a| signed(a)),
    ) else {
        return Ok(());
    };
    if by_value || (start < 0) != (stop < 0) || stop < start {
        return Ok(());
    }
    let span = u64::try_from(stop - start + 1).unwrap_or(u64::MAX);
    if span > max {
        return Err(Refusal::Bound {
            what: "the span",
            got: span,
            max,
        });
    }
    Ok(())
}

/// A decimal integer argument as `string2ll` reads it (64 bits, either
/// sign), widened so a span of two of them cannot overflow.
fn signed(arg: &[u8]) -> Option<i128> {
    std::str::from_utf8(arg)
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse::<i64>().ok())
        .map(i128::from)
}

fn check_number(what: &'static str, arg: &[u8], max: u64) -> Result<(), Refusal> {
    match number(arg) {
        Some(n) if n > max => Err(Refusal::Bound { what, got: n, max }),
        _ => Ok(()),
    }
}

/// The absolute value of a decimal integer argument (saturated), as
/// `string2ll` would read it; `None` if it is not one.
fn number(arg: &[u8]) -> Option<u64> {
    let digits = arg.strip_prefix(b"-").unwrap_or(arg);
    if digits.is_empty() || digits.len() > 40 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        digits
            .iter()
            .fold(0u64, |n, d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))),
    )
}

/// What `argv` (allowed, with `costs` from [`Command::lab_check`]) can add
/// to the bytes its keys hold: `f(key index, charge)` for each key it
/// grows. A write the rules do not name grows nothing but its keys'
/// existing entries (an expiry, a deletion).
pub fn charges(cmd: &Command, costs: &[Cost], argv: &[Vec<u8>], mut f: impl FnMut(usize, Charge)) {
    if !cmd.arity_ok(argv.len()) {
        // Redis refuses it with its arity error: nothing is stored.
        return;
    }
    let len = |i: usize| argv.get(i).map_or(0, |a| a.len() as u64);
    let after_key = || argv.iter().skip(2).map(|a| a.len() as u64 + ARG_BYTES).sum::<u64>();
    for cost in costs {
        match *cost {
            Cost::Replaces { value } => f(1, Charge::AtMost(KEY_BYTES + len(1) + len(value))),
            Cost::Pairs => {
                for i in cmd.key_indexes(argv) {
                    f(i, Charge::AtMost(KEY_BYTES + len(i) + len(i + 1)));
                }
            }
            Cost::Adds => f(1, Charge::Add(KEY_BYTES + len(1) + after_key())),
            // A string grown in place is allocated greedily
            // (`sdsMakeRoomFor` doubles it below 1 MiB): twice its bytes.
            Cost::Appends => f(1, Charge::Add(KEY_BYTES + len(1) + 2 * len(2))),
            Cost::Offset { at, .. } => {
                let end = number(argv.get(at).map_or(&b""[..], Vec::as_slice)).unwrap_or(0) + len(at + 1);
                f(1, Charge::AtMost(KEY_BYTES + len(1) + 2 * end));
            }
            Cost::Number => f(1, Charge::AtMost(KEY_BYTES + len(1) + NUMBER_BYTES)),
            Cost::Moves => f(2, Charge::ElementOf(1)),
            Cost::Renames => f(2, Charge::ValueOf(1)),
            Cost::Count { .. } | Cost::OptionCount { .. } | Cost::Span { .. } | Cost::Script { .. } | Cost::Library => {
            }
        }
    }
}

/// The script body or library `argv` makes the server keep, if any (by
/// `costs` from [`Command::lab_check`]).
pub fn script_body<'a>(costs: &[Cost], argv: &'a [Vec<u8>]) -> Option<&'a [u8]> {
    costs.iter().find_map(|c| match *c {
        Cost::Script { at } => argv.get(at).map(Vec::as_slice),
        Cost::Library => argv.last().map(Vec::as_slice),
        _ => None,
    })
}

/// The ACL rules that allow exactly what the lab's table allows, for a
/// user that starts from `-@all`: `+get`, `+script|load`, … `later`: also
/// the commands of profile 8.4 (`DELEX`), which a 7.0 server's `ACL
/// SETUSER` refuses as unknown, so they go in a second, optional call.
pub fn acl_commands(later: bool) -> impl Iterator<Item = String> {
    COMMANDS
        .iter()
        .filter(move |c| (c.flags & flags::V8_4 != 0) == later)
        .flat_map(|c| {
            let (whole, subs): (bool, &[(&str, &[Cost])]) = match c.lab {
                Lab::Allow(_) => (true, &[]),
                Lab::Deny(_) | Lab::Admin(_) => (false, &[]),
                Lab::Subs(s) => (false, s),
            };
            whole
                .then(|| format!("+{}", c.name))
                .into_iter()
                .chain(subs.iter().map(move |(s, _)| format!("+{}|{s}", c.name)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::table::find;
    use crate::server::Profile;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        crate::cli::parse(line).unwrap()
    }

    fn check(line: &str) -> Result<&'static [Cost], Refusal> {
        let a = argv(line);
        find(&a[0], Profile::V8_4).unwrap().lab_check(&a)
    }

    #[test]
    fn containers_pass_only_the_listed_subcommands() {
        for ok in [
            "SCRIPT LOAD x",
            "script exists a",
            "SCRIPT FLUSH",
            "OBJECT ENCODING k",
            "FUNCTION LIST",
            "FUNCTION LOAD x",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for refused in [
            "SCRIPT DEBUG SYNC",
            "SCRIPT DEBUG YES",
            "SCRIPT KILL",
            "OBJECT IDLETIME k",
            "OBJECT FREQ k",
            "FUNCTION FLUSH",
            "FUNCTION STATS",
            "FUNCTION DUMP",
        ] {
            assert_eq!(check(refused), Err(Refusal::Subcommand), "{refused}");
        }
        for denied in [
            "MEMORY DOCTOR",
            "MEMORY USAGE k",
            "CONFIG GET x",
            "KEYS *",
            "PUBSUB CHANNELS",
        ] {
            assert!(matches!(check(denied), Err(Refusal::Denied(_))), "{denied}");
        }
    }

    #[test]
    fn counts_and_offsets_are_bounded() {
        assert!(check("HRANDFIELD h -1000").is_ok());
        assert!(check("HRANDFIELD h 5 WITHVALUES").is_ok());
        assert_eq!(
            check("HRANDFIELD h -4611686018427387903"),
            Err(Refusal::Bound {
                what: "the count",
                got: 4_611_686_018_427_387_903,
                max: 1000
            })
        );
        assert!(check("HRANDFIELD h -20000000").is_err());
        assert!(check("HRANDFIELD h notanumber").is_ok(), "Redis's own error");
        assert!(check("SPOP s 100000").is_err());
        assert!(check("SCAN 0 COUNT 1000").is_ok());
        assert!(check("SCAN 0 count 2147483647").is_err());
        assert!(check("SCAN 0 COUNT 10 COUNT 99999999").is_err());
        assert!(check("SETRANGE k 1048576 x").is_ok());
        assert!(matches!(
            check("SETRANGE big 536870911 x"),
            Err(Refusal::Bound { what: "the offset", .. })
        ));
        assert!(number(b"99999999999999999999999999").is_some_and(|n| n == u64::MAX));
    }

    #[test]
    fn range_spans_are_bounded_when_the_indexes_say_them() {
        for ok in [
            "LRANGE l 0 999",
            "LRANGE l -1000 -1",
            "LRANGE l 5 2",
            "LRANGE l 0 -1",
            "LRANGE l -9223372036854775808 9223372036854775807",
            "LRANGE l x y",
            "ZRANGE z 0 100000 BYSCORE",
            "ZRANGE z -inf +inf BYSCORE LIMIT 0 10",
            "ZREVRANGE z 0 -1 WITHSCORES",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check("LRANGE l 0 100000000"),
            Err(Refusal::Bound {
                what: "the span",
                got: 100_000_001,
                max: 1000
            })
        );
        assert!(check("LRANGE l 0 9223372036854775807").is_err());
        assert!(check("ZRANGE z 0 5000 WITHSCORES").is_err());
        assert!(check("ZREVRANGE z -9223372036854775808 -1").is_err());
    }

    fn charged(line: &str) -> Vec<(usize, Charge)> {
        let a = argv(line);
        let cmd = find(&a[0], Profile::V8_4).unwrap();
        let costs = cmd.lab_check(&a).unwrap();
        let mut out = Vec::new();
        charges(cmd, costs, &a, |i, c| out.push((i, c)));
        out
    }

    #[test]
    fn writes_are_charged_what_they_can_store() {
        assert_eq!(charged("SET k vv NX PX 100"), vec![(1, Charge::AtMost(KEY_BYTES + 3))]);
        assert_eq!(charged("PSETEX k 100 vvv"), vec![(1, Charge::AtMost(KEY_BYTES + 4))]);
        assert_eq!(
            charged("MSET a 1 bb 22"),
            vec![(1, Charge::AtMost(KEY_BYTES + 2)), (3, Charge::AtMost(KEY_BYTES + 4))]
        );
        assert_eq!(
            charged("HSET h f v"),
            vec![(1, Charge::Add(KEY_BYTES + 1 + 2 + 2 * ARG_BYTES))]
        );
        assert_eq!(
            charged("SETRANGE s 1000 xy"),
            vec![(1, Charge::AtMost(KEY_BYTES + 1 + 2 * 1002))]
        );
        assert_eq!(charged("APPEND s xyz"), vec![(1, Charge::Add(KEY_BYTES + 1 + 6))]);
        assert_eq!(charged("RPOPLPUSH a b"), vec![(2, Charge::ElementOf(1))]);
        assert_eq!(charged("RENAME a b"), vec![(2, Charge::ValueOf(1))]);
        assert!(charged("GET k").is_empty() && charged("DEL k").is_empty());
    }

    /// Every row that may grow memory (`CMD_DENYOOM`) and is allowed says
    /// how much: no write is missing from the account.
    #[test]
    fn every_allowed_denyoom_row_has_a_storage_rule() {
        for c in COMMANDS {
            let Lab::Allow(costs) = c.lab else { continue };
            if c.flags & flags::DENYOOM == 0 {
                continue;
            }
            let stores = costs.iter().any(|k| {
                matches!(
                    k,
                    Cost::Replaces { .. }
                        | Cost::Pairs
                        | Cost::Adds
                        | Cost::Appends
                        | Cost::Offset { .. }
                        | Cost::Number
                        | Cost::Moves
                )
            });
            assert!(stores, "{} grows memory without a rule", c.name);
        }
    }

    #[test]
    fn the_acl_is_the_table() {
        let rules: Vec<String> = acl_commands(false).collect();
        for r in [
            "+get",
            "+eval",
            "+script|load",
            "+object|encoding",
            "+function|load",
            "+info",
        ] {
            assert!(rules.iter().any(|x| x == r), "{r} in {rules:?}");
        }
        for r in [
            "+scan",
            "+script",
            "+script|debug",
            "+script|kill",
            "+memory",
            "+object",
            "+object|freq",
            "+keys",
            "+flushall",
            "+function|flush",
            "+randomkey",
            "+pubsub",
            "+delex",
        ] {
            assert!(!rules.iter().any(|x| x == r), "{r} in {rules:?}");
        }
        assert_eq!(acl_commands(true).collect::<Vec<_>>(), ["+delex", "+digest"]);
    }
}
