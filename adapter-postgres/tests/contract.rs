//! The telemetry recorder contract suite (10 §8.7 CT-TEL-01..04, 06..08, the R-9 hand-off row)
//! run against the real Postgres server, one throwaway schema per test.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod common;

use std::sync::Arc;

use adapter_postgres::{PostgresRecorder, PostgresRecorderConfig, SchemaMode};
use async_trait::async_trait;
use common::TestSchema;
use contract_tests::telemetry::{RecorderHarness, StoredRow};

struct PgHarness {
    schema: TestSchema,
}

impl PgHarness {
    async fn new() -> Self {
        Self {
            schema: TestSchema::new("contract").await,
        }
    }
}

#[async_trait]
impl RecorderHarness for PgHarness {
    type Recorder = PostgresRecorder;

    /// `auto` creates the table in the test's empty schema.
    async fn recorder(&self) -> Arc<PostgresRecorder> {
        Arc::new(PostgresRecorder::new(
            PostgresRecorderConfig::new(self.schema.dsn("pgw_contract"))
                .with_schema_mode(SchemaMode::Auto),
        ))
    }

    /// Nothing listens on port 1: every connect is refused at once.
    async fn unavailable_recorder(&self) -> Arc<PostgresRecorder> {
        Arc::new(PostgresRecorder::new(
            PostgresRecorderConfig::new("postgres://postgres:pw@127.0.0.1:1/test?sslmode=disable")
                .with_schema_mode(SchemaMode::Auto),
        ))
    }

    /// Ordered by `call_id`: concurrent writers have no other stable order.
    async fn rows(&self) -> Vec<StoredRow> {
        self.schema.rows().await
    }
}

contract_tests::telemetry_contract!(PgHarness::new().await);
