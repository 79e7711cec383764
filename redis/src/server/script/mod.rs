//! # Scripting: EVAL and FUNCTION
//!
//! A distributed lock is only as good as its release. "Delete the key if it
//! still holds my token" is two steps — GET, then DEL — and between them the
//! lock can expire and be taken by someone else, whose lock we would then
//! delete. Redis's answer is to run both steps as one Lua script, atomically:
//!
//! ```lua
//! if redis.call("get", KEYS[1]) == ARGV[1] then
//!     return redis.call("del", KEYS[1])
//! else
//!     return 0
//! end
//! ```
//!
//! This module runs such scripts the way redis-server 7.0.15 does, down to
//! the error texts, because the lessons compare the simulator's replies with
//! a real server byte for byte:
//!
//! * a real Lua 5.1 VM ([`omnilua`], pure Rust, so it also runs in the
//!   browser), with Redis's sandbox: `KEYS`, `ARGV`, `redis.*`, readonly
//!   globals, no file or OS access, Redis's own deterministic `math.random`;
//! * Redis's conversions between replies and Lua values (see [`convert`]);
//! * the script cache (EVAL caches, EVALSHA finds by SHA1, SCRIPT
//!   LOAD/EXISTS/FLUSH) and 7.0's `#!lua flags=...` shebang;
//! * FUNCTION LOAD libraries (`#!lua name=...` and
//!   `redis.register_function`), FCALL, FUNCTION LIST/DELETE/FLUSH;
//! * errors that say where they happened:
//!   `ERR user_script:1: Script attempted to access nonexistent global
//!   variable 'foo' script: <sha>, on @user_script:1.`
//!
//! Atomicity comes for free: the node runs one command at a time, and a
//! script's `redis.call`s are plain synchronous calls into it. As in Redis,
//! there is no rollback: a script that fails after a write leaves the write.
//!
//! Where the simulator must differ, it says so instead of hanging: a runaway
//! script is stopped after [`INSTRUCTION_LIMIT`] units of work — instructions
//! plus the bytes and items its builtins and `redis.call`s process (real Redis
//! would keep running it and answer BUSY to everyone else), and the Lua
//! heap is capped at [`MEMORY_LIMIT_BYTES`].
//!
//! # Known differences from redis-server 7.0.15
//!
//! Checked against a real server (see `tests.rs`); what remains:
//!
//! * `struct` is not bundled (`bit` is, and `cjson` and `cmsgpack` are
//!   written in Lua in the prelude: `cjson.null` is a table rather than a
//!   light userdata, and objects and maps come out in this VM's table
//!   order);
//! * FUNCTION LIST orders libraries by name (redis-server's hash order is
//!   random per process) and functions by registration;
//! * `tostring(t)` numbers objects per run instead of printing addresses;
//! * `string.dump`'s bytecode differs, and `0/0 .. ''` prints `nan` where
//!   glibc prints `-nan` (the library's errors are Lua 5.1's, with their
//!   positions: the vendored `lua-stdlib`, see `vendor/README.md`);
//! * readonly globals are proxies, so `table.insert(string, x)` is not
//!   refused; a returned table nests at most 1000 levels;
//! * SCRIPT DEBUG YES/SYNC, FUNCTION DUMP/RESTORE are refused with a clear
//!   error; `redis.setresp(3)` changes the conversions, but a RESP3 client
//!   still sees RESP2 types (the reply type has no booleans or doubles).
//!
//! # Layout
//!
//! * `mod.rs` — [`Scripting`], a node's scripting state, as plain data.
//! * `vm.rs` — the Lua VM (one per thread, shared) and how one run goes.
//! * `prelude.lua` — the sandbox, written in Lua: readonly proxies, the
//!   `redis` table, the error handler, `redis.register_function`.
//! * [`convert`] — Redis ⇄ Lua values, number formatting, error texts.
//! * [`meta`] — shebangs and library headers.
//! * [`bounded`] — which scripts cannot run long, whatever their data.
//! * `restore.rs` — FUNCTION DUMP and RESTORE.
//!
//! The command syntax (argv parsing, subcommands, arity) lives next to the
//! other commands, in `server/cmd/scripting.rs`.

