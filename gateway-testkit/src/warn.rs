//! [`WarnCapture`]: a thread-default tracing subscriber recording the `code` of every warning
//! (95 CF-062: "one warning, the deadline error kept").

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Records the `code` field (or the message) of every WARN event on this thread while the
/// guard of [`WarnCapture::install`] lives.
#[derive(Clone, Default)]
pub struct WarnCapture {
    codes: Arc<Mutex<Vec<String>>>,
    next_id: Arc<AtomicU64>,
}

impl fmt::Debug for WarnCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WarnCapture")
            .field("codes", &self.codes())
            .finish()
    }
}

struct CodeVisitor(Option<String>);

impl tracing::field::Visit for CodeVisitor {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "code" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "code" || (field.name() == "message" && self.0.is_none()) {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
        }
    }
}

impl WarnCapture {
    /// Installs the capture as this thread's default subscriber.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(self.clone())
    }

    /// Codes of the warnings seen so far.
    pub fn codes(&self) -> Vec<String> {
        self.codes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl tracing::Subscriber for WarnCapture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(self.next_id.fetch_add(1, Ordering::SeqCst) + 1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut v = CodeVisitor(None);
            event.record(&mut v);
            self.codes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(v.0.unwrap_or_else(|| "<no code>".to_owned()));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
