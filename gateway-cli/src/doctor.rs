//! `pgw doctor`: validates a scope (stages A–F), prints every warning, then
//! probes each source, bounded by `min(timeout_s, 10 s)` — no admission, no breaker, no
//! telemetry:
//!
//! 1. `GET {base_url}/models`: an OpenAI-shaped list (`{"data": [{"id": …}, …]}`) that names the
//!    source's model → ok; a list without it → `model_missing`, naming the model and the listed
//!    ones;
//! 2. a 404 or a 2xx that is not an OpenAI list (mocks and proxies without a standard
//!    `/models`) → one minimal request instead: a chat completion with `max_tokens: 1` (chat
//!    scopes) or a one-word embedding (embedding scopes), judged by its status; the output says
//!    which probe was used;
//! 3. any other status → refused. A refusal shows the server's reason (the body's summary,
//!    scrubbed of the key, bearer tokens and IP addresses).
//!
//! Exit 0 when every source is ok, 3 on a configuration error, 13 when a source was unreachable
//! or refused, 14 when every source answered but at least one does not serve its model.
//! `--json` prints one object with `schema_version`.

use std::sync::Arc;

use clap::{Args, ValueEnum};
use gateway_ports::config::SourceConfig;
use polygateway::{
    ClientPlan, ConfigError, EmbeddingPlan, EmbeddingSettings, GatewaySettings, OpenAiTransport,
    TransportOptions,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// Which kind of scope to validate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// A chat scope (default scope `LLM`).
    Chat,
    /// An embedding scope (default scope `EMBED`).
    Embedding,
    /// An OCR scope (default scope `OCR`): probes `GET /health` instead.
    Ocr,
}

/// Arguments of `pgw doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Scope kind.
    #[arg(long, value_enum, default_value_t = KindArg::Chat)]
    pub kind: KindArg,
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Configuration flags.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// What one source's probe concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The source serves the model.
    Ok,
    /// The source answered, but does not serve the model.
    ModelMissing,
    /// The source answered with a status that refuses the probe.
    Refused,
    /// No answer (connect, TLS, timeout).
    Unreachable,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ModelMissing => "model_missing",
            Self::Refused => "refused",
            Self::Unreachable => "unreachable",
        }
    }
}

/// Which probe decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    /// `GET /models`.
    Models,
    /// `POST /chat/completions` with `max_tokens: 1`.
    Chat,
    /// `POST /embeddings` with one word.
    Embedding,
}

impl ProbeKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Models => "models",
            Self::Chat => "chat",
            Self::Embedding => "embedding",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Models => "GET /models",
            Self::Chat => "POST /chat/completions (max_tokens 1; no standard /models)",
            Self::Embedding => "POST /embeddings (one word; no standard /models)",
        }
    }
}

/// Most listed model names kept in the output.
const LISTED_MAX: usize = 20;

/// One source's probe result.
#[derive(Debug, Clone)]
struct Probe {
    name: String,
    base_url: String,
    model: String,
    verdict: Verdict,
    probe: ProbeKind,
    status: Option<u16>,
    error: Option<String>,
    /// The server's reason on a refusal or a missing model (scrubbed summary of the body).
    reason: Option<String>,
    /// The models `/models` listed when it did not name this one.
    listed: Option<Vec<String>>,
    latency_ms: u64,
}

impl Probe {
    fn ok(&self) -> bool {
        self.verdict == Verdict::Ok
    }

    fn verdict(&self) -> &'static str {
        self.verdict.as_str()
    }
}

