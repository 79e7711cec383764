//! Which scripts are bounded by their text alone: straight-line ones.
//!
//! A lab session on a real server runs every script on the simulator first
//! (the real driver's pre-flight), because a script owns redis-server while
//! it runs and Redis sets no limit on its time, its Lua heap or its log.
//! That check costs a round trip (the session's keys are copied first) and
//! a run on the simulator, for every `EVAL` — also for the compare-and-delete
//! release that every lock cycle ends with, which cannot loop, allocate or
//! log however its data looks.
//!
//! [`is_straight_line`] says when a script is such a one, from its text: no
//! loop, no function, no library but a handful of functions that take time
//! in proportion to their input, at most [`MAX_CALLS`] call sites, and no
//! way to reach the string library (`s:rep(…)`, `s['rep']`, `..`). Every
//! statement of such a script runs at most once, so it runs at most
//! [`MAX_CALLS`] Redis commands (each one the user could have typed) and
//! makes no string longer than the replies it reads. The answer errs one
//! way only: anything the check does not understand (a long bracket, a
//! shebang, a method call, a name it does not know) makes a script *not*
//! straight-line, which only costs it the pre-flight. What Redis would
//! refuse anyway (a syntax error, a global assignment) may pass: it cannot
//! run long either.

/// Longest script text considered (the release is about a hundred bytes).
pub const MAX_TEXT: usize = 4096;

/// Most call sites (`f(…)`), so most Redis commands one run can send.
pub const MAX_CALLS: usize = 8;

/// Keywords a straight-line script may use: no `function`, `while`,
/// `for`, `repeat`, `do`, `break` or `in`.
const KEYWORDS: &[&[u8]] = &[
    b"local", b"if", b"then", b"else", b"elseif", b"end", b"return", b"and", b"or", b"not", b"nil", b"true", b"false",
];

/// Every Lua 5.1 keyword (a name that is one of them is not a variable).
const ALL_KEYWORDS: &[&[u8]] = &[
    b"and",
    b"break",
    b"do",
    b"else",
    b"elseif",
    b"end",
    b"false",
    b"for",
    b"function",
    b"if",
    b"in",
    b"local",
    b"nil",
    b"not",
    b"or",
    b"repeat",
    b"return",
    b"then",
    b"true",
    b"until",
    b"while",
];

/// Globals a straight-line script may read: its arguments, `redis` (for
/// [`REDIS_FIELDS`] only) and conversions whose work is bounded by their
/// argument.
const GLOBALS: &[&[u8]] = &[b"KEYS", b"ARGV", b"redis", b"tonumber", b"tostring", b"type"];

/// The fields of `redis` it may use.
const REDIS_FIELDS: &[&[u8]] = &[b"call", b"pcall", b"status_reply", b"error_reply"];

