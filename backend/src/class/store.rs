//! Where classes live: each class is a log of [`LogEntry`]s (see
//! `class::hub::log`), and a store holds the logs. The web pump appends
//! what [`crate::class::Hub::admit`] admits and applies, in order, what
//! [`ClassStore::next`] reads back — its own entries and every other
//! instance's — so the hub stays a state machine without I/O and the store
//! is the only I/O of class mode.
//!
//! * [`MemoryStore`] (the default, nothing to install): the log is a
//!   channel in this process; a restart ends its classes.
//! * [`RedisStore`] (`locklab serve --class --class-store redis://…`): a
//!   stream per class, read by every instance that serves the class.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use locklab_core::class::ClassCode;
use thiserror::Error;
use tokio::sync::{mpsc, Mutex};

use super::hub::LogEntry;

mod redis;

pub use self::redis::{RedisStore, PREFIX};

/// A store's answer, later.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Entries [`ClassStore::next`] hands over at once.
pub const BATCH: usize = 1024;

/// How often an instance renews its heartbeat and checks the others'.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// An instance that has not beaten for this long is dead: its followers are
/// shown away and its presenter gone ([`crate::class::Hub::departures`]).
pub const INSTANCE_TTL: Duration = Duration::from_secs(5);

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("redis: {0}")]
    Redis(String),
    #[error("the class store has stopped")]
    Closed,
}

/// The class logs, shared by every instance that serves a class.
pub trait ClassStore: Send + Sync + 'static {
    /// Reserve `code` for a new class whose secret has `secret_hash`:
    /// `false` when a class (of any instance) already has it.
    fn claim<'a>(&'a self, code: &'a ClassCode, secret_hash: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Whether class `code` runs (on any instance).
    fn exists<'a>(&'a self, code: &'a ClassCode) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// Read class `code`'s log from now on: from its first entry, the first
    /// time, so this instance holds the class as every other does.
    fn follow(&self, code: &ClassCode);
    /// Append `entry` to class `code`'s log.
    fn append<'a>(&'a self, code: &'a ClassCode, entry: &'a LogEntry) -> BoxFuture<'a, Result<(), StoreError>>;
    /// The next entries of the logs followed, each log's in its order;
    /// `None` once the store has stopped. One reader calls it.
    fn next(&self) -> BoxFuture<'_, Option<Vec<(ClassCode, LogEntry)>>>;
    /// Renew instance `me`'s heartbeat (it lives [`INSTANCE_TTL`]),
    /// advertising `url` (its `--class-url`), and name those of `others`
    /// whose heartbeat has expired, and the URLs of the live instances.
    fn heartbeat<'a>(
        &'a self,
        me: &'a str,
        url: &'a str,
        others: Vec<String>,
    ) -> BoxFuture<'a, Result<Beat, StoreError>>;
}

/// What a heartbeat learnt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Beat {
    /// Instances (of those asked about) whose heartbeat expired.
    pub dead: Vec<String>,
    /// The class URLs the live instances advertise (this one's among
    /// them), sorted; empty from a store with one instance.
    pub live: Vec<String>,
}

/// The log in this process: one instance, nothing to share, so every
/// class this hub holds is all there is ([`ClassStore::exists`] is `false`
/// for a class the hub does not hold).
pub struct MemoryStore {
    tx: mpsc::Sender<(ClassCode, LogEntry)>,
    rx: Mutex<mpsc::Receiver<(ClassCode, LogEntry)>>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        // Appenders wait when the reader is this far behind.
        let (tx, rx) = mpsc::channel(4 * BATCH);
        MemoryStore { tx, rx: Mutex::new(rx) }
    }
}

impl ClassStore for MemoryStore {
    fn claim<'a>(&'a self, _: &'a ClassCode, _: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        // The hub drew a code none of its classes has.
        Box::pin(async { Ok(true) })
    }

    fn exists<'a>(&'a self, _: &'a ClassCode) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async { Ok(false) })
    }

    fn follow(&self, _: &ClassCode) {}

    fn append<'a>(&'a self, code: &'a ClassCode, entry: &'a LogEntry) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.tx
                .send((code.clone(), entry.clone()))
                .await
                .map_err(|_| StoreError::Closed)
        })
    }

    fn heartbeat<'a>(&'a self, _: &'a str, _: &'a str, _: Vec<String>) -> BoxFuture<'a, Result<Beat, StoreError>> {
        // One instance: there are no others to outlive or to reconnect to.
        Box::pin(async { Ok(Beat::default()) })
    }

    fn next(&self) -> BoxFuture<'_, Option<Vec<(ClassCode, LogEntry)>>> {
        Box::pin(async move {
            let mut rx = self.rx.lock().await;
            let first = rx.recv().await?;
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok(e) => batch.push(e),
                    Err(_) => break,
                }
            }
            Some(batch)
        })
    }
}
