//! The session's first two walls as pure functions: which argv the lab
//! sends, how its keys and function names are rewritten into the session's
//! prefix and namespace, and how a reply is shown back as the user typed
//! it.
//!
//! Nothing here touches a socket, so every rule is unit-tested natively,
//! and a property test drives the whole command table through
//! [`Sandbox::check_and_rewrite`] to check that no key position of a
//! rewritten argv names a key outside the prefix (see the tests). The
//! third wall, the ACL user, is Redis's own and is checked against a real
//! redis-server in `tests/tests/security.rs`.

use std::collections::BTreeMap;

use locklab_core::reply::Reply;
use locklab_core::server::lab;
use locklab_core::server::table::{self, Command};
use locklab_core::server::Profile;

use super::functions::{self, Scoped};
use super::{Confinement, SessionError, SessionLimits};

/// What one session may send, and how its names are rewritten.
#[derive(Clone, Debug)]
pub struct Sandbox {
    /// `lab:<id>:`, or empty on the session's own cluster.
    pub prefix: String,
    /// `lab_<id>_`: the namespace of the session's function libraries and
    /// functions ([`functions`]), or empty on the session's own cluster.
    pub ns: String,
    pub confinement: Confinement,
    pub limits: SessionLimits,
    /// The session's libraries as the user wrote them, by name: what
    /// `FUNCTION LIST WITHCODE` shows.
    pub originals: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Sandbox {
    /// The sandbox of session `id`.
    pub fn new(id: &str, confinement: Confinement, limits: SessionLimits) -> Sandbox {
        let (prefix, ns) = match confinement {
            Confinement::Prefix => (format!("lab:{id}:"), functions::namespace(id)),
            Confinement::OwnCluster => (String::new(), String::new()),
        };
        Sandbox {
            prefix,
            ns,
            confinement,
            limits,
            originals: BTreeMap::new(),
        }
    }

    /// The first wall: is this argv one the lab allows, and within limits?
    /// If so, its keys under the prefix and its function names in the
    /// session's namespace, with the row's cost rules for the quota.
    ///
    /// What is allowed is the table's `lab` column ([`lab`]): a command the
    /// table does not have, a row it denies, a container's subcommand it
    /// does not list, or a count or offset past its bound is refused here,
    /// before anything is sent. The row is looked up once.
    pub fn check_and_rewrite(&self, argv: &[Vec<u8>]) -> Result<Rewritten, SessionError> {
        if argv.is_empty() {
            return Err(SessionError::Empty);
        }
        self.check_size(argv)?;
        let Checked { cmd, costs } = lab_row(argv)?;
        self.check_script_size(costs, argv)?;
        let mut out = match functions::scope_command(argv, &self.ns) {
            Scoped::Untouched => argv.to_vec(),
            Scoped::Send(scoped) => scoped,
            Scoped::BadLibrary => return Ok(Rewritten::Answer),
            Scoped::Refused(why) => {
                return Err(SessionError::NotAllowed {
                    name: shown_name(cmd, argv),
                    why,
                })
            }
        };
        let checked = Checked { cmd, costs };
        if self.confinement == Confinement::OwnCluster {
            // Keys as typed: the cluster holds nobody else's.
            return Ok(Rewritten::Send(out, checked));
        }
        self.prefix_keys(cmd, argv, &mut out);
        if cmd.name == "scan" {
            self.confine_scan(&mut out);
        }
        Ok(Rewritten::Send(out, checked))
    }

    /// `out` (`argv`, maybe with names namespaced) with every key position
    /// the table finds in `argv` under the prefix.
    fn prefix_keys(&self, cmd: &Command, argv: &[Vec<u8>], out: &mut [Vec<u8>]) {
        for i in cmd.key_indexes(argv) {
            out[i] = [self.prefix.as_bytes(), &argv[i]].concat();
        }
    }

    /// The argument count and the command's size within the limits.
    fn check_size(&self, argv: &[Vec<u8>]) -> Result<(), SessionError> {
        let l = &self.limits;
        if argv.len() > l.max_args {
            return Err(SessionError::TooLarge {
                what: "the argument count",
                got: argv.len(),
                limit: l.max_args,
            });
        }
        let total: usize = argv.iter().map(Vec::len).sum();
        if total > l.max_argv_bytes {
            return Err(SessionError::TooLarge {
                what: "the command",
                got: total,
                limit: l.max_argv_bytes,
            });
        }
        Ok(())
    }

    /// A script body (`EVAL`'s, `SCRIPT LOAD`'s, `FUNCTION LOAD`'s: the
    /// row's [`lab::Cost::Script`] or [`lab::Cost::Library`]) within the
    /// script limit.
    fn check_script_size(&self, costs: &[lab::Cost], argv: &[Vec<u8>]) -> Result<(), SessionError> {
        match lab::script_body(costs, argv) {
            Some(b) if b.len() > self.limits.max_script => Err(SessionError::TooLarge {
                what: "the script",
                got: b.len(),
                limit: self.limits.max_script,
            }),
            _ => Ok(()),
        }
    }

    /// `SCAN` takes no keys, and ACL key patterns do not filter what it
    /// returns, so confine it with `MATCH`: the user's pattern under the
    /// prefix, or the prefix alone. The prefix (`lab:<hex>:`) has no glob
    /// characters, so it matches itself literally.
    fn confine_scan(&self, argv: &mut Vec<Vec<u8>>) {
        let mut i = 2;
        let mut found = false;
        while i + 1 < argv.len() {
            if argv[i].eq_ignore_ascii_case(b"match") {
                let mut p = self.prefix.as_bytes().to_vec();
                p.extend_from_slice(&argv[i + 1]);
                argv[i + 1] = p;
                found = true;
            }
            i += 2;
        }
        if !found {
            argv.push(b"MATCH".to_vec());
            argv.push(format!("{}*", self.prefix).into_bytes());
        }
    }

    /// Show a reply as the session's user typed things: the keys of a
    /// `SCAN` without the prefix, the session's library and function names
    /// without the namespace (and a library's code as the user wrote it),
    /// both cut out of error texts. Values are shown exactly as stored: a
    /// value that happens to start with the prefix is a value.
    pub fn unscope(&self, argv: &[Vec<u8>], reply: &mut Reply, scan: bool) {
        let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        if let Reply::Error(text) = reply {
            *text = self.unscope_text(text);
            return;
        }
        if scan {
            if let Reply::Array(parts) = reply {
                if let Some(Reply::Array(keys)) = parts.get_mut(1) {
                    for k in keys {
                        strip(k, self.prefix.as_bytes());
                    }
                }
            }
        } else if is(0, "function") && (is(1, "load") || is(1, "list")) && !self.ns.is_empty() {
            self.unscope_functions(reply);
        } else if !self.prefix.is_empty() && super::preflight::runs_lua(argv) {
            // A script that returns one of its declared keys (`return
            // KEYS[1]`) shows it as the user declared it: exactly those
            // names, not every string that happens to start the same.
            let keys: Vec<(Vec<u8>, &Vec<u8>)> = argv
                .first()
                .and_then(|n| table::find(n, Profile::V8_4))
                .map(|cmd| cmd.key_indexes(argv))
                .unwrap_or_default()
                .into_iter()
                .map(|i| ([self.prefix.as_bytes(), &argv[i]].concat(), &argv[i]))
                .collect();
            unscope_keys(reply, &keys);
        }
    }

    /// `FUNCTION LOAD`'s reply (the library name) or `FUNCTION LIST`'s
    /// (libraries as `library_name`, `engine`, `functions`, `library_code`
    /// pairs; each function as `name`, `description`, `flags` pairs).
    fn unscope_functions(&self, reply: &mut Reply) {
        match reply {
            Reply::Bulk(_) => strip(reply, self.ns.as_bytes()),
            Reply::Array(libraries) => {
                for lib in libraries {
                    if let Reply::Array(pairs) = lib {
                        self.unscope_pairs(pairs);
                    }
                }
            }
            _ => {}
        }
    }

    fn unscope_pairs(&self, pairs: &mut [Reply]) {
        let mut library = Vec::new();
        for pair in pairs.chunks_mut(2) {
            let [Reply::Bulk(key), value] = pair else { continue };
            match key.as_slice() {
                b"library_name" | b"name" => {
                    strip(value, self.ns.as_bytes());
                    if let Reply::Bulk(v) = value {
                        library = v.clone();
                    }
                }
                b"library_code" => {
                    if let Some(original) = self.originals.get(&library) {
                        *value = Reply::Bulk(original.clone());
                    }
                }
                b"functions" => {
                    if let Reply::Array(fs) = value {
                        for f in fs {
                            if let Reply::Array(fp) = f {
                                self.unscope_pairs(fp);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// An error text without the session's prefix and namespace.
    pub fn unscope_text(&self, text: &str) -> String {
        let mut t = text.to_owned();
        for p in [&self.prefix, &self.ns] {
            if !p.is_empty() {
                t = t.replace(p.as_str(), "");
            }
        }
        t
    }
}

/// The table's row of a command that passed, and its cost rules.
#[derive(Clone, Copy)]
pub struct Checked {
    pub cmd: &'static Command,
    pub costs: &'static [lab::Cost],
}

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked")
            .field("cmd", &self.cmd.name)
            .field("costs", &self.costs)
            .finish()
    }
}

/// What [`Sandbox::check_and_rewrite`] decided.
pub enum Rewritten {
    /// Send this argv (and here is its row, for the quota).
    Send(Vec<Vec<u8>>, Checked),
    /// Do not send; the simulator's answer is Redis's (a `FUNCTION LOAD`
    /// whose metadata Redis refuses).
    Answer,
}

/// Every bulk string of `reply` that is exactly one of `keys`' stored
/// names, shown as its typed name.
fn unscope_keys(reply: &mut Reply, keys: &[(Vec<u8>, &Vec<u8>)]) {
    match reply {
        Reply::Bulk(b) => {
            if let Some((_, typed)) = keys.iter().find(|(stored, _)| stored == b) {
                *b = (*typed).clone();
            }
        }
        Reply::Array(items) => items.iter_mut().for_each(|r| unscope_keys(r, keys)),
        Reply::Map(pairs) => pairs.iter_mut().for_each(|(k, v)| {
            unscope_keys(k, keys);
            unscope_keys(v, keys);
        }),
        _ => {}
    }
}

/// Cut `prefix` off a bulk string that starts with it.
fn strip(reply: &mut Reply, prefix: &[u8]) {
    if let Reply::Bulk(b) = reply {
        if !prefix.is_empty() && b.starts_with(prefix) {
            b.drain(..prefix.len());
        }
    }
}

/// May a script of a session call `argv` (on the lab's simulator, which
/// runs every script of a session on a server the lab does not own)? The
/// same rules as a typed command, from the same row: the table's `lab`
/// column with its count and offset bounds ([`Command::lab_check`]), and
/// nothing the lab runs only on its own connection (`SCAN`). This is the
/// fence's `allow` (core's `ScriptFence`), so a script cannot make the
/// simulator, or through its writes Redis, do what a typed line may not.
pub fn script_call_allowed(argv: &[Vec<u8>]) -> Result<(), String> {
    if argv.is_empty() {
        return Err("an empty command".to_owned());
    }
    let shown = |e: SessionError| e.to_string().trim_start_matches("ERR ").to_owned();
    let Checked { cmd, .. } = lab_row(argv).map_err(shown)?;
    if cmd.lab_admin() {
        return Err(format!(
            "locklab: '{}' is not allowed in a lab session's script",
            shown_name(cmd, argv)
        ));
    }
    Ok(())
}

/// What a script may not call under `--scripts=run`, where it runs on a
/// server the lab does not own after the pre-flight: the commands that
/// read what only that server has (its `INFO`, its clock, a TTL read a
/// millisecond later, its encodings, its random choices). Those are how a
/// script's run on Redis goes another way than on the simulator.
pub const SERVER_STATE_READERS: &[&str] = &[
    "info",
    "time",
    "lastsave",
    "pttl",
    "ttl",
    "expiretime",
    "pexpiretime",
    "object",
    "memory",
    "srandmember",
    "hrandfield",
    "zrandmember",
    "spop",
    "randomkey",
];

/// [`script_call_allowed`], and none of [`SERVER_STATE_READERS`]: the fence
/// of the pre-flight under `--scripts=run`.
pub fn script_call_allowed_to_run(argv: &[Vec<u8>]) -> Result<(), String> {
    let name = argv
        .first()
        .map(|n| String::from_utf8_lossy(n).to_lowercase())
        .unwrap_or_default();
    if SERVER_STATE_READERS.contains(&name.as_str()) {
        return Err(format!(
            "locklab: the script calls {}, which reads what only your server has, so its run there could go \
             another way than on the lab's simulator; under --scripts=run such a script is not sent",
            name.to_uppercase()
        ));
    }
    script_call_allowed(argv)
}

/// The table's row of `argv` (not empty) and its cost rules, or why the
/// lab refuses it: the one lookup behind a typed line
/// ([`Sandbox::check_and_rewrite`]) and a script's call
/// ([`script_call_allowed`]). The table of the newest profile: `DELEX`
/// passes, and a 7.0 server answers it with its own unknown-command error.
fn lab_row(argv: &[Vec<u8>]) -> Result<Checked, SessionError> {
    let name_bytes = argv.first().ok_or(SessionError::Empty)?;
    let Some(cmd) = table::find(name_bytes, Profile::V8_4) else {
        return Err(SessionError::NotAllowed {
            name: String::from_utf8_lossy(name_bytes).to_uppercase(),
            why: "the lab's command table does not have it",
        });
    };
    let costs = cmd.lab_check(argv).map_err(|r| refusal(cmd, argv, r))?;
    Ok(Checked { cmd, costs })
}

/// The console's name of `argv`'s command: `OBJECT FREQ` for a
/// container's subcommand, `GET` otherwise.
fn shown_name(cmd: &Command, argv: &[Vec<u8>]) -> String {
    match argv.get(1) {
        Some(sub) if matches!(cmd.lab, lab::Lab::Subs(_)) || !cmd.subcommands.is_empty() => {
            format!("{} {}", cmd.name, String::from_utf8_lossy(sub)).to_uppercase()
        }
        _ => cmd.name.to_uppercase(),
    }
}

/// The session's error for what the table refused.
fn refusal(cmd: &Command, argv: &[Vec<u8>], r: lab::Refusal) -> SessionError {
    let name = shown_name(cmd, argv);
    match r {
        lab::Refusal::Denied(why) => SessionError::NotAllowed { name, why },
        lab::Refusal::Subcommand => SessionError::NotAllowed {
            name,
            why: "the lab's command table does not list this subcommand",
        },
        lab::Refusal::Bound { what, got, max } => SessionError::OverBound { name, what, got, max },
    }
}

#[cfg(test)]
mod tests {
    use locklab_core::cli::parse;
    use locklab_core::server::table::COMMANDS;
    use proptest::prelude::*;

    use super::*;

    fn sandbox() -> Sandbox {
        Sandbox::new("abc", Confinement::Prefix, SessionLimits::default())
    }

    fn sent(argv: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
        match sandbox().check_and_rewrite(argv) {
            Ok(Rewritten::Send(out, _)) => Some(out),
            _ => None,
        }
    }

    fn words(line: &str) -> Vec<Vec<u8>> {
        parse(line).unwrap()
    }

    #[test]
    fn keys_go_under_the_prefix_and_nothing_else_moves() {
        assert_eq!(
            sent(&words("SET lock v NX PX 100")),
            Some(words("SET lab:abc:lock v NX PX 100"))
        );
        assert_eq!(
            sent(&words("EVAL body 2 a b x")),
            Some(words("EVAL body 2 lab:abc:a lab:abc:b x"))
        );
        assert_eq!(sent(&words("DEL a b")), Some(words("DEL lab:abc:a lab:abc:b")));
        assert_eq!(sent(&words("PING")), Some(words("PING")));
    }

    #[test]
    fn scan_is_confined_to_the_prefix() {
        assert_eq!(sent(&words("SCAN 0")), Some(words("SCAN 0 MATCH lab:abc:*")));
        assert_eq!(
            sent(&words("SCAN 0 MATCH lock:* COUNT 10")),
            Some(words("SCAN 0 MATCH lab:abc:lock:* COUNT 10"))
        );
    }

    #[test]
    fn what_reaches_past_the_session_is_refused() {
        for line in [
            "FLUSHALL",
            "KEYS *",
            "RANDOMKEY",
            "SELECT 1",
            "SCRIPT KILL",
            "FUNCTION FLUSH",
            "CONFIG GET *",
        ] {
            assert!(
                matches!(
                    sandbox().check_and_rewrite(&words(line)),
                    Err(SessionError::NotAllowed { .. })
                ),
                "{line}"
            );
        }
    }

    #[test]
    fn replies_are_shown_as_typed() {
        let sb = sandbox();
        let argv = words("SCAN 0");
        let mut reply = Reply::Array(vec![
            Reply::Bulk(b"0".to_vec()),
            Reply::Array(vec![Reply::Bulk(b"lab:abc:lock".to_vec())]),
        ]);
        sb.unscope(&argv, &mut reply, true);
        assert_eq!(
            reply,
            Reply::Array(vec![
                Reply::Bulk(b"0".to_vec()),
                Reply::Array(vec![Reply::Bulk(b"lock".to_vec())])
            ])
        );
        // A value that happens to start with the prefix is a value.
        let mut value = Reply::Bulk(b"lab:abc:lock".to_vec());
        sb.unscope(&words("GET k"), &mut value, false);
        assert_eq!(value, Reply::Bulk(b"lab:abc:lock".to_vec()));
        assert_eq!(
            sb.unscope_text("WRONGTYPE lab:abc:k in lab_abc_lib"),
            "WRONGTYPE k in lib"
        );
    }

    /// The pattern redis-server's `scanGenericCommand` would use for `argv`:
    /// options are read in pairs from the third argument, the last `MATCH`
    /// wins, and anything else is a syntax error (`None`: nothing is
    /// scanned). A scan with no pattern at all scans everything, so that
    /// is the empty pattern, which the property rejects.
    fn scan_pattern(argv: &[Vec<u8>]) -> Option<Vec<u8>> {
        let mut pattern = Vec::new();
        let mut i = 2;
        while i < argv.len() {
            let pair = argv.len() - i >= 2;
            let is = |w: &[u8]| argv[i].eq_ignore_ascii_case(w);
            if pair && is(b"match") {
                pattern = argv[i + 1].clone();
            } else if !(pair && (is(b"count") || is(b"type"))) {
                return None;
            }
            i += 2;
        }
        Some(pattern)
    }

    /// An argument of a generated argv: mostly short words, sometimes a
    /// number (so a `numkeys` position takes values that name keys), and
    /// sometimes the words the rewriting looks for.
    fn arg() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => "[a-z:*]{0,6}".prop_map(String::into_bytes),
            2 => (0u8..6).prop_map(|n| n.to_string().into_bytes()),
            1 => prop_oneof![Just("MATCH"), Just("match"), Just("COUNT"), Just("TYPE"), Just("load"), Just("list")]
                .prop_map(|s| s.as_bytes().to_vec()),
            1 => proptest::collection::vec(any::<u8>(), 0..4),
        ]
    }

    /// An argument of a hostile argv: the ordinary ones, and the sizes
    /// the attacks used (huge counts and offsets, either sign).
    fn hostile() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            3 => arg(),
            2 => any::<i64>().prop_map(|n| n.to_string().into_bytes()),
            1 => (0u64..1 << 31).prop_map(|n| n.to_string().into_bytes()),
            1 => prop_oneof![Just("-4611686018427387903"), Just("2147483647"), Just("536870911"), Just("-20000000")]
                .prop_map(|s| s.as_bytes().to_vec()),
            1 => prop_oneof![Just("COUNT"), Just("count"), Just("debug"), Just("freq"), Just("doctor"), Just("encoding")]
                .prop_map(|s| s.as_bytes().to_vec()),
        ]
    }

    /// A subcommand name the row knows, or a hostile word.
    fn subcommand(cmd: &Command) -> impl Strategy<Value = Vec<u8>> {
        let subs: Vec<Vec<u8>> = cmd
            .subcommands
            .iter()
            .map(|(s, _)| s.to_uppercase().into_bytes())
            .collect();
        if subs.is_empty() {
            hostile().boxed()
        } else {
            prop_oneof![3 => proptest::sample::select(subs), 1 => hostile()].boxed()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Driven by the command table with hostile sizes: whatever the
        /// sandbox sends is a pair the generated ACL allows too, every
        /// count and offset is within its row's bound, and the quota's
        /// charge never lets the account pass the quota.
        #[test]
        fn the_table_refuses_or_bounds_every_hostile_argv(
            (which, sub) in (0..COMMANDS.len()).prop_flat_map(|i| (Just(i), subcommand(&COMMANDS[i]))),
            rest in proptest::collection::vec(hostile(), 0..6),
        ) {
            let cmd = &COMMANDS[which];
            let mut argv = vec![cmd.name.to_uppercase().into_bytes(), sub];
            argv.extend(rest);
            let sb = sandbox();
            let Ok(Rewritten::Send(_, checked)) = sb.check_and_rewrite(&argv) else { return Ok(()) };
            let acl = super::super::acl_rules("u", "p", &sb.prefix);
            let whole = format!("+{}", cmd.name);
            let pair = format!("+{}|{}", cmd.name, String::from_utf8_lossy(&argv[1]).to_lowercase());
            let listed = acl.iter().any(|r| *r == whole || *r == pair);
            prop_assert!(listed || cmd.lab_admin() || cmd.flags & locklab_core::server::table::flags::V8_4 != 0,
                "{:?} is sent but not in the ACL", argv);
            prop_assert!(!matches!(cmd.lab, lab::Lab::Deny(_)));
            let number = |a: &[u8]| std::str::from_utf8(a).ok()?.parse::<i128>().ok();
            for cost in checked.costs {
                match *cost {
                    lab::Cost::Count { at, max } | lab::Cost::Offset { at, max } => {
                        if let Some(n) = argv.get(at).and_then(|a| number(a)) {
                            prop_assert!(n.unsigned_abs() <= u128::from(max), "{:?}", argv);
                        }
                    }
                    lab::Cost::Span { at, max } => {
                        let by_value = argv.iter().any(|a| {
                            a.eq_ignore_ascii_case(b"byscore") || a.eq_ignore_ascii_case(b"bylex")
                        });
                        // As `string2ll` reads them: 64 bits.
                        let index = |i: usize| argv.get(i).and_then(|a| number(a)).filter(|n| i64::try_from(*n).is_ok());
                        if let (Some(start), Some(stop), false) = (index(at), index(at + 1), by_value) {
                            if (start < 0) == (stop < 0) && stop >= start {
                                prop_assert!((stop - start + 1) as u128 <= u128::from(max), "{:?}", argv);
                            }
                        }
                    }
                    lab::Cost::OptionCount { word, max } => {
                        // Options in pairs after the cursor, as Redis reads them.
                        for w in argv[2.min(argv.len())..].chunks(2).filter(|w| w.len() == 2) {
                            if w[0].eq_ignore_ascii_case(word.as_bytes()) {
                                if let Some(n) = number(&w[1]) {
                                    prop_assert!(n.unsigned_abs() <= u128::from(max), "{:?}", argv);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
            let limits = SessionLimits { session_quota: 1 << 20, ..SessionLimits::default() };
            let mut quota = super::super::quota::Quota::default();
            for _ in 0..4 {
                if quota.charge(&limits, checked, &argv).is_err() {
                    break;
                }
                prop_assert!(quota.total() <= limits.session_quota);
            }
        }

        /// Driven by the command table: for every command the sandbox
        /// sends, every key position of the argv it sends (as the table
        /// reads that argv) names a key under the prefix, and the key
        /// positions are the ones the user's argv had.
        #[test]
        fn no_rewritten_key_escapes_the_prefix(
            which in 0..COMMANDS.len(),
            rest in proptest::collection::vec(arg(), 0..8),
        ) {
            let cmd = &COMMANDS[which];
            let mut argv = vec![cmd.name.to_uppercase().into_bytes()];
            argv.extend(rest);
            let sb = sandbox();
            if let Ok(Rewritten::Send(out, _)) = sb.check_and_rewrite(&argv) {
                let keys = cmd.key_indexes(&out);
                prop_assert_eq!(&keys, &cmd.key_indexes(&argv));
                for i in keys {
                    prop_assert!(out[i].starts_with(sb.prefix.as_bytes()), "{:?} → {:?}", argv, out);
                }
                if cmd.name == "scan" {
                    if let Some(pattern) = scan_pattern(&out) {
                        prop_assert!(pattern.starts_with(sb.prefix.as_bytes()), "{:?} → {:?}", argv, out);
                    }
                }
            }
        }
    }
}
