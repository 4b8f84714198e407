//! `pgw status`: the state of every source of a configured chat scope, as an operator wants it
//! — breaker state and opens, consecutive failures, permits in flight, RPM/TPM used in the
//! current minute, the pacer limit and the health score — as a table or one `--json` object.
//!
//! The command assembles the scope exactly as `pgw chat` does (same flags, `.env`, `--set`) and
//! reads `GatewayClient::sources_status()` without sending any call. With the in-process
//! (memory) limiter and breaker a fresh process knows nothing yet, so every source shows closed
//! and idle; with shared backends (`PGW_LIMITER_BACKEND` / `PGW_BREAKER_BACKEND`, in builds that
//! contain one) it shows what every process sharing them sees.

use clap::Args;
use polygateway::{GatewayClient, SourceStatus};
use serde_json::{Value, json};

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;

/// Arguments of `pgw status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Configuration flags.
    #[command(flatten)]
    pub config: ConfigArgs,
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn opt_f(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// The table rows (header first) of `statuses`.
pub fn table(statuses: &[SourceStatus]) -> Vec<String> {
    let header = [
        "SOURCE", "MODEL", "BREAKER", "OPENS", "FAILS", "INFLIGHT", "RPM", "TPM", "PACER", "HEALTH",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for s in statuses {
        rows.push(vec![
            s.name.clone(),
            s.model.clone(),
            opt(s.breaker_state),
            s.open_count.to_string(),
            opt(s.consecutive_failures),
            opt(s.inflight),
            opt(s.rpm_used),
            opt(s.tpm_used),
            opt_f(s.pacer_limit, 1),
            opt_f(s.health_score, 2),
        ]);
    }
    let columns = header.len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |v| v.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut lines: Vec<String> = rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&widths)
                .map(|(v, w)| format!("{v:<w$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        })
        .collect();
    for s in statuses {
        if let Some(error) = &s.backend_error {
            lines.push(format!(
                "{}: the limiter or breaker backend did not answer: {error}",
                s.name
            ));
        }
    }
    lines
}

/// Runs `pgw status`; returns the exit code (0, or 3 on a configuration error).
pub async fn run(args: StatusArgs) -> u8 {
    let scope = args.config.scope_or("LLM");
    let map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    let client = match GatewayClient::from_env_map(&scope, &map) {
        Ok(client) => client,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if let Err(e) = config::refuse_unknown_keys(&args.config, client.assembly_warnings()) {
        client.close().await;
        return config::report_config_error(&e, args.json);
    }
    config::print_warnings(client.assembly_warnings());
    let statuses = client.sources_status().await;
    client.close().await;
    if args.json {
        out::stdout_json(&json!({
            "schema_version": SCHEMA_VERSION,
            "ok": true,
            "scope": scope,
            "sources": serde_json::to_value(&statuses).unwrap_or(Value::Null),
        }));
    } else {
        for line in table(&statuses) {
            out::stdout_line(&line);
        }
    }
    exit::OK
}
