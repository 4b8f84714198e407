//! Binding a batch of rows as one array parameter per column: values are
//! taken by column name from [`TelemetryRow::columns`], `cache_hit` as `bool`, `meta` as
//! `jsonb` (the row's canonical JSON text sent as is).

use std::error::Error;

use bytes::{BufMut, BytesMut};
use gateway_ports::{SqlValue, TelemetryRow};
use tokio_postgres::types::{IsNull, ToSql, Type, accepts, to_sql_checked};

use crate::schema::{PgKind, insert_column};

/// JSON text bound as `json`/`jsonb` without re-parsing (the server validates it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawJson<'a>(pub(crate) &'a str);

impl ToSql for RawJson<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        if *ty == Type::JSONB {
            out.put_u8(1); // jsonb binary format version
        }
        out.put_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }

    accepts!(JSON, JSONB);
    to_sql_checked!();
}

/// One column of a batch.
#[derive(Debug)]
pub(crate) enum ColumnValues<'a> {
    Text(Vec<Option<&'a str>>),
    Int(Vec<Option<i64>>),
    Real(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Json(Vec<Option<RawJson<'a>>>),
}

impl ColumnValues<'_> {
    pub(crate) fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Self::Text(v) => v,
            Self::Int(v) => v,
            Self::Real(v) => v,
            Self::Bool(v) => v,
            Self::Json(v) => v,
        }
    }
}

/// The arrays for `rows`, one per entry of `indexes` (INSERT column positions, resolved by name
/// when the plan was made). A value whose kind does not fit its column binds NULL — impossible
/// for rows built by the ports, pinned by the schema module's `t48` test.
pub(crate) fn bind<'a>(rows: &'a [TelemetryRow], indexes: &[usize]) -> Vec<ColumnValues<'a>> {
    let columns: Vec<[(&'static str, SqlValue<'a>); 39]> =
        rows.iter().map(TelemetryRow::columns).collect();
    indexes
        .iter()
        .map(|&i| {
            let def = insert_column(i);
            let values = columns.iter().map(move |c| {
                let (name, value) = c[i];
                debug_assert_eq!(name, def.name);
                value
            });
            match def.kind {
                PgKind::Text => ColumnValues::Text(
                    values
                        .map(|v| match v {
                            SqlValue::Text(s) => Some(s),
                            _ => None,
                        })
                        .collect(),
                ),
                PgKind::Json => ColumnValues::Json(
                    values
                        .map(|v| match v {
                            SqlValue::Text(s) => Some(RawJson(s)),
                            _ => None,
                        })
                        .collect(),
                ),
                PgKind::Int => ColumnValues::Int(
                    values
                        .map(|v| match v {
                            SqlValue::Int(n) => Some(n),
                            _ => None,
                        })
                        .collect(),
                ),
                PgKind::Real => ColumnValues::Real(
                    values
                        .map(|v| match v {
                            SqlValue::Real(x) => Some(x),
                            #[allow(clippy::cast_precision_loss)]
                            SqlValue::Int(n) => Some(n as f64),
                            _ => None,
                        })
                        .collect(),
                ),
                PgKind::Bool => ColumnValues::Bool(
                    values
                        .map(|v| match v {
                            SqlValue::Bool(b) => Some(b),
                            _ => None,
                        })
                        .collect(),
                ),
            }
        })
        .collect()
}
