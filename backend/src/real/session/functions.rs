//! Function libraries a lab session owns, as pure rewrites of argv.
//!
//! # Why names are rewritten
//!
//! Redis keeps function libraries and function names server-wide, outside
//! every key prefix and every ACL key pattern. Without a wall here a session
//! could `FUNCTION LOAD REPLACE "#!lua NAME=ownerlib …"` over the owner's
//! library (Redis reads `name=` in any case, and `sdssplitargs` quoting, so a
//! check of the literal `name=` misses spellings Redis accepts), or register
//! a function called `acquire` that outlives it and makes every later
//! lesson 30 fail with "Function acquire already exists".
//!
//! So a session's names live in a namespace of its own, `lab_<id>_`: the
//! library name Redis finds in the shebang (parsed by core's
//! [`library_header`], the transcription of `functionExtractLibMetaData`)
//! is rewritten to `lab_<id>_<name>`, the functions it registers get the
//! same prefix, and `FCALL`, `FUNCTION DELETE` and `FUNCTION LIST` are
//! rewritten to match. A session cannot name anything outside its namespace,
//! so it can neither replace, delete nor shadow a library or a function it
//! did not load; what it loaded is deleted by listing its namespace when it
//! ends. Replies and errors are shown with the prefix taken off again.
//!
//! # How registered functions get the prefix
//!
//! The function names are chosen by Lua code at load time (`redis.
//! register_function('acquire', …)`), so they are prefixed by a one-line
//! shim put in front of the library's code, on the line of its first
//! statement so that line numbers in Redis's error messages stay the
//! user's. During `FUNCTION LOAD` redis-server runs the code with nothing
//! but a small `redis` table in reach (no `type`, no `setmetatable`), so the
//! shim is a plain `local redis` table whose `register_function` prefixes
//! the name and wraps the callback; the wrapper points the same `local` at
//! the full runtime `redis` API the first time the function is called, so
//! the user's callbacks find `redis.call` as usual. The session checks the
//! result after every load (all functions of the library carry the prefix)
//! and deletes the library otherwise, so the shim is a convenience, not the
//! wall.

use locklab_core::server::script::meta::{library_header, valid_name};

/// `lab_<id>_`: the namespace of a session's libraries and functions.
pub fn namespace(id: &str) -> String {
    format!("lab_{id}_")
}

/// The payload of `FUNCTION LOAD` rewritten into namespace `ns`: the
/// library renamed, the shim in front of its code. `None` when Redis would
/// refuse the payload's metadata anyway (no shebang, no valid name): the
/// caller then answers with the simulator's error and sends nothing.
pub fn scope_library(payload: &[u8], ns: &str) -> Option<Vec<u8>> {
    let header = library_header(payload).ok()?;
    if !valid_name(&header.name) {
        return None;
    }
    // Redis copies the code with `sdsnew(shebang_end)`: up to the first NUL.
    let rest = &payload[header.code_start..];
    let code = &rest[..rest.iter().position(|&b| b == 0).unwrap_or(rest.len())];
    let mut out = b"#!".to_vec();
    out.extend_from_slice(&header.engine);
    out.extend_from_slice(b" name=");
    out.extend_from_slice(ns.as_bytes());
    out.extend_from_slice(&header.name);
    // `code` starts with the shebang's newline: the shim goes right after
    // it, on the line of the first statement.
    out.push(b'\n');
    out.extend_from_slice(shim(ns).as_bytes());
    out.push(b' ');
    out.extend_from_slice(code.get(1..).unwrap_or_default());
    Some(out)
}

/// The one-line load-time shim (see the module doc).
fn shim(ns: &str) -> String {
    format!(
        "local __locklab_global = function() return redis end \
         local __locklab_fix \
         local __locklab_reg = redis.register_function \
         local function __locklab_wrap(cb) return function(...) __locklab_fix() return cb(...) end end \
         local redis = {{ \
         register_function = function(a, b) \
         if b == nil and a ~= nil and a.function_name ~= nil then \
         a.function_name = '{ns}' .. a.function_name \
         if a.callback ~= nil then a.callback = __locklab_wrap(a.callback) end \
         return __locklab_reg(a) end \
         if a ~= nil then a = '{ns}' .. a end \
         if b ~= nil then b = __locklab_wrap(b) end \
         return __locklab_reg(a, b) end, \
         log = function(...) return __locklab_global().log(...) end, \
         LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3, \
         REDIS_VERSION = __locklab_global().REDIS_VERSION, \
         REDIS_VERSION_NUM = __locklab_global().REDIS_VERSION_NUM }} \
         __locklab_fix = function() redis = __locklab_global() end"
    )
}

