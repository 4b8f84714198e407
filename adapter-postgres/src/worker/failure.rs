//! What a failed statement or pool acquisition means for the recorder ([`Failure`]):
//! unavailable (degrade), cancelled by the server (drop the batch) or a rejected value (retry
//! row by row).
//!
//! Separate from the SQL steps: the classification of an error, apart from the statements that
//! hit it.

use deadpool_postgres::PoolError;

/// What a failed statement means for the recorder.
#[derive(Debug)]
pub(super) enum Failure {
    /// Cannot connect, authentication or permission refused, database or table missing:
    /// degrade.
    Availability(String),
    /// The server cancelled the statement (`statement_timeout`): drop the batch, state kept.
    Timeout(String),
    /// The server rejected a value: retry row by row, drop only the rejected rows.
    Row(String),
}

pub(super) fn classify(e: &tokio_postgres::Error) -> Failure {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        let text = format!("{} (SQLSTATE {code})", db.message());
        let availability = ["08", "28", "3D", "3F", "53", "57P", "0A"]
            .iter()
            .any(|class| code.starts_with(class))
            || code == "42P01"
            || code == "42501";
        return if code == "57014" {
            Failure::Timeout(text)
        } else if availability {
            Failure::Availability(text)
        } else {
            Failure::Row(text)
        };
    }
    let text = e.to_string();
    if text.starts_with("error serializing") {
        Failure::Row(text)
    } else {
        Failure::Availability(format!("cannot reach the Postgres server: {text}"))
    }
}

pub(super) fn pool_failure(e: &PoolError) -> Failure {
    match e {
        PoolError::Backend(e) => classify(e),
        PoolError::Timeout(_) => Failure::Timeout("timed out waiting for a connection".into()),
        other => Failure::Availability(format!("connection pool unavailable: {other}")),
    }
}
