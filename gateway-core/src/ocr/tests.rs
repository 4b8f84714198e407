//! Unit tests of the OCR call path.

use super::*;

fn entry(path: &str, bytes: &[u8]) -> ArchiveEntry {
    ArchiveEntry {
        path: path.to_owned(),
        bytes: Bytes::copy_from_slice(bytes),
    }
}

#[test]
fn o_15_maps_elements_pages_and_markdown() {
    let entries = [
        entry(
            "d/d_content_list.json",
            br#"[{"type":"text","text":"Hello","page_idx":0},{"type":"table","table_body":"<table/>","page_idx":1,"img_path":"images/t.jpg"},{"type":"image"}]"#,
        ),
        entry(
            "d/d_middle.json",
            br#"{"pdf_info":[{"page_size":[612,792]},{"page_size":[595.5,842.0]}]}"#,
        ),
        entry("d/d.md", b"# Hello"),
        entry("d/images/t.jpg", b""),
    ];
    let parts = map_archive(&entries).unwrap();
    assert_eq!(parts.elements.len(), 3);
    assert_eq!(parts.elements[0].kind, "text");
    assert_eq!(parts.elements[0].text.as_deref(), Some("Hello"));
    assert_eq!(parts.elements[0].page_index, Some(0));
    assert_eq!(parts.elements[1].text.as_deref(), Some("<table/>"));
    assert_eq!(
        parts.elements[1].image_path.as_deref(),
        Some("images/t.jpg")
    );
    assert_eq!(parts.elements[2].text, None);
    assert_eq!(
        parts.page_sizes,
        vec![PageSize(612.0, 792.0), PageSize(595.5, 842.0)]
    );
    assert_eq!(parts.markdown, "# Hello");
}

#[test]
fn o_15_absent_members() {
    // No middle and no .md: [] and "".
    let parts = map_archive(&[entry("x_content_list.json", b"[]")]).unwrap();
    assert!(parts.elements.is_empty() && parts.page_sizes.is_empty());
    assert_eq!(parts.markdown, "");
    // No content list, not JSON, not an array: errors.
    assert!(map_archive(&[entry("x.md", b"# x")]).is_err());
    assert!(map_archive(&[entry("x_content_list.json", b"{not")]).is_err());
    assert!(map_archive(&[entry("x_content_list.json", b"{}")]).is_err());
    // A middle member that does not map.
    let bad = [
        entry("x_content_list.json", b"[]"),
        entry("x_middle.json", br#"{"pdf_info":[{"page_size":[1]}]}"#),
    ];
    assert!(map_archive(&bad).is_err());
}

#[test]
fn o_17_health_judgement() {
    let ok = |s: &str| -> Result<WireBody, WireFailure> {
        Ok(WireBody {
            headers: Vec::new(),
            bytes: Bytes::copy_from_slice(s.as_bytes()),
        })
    };
    assert!(judge_health(&ok(
        r#"{"status":"healthy","model_loaded":true}"#
    )));
    assert!(judge_health(&ok(r#"{"status":"healthy"}"#)));
    assert!(!judge_health(&ok(
        r#"{"status":"healthy","model_loaded":false}"#
    )));
    assert!(!judge_health(&ok(r#"{"status":"degraded"}"#)));
    assert!(!judge_health(&ok("healthy")));
    assert!(!judge_health(&ok("[]")));
    assert!(!judge_health(&Err(WireFailure::Http {
        status: 503,
        headers: Vec::new(),
        body: r#"{"status":"healthy"}"#.to_owned()
    })));
}

#[test]
fn o_12_o_14_envelope() {
    assert!(judge_envelope(br#"{"success":true,"content":""}"#).is_ok());
    assert!(matches!(
        judge_envelope(br#"{"success":"true"}"#),
        Err(EnvelopeFault::NotSuccess)
    ));
    assert!(matches!(
        judge_envelope(br#"{"content":"x"}"#),
        Err(EnvelopeFault::NotSuccess)
    ));
    assert!(matches!(judge_envelope(b"[]"), Err(EnvelopeFault::NotJson)));
    assert!(matches!(judge_envelope(b""), Err(EnvelopeFault::NotJson)));
}
