//! The first line of a script: EVAL's `#!lua flags=...` shebang and
//! FUNCTION LOAD's `#!lua name=...` library header.
//!
//! Both are parsed the way redis-server 7.0 does it — the line is split with
//! `sdssplitargs` (redis-cli's quoting rules, see [`crate::cli`]) and the
//! body keeps the newline that ends the shebang, so that Lua's line numbers
//! still count the shebang as line 1.

use crate::cli::parse_line;

use super::convert::cstr;

/// The flags a script or function can declare (`scripts_flags_def`), in the
/// order FUNCTION LIST prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// A script without a shebang: EVAL's backwards-compatible mode, in
    /// which none of the flags below are checked.
    pub compat: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// Flag names, as written in a shebang or `flags = {...}`.
    pub const NAMES: [&'static str; 5] = [
        "no-writes",
        "allow-oom",
        "allow-stale",
        "no-cluster",
        "allow-cross-slot-keys",
    ];

    fn set(&mut self, name: &str) -> bool {
        match name {
            "no-writes" => self.no_writes = true,
            "allow-oom" => self.allow_oom = true,
            "allow-stale" => self.allow_stale = true,
            "no-cluster" => self.no_cluster = true,
            "allow-cross-slot-keys" => self.allow_cross_slot_keys = true,
            _ => return false,
        }
        true
    }

    /// The declared flags' names, in `scripts_flags_def` order.
    pub fn names(&self) -> Vec<&'static str> {
        let on = [
            self.no_writes,
            self.allow_oom,
            self.allow_stale,
            self.no_cluster,
            self.allow_cross_slot_keys,
        ];
        Self::NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect()
    }

    /// `scriptPrepareForRun`: a script that may write cannot run under
    /// EVAL_RO/EVALSHA_RO/FCALL_RO. Returns the error text.
    pub(crate) fn check_ro(&self, ro: bool) -> Result<(), &'static str> {
        if !self.compat && !self.no_writes && ro {
            return Err("ERR Can not execute a script with write flag using *_ro command.");
        }
        Ok(())
    }

    /// `scriptFlagsToCmdFlags`: declared flags without `allow-oom` or
    /// `no-writes` (which implies it) make the script deny-oom.
    pub(crate) fn deny_oom(&self) -> bool {
        !self.compat && !self.allow_oom && !self.no_writes
    }

    /// `SCRIPT_ALLOW_OOM` of the run: only a declared `allow-oom`.
    pub(crate) fn allow_oom_run(&self) -> bool {
        !self.compat && self.allow_oom
    }

    /// Whether writes are refused while the script runs.
    pub(crate) fn read_only_run(&self, ro: bool) -> bool {
        ro || (!self.compat && self.no_writes)
    }
}

/// The line after `#!`, as a C string sees it, and where the body starts
/// (at the newline), or `None` when there is no newline.
fn shebang_line(body: &[u8]) -> Option<(&[u8], usize)> {
    let c = cstr(body);
    let end = c.iter().position(|&b| b == b'\n')?;
    Some((&c[..end], end))
}

/// `evalExtractShebangFlags`: the flags of an EVAL script and the length of
/// its shebang (0 without one). The error is the reply text.
pub(crate) fn eval_shebang(body: &[u8]) -> Result<(ScriptFlags, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((
            ScriptFlags {
                compat: true,
                ..ScriptFlags::default()
            },
            0,
        ));
    }
    let Some((line, len)) = shebang_line(body) else {
        return Err("ERR Invalid script shebang".into());
    };
    let parts = match parse_line(line) {
        Ok(parts) if !parts.is_empty() => parts,
        _ => return Err("ERR Invalid engine in script shebang".into()),
    };
    if parts[0] != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(&parts[0])
        ));
    }
    let mut flags = ScriptFlags::default();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(part)
            ));
        };
        // sdssplitlen of an empty string yields no parts at all.
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&c| c == b',') {
            if !flags.set(&String::from_utf8_lossy(name)) {
                return Err(format!(
                    "ERR Unexpected flag in script shebang: {}",
                    String::from_utf8_lossy(name)
                ));
            }
        }
    }
    Ok((flags, len))
}

