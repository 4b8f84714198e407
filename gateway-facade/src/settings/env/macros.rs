//! The `set!` / `set_pgw!` macros: read one scope or process-wide key, parse it, assign it.
//!
//! A file of its own so `#[macro_use]` makes them visible to every stage-A file below it.

macro_rules! set {
    ($reader:expr, $field:literal, |$k:ident, $v:ident| $parse:expr => $target:expr) => {
        if let Some(($k, $v)) = $reader.scope($field) {
            let $k = $k.as_str();
            $target = $parse;
        }
    };
}

macro_rules! set_pgw {
    ($reader:expr, $field:literal, |$k:ident, $v:ident| $parse:expr => $target:expr) => {
        if let Some(($k, $v)) = $reader.process($field) {
            let $k = $k.as_str();
            $target = $parse;
        }
    };
}
