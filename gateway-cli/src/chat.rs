//! `pgw chat`: one governed call from the environment or flags.
//!
//! Assembles the scope through `GatewayClient::from_env_map` over the CLI's environment map
//! (so errors name real keys), sends one call in fidelity mode (the response carries the
//! `completion` with its tool calls), prints the content — or with `--json` exactly one object —
//! and exits with the code of R-51. Ctrl-C drops the call (cancellation with full cleanup),
//! drains the client with `close()` and exits 130.

use std::io::{IsTerminal as _, Read as _};

use clap::{Args, ValueEnum};
use futures_util::StreamExt as _;
use polygateway::parse_effort;
use polygateway::{
    ChatOptions, ChatStream, ErrorReport, GatewayClient, JsonObject, LlmResponse, ResponseMode,
    StreamEvent, StructuredSpec,
};
use serde_json::{Value, json};

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// Response mode of `pgw chat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Fidelity mode: `response.completion` holds the OpenAI message with its tool calls.
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
    /// Use the response cache: the configured `PGW_CACHE_BACKEND`, or `memory` when it is
    /// `none` (an in-process cache only hits within one run; set `PGW_CACHE_BACKEND=redis` to
    /// share entries between runs). A hit is reported on stderr (`response.cache_hit` in JSON).
    #[arg(long, conflicts_with = "no_cache")]
    pub cache: bool,
    /// Neither read nor write the response cache for this call.
    #[arg(long)]
    pub no_cache: bool,
    /// Print the answer as it arrives: tokens on stdout (human mode), or one JSON event per
    /// line with `--json` (`{"event":"delta",…}` lines, then one `"done"` or `"error"` line).
    /// Retries and hedging stay invisible until the first token; after it a failure ends the
    /// output with an error that says `committed: true`.
    #[arg(long)]
    pub stream_out: bool,
    /// The cache namespace of this call (overrides `PGW_CACHE_NAMESPACE`).
    #[arg(long, value_name = "NAME")]
    pub cache_namespace: Option<String>,
    /// Ask for a JSON answer validated against the JSON Schema in FILE (draft 2020-12 or
    /// draft-07); a reply that does not parse or validate is re-asked up to
    /// PGW_STRUCTURED_MAX_RETRIES times (default 2). Implies --mode text.
    #[arg(long, value_name = "FILE", conflicts_with = "json_object")]
    pub schema: Option<std::path::PathBuf>,
    /// Ask for any JSON object (re-asked like --schema). Implies --mode text.
    #[arg(long)]
    pub json_object: bool,
    /// Reasoning effort for this call: none, auto, minimal, low, medium, high, xhigh or max.
    /// A level the model cannot use is refused unless the source sets
    /// {SCOPE}__{PROVIDER}__{N}__EFFORT_FALLBACK=nearest.
    #[arg(long, value_name = "LEVEL")]
    pub effort: Option<String>,
    /// Give up after this many seconds (retries and waits included); 0 = no limit from the
    /// command line. Default: the scope's CALL_DEADLINE_S when set, else 120.
    #[arg(long, value_name = "SECONDS")]
    pub deadline_s: Option<f64>,
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

/// The structured spec of `--schema FILE` / `--json-object`: the schema's name is the file
/// stem with characters outside `[A-Za-z0-9_-]` replaced by `_` (at most 64).
fn structured_spec(args: &ChatArgs) -> Result<Option<StructuredSpec>, String> {
    if args.json_object {
        return Ok(Some(StructuredSpec::Json));
    }
    let Some(path) = &args.schema else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--schema {}: cannot read the file: {e}", path.display()))?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|e| format!("--schema {}: not JSON: {e}", path.display()))?;
    let mut name: String = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        name.push_str("schema");
    }
    Ok(Some(StructuredSpec::Schema {
        name,
        schema,
        strict: true,
    }))
}

/// Runs `pgw chat`; returns the exit code.
pub async fn run(args: ChatArgs) -> u8 {
    let structured = match structured_spec(&args) {
        Ok(spec) => spec,
        Err(e) => {
            out::stderr_line(&format!("pgw: {e}"));
            return exit::USAGE;
        }
    };
    let effort = match args.effort.as_deref().map(|t| parse_effort(t, "--effort")) {
        None => None,
        Some(Ok(level)) => Some(level),
        Some(Err(e)) => {
            out::stderr_line(&format!("pgw: {e}"));
            return exit::USAGE;
        }
    };
    let scope = args.config.scope_or("LLM");
    let mut map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if args.cache
        && map
            .get("PGW_CACHE_BACKEND")
            .is_none_or(|b| b.trim().eq_ignore_ascii_case("none") || b.trim().is_empty())
    {
        map.insert("PGW_CACHE_BACKEND".to_owned(), "memory".to_owned());
    }
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
        _ if structured.is_some() => ResponseMode::Text,
        ModeArg::Openai => ResponseMode::OpenAi,
        ModeArg::Text => ResponseMode::Text,
    };
    let mut options = ChatOptions::new()
        .stream(!args.no_stream)
        .response_mode(mode);
    if args.no_cache {
        options = options.bypass_cache();
    }
    if let Some(namespace) = &args.cache_namespace {
        options = options.cache_namespace(namespace.clone());
    }
    if let Some(spec) = structured {
        options = options.structured(spec);
    }
    if let Some(level) = effort {
        options = options.reasoning_effort(level);
    }
    match call_deadline(args.deadline_s, client.plan().call_deadline.is_some()) {
        Ok(Some(deadline)) => options = options.call_deadline(deadline),
        Ok(None) => {}
        Err(e) => {
            out::stderr_line(&format!("pgw: {e}"));
            return exit::USAGE;
        }
    }
    if args.stream_out {
        let mut stream = client.chat_stream(messages, options);
        // `signals::interrupted()` installs its handlers as the `select!` starts, before the
        // stream is first polled: a signal arriving as the call starts is not missed.
        let code = tokio::select! {
            code = stream_out(&mut stream, args.json) => code,
            signal = signals::interrupted() => {
                let committed = stream.is_committed();
                // Dropping the stream cancels the call (its attempts are settled by close).
                drop(stream);
                out::stderr_line(&format!("pgw: interrupted by {}; draining", signal.name()));
                if args.json {
                    let mut event = signal.json();
                    if let Some(object) = event.as_object_mut() {
                        object.remove("ok");
                        object.insert("event".to_owned(), json!("error"));
                        object.insert("committed".to_owned(), json!(committed));
                    }
                    out::stdout_json(&event);
                } else if committed {
                    // End the partial answer's line.
                    out::stdout_line("");
                }
                client.close().await;
                return signal.exit_code();
            }
        };
        client.close().await;
        return code;
    }
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
                if response.cache_hit {
                    out::stderr_line("pgw: served from the response cache (no upstream call)");
                }
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
                if let Some(hint) = report.get("retry_after_s").and_then(Value::as_f64) {
                    out::stderr_line(&format!("pgw: retry after {hint:.3} s"));
                }
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

