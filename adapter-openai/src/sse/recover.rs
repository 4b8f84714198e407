//! Pure helpers of event interpretation: split recovery of an event whose data lines are each a
//! complete JSON text or `[DONE]`, and the cut of an `Unrecognized` excerpt.

use std::borrow::Cow;

use gateway_ports::ports::transport::ChunkJson;

/// One line of a split-recovered event.
pub(super) enum Piece {
    Chunk(ChunkJson),
    Done,
}

/// every data line, trimmed, is exactly `[DONE]` or a complete JSON text; else `None`.
pub(super) fn split_recovery(text: &str) -> Option<Vec<Piece>> {
    text.split('\n')
        .map(|line| {
            let trimmed = line.trim_matches(|c: char| c.is_ascii_whitespace());
            if trimmed == "[DONE]" {
                Some(Piece::Done)
            } else {
                ChunkJson::parse(trimmed).ok().map(Piece::Chunk)
            }
        })
        .collect()
}

/// The line text for an `Unrecognized` excerpt, at most `budget` bytes, cut on a character
/// boundary. Decoding is lossy; only the bytes needed are decoded.
pub(super) fn excerpt(line: &[u8], budget: usize) -> String {
    let mut end = line.len().min(budget);
    if end < line.len() {
        // Do not cut a multi-byte character in half (it would read as U+FFFD): back off to its
        // lead byte (at most three continuation bytes).
        let mut backed = 0;
        while end > 0 && backed < 3 && line.get(end).is_some_and(|&b| b & 0xC0 == 0x80) {
            end -= 1;
            backed += 1;
        }
    }
    let mut text = match String::from_utf8_lossy(line.get(..end).unwrap_or(&[])) {
        Cow::Borrowed(text) => text.to_owned(),
        Cow::Owned(text) => text,
    };
    if text.len() > budget {
        // Replacement characters (3 bytes each) can outgrow the budget.
        let mut cut = budget;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}
