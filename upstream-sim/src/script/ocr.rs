//! MonkeyOCR rendering (docs/simulator.md "MonkeyOCR"): the `/ocr/text` and `/parse`
//! envelopes, the result archive behind `GET /static/sim-r{i}.zip`, `GET /health`, and the
//! summary of a recorded multipart upload.
//!
//! The archives are built in memory with the `zip` crate (feature `server`; without it the
//! download answers 501), deterministically from the script: the same script gives the same
//! bytes.

use bytes::Bytes;
use serde_json::{Value, json};

use super::plan::{Plan, PlannedWrite, render_error};
use super::types::{Framing, Head, Ocr, OcrArchive, OcrLocation};

/// The host a `location: foreign` download URL names.
pub const FOREIGN_RESULT_HOST: &str = "http://foreign.invalid:9";

/// Uncompressed size of the `bomb` archive's content list: 40 MiB (over the 32 MiB cap).
pub const BOMB_MEMBER_BYTES: usize = 40 * 1024 * 1024;

/// Size of the `oversized` archive: 64 MiB + 1 byte (over the 64 MiB download cap).
pub const OVERSIZED_ARCHIVE_BYTES: usize = 64 * 1024 * 1024 + 1;

fn json_plan(status: u16, body: &Value) -> Plan {
    let mut plan = render_error(status, "", "");
    plan.writes = vec![PlannedWrite {
        delay_ms: 0,
        bytes: Bytes::from(body.to_string()),
    }];
    plan
}

pub use super::archive::{archive_index, archive_path};

/// `POST /ocr/text`: `{"success", "task_type": "text", "content", "message"}`.
pub fn render_text(ocr: &Ocr) -> Plan {
    json_plan(
        200,
        &json!({
            "success": ocr.success,
            "task_type": "text",
            "content": ocr.content,
            "message": ocr.message,
        }),
    )
}

/// `POST /parse`: `{"success", "message", "download_url", "files"}`; the URL names response
/// `index`'s archive (relative, or on a foreign host), `null` with `archive: none`.
pub fn render_parse(ocr: &Ocr, index: usize) -> Plan {
    let url = match (ocr.archive, ocr.location) {
        (OcrArchive::None, _) => Value::Null,
        (_, OcrLocation::Relative) => Value::String(archive_path(index)),
        (_, OcrLocation::Foreign) => {
            Value::String(format!("{FOREIGN_RESULT_HOST}{}", archive_path(index)))
        }
    };
    let files = if url.is_null() {
        Value::Null
    } else {
        json!([format!("sim-r{index}.zip")])
    };
    json_plan(
        200,
        &json!({
            "success": ocr.success,
            "message": ocr.message.clone().unwrap_or_else(|| "ok".to_owned()),
            "download_url": url,
            "files": files,
        }),
    )
}

/// `GET /health` when no scripted response matches it: healthy, model loaded.
pub fn render_health() -> Plan {
    json_plan(200, &json!({"status": "healthy", "model_loaded": true}))
}

/// The archive download of `ocr` (its `download_status` and `download_head` applied).
pub fn render_archive(ocr: &Ocr) -> Plan {
    if ocr.download_status != 200 {
        let mut plan = render_error(
            ocr.download_status,
            "sim_download",
            "scripted download failure",
        );
        plan.head = ocr.download_head;
        return plan;
    }
    let bytes = match archive_bytes(ocr) {
        Some(b) => b,
        None => return render_error(501, "sim_no_zip", "upstream-sim built without archives"),
    };
    let mut plan = render_error(200, "", "");
    plan.headers = vec![("content-type".to_owned(), "application/zip".to_owned())];
    plan.framing = Framing::ContentLength;
    plan.head = ocr.download_head;
    plan.writes = vec![PlannedWrite {
        delay_ms: 0,
        bytes: Bytes::from(bytes),
    }];
    if plan.head == Head::Hang {
        plan.writes.clear();
    }
    plan
}

/// The members of the `zip` archive of `ocr`.
pub fn archive_members(ocr: &Ocr) -> Vec<(String, Vec<u8>)> {
    let middle = json!({
        "pdf_info": ocr.page_sizes.iter().enumerate().map(|(i, [w, h])| json!({"page_idx": i, "page_size": [w, h]})).collect::<Vec<_>>(),
    });
    vec![
        (
            "sim/sim_content_list.json".to_owned(),
            Value::Array(ocr.elements.clone()).to_string().into_bytes(),
        ),
        (
            "sim/sim_middle.json".to_owned(),
            middle.to_string().into_bytes(),
        ),
        ("sim/sim.md".to_owned(), ocr.markdown.clone().into_bytes()),
    ]
}