/// The default call deadline of `pgw chat`, in seconds: a one-shot command must not stay silent
/// for minutes behind a persistent 429.
pub const DEFAULT_DEADLINE_S_WHOLE: u64 = 120;

/// The call deadline `pgw chat` sets: `--deadline-s` when given (`0` = none from the command
/// line), else [`DEFAULT_DEADLINE_S_WHOLE`] unless the scope configures its own `CALL_DEADLINE_S`.
fn call_deadline(
    flag_s: Option<f64>,
    scope_has_deadline: bool,
) -> Result<Option<std::time::Duration>, String> {
    match flag_s {
        Some(0.0) => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => std::time::Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(|_| format!("--deadline-s {s} is too large")),
        Some(s) => Err(format!(
            "--deadline-s must be a number of seconds >= 0 (0 = no limit), got {s}"
        )),
        None if scope_has_deadline => Ok(None),
        None => Ok(Some(std::time::Duration::from_secs(
            DEFAULT_DEADLINE_S_WHOLE,
        ))),
    }
}

/// `pgw chat --stream-out`: prints each delta as it arrives (tokens, or NDJSON events with
/// `json`), then the final event; returns the exit code.
async fn stream_out(stream: &mut ChatStream, json: bool) -> u8 {
    let mut printed = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamEvent::Delta(delta)) => {
                // A frame that added no text, reasoning or tool-call fragment (the finish or
                // usage frame, kept for `pgw serve`'s raw chunks) is not an event to print.
                let nothing_new = delta.content.is_empty()
                    && delta.reasoning.is_empty()
                    && delta.tool_calls.is_empty();
                if json && !nothing_new {
                    let tools: Vec<Value> = delta
                        .tool_calls
                        .iter()
                        .map(|t| {
                            json!({"index": t.index, "id": t.id, "name": t.name,
                                   "arguments": t.arguments})
                        })
                        .collect();
                    out::stdout_json(&json!({
                        "schema_version": SCHEMA_VERSION,
                        "event": "delta",
                        "content": delta.content,
                        "reasoning": delta.reasoning,
                        "tool_calls": tools,
                    }));
                } else if !delta.content.is_empty() {
                    printed = true;
                    out::stdout_text(&delta.content);
                }
            }
            Ok(StreamEvent::Done(response)) => {
                if json {
                    out::stdout_json(&json!({
                        "schema_version": SCHEMA_VERSION,
                        "event": "done",
                        "response": serde_json::to_value(&*response).unwrap_or(Value::Null),
                    }));
                } else {
                    if printed {
                        out::stdout_line("");
                    }
                    if response.cache_hit {
                        out::stderr_line("pgw: served from the response cache (no upstream call)");
                    }
                    if let Some(completion) = &response.completion {
                        for call in completion.tool_calls() {
                            out::stdout_line(&format!("tool_call: {call}"));
                        }
                    }
                }
                return exit::OK;
            }
            Ok(_) => {}
            Err(error) => {
                let report = ErrorReport::from(&error).to_json();
                if json {
                    out::stdout_json(&json!({
                        "schema_version": SCHEMA_VERSION,
                        "event": "error",
                        "committed": error.is_committed(),
                        "error": report,
                    }));
                } else {
                    if printed {
                        out::stdout_line("");
                    }
                    let note = if error.is_committed() {
                        " (after part of the answer was printed; not retried)"
                    } else {
                        ""
                    };
                    out::stderr_line(&format!("pgw: {}{note}: {error}", error.type_name()));
                }
                return exit::for_error(&error);
            }
        }
    }
    exit::OK
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
    if let Some(value) = &response.structured_data {
        out::stdout_line(&value.to_string());
        return;
    }
    if !response.content.is_empty() {
        out::stdout_line(&response.content);
    }
    if let Some(completion) = &response.completion {
        for call in completion.tool_calls() {
            out::stdout_line(&format!("tool_call: {call}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_call_deadline_is_120_s_unless_the_scope_sets_one() {
        let d = |s: f64| std::time::Duration::try_from_secs_f64(s).ok();
        assert_eq!(call_deadline(None, false), Ok(d(120.0)));
        assert_eq!(call_deadline(None, true), Ok(None));
        assert_eq!(call_deadline(Some(0.0), false), Ok(None));
        assert_eq!(call_deadline(Some(5.5), true), Ok(d(5.5)));
        assert!(call_deadline(Some(-1.0), false).is_err());
        assert!(call_deadline(Some(f64::NAN), false).is_err());
    }
}
