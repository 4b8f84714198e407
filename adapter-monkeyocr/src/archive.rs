//! The result archive, decoded in memory within caps (10 §8.3 CT-OCR-02).
//!
//! MonkeyOCR's `/parse?return_type=zip_all` answers with a ZIP holding `*_content_list.json`,
//! `*_middle.json`, a `.md` and page images. Nothing is written to disk. The archive is hostile
//! input: every member name is checked (absolute paths, `..`, backslashes, drive prefixes and NUL
//! bytes refuse the archive as a whole), member contents are read through a `take()` limit of
//! the cap plus one byte (a declared size is never trusted, so a small archive inflating past
//! the cap — a zip bomb — stops at the cap), and the number of members is bounded. Every
//! problem is an [`ArchiveFault`], never a panic.

use std::io::{Cursor, Read};

use bytes::Bytes;
use gateway_ports::{ArchiveEntry, ArchiveFault};

/// Largest result download: 64 MiB = 67 108 864 bytes.
pub const MAX_ARCHIVE_BYTES: usize = 64 * 1024 * 1024;

/// Largest needed member, uncompressed: 32 MiB = 33 554 432 bytes.
pub const MAX_MEMBER_BYTES: usize = 32 * 1024 * 1024;

/// Most members an archive may list: 10 000 (a document of a few hundred pages has a few
/// hundred images); more is refused as `Undecodable` rather than walked.
pub const MAX_MEMBERS: usize = 10_000;

/// The caps of [`decode_archive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchiveCaps {
    /// Largest archive in bytes.
    pub archive_bytes: usize,
    /// Largest needed member, uncompressed, in bytes.
    pub member_bytes: usize,
    /// Most members.
    pub members: usize,
}

impl Default for ArchiveCaps {
    fn default() -> Self {
        Self {
            archive_bytes: MAX_ARCHIVE_BYTES,
            member_bytes: MAX_MEMBER_BYTES,
            members: MAX_MEMBERS,
        }
    }
}

/// `true` for a member the core maps: a `_content_list.json`, a `_middle.json` or a
/// `.md` member. Only the first of each kind is read.
fn member_kind(name: &str) -> Option<usize> {
    if name.ends_with("_content_list.json") {
        Some(0)
    } else if name.ends_with("_middle.json") {
        Some(1)
    } else if name.ends_with(".md") {
        Some(2)
    } else {
        None
    }
}

/// `true` when `name` is a safe relative member path: non-empty, not absolute, no `..`
/// component, no backslash, no drive prefix (`C:`), no NUL or other control byte.
pub fn is_safe_member_name(name: &str) -> bool {
    if name.is_empty() || name.starts_with('/') || name.contains('\\') {
        return false;
    }
    if name.chars().any(char::is_control) {
        return false;
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return false;
    }
    !name.split('/').any(|part| part == "..")
}

