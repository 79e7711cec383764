//! TEMPORARY STUB written by the lead so the node compiles; the scripting helper replaces this file.
use crate::reply::Reply;
use crate::script::Scripting;
use crate::server::ScriptHost;
pub(crate) fn eval(_s: &mut Scripting, _h: &mut dyn ScriptHost, _a: &[Vec<u8>]) -> Reply { Reply::error("ERR scripting not wired yet") }
pub(crate) fn evalsha(_s: &mut Scripting, _h: &mut dyn ScriptHost, _a: &[Vec<u8>]) -> Reply { Reply::error("ERR scripting not wired yet") }
pub(crate) fn script(_s: &mut Scripting, _h: &mut dyn ScriptHost, _a: &[Vec<u8>]) -> Reply { Reply::error("ERR scripting not wired yet") }
pub(crate) fn function(_s: &mut Scripting, _h: &mut dyn ScriptHost, _a: &[Vec<u8>]) -> Reply { Reply::error("ERR scripting not wired yet") }
pub(crate) fn fcall(_s: &mut Scripting, _h: &mut dyn ScriptHost, _a: &[Vec<u8>]) -> Reply { Reply::error("ERR scripting not wired yet") }
