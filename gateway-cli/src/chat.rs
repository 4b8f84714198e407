//! `pgw chat` (05 ): one governed call from the environment or flags.
//!
//! Assembles the scope through `GatewayClient::from_env_map` over the CLI's environment map
//! (so errors name real keys), sends one call in fidelity mode (the response carries the
//! `completion` with its tool calls), prints the content — or with `--json` exactly one object —
//! and exits with the code of R-51. Ctrl-C drops the call (cancellation with full cleanup),
//! drains the client with `close()` and exits 130.

use std::io::{IsTerminal as _, Read as _};

use clap::{Args, ValueEnum};
use polygateway::{ChatOptions, GatewayClient, JsonObject, LlmResponse, ResponseMode};
use serde_json::{Value, json};

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// Response mode of `pgw chat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Fidelity mode: `response.completion` holds the OpenAI message with its tool calls (05 R-50).
    Openai,
    /// Text mode: no `completion`; the verdict's text-mode rules apply (e.g. `MISSING_DONE=salvage`).
    Text,
}

/// Arguments of `pgw chat`.
#[derive(Debug, Clone, Args)]
pub struct ChatArgs {
    /// The user message; `-` or absent reads it from stdin.
    pub prompt: Option<String>,
    /// A system message sent before the user message.
    #[arg(long)]
    pub system: Option<String>,
    /// Stream from the upstream (default).
    #[arg(long, overrides_with = "no_stream")]
    pub stream: bool,
    /// Ask the upstream for one non-stream body.
    #[arg(long, overrides_with = "stream")]
    pub no_stream: bool,
    /// Response mode.
    #[arg(long, value_enum, default_value_t = ModeArg::Openai)]
    pub mode: ModeArg,
    /// Print exactly one JSON object on stdout (`docs/errors.md` for the error shape).
    #[arg(long)]
    pub json: bool,
    /// Configuration flags.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// The success JSON: `{"schema_version":1,"ok":true,"response":<LlmResponse>}`.
pub fn success_json(response: &LlmResponse) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "ok": true,
        "response": serde_json::to_value(response).unwrap_or(Value::Null),
    })
}

fn read_prompt(prompt: Option<&str>) -> Result<String, String> {
    match prompt {
        Some(p) if p != "-" => Ok(p.to_owned()),
        _ if std::io::stdin().is_terminal() => {
            Err("give the prompt as an argument, or pipe it on stdin".to_owned())
        }
        _ => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
            // An empty prompt is a usage mistake (e.g. `< /dev/null`), not a call to send.
            if text.trim().is_empty() {
                return Err("the prompt read from stdin is empty".to_owned());
            }
            Ok(text)
        }
    }
}

fn message(role: &str, content: &str) -> JsonObject {
    let mut m = JsonObject::new();
    m.insert("role".into(), Value::from(role));
    m.insert("content".into(), Value::from(content));
    m
}

/// Runs `pgw chat`; returns the exit code.
pub async fn run(args: ChatArgs) -> u8 {
    let scope = args.config.scope_or("LLM");
    let map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    let prompt = match read_prompt(args.prompt.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            out::stderr_line(&format!("pgw: {e}"));
            return exit::USAGE;
        }
    };
    let client = match GatewayClient::from_env_map(&scope, &map) {
        Ok(client) => client,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if let Err(e) = config::refuse_unknown_keys(&args.config, client.assembly_warnings()) {
        return config::report_config_error(&e, args.json);
    }
    config::print_warnings(client.assembly_warnings());
    let mut messages = Vec::new();
    if let Some(system) = &args.system {
        messages.push(message("system", system));
    }
    messages.push(message("user", &prompt));
    let mode = match args.mode {
        ModeArg::Openai => ResponseMode::OpenAi,
        ModeArg::Text => ResponseMode::Text,
    };
    let options = ChatOptions::new()
        .stream(!args.no_stream)
        .response_mode(mode);
    let outcome = tokio::select! {
        outcome = client.chat_outcome(messages, options) => outcome,
        signal = signals::interrupted() => {
            out::stderr_line(&format!("pgw: interrupted by {}; draining", signal.name()));
            client.close().await;
            if args.json {
                out::stdout_json(&signal.json());
            }
            return signal.exit_code();
        }
    };
    let report = outcome.error_report();
    let code = match &outcome.result {
        Ok(response) => {
            if args.json {
                out::stdout_json(&success_json(response));
            } else {
                print_response(response);
            }
            exit::OK
        }
        Err(error) => {
            let report = report.map(|r| r.to_json()).unwrap_or(Value::Null);
            if args.json {
                out::stdout_json(&json!({
                    "schema_version": SCHEMA_VERSION,
                    "ok": false,
                    "error": report,
                }));
            } else {
                out::stderr_line(&format!("pgw: {}: {error}", error.type_name()));
                if let Some(last) = report.get("last_failure").filter(|v| !v.is_null()) {
                    out::stderr_line(&format!("pgw: last failure: {}", describe_failure(last)));
                }
            }
            exit::for_error(error)
        }
    };
    client.close().await;
    code
}

/// One human line for an `ErrorReport` JSON (`last_failure`): `Type [HTTP n]: message`.
fn describe_failure(report: &Value) -> String {
    let kind = report["type"].as_str().unwrap_or("error");
    let status = report["http_status"]
        .as_u64()
        .map(|s| format!(" [HTTP {s}]"))
        .unwrap_or_default();
    let message = report["message"].as_str().unwrap_or("");
    format!("{kind}{status}: {message}")
}

fn print_response(response: &LlmResponse) {
    if !response.content.is_empty() {
        out::stdout_line(&response.content);
    }
    if let Some(completion) = &response.completion {
        for call in completion.tool_calls() {
            out::stdout_line(&format!("tool_call: {call}"));
        }
    }
}
