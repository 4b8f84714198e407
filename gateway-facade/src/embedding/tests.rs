//! Unit tests of the embedding client: body parsing, ordering and normalisation.

use super::wire::{BodyFault, parse_embeddings};
use super::*;

#[test]
fn e_19_index_orders_vectors() {
    let body = br#"{"data":[{"index":1,"embedding":[2.0]},{"index":0,"embedding":[1.0]}],"usage":{"prompt_tokens":3}}"#;
    let Ok((parsed, tokens)) = parse_embeddings(body, 2) else {
        panic!("parse failed");
    };
    assert_eq!(parsed.vectors, vec![vec![1.0], vec![2.0]]);
    assert_eq!(tokens, Some(3));
}

#[test]
fn e_19_not_json_and_shape_anomalies() {
    assert!(matches!(parse_embeddings(b"", 1), Err(BodyFault::NotJson)));
    assert!(matches!(
        parse_embeddings(b"{}", 1),
        Err(BodyFault::Shape(_))
    ));
    assert!(matches!(
        parse_embeddings(br#"{"data":[{"embedding":[1.0]}]}"#, 2),
        Err(BodyFault::Shape(_))
    ));
    assert!(matches!(
        parse_embeddings(
            br#"{"data":[{"embedding":[1.0]},{"embedding":[1.0,2.0]}]}"#,
            2
        ),
        Err(BodyFault::Shape(_))
    ));
}

#[test]
fn e_14_normalize_l2_and_zero_vector() {
    let mut v = vec![3.0_f32, 4.0];
    normalize_l2(&mut v);
    assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
    let mut z = vec![0.0_f32, 0.0];
    normalize_l2(&mut z);
    assert_eq!(z, vec![0.0, 0.0]);
}
