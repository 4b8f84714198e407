//! Unit tests of `pgw telemetry`: duration parsing and database resolution.

use super::*;

#[test]
fn t_61_durations_parse_with_units() {
    assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
    assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(5_400)));
    assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
    assert!(parse_duration("3y").is_err());
    assert!(parse_duration("d").is_err());
}

#[test]
fn t_61_dsn_or_path() {
    assert!(is_pg_dsn("postgresql+asyncpg://u@h/db"));
    assert!(is_pg_dsn("postgres://h/db"));
    assert!(!is_pg_dsn("./runs/2026-12-01.db"));
}
