//! CT-OCR-01..06 (10 §8.3) against `adapter-monkeyocr` over the MonkeyOCR simulator.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use adapter_monkeyocr::MonkeyOcrTransport;
use gateway_ports::{OcrTransport, SourceConfig};

fn monkeyocr(sources: &[SourceConfig]) -> Arc<dyn OcrTransport> {
    Arc::new(MonkeyOcrTransport::new(sources).expect("transport builds"))
}

contract_tests::ocr_contract!(monkeyocr);
