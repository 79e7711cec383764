//! A member of a managed etcd cluster or ZooKeeper ensemble, as a process:
//! how both start one, kill one and notice one that died. The two services
//! differ in their command lines and configuration; what happens to the
//! process around them is the same, so it is written once here.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Start `cmd` (the member's whole command line, `binary` named for the
/// error) with nothing on stdin or stdout and stderr into `log`, and record
/// it for the [reaper](crate::real::reaper) under its client port, so a
/// lab that dies leaves no member running.
pub(super) fn spawn(cmd: &mut Command, binary: &Path, log: File, client_port: u16) -> Result<Child, String> {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
    crate::real::reaper::record(child.id(), client_port);
    Ok(child)
}

/// SIGKILL the member and reap it: no shutdown, its data directory stays as
/// a crashed machine's disk would.
pub(super) fn kill(child: &mut Option<Child>, name: &str) -> Result<String, String> {
    let mut child = child.take().ok_or_else(|| format!("{name} is already down"))?;
    let pid = child.id();
    let _ = child.kill();
    let _ = child.wait();
    crate::real::reaper::forget(pid);
    Ok(format!("SIGKILL to {name} (pid {pid})"))
}

/// Has the member's process exited on its own? Then the slot is emptied
/// and the last five lines of its `log` say why.
pub(super) fn exited(child: &mut Option<Child>, name: &str, log: &Path) -> Option<String> {
    let status = child.as_mut().map(Child::try_wait)?.ok()??;
    *child = None;
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(5).collect();
    Some(format!(
        "{name} exited ({status}): {}",
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    ))
}
