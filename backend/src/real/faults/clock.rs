//! A managed node's clock, moved at run time: the backend's half of the
//! clock shift (the other half is `native/clockshift.c`, preloaded into
//! the redis-server).
//!
//! The node's `CLOCK_REALTIME` reads `real + shift`, where the shift is
//! piecewise linear exactly as core's clock is
//! (`locklab_core::world::clock`): an offset at an anchor instant plus a
//! drift in parts per million since then. A jump or a drift change
//! re-anchors at the current instant, so the node's past readings never
//! change under it. The three numbers live in a small file the
//! redis-server maps shared; this side rewrites it with positioned writes
//! under a sequence lock (make the sequence odd, write, make it even), so a
//! reader in the server never sees half an update.
//!
//! Why a file and not a signal or a command: the server must read the shift
//! on every clock read (Redis reads the clock for every command and every
//! expiry check), without a system call beyond the clock's own, and without
//! any cooperation from Redis.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The preload library, compiled from `native/clockshift.c` by build.rs.
static PRELOAD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/liblocklab_clockshift.so"));

/// The environment variable that names a process's clock file.
pub const CLOCK_FILE_ENV: &str = "LOCKLAB_CLOCK_FILE";

/// The file name the library is written under.
pub const PRELOAD_NAME: &str = "liblocklab_clockshift.so";

/// Drift is kept where core keeps it: above −90 % (a clock that runs
/// backwards is not a clock) and below +1000 %.
const MIN_DRIFT_PPM: i64 = -900_000;
const MAX_DRIFT_PPM: i64 = 10_000_000;
const FILE_LEN: usize = 64;
/// The shift is kept within ±50 years, so `real + shift` stays a valid
/// time after 1970 in the server's 64-bit arithmetic whatever jumps it is
/// asked for.
const MAX_SHIFT_NS: i64 = 50 * 365 * 24 * 3600 * 1_000_000_000;

/// Write the preload library into `dir` and return its path (each
/// topology keeps its own copy in its temporary directory).
pub fn install_preload(dir: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(PRELOAD_NAME);
    std::fs::write(&path, PRELOAD)?;
    Ok(path)
}

/// The real time in nanoseconds since the epoch (the backend itself is
/// never shifted).
fn real_now_ns() -> i64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// One process's clock shift: the file it reads, and what was last written.
#[derive(Debug)]
pub struct ClockShift {
    file: File,
    path: PathBuf,
    seq: u64,
    offset_ns: i64,
    drift_ppm: i64,
    anchor_ns: i64,
}

impl ClockShift {
    /// Create (or truncate) the clock file at `path`, with no shift.
    pub fn create(path: &Path) -> io::Result<ClockShift> {
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.write_all_at(&[0u8; FILE_LEN], 0)?;
        let mut c = ClockShift {
            file,
            path: path.to_owned(),
            seq: 0,
            offset_ns: 0,
            drift_ppm: 0,
            anchor_ns: real_now_ns(),
        };
        c.publish()?;
        Ok(c)
    }

    /// The file's path, for `LOCKLAB_CLOCK_FILE`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The shift at real time `now_ns`.
    fn shift_at(&self, now_ns: i64) -> i64 {
        let drift = i128::from(now_ns - self.anchor_ns) * i128::from(self.drift_ppm) / 1_000_000;
        let shift = i128::from(self.offset_ns) + drift;
        shift.clamp(-i128::from(MAX_SHIFT_NS), i128::from(MAX_SHIFT_NS)) as i64
    }

    /// How far the process's clock is from the real one now, in ms.
    pub fn shift_ms(&self) -> i64 {
        self.shift_at(real_now_ns()) / 1_000_000
    }

    /// The drift rate now, in parts per million.
    pub fn drift_ppm(&self) -> i64 {
        self.drift_ppm
    }

    /// Jump the clock by `delta_ms` (negative: back), as an NTP step or an
    /// operator setting the date would.
    pub fn jump(&mut self, delta_ms: i64) -> io::Result<()> {
        let now = real_now_ns();
        self.offset_ns = self
            .shift_at(now)
            .saturating_add(delta_ms.saturating_mul(1_000_000))
            .clamp(-MAX_SHIFT_NS, MAX_SHIFT_NS);
        self.anchor_ns = now;
        self.publish()
    }

    /// Make the clock run `ppm` parts per million fast (negative: slow)
    /// from now on; what it gained so far stays.
    pub fn set_drift(&mut self, ppm: i64) -> io::Result<()> {
        let now = real_now_ns();
        self.offset_ns = self.shift_at(now);
        self.anchor_ns = now;
        self.drift_ppm = ppm.clamp(MIN_DRIFT_PPM, MAX_DRIFT_PPM);
        self.publish()
    }

    /// Back to the real time, no drift.
    pub fn reset(&mut self) -> io::Result<()> {
        self.offset_ns = 0;
        self.drift_ppm = 0;
        self.anchor_ns = real_now_ns();
        self.publish()
    }

    /// Write the record under the sequence lock. Three writes, in order:
    /// an odd sequence (readers wait), the fields, an even sequence.
    fn publish(&mut self) -> io::Result<()> {
        self.seq += 1;
        self.file.write_all_at(&self.seq.to_le_bytes(), 0)?;
        let mut fields = [0u8; 24];
        fields[..8].copy_from_slice(&self.offset_ns.to_le_bytes());
        fields[8..16].copy_from_slice(&self.drift_ppm.to_le_bytes());
        fields[16..].copy_from_slice(&self.anchor_ns.to_le_bytes());
        self.file.write_all_at(&fields, 8)?;
        self.seq += 1;
        self.file.write_all_at(&self.seq.to_le_bytes(), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_and_drift_accumulate_like_cores_clock() {
        let dir = std::env::temp_dir().join(format!("locklab-clock-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = ClockShift::create(&dir.join("clock")).unwrap();
        assert_eq!(c.shift_at(c.anchor_ns), 0);
        c.jump(60_000).unwrap();
        assert_eq!(c.shift_at(c.anchor_ns), 60_000_000_000);
        c.set_drift(100_000).unwrap();
        // 10 s later at +10 %: one more second gained.
        assert_eq!(c.shift_at(c.anchor_ns + 10_000_000_000), 61_000_000_000);
        c.jump(-1_000).unwrap();
        assert!(c.shift_ms() >= 59_000);
        let bytes = std::fs::read(c.path()).unwrap();
        assert_eq!(bytes.len(), FILE_LEN);
        assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()) % 2, 0);
        assert_eq!(i64::from_le_bytes(bytes[16..24].try_into().unwrap()), 100_000);
        c.set_drift(i64::MIN).unwrap();
        assert_eq!(c.drift_ppm(), MIN_DRIFT_PPM);
        c.jump(i64::MAX).unwrap();
        assert_eq!(c.shift_at(c.anchor_ns), MAX_SHIFT_NS);
        c.jump(i64::MIN).unwrap();
        assert_eq!(c.shift_at(c.anchor_ns), -MAX_SHIFT_NS);
        let _ = std::fs::remove_dir_all(dir);
    }
}