/// A `FUNCTION …` or `FCALL …` argv, rewritten into namespace `ns`.
#[derive(Debug, PartialEq, Eq)]
pub enum Scoped {
    /// Not a function command: send it as it is.
    Untouched,
    /// Send this instead.
    Send(Vec<Vec<u8>>),
    /// `FUNCTION LOAD` whose metadata Redis would refuse: answer with the
    /// simulator's error, send nothing.
    BadLibrary,
    /// A subcommand a session may not use, and why.
    Refused(&'static str),
}

/// Rewrite a function command for namespace `ns`.
pub fn scope_command(argv: &[Vec<u8>], ns: &str) -> Scoped {
    let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
    let prefixed = |name: &[u8]| [ns.as_bytes(), name].concat();
    if (is(0, "fcall") || is(0, "fcall_ro")) && argv.len() >= 2 {
        let mut out = argv.to_vec();
        out[1] = prefixed(&argv[1]);
        return Scoped::Send(out);
    }
    if !is(0, "function") || argv.len() < 2 {
        return Scoped::Untouched;
    }
    let mut out = argv.to_vec();
    match String::from_utf8_lossy(&argv[1]).to_ascii_lowercase().as_str() {
        // FUNCTION LOAD [REPLACE] payload: the payload is the last argument
        // (Redis's arity and option errors come from the simulator first).
        "load" if argv.len() >= 3 => match scope_library(&argv[argv.len() - 1], ns) {
            Some(payload) => {
                let last = out.len() - 1;
                out[last] = payload;
                Scoped::Send(out)
            }
            None => Scoped::BadLibrary,
        },
        "delete" if argv.len() == 3 => {
            out[2] = prefixed(&argv[2]);
            Scoped::Send(out)
        }
        "list" => {
            // LIBRARYNAME takes a glob; the namespace has no glob characters,
            // so a pattern behind it matches inside the namespace only.
            let mut i = 2;
            let mut found = false;
            while i < out.len() {
                if out[i].eq_ignore_ascii_case(b"libraryname") && i + 1 < out.len() {
                    out[i + 1] = prefixed(&argv[i + 1]);
                    found = true;
                    i += 1;
                }
                i += 1;
            }
            if !found {
                out.push(b"LIBRARYNAME".to_vec());
                out.push(prefixed(b"*"));
            }
            Scoped::Send(out)
        }
        "flush" => Scoped::Refused("it deletes every library on the server; delete yours with FUNCTION DELETE"),
        "dump" | "restore" => Scoped::Refused("it reads or replaces every library on the server"),
        "stats" => Scoped::Refused("it shows the script another client is running"),
        "kill" => Scoped::Refused("the lab kills a session's runaway script itself"),
        _ => Scoped::Send(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use locklab_core::cli::parse;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        parse(line).unwrap()
    }

    fn header_name(payload: &[u8]) -> Vec<u8> {
        library_header(payload).unwrap().name
    }

    #[test]
    fn every_spelling_redis_accepts_lands_in_the_namespace() {
        for payload in [
            "#!lua name=ownerlib\nredis.register_function('f', function() return 1 end)",
            "#!lua NAME=ownerlib\nredis.register_function('f', function() return 1 end)",
            "#!lua Name=ownerlib\nredis.register_function('f', function() return 1 end)",
            "#!lua \"name=ownerlib\"\nredis.register_function('f', function() return 1 end)",
            "#!lua name=\"ownerlib\"\r\nredis.register_function('f', function() return 1 end)",
            "#!LUA   name=ownerlib  \nredis.register_function('f', function() return 1 end)",
        ] {
            let scoped = scope_library(payload.as_bytes(), "lab_abc_").unwrap_or_else(|| panic!("{payload}"));
            assert_eq!(header_name(&scoped), b"lab_abc_ownerlib", "{payload}");
        }
    }

    #[test]
    fn payloads_redis_refuses_are_not_sent() {
        for payload in [
            "return 1",
            "#!lua\nreturn 1",
            "#!lua name=a-b\nreturn 1",
            "#!lua name=\n",
            "#!lua name=a name=b\n",
        ] {
            assert_eq!(scope_library(payload.as_bytes(), "lab_abc_"), None, "{payload}");
        }
    }

    #[test]
    fn line_numbers_stay_the_users() {
        let scoped = scope_library(
            b"#!lua name=l\nredis.register_function('f', function() return 1 end)\n-- 3",
            "lab_x_",
        )
        .unwrap();
        let text = String::from_utf8(scoped).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].ends_with("redis.register_function('f', function() return 1 end)"));
        assert_eq!(lines[2], "-- 3");
    }

    #[test]
    fn commands_are_rewritten_into_the_namespace() {
        let ns = "lab_abc_";
        assert_eq!(
            scope_command(&argv("FCALL acquire 1 k v"), ns),
            Scoped::Send(argv("FCALL lab_abc_acquire 1 k v"))
        );
        assert_eq!(
            scope_command(&argv("fcall_ro f 0"), ns),
            Scoped::Send(argv("fcall_ro lab_abc_f 0"))
        );
        assert_eq!(
            scope_command(&argv("FUNCTION DELETE ownerlib"), ns),
            Scoped::Send(argv("FUNCTION DELETE lab_abc_ownerlib"))
        );
        assert_eq!(
            scope_command(&argv("FUNCTION LIST"), ns),
            Scoped::Send(argv("FUNCTION LIST LIBRARYNAME lab_abc_*"))
        );
        assert_eq!(
            scope_command(&argv("FUNCTION LIST WITHCODE LIBRARYNAME lock*"), ns),
            Scoped::Send(argv("FUNCTION LIST WITHCODE LIBRARYNAME lab_abc_lock*"))
        );
        assert!(matches!(scope_command(&argv("FUNCTION FLUSH"), ns), Scoped::Refused(_)));
        assert!(matches!(scope_command(&argv("FUNCTION DUMP"), ns), Scoped::Refused(_)));
        assert!(matches!(scope_command(&argv("FUNCTION KILL"), ns), Scoped::Refused(_)));
        assert_eq!(scope_command(&argv("FUNCTION LOAD bogus"), ns), Scoped::BadLibrary);
        assert_eq!(scope_command(&argv("GET k"), ns), Scoped::Untouched);
    }
}