pub mod bounded;
pub mod control;
pub mod convert;
pub mod meta;
mod restore;
mod structlib;
mod vm;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::reply::Reply;
use crate::server::ScriptHost;
pub use control::{set_thread_limits, set_thread_pattern_depth, BusyWatch, ScriptControl};
use meta::{library_header, valid_name, ScriptFlags};
pub use restore::RestorePolicy;
pub use vm::{
    logged_bytes, INSTRUCTION_LIMIT, MAX_PATTERN_DEPTH, MEMORY_LIMIT_BYTES, REDIS_VERSION, REDIS_VERSION_NUM,
    SIMULATOR_STOPPED,
};
use vm::{with_vm, Target};

/// Node ids for the per-thread VM's library table. Only identity matters
/// (they never reach a reply), so a global counter is fine.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A cached EVAL script.
#[derive(Clone, Debug)]
struct Script {
    body: Vec<u8>,
    flags: ScriptFlags,
    /// Where the Lua code starts (after the shebang, at its newline).
    code_start: usize,
}

/// One function of a library, as FUNCTION LIST shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<Vec<u8>>,
    pub flags: ScriptFlags,
}

/// A FUNCTION library: its code (kept whole, shebang included, as
/// `FUNCTION LIST WITHCODE` returns it) and what it registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
    /// Where the Lua code starts in `code` (at the header's newline).
    code_start: usize,
}

/// A node's scripting state: the script cache, the function libraries and
/// the state of `math.random`'s generator.
///
/// It is plain data — `Send`, cheap to create, `Clone` — while the Lua VM
/// that runs the scripts lives per thread (see `vm.rs`).
pub struct Scripting {
    id: u64,
    /// SHA1 (lower-case hex) → script.
    scripts: BTreeMap<String, Script>,
    /// Library name → library. (redis-server keeps a hash table, so its
    /// FUNCTION LIST order is unspecified; the simulator lists by name.)
    libraries: BTreeMap<String, Library>,
    /// Lower-case function name → (library, index): FCALL is
    /// case-insensitive.
    functions: BTreeMap<String, (String, usize)>,
    /// `redisLrand48`'s state. redis-server 7.0 never reseeds it between
    /// scripts (not even on SCRIPT FLUSH), so it belongs to the node.
    rng: u64,
    /// The last short body EVAL hashed and its SHA1: a client repeating
    /// one script (a lock's release) is spared hashing it on every call, a
    /// body compare being cheaper than `evalGenericCommand`'s SHA1. Only
    /// a cache of a pure function: never shown, not cloned.
    last_sha: Option<(Vec<u8>, String)>,
}

/// The longest body [`Scripting::last_sha`] remembers.
const LAST_SHA_BODY_MAX: usize = 4096;

impl Scripting {
    /// Empty caches and a freshly seeded generator, like a redis-server that
    /// just started. No VM is built until the first script runs.
    pub fn new() -> Self {
        Scripting {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scripts: BTreeMap::new(),
            libraries: BTreeMap::new(),
            functions: BTreeMap::new(),
            rng: vm::LRAND48_SEED,
            last_sha: None,
        }
    }

    /// `evalGetCommandFlags` / `fcallGetCommandFlags`: the flags the script
    /// of this EVAL, EVALSHA or FCALL (any `_RO` variant) declared, which
    /// stand in for the command's own (`scriptFlagsToCmdFlags`), or `None`
    /// where the command's own flags apply (no shebang, an unparsable one,
    /// an unknown SHA or function).
    pub fn declared_flags(&self, argv: &[Vec<u8>]) -> Option<ScriptFlags> {
        let name = argv.first()?.to_ascii_lowercase();
        let body = argv.get(1)?;
        let flags = match name.as_slice() {
            b"eval" | b"eval_ro" => match self.scripts.get(&sha1_hex(body)) {
                Some(s) => s.flags,
                None => meta::eval_shebang(body).ok()?.0,
            },
            b"evalsha" | b"evalsha_ro" if body.len() == 40 => {
                self.scripts
                    .get(&String::from_utf8_lossy(body).to_ascii_lowercase())?
                    .flags
            }
            b"fcall" | b"fcall_ro" => {
                let (lib, i) = self
                    .functions
                    .get(&String::from_utf8_lossy(body).to_ascii_lowercase())?;
                self.libraries.get(lib)?.functions.get(*i)?.flags
            }
            _ => return None,
        };
        (!flags.compat).then_some(flags)
    }

