//! Text-mode reading of the common chunk and body shapes straight from the JSON text.
//!
//! The reader lives in `gateway_ports::ports::text_read`, so the transport's JSON check of a
//! chunk is the same scan (issue 21; [`gateway_ports::ChunkJson::text_frame`]); the core decides
//! what the fields mean. The equivalence with the `Value` reading is pinned by a proptest
//! (`accumulate_fast_props.rs`).

pub(super) use gateway_ports::ports::text_read::{TextBody, TextFrame};
