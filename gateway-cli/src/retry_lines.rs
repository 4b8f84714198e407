//! `pgw chat` in human mode prints one stderr line per retry or wait: the core
//! logs each failed attempt's hold and each wait of the call as one event on the target
//! [`RETRY_EVENT_TARGET`]; this layer writes the event's message as `pgw: <message>`, whatever
//! the log level (the lines are part of the command's output, not logging).

use std::fmt::Write as _;

use gateway_core::retry_loop::RETRY_EVENT_TARGET;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::out;

/// The layer; see the module docs.
pub struct RetryLines;

/// Collects the `message` field of one event.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
}

impl<S: Subscriber> Layer<S> for RetryLines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != RETRY_EVENT_TARGET {
            return;
        }
        let mut message = Message::default();
        event.record(&mut message);
        if !message.0.is_empty() {
            out::stderr_line(&format!("pgw: {}", message.0));
        }
    }
}

/// `true` for the events this layer prints (used as its per-layer filter).
pub fn is_retry_event(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.target() == RETRY_EVENT_TARGET
}
