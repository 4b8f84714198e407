//! The SQL steps of the worker: preparing the INSERT against the table that exists (schema
//! mode steps 1–5), writing one batch under its budget, and the row-by-row retry after a value
//! was rejected.
//!
//! Separate from the worker's state machine: these are the database round trips only.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use deadpool_postgres::{Object, Pool};
use gateway_ports::TelemetryRow;
use tokio::time::Instant;

use crate::schema::{
    REQUIRED_COLUMNS, TABLE, backfill_statement, batch_insert_sql, column, create_table_sql,
    manual_mode_warning,
};
use crate::values::bind;
use crate::{SchemaMode, Shared};

use super::failure::{Failure, classify, pool_failure};
use super::{Plan, TABLE_MISSING};

pub(super) struct Prepared {
    pub(super) plan: Plan,
    pub(super) missing_columns: Vec<String>,
}

/// steps 1–5. `Err` = a secret-free degradation reason.
pub(super) async fn prepare(pool: &Pool, mode: SchemaMode) -> Result<Prepared, String> {
    let client = pool.get().await.map_err(|e| match pool_failure(&e) {
        Failure::Availability(r) | Failure::Timeout(r) | Failure::Row(r) => r,
    })?;
    let reason = |what: &str, e: &tokio_postgres::Error| match classify(e) {
        Failure::Availability(r) | Failure::Timeout(r) | Failure::Row(r) => format!("{what}: {r}"),
    };
    if mode == SchemaMode::Auto
        && let Err(e) = client.batch_execute(&create_table_sql()).await
    {
        // Two processes creating the table at once: the loser sees 42P07 or 23505.
        let raced = e
            .code()
            .is_some_and(|c| c.code() == "42P07" || c.code() == "23505");
        if !raced {
            return Err(reason("cannot create table llm_calls", &e));
        }
    }
    let existing: HashSet<String> = client
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&TABLE],
        )
        .await
        .map_err(|e| reason("cannot read the columns of llm_calls", &e))?
        .iter()
        .filter_map(|row| row.try_get::<_, String>(0).ok())
        .collect();
    if existing.is_empty() {
        return Err(TABLE_MISSING.to_owned());
    }
    let columns = &gateway_ports::TelemetryRow::COLUMNS;
    let lacking: Vec<&str> = columns[..REQUIRED_COLUMNS]
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    if !lacking.is_empty() {
        return Err(format!(
            "table llm_calls is incompatible: it lacks the required column(s) {}; see \
             telemetry_schema_sql",
            lacking.join(", ")
        ));
    }
    let missing: Vec<&str> = columns[REQUIRED_COLUMNS..]
        .iter()
        .copied()
        .filter(|c| !existing.contains(*c))
        .collect();
    let mut indexes: Vec<usize> = (0..columns.len()).collect();
    let mut missing_columns = Vec::new();
    match mode {
        SchemaMode::Auto => {
            let mut warned = false;
            for def in missing.iter().filter_map(|m| column(m)) {
                if let Err(e) = client.batch_execute(&backfill_statement(def)).await {
                    let exists = e.code().is_some_and(|c| c.code() == "42701");
                    if !exists && !warned {
                        warned = true;
                        tracing::warn!(
                            code = "telemetry.backfill_failed",
                            column = def.name,
                            error = %reason("ALTER TABLE failed", &e),
                            "Postgres telemetry backfill failed (writes will degrade row by row)"
                        );
                    }
                }
            }
        }
        SchemaMode::Manual => {
            if !missing.is_empty() {
                tracing::warn!(
                    code = "telemetry.schema_manual",
                    "{}",
                    manual_mode_warning(&missing)
                );
                indexes.retain(|&i| existing.contains(columns[i]));
                missing_columns = missing.iter().map(|s| (*s).to_owned()).collect();
            }
        }
    }
    Ok(Prepared {
        plan: Plan {
            sql: batch_insert_sql(&indexes),
            indexes,
        },
        missing_columns,
    })
}

