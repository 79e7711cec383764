//! Reading a file a user names on the command line: a lesson (`locklab
//! lesson --dir`), a design or scenario (`locklab explore FILE`), a
//! password (`locklab serve --redis-password-file`).
//!
//! Such a file comes from anyone (a chat message, a download, a directory
//! somebody else can write), so it is checked *before* it is read: it must
//! be a regular file — a symlink to one is followed, but a FIFO (whose
//! `open` waits for a writer for ever), a device (`/dev/zero` never ends),
//! a socket or a directory is refused — and no larger than its kind's
//! bound, so a huge file is refused without being read into memory, let
//! alone parsed (issue 42 row 13: a lesson directory holding a symlink to
//! `/dev/zero` took 2.1 GB in 1.25 s, a FIFO hung, a 7.8 MB lesson took
//! 691 MB). This is the one place such files are read.

use std::fs::{File, Metadata, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

/// What a file is for and how large it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileKind {
    /// "lesson file", as the errors name it.
    pub what: &'static str,
    /// Most bytes accepted.
    pub max: u64,
    /// Why that bound is enough, for the error.
    pub why: &'static str,
}

/// A lesson file: the largest in `lessons/` is 19 KB, so 256 KiB leaves
/// room for a lesson thirteen times as long.
pub const LESSON: FileKind = FileKind {
    what: "lesson file",
    max: 256 * 1024,
    why: "the largest lesson in lessons/ is 19 KB",
};

/// All the `.toml` files of a lesson directory together: the catalogue's
/// 45 lessons take 0.5 MB.
pub const LESSON_DIR_MAX: u64 = 4 * 1024 * 1024;

/// A design or scenario for `locklab explore`.
pub const DESIGN: FileKind = FileKind {
    what: "design file",
    max: 1024 * 1024,
    why: "three scripts of 16 KiB and the settings fit",
};

/// A password for `locklab serve --redis-password-file` (Redis's
/// `requirepass` takes any length, but a password file is one line).
pub const PASSWORD: FileKind = FileKind {
    what: "password file",
    max: 4096,
    why: "a password is one line",
};

/// Why a user's file was not read.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("{path} is {len} bytes; a {} holds at most {} ({})", kind.what, kind.max, kind.why)]
    TooBig { path: PathBuf, len: u64, kind: FileKind },
    #[error(
        "{path} is {is}, not a regular file: a {} must be a regular file (a symlink to one is fine)",
        kind.what
    )]
    NotRegular {
        path: PathBuf,
        is: &'static str,
        kind: FileKind,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The text of `path`, a file of kind `kind`, or why not. The checks come
/// before the first byte is read: the type and size of what the path
/// names (symlinks followed), then — the file opened without blocking, in
/// case it was swapped for a FIFO meanwhile — the same checks on the open
/// file itself, and the read stops one byte past the bound whatever the
/// metadata said (a file may grow while it is read).
pub fn read(path: &Path, kind: FileKind) -> Result<String, FileError> {
    let err = |source| FileError::Read {
        path: path.to_owned(),
        source,
    };
    check(path, &std::fs::metadata(path).map_err(err)?, kind)?;
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(path)
        .map_err(err)?;
    check(path, &file.metadata().map_err(err)?, kind)?;
    let mut bytes = Vec::new();
    file.take(kind.max + 1).read_to_end(&mut bytes).map_err(err)?;
    if bytes.len() as u64 > kind.max {
        return Err(FileError::TooBig {
            path: path.to_owned(),
            len: bytes.len() as u64,
            kind,
        });
    }
    String::from_utf8(bytes).map_err(|e| err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// Linux's `O_NONBLOCK` (the workspace has no libc binding; the value is
/// the same on every Linux architecture the lab runs on). `open` of a
/// FIFO with it returns at once instead of waiting for a writer.
const O_NONBLOCK: i32 = 0o4000;

fn check(path: &Path, meta: &Metadata, kind: FileKind) -> Result<(), FileError> {
    let t = meta.file_type();
    if !t.is_file() {
        let is = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            is,
            kind,
        });
    }
    if meta.len() > kind.max {
        return Err(FileError::TooBig {
            path: path.to_owned(),
            len: meta.len(),
            kind,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("locklab-userfile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_regular_file_and_a_symlink_to_one_are_read() {
        let dir = scratch("ok");
        std::fs::write(dir.join("a.toml"), "id = '01'\n").unwrap();
        std::os::unix::fs::symlink(dir.join("a.toml"), dir.join("b.toml")).unwrap();
        assert_eq!(read(&dir.join("a.toml"), LESSON).unwrap(), "id = '01'\n");
        assert_eq!(read(&dir.join("b.toml"), LESSON).unwrap(), "id = '01'\n");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn devices_fifos_directories_and_huge_files_are_refused_unread() {
        let dir = scratch("bad");
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero.toml")).unwrap();
        let e = read(&dir.join("zero.toml"), LESSON).unwrap_err().to_string();
        assert!(e.ends_with("zero.toml is a character device, not a regular file: a lesson file must be a regular file (a symlink to one is fine)"), "{e}");
        assert!(std::process::Command::new("mkfifo")
            .arg(dir.join("pipe.toml"))
            .status()
            .unwrap()
            .success());
        let e = read(&dir.join("pipe.toml"), LESSON).unwrap_err().to_string();
        assert!(e.contains("pipe.toml is a FIFO, not a regular file"), "{e}");
        let e = read(&dir, LESSON).unwrap_err().to_string();
        assert!(e.contains("is a directory, not a regular file"), "{e}");
        std::fs::write(dir.join("big.toml"), vec![b'#'; 300 * 1024]).unwrap();
        let e = read(&dir.join("big.toml"), LESSON).unwrap_err().to_string();
        assert!(
            e.ends_with("big.toml is 307200 bytes; a lesson file holds at most 262144 (the largest lesson in lessons/ is 19 KB)"),
            "{e}"
        );
        let e = read(&dir.join("missing"), LESSON).unwrap_err().to_string();
        assert!(e.starts_with("cannot read "), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