/// The model ids of an OpenAI-shaped list (`{"data": [{"id": "…"}, …]}`), `None` for any other
/// shape.
fn openai_model_list(body: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(body).ok()?;
    let data = value.get("data")?.as_array()?;
    data.iter()
        .map(|item| item.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The server's reason, scrubbed of secrets and capped like a body summary.
fn reason_of(body: &str, source: &SourceConfig) -> Option<String> {
    let key = source.api_key.as_ref().map(|k| k.expose_secret().as_str());
    let summary = gateway_core::redact::scrubbed_summary(
        body,
        &gateway_core::redact::ScrubOptions {
            source_key: key,
            redact_ips: true,
            source: Some(source),
        },
    );
    (!summary.is_empty()).then_some(summary)
}

/// A failure text may quote the URL or an echoed header: scrub the source's configured secrets
/// (the IP addresses are what the user is debugging: kept).
fn scrub_error(text: &str, source: &SourceConfig) -> String {
    gateway_core::redact::scrub(
        text,
        &gateway_core::redact::ScrubOptions {
            source_key: None,
            redact_ips: false,
            source: Some(source),
        },
    )
}

/// Probes one source; see the module docs for the steps.
async fn probe_one(transport: &OpenAiTransport, source: &SourceConfig, kind: KindArg) -> Probe {
    let started = Instant::now();
    let mut probe = Probe {
        name: source.name.clone(),
        base_url: gateway_ports::redact_url_password(&source.base_url).into_owned(),
        model: source.model.clone(),
        verdict: Verdict::Unreachable,
        probe: ProbeKind::Models,
        status: None,
        error: None,
        reason: None,
        listed: None,
        latency_ms: 0,
    };
    let models = transport.probe_models_answer(source).await;
    let fallback = match models {
        Err(e) => {
            probe.error = Some(scrub_error(&e.to_string(), source));
            false
        }
        Ok(answer) => {
            probe.status = Some(answer.status);
            let list = (200..300)
                .contains(&answer.status)
                .then(|| openai_model_list(&answer.body))
                .flatten();
            match list {
                Some(ids) if ids.contains(&source.model) => {
                    probe.verdict = Verdict::Ok;
                    false
                }
                Some(ids) => {
                    probe.verdict = Verdict::ModelMissing;
                    probe.listed = Some(ids.into_iter().take(LISTED_MAX).collect());
                    false
                }
                None if answer.status == 404 || (200..300).contains(&answer.status) => true,
                None => {
                    probe.verdict = Verdict::Refused;
                    probe.reason = reason_of(&answer.body, source);
                    false
                }
            }
        }
    };
    if fallback {
        // OCR scopes never get here: they probe `GET /health` (`run` returns before).
        probe.probe = match kind {
            KindArg::Chat | KindArg::Ocr => ProbeKind::Chat,
            KindArg::Embedding => ProbeKind::Embedding,
        };
        let answer = match kind {
            KindArg::Chat | KindArg::Ocr => transport.probe_chat(source).await,
            KindArg::Embedding => transport.probe_embedding(source).await,
        };
        match answer {
            Err(e) => {
                probe.status = None;
                probe.verdict = Verdict::Unreachable;
                probe.error = Some(scrub_error(&e.to_string(), source));
            }
            Ok(answer) => {
                probe.status = Some(answer.status);
                probe.verdict = if (200..300).contains(&answer.status) {
                    Verdict::Ok
                } else if matches!(answer.status, 400 | 404 | 422)
                    && gateway_core::classify::contains_marker(
                        &answer.body,
                        &gateway_core::classify::MODEL_MISSING_MARKERS,
                    )
                {
                    Verdict::ModelMissing
                } else {
                    Verdict::Refused
                };
                if probe.verdict != Verdict::Ok {
                    probe.reason = reason_of(&answer.body, source);
                }
            }
        }
    }
    probe.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    probe
}

/// The environment key of a transport-build error's field (`{SCOPE}__{PROVIDER}__{N}__{FIELD}`).
fn source_key(scope: &str, source: &str, field: Option<&str>) -> String {
    let (provider, n) = source.rsplit_once('_').unwrap_or((source, ""));
    format!(
        "{}__{}__{}__{}",
        scope.to_ascii_uppercase(),
        provider.to_ascii_uppercase(),
        n,
        field.unwrap_or("BASE_URL")
    )
}

pub(crate) fn plan_for(args: &DoctorArgs, scope: &str) -> Result<ClientPlan, ConfigError> {
    let map = args.config.env_map(scope)?;
    match args.kind {
        KindArg::Ocr => crate::ocr::doctor_plan(scope, &map),
        KindArg::Chat => {
            let settings = GatewaySettings::from_env_map(scope, &map)?;
            ClientPlan::from_settings(&settings)
        }
        KindArg::Embedding => {
            let settings = EmbeddingSettings::from_env_map(scope, &map)?;
            EmbeddingPlan::from_settings(&settings).map(|p| p.gateway)
        }
    }
}

async fn probe_all(
    transport: Arc<OpenAiTransport>,
    sources: &[SourceConfig],
    kind: KindArg,
) -> Vec<Probe> {
    let mut tasks = tokio::task::JoinSet::new();
    for (index, source) in sources.iter().cloned().enumerate() {
        let transport = Arc::clone(&transport);
        tasks.spawn(async move { (index, probe_one(&transport, &source, kind).await) });
    }
    let mut probes: Vec<(usize, Probe)> = Vec::with_capacity(sources.len());
    while let Some(joined) = tasks.join_next().await {
        if let Ok(p) = joined {
            probes.push(p);
        }
    }
    probes.sort_by_key(|(i, _)| *i);
    probes.into_iter().map(|(_, p)| p).collect()
}

/// Runs `pgw doctor`; returns the exit code.
pub async fn run(args: DoctorArgs) -> u8 {
    if args.kind == KindArg::Ocr {
        return doctor_ocr(&args).await;
    }
    let default_scope = match args.kind {
        KindArg::Chat => "LLM",
        KindArg::Embedding => "EMBED",
        KindArg::Ocr => "OCR",
    };
    let scope = args.config.scope_or(default_scope);
    let plan = match checked_plan(&args, &scope) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let transport = match OpenAiTransport::new(&plan.sources, TransportOptions::default()) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            let key = source_key(&scope, e.source_name(), e.field());
            return config::report_config_error(&e.to_config_error(key), args.json);
        }
    };
    if !args.json {
        print_plan_valid(&plan);
    }
    let probes = tokio::select! {
        probes = probe_all(transport, &plan.sources, args.kind) => probes,
        signal = signals::interrupted() => {
            if args.json {
                out::stdout_json(&signal.json());
            }
            return signal.exit_code();
        }
    };
    let all_ok = probes.iter().all(Probe::ok);
    let any_unanswered = probes
        .iter()
        .any(|p| matches!(p.verdict, Verdict::Refused | Verdict::Unreachable));
    if args.json {
        let sources: Vec<Value> = probes
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "base_url": p.base_url,
                    "model": p.model,
                    "verdict": p.verdict(),
                    "probe": p.probe.as_str(),
                    "http_status": p.status,
                    "error": p.error,
                    "reason": p.reason,
                    "models_listed": p.listed,
                    "latency_ms": p.latency_ms,
                })
            })
            .collect();
        print_json_report(&plan, all_ok, sources);
    } else {
        for p in &probes {
            let detail = match (&p.status, &p.error) {
                (Some(s), _) => format!("HTTP {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => String::new(),
            };
            // What the answer said comes after the time, so the time reads with the status.
            let mut said = String::new();
            if let Some(listed) = &p.listed {
                said.push_str(&format!(
                    "; model {} is not listed; the server lists: {}",
                    p.model,
                    if listed.is_empty() {
                        "(none)".to_owned()
                    } else {
                        listed.join(", ")
                    }
                ));
            }
            if let Some(reason) = &p.reason {
                said.push_str(&format!("; the server says: {reason}"));
            }
            out::stdout_line(&format!(
                "{} {} ({}, model {}): {} → {} in {} ms{}",
                p.verdict(),
                p.name,
                p.base_url,
                p.model,
                p.probe.describe(),
                detail,
                p.latency_ms,
                said
            ));
        }
    }
    if all_ok {
        exit::OK
    } else if any_unanswered {
        exit::DOCTOR_SOURCE
    } else {
        exit::DOCTOR_MODEL_MISSING
    }
}