/// One token, as far as the check needs to tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'a> {
    Name(&'a [u8]),
    /// A quoted string: the bytes between the quotes, escapes as written.
    Str(&'a [u8]),
    Num,
    Sym(&'static str),
}

/// Is `body` a straight-line script (see the module doc)?
pub fn is_straight_line(body: &[u8]) -> bool {
    if body.len() > MAX_TEXT {
        return false;
    }
    tokens(body).is_some_and(|toks| straight(&toks))
}

/// The commands a straight-line script can call, when every call site
/// names its command with a string literal: `redis.call('GET', …)` yes,
/// `redis.call(ARGV[1], …)` or `local c = redis.call c('GET')` no (`None`).
/// A script whose commands come from its arguments passes
/// [`is_straight_line`] (it still cannot loop) but could run any command,
/// which a host that vets the commands a script may run (the lab on a
/// server it does not own) must see first.
pub fn literal_commands(body: &[u8]) -> Option<Vec<Vec<u8>>> {
    if body.len() > MAX_TEXT {
        return None;
    }
    let toks = tokens(body)?;
    if !straight(&toks) {
        return None;
    }
    let at = |i: usize| toks.get(i).copied();
    let mut names = Vec::new();
    for (i, &t) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(at);
        let field = prev == Some(Tok::Sym(".")) && i >= 2 && at(i - 2) == Some(Tok::Name(b"redis"));
        match t {
            // `redis.call` / `redis.pcall`: only as `(` and a literal name.
            Tok::Name(b"call" | b"pcall") if field => match (at(i + 1), at(i + 2)) {
                (Some(Tok::Sym("(")), Some(Tok::Str(name))) if !name.contains(&b'\\') => names.push(name.to_vec()),
                _ => return None,
            },
            // Every other call: a conversion or a reply helper, by name.
            Tok::Sym("(") => match prev {
                Some(Tok::Name(b"tonumber" | b"tostring" | b"type")) if i < 2 || at(i - 2) != Some(Tok::Sym(".")) => {}
                Some(Tok::Name(b"call" | b"pcall" | b"status_reply" | b"error_reply"))
                    if i >= 3 && at(i - 2) == Some(Tok::Sym(".")) => {}
                Some(Tok::Name(n)) if ALL_KEYWORDS.contains(&n) => {}
                Some(Tok::Name(_) | Tok::Sym(")" | "]")) => return None,
                _ => {}
            },
            _ => {}
        }
    }
    Some(names)
}

/// The rules over the token stream.
fn straight(toks: &[Tok<'_>]) -> bool {
    let mut locals: Vec<&[u8]> = Vec::new();
    let mut declaring = false;
    let mut calls = 0usize;
    for (i, &t) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| toks[p]);
        let next = toks.get(i + 1).copied();
        // A call: `f(`, `f"s"`, `f{` after something that can be called.
        let after_callee = matches!(prev, Some(Tok::Name(n)) if !ALL_KEYWORDS.contains(&n))
            || matches!(prev, Some(Tok::Sym(")" | "]")));
        match t {
            Tok::Name(n) if ALL_KEYWORDS.contains(&n) => {
                if !KEYWORDS.contains(&n) {
                    return false;
                }
                declaring = n == b"local";
                continue;
            }
            Tok::Name(n) => {
                if prev == Some(Tok::Sym(".")) {
                    // Only `redis.call` and its kin; checked at the dot.
                } else if declaring {
                    locals.push(n);
                } else if n == b"redis" {
                    if next != Some(Tok::Sym(".")) {
                        return false;
                    }
                } else if !GLOBALS.contains(&n) && !locals.contains(&n) {
                    return false;
                }
                continue;
            }
            Tok::Sym(".") => {
                let field = matches!(next, Some(Tok::Name(f)) if REDIS_FIELDS.contains(&f));
                if prev != Some(Tok::Name(b"redis")) || !field {
                    return false;
                }
            }
            Tok::Sym("[") => {
                // Indexing only `KEYS` and `ARGV` (a string's `["rep"]` is
                // the string library); `[k] = v` in a table constructor.
                let args = matches!(prev, Some(Tok::Name(b"KEYS" | b"ARGV")));
                if !args && after_callee {
                    return false;
                }
            }
            Tok::Sym("(") if after_callee => calls += 1,
            Tok::Str(_) | Tok::Sym("{") if after_callee => return false,
            Tok::Num | Tok::Str(_) | Tok::Sym(_) => {}
        }
        if t != Tok::Sym(",") {
            declaring = false;
        }
    }
    calls <= MAX_CALLS
}

/// Lua 5.1's tokens of `src` (`llex.c`, `luaX_next`), or `None` where the
/// text has something the check leaves to the pre-flight: a long bracket
/// (string or comment), a byte outside ASCII, an unfinished string, a
/// symbol straight-line code has no use for (`:`, `..`, `...`, `~`).
fn tokens(src: &[u8]) -> Option<Vec<Tok<'_>>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        let at = |k: usize| src.get(i + k).copied().unwrap_or(0);
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => i += 1,
            b'-' if at(1) == b'-' => {
                if at(2) == b'[' && matches!(at(3), b'[' | b'=') {
                    return None;
                }
                // A comment runs to the end of the line, `\n` or `\r`.
                while i < src.len() && !matches!(src[i], b'\n' | b'\r') {
                    i += 1;
                }
            }
            b'[' if matches!(at(1), b'[' | b'=') => return None,
            b'\'' | b'"' => {
                i += 1;
                let start = i;
                loop {
                    match *src.get(i)? {
                        b'\\' => i += 2,
                        b'\n' | b'\r' => return None,
                        q if q == c => break,
                        _ => i += 1,
                    }
                }
                out.push(Tok::Str(&src[start..i]));
                i += 1;
            }
            b'0'..=b'9' => i = numeral(src, i, &mut out),
            b'.' if at(1).is_ascii_digit() => i = numeral(src, i, &mut out),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < src.len() && (src[i].is_ascii_alphanumeric() || src[i] == b'_') {
                    i += 1;
                }
                out.push(Tok::Name(&src[start..i]));
            }
            _ => {
                let two = [c, at(1)];
                let lone_dot = c != b'.' || at(1) != b'.';
                let sym = SYMBOLS
                    .iter()
                    .find(|s| s.as_bytes() == two)
                    .or_else(|| SYMBOLS.iter().find(|s| s.as_bytes() == [c] && lone_dot))?;
                i += sym.len();
                out.push(Tok::Sym(sym));
            }
        }
    }
    Some(out)
}

