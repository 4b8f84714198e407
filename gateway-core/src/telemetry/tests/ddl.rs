//! Tests of the telemetry schema (95 §15, 80 §10.1): DDL column order, the backfill list, the
//! INSERT text, schema modes and the manual-mode warning.
//!
//! Separate: these read the SQL text only, no row is shaped.

use super::*;

fn ddl_column_order(sql: &str) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for line in sql.lines() {
        let line = line.trim();
        let name = if let Some(rest) = line.strip_prefix("ALTER TABLE llm_calls ADD COLUMN ") {
            rest.trim_start_matches("IF NOT EXISTS ")
                .split_whitespace()
                .next()
        } else if line.starts_with("CREATE")
            || line.starts_with("--")
            || line.starts_with(')')
            || line.is_empty()
        {
            None
        } else {
            line.split_whitespace().next()
        };
        if let Some(n) = name
            && !seen.iter().any(|s| s == n)
        {
            seen.push(n.to_owned());
        }
    }
    seen
}

#[test]
fn cf_373_t_43_t_49_ddl_first_appearance_is_physical_order() {
    let physical = physical_columns();
    assert_eq!(physical.len(), 40);
    assert_eq!(physical[18], "created_at");
    assert_eq!(&physical[..18], &TelemetryRow::COLUMNS[..18]);
    assert_eq!(&physical[19..], &TelemetryRow::COLUMNS[18..]);
    for backend in [SqlBackend::Sqlite, SqlBackend::Postgres] {
        assert_eq!(ddl_column_order(&telemetry_schema_sql(backend)), physical);
        assert_eq!(ddl_column_order(&create_table_sql(backend)), physical);
    }
    let pg = telemetry_schema_sql(SqlBackend::Postgres);
    assert!(pg.contains("meta JSONB NOT NULL DEFAULT '{}'::jsonb"));
    assert!(pg.contains("created_at TIMESTAMPTZ NOT NULL DEFAULT now()"));
    assert!(pg.contains("ALTER TABLE llm_calls ADD COLUMN IF NOT EXISTS stream_end TEXT;"));
    let lite = telemetry_schema_sql(SqlBackend::Sqlite);
    assert!(
        lite.contains("created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now'))")
    );
    assert!(lite.contains("ALTER TABLE llm_calls ADD COLUMN stream_end TEXT;"));
    assert!(!lite.contains("ADD COLUMN IF NOT EXISTS"));
}

#[test]
fn cf_374_t_44_backfill_list() {
    for backend in [SqlBackend::Sqlite, SqlBackend::Postgres] {
        let stmts: Vec<String> = BACKFILL_COLUMNS
            .iter()
            .map(|c| backfill_statement(backend, c))
            .collect();
        assert_eq!(
            stmts[0],
            "ALTER TABLE llm_calls ADD COLUMN cached_prompt_tokens INTEGER"
        );
        assert_eq!(
            stmts[20],
            "ALTER TABLE llm_calls ADD COLUMN stream_end TEXT"
        );
        assert!(stmts.iter().all(|s| !s.contains("IF NOT EXISTS")));
    }
    let names: Vec<&str> = BACKFILL_COLUMNS.iter().map(|c| c.name).collect();
    assert_eq!(names, TelemetryRow::COLUMNS[18..]);
}

#[test]
fn cf_375_t_45_insert_sql() {
    let all = insert_sql(SqlBackend::Sqlite, &TelemetryRow::COLUMNS);
    assert_eq!(all.matches('?').count(), 39);
    assert!(all.starts_with("INSERT OR IGNORE INTO llm_calls (call_id, parent_call_id,"));
    let pg = insert_sql(SqlBackend::Postgres, &TelemetryRow::COLUMNS);
    assert!(pg.ends_with("$39) ON CONFLICT DO NOTHING"));
    assert_eq!(
        insert_sql(SqlBackend::Postgres, &["call_id", "model"]),
        "INSERT INTO llm_calls (call_id, model) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    );
    // The pre-1.3.5 26-column INSERT is unchanged.
    assert_eq!(
        insert_sql(SqlBackend::Sqlite, &TelemetryRow::COLUMNS[..26]),
        "INSERT OR IGNORE INTO llm_calls (call_id, parent_call_id, session_id, model, provider, \
         source_name, messages, response, thinking, prompt_tokens, completion_tokens, usage_source, \
         latency_ms, ttft_ms, max_inter_token_ms, cache_hit, error, cost, cached_prompt_tokens, \
         model_reported, sampling, reasoning_tokens, tenant_id, meta, thinking_observation, \
         reasoning_effort) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    );
}

#[test]
fn t_46_schema_mode() {
    assert_eq!(
        SchemaMode::resolve(None, SqlBackend::Sqlite),
        SchemaMode::Auto
    );
    assert_eq!(
        SchemaMode::resolve(None, SqlBackend::Postgres),
        SchemaMode::Manual
    );
    assert_eq!(
        SchemaMode::resolve(Some(SchemaMode::Manual), SqlBackend::Sqlite),
        SchemaMode::Manual
    );
    assert_eq!(SchemaMode::parse("auto").unwrap(), SchemaMode::Auto);
    let e = SchemaMode::parse("AUTO").unwrap_err();
    assert_eq!(
        (e.code, e.origin.as_str()),
        ("telemetry.schema_mode", "PGW_TELEMETRY_SCHEMA_MODE")
    );
}

#[test]
fn t_47_manual_warning_text() {
    let w = manual_mode_warning(SqlBackend::Sqlite, &["scope", "stall_ms"]);
    assert!(w.contains("schema_mode=manual"));
    assert!(w.contains("the following dimensions will not be recorded: scope, stall_ms."));
    assert!(w.contains("\nALTER TABLE llm_calls ADD COLUMN scope TEXT;"));
    assert!(w.contains("\nALTER TABLE llm_calls ADD COLUMN stall_ms INTEGER;"));
}