/// What `functionExtractLibMetaData` finds in a library's first line.
#[derive(Debug, PartialEq, Eq)]
pub struct LibraryHeader {
    pub name: Vec<u8>,
    pub engine: Vec<u8>,
    /// Where the Lua code starts: the newline ending the header.
    pub code_start: usize,
}

/// Parse a FUNCTION LOAD payload's `#!<engine> name=<library>` line,
/// exactly as redis-server's `functionExtractLibMetaData` does (the line is
/// split as `sdssplitargs` splits it, `name=` in any case, the payload read
/// as a C string). Public because the real driver must find the library
/// name Redis will find, whatever spelling Redis accepts, to keep a lab
/// session's libraries its own.
pub fn library_header(payload: &[u8]) -> Result<LibraryHeader, String> {
    if !payload.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some((line, len)) = shebang_line(payload) else {
        return Err("ERR Invalid library metadata".into());
    };
    let parts = match parse_line(line) {
        Ok(parts) if !parts.is_empty() => parts,
        _ => return Err("ERR Invalid library metadata".into()),
    };
    let engine = parts[0].get(2..).unwrap_or_default().to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("ERR Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    Ok(LibraryHeader {
        name,
        engine,
        code_start: len,
    })
}

/// `functionsVerifyName`: letters, digits and underscores, at least one.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_shebangs() {
        let compat = eval_shebang(b"return 1").unwrap();
        assert!(compat.0.compat);
        assert_eq!(compat.1, 0);
        let (f, len) = eval_shebang(b"#!lua flags=no-writes\nreturn 1").unwrap();
        assert!(f.no_writes && !f.compat);
        assert_eq!(len, 21);
        assert!(eval_shebang(b"#!lua flags=\nreturn 1").unwrap().0 == ScriptFlags::default());
        assert!(
            eval_shebang(b"#!lua \"flags=no-writes\"\nreturn 1")
                .unwrap()
                .0
                .no_writes
        );
        let err = |b: &[u8]| eval_shebang(b).unwrap_err();
        assert_eq!(err(b"#!lua"), "ERR Invalid script shebang");
        assert_eq!(
            err(b"#!lua flags=bogus\nx"),
            "ERR Unexpected flag in script shebang: bogus"
        );
        assert_eq!(
            err(b"#!lua flags=no-writes,\nx"),
            "ERR Unexpected flag in script shebang: "
        );
        assert_eq!(
            err(b"#!lua flags=NO-WRITES\nx"),
            "ERR Unexpected flag in script shebang: NO-WRITES"
        );
        assert_eq!(err(b"#!lua foo=bar\nx"), "ERR Unknown lua shebang option: foo=bar");
        assert_eq!(err(b"#!lua name=x\nx"), "ERR Unknown lua shebang option: name=x");
        assert_eq!(err(b"#!python\nx"), "ERR Unexpected engine in script shebang: #!python");
        assert_eq!(err(b"#! \nx"), "ERR Unexpected engine in script shebang: #!");
        assert_eq!(err(b"#!lua \"unbalanced\nx"), "ERR Invalid engine in script shebang");
        assert_eq!(err(b"#!lua fl\rags=x\nx"), "ERR Unknown lua shebang option: fl");
    }

    #[test]
    fn library_headers() {
        let h = library_header(b"#!lua name=locklib\nredis.register_function()").unwrap();
        assert_eq!(h.name, b"locklib");
        assert_eq!(h.engine, b"lua");
        assert_eq!(h.code_start, 18);
        assert_eq!(library_header(b"#!LUA NAME=up\nx").unwrap().name, b"up");
        let err = |b: &[u8]| library_header(b).unwrap_err();
        assert_eq!(err(b"return 1"), "ERR Missing library metadata");
        assert_eq!(err(b"#!lua name=x"), "ERR Invalid library metadata");
        assert_eq!(err(b"#!lua\nreturn 1"), "ERR Library name was not given");
        assert_eq!(
            err(b"#!lua name=x name=y\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            err(b"#!lua name=x foo=bar\n"),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert!(valid_name(b"lock_lib1"));
        assert!(!valid_name(b"bad-name"));
        assert!(!valid_name(b""));
    }
}
