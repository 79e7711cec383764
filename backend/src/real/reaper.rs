//! No managed redis-server (or redis-sentinel) outlives the backend that
//! started it.
//!
//! A managed topology kills its processes when it drops, and `locklab
//! serve` drops every lab when it gets SIGTERM or SIGINT. A backend killed
//! with SIGKILL (or one that crashed) cannot: its redis-servers are
//! reparented to init and keep their ports. So every managed process is
//! recorded in a pid file under the runtime directory
//! (`$XDG_RUNTIME_DIR/locklab/managed`, else `/tmp/locklab-<uid>/managed`):
//! its pid, its port, the backend's pid and the process's start time. A
//! backend that starts reaps the files whose backend is gone.
//!
//! # Killing only what the lab started
//!
//! A pid file is a claim, and a kill on a claim alone is how another local
//! user could have the lab SIGKILL the owner's own redis-server (issue 35,
//! B15: pre-create `/tmp/locklab-<uid>/managed/<pid>.pid`). So:
//!
//! * the two directories the lab makes (`locklab-<uid>` or `locklab`, and
//!   `managed`) are created 0700, and one that is a symlink, belongs to
//!   somebody else or is open to group or others is refused with an error
//!   that says so — nothing is read from it or written to it;
//! * a pid is killed only if the live process's start time
//!   (`/proc/<pid>/stat` field 22, in clock ticks since boot) is the one
//!   recorded when the lab started it — a pid reused since, or a file the
//!   lab did not write, names a process that started at another time — and
//!   it still is a `redis-server` (or `redis-sentinel`) on that port, an
//!   `etcd` member serving clients on that port (`real/service/etcd`) or a
//!   ZooKeeper server the lab marked with that port.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory of the pid files (not yet checked: see [`managed_dir`]).
pub fn runtime_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(|d| PathBuf::from(d).join("locklab"))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("locklab-{}", uid(0))));
    base.join("managed")
}

/// One of this process's user ids, from `/proc/self/status` (`Uid:` real,
/// effective, saved, filesystem; no libc: unsafe code is forbidden in this
/// workspace).
fn uid(field: usize) -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("Uid:")
                    .and_then(|r| r.split_whitespace().nth(field).and_then(|u| u.parse().ok()))
            })
        })
        .unwrap_or(0)
}

/// [`runtime_dir`], made if missing and checked (see the module's doc):
/// the directory to use, or why not.
pub fn managed_dir() -> Result<PathBuf, String> {
    private_dir(&runtime_dir(), uid(3))
}

/// `dir` and its parent (the lab's own `locklab` directory), each made
/// 0700 if missing, then each a directory of user `owner`'s, not a
/// symlink, closed to group and others.
fn private_dir(dir: &Path, owner: u32) -> Result<PathBuf, String> {
    for d in dir.parent().into_iter().chain([dir]) {
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(d) {
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(format!("cannot make the pid-file directory {}: {e}", d.display()));
            }
        }
        let meta = std::fs::symlink_metadata(d).map_err(|e| format!("{}: {e}", d.display()))?;
        let why = if meta.file_type().is_symlink() {
            "is a symlink".to_owned()
        } else if !meta.is_dir() {
            "is not a directory".to_owned()
        } else if meta.uid() != owner {
            format!("belongs to user {}, not to you ({owner})", meta.uid())
        } else if meta.permissions().mode() & 0o077 != 0 {
            format!("is open to other users (mode {:o})", meta.permissions().mode() & 0o7777)
        } else {
            continue;
        };
        return Err(format!(
            "refusing the pid-file directory {}: it {why}; the lab keeps the pids of the servers it starts in \
             a directory only you can open (remove it, or set XDG_RUNTIME_DIR to a directory of yours)",
            d.display()
        ));
    }
    Ok(dir.to_owned())
}

