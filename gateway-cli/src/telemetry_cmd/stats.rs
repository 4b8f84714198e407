//! `pgw telemetry stats`: one window's call, attempt, error and cost figures, from Postgres or
//! SQLite.
//!
//! Separate from retention: read-only queries.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use adapter_postgres::ParsedDsn;
use serde_json::{Value, json};

use super::{CONNECT_TIMEOUT, Db, DbArg, SQLITE_CUTOFF, open_sqlite, resolve_db};

/// The stats of one window as JSON.
pub(super) async fn stats(db: &DbArg, since: Duration) -> Result<Value, String> {
    match resolve_db(db.db.as_deref())? {
        Db::Postgres(dsn) => pg_stats(&dsn, since).await,
        Db::Sqlite(path) => sqlite_stats(&path, since),
    }
}

async fn pg_stats(dsn: &ParsedDsn, since: Duration) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let secs = since.as_secs_f64();
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    let window = "created_at >= now() - make_interval(secs => $1)";
    let head = client
        .query_one(
            &format!(
                "SELECT count(DISTINCT COALESCE(logical_call_id, call_id))::int8, \
                 count(*) FILTER (WHERE event_kind = 'terminal_failure')::int8, count(*)::int8, \
                 percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ms) FILTER \
                   (WHERE event_kind = 'attempt' AND error IS NULL)::int8, \
                 percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) FILTER \
                   (WHERE event_kind = 'attempt' AND error IS NULL)::int8 \
                 FROM llm_calls WHERE {window}"
            ),
            &[&secs],
        )
        .await
        .map_err(pg)?;
    let grouped = |sql: String| {
        let client = &client;
        async move {
            client.query(&sql, &[&secs]).await.map_err(pg).map(|rows| {
                rows.iter()
                    .map(|r| {
                        (
                            r.get::<_, Option<String>>(0).unwrap_or_else(|| "-".into()),
                            serde_json::from_str(&r.get::<_, String>(1)).unwrap_or(Value::Null),
                        )
                    })
                    .collect::<BTreeMap<String, Value>>()
            })
        }
    };
    let failed_by_type = grouped(format!(
        "SELECT COALESCE(error_type, error), to_jsonb(count(*))::text FROM llm_calls WHERE {window} AND \
         event_kind = 'terminal_failure' GROUP BY 1"
    ))
    .await?;
    let attempt_errors = grouped(format!(
        "SELECT COALESCE(error_type, error), to_jsonb(count(*))::text FROM llm_calls WHERE {window} AND \
         event_kind = 'attempt' AND error IS NOT NULL GROUP BY 1"
    ))
    .await?;
    let cost = grouped(format!(
        "SELECT source_name, to_jsonb(sum(cost))::text FROM llm_calls WHERE {window} AND \
         cost IS NOT NULL GROUP BY 1"
    ))
    .await?;
    Ok(json!({
        "backend": "postgres",
        "database": dsn.redacted(),
        "window_s": since.as_secs(),
        "rows": head.get::<_, i64>(2),
        "calls": head.get::<_, i64>(0),
        "failed_calls": head.get::<_, i64>(1),
        "failed_calls_by_error_type": failed_by_type,
        "failed_attempts_by_error_type": attempt_errors,
        "latency_ms": {
            "p50": head.get::<_, Option<i64>>(3),
            "p99": head.get::<_, Option<i64>>(4),
        },
        "cost_by_source": cost,
    }))
}
fn sqlite_stats(path: &Path, since: Duration) -> Result<Value, String> {
    let conn = open_sqlite(path, false)?;
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let q = |e: rusqlite::Error| format!("query failed: {e}");
    let window = format!("created_at >= {SQLITE_CUTOFF}");
    let (calls, failed, rows): (i64, i64, i64) = conn
        .query_row(
            &format!(
                "SELECT count(DISTINCT COALESCE(logical_call_id, call_id)), \
                 count(*) FILTER (WHERE event_kind = 'terminal_failure'), count(*) \
                 FROM llm_calls WHERE {window}"
            ),
            [secs],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(q)?;
    let grouped = |sql: String| -> Result<BTreeMap<String, Value>, String> {
        let mut stmt = conn.prepare(&sql).map_err(q)?;
        let rows = stmt
            .query_map([secs], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_else(|| "-".into()),
                    r.get::<_, f64>(1)?,
                ))
            })
            .map_err(q)?;
        let mut out = BTreeMap::new();
        for row in rows {
            let (k, v) = row.map_err(q)?;
            let value = if v.fract() == 0.0 && v.abs() < 9e15 {
                json!(v as i64)
            } else {
                json!(v)
            };
            out.insert(k, value);
        }
        Ok(out)
    };
    let failed_by_type = grouped(format!(
        "SELECT COALESCE(error_type, error), count(*) FROM llm_calls WHERE {window} AND \
         event_kind = 'terminal_failure' GROUP BY 1"
    ))?;
    let attempt_errors = grouped(format!(
        "SELECT COALESCE(error_type, error), count(*) FROM llm_calls WHERE {window} AND \
         event_kind = 'attempt' AND error IS NOT NULL GROUP BY 1"
    ))?;
    let cost = grouped(format!(
        "SELECT source_name, sum(cost) FROM llm_calls WHERE {window} AND cost IS NOT NULL \
         GROUP BY 1"
    ))?;
    // Nearest-rank percentiles, as Postgres's percentile_disc.
    let ok = format!("{window} AND event_kind = 'attempt' AND error IS NULL");
    let n: i64 = conn
        .query_row(
            &format!("SELECT count(*) FROM llm_calls WHERE {ok}"),
            [secs],
            |r| r.get(0),
        )
        .map_err(q)?;
    let at = |p: f64| -> Result<Option<i64>, String> {
        if n == 0 {
            return Ok(None);
        }
        let rank = ((p * n as f64).ceil() as i64).clamp(1, n);
        conn.query_row(
            &format!(
                "SELECT latency_ms FROM llm_calls WHERE {ok} ORDER BY latency_ms LIMIT 1 OFFSET ?2"
            ),
            rusqlite::params![secs, rank - 1],
            |r| r.get(0),
        )
        .map(Some)
        .map_err(q)
    };
    Ok(json!({
        "backend": "sqlite",
        "database": path.display().to_string(),
        "window_s": since.as_secs(),
        "rows": rows,
        "calls": calls,
        "failed_calls": failed,
        "failed_calls_by_error_type": failed_by_type,
        "failed_attempts_by_error_type": attempt_errors,
        "latency_ms": { "p50": at(0.5)?, "p99": at(0.99)? },
        "cost_by_source": cost,
    }))
}