    /// How many scripts the cache holds.
    pub fn script_count(&self) -> usize {
        self.scripts.len()
    }

    /// The loaded libraries, by name.
    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    /// Is this SHA1 (any case) in the script cache? (SCRIPT EXISTS)
    pub fn script_exists(&self, sha: &[u8]) -> bool {
        self.scripts
            .contains_key(&String::from_utf8_lossy(sha).to_ascii_lowercase())
    }

    /// Forget every cached script (SCRIPT FLUSH). redis-server also rebuilds
    /// its Lua VM, which no script can tell apart from keeping it: scripts
    /// leave nothing behind in the VM.
    pub fn script_flush(&mut self) {
        self.scripts.clear();
    }

    /// Add a script to the cache without running it (SCRIPT LOAD, and the
    /// first half of EVAL). Returns its SHA1 or the error reply.
    pub fn script_load(&mut self, body: &[u8]) -> Result<String, Reply> {
        let sha = match &self.last_sha {
            Some((last, sha)) if last.as_slice() == body => sha.clone(),
            _ => {
                let sha = sha1_hex(body);
                if body.len() <= LAST_SHA_BODY_MAX {
                    self.last_sha = Some((body.to_vec(), sha.clone()));
                }
                sha
            }
        };
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, code_start) = meta::eval_shebang(body).map_err(Reply::Error)?;
        with_vm(|vm| vm.compile(&sha, &body[code_start..]))
            .and_then(|r| r)
            .map_err(Reply::Error)?;
        self.scripts.insert(
            sha.clone(),
            Script {
                body: body.to_vec(),
                flags,
                code_start,
            },
        );
        Ok(sha)
    }

    /// EVAL / EVAL_RO: cache the script if new, then run it.
    pub fn eval(
        &mut self,
        host: &mut dyn ScriptHost,
        body: &[u8],
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        ro: bool,
    ) -> Reply {
        match self.script_load(body) {
            Ok(sha) => self.run_cached(host, &sha, keys, args, ro),
            Err(reply) => reply,
        }
    }

    /// EVALSHA / EVALSHA_RO: run a cached script, or NOSCRIPT.
    pub fn evalsha(
        &mut self,
        host: &mut dyn ScriptHost,
        sha: &[u8],
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        ro: bool,
    ) -> Reply {
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        if !self.scripts.contains_key(&sha) {
            return noscript();
        }
        self.run_cached(host, &sha, keys, args, ro)
    }

    fn run_cached(
        &mut self,
        host: &mut dyn ScriptHost,
        sha: &str,
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        ro: bool,
    ) -> Reply {
        let Some(script) = self.scripts.get(sha) else {
            return noscript();
        };
        let read_only = script.flags.read_only_run(ro);
        if let Err(e) = host.begin_script(&script.flags, ro) {
            return e;
        }
        let code = &script.body[script.code_start..];
        let rng = self.rng;
        let out = with_vm(|vm| {
            let f = match vm.compile(sha, code) {
                Ok(f) => f,
                Err(e) => return (Reply::Error(e), rng),
            };
            vm.set_rng(rng);
            let reply = vm.run(host, Target::Eval(&f), keys, args, read_only, sha);
            (reply, vm.rng())
        });
        self.finish_run(out)
    }

    /// Is there a function by this name (any case)?
    pub fn function_exists(&self, name: &[u8]) -> bool {
        self.functions
            .contains_key(&String::from_utf8_lossy(name).to_ascii_lowercase())
    }

    /// `FUNCTION LOAD [REPLACE]`: the library's name, or the error.
    pub fn function_load(&mut self, payload: &[u8], replace: bool) -> Reply {
        let header = match library_header(payload) {
            Ok(h) => h,
            Err(e) => return Reply::Error(e),
        };
        if !valid_name(&header.name) {
            return Reply::error(
                "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
            );
        }
        let name = String::from_utf8_lossy(&header.name).into_owned();
        if !header.engine.eq_ignore_ascii_case(b"LUA") {
            return Reply::Error(format!(
                "ERR Engine '{}' not found",
                String::from_utf8_lossy(&header.engine)
            ));
        }
        if self.libraries.contains_key(&name) && !replace {
            return Reply::Error(format!("ERR Library '{name}' already exists"));
        }
        let loaded = match with_vm(|vm| vm.load_library(&payload[header.code_start..])) {
            Ok(Ok(registered)) => registered,
            Ok(Err(e)) => return Reply::Error(e.0),
            Err(e) => return Reply::Error(e),
        };
        if loaded.is_empty() {
            return Reply::error("ERR No functions registered");
        }
        // A name another library already uses (the library being replaced
        // does not count).
        for f in &loaded {
            if let Some((owner, _)) = self.functions.get(&f.name.to_ascii_lowercase()) {
                if *owner != name {
                    return Reply::Error(format!("ERR Function {} already exists", f.name));
                }
            }
        }
        let library = Library {
            name: name.clone(),
            code: payload.to_vec(),
            functions: loaded
                .iter()
                .map(|r| FunctionInfo {
                    name: r.name.clone(),
                    description: r.description.clone(),
                    flags: r.flags,
                })
                .collect(),
            code_start: header.code_start,
        };
        let callbacks = loaded.into_iter().map(|r| r.callback).collect();
        let id = self.id;
        let code = payload.get(header.code_start..).unwrap_or_default();
        let _ = with_vm(|vm| vm.keep_library(id, &name, code, callbacks));
        self.libraries.insert(name.clone(), library);
        self.reindex();
        Reply::bulk(name.into_bytes())
    }

    /// FUNCTION DELETE: libraries are found by their exact name.
    pub fn function_delete(&mut self, name: &[u8]) -> Reply {
        let name = String::from_utf8_lossy(name).into_owned();
        if self.libraries.remove(&name).is_none() {
            return Reply::error("ERR Library not found");
        }
        let id = self.id;
        let _ = with_vm(|vm| vm.drop_library(id, &name));
        self.reindex();
        Reply::ok()
    }

    /// FUNCTION FLUSH.
    pub fn function_flush(&mut self) {
        self.libraries.clear();
        self.functions.clear();
        vm::forget_node(self.id);
    }

    /// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`: one map per library
    /// (`library_name`, `engine`, `functions`, and `library_code`), each
    /// function a map of `name`, `description` and `flags`.
    pub fn function_list(&self, pattern: Option<&[u8]>, with_code: bool) -> Reply {
        let bulk = |s: &str| Reply::bulk(s.as_bytes().to_vec());
        let libs = self
            .libraries
            .values()
            .filter(|l| pattern.is_none_or(|p| crate::server::glob::glob_match(p, l.name.as_bytes(), true)))
            .map(|l| {
                let functions = l
                    .functions
                    .iter()
                    .map(|f| {
                        Reply::Map(vec![
                            (bulk("name"), bulk(&f.name)),
                            (
                                bulk("description"),
                                f.description.clone().map_or(Reply::Nil, Reply::Bulk),
                            ),
                            // A RESP3 set of statuses; RESP2 shows an array.
                            (
                                bulk("flags"),
                                Reply::Array(f.flags.names().into_iter().map(Reply::status).collect()),
                            ),
                        ])
                    })
                    .collect();
                let mut fields = vec![
                    (bulk("library_name"), bulk(&l.name)),
                    (bulk("engine"), bulk("LUA")),
                    (bulk("functions"), Reply::Array(functions)),
                ];
                if with_code {
                    fields.push((bulk("library_code"), Reply::Bulk(l.code.clone())));
                }
                Reply::Map(fields)
            })
            .collect();
        Reply::Array(libs)
    }

    /// FUNCTION STATS: nothing is ever running between commands.
    pub fn function_stats(&self) -> Reply {
        let bulk = |s: &str| Reply::bulk(s.as_bytes().to_vec());
        let n_functions: usize = self.libraries.values().map(|l| l.functions.len()).sum();
        Reply::Map(vec![
            (bulk("running_script"), Reply::Nil),
            (
                bulk("engines"),
                Reply::Map(vec![(
                    bulk("LUA"),
                    Reply::Map(vec![
                        (bulk("libraries_count"), Reply::Integer(self.libraries.len() as i64)),
                        (bulk("functions_count"), Reply::Integer(n_functions as i64)),
                    ]),
                )]),
            ),
        ])
    }

    /// FCALL / FCALL_RO (the caller has checked that the function exists and
    /// parsed numkeys).
    pub fn fcall(
        &mut self,
        host: &mut dyn ScriptHost,
        name: &[u8],
        keys: &[Vec<u8>],
        args: &[Vec<u8>],
        ro: bool,
    ) -> Reply {
        let Some((lib, index)) = self
            .functions
            .get(&String::from_utf8_lossy(name).to_ascii_lowercase())
            .cloned()
        else {
            return Reply::error("ERR Function not found");
        };
        let Some(library) = self.libraries.get(&lib) else {
            return Reply::error("ERR Function not found");
        };
        let Some(info) = library.functions.get(index) else {
            return Reply::error("ERR Function not found");
        };
        let read_only = info.flags.read_only_run(ro);
        if let Err(e) = host.begin_script(&info.flags, ro) {
            return e;
        }
        let code = library.code.get(library.code_start..).unwrap_or_default();
        let (id, rng) = (self.id, self.rng);
        let fname = info.name.clone();
        let out = with_vm(|vm| {
            let cb = match vm.callback(id, &lib, code, index) {
                Ok(cb) => cb,
                Err(e) => return (Reply::Error(e), rng),
            };
            vm.set_rng(rng);
            let reply = vm.run(host, Target::Fcall(&cb), keys, args, read_only, &fname);
            (reply, vm.rng())
        });
        self.finish_run(out)
    }

    /// A run's reply, keeping the generator where the script left it
    /// (`math.random` continues in the next script, as in redis-server 7).
    fn finish_run(&mut self, out: Result<(Reply, u64), String>) -> Reply {
        match out {
            Ok((reply, rng)) => {
                self.rng = rng;
                reply
            }
            Err(e) => Reply::Error(e),
        }
    }

    fn reindex(&mut self) {
        self.functions.clear();
        for (lib, l) in &self.libraries {
            for (i, f) in l.functions.iter().enumerate() {
                self.functions
                    .entry(f.name.to_ascii_lowercase())
                    .or_insert_with(|| (lib.clone(), i));
            }
        }
    }
}