/// Decodes `archive` into its entries: every member in archive order, directories
/// left out; the bytes are filled for the members the core maps (the first `_content_list.json`,
/// the first `_middle.json`, the first `.md`) and empty for the others (page images are not
/// needed; their names still reach the core for `raw`).
///
/// Errors: an archive over `caps.archive_bytes` or a needed member inflating past
/// `caps.member_bytes` → `TooLarge { limit }`; an unsafe member name → `UnsafeMemberName`; not a
/// ZIP, a broken member, a CRC mismatch, an unsupported compression or more than `caps.members`
/// members → `Undecodable`.
pub fn decode_archive(
    archive: &[u8],
    caps: ArchiveCaps,
) -> Result<Vec<ArchiveEntry>, ArchiveFault> {
    if archive.len() > caps.archive_bytes {
        return Err(ArchiveFault::TooLarge {
            limit: caps.archive_bytes,
        });
    }
    let mut zip =
        zip::ZipArchive::new(Cursor::new(archive)).map_err(|_| ArchiveFault::Undecodable)?;
    if zip.len() > caps.members {
        return Err(ArchiveFault::Undecodable);
    }
    // Names first: one unsafe name refuses the whole archive before anything is inflated.
    let mut names = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let file = zip.by_index_raw(i).map_err(|_| ArchiveFault::Undecodable)?;
        let name = file
            .name()
            .map_err(|_| ArchiveFault::Undecodable)?
            .into_owned();
        if !is_safe_member_name(&name) {
            return Err(ArchiveFault::UnsafeMemberName);
        }
        names.push((name, file.is_dir()));
    }
    let mut taken = [false; 3];
    let mut entries = Vec::with_capacity(names.len());
    for (i, (name, is_dir)) in names.into_iter().enumerate() {
        if is_dir {
            continue;
        }
        let wanted = member_kind(&name).filter(|k| !taken[*k]);
        let bytes = match wanted {
            None => Bytes::new(),
            Some(kind) => {
                taken[kind] = true;
                let file = zip.by_index(i).map_err(|_| ArchiveFault::Undecodable)?;
                let limit = u64::try_from(caps.member_bytes)
                    .unwrap_or(u64::MAX)
                    .saturating_add(1);
                let mut out = Vec::new();
                file.take(limit)
                    .read_to_end(&mut out)
                    .map_err(|_| ArchiveFault::Undecodable)?;
                if out.len() > caps.member_bytes {
                    return Err(ArchiveFault::TooLarge {
                        limit: caps.member_bytes,
                    });
                }
                Bytes::from(out)
            }
        };
        entries.push(ArchiveEntry { path: name, bytes });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, bytes) in members {
            w.start_file(*name, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn o_15_needed_members_are_read_others_listed() {
        let z = zip_of(&[
            ("doc/doc_content_list.json", b"[]"),
            ("doc/images/p1.jpg", b"\xFF\xD8\xFF"),
            ("doc/doc_middle.json", b"{}"),
            ("doc/doc.md", b"# T"),
            ("doc/other.md", b"second"),
        ]);
        let entries = decode_archive(&z, ArchiveCaps::default()).unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            names,
            [
                "doc/doc_content_list.json",
                "doc/images/p1.jpg",
                "doc/doc_middle.json",
                "doc/doc.md",
                "doc/other.md"
            ]
        );
        assert_eq!(&entries[0].bytes[..], b"[]");
        assert!(entries[1].bytes.is_empty());
        assert_eq!(&entries[3].bytes[..], b"# T");
        assert!(entries[4].bytes.is_empty(), "only the first .md is read");
    }

    #[test]
    fn o_15_zip_bomb_is_too_large_not_an_allocation() {
        // 8 MiB of zeros deflate to a few KiB; the cap is 1 MiB.
        let big = vec![0u8; 8 * 1024 * 1024];
        let z = zip_of(&[("x_content_list.json", &big)]);
        assert!(z.len() < 64 * 1024, "the bomb is small: {}", z.len());
        let caps = ArchiveCaps {
            member_bytes: 1024 * 1024,
            ..ArchiveCaps::default()
        };
        assert_eq!(
            decode_archive(&z, caps),
            Err(ArchiveFault::TooLarge { limit: 1024 * 1024 })
        );
    }

    #[test]
    fn o_15_path_traversal_member_is_refused() {
        for bad in [
            "../evil_content_list.json",
            "a/../../etc/passwd",
            "/abs.md",
            "C:/x.md",
            "a\\..\\b.md",
        ] {
            let z = zip_of(&[("ok.md", b"x"), (bad, b"y")]);
            assert_eq!(
                decode_archive(&z, ArchiveCaps::default()),
                Err(ArchiveFault::UnsafeMemberName),
                "{bad}"
            );
        }
    }

    #[test]
    fn o_15_undecodable_and_oversized_archives() {
        assert_eq!(
            decode_archive(b"not a zip at all", ArchiveCaps::default()),
            Err(ArchiveFault::Undecodable)
        );
        assert_eq!(
            decode_archive(b"", ArchiveCaps::default()),
            Err(ArchiveFault::Undecodable)
        );
        let z = zip_of(&[("a.md", b"x")]);
        let caps = ArchiveCaps {
            archive_bytes: 10,
            ..ArchiveCaps::default()
        };
        assert_eq!(
            decode_archive(&z, caps),
            Err(ArchiveFault::TooLarge { limit: 10 })
        );
        // A flipped byte inside the compressed data: CRC or inflate error, never a panic.
        let mut z = zip_of(&[("a_content_list.json", &[7u8; 4096])]);
        let mid = 60;
        z[mid] ^= 0xFF;
        assert!(decode_archive(&z, ArchiveCaps::default()).is_err());
    }

    #[test]
    fn o_15_too_many_members_is_undecodable() {
        let members: Vec<(String, Vec<u8>)> =
            (0..5).map(|i| (format!("p{i}.jpg"), vec![1u8])).collect();
        let refs: Vec<(&str, &[u8])> = members
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        let z = zip_of(&refs);
        let caps = ArchiveCaps {
            members: 4,
            ..ArchiveCaps::default()
        };
        assert_eq!(decode_archive(&z, caps), Err(ArchiveFault::Undecodable));
    }

    proptest::proptest! {
        /// Arbitrary bytes never panic the decoder (hostile input).
        #[test]
        fn o_15_arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let _ = decode_archive(&bytes, ArchiveCaps::default());
        }

        /// A real archive with bytes flipped at random never panics either.
        #[test]
        fn o_15_corrupted_archives_never_panic(at in 0usize..400, x in 1u8..=255) {
            let mut z = zip_of(&[("d_content_list.json", b"[{\"type\":\"text\",\"text\":\"hi\"}]"), ("d.md", b"# hi")]);
            let i = at % z.len();
            z[i] ^= x;
            let _ = decode_archive(&z, ArchiveCaps::default());
        }
    }
}
