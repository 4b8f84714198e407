//! The simulator's result-archive paths (`/static/sim-r{i}.zip`): a leaf both the OCR
//! renderer and the request router read, so neither imports the other for it.

/// The path of response `index`'s result archive.
pub fn archive_path(index: usize) -> String {
    format!("/static/sim-r{index}.zip")
}

/// The response index named by an archive path (`/static/sim-r{i}.zip`).
pub fn archive_index(path: &str) -> Option<usize> {
    path.split('?')
        .next()?
        .strip_prefix("/static/sim-r")?
        .strip_suffix(".zip")?
        .parse()
        .ok()
}