/// When process `pid` started: field 22 of `/proc/<pid>/stat`, clock ticks
/// since boot. The fields are counted after the command name's closing
/// parenthesis, since the name itself may hold spaces or parentheses.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Record a managed process this backend started (on `port`). Nothing is
/// recorded where the runtime directory is refused (`locklab serve` said
/// why when it started) or the start time cannot be read: the file could
/// not be trusted, so it would never be acted on.
pub fn record(pid: u32, port: u16) {
    let (Ok(dir), Some(started)) = (managed_dir(), start_time(pid)) else {
        return;
    };
    let _ = std::fs::write(
        dir.join(format!("{pid}.pid")),
        format!("{port}\n{}\n{started}\n", std::process::id()),
    );
}

/// The process is gone (killed and reaped by its topology).
pub fn forget(pid: u32) {
    let _ = std::fs::remove_file(runtime_dir().join(format!("{pid}.pid")));
}

/// Kill the managed processes of backends that no longer run (and, with
/// `mine`, this backend's own: the last step of a shutdown). Returns how
/// many processes were killed, or why the runtime directory was refused.
pub fn reap(mine: bool) -> Result<usize, String> {
    Ok(reap_in(&managed_dir()?, mine))
}

/// [`reap`] in a checked directory.
fn reap_in(dir: &Path, mine: bool) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let me = std::process::id();
    let mut killed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Some(record) = Record::read(&path) else {
            continue;
        };
        if (record.owner != me && alive(record.owner)) || (record.owner == me && !mine) {
            continue;
        }
        if record.names_live(pid) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            killed += 1;
        }
        // Gone, reused by another program, or killed now: the file is done.
        let _ = std::fs::remove_file(&path);
    }
    killed
}

/// A pid file's lines.
struct Record {
    port: String,
    owner: u32,
    /// `None`: a file without one (not written by this version of the lab).
    started: Option<u64>,
}

