//! `pgw telemetry retention`: deleting old rows (Postgres, SQLite), dropping old partitions and
//! rotating a directory of files, each with a dry run.
//!
//! Separate from stats: the only code of the command that writes or deletes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use adapter_postgres::ParsedDsn;
use serde_json::{Value, json};

use crate::out;

use super::{CONNECT_TIMEOUT, Db, RetentionArgs, SQLITE_CUTOFF, open_sqlite, resolve_db};

pub(super) async fn retention(r: &RetentionArgs) -> Result<Value, String> {
    if let Some(dir) = &r.rotate_dir {
        let days = r
            .keep_days
            .ok_or("--rotate-dir needs --keep-days N (files older than N days are deleted)")?;
        return rotate_dir(dir, days, r.dry_run);
    }
    let older_than = r.older_than.ok_or(
        "retention needs --older-than DURATION (or, for SQLite, --rotate-dir DIR --keep-days N)",
    )?;
    match resolve_db(r.db.db.as_deref())? {
        Db::Postgres(dsn) if r.drop_partitions => pg_drop_partitions(&dsn, older_than, r.dry_run).await,
        Db::Postgres(dsn) => pg_delete_rows(&dsn, older_than, r.batch, r.dry_run).await,
        Db::Sqlite(_) if r.drop_partitions => {
            Err("--drop-partitions is for Postgres; SQLite rotates files: --rotate-dir DIR --keep-days N".into())
        }
        Db::Sqlite(path) => sqlite_delete_rows(&path, older_than, r.batch, r.dry_run, r.force),
    }
}

async fn pg_delete_rows(
    dsn: &ParsedDsn,
    older_than: Duration,
    batch: u32,
    dry_run: bool,
) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    let cutoff: std::time::SystemTime = client
        .query_one(
            "SELECT now() - make_interval(secs => $1)",
            &[&older_than.as_secs_f64()],
        )
        .await
        .map_err(pg)?
        .get(0);
    if dry_run {
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM llm_calls WHERE created_at < $1",
                &[&cutoff],
            )
            .await
            .map_err(pg)?
            .get(0);
        return Ok(
            json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": true,
            "older_than_s": older_than.as_secs(), "rows": n}),
        );
    }
    let mut deleted: u64 = 0;
    let limit = i64::from(batch);
    loop {
        // (tableoid, ctid) is unique across partitions; one short transaction per batch.
        let n = client
            .execute(
                "DELETE FROM llm_calls WHERE (tableoid, ctid) IN (SELECT tableoid, ctid FROM \
                 llm_calls WHERE created_at < $1 LIMIT $2)",
                &[&cutoff, &limit],
            )
            .await
            .map_err(pg)?;
        deleted += n;
        if n == 0 {
            break;
        }
    }
    Ok(
        json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": false,
        "older_than_s": older_than.as_secs(), "rows_deleted": deleted}),
    )
}

async fn pg_drop_partitions(
    dsn: &ParsedDsn,
    older_than: Duration,
    dry_run: bool,
) -> Result<Value, String> {
    let client = dsn.connect(CONNECT_TIMEOUT).await.map_err(|e| e.0)?;
    let pg = |e: tokio_postgres::Error| format!("query failed: {e}");
    // Partitions of llm_calls (in the current schema) whose upper bound is at or before the
    // cutoff: every row in them is older. DEFAULT and MAXVALUE partitions never qualify.
    let rows = client
        .query(
            "SELECT format('%I.%I', n.nspname, c.relname) FROM pg_inherits i \
             JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE i.inhparent = to_regclass('llm_calls') \
             AND substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \\(''([^'']+)''\\)') \
                 IS NOT NULL \
             AND substring(pg_get_expr(c.relpartbound, c.oid) from 'TO \\(''([^'']+)''\\)')::timestamptz \
                 <= now() - make_interval(secs => $1) ORDER BY 1",
            &[&older_than.as_secs_f64()],
        )
        .await
        .map_err(pg)?;
    let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    if !dry_run {
        for name in &names {
            client
                .batch_execute(&format!(
                    "ALTER TABLE llm_calls DETACH PARTITION {name}; DROP TABLE {name}"
                ))
                .await
                .map_err(pg)?;
        }
    }
    Ok(
        json!({"backend": "postgres", "database": dsn.redacted(), "dry_run": dry_run,
        "older_than_s": older_than.as_secs(),
        "partitions_dropped": if dry_run { Value::Null } else { json!(names) },
        "partitions": names}),
    )
}

fn sqlite_delete_rows(
    path: &Path,
    older_than: Duration,
    batch: u32,
    dry_run: bool,
    force: bool,
) -> Result<Value, String> {
    let secs = i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX);
    let q = |e: rusqlite::Error| format!("query failed: {e}");
    if dry_run {
        let conn = open_sqlite(path, false)?;
        let n: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM llm_calls WHERE created_at < {SQLITE_CUTOFF}"),
                [secs],
                |r| r.get(0),
            )
            .map_err(q)?;
        return Ok(
            json!({"backend": "sqlite", "database": path.display().to_string(),
            "dry_run": true, "older_than_s": older_than.as_secs(), "rows": n}),
        );
    }
    if !force {
        return Err(
            "deleting rows from one SQLite file is slow and does not shrink it until \
                    VACUUM (which rewrites the whole file); rotate files per day instead \
                    (--rotate-dir DIR --keep-days N), or pass --force"
                .into(),
        );
    }
    out::stderr_line(
        "pgw telemetry: warning: the file keeps its size until VACUUM, which rewrites the whole \
         database and needs as much free disk space again; prefer rotating files per day",
    );
    let conn = open_sqlite(path, true)?;
    let _ = conn.busy_timeout(Duration::from_secs(5));
    let mut deleted: u64 = 0;
    loop {
        let n = conn
            .execute(
                &format!(
                    "DELETE FROM llm_calls WHERE rowid IN (SELECT rowid FROM llm_calls WHERE \
                     created_at < {SQLITE_CUTOFF} LIMIT ?2)"
                ),
                rusqlite::params![secs, i64::from(batch)],
            )
            .map_err(q)?;
        deleted += n as u64;
        if n == 0 {
            break;
        }
    }
    Ok(
        json!({"backend": "sqlite", "database": path.display().to_string(), "dry_run": false,
        "older_than_s": older_than.as_secs(), "rows_deleted": deleted}),
    )
}

/// Deletes `*.db` files (and their `-wal`/`-shm` companions) in `dir` last modified more than
/// `days` days ago.
pub(super) fn rotate_dir(dir: &Path, days: u32, dry_run: bool) -> Result<Value, String> {
    let keep = Duration::from_secs(u64::from(days) * 86_400);
    let now = std::time::SystemTime::now();
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut old = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("db") {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).ok();
        let age = modified.and_then(|m| now.duration_since(m).ok());
        if age.is_some_and(|a| a > keep) {
            old.push(path);
        }
    }
    old.sort();
    if !dry_run {
        for path in &old {
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
            for suffix in ["-wal", "-shm"] {
                let mut side = path.clone().into_os_string();
                side.push(suffix);
                let _ = std::fs::remove_file(PathBuf::from(side));
            }
        }
    }
    let names: Vec<String> = old.iter().map(|p| p.display().to_string()).collect();
    Ok(
        json!({"backend": "sqlite", "rotate_dir": dir.display().to_string(), "dry_run": dry_run,
        "keep_days": days, "files": names}),
    )
}