/// The symbols a straight-line script may use (two-byte ones first; a
/// lone `.` only when no dot follows, so `..` and `...` are refused).
const SYMBOLS: &[&str] = &[
    "==", "~=", "<=", ">=", "=", "<", ">", "+", "-", "*", "/", "%", "^", "#", "(", ")", "{", "}", "[", "]", ";", ",",
    ".",
];

/// A numeral from `i` (`read_numeral`: digits, dots, letters, and a sign
/// after an exponent's `e`); a malformed one is Lua's syntax error.
fn numeral<'a>(src: &'a [u8], mut i: usize, out: &mut Vec<Tok<'a>>) -> usize {
    while i < src.len() {
        let c = src[i];
        let sign = (c == b'+' || c == b'-') && matches!(src[i - 1], b'e' | b'E');
        if !(sign || c.is_ascii_alphanumeric() || c == b'.' || c == b'_') {
            break;
        }
        i += 1;
    }
    out.push(Tok::Num);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE: &str =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

    #[test]
    fn the_lessons_release_renewal_and_fence_are_straight_line() {
        for s in [
            RELEASE,
            "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n  return redis.call(\"del\",KEYS[1])\nelse\n  return 0\nend",
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
            "local n = redis.call('INCR', KEYS[1]) -- the fence\nreturn n",
            "local v, t = redis.call('GET', KEYS[1]), tonumber(ARGV[2]); if v == false then return nil end return {v, t}",
            "return redis.status_reply('OK')",
            "local ok = redis.pcall('SET', KEYS[1], ARGV[1], 'NX', 'PX', tonumber(ARGV[2]) * 2) return type(ok)",
            "return {[1] = KEYS[1], 2.5e+3, (.5), 0x10, #ARGV, 'caf\u{e9}'}",
        ] {
            assert!(is_straight_line(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn literal_commands_are_named_only_by_literals() {
        let names = |s: &str| literal_commands(s.as_bytes());
        let v = |xs: &[&str]| Some(xs.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>());
        assert_eq!(names(RELEASE), v(&["GET", "DEL"]));
        assert_eq!(
            names("return redis.pcall(\"set\", KEYS[1], tonumber(ARGV[1]))"),
            v(&["set"])
        );
        assert_eq!(
            names("if (1) then return redis.status_reply('OK') end return 0"),
            v(&[])
        );
        // Issue 35, B8: the command comes from ARGV.
        assert_eq!(names("return redis.call(ARGV[1], KEYS[1], ARGV[2])"), None);
        assert_eq!(names("local c = redis.call return c('GET', KEYS[1])"), None);
        assert_eq!(names("return redis.call('G\\69T', KEYS[1])"), None);
        assert_eq!(names("while true do end"), None);
    }

    #[test]
    fn loops_functions_and_the_string_library_are_not() {
        for s in [
            "while true do end",
            "for i = 1, 10 do redis.call('INCR', KEYS[1]) end",
            "repeat until false",
            "local function f() return f() end return f()",
            "local f = function() end",
            "do end",
            "return string.rep('x', 1e9)",
            "return ('x'):rep(1e9)",
            "local s = ARGV[1] return s['rep'](s, 1e9)",
            "return (ARGV[1])['rep'](ARGV[1], 1e9)",
            "local a = ARGV[1] .. ARGV[1] return a",
            "return ...",
            "redis.log(redis.LOG_WARNING, 'x')",
            "local r = redis return r.call('GET', KEYS[1])",
            "return redis.setresp(3)",
            "return loadstring('while true do end')()",
            "return tostring{1}",
            "return tostring'x'",
            "return unpack(ARGV)",
            "x = 1",
            "return KEYS[1] ~= nil and #KEYS[1] or ~1",
            "#!lua flags=no-writes\nreturn 1",
            "local caf\u{e9} = 1",
            "return [[x]]",
            "return [==[x]==]",
            "--[[ a long comment ]] return 1",
            "--[==[\n]==] return 1",
            "return 'unfinished",
            "return 'a\nb'",
            "return redis.call('GET', KEYS[1])[1]",
        ] {
            assert!(!is_straight_line(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn a_comment_ends_where_lua_ends_it_and_hides_nothing() {
        // `\r` ends a comment in Lua too: the loop after it is code.
        assert!(!is_straight_line(b"-- note\rwhile true do end"));
        assert!(is_straight_line(b"-- while true do end\nreturn 1"));
        // An escaped quote does not end a string; an escaped backslash
        // before a quote does not escape it, and what follows is code.
        assert!(is_straight_line(b"return 'a\\' while true do end --'"));
        assert!(!is_straight_line(b"return 'a\\\\' while true do end --'"));
        assert!(is_straight_line(b"return 'a\\'b', \"c\\\\\""));
    }

    #[test]
    fn call_sites_and_length_are_bounded() {
        let calls = |n: usize| {
            let mut s = String::new();
            for _ in 0..n {
                s.push_str("redis.call('INCR', KEYS[1]) ");
            }
            s
        };
        assert!(is_straight_line(calls(MAX_CALLS).as_bytes()));
        assert!(!is_straight_line(calls(MAX_CALLS + 1).as_bytes()));
        let long = format!("return 1 {}", " ".repeat(MAX_TEXT));
        assert!(!is_straight_line(long.as_bytes()));
    }

    mod sound {
        use super::super::is_straight_line;
        use crate::reply::Reply;
        use crate::server::script::control::set_thread_limits;
        use crate::server::script::vm::SIMULATOR_STOPPED;
        use crate::server::{Node, Profile};
        use proptest::prelude::*;

        /// Statements of straight-line scripts (after `local x = ARGV[1]`).
        const SAFE: &[&str] = &[
            "redis.call('INCR', KEYS[1])",
            "if x == ARGV[1] then redis.call('INCR', KEYS[1]) else x = nil end",
            "local y = tonumber(ARGV[2]) + #x",
            "x = tostring(type(x))",
            "local t = {x, [2] = ARGV[2]};",
            "-- a note\n",
            "local s = 'a\\'b'",
            "redis.pcall('GET', KEYS[1])",
        ];

        /// Statements that make a script run long or grow, some hidden from
        /// a careless lexer: loops, recursion, the string library by every
        /// road, concatenation, a comment that `\r` ends, an escaped
        /// backslash before a quote.
        const DANGER: &[&str] = &[
            "while true do end",
            "for i = 1, 1e9 do end",
            "repeat until false",
            "local function f() return f() end f()",
            "local s = string.rep(x, 1e4)",
            "local s = x:rep(1e4)",
            "local s = x['rep'](x, 1e4)",
            "for i = 1, 16 do x = x .. x end",
            "for i = 1, 100 do redis.call('INCR', KEYS[1]) end",
            "-- c\rwhile true do end",
            "local q = 'a\\\\' while true do end --'",
        ];

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            /// Whatever a straight-line script is made of, it ends within a
            /// budget far below a loop's, runs at most MAX_CALLS commands
            /// and logs nothing: the simulator, given a small instruction
            /// budget, never has to stop one.
            #[test]
            fn a_straight_line_script_never_runs_long(
                parts in proptest::collection::vec(
                    prop_oneof![6 => prop::sample::select(SAFE), 1 => prop::sample::select(DANGER)],
                    0..12,
                ),
                glue in prop::sample::select(&[" ", "\n", ";"][..]),
            ) {
                let body = format!("local x = ARGV[1]{glue}{}{glue}return 1", parts.join(glue));
                if !is_straight_line(body.as_bytes()) {
                    return Ok(());
                }
                set_thread_limits(None, 20_000);
                let mut node = Node::new(Profile::V7_0);
                let c = node.connect();
                let big = "x".repeat(4096);
                let argv: Vec<Vec<u8>> = ["EVAL", &body, "1", "k", &big, "7"].iter().map(|a| a.as_bytes().to_vec()).collect();
                let reply = node.execute(c, &argv);
                set_thread_limits(None, crate::server::script::INSTRUCTION_LIMIT);
                if let Reply::Error(e) = &reply {
                    prop_assert!(!e.starts_with(SIMULATOR_STOPPED), "{body:?}: {e}");
                }
                let count = match node.execute(c, &[b"GET".to_vec(), b"k".to_vec()]) {
                    Reply::Bulk(n) => String::from_utf8_lossy(&n).parse::<usize>().unwrap_or(usize::MAX),
                    _ => 0,
                };
                prop_assert!(count <= super::MAX_CALLS, "{body:?} ran {count} INCRs");
            }
        }
    }
}
