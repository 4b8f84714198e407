//! `pgw ocr` and `pgw doctor --kind ocr` end to end against `pgw sim` serving MonkeyOCR
//! (90 Part O; README D36): a PNG and a PDF give text and a layout summary.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use crate::support::{Pgw, SimProcess, fixture};
use serde_json::json;

fn write(pgw: &Pgw, name: &str, bytes: &[u8]) -> String {
    let path = pgw.dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00";
const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n";

// covers: O-4, O-12, O-13, O-15
#[test]
fn pgw_ocr_text_and_layout_on_a_png_and_a_pdf() {
    let sim = SimProcess::start(&fixture("monkeyocr"));
    let base = format!("http://{}", sim.addr);
    let pgw = Pgw::new();
    let png = write(&pgw, "scan.png", PNG);
    let pdf = write(&pgw, "invoice.pdf", PDF);
    for file in [&png, &pdf] {
        let (code, stdout, stderr) = pgw.run(&["ocr", file, "--base-url", &base], &[]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(stdout, "INVOICE No. 42\nTotal: 99.00 EUR\n");
        assert!(stderr.contains("text from cli_1"), "{stderr}");
        let (code, stdout, stderr) = pgw.run(&["ocr", file, "--layout", "--base-url", &base], &[]);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.contains("3 elements (table=1, text=1, title=1), 2 pages [612x792, 612x792]"),
            "{stderr}"
        );
        assert!(stdout.starts_with("# Invoice No. 42"), "{stdout}");
    }
    let (code, value, _) = pgw.run_json(
        &["ocr", &pdf, "--layout", "--json", "--base-url", &base],
        &[],
    );
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["ok"], true);
    assert_eq!(
        value["response"]["page_sizes"],
        json!([[612.0, 792.0], [612.0, 792.0]])
    );
    assert_eq!(
        value["response"]["elements"][2]["text"],
        json!("<table><tr><td>Total</td><td>99.00</td></tr></table>")
    );
    assert_eq!(value["response"]["call_stats"]["attempts"], 1);
}

// covers: O-5
#[test]
fn pgw_ocr_missing_or_empty_file_is_an_invalid_argument() {
    let pgw = Pgw::new();
    let empty = write(&pgw, "empty.png", b"");
    let (code, value, _) = pgw.run_json(
        &["ocr", &empty, "--json", "--base-url", "http://127.0.0.1:9"],
        &[],
    );
    assert_ne!(code, 0);
    assert_eq!(value["error"]["type"], "InvalidArgument", "{value}");
}

// covers: O-17, D36
#[test]
fn pgw_doctor_kind_ocr_probes_health() {
    let sim = SimProcess::start(&fixture("monkeyocr"));
    let base = format!("http://{}", sim.addr);
    let pgw = Pgw::new();
    let (code, value, _) = pgw.run_json(
        &["doctor", "--kind", "ocr", "--json", "--base-url", &base],
        &[],
    );
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "ok");
    assert_eq!(value["sources"][0]["probe"], "GET /health");
    drop(sim);
    let (code, value, _) = pgw.run_json(
        &["doctor", "--kind", "ocr", "--json", "--base-url", &base],
        &[],
    );
    assert_eq!(code, 13, "{value}");
    assert_eq!(value["sources"][0]["verdict"], "unhealthy");
}
