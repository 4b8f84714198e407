//! `pgw embed` (05 R-50 by analogy): one governed embedding call over the given texts.
//!
//! Assembles the embedding scope (default `EMBED`) through `EmbeddingClient::from_env_map`;
//! `--json` prints `{"schema_version":1,"ok":true,"response":<EmbeddingResponse>}` or the error
//! report; exit codes as `pgw chat`.

use clap::Args;
use polygateway::{EmbedRequest, EmbeddingClient, EmbeddingResponse, ErrorReport};
use serde_json::{Value, json};

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// Arguments of `pgw embed`.
#[derive(Debug, Clone, Args)]
pub struct EmbedArgs {
    /// The texts to embed (one vector each).
    #[arg(required = true)]
    pub texts: Vec<String>,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Configuration flags.
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// The success JSON of `pgw embed --json`.
pub fn success_json(response: &EmbeddingResponse) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "ok": true,
        "response": serde_json::to_value(response).unwrap_or(Value::Null),
    })
}

/// The success JSON text of `pgw embed --json`, serialised straight from the response so that
/// every vector value is printed as the f32 the server sent (`0.1`, never the widened
/// `0.10000000149011612` a `serde_json::Value` would hold).
pub fn success_json_text(response: &EmbeddingResponse) -> String {
    #[derive(serde::Serialize)]
    struct Success<'a> {
        schema_version: u32,
        ok: bool,
        response: &'a EmbeddingResponse,
    }
    serde_json::to_string(&Success {
        schema_version: SCHEMA_VERSION,
        ok: true,
        response,
    })
    .unwrap_or_else(|_| success_json(response).to_string())
}

/// One vector as a JSON array of f32 values in their shortest form (`[0.1,-0.25]`).
fn vector_line(vector: &[f32]) -> String {
    serde_json::to_string(vector).unwrap_or_default()
}

/// Runs `pgw embed`; returns the exit code.
pub async fn run(args: EmbedArgs) -> u8 {
    let scope = args.config.scope_or("EMBED");
    let map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    let client = match EmbeddingClient::from_env_map(&scope, &map) {
        Ok(client) => client,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if let Err(e) = config::refuse_unknown_keys(&args.config, client.assembly_warnings()) {
        return config::report_config_error(&e, args.json);
    }
    config::print_warnings(client.assembly_warnings());
    let request = EmbedRequest::new(args.texts.clone());
    let result = tokio::select! {
        result = client.embed(request) => result,
        signal = signals::interrupted() => {
            out::stderr_line(&format!("pgw: interrupted by {}; draining", signal.name()));
            client.close().await;
            if args.json {
                out::stdout_json(&signal.json());
            }
            return signal.exit_code();
        }
    };
    let code = match &result {
        Ok(response) => {
            if args.json {
                out::stdout_line(&success_json_text(response));
            } else {
                out::stderr_line(&format!(
                    "pgw: {} vectors of dimension {} from {}",
                    response.vectors.len(),
                    response.dim,
                    response.source_name
                ));
                for vector in &response.vectors {
                    out::stdout_line(&vector_line(vector));
                }
            }
            exit::OK
        }
        Err(error) => {
            if args.json {
                out::stdout_json(&json!({
                    "schema_version": SCHEMA_VERSION,
                    "ok": false,
                    "error": ErrorReport::from(error).to_json(),
                }));
            } else {
                out::stderr_line(&format!("pgw: {}: {error}", error.type_name()));
            }
            exit::for_error(error)
        }
    };
    client.close().await;
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_print_as_the_f32_sent() {
        assert_eq!(vector_line(&[0.1, -0.25, 1.0]), "[0.1,-0.25,1.0]");
    }
}