#[cfg(feature = "server")]
fn zip_of(members: &[(String, Vec<u8>)]) -> Option<Vec<u8>> {
    use std::io::Write as _;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        w.start_file(name.as_str(), opts).ok()?;
        w.write_all(bytes).ok()?;
    }
    Some(w.finish().ok()?.into_inner())
}

#[cfg(not(feature = "server"))]
fn zip_of(_members: &[(String, Vec<u8>)]) -> Option<Vec<u8>> {
    None
}

/// The bytes of `ocr`'s archive (`None` without the `server` feature for real ZIPs).
pub fn archive_bytes(ocr: &Ocr) -> Option<Vec<u8>> {
    match ocr.archive {
        OcrArchive::Zip | OcrArchive::None => zip_of(&archive_members(ocr)),
        OcrArchive::Corrupt => Some(b"PK\x03\x04 upstream-sim: this is not a zip archive".to_vec()),
        OcrArchive::Oversized => Some(vec![0u8; OVERSIZED_ARCHIVE_BYTES]),
        OcrArchive::Bomb => zip_of(&[(
            "sim/sim_content_list.json".to_owned(),
            vec![b' '; BOMB_MEMBER_BYTES],
        )]),
        OcrArchive::Traversal => {
            let mut members = archive_members(ocr);
            members.push(("../sim_content_list.json".to_owned(), b"[]".to_vec()));
            zip_of(&members)
        }
    }
}

/// The recorded form of a `multipart/form-data` body: `{"multipart": [{"name", "filename",
/// "content_type", "bytes"}]}` (part contents are not kept, only their length); `None` when
/// `content_type` is not multipart or names no boundary.
pub fn multipart_summary(content_type: &str, body: &[u8]) -> Option<Value> {
    let media = content_type.split(';').next()?.trim();
    if !media.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = content_type.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| v.trim().trim_matches('"').to_owned())
    })?;
    let delimiter = format!("--{boundary}");
    let text = body;
    let mut parts = Vec::new();
    let positions: Vec<usize> = find_all(text, delimiter.as_bytes());
    for pair in positions.windows(2) {
        let start = pair[0] + delimiter.len();
        let end = pair[1];
        let Some(part) = text.get(start..end) else {
            continue;
        };
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let Some(split) = find_all(part, b"\r\n\r\n").first().copied() else {
            continue;
        };
        let head = String::from_utf8_lossy(&part[..split]);
        let content = &part[split + 4..];
        let content = content.strip_suffix(b"\r\n").unwrap_or(content);
        let mut name = Value::Null;
        let mut filename = Value::Null;
        let mut ctype = Value::Null;
        for line in head.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if k.trim().eq_ignore_ascii_case("content-disposition") {
                for attr in v.split(';') {
                    if let Some((ak, av)) = attr.trim().split_once('=') {
                        let av = Value::String(av.trim().trim_matches('"').to_owned());
                        match ak.trim() {
                            "name" => name = av,
                            "filename" => filename = av,
                            _ => {}
                        }
                    }
                }
            } else if k.trim().eq_ignore_ascii_case("content-type") {
                ctype = Value::String(v.trim().to_owned());
            }
        }
        parts.push(json!({"name": name, "filename": filename, "content_type": ctype, "bytes": content.len()}));
    }
    Some(json!({ "multipart": parts }))
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_paths_round_trip() {
        assert_eq!(archive_index(&archive_path(7)), Some(7));
        assert_eq!(archive_index("/static/other.zip"), None);
    }

    #[test]
    fn multipart_summary_names_the_part() {
        let body = b"--b1\r\nContent-Disposition: form-data; name=\"file\"; filename=\"image.png\"\r\nContent-Type: image/png\r\n\r\nabc\r\n--b1--\r\n";
        let s = multipart_summary("multipart/form-data; boundary=b1", body).unwrap();
        assert_eq!(
            s,
            json!({"multipart": [{"name": "file", "filename": "image.png", "content_type": "image/png", "bytes": 3}]})
        );
        assert!(multipart_summary("application/json", body).is_none());
    }
}