/// The SHA1 of `data` in lower-case hex: a script's name in the cache.
pub fn sha1_hex(data: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = sha1_smol::Sha1::from(data).digest().bytes();
    let mut out = String::with_capacity(40);
    for b in digest {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
    out
}

fn noscript() -> Reply {
    Reply::error("NOSCRIPT No matching script. Please use EVAL.")
}

impl Default for Scripting {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for Scripting {
    /// A copy with the same scripts, libraries and generator state. Its
    /// libraries are reloaded from their code on first use, so any state a
    /// library kept in its own upvalues starts over.
    fn clone(&self) -> Self {
        Scripting {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            scripts: self.scripts.clone(),
            libraries: self.libraries.clone(),
            functions: self.functions.clone(),
            rng: self.rng,
            last_sha: None,
        }
    }
}

impl Drop for Scripting {
    fn drop(&mut self) {
        vm::forget_node(self.id);
    }
}

impl std::fmt::Debug for Scripting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripting")
            .field("scripts", &self.scripts.keys().collect::<Vec<_>>())
            .field("libraries", &self.libraries.keys().collect::<Vec<_>>())
            // The explorer's fingerprint is this encoding: two nodes whose
            // `math.random` will answer differently must not look alike.
            .field("rng", &self.rng)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod budget_tests;
