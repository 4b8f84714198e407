//! The permit half of the memory limiter's model, shared by the two property suites
//! (`memory_limiter`, `limiter_buckets_props`): one modelled entry per granted permit, and the
//! permit operations both suites draw (settle, release, the fast path, abandon), applied to the
//! real permit and to its model together.

use gateway_ports::{Permit, SourceConfig};
use proptest::prelude::*;

/// A source with these limits (`0` = unlimited).
pub(crate) fn source(name: &str, max_concurrency: u32, rpm: u32, tpm: u64) -> SourceConfig {
    let mut s = SourceConfig::new(name, "test", "http://127.0.0.1:9", None, "m");
    s.max_concurrency = max_concurrency;
    s.rpm = rpm;
    s.tpm = tpm;
    s
}

/// The model of one permit.
#[derive(Debug, Clone)]
pub(crate) struct M {
    pub(crate) src: usize,
    pub(crate) est: u64,
    /// Tokens the entry charges: `est` until settled.
    pub(crate) tokens: u64,
    /// Grant time, in the suite's own unit of its clock (seconds or milliseconds).
    pub(crate) granted_at: u64,
    pub(crate) settled: bool,
    pub(crate) released: bool,
}

impl M {
    /// A fresh grant of `est` tokens on `src` at `granted_at`.
    pub(crate) fn granted(src: usize, est: u64, granted_at: u64) -> Self {
        Self {
            src,
            est,
            tokens: est,
            granted_at,
            settled: false,
            released: false,
        }
    }

    /// Settle: at most once, never after release; `est + (actual − est)`, never below zero.
    fn settle(&mut self, actual: u64) {
        if !self.settled && !self.released {
            self.settled = true;
            self.tokens = (self.tokens + actual).saturating_sub(self.est);
        }
    }
}

/// An operation on one held permit (`pick` modulo the permits held).
#[derive(Debug, Clone)]
pub(crate) enum PermitOp {
    Settle {
        pick: usize,
        actual: u64,
    },
    Release {
        pick: usize,
    },
    FastPath {
        pick: usize,
        actual: u64,
    },
    /// Cancellation: the holder drops the permit without settle or release.
    Abandon {
        pick: usize,
    },
}

/// Settle 2, release 2, fast path 1, abandon 1 (relative weights).
pub(crate) fn permit_op() -> impl Strategy<Value = PermitOp> {
    prop_oneof![
        2 => (any::<usize>(), 0..2500u64).prop_map(|(pick, actual)| PermitOp::Settle { pick, actual }),
        2 => any::<usize>().prop_map(|pick| PermitOp::Release { pick }),
        1 => (any::<usize>(), 0..2500u64).prop_map(|(pick, actual)| PermitOp::FastPath { pick, actual }),
        1 => any::<usize>().prop_map(|pick| PermitOp::Abandon { pick }),
    ]
}

/// Applies `op` to a held permit and to its model entry in `ms` (`held` pairs a model index
/// with the permit); nothing when no permit is held.
#[expect(
    clippy::expect_used,
    reason = "test helper: a port error fails the case"
)]
pub(crate) async fn apply(
    op: PermitOp,
    held: &mut Vec<(usize, Box<dyn Permit>)>,
    ms: &mut [M],
) -> Result<(), TestCaseError> {
    if held.is_empty() {
        return Ok(());
    }
    match op {
        PermitOp::Settle { pick, actual } => {
            let (i, p) = &held[pick % held.len()];
            p.settle(actual).await.expect("settle");
            ms[*i].settle(actual);
        }
        PermitOp::Release { pick } => {
            let (i, p) = &held[pick % held.len()];
            p.release().await.expect("release");
            ms[*i].released = true;
        }
        PermitOp::FastPath { pick, actual } => {
            let (i, p) = &held[pick % held.len()];
            prop_assert!(p.settle_and_release_now(actual));
            ms[*i].settle(actual);
            ms[*i].released = true;
        }
        PermitOp::Abandon { pick } => {
            let k = pick % held.len();
            drop(held.swap_remove(k));
        }
    }
    Ok(())
}

/// Releases every permit still held (model included): the zero-leak tail of both suites.
#[expect(
    clippy::expect_used,
    reason = "test helper: a port error fails the case"
)]
pub(crate) async fn release_all(held: &[(usize, Box<dyn Permit>)], ms: &mut [M]) {
    for (i, p) in held {
        p.release().await.expect("release");
        ms[*i].released = true;
    }
}
