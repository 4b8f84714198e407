//! The deterministic fault draw (spec 15 "Faults": the same seed and request order give the same
//! faults).
//!
//! The generator is SplitMix64, written out here rather than taken from `rand`, because its
//! output must stay bit-for-bit stable across crate versions and platforms: a load-run seed
//! recorded today must replay the same faults later, in the server and in the in-memory wire.
//! Each request's draws depend only on `(seed, request index)`, never on earlier outcomes.

use super::types::Faults;

/// The fault applied to one request, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Answer 429 with this `Retry-After` value and a JSON error body.
    TooManyRequests {
        /// The `Retry-After` header value.
        retry_after: String,
    },
    /// Answer this status with a JSON error body.
    ServerError {
        /// The HTTP status.
        status: u16,
    },
    /// Never send the status line.
    HangBeforeHead,
    /// Pause mid-stream for this long, in milliseconds.
    Stall {
        /// Pause length in milliseconds.
        stall_ms: u64,
    },
    /// End the stream after half its frames, without finish or `[DONE]`.
    Truncate,
}

/// A seeded fault source: call [`FaultRng::next_fault`] once per scripted request, in request
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultRng {
    seed: u64,
    index: u64,
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in [0, 1) for draw number `slot` of request `index` under `seed`.
fn uniform(seed: u64, index: u64, slot: u64) -> f64 {
    let x = splitmix64(splitmix64(seed ^ splitmix64(index)).wrapping_add(slot));
    // 53 high bits → [0, 1): exact in f64.
    (x >> 11) as f64 / (1u64 << 53) as f64
}

impl FaultRng {
    /// A source starting at request index 0.
    pub fn new(seed: u64) -> Self {
        Self { seed, index: 0 }
    }

    /// The index of the next request (how many draws were made).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Draws the fault of the next request and advances the request index. Probabilities are
    /// checked in table order (429, 5xx, hang before head, stall, truncate); the first whose
    /// draw is below its probability wins. A probability of 1 always fires, 0 never does.
    pub fn next_fault(&mut self, faults: &Faults) -> Option<Fault> {
        let index = self.index;
        self.index = self.index.wrapping_add(1);
        Self::fault_at(self.seed, index, faults)
    }

    /// The fault of request `index` under `seed` (pure; what [`FaultRng::next_fault`] returns
    /// for that request).
    pub fn fault_at(seed: u64, index: u64, faults: &Faults) -> Option<Fault> {
        let fires = |slot: u64, p: f64| p > 0.0 && uniform(seed, index, slot) < p;
        if fires(0, faults.p_429) {
            Some(Fault::TooManyRequests {
                retry_after: faults.retry_after.clone(),
            })
        } else if fires(1, faults.p_5xx) {
            Some(Fault::ServerError {
                status: faults.status_5xx,
            })
        } else if fires(2, faults.p_hang_before_head) {
            Some(Fault::HangBeforeHead)
        } else if fires(3, faults.p_stall) {
            Some(Fault::Stall {
                stall_ms: faults.stall_ms,
            })
        } else if fires(4, faults.p_truncate) {
            Some(Fault::Truncate)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_faults_and_rates_roughly_match() {
        let faults = Faults {
            seed: 42,
            p_429: 0.2,
            p_5xx: 0.1,
            ..Faults::default()
        };
        let mut a = FaultRng::new(42);
        let mut b = FaultRng::new(42);
        let seq_a: Vec<_> = (0..2000).map(|_| a.next_fault(&faults)).collect();
        let seq_b: Vec<_> = (0..2000).map(|_| b.next_fault(&faults)).collect();
        assert_eq!(seq_a, seq_b);
        let n429 = seq_a
            .iter()
            .filter(|f| matches!(f, Some(Fault::TooManyRequests { .. })))
            .count();
        let n5xx = seq_a
            .iter()
            .filter(|f| matches!(f, Some(Fault::ServerError { status: 503 })))
            .count();
        assert!((300..500).contains(&n429), "{n429}");
        // 5xx only draws when 429 did not fire: 0.8 * 0.1 = 8 %.
        assert!((100..230).contains(&n5xx), "{n5xx}");
        let mut c = FaultRng::new(43);
        let seq_c: Vec<_> = (0..2000).map(|_| c.next_fault(&faults)).collect();
        assert_ne!(seq_a, seq_c);
    }

    #[test]
    fn probability_one_always_and_zero_never() {
        let always = Faults {
            p_truncate: 1.0,
            ..Faults::default()
        };
        let never = Faults::default();
        for i in 0..100 {
            assert_eq!(FaultRng::fault_at(7, i, &always), Some(Fault::Truncate));
            assert_eq!(FaultRng::fault_at(7, i, &never), None);
        }
    }
}