/// `pgw doctor --kind ocr`: validates the OCR scope, then probes every source with
/// `GET {base_url}/health` (concurrent, each bounded by `min(timeout_s, 10 s)`; no admission,
/// no breaker, no telemetry). Exit 0 when every source is healthy, 13 otherwise.
pub async fn doctor_ocr(args: &DoctorArgs) -> u8 {
    let scope = args.config.scope_or("OCR");
    let plan = match checked_plan(args, &scope) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    let map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    let client = match polygateway::OcrClient::from_env_map(&scope, &map) {
        Ok(client) => client,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if !args.json {
        print_plan_valid(&plan);
    }
    let started = tokio::time::Instant::now();
    let health = tokio::select! {
        health = client.check_health() => health,
        signal = signals::interrupted() => {
            client.close().await;
            return signal.exit_code();
        }
    };
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    client.close().await;
    let all_ok = health.values().all(|h| *h);
    let verdict = |h: bool| if h { "ok" } else { "unhealthy" };
    if args.json {
        let sources: Vec<Value> = plan
            .sources
            .iter()
            .map(|s| {
                let healthy = health.get(&s.name).copied().unwrap_or(false);
                json!({
                    "name": s.name,
                    "base_url": s.base_url,
                    "model": s.model,
                    "verdict": verdict(healthy),
                    "probe": "GET /health",
                    "healthy": healthy,
                })
            })
            .collect();
        print_json_report(&plan, all_ok, sources);
    } else {
        for s in &plan.sources {
            let healthy = health.get(&s.name).copied().unwrap_or(false);
            out::stdout_line(&format!(
                "{} {} ({}): GET /health → {} (all probes {} ms)",
                verdict(healthy),
                s.name,
                s.base_url,
                if healthy {
                    "healthy"
                } else {
                    "not healthy (no answer, an error status, or status/model_loaded not ready)"
                },
                latency_ms
            ));
        }
    }
    if all_ok {
        exit::OK
    } else {
        exit::DOCTOR_SOURCE
    }
}

/// The validated plan of `scope` with unknown keys refused; `Err` is the exit code after the
/// configuration error was reported.
fn checked_plan(args: &DoctorArgs, scope: &str) -> Result<polygateway::ClientPlan, u8> {
    let plan = plan_for(args, scope).map_err(|e| config::report_config_error(&e, args.json))?;
    config::refuse_unknown_keys(&args.config, &plan.warnings)
        .map_err(|e| config::report_config_error(&e, args.json))?;
    Ok(plan)
}

/// The human-mode line saying the scope's configuration is valid, then its warnings.
fn print_plan_valid(plan: &polygateway::ClientPlan) {
    out::stderr_line(&format!(
        "pgw doctor: scope {} ({} source{}): configuration valid",
        plan.scope,
        plan.sources.len(),
        if plan.sources.len() == 1 { "" } else { "s" }
    ));
    config::print_warnings(&plan.warnings);
}

/// The `--json` answer of `pgw doctor` (every kind): the scope, its warnings and one object per
/// probed source.
fn print_json_report(plan: &polygateway::ClientPlan, all_ok: bool, sources: Vec<Value>) {
    out::stdout_json(&json!({
        "schema_version": SCHEMA_VERSION,
        "ok": all_ok,
        "scope": plan.scope,
        "warnings": plan.warnings.iter().map(config::warning_json).collect::<Vec<_>>(),
        "sources": sources,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d36_openai_model_list_shape() {
        assert_eq!(
            openai_model_list(r#"{"object":"list","data":[{"id":"a"},{"id":"b"}]}"#),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(openai_model_list(r#"{"data":[]}"#), Some(vec![]));
        assert_eq!(openai_model_list(r#"{"models":[{"name":"a"}]}"#), None);
        assert_eq!(openai_model_list(r#"{"data":[{"name":"a"}]}"#), None);
        assert_eq!(openai_model_list("<html>"), None);
    }

    #[test]
    fn r_53_transport_errors_name_the_source_key() {
        assert_eq!(
            source_key("llm", "open_router_2", Some("CA_FILE")),
            "LLM__OPEN_ROUTER__2__CA_FILE"
        );
    }
}
