//! Exit codes of `pgw`, in one place, documented in `docs/errors.md`.
//!
//! Owns the mapping from an outcome to the process status: a call error maps through its stable
//! [`GatewayError::type_name`], a configuration error is 3, a usage error (clap) 2, anything the
//! CLI itself could not do (an unreadable script, a failed runtime) 1, an interrupt 130, and
//! `pgw doctor`'s unreachable or refusing source 13.

use gateway_ports::GatewayError;

/// Success.
pub const OK: u8 = 0;
/// An internal error of the CLI (not a gateway outcome).
pub const INTERNAL: u8 = 1;
/// A usage error (clap's own status).
pub const USAGE: u8 = 2;
/// A `ConfigError`.
pub const CONFIG: u8 = 3;
/// `pgw doctor`: a source unreachable or refused.
pub const DOCTOR_SOURCE: u8 = 13;
/// `pgw doctor`: every source answered, but at least one does not serve its model (its
/// `/models` lists other models, or the probe said the model is missing; README D36).
pub const DOCTOR_MODEL_MISSING: u8 = 14;
/// Ctrl-C (SIGINT): the call was dropped and the client drained with `close()`. SIGTERM and
/// SIGHUP do the same and exit 143 and 129 (`signals::Interrupt::exit_code`).
pub const INTERRUPTED: u8 = 130;

/// The exit code of a call error by its stable type name. `TransientError` and
/// `SourceDeadError` reach a caller only as the cause of a stream that broke after its first
/// token (`GatewayError::Committed` reports its cause's type name): 1.
pub fn for_type_name(type_name: &str) -> u8 {
    match type_name {
        "ConfigError" => CONFIG,
        "InvalidArgument" => 4,
        "RequestRejectedError" => 5,
        "ResultInvalidError" => 6,
        "AllSourcesExhausted" => 7,
        "CircuitOpenError" => 8,
        "GovernanceBackendError" => 9,
        "SourceNotConfiguredError" => 10,
        "CallDeadlineExceeded" => 11,
        "ClientClosed" => 12,
        _ => INTERNAL,
    }
}

/// The exit code of a call error.
pub fn for_error(error: &GatewayError) -> u8 {
    for_type_name(error.type_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_51_every_public_error_type_has_its_code() {
        let table = [
            ("ConfigError", 3),
            ("InvalidArgument", 4),
            ("RequestRejectedError", 5),
            ("ResultInvalidError", 6),
            ("AllSourcesExhausted", 7),
            ("CircuitOpenError", 8),
            ("GovernanceBackendError", 9),
            ("SourceNotConfiguredError", 10),
            ("CallDeadlineExceeded", 11),
            ("ClientClosed", 12),
            ("TransientError", 1),
            ("SourceDeadError", 1),
        ];
        for (name, code) in table {
            assert_eq!(for_type_name(name), code, "{name}");
        }
        assert_eq!(for_error(&GatewayError::ClientClosed), 12);
        assert_eq!(
            for_error(&GatewayError::call_deadline_exceeded("llm", 1.0)),
            11
        );
    }
}
