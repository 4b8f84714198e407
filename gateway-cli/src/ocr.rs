//! `pgw ocr FILE [--layout] [--json]`: one governed OCR call on an image or PDF.
//!
//! Assembles the OCR scope (default `OCR`, sources `OCR__{PROVIDER}__{N}__BASE_URL`, or the
//! flag source `--base-url`) through `OcrClient::from_env_map`. Without `--layout` it prints the
//! recognised text on stdout; with `--layout` a summary (elements, pages and their sizes, the
//! element kinds) on stderr and the markdown on stdout. `--json` prints exactly one object:
//! `{"schema_version":1,"ok":true,"response":<OcrTextResult|OcrLayoutResult>}` or the error
//! report. Exit codes as `pgw chat`. The file is read whole, at most 64 MiB.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::PathBuf;

use clap::Args;
use polygateway::{ErrorReport, GatewayError, OcrClient, OcrLayoutResult, OcrRequest};
use serde_json::{Value, json};

use crate::config::{self, ConfigArgs, SCHEMA_VERSION};
use crate::exit;
use crate::out;
use crate::signals;

/// Largest input file read: 64 MiB.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Arguments of `pgw ocr`.
#[derive(Debug, Clone, Args)]
pub struct OcrArgs {
    /// The image (PNG, JPEG) or PDF to recognise.
    pub file: PathBuf,
    /// Parse the layout (elements, page sizes, markdown) instead of plain text.
    #[arg(long)]
    pub layout: bool,
    /// Print exactly one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Configuration flags.
    #[command(flatten)]
    pub config: ConfigArgs,
}

fn read_file(path: &PathBuf) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes",
            path.display()
        ));
    }
    if bytes.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(bytes)
}

/// The one-paragraph layout summary printed on stderr.
pub fn layout_summary(r: &OcrLayoutResult) -> String {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &r.elements {
        *kinds.entry(e.kind.as_str()).or_default() += 1;
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k}={n}")).collect();
    let pages: Vec<String> = r
        .page_sizes
        .iter()
        .map(|p| format!("{}x{}", p.width(), p.height()))
        .collect();
    format!(
        "pgw: layout from {}: {} elements ({}), {} pages [{}], {} markdown chars",
        r.source_name,
        r.elements.len(),
        kinds.join(", "),
        r.page_sizes.len(),
        pages.join(", "),
        r.markdown.chars().count()
    )
}

fn error_json(error: &GatewayError) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "ok": false,
        "error": ErrorReport::from(error).to_json(),
    })
}

/// Runs `pgw ocr`; returns the exit code.
pub async fn run(args: OcrArgs) -> u8 {
    let scope = args.config.scope_or("OCR");
    let image = match read_file(&args.file) {
        Ok(bytes) => bytes,
        Err(why) => {
            let error = GatewayError::invalid_argument("pgw ocr FILE", why);
            if args.json {
                out::stdout_json(&error_json(&error));
            } else {
                out::stderr_line(&format!("pgw: {error}"));
            }
            return exit::for_error(&error);
        }
    };
    let map = match args.config.env_map(&scope) {
        Ok(map) => map,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    let client = match OcrClient::from_env_map(&scope, &map) {
        Ok(client) => client,
        Err(e) => return config::report_config_error(&e, args.json),
    };
    if let Err(e) = config::refuse_unknown_keys(&args.config, client.assembly_warnings()) {
        return config::report_config_error(&e, args.json);
    }
    config::print_warnings(client.assembly_warnings());
    let request = OcrRequest::new(image);
    let call = async {
        if args.layout {
            client.parse_layout(request).await.map(|r| {
                let value = serde_json::to_value(&r).unwrap_or(Value::Null);
                (value, Some(r))
            })
        } else {
            client.recognize_text(request).await.map(|r| {
                let value = serde_json::to_value(&r).unwrap_or(Value::Null);
                (value, None::<OcrLayoutResult>)
            })
        }
    };
    let result = tokio::select! {
        result = call => result,
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
        Ok((value, layout)) => {
            if args.json {
                out::stdout_json(&json!({
                    "schema_version": SCHEMA_VERSION,
                    "ok": true,
                    "response": value,
                }));
            } else if let Some(r) = layout {
                out::stderr_line(&layout_summary(r));
                out::stdout_line(&r.markdown);
            } else {
                let text = value["text"].as_str().unwrap_or_default();
                out::stderr_line(&format!(
                    "pgw: text from {} ({} chars)",
                    value["source_name"].as_str().unwrap_or_default(),
                    text.chars().count()
                ));
                out::stdout_line(text);
            }
            exit::OK
        }
        Err(error) => {
            if args.json {
                out::stdout_json(&error_json(error));
            } else {
                out::stderr_line(&format!("pgw: {}: {error}", error.type_name()));
            }
            exit::for_error(error)
        }
    };
    client.close().await;
    code
}

/// The validated plan of an OCR scope for `pgw doctor --kind ocr`.
pub fn doctor_plan(
    scope: &str,
    map: &polygateway::EnvMap,
) -> Result<polygateway::ClientPlan, polygateway::ConfigError> {
    let settings = polygateway::OcrSettings::from_env_map(scope, map)?;
    polygateway::ocr_plan_from_validated(&settings)
}
