//! The scripting commands: EVAL, EVALSHA, SCRIPT, FUNCTION, FCALL (and their
//! `_RO` variants). This file is only their syntax — argument order,
//! subcommands, arity, redis-server 7.0's texts for each mistake; running the
//! scripts is [`crate::server::script`]'s job.
//!
//! The dispatcher has already checked each command's own arity (EVAL `-3`,
//! SCRIPT `-2`, …) and that a subcommand exists; a subcommand's arity is
//! checked here, because redis-server checks it against the subcommand's
//! entry (`ERR wrong number of arguments for 'script|load' command`).

use crate::reply::Reply;
use crate::server::script::convert::{one_line, parse_ll};
use crate::server::script::{RestorePolicy, Scripting};
use crate::server::ScriptHost;

fn is_ro(argv: &[Vec<u8>]) -> bool {
    argv.first()
        .is_some_and(|name| name.len() > 3 && name[name.len() - 3..].eq_ignore_ascii_case(b"_ro"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `%.128s` of a C string.
fn c128(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len()).min(128);
    text(&b[..end])
}

fn wrong_args(full_name: &str) -> Reply {
    Reply::Error(format!("ERR wrong number of arguments for '{full_name}' command"))
}

/// Redis's arity rule: positive is exact, negative is a minimum.
fn arity_ok(arity: i64, argc: usize) -> bool {
    let argc = argc as i64;
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// A script's keys and its other arguments.
type KeysAndArgs<'a> = (&'a [Vec<u8>], &'a [Vec<u8>]);

/// Split `numkeys key... arg...` (argv[2] onwards). `bad` is the error for a
/// numkeys that is not an integer: EVAL and FCALL word it differently.
fn split_keys<'a>(argv: &'a [Vec<u8>], bad: &str) -> Result<KeysAndArgs<'a>, Reply> {
    let Some(numkeys) = argv.get(2) else {
        return Err(wrong_args(&text(&argv[0]).to_lowercase()));
    };
    let Some(n) = parse_ll(numkeys) else {
        return Err(Reply::error(bad));
    };
    let available = argv.len() as i64 - 3;
    if n > available {
        return Err(Reply::error("ERR Number of keys can't be greater than number of args"));
    }
    if n < 0 {
        return Err(Reply::error("ERR Number of keys can't be negative"));
    }
    let split = 3 + n as usize;
    Ok((&argv[3..split], &argv[split..]))
}

/// `EVAL script numkeys [key ...] [arg ...]`, and `EVAL_RO`, which refuses
/// writes.
pub(crate) fn eval(s: &mut Scripting, host: &mut dyn ScriptHost, argv: &[Vec<u8>]) -> Reply {
    let (keys, args) = match split_keys(argv, "ERR value is not an integer or out of range") {
        Ok(split) => split,
        Err(reply) => return reply,
    };
    s.eval(host, &argv[1], keys, args, is_ro(argv))
}

/// `EVALSHA sha1 numkeys [key ...] [arg ...]`, and `EVALSHA_RO`.
pub(crate) fn evalsha(s: &mut Scripting, host: &mut dyn ScriptHost, argv: &[Vec<u8>]) -> Reply {
    // A SHA1 is 40 characters; anything else cannot match, and redis-server
    // says so before it even looks at numkeys.
    if argv.get(1).is_none_or(|sha| sha.len() != 40) {
        return Reply::error("NOSCRIPT No matching script. Please use EVAL.");
    }
    let (keys, args) = match split_keys(argv, "ERR value is not an integer or out of range") {
        Ok(split) => split,
        Err(reply) => return reply,
    };
    s.evalsha(host, &argv[1], keys, args, is_ro(argv))
}

/// `addReplyHelp`: a header, the lines, and the HELP entry, as statuses.
fn help(container: &[u8], lines: &[&str]) -> Reply {
    let mut out = vec![Reply::Status(format!(
        "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        text(container).to_uppercase()
    ))];
    out.extend(lines.iter().map(|l| Reply::status(*l)));
    out.push(Reply::status("HELP"));
    out.push(Reply::status("    Prints this help."));
    Reply::Array(out)
}

const SCRIPT_HELP: &[&str] = &[
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
];

const FUNCTION_HELP: &[&str] = &[
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
];

/// A subcommand's name (lower case) and arity, or the unknown-subcommand
/// error.
fn subcommand(argv: &[Vec<u8>], table: &[(&'static str, i64)]) -> Result<(&'static str, i64), Reply> {
    let container = text(&argv[0]).to_uppercase();
    let Some(sub) = argv.get(1) else {
        return Err(wrong_args(&container.to_lowercase()));
    };
    let lower = text(sub).to_lowercase();
    match table.iter().find(|(name, _)| *name == lower) {
        Some(&(name, arity)) if arity_ok(arity, argv.len()) => Ok((name, arity)),
        Some(&(name, _)) => Err(wrong_args(&format!("{}|{name}", container.to_lowercase()))),
        None => Err(Reply::Error(one_line(
            format!("ERR unknown subcommand '{}'. Try {container} HELP.", c128(sub)).as_bytes(),
        ))),
    }
}

/// `addReplySubcommandSyntaxError`.
fn syntax_error(argv: &[Vec<u8>]) -> Reply {
    Reply::Error(one_line(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
            c128(&argv[1]),
            text(&argv[0]).to_uppercase()
        )
        .as_bytes(),
    ))
}

/// `SCRIPT LOAD|EXISTS|FLUSH|KILL|DEBUG|HELP`.
pub(crate) fn script(s: &mut Scripting, _host: &mut dyn ScriptHost, argv: &[Vec<u8>]) -> Reply {
    const SUBS: &[(&str, i64)] = &[
        ("debug", 3),
        ("exists", -3),
        ("flush", -2),
        ("help", 2),
        ("kill", 2),
        ("load", 3),
    ];
    let (sub, _) = match subcommand(argv, SUBS) {
        Ok(sub) => sub,
        Err(reply) => return reply,
    };
    match sub {
        "help" => help(&argv[0], SCRIPT_HELP),
        "flush" => {
            let ok = match argv.get(2) {
                None => argv.len() == 2,
                Some(mode) => {
                    argv.len() == 3 && (mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async"))
                }
            };
            if !ok {
                return Reply::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            }
            s.script_flush();
            Reply::ok()
        }
        "exists" => Reply::Array(
            argv[2..]
                .iter()
                .map(|sha| Reply::Integer(i64::from(s.script_exists(sha))))
                .collect(),
        ),
        "load" => match s.script_load(&argv[2]) {
            Ok(sha) => Reply::bulk(sha.into_bytes()),
            Err(reply) => reply,
        },
        // Between two commands no script is ever running.
        "kill" => Reply::error("NOTBUSY No scripts in execution right now."),
        "debug" => {
            let mode = &argv[2];
            if mode.eq_ignore_ascii_case(b"no") {
                Reply::ok()
            } else if mode.eq_ignore_ascii_case(b"yes") || mode.eq_ignore_ascii_case(b"sync") {
                Reply::error("ERR SCRIPT DEBUG is not supported by the simulator (the Lua debugger needs redis-cli --ldb against a real server)")
            } else {
                Reply::error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
            }
        }
        _ => Reply::error("ERR unknown subcommand"),
    }
}

/// `FUNCTION LOAD|DELETE|LIST|FLUSH|STATS|KILL|HELP|DUMP|RESTORE`.
// long: FUNCTION's subcommands, one arm each
pub(crate) fn function(s: &mut Scripting, host: &mut dyn ScriptHost, argv: &[Vec<u8>]) -> Reply {
    const SUBS: &[(&str, i64)] = &[
        ("delete", 3),
        ("dump", 2),
        ("flush", -2),
        ("help", 2),
        ("kill", 2),
        ("list", -2),
        ("load", -3),
        ("restore", -3),
        ("stats", 2),
    ];
    let (sub, _) = match subcommand(argv, SUBS) {
        Ok(sub) => sub,
        Err(reply) => return reply,
    };
    match sub {
        "load" => {
            // FUNCTION LOAD [REPLACE] code: options, then the code last.
            let mut replace = false;
            let mut pos = 2;
            while pos < argv.len() - 1 {
                let arg = &argv[pos];
                pos += 1;
                if arg.eq_ignore_ascii_case(b"replace") {
                    replace = true;
                    continue;
                }
                return Reply::Error(one_line(format!("ERR Unknown option given: {}", text(arg)).as_bytes()));
            }
            if pos >= argv.len() {
                return Reply::error("ERR Function code is missing");
            }
            s.function_load(&argv[pos], replace)
        }
        "delete" => s.function_delete(&argv[2]),
        "list" => {
            let mut with_code = false;
            let mut pattern: Option<&[u8]> = None;
            let mut i = 2;
            while i < argv.len() {
                let arg = &argv[i];
                if !with_code && arg.eq_ignore_ascii_case(b"withcode") {
                    with_code = true;
                } else if pattern.is_none() && arg.eq_ignore_ascii_case(b"libraryname") {
                    if i >= argv.len() - 1 {
                        return Reply::error("ERR library name argument was not given");
                    }
                    i += 1;
                    pattern = Some(&argv[i]);
                } else {
                    return Reply::Error(one_line(format!("ERR Unknown argument {}", text(arg)).as_bytes()));
                }
                i += 1;
            }
            s.function_list(pattern, with_code)
        }
        "flush" => {
            if argv.len() > 3 {
                return syntax_error(argv);
            }
            let ok = match argv.get(2) {
                None => true,
                Some(mode) => mode.eq_ignore_ascii_case(b"sync") || mode.eq_ignore_ascii_case(b"async"),
            };
            if !ok {
                return Reply::error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
            s.function_flush();
            Reply::ok()
        }
        "stats" => s.function_stats(),
        "kill" => Reply::error("NOTBUSY No scripts in execution right now."),
        "help" => help(&argv[0], FUNCTION_HELP),
        "dump" => s.function_dump(host.rdb_compression()),
        "restore" => {
            if argv.len() > 4 {
                return syntax_error(argv);
            }
            let policy = match argv.get(3) {
                None => RestorePolicy::Append,
                Some(p) if p.eq_ignore_ascii_case(b"append") => RestorePolicy::Append,
                Some(p) if p.eq_ignore_ascii_case(b"replace") => RestorePolicy::Replace,
                Some(p) if p.eq_ignore_ascii_case(b"flush") => RestorePolicy::Flush,
                Some(_) => {
                    return Reply::error(
                        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                    )
                }
            };
            s.function_restore(&argv[2], policy)
        }
        _ => Reply::error("ERR unknown subcommand"),
    }
}

/// `FCALL function numkeys [key ...] [arg ...]`, and `FCALL_RO`.
pub(crate) fn fcall(s: &mut Scripting, host: &mut dyn ScriptHost, argv: &[Vec<u8>]) -> Reply {
    // redis-server looks the function up before it parses numkeys.
    if argv.get(1).is_none_or(|name| !s.function_exists(name)) {
        return Reply::error("ERR Function not found");
    }
    let (keys, args) = match split_keys(argv, "ERR Bad number of keys provided") {
        Ok(split) => split,
        Err(reply) => return reply,
    };
    s.fcall(host, &argv[1], keys, args, is_ro(argv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Just enough of a node for the syntax tests.
    #[derive(Default)]
    struct Fake(BTreeMap<Vec<u8>, Vec<u8>>);

    impl ScriptHost for Fake {
        fn call(&mut self, argv: &[Vec<u8>]) -> Reply {
            match argv[0].to_ascii_lowercase().as_slice() {
                b"get" => self.0.get(&argv[1]).cloned().map_or(Reply::Nil, Reply::Bulk),
                b"set" => {
                    self.0.insert(argv[1].clone(), argv[2].clone());
                    Reply::ok()
                }
                _ => Reply::error("ERR Unknown Redis command called from script"),
            }
        }
    }

    fn run(s: &mut Scripting, h: &mut Fake, args: &[&str]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        match args[0].to_ascii_lowercase().as_str() {
            "eval" | "eval_ro" => eval(s, h, &argv),
            "evalsha" | "evalsha_ro" => evalsha(s, h, &argv),
            "script" => script(s, h, &argv),
            "function" => function(s, h, &argv),
            _ => fcall(s, h, &argv),
        }
    }

    fn err(r: Reply) -> String {
        match r {
            Reply::Error(e) => e,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn numkeys_errors() {
        let (mut s, mut h) = (Scripting::new(), Fake::default());
        assert_eq!(
            err(run(&mut s, &mut h, &["EVAL", "return 1", "-1"])),
            "ERR Number of keys can't be negative"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["EVAL", "return 1", "2", "a"])),
            "ERR Number of keys can't be greater than number of args"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["EVAL", "return 1", "abc"])),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["EVAL", "return 1", " 1", "a"])),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["EVALSHA", "abc", "abc"])),
            "NOSCRIPT No matching script. Please use EVAL."
        );
        assert_eq!(
            err(run(
                &mut s,
                &mut h,
                &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "abc"]
            )),
            "ERR value is not an integer or out of range"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FCALL", "nosuch", "x"])),
            "ERR Function not found"
        );
    }

    #[test]
    fn script_subcommands() {
        let (mut s, mut h) = (Scripting::new(), Fake::default());
        assert_eq!(
            run(&mut s, &mut h, &["SCRIPT", "LOAD", "return 'loaded'"]),
            Reply::bulk("b534286061d4b9e4026607613b95c06c06015ae8")
        );
        assert_eq!(
            run(
                &mut s,
                &mut h,
                &[
                    "SCRIPT",
                    "EXISTS",
                    "b534286061d4b9e4026607613b95c06c06015ae8",
                    "B534286061D4B9E4026607613B95C06C06015AE8",
                    "e0e1"
                ]
            ),
            Reply::Array(vec![Reply::Integer(1), Reply::Integer(1), Reply::Integer(0)])
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "LOAD"])),
            "ERR wrong number of arguments for 'script|load' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "LOAD", "a", "b"])),
            "ERR wrong number of arguments for 'script|load' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "EXISTS"])),
            "ERR wrong number of arguments for 'script|exists' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "FOO"])),
            "ERR unknown subcommand 'FOO'. Try SCRIPT HELP."
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "KILL"])),
            "NOTBUSY No scripts in execution right now."
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "KILL", "x"])),
            "ERR wrong number of arguments for 'script|kill' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "FLUSH", "LAZY"])),
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "FLUSH", "SYNC", "x"])),
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["SCRIPT", "DEBUG", "MAYBE"])),
            "ERR Use SCRIPT DEBUG YES/SYNC/NO"
        );
        assert_eq!(run(&mut s, &mut h, &["SCRIPT", "FLUSH", "ASYNC"]), Reply::ok());
        assert_eq!(
            run(
                &mut s,
                &mut h,
                &["SCRIPT", "EXISTS", "b534286061d4b9e4026607613b95c06c06015ae8"]
            ),
            Reply::Array(vec![Reply::Integer(0)])
        );
        let Reply::Array(lines) = run(&mut s, &mut h, &["script", "help"]) else {
            panic!()
        };
        assert_eq!(
            lines[0],
            Reply::status("SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
        );
        assert_eq!(lines.last(), Some(&Reply::status("    Prints this help.")));
        assert_eq!(lines.len(), SCRIPT_HELP.len() + 3);
    }

    #[test]
    fn function_subcommands() {
        let (mut s, mut h) = (Scripting::new(), Fake::default());
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "LOAD"])),
            "ERR wrong number of arguments for 'function|load' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "LOAD", "REPLACE"])),
            "ERR Missing library metadata"
        );
        assert_eq!(
            err(run(
                &mut s,
                &mut h,
                &[
                    "FUNCTION",
                    "LOAD",
                    "BOGUS",
                    "#!lua name=q\nredis.register_function('q', function() end)"
                ]
            )),
            "ERR Unknown option given: BOGUS"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "DELETE"])),
            "ERR wrong number of arguments for 'function|delete' command"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "DELETE", "nosuch"])),
            "ERR Library not found"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "LIST", "LIBRARYNAME"])),
            "ERR library name argument was not given"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "LIST", "BOGUS"])),
            "ERR Unknown argument BOGUS"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "LIST", "WITHCODE", "WITHCODE"])),
            "ERR Unknown argument WITHCODE"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "FLUSH", "BOGUS"])),
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "FLUSH", "SYNC", "X"])),
            "ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP."
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "FOO"])),
            "ERR unknown subcommand 'FOO'. Try FUNCTION HELP."
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "KILL"])),
            "NOTBUSY No scripts in execution right now."
        );
        assert_eq!(
            err(run(&mut s, &mut h, &["FUNCTION", "HELP", "x"])),
            "ERR wrong number of arguments for 'function|help' command"
        );
        assert_eq!(run(&mut s, &mut h, &["FUNCTION", "LIST"]), Reply::Array(vec![]));
        let Reply::Array(lines) = run(&mut s, &mut h, &["FUNCTION", "HELP"]) else {
            panic!()
        };
        assert_eq!(lines.len(), FUNCTION_HELP.len() + 3);
    }
}
