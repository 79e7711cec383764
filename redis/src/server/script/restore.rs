//! `FUNCTION DUMP` and `FUNCTION RESTORE` (functions.c
//! `functionDumpCommand`, `functionRestoreCommand`): every library's code
//! as an `RDB_OPCODE_FUNCTION2` record, sealed with the DUMP footer, so a
//! payload moves between the simulator and redis-server 7.0.15 both ways.

use super::Scripting;
use crate::reply::Reply;
use crate::server::rdb;

/// FUNCTION RESTORE's policy for libraries that are already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Drop every library first.
    Flush,
    /// Refuse a library that exists (the default).
    Append,
    /// Replace a library that exists.
    Replace,
}

impl Scripting {
    /// `FUNCTION DUMP`: the payload (libraries by name; their code
    /// LZF-compressed when `compress`, `rdbcompression`).
    pub fn function_dump(&self, compress: bool) -> Reply {
        let mut body = Vec::new();
        for lib in self.libraries.values() {
            body.push(rdb::OPCODE_FUNCTION2);
            rdb::push_string(&mut body, &lib.code, compress);
        }
        Reply::Bulk(rdb::seal(body))
    }

    /// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: all or nothing.
    /// The libraries are first created apart (`functionsLibCtxCreate`),
    /// then joined as `libraryJoin` does: a library that exists fails
    /// APPEND, a function another library owns fails both.
    pub fn function_restore(&mut self, payload: &[u8], policy: RestorePolicy) -> Reply {
        let Some(body) = rdb::verify(payload) else {
            return Reply::error("ERR DUMP payload version or checksum are wrong");
        };
        let mut staged = Scripting::new();
        let result = self.restore_staged(&mut staged, body, policy);
        staged.function_flush();
        match result {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::Error(e),
        }
    }

    fn restore_staged(&mut self, staged: &mut Scripting, body: &[u8], policy: RestorePolicy) -> Result<(), String> {
        let mut r = rdb::Reader::new(body);
        while !r.at_end() {
            match r.byte() {
                Some(rdb::OPCODE_FUNCTION2) => {}
                Some(_) => return Err("ERR given type is not a function".into()),
                None => return Err("ERR can not read data type".into()),
            }
            let code = r.string().ok_or("ERR Failed loading library payload")?;
            if let Reply::Error(e) = staged.function_load(&code, false) {
                return Err(e);
            }
        }
        if policy == RestorePolicy::Flush {
            self.function_flush();
        } else {
            let replace = policy == RestorePolicy::Replace;
            for name in staged.libraries.keys() {
                if !replace && self.libraries.contains_key(name) {
                    return Err(format!("ERR Library {name} already exists"));
                }
            }
            for lib in staged.libraries.values() {
                for f in &lib.functions {
                    let owner = self.functions.get(&f.name.to_ascii_lowercase());
                    if owner.is_some_and(|(o, _)| !(replace && staged.libraries.contains_key(o))) {
                        return Err(format!("ERR Function {} already exists", f.name));
                    }
                }
            }
            if replace {
                for name in staged.libraries.keys() {
                    self.libraries.remove(name);
                }
                self.reindex();
            }
        }
        for lib in staged.libraries.values() {
            if let Reply::Error(e) = self.function_load(&lib.code, true) {
                return Err(e);
            }
        }
        Ok(())
    }
}
