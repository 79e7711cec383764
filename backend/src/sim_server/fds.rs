//! `maxclients` against the process's file-descriptor limit, as
//! redis-server's `adjustOpenFilesLimit` fits them at start.

/// `CONFIG_MIN_RESERVED_FDS`: descriptors redis-server keeps for itself
/// (listeners, logs, the event loop) beyond one per client.
const RESERVED_FDS: u64 = 32;

/// redis-server's `adjustOpenFilesLimit`: make room for `maxclients` plus
/// [`RESERVED_FDS`] descriptors, raising the soft limit if allowed (by
/// steps of 16 down from what is wanted), and otherwise lower `maxclients`
/// to what the limit leaves, so that a client beyond it gets the
/// max-clients error instead of a failed `accept` (issue 42, row 11).
#[cfg(unix)]
pub fn fit_maxclients(maxclients: usize) -> usize {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let maxfiles = maxclients as u64 + RESERVED_FDS;
    let limit = getrlimit(Resource::Nofile);
    // No limit at all (`None`) is room enough.
    let Some(old) = limit.current else {
        return maxclients;
    };
    if old >= maxfiles {
        return maxclients;
    }
    let mut best = maxfiles;
    while best > old {
        // redis-server sets the hard limit too; a library in someone's
        // process (tests, `locklab serve`) only raises the soft one.
        let want = Rlimit {
            current: Some(best),
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, want).is_ok() {
            break;
        }
        if best < 16 {
            best = old;
            break;
        }
        best -= 16;
    }
    let best = best.max(old);
    if best >= maxfiles {
        return maxclients;
    }
    let fitted = best.saturating_sub(RESERVED_FDS).max(1) as usize;
    eprintln!(
        "locklab sim-server: current maximum open files is {best}; maxclients has been reduced to {fitted} \
         to compensate for low ulimit (redis-server does the same). If you need higher maxclients increase 'ulimit -n'."
    );
    fitted
}

#[cfg(not(unix))]
pub fn fit_maxclients(maxclients: usize) -> usize {
    maxclients
}
