//! The pricing file (`PGW_PRICING_PATH`, 20 §8.4–§8.5; 80 T-31): loads and validates
//! `{"<model>": {"input_per_1m": x, "output_per_1m": y, "cached_input_per_1m": z?}}` into a
//! [`PricingTable`]. Loaded once at assembly; a bad file is a configuration error naming the key,
//! the file and the model, never a per-call failure.

use std::path::Path;

use gateway_ports::{ConfigError, ConfigWarning, ModelPrice, PricingTable};
use serde_json::{Map, Value};

/// The environment key naming the pricing file.
pub const PRICING_PATH_KEY: &str = "PGW_PRICING_PATH";

/// The stable error code of every invalid pricing file.
pub const PRICING_INVALID: &str = "pricing.invalid";

/// The warning code of an unknown member in a model's entry (chosen).
pub const PRICING_UNKNOWN_MEMBER: &str = "pricing.unknown_member";

const KNOWN_MEMBERS: [&str; 3] = ["input_per_1m", "output_per_1m", "cached_input_per_1m"];

/// Loads the pricing file at `path`, logging each warning once with `tracing`.
///
/// Errors: `ConfigError { code: "pricing.invalid", origin: "PGW_PRICING_PATH" }` for an
/// unreadable file, invalid JSON, a non-object, a missing required member or a negative /
/// non-finite / non-numeric price; the message names the file and, where there is one, the
/// model.
pub fn load_pricing(path: impl AsRef<Path>) -> Result<PricingTable, ConfigError> {
    let (table, warnings) = load_pricing_with_warnings(path)?;
    for w in &warnings {
        tracing::warn!(code = w.code, "{}", w.message);
    }
    Ok(table)
}

/// Largest pricing file read, in bytes (16 MiB); a larger file, a FIFO or a device is refused
/// (issue 22).
pub const MAX_PRICING_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// [`load_pricing`] returning the warnings (`pricing.unknown_member`) instead of logging them.
pub fn load_pricing_with_warnings(
    path: impl AsRef<Path>,
) -> Result<(PricingTable, Vec<ConfigWarning>), ConfigError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let bytes = gateway_ports::files::read_regular_file_capped(path, MAX_PRICING_FILE_BYTES)
        .map_err(|e| invalid(&file, None, &format!("the file {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| invalid(&file, None, "the file is not valid UTF-8"))?;
    parse_pricing(&text, &file)
}

/// Parses and validates pricing JSON. `file` names the source in messages.
/// An empty object is a valid, empty table.
pub fn parse_pricing(
    text: &str,
    file: &str,
) -> Result<(PricingTable, Vec<ConfigWarning>), ConfigError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| invalid(file, None, &format!("not valid JSON ({e})")))?;
    let Value::Object(models) = value else {
        return Err(invalid(
            file,
            None,
            "the top level must be a JSON object keyed by model",
        ));
    };
    let mut table = PricingTable::default();
    let mut warnings = Vec::new();
    for (model, entry) in &models {
        let Value::Object(entry) = entry else {
            return Err(invalid(
                file,
                Some(model),
                "the entry must be a JSON object",
            ));
        };
        let input_per_1m = price(file, model, entry, "input_per_1m")?
            .ok_or_else(|| invalid(file, Some(model), "missing required member input_per_1m"))?;
        let output_per_1m = price(file, model, entry, "output_per_1m")?
            .ok_or_else(|| invalid(file, Some(model), "missing required member output_per_1m"))?;
        let cached_input_per_1m = price(file, model, entry, "cached_input_per_1m")?;
        for key in entry
            .keys()
            .filter(|k| !KNOWN_MEMBERS.contains(&k.as_str()))
        {
            warnings.push(
                ConfigWarning::new(
                    PRICING_UNKNOWN_MEMBER,
                    format!("{PRICING_PATH_KEY} {file}: model {model:?} has unknown member {key:?} (ignored)"),
                ),
            );
        }
        table.prices.insert(
            model.clone(),
            ModelPrice {
                input_per_1m,
                output_per_1m,
                cached_input_per_1m,
            },
        );
    }
    Ok((table, warnings))
}

/// One price member: absent (or `null` for the optional one) → `None`; a finite number ≥ 0 →
/// `Some`; anything else is an error.
fn price(
    file: &str,
    model: &str,
    entry: &Map<String, Value>,
    member: &str,
) -> Result<Option<f64>, ConfigError> {
    match entry.get(member) {
        None => Ok(None),
        Some(Value::Null) if member == "cached_input_per_1m" => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(invalid(
                file,
                Some(model),
                &format!("{member} must be a finite number >= 0, got {n}"),
            )),
        },
        Some(other) => Err(invalid(
            file,
            Some(model),
            &format!("{member} must be a finite number >= 0, got {other}"),
        )),
    }
}

fn invalid(file: &str, model: Option<&str>, what: &str) -> ConfigError {
    let message = match model {
        Some(model) => format!("pricing file {file}: model {model:?}: {what}"),
        None => format!("pricing file {file}: {what}"),
    };
    ConfigError::new(PRICING_INVALID, PRICING_PATH_KEY, message)
}