impl Record {
    /// A regular file of this user's, of at most a few lines.
    fn read(path: &Path) -> Option<Record> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.uid() != uid(3) {
            return None;
        }
        let mut text = String::new();
        std::fs::File::open(path)
            .ok()?
            .take(256)
            .read_to_string(&mut text)
            .ok()?;
        let mut lines = text.lines();
        Some(Record {
            port: lines.next()?.to_owned(),
            owner: lines.next()?.parse().ok()?,
            started: lines.next().and_then(|s| s.parse().ok()),
        })
    }

    /// Is `pid` still the process this record was written for: the same
    /// start time, and a program the lab starts, on the recorded port?
    fn names_live(&self, pid: u32) -> bool {
        let port = self.port.as_str();
        self.started.is_some()
            && start_time(pid) == self.started
            && (is_managed_redis(pid, port) || is_managed_etcd(pid, port) || is_managed_zookeeper(pid, port))
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Is `pid` still a redis-server (or a redis-sentinel) listening on `port`
/// as the lab starts them (`--port <port>` on its command line)?
pub(crate) fn is_managed_redis(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    // The program, as started (`/usr/bin/redis-server`) or as retitled
    // (`/usr/bin/redis-server 127.0.0.1:6379`,
    // `redis-sentinel 127.0.0.1:26379 [sentinel]`).
    let program = args
        .first()
        .and_then(|a| a.split(|&b| b == b' ').next())
        .unwrap_or_default();
    let redis = program.ends_with(b"redis-server") || program.ends_with(b"redis-sentinel");
    // redis-server rewrites its argv to "redis-server 127.0.0.1:<port>".
    let suffix = format!(":{port}");
    let on_port = args.windows(2).any(|w| w[0] == b"--port" && w[1] == port.as_bytes())
        || args
            .iter()
            .flat_map(|a| a.split(|&b| b == b' '))
            .any(|w| w.ends_with(suffix.as_bytes()));
    redis && on_port
}

/// Is `pid` still an `etcd` member serving clients on `port` as the lab
/// starts them (`--listen-client-urls http://127.0.0.1:<port>`)?
pub(crate) fn is_managed_etcd(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let etcd = args.first().is_some_and(|a| a.ends_with(b"etcd"));
    let url = format!("http://127.0.0.1:{port}");
    let on_port = args
        .windows(2)
        .any(|w| w[0] == b"--listen-client-urls" && w[1] == url.as_bytes());
    etcd && on_port
}

/// Is `pid` still a ZooKeeper server the lab started for `port`? Its
/// command line names QuorumPeerMain and carries `-Dlocklab.clientPort=
/// <port>` (ZooKeeper takes its port from zoo.cfg, so the lab puts it
/// there for this check).
pub(crate) fn is_managed_zookeeper(pid: u32, port: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let mark = format!("-Dlocklab.clientPort={port}");
    args.contains(&&b"org.apache.zookeeper.server.quorum.QuorumPeerMain"[..]) && args.contains(&mark.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_server_is_known_by_its_title_or_its_arguments() {
        let server = crate::real::process::RedisServer::start();
        let port = server.port().to_string();
        assert!(is_managed_redis(server.pid(), &port));
        assert!(!is_managed_redis(server.pid(), "1"));
        assert!(!is_managed_redis(std::process::id(), &port));
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("locklab-reaper-{}-{name}", std::process::id()));
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn answers_ping(server: &crate::real::process::RedisServer) -> bool {
        crate::real::conn::RealConnection::open(&server.url())
            .and_then(|mut c| c.execute(&[b"PING".to_vec()]))
            .is_ok_and(|r| r == locklab_core::reply::Reply::Status("PONG".into()))
    }

    /// Issue 35, B15: a pid file the lab did not write — naming the owner's
    /// own redis-server, on its own port, "left" by a backend that is gone
    /// — kills nothing. Only the start time the lab recorded does.
    #[test]
    fn a_forged_pid_file_kills_nothing() {
        let dir = private_dir(&scratch("forged").join("locklab").join("managed"), uid(3)).unwrap();
        let server = crate::real::process::RedisServer::start();
        let (pid, port) = (server.pid(), server.port());
        // A pid that is no process: the "backend" that wrote the file is gone.
        let gone = u32::MAX - 1;
        let started = start_time(pid).unwrap();
        for forged in [
            format!("{port}\n{gone}\n"),
            format!("{port}\n{gone}\n{}\n", started + 1),
            format!("{port}\n{gone}\nsoon\n"),
        ] {
            std::fs::write(dir.join(format!("{pid}.pid")), forged).unwrap();
            assert_eq!(reap_in(&dir, false), 0);
            assert!(answers_ping(&server), "the owner's redis-server was killed");
            assert!(
                !dir.join(format!("{pid}.pid")).exists(),
                "a dead backend's file is removed"
            );
        }
        // The same file as the lab writes it: that process is the lab's.
        std::fs::write(dir.join(format!("{pid}.pid")), format!("{port}\n{gone}\n{started}\n")).unwrap();
        assert_eq!(reap_in(&dir, false), 1);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap().parent().unwrap());
    }

    #[test]
    fn the_pid_file_directory_is_private_or_refused() {
        let root = scratch("dirs");
        let me = uid(3);
        // Made 0700, both levels.
        let made = private_dir(&root.join("mine").join("managed"), me).unwrap();
        for d in [made.parent().unwrap(), &made] {
            assert_eq!(std::fs::metadata(d).unwrap().permissions().mode() & 0o777, 0o700);
        }
        // Somebody else's.
        let e = private_dir(&root.join("theirs").join("managed"), me + 1).unwrap_err();
        assert!(e.contains("belongs to user"), "{e}");
        // A symlink to a directory of the attacker's choosing.
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("linked")).unwrap();
        let e = private_dir(&root.join("linked").join("managed"), me).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "refusing the pid-file directory {}: it is a symlink",
                root.join("linked").display()
            )),
            "{e}"
        );
        // Pre-created open to everybody.
        std::fs::create_dir_all(root.join("open")).unwrap();
        std::fs::set_permissions(root.join("open"), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_dir(&root.join("open").join("managed"), me).unwrap_err();
        assert!(e.contains("is open to other users (mode 777)"), "{e}");
        assert!(
            !root.join("open").join("managed").exists(),
            "nothing made in a refused directory"
        );
        let _ = std::fs::remove_dir_all(root);
    }

    #[test]
    fn a_start_time_is_read_past_a_name_with_spaces() {
        let mine = start_time(std::process::id()).unwrap();
        assert!(mine > 0);
        assert_eq!(start_time(std::process::id()), Some(mine));
        assert_eq!(start_time(u32::MAX - 1), None);
    }
}
