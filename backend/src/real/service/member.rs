//! A member of a managed etcd cluster or ZooKeeper ensemble, as a process:
//! how both start one, kill one and notice one that died. The two services
//! differ in their command lines and configuration; what happens to the
//! process around them is the same, so it is written once here.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A fresh directory for one cluster's or ensemble's members (their data
/// directories and logs), `locklab-<service>-<lab pid>-<random hex>` under
/// the system's temporary directory, so labs side by side never share
/// one; and the hex, which the etcd cluster's token reuses.
pub(super) fn fresh_root(service: &str) -> Result<(PathBuf, String), String> {
    let hex = crate::real::conn::random_hex(8);
    let root = std::env::temp_dir().join(format!("locklab-{service}-{}-{hex}", std::process::id()));
    std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
    Ok((root, hex))
}

/// Start `cmd` (the member's whole command line, `binary` named for the
/// error) into the member's empty `child` slot, with nothing on stdin or
/// stdout and stderr into `log`, and record it for the
/// [reaper](crate::real::reaper) under its client port, so a lab that dies
/// leaves no member running.
pub(super) fn spawn(
    child: &mut Option<Child>,
    cmd: &mut Command,
    binary: &Path,
    log: File,
    client_port: u16,
) -> Result<(), String> {
    let started = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
    crate::real::reaper::record(started.id(), client_port);
    *child = Some(started);
    Ok(())
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
