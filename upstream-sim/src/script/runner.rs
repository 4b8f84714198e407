//! Response selection and per-request state: which scripted response answers a request
//! (`order`, `match`), the request counters, and the fault draw. One [`ScriptRunner`] per
//! simulated upstream; the server keeps it behind a mutex, the in-memory wire owns it.

use std::collections::HashMap;

use super::faults::FaultRng;
use super::render::{
    DEFAULT_EMBEDDING_DIM, DEFAULT_MODEL, Endpoint, Plan, RequestFacts, normalize_path, render_at,
    render_embedding, render_error, render_models,
};
use super::types::{Order, Response, Script, ScriptError};

/// A validated script plus its selection state.
///
/// Selection (spec 15 `match`, `order`): the *candidates* of a request are the responses whose
/// `match` fits it (path compared without a leading `/v1`, model equal to the body's `model`)
/// and whose body kind fits the endpoint — chat requests skip `embedding` responses, embeddings
/// requests skip `completion` responses, other paths need an explicit `match.path`. With
/// `sequence` the n-th request with a given candidate set gets the n-th candidate (the last
/// repeats), with `cycle` it wraps, with `by_model` the first candidate always wins. No candidate:
/// embeddings get the default 8-dimension response, everything else 404 with a JSON error.
#[derive(Debug, Clone)]
pub struct ScriptRunner {
    script: Script,
    any_match: bool,
    counters: HashMap<Vec<usize>, u64>,
    all_counter: u64,
    served: u64,
    faults: FaultRng,
}

impl ScriptRunner {
    /// A runner at request 0. Errors: the script's [`Script::validate`] errors.
    pub fn new(script: Script) -> Result<Self, ScriptError> {
        script.validate()?;
        let any_match = script.responses.iter().any(|r| r.matcher.is_some());
        let seed = script.faults.as_ref().map_or(0, |f| f.seed);
        Ok(Self {
            script,
            any_match,
            counters: HashMap::new(),
            all_counter: 0,
            served: 0,
            faults: FaultRng::new(seed),
        })
    }

    /// The script being run.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// How many scripted requests (every endpoint but `GET /v1/models`) were planned.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// The model ids `GET /v1/models` lists: every `match.model` and `completion.model` of the
    /// script in order, without duplicates, else `sim-model`.
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.script.responses {
            let names = [
                r.matcher.as_ref().and_then(|m| m.model.as_ref()),
                r.completion.as_ref().and_then(|c| c.model.as_ref()),
            ];
            for name in names.into_iter().flatten() {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
        }
        if out.is_empty() {
            out.push(DEFAULT_MODEL.to_owned());
        }
        out
    }

    fn applicable(r: &Response, facts: &RequestFacts) -> bool {
        if let Some(m) = &r.matcher {
            if let Some(p) = &m.path
                && normalize_path(p) != normalize_path(&facts.path)
            {
                return false;
            }
            if let Some(model) = &m.model
                && facts.model.as_deref() != Some(model.as_str())
            {
                return false;
            }
        }
        match facts.endpoint {
            Endpoint::ChatCompletions => r.embedding.is_none() && r.ocr.is_none(),
            Endpoint::Embeddings => r.completion.is_none() && r.ocr.is_none(),
            Endpoint::OcrText | Endpoint::OcrParse => {
                r.completion.is_none() && r.embedding.is_none()
            }
            _ => r.matcher.as_ref().is_some_and(|m| m.path.is_some()),
        }
    }

    /// Picks the response index for a request and advances the counters (`None`: no match).
    fn select(&mut self, facts: &RequestFacts) -> Option<usize> {
        let responses = &self.script.responses;
        let order = self.script.order;
        let pick = |candidates: usize, counter: &mut u64| -> usize {
            let k = *counter;
            *counter = counter.saturating_add(1);
            match order {
                Order::ByModel => 0,
                Order::Sequence => usize::try_from(k).unwrap_or(usize::MAX).min(candidates - 1),
                Order::Cycle => (k % candidates as u64) as usize,
            }
        };
        if !self.any_match && facts.endpoint != Endpoint::Other {
            // Fast path: no response has a `match`; only the body kind filters.
            let fits = |r: &Response| Self::applicable(r, facts);
            if responses.iter().all(fits) {
                if responses.is_empty() {
                    return None;
                }
                return Some(pick(responses.len(), &mut self.all_counter));
            }
        }
        let candidates: Vec<usize> = responses
            .iter()
            .enumerate()
            .filter(|(_, r)| Self::applicable(r, facts))
            .map(|(i, _)| i)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let n = candidates.len();
        let at = match self.counters.get_mut(&candidates) {
            Some(counter) => pick(n, counter),
            None => {
                let mut counter = 0;
                let at = pick(n, &mut counter);
                self.counters.insert(candidates.clone(), counter);
                at
            }
        };
        candidates.get(at).copied()
    }

    /// Plans the answer to the next request: `GET /v1/models` lists [`ScriptRunner::models`]
    /// (no fault, no counter) unless a response's `match.path` is `/models`; every other request draws its fault (spec 15 "Faults", in request
    /// order), then — unless the fault is a 429/5xx, which answers instead and consumes no
    /// scripted response — selects and renders a response and applies the fault to it.
    pub fn next_plan(&mut self, facts: &RequestFacts) -> Plan {
        // A script may answer `GET /models` itself (`match.path: "/models"`) to play a server
        // without a standard model list (README D36); otherwise the built-in list answers.
        let scripted_models = || {
            self.script.responses.iter().any(|r| {
                r.matcher
                    .as_ref()
                    .and_then(|m| m.path.as_deref())
                    .is_some_and(|p| normalize_path(p) == "/models")
            })
        };
        if facts.endpoint == Endpoint::Models && !scripted_models() {
            return render_models(&self.models());
        }
        if facts.endpoint == Endpoint::OcrResult {
            // The archive of a scripted `/parse` answer: no counter, no fault of its own (the
            // response's `ocr.download_*` fields script its faults).
            let ocr = super::ocr::archive_index(normalize_path(&facts.path))
                .and_then(|i| self.script.responses.get(i))
                .and_then(|r| r.ocr.as_ref());
            return match ocr {
                Some(o) => super::ocr::render_archive(o),
                None => render_error(404, "sim_no_match", "upstream-sim: no such result archive"),
            };
        }
        let index = self.served;
        self.served = self.served.saturating_add(1);
        let fault = self
            .script
            .faults
            .as_ref()
            .and_then(|f| self.faults.next_fault(f));
        if let Some(f @ (super::Fault::TooManyRequests { .. } | super::Fault::ServerError { .. })) =
            fault
        {
            let mut plan = render_error(500, "server_error", "");
            plan.apply_fault(f);
            return plan;
        }
        let mut plan = match self.select(facts) {
            Some(i) => {
                let mut p = render_at(&self.script.responses[i], facts, index, i);
                p.response_index = Some(i);
                p
            }
            None if facts.endpoint == Endpoint::Embeddings => {
                render_embedding(DEFAULT_EMBEDDING_DIM, facts)
            }
            None if facts.endpoint == Endpoint::Health => super::ocr::render_health(),
            None => {
                let model = facts
                    .model
                    .as_deref()
                    .map_or(String::new(), |m| format!(" for model `{m}`"));
                render_error(
                    404,
                    "sim_no_match",
                    &format!(
                        "upstream-sim: no scripted response matches {}{model}",
                        facts.path
                    ),
                )
            }
        };
        if let Some(f) = fault {
            plan.apply_fault(f);
        }
        plan
    }
}
