//! What bounds a session: [`SessionLimits`] (sizes, rates, counts, timeouts, set
//! by `locklab serve`'s flags), how its scripts reach the servers
//! ([`Scripts`]), and the token [`Bucket`] that paces its commands. Apart
//! from the session itself because the pool, the sandbox, the pre-flight
//! and the web layer all read them without needing a session.

use std::time::{Duration, Instant};

/// Bounds on what one session may send.
#[derive(Clone, Debug)]
pub struct SessionLimits {
    /// Longest redis-cli line accepted, in bytes.
    pub max_line: usize,
    /// Most arguments in one argv (command name included).
    pub max_args: usize,
    /// Longest script body (`EVAL`, `SCRIPT LOAD`, `FUNCTION LOAD`).
    pub max_script: usize,
    /// Most bytes in one argv, all arguments together.
    pub max_argv_bytes: usize,
    /// Sustained commands per second per session (token bucket refill).
    /// `f64::INFINITY` disables the limit (the bench does, to measure the
    /// checks rather than the limit).
    pub commands_per_sec: f64,
    /// Bucket size: how many commands may go at once after a quiet spell.
    pub burst: f64,
    /// How long a command may wait for a token before it is refused.
    pub max_wait: Duration,
    /// Most live sessions in one [`SessionPool`].
    pub max_sessions: usize,
    /// How long to wait for a reply before calling a node unreachable (a
    /// SIGSTOPped server accepts the bytes and never answers).
    pub reply_timeout: Duration,
    /// How long a session's script or function may run on Redis before
    /// the lab kills it (`SCRIPT KILL` / `FUNCTION KILL`, see
    /// [`watchdog`]). Redis serves the kill only after its own
    /// `busy-reply-threshold`, so on a server left at the default the
    /// kill lands after about 5 s.
    pub script_budget: Duration,
    /// A WebSocket with no message for this long is closed and its session
    /// ended (its keys, ACL user and libraries deleted).
    pub idle_timeout: Duration,
    /// Most bytes one script may ask `redis.log` to write (as the
    /// simulator counts them in the pre-flight).
    pub max_log_bytes: u64,
    /// Most keys a session may name and still have its scripts checked
    /// (each check copies them into the simulator).
    pub max_tracked_keys: usize,
    /// Most clients (A, B, …) in one session.
    pub max_clients: usize,
    /// Most bytes the session's keys may hold, by the lab's upper-bound
    /// account ([`quota`]): `--session-quota`.
    pub session_quota: u64,
    /// Most scripts (distinct `EVAL` and `SCRIPT LOAD` bodies, and
    /// `FUNCTION LOAD` libraries) one session may have the server keep.
    pub max_scripts: usize,
    /// Most bytes of those scripts together.
    pub max_script_bytes: u64,
    /// Most bytes of one reply shown to the page; a longer one is cut,
    /// with a note, and never held whole by the async lane.
    pub max_reply_bytes: usize,
    /// Most keys free play watches for locks; past that the oldest is
    /// dropped, with a note.
    pub max_watched_locks: usize,
    /// `--scripts=run`: on a server the lab does not own, scripts run there
    /// after the pre-flight, with the watchdog, as on the lab's own servers
    /// (except those that read the server's state, which are refused). Off
    /// (the default), they run on the simulator and only their writes are
    /// sent ([`Scripts::Simulated`]).
    pub run_scripts: bool,
}

/// How a session's scripts reach its servers (issue 35, design item 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scripts {
    /// The lab's own servers: pre-flight on the simulator, then run for
    /// real with the watchdog. The lab can kill and restart them.
    Managed,
    /// A server the lab does not own, by default: no user Lua runs there.
    /// Each script runs on the simulator against its declared keys read
    /// under `WATCH`, and its writes are sent as one `MULTI … EXEC`
    /// ([`effects`](super::effects)).
    Simulated,
    /// A server the lab does not own with `--scripts=run` (a speaker alone
    /// on a laptop): as [`Scripts::Managed`], but a script that reads the
    /// server's own state is refused, since that is how its run there can
    /// go another way than on the simulator.
    Run,
}

impl Scripts {
    /// How scripts reach a server the lab owns (`managed`) or not, under
    /// `limits`.
    pub fn on(managed: bool, limits: &SessionLimits) -> Scripts {
        match (managed, limits.run_scripts) {
            (true, _) => Scripts::Managed,
            (false, false) => Scripts::Simulated,
            (false, true) => Scripts::Run,
        }
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_line: 64 * 1024,
            max_args: 1024,
            max_script: 64 * 1024,
            max_argv_bytes: 256 * 1024,
            commands_per_sec: 200.0,
            burst: 200.0,
            max_wait: Duration::from_millis(500),
            max_sessions: 64,
            reply_timeout: Duration::from_secs(10),
            script_budget: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(600),
            max_log_bytes: 4096,
            max_tracked_keys: 10_000,
            max_clients: 16,
            session_quota: 64 << 20,
            max_scripts: 256,
            max_script_bytes: 4 << 20,
            max_reply_bytes: 256 << 10,
            max_watched_locks: 256,
            run_scripts: false,
        }
    }
}

/// A token bucket: `tokens` refill at `rate` per second up to `burst`.
#[derive(Debug)]
pub(super) struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub(super) fn new(burst: f64) -> Self {
        Bucket {
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Take a token: `Some(None)` now, `Some(Some(wait))` once the caller
    /// has waited `wait` (at most `max_wait`; the token is spent already),
    /// `None` when it would have to wait longer.
    pub(super) fn take(&mut self, rate: f64, burst: f64, max_wait: Duration) -> Option<Option<Duration>> {
        if rate.is_infinite() {
            return Some(None);
        }
        let now = Instant::now();
        self.tokens = (self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * rate).min(burst);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Some(None);
        }
        let wait = Duration::from_secs_f64((1.0 - self.tokens) / rate.max(f64::MIN_POSITIVE));
        if wait > max_wait {
            return None;
        }
        // The token will be there after `wait`: spend it now.
        self.last = now + wait;
        self.tokens = 0.0;
        Some(Some(wait))
    }
}