async fn insert(
    client: &Object,
    plan: &Plan,
    rows: &[TelemetryRow],
) -> Result<(), tokio_postgres::Error> {
    let statement = client.prepare_cached(&plan.sql).await?;
    let columns = bind(rows, &plan.indexes);
    let params: Vec<_> = columns.iter().map(|c| c.as_param()).collect();
    client.execute(&statement, &params).await.map(drop)
}

/// One batch under one budget: pool acquisition and execution. Returns the
/// availability reason that should degrade the recorder, if any. Counts every row as
/// written or dropped.
pub(super) async fn write_batch(
    pool: Pool,
    plan: Arc<Plan>,
    rows: Vec<TelemetryRow>,
    budget: Duration,
    shared: Arc<Shared>,
) -> Option<String> {
    let deadline = Instant::now() + budget;
    let n = rows.len() as u64;
    let client = match tokio::time::timeout_at(deadline, pool.get()).await {
        Ok(Ok(client)) => client,
        Err(_) => {
            shared.count_dropped(n, "write budget exceeded waiting for a connection");
            return None;
        }
        Ok(Err(e)) => {
            shared.count_dropped(n, "no connection");
            return match pool_failure(&e) {
                Failure::Availability(r) => Some(r),
                Failure::Timeout(_) | Failure::Row(_) => None,
            };
        }
    };
    match tokio::time::timeout_at(deadline, insert(&client, &plan, &rows)).await {
        Ok(Ok(())) => {
            shared.written.fetch_add(n, Ordering::Relaxed);
            shared.batches.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(_) => {
            // The statement may still run: this connection is not reused.
            drop(Object::take(client));
            shared.count_dropped(n, "write budget exceeded");
            None
        }
        Ok(Err(e)) => match classify(&e) {
            Failure::Availability(r) => {
                shared.count_dropped(n, "server unavailable");
                Some(r)
            }
            Failure::Timeout(r) => {
                tracing::warn!(
                    code = "telemetry.write_timeout",
                    "Postgres telemetry write cancelled: {r}"
                );
                shared.count_dropped(n, "statement timeout");
                None
            }
            Failure::Row(r) if rows.len() == 1 => {
                tracing::warn!(
                    code = "telemetry.row_rejected",
                    "Postgres telemetry row rejected: {r}"
                );
                shared.count_dropped(1, "row rejected");
                None
            }
            Failure::Row(_) => rows_one_by_one(client, &plan, &rows, deadline, &shared).await,
        },
    }
}

/// After a batch was rejected for a value: each row alone, so only the rejected rows drop,
/// all within the batch's remaining budget.
async fn rows_one_by_one(
    client: Object,
    plan: &Plan,
    rows: &[TelemetryRow],
    deadline: Instant,
    shared: &Shared,
) -> Option<String> {
    for (i, row) in rows.iter().enumerate() {
        let left = (rows.len() - i) as u64;
        match tokio::time::timeout_at(deadline, insert(&client, plan, std::slice::from_ref(row)))
            .await
        {
            Ok(Ok(())) => {
                shared.written.fetch_add(1, Ordering::Relaxed);
                shared.batches.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Err(e)) => match classify(&e) {
                Failure::Row(r) => {
                    tracing::warn!(
                        code = "telemetry.row_rejected",
                        "Postgres telemetry row rejected: {r}"
                    );
                    shared.count_dropped(1, "row rejected");
                }
                Failure::Timeout(_) => {
                    shared.count_dropped(left, "statement timeout");
                    return None;
                }
                Failure::Availability(r) => {
                    shared.count_dropped(left, "server unavailable");
                    return Some(r);
                }
            },
            Err(_) => {
                drop(Object::take(client));
                shared.count_dropped(left, "write budget exceeded");
                return None;
            }
        }
    }
    None
}
