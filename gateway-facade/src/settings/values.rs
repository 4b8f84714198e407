//! Value parsing by type for the environment path: one function per type, each
//! returning `config.parse` (A1) or `config.domain` (A2) with the key as origin.
//!
//! Parsing ("is it a number?") and the domain check ("is it a finite positive number?") are
//! separate steps that report the same origin. Messages never echo the value of a
//! secret key; they echo other values only to help find the typo.

use serde_json::{Map, Value};

use gateway_ports::ConfigError;

/// A1: the value does not parse as its type.
pub(crate) fn parse_error(key: &str, what: &str) -> ConfigError {
    ConfigError::new("config.parse", key, format!("{key} must be {what}"))
}

/// A2: the parsed value fails the key's domain.
pub(crate) fn domain_error(key: &str, what: &str) -> ConfigError {
    ConfigError::new("config.domain", key, format!("{key} must be {what}"))
}

/// `float` (seconds): Rust `f64::from_str` after trimming; underscores rejected.
pub(crate) fn float(key: &str, raw: &str) -> Result<f64, ConfigError> {
    raw.parse::<f64>()
        .map_err(|_| parse_error(key, "a number, e.g. 30 or 0.5"))
}

/// `float` with the domain "finite > 0".
pub(crate) fn positive_float(key: &str, raw: &str) -> Result<f64, ConfigError> {
    let v = float(key, raw)?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(domain_error(key, "a finite number > 0"))
    }
}

/// `int`: decimal digits with an optional sign; `3.0`, `x`, `true` rejected. The value
/// is then checked against `min` (A2) and converted into `T` (out of range → A1).
pub(crate) fn int<T: TryFrom<i128>>(key: &str, raw: &str, min: i128) -> Result<T, ConfigError> {
    let digits = raw.strip_prefix(['+', '-']).unwrap_or(raw);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(parse_error(key, "an integer, e.g. 10"));
    }
    let v: i128 = raw
        .parse()
        .map_err(|_| parse_error(key, "an integer in range"))?;
    if v < min {
        return Err(domain_error(key, &format!("an integer >= {min}")));
    }
    T::try_from(v).map_err(|_| parse_error(key, "an integer in range"))
}

/// `bool`: `true`/`false`/`1`/`0`/`yes`/`no`/`on`/`off`, ASCII case-insensitive (chosen).
pub(crate) fn boolean(key: &str, raw: &str) -> Result<bool, ConfigError> {
    match raw.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(parse_error(
            key,
            "a boolean (true/false, 1/0, yes/no, on/off)",
        )),
    }
}

/// `json`: a JSON object. The value is not echoed (it may hold secrets).
pub(crate) fn json_object(key: &str, raw: &str) -> Result<Map<String, Value>, ConfigError> {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(parse_error(key, "a JSON object")),
        Err(_) => Err(parse_error(key, "valid JSON (a JSON object)")),
    }
}

/// `choice`: one of `allowed` (wire spellings), ASCII case-insensitive (chosen); the
/// message lists the allowed words.
pub(crate) fn choice<T: Copy>(
    key: &str,
    raw: &str,
    from_wire: fn(&str) -> Option<T>,
    allowed: &[&str],
) -> Result<T, ConfigError> {
    from_wire(&raw.to_ascii_lowercase())
        .ok_or_else(|| parse_error(key, &format!("one of {}", allowed.join(", "))))
}
