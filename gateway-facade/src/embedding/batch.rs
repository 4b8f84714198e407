//! Bounded fan-out and the merge helpers of a batched embedding call: [`gather_bounded`], the
//! per-batch outcome, the weakest usage source and L2 normalisation.
//!
//! Separate from the client: these are pure helpers with no governance state.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::Arc;

use futures_util::StreamExt as _;
use gateway_ports::{SourceConfig, Usage, UsageSource};

use super::wire::Parsed;

/// Results in input order; the first error (in time) is returned.
///
/// At most `concurrency` futures run at once. A future is first polled when it gets a slot, so a
/// deadline inside it (e.g. `embed`'s) starts then, not while it waits. On the first error the
/// remaining futures are dropped — those in flight are cancelled (with the clients' full
/// settlement), unstarted ones never start. Nothing is spawned.
pub async fn gather_bounded<T, E, F>(
    concurrency: NonZeroUsize,
    futures: impl IntoIterator<Item = F>,
) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut stream = futures_util::stream::iter(
        futures
            .into_iter()
            .enumerate()
            .map(|(i, f)| async move { (i, f.await) }),
    )
    .buffer_unordered(concurrency.get());
    let mut slots: Vec<Option<T>> = Vec::new();
    while let Some((i, result)) = stream.next().await {
        let value = result?;
        if slots.len() <= i {
            slots.resize_with(i + 1, || None);
        }
        slots[i] = Some(value);
    }
    Ok(slots.into_iter().flatten().collect())
}
/// One batch's governed success, kept for the merge.
pub(super) struct BatchOutcome {
    pub(super) parsed: Parsed,
    pub(super) usage: Usage,
    pub(super) usage_source: UsageSource,
    pub(super) latency_ms: u64,
    pub(super) call_id: String,
    pub(super) source: Arc<SourceConfig>,
}

pub(super) fn weakest(a: UsageSource, b: UsageSource) -> UsageSource {
    let rank = |u: UsageSource| match u {
        UsageSource::Unavailable => 0,
        UsageSource::Estimated => 1,
        _ => 2,
    };
    if rank(b) < rank(a) { b } else { a }
}

/// L2 normalisation: a zero vector is returned unchanged.
pub(super) fn normalize_l2(vector: &mut [f32]) {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in vector.iter_mut() {
            #[allow(clippy::cast_possible_truncation)]
            {
                *x = (f64::from(*x) / norm) as f32;
            }
        }
    }
}
