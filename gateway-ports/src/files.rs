//! Bounded reads of the files the product is configured to read (`.env`, `API_KEY_FILE`,
//! `CA_FILE`, the pricing file, simulator scripts): every such read refuses anything that is not
//! a regular file (a FIFO would block forever, `/dev/zero` never ends) and stops at a size cap,
//! so a hostile or mistaken path is a typed error, never a hang or an unbounded allocation
//! (issue 22).

use std::fmt;
use std::io::Read as _;
use std::path::Path;

/// Why a bounded file read failed. `Display` names neither the path nor any content (callers
/// add the key or flag that named the file).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileReadError {
    /// Opening or reading failed (missing file, permission, I/O error).
    Io(std::io::ErrorKind),
    /// The path names a FIFO, socket, device or directory, not a regular file.
    NotRegular,
    /// The file holds more than `limit` bytes.
    TooLarge {
        /// The cap, in bytes.
        limit: u64,
    },
}

impl fmt::Display for FileReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(kind) => write!(f, "cannot be read ({kind})"),
            Self::NotRegular => f.write_str("is not a regular file (a FIFO, device or directory)"),
            Self::TooLarge { limit } => write!(f, "is larger than {limit} bytes"),
        }
    }
}

impl std::error::Error for FileReadError {}

/// Reads the whole regular file at `path`, at most `limit` bytes. The file type is checked
/// before opening (opening a FIFO would block) and again on the open handle.
///
/// Errors: [`FileReadError::NotRegular`], [`FileReadError::TooLarge`] (more than `limit`
/// bytes; only `limit + 1` bytes are ever read), [`FileReadError::Io`].
pub fn read_regular_file_capped(path: &Path, limit: u64) -> Result<Vec<u8>, FileReadError> {
    let io = |e: std::io::Error| FileReadError::Io(e.kind());
    if !std::fs::metadata(path).map_err(io)?.is_file() {
        return Err(FileReadError::NotRegular);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(FileReadError::NotRegular);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(FileReadError::TooLarge { limit });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_22_dev_zero_and_directories_are_refused_without_reading() {
        assert_eq!(
            read_regular_file_capped(Path::new("/dev/zero"), 16),
            Err(FileReadError::NotRegular)
        );
        assert_eq!(
            read_regular_file_capped(Path::new("/"), 16),
            Err(FileReadError::NotRegular)
        );
        assert!(matches!(
            read_regular_file_capped(Path::new("/nonexistent/x"), 16),
            Err(FileReadError::Io(_))
        ));
    }

    #[test]
    fn issue_22_cap_is_inclusive() {
        let dir = std::env::temp_dir().join(format!("pgw-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let p = dir.join("f");
        std::fs::write(&p, b"12345").ok();
        assert_eq!(
            read_regular_file_capped(&p, 5).ok(),
            Some(b"12345".to_vec())
        );
        assert_eq!(
            read_regular_file_capped(&p, 4),
            Err(FileReadError::TooLarge { limit: 4 })
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
