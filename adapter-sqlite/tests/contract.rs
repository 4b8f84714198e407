//! The telemetry recorder contract suite (10 §8.7 CT-TEL-01..04, 06..08) run against SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use adapter_sqlite::SqliteRecorder;
use async_trait::async_trait;
use contract_tests::telemetry::{RecorderHarness, Stored, StoredRow};
use rusqlite::types::ValueRef;

/// One temporary database file per test.
struct SqliteHarness {
    dir: tempfile::TempDir,
}

impl SqliteHarness {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("telemetry.db")
    }
}

/// Reads every row of `llm_calls` at `path`, in rowid order.
fn read_rows(path: &std::path::Path) -> Vec<StoredRow> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT * FROM llm_calls ORDER BY rowid")
        .unwrap();
    let names: Vec<String> = stmt.column_names().map(str::to_owned).collect();
    let rows = stmt
        .query_map([], |row| {
            let mut out = StoredRow::new();
            for (i, name) in names.iter().enumerate() {
                let v = match row.get_ref(i)? {
                    ValueRef::Null => Stored::Null,
                    ValueRef::Integer(x) => Stored::Int(x),
                    ValueRef::Real(x) => Stored::Real(x),
                    ValueRef::Text(t) => Stored::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(_) => Stored::Text("<blob>".into()),
                };
                out.insert(name.clone(), v);
            }
            Ok(out)
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[async_trait]
impl RecorderHarness for SqliteHarness {
    type Recorder = SqliteRecorder;

    async fn recorder(&self) -> Arc<SqliteRecorder> {
        Arc::new(SqliteRecorder::open(self.path()))
    }

    async fn unavailable_recorder(&self) -> Arc<SqliteRecorder> {
        Arc::new(SqliteRecorder::open(
            self.dir.path().join("missing/dir/t.db"),
        ))
    }

    async fn rows(&self) -> Vec<StoredRow> {
        read_rows(&self.path())
    }
}

contract_tests::telemetry_contract!(SqliteHarness::new());
