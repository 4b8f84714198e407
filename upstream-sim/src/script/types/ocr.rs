//! The MonkeyOCR answer of a response: [`Ocr`], its archive and where it is served.
//!
//! Separate from the chat and embedding answers: only the OCR endpoints render it.

use serde::{Deserialize, Serialize};

use super::completion::default_true;
use super::framing::{Head, default_status};

/// A MonkeyOCR answer (docs/simulator.md "MonkeyOCR"). On `POST /ocr/text` it renders
/// `{"success", "task_type": "text", "content", "message"}`; on `POST /parse` it renders
/// `{"success", "message", "download_url", "files"}` whose `download_url` names the result
/// archive `/static/sim-r{i}.zip` (`i` = this response's index), served by `GET` with a real ZIP
/// built from `elements`, `page_sizes` and `markdown` (or one of the faulty archives of
/// [`OcrArchive`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ocr {
    /// The envelope's `success`; default `true`.
    #[serde(default = "default_true")]
    pub success: bool,
    /// The text envelope's `content`; default `""`.
    #[serde(default)]
    pub content: String,
    /// The envelope's `message`; default `null` (text) / `"ok"` (parse).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The `*_content_list.json` items (any JSON values, in order).
    #[serde(default)]
    pub elements: Vec<serde_json::Value>,
    /// `pdf_info[i].page_size` of `*_middle.json`, as `[width, height]`.
    #[serde(default)]
    pub page_sizes: Vec<[f64; 2]>,
    /// The `.md` member.
    #[serde(default)]
    pub markdown: String,
    /// Which archive the download serves; default `zip`.
    #[serde(default)]
    pub archive: OcrArchive,
    /// Where `download_url` points; default `relative`.
    #[serde(default)]
    pub location: OcrLocation,
    /// Status of the archive download; default 200 (another status answers a JSON error).
    #[serde(default = "default_status")]
    pub download_status: u16,
    /// `hang`: the archive download never answers; default `send`.
    #[serde(default)]
    pub download_head: Head,
}

impl Default for Ocr {
    fn default() -> Self {
        Self {
            success: true,
            content: String::new(),
            message: None,
            elements: Vec::new(),
            page_sizes: Vec::new(),
            markdown: String::new(),
            archive: OcrArchive::default(),
            location: OcrLocation::default(),
            download_status: 200,
            download_head: Head::default(),
        }
    }
}

/// The archive a `/parse` answer's download serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OcrArchive {
    /// A real ZIP: `sim/sim_content_list.json`, `sim/sim_middle.json`, `sim/sim.md`.
    #[default]
    Zip,
    /// No archive: `download_url` is `null`.
    None,
    /// Bytes that are not a ZIP.
    Corrupt,
    /// 64 MiB + 1 bytes (over the download cap).
    Oversized,
    /// A small ZIP whose content list inflates to 40 MiB (over the 32 MiB member cap).
    Bomb,
    /// A ZIP with a member named `../sim_content_list.json`.
    Traversal,
}

/// Where a `/parse` answer's `download_url` points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OcrLocation {
    /// A server-relative path, `/static/sim-r{i}.zip`.
    #[default]
    Relative,
    /// An absolute URL on another host (`http://foreign.invalid:9/...`).
    Foreign,
}
