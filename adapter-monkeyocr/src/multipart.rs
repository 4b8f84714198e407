//! The multipart form MonkeyOCR takes: one part named `file` whose filename extension
//! matches the content, sniffed from the first bytes. Built by hand (one part, no streaming) so
//! the adapter needs no multipart feature and the bytes are exactly what the tests assert.

use bytes::{BufMut as _, Bytes, BytesMut};

/// The filename and media type of an upload, sniffed from its first bytes (chosen):
/// PNG → `image.png`, JPEG (`FF D8 FF`) → `image.jpg`, PDF (`%PDF-`) → `document.pdf`,
/// otherwise `image.png`.
pub fn sniff_filename(image: &[u8]) -> (&'static str, &'static str) {
    if image.starts_with(b"%PDF-") {
        ("document.pdf", "application/pdf")
    } else if image.starts_with(&[0xFF, 0xD8, 0xFF]) {
        ("image.jpg", "image/jpeg")
    } else {
        ("image.png", "image/png")
    }
}

/// A `multipart/form-data` body with one `file` part, and its `Content-Type` header value.
/// The boundary is derived from the attempt's `call_id` (unique per attempt) and checked not to
/// occur in the image; a collision (practically impossible) lengthens it.
pub fn file_form(image: &[u8], call_id: &str) -> (String, Bytes) {
    let clean: String = call_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(40)
        .collect();
    let mut boundary = format!("----pgw-ocr-{clean}");
    while contains(image, boundary.as_bytes()) {
        boundary.push('x');
    }
    let (filename, media) = sniff_filename(image);
    let mut body = BytesMut::with_capacity(image.len() + 256);
    body.put_slice(b"--");
    body.put_slice(boundary.as_bytes());
    body.put_slice(b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"");
    body.put_slice(filename.as_bytes());
    body.put_slice(b"\"\r\nContent-Type: ");
    body.put_slice(media.as_bytes());
    body.put_slice(b"\r\n\r\n");
    body.put_slice(image);
    body.put_slice(b"\r\n--");
    body.put_slice(boundary.as_bytes());
    body.put_slice(b"--\r\n");
    (
        format!("multipart/form-data; boundary={boundary}"),
        body.freeze(),
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o_12_filename_sniffed_from_first_bytes() {
        assert_eq!(sniff_filename(b"\x89PNG\r\n\x1a\n").0, "image.png");
        assert_eq!(sniff_filename(b"\xFF\xD8\xFF\xE0").0, "image.jpg");
        assert_eq!(sniff_filename(b"%PDF-1.7").0, "document.pdf");
        assert_eq!(sniff_filename(b"GIF89a").0, "image.png");
        assert_eq!(sniff_filename(b"").0, "image.png");
    }

    #[test]
    fn o_12_one_file_part_exactly() {
        let (ct, body) = file_form(b"%PDF-1.4 x", "ab-12");
        assert_eq!(ct, "multipart/form-data; boundary=----pgw-ocr-ab12");
        let text = String::from_utf8_lossy(&body);
        assert_eq!(
            text,
            "------pgw-ocr-ab12\r\nContent-Disposition: form-data; name=\"file\"; filename=\"document.pdf\"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4 x\r\n------pgw-ocr-ab12--\r\n"
        );
    }

    #[test]
    fn o_12_boundary_never_inside_the_image() {
        let image = b"xx----pgw-ocr-c1yy".to_vec();
        let (ct, _) = file_form(&image, "c1");
        let boundary = ct.rsplit('=').next().unwrap_or_default();
        assert!(!contains(&image, boundary.as_bytes()));
    }
}
