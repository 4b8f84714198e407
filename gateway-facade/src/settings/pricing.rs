//! The pricing file: a JSON object keyed by configured model name, each value holding
//! `input_per_1m`, `output_per_1m` and optionally `cached_input_per_1m` (finite ≥ 0).
//!
//! Loaded and validated at assembly (stage C6); an invalid file is `pricing.invalid` naming the
//! file and the model, unknown members are the warning `pricing.unknown_member` (chosen).

use std::collections::BTreeMap;
use std::path::Path;

use gateway_ports::config::{ModelPrice, PricingTable};
use gateway_ports::{ConfigError, ConfigWarning};
use serde_json::Value;

const MEMBERS: [&str; 3] = ["input_per_1m", "output_per_1m", "cached_input_per_1m"];

/// Largest pricing file read, in bytes: 16 MiB = 16 777 216 (a table of every public model is a
/// few KiB). A larger file, or a FIFO or device, is a `pricing.invalid` error (issue 22).
pub const MAX_PRICING_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Reads and validates the pricing file at `path`; `origin` is the key or field that named it.
pub fn load_pricing(
    path: &Path,
    origin: &str,
) -> Result<(PricingTable, Vec<ConfigWarning>), ConfigError> {
    let file = path.display();
    let invalid = |detail: String| {
        ConfigError::new(
            "pricing.invalid",
            origin,
            format!("pricing file {file}: {detail}"),
        )
    };
    let bytes = gateway_ports::files::read_regular_file_capped(path, MAX_PRICING_FILE_BYTES)
        .map_err(|e| invalid(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| invalid("is not valid UTF-8".into()))?;
    let root: Value =
        serde_json::from_str(&text).map_err(|e| invalid(format!("invalid JSON ({e})")))?;
    let Value::Object(models) = root else {
        return Err(invalid("the top level must be a JSON object".into()));
    };
    let mut prices = BTreeMap::new();
    let mut warnings = Vec::new();
    for (model, entry) in models {
        let Value::Object(members) = entry else {
            return Err(invalid(format!(
                "model `{model}`: the price must be a JSON object"
            )));
        };
        let price_of = |member: &str| -> Result<Option<f64>, ConfigError> {
            match members.get(member) {
                None => Ok(None),
                Some(v) => match v.as_f64() {
                    Some(p) if p.is_finite() && p >= 0.0 => Ok(Some(p)),
                    _ => Err(invalid(format!(
                        "model `{model}`: `{member}` must be a finite number >= 0"
                    ))),
                },
            }
        };
        let required = |member: &str| -> Result<f64, ConfigError> {
            price_of(member)?
                .ok_or_else(|| invalid(format!("model `{model}`: `{member}` is required")))
        };
        let price = ModelPrice {
            input_per_1m: required("input_per_1m")?,
            output_per_1m: required("output_per_1m")?,
            cached_input_per_1m: price_of("cached_input_per_1m")?,
        };
        for member in members.keys().filter(|m| !MEMBERS.contains(&m.as_str())) {
            warnings.push(ConfigWarning::new(
                "pricing.unknown_member",
                format!("pricing file {file}: model `{model}` has the unknown member `{member}` (ignored)"),
            ));
        }
        prices.insert(model, price);
    }
    Ok((PricingTable { prices }, warnings))
}
