//! `pgw doctor` (05 R-53): validates a scope (stages A–F), prints every warning, then sends
//! `GET {base_url}/models` to each source through `OpenAiTransport::probe_models`, bounded by
//! `min(timeout_s, 10 s)` — no admission, no breaker, no telemetry.
//!
//! Exit 0 when every source answered 2xx, 3 on a configuration error, 13 when a source was
//! unreachable or refused (any other status). `--json` prints one object with `schema_version`.

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

/// One source's probe result.
#[derive(Debug, Clone)]
struct Probe {
    name: String,
    base_url: String,
    model: String,
    status: Option<u16>,
    error: Option<String>,
    latency_ms: u64,
}

impl Probe {
    fn ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    fn verdict(&self) -> &'static str {
        match self.status {
            Some(s) if (200..300).contains(&s) => "ok",
            Some(_) => "refused",
            None => "unreachable",
        }
    }
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

fn plan_for(args: &DoctorArgs, scope: &str) -> Result<ClientPlan, ConfigError> {
    let map = args.config.env_map(scope)?;
    match args.kind {
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

async fn probe_all(transport: Arc<OpenAiTransport>, sources: &[SourceConfig]) -> Vec<Probe> {
    let mut tasks = tokio::task::JoinSet::new();
    for (index, source) in sources.iter().cloned().enumerate() {
        let transport = Arc::clone(&transport);
        tasks.spawn(async move {
            let started = Instant::now();
            let result = transport.probe_models(&source).await;
            let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let (status, error) = match result {
                Ok(status) => (Some(status), None),
                // A failure text may quote the URL or an echoed header: scrub the source's
                // configured secrets (the IP addresses are what the user is debugging: kept).
                Err(e) => (
                    None,
                    Some(gateway_core::redact::scrub(
                        &e.to_string(),
                        &gateway_core::redact::ScrubOptions {
                            source_key: None,
                            redact_ips: false,
                            source: Some(&source),
                        },
                    )),
                ),
            };
            (
                index,
                Probe {
                    name: source.name.clone(),
                    base_url: gateway_ports::redact_url_password(&source.base_url).into_owned(),
                    model: source.model.clone(),
                    status,
                    error,
                    latency_ms,
                },
            )
        });
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
    let default_scope = match args.kind {
        KindArg::Chat => "LLM",
        KindArg::Embedding => "EMBED",
    };
    let scope = args.config.scope_or(default_scope);
    let plan = match plan_for(&args, &scope) {
        Ok(plan) => plan,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if let Err(e) = config::refuse_unknown_keys(&args.config, &plan.warnings) {
        return config::report_config_error(&e, args.json);
    }
    let transport = match OpenAiTransport::new(&plan.sources, TransportOptions::default()) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            let key = source_key(&scope, e.source_name(), e.field());
            return config::report_config_error(&e.to_config_error(key), args.json);
        }
    };
    if !args.json {
        out::stderr_line(&format!(
            "pgw doctor: scope {} ({} source{}): configuration valid",
            plan.scope,
            plan.sources.len(),
            if plan.sources.len() == 1 { "" } else { "s" }
        ));
        config::print_warnings(&plan.warnings);
    }
    let probes = tokio::select! {
        probes = probe_all(transport, &plan.sources) => probes,
        signal = signals::interrupted() => {
            if args.json {
                out::stdout_json(&signal.json());
            }
            return signal.exit_code();
        }
    };
    let all_ok = probes.iter().all(Probe::ok);
    if args.json {
        let sources: Vec<Value> = probes
            .iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "base_url": p.base_url,
                    "model": p.model,
                    "verdict": p.verdict(),
                    "http_status": p.status,
                    "error": p.error,
                    "latency_ms": p.latency_ms,
                })
            })
            .collect();
        out::stdout_json(&json!({
            "schema_version": SCHEMA_VERSION,
            "ok": all_ok,
            "scope": plan.scope,
            "warnings": plan.warnings.iter().map(config::warning_json).collect::<Vec<_>>(),
            "sources": sources,
        }));
    } else {
        for p in &probes {
            let detail = match (&p.status, &p.error) {
                (Some(s), _) => format!("HTTP {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => String::new(),
            };
            out::stdout_line(&format!(
                "{} {} ({}, model {}): GET /models → {} in {} ms",
                p.verdict(),
                p.name,
                p.base_url,
                p.model,
                detail,
                p.latency_ms
            ));
        }
    }
    if all_ok {
        exit::OK
    } else {
        exit::DOCTOR_SOURCE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_53_transport_errors_name_the_source_key() {
        assert_eq!(
            source_key("llm", "open_router_2", Some("CA_FILE")),
            "LLM__OPEN_ROUTER__2__CA_FILE"
        );
    }
}
