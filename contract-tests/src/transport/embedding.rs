//! The embedding endpoint's failure facts (10 §8.2 CT-EMB-02 = CT-CHAT-02, -03, -08, -09 for
//! `POST {base_url}/embeddings`). The request shape (CT-EMB-01) is in [`super::request`](mod@super::request).

use gateway_ports::{NetworkFaultKind, WireFailure};

use super::raw::{After, RawServer, refused_base_url};
use super::{
    TransportHarness, embed, embed_request, frame_cap, http_parts, raw_script, sim, source,
};

/// CT-EMB-02: status ≠ 200 is `Http` with its headers; a refused connection is
/// `Network(Connect)`; a body over `max_frame_bytes` is `FrameTooLarge`; a reset body is
/// `ReadError`.
pub async fn ct_emb_02_embedding_failures(h: &dyn TransportHarness) {
    // CT-CHAT-02: status ≠ 200.
    let upstream = sim(&raw_script(
        429,
        &[
            ("content-type", "application/json"),
            ("retry-after", "86400"),
        ],
        &[b"{\"error\":{\"code\":\"429\"}}"],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = embed(h, &src);
    let (status, headers, _) = http_parts(t.send(embed_request(&src)).await.expect_err("429"));
    assert_eq!(status, 429);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "retry-after" && v == "86400")
    );

    // CT-CHAT-03: before a status line.
    let refused = source(&refused_base_url());
    let t = embed(h, &refused);
    assert!(matches!(
        t.send(embed_request(&refused)).await,
        Err(WireFailure::Network(f)) if f.kind == NetworkFaultKind::Connect
    ));

    // CT-CHAT-08: capped and broken bodies.
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[&[b'1'; 64]],
        "eof",
    ));
    let src = source(&upstream.base_url());
    let t = h.embedding(std::slice::from_ref(&src), frame_cap(32));
    assert_eq!(
        t.send(embed_request(&src)).await,
        Err(WireFailure::FrameTooLarge { limit: 32 })
    );
    let upstream = sim(&raw_script(
        200,
        &[("content-type", "application/json")],
        &[b"{\"data\":"],
        "reset",
    ));
    let src = source(&upstream.base_url());
    let t = embed(h, &src);
    assert!(matches!(
        t.send(embed_request(&src)).await,
        Err(WireFailure::ReadError(_))
    ));
}

/// CT-EMB-02 (CT-CHAT-09): dropping an embedding `send` before an answer closes the connection.
pub async fn ct_emb_02_dropping_send_closes_the_connection(h: &dyn TransportHarness) {
    let mut server = RawServer::start(Vec::new(), After::Hold).await;
    let src = source(&server.base_url);
    let t = embed(h, &src);
    {
        let send = t.send(embed_request(&src));
        tokio::pin!(send);
        tokio::select! {
            _ = &mut send => panic!("the server never answers"),
            got = server.requests.recv() => assert!(got.is_some()),
        }
    }
    assert_eq!(
        server.closed.recv().await,
        Some(()),
        "the upstream saw the disconnect"
    );
}
