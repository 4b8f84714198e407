//! Conformance rows of 95 §14 on columns, cost and usage source: the column tail, the fields
//! each row kind sets, the cost of each row kind with and without a price table, and the kept
//! usage source.
//!
//! Separate from the field rows so each file is one group of the conformance table.

use super::*;

#[test]
fn cf_345_columns_tail() {
    assert_eq!(TelemetryRow::COLUMNS.len(), 39);
    assert_eq!(
        TelemetryRow::COLUMNS[32..],
        [
            "cause_type",
            "error_body",
            "attempts",
            "total_latency_ms",
            "stall_ms",
            "stall_count",
            "stream_end"
        ]
    );
}

#[test]
fn cf_346_each_row_kind_sets_exactly_39_fields() {
    let s = priced();
    let rows = [
        s.attempt_row(&success(chat_call(), "qwen-max", ok_result(1, 1))),
        s.cache_hit_row(&cache_hit(chat_call(), historic())),
        s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted()))),
    ];
    let kinds: Vec<EventKind> = rows.iter().map(|r| r.event_kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Attempt,
            EventKind::CacheHit,
            EventKind::TerminalFailure
        ]
    );
    for row in &rows {
        let names: Vec<&str> = row.columns().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, TelemetryRow::COLUMNS);
        assert_eq!(row.logical_call_id.as_deref(), Some("lcid-1"));
        assert_eq!(row.scope, "llm");
    }
}

#[test]
fn cf_347_t_4_text_cap_zero_is_config_error() {
    let e = RowShaper::new(None, Some(0), true).unwrap_err();
    assert_eq!(e.code, "telemetry.text_cap");
    assert_eq!(e.origin, "PGW_TELEMETRY_TEXT_CAP");
    assert!(RowShaper::new(None, Some(1), true).is_ok());
}

#[test]
fn cf_348_t_31_cost_qwen_max() {
    let row = priced().attempt_row(&success(
        chat_call(),
        "qwen-max",
        ok_result(800_000, 800_000),
    ));
    assert!((row.cost.unwrap() - 7.2).abs() < 1e-9);
}

#[test]
fn cf_349_t_30_cache_hit_cost_zero_with_and_without_table() {
    let hit = cache_hit(chat_call(), historic());
    assert_eq!(priced().cache_hit_row(&hit).cost, Some(0.0));
    assert_eq!(RowShaper::default().cache_hit_row(&hit).cost, Some(0.0));
}

#[test]
fn cf_350_failed_attempt_cost_null() {
    let row = priced().attempt_row(&attempt(
        chat_call(),
        src("qwen-max"),
        AttemptRowOutcome::Failed(transient("TransientError: boom")),
    ));
    assert_eq!(row.cost, None);
    assert_eq!(row.error.as_deref(), Some("TransientError: boom"));
}

#[test]
fn cf_351_unknown_model_cost_null() {
    let row = priced().attempt_row(&success(chat_call(), "mystery", ok_result(10, 5)));
    assert_eq!(row.cost, None);
    assert_eq!(row.error, None);
}

#[test]
fn cf_352_no_price_table_cost_null() {
    let row = RowShaper::default().attempt_row(&success(chat_call(), "qwen-max", ok_result(10, 5)));
    assert_eq!(row.cost, None);
}

#[test]
fn cf_353_unavailable_usage_cost_null() {
    let mut r = ok_result(0, 0);
    r.usage_source = UsageSource::Unavailable;
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", r));
    assert_eq!(
        (row.usage_source, row.cost),
        (UsageSource::Unavailable, None)
    );
}

#[test]
fn cf_354_t_31_cached_prompt_pricing() {
    let usage = Usage {
        prompt_tokens: 1000,
        completion_tokens: 0,
        cached_prompt_tokens: Some(400),
        reasoning_tokens: None,
    };
    let price = |cached| {
        let mut t = PricingTable::default();
        t.prices.insert(
            "m".into(),
            ModelPrice {
                input_per_1m: 1.0,
                output_per_1m: 8.0,
                cached_input_per_1m: cached,
            },
        );
        RowShaper::new(Some(t), None, true).unwrap()
    };
    let c = price(Some(0.1)).cost(CallOperation::Chat, "m", &usage, UsageSource::Measured);
    assert!((c.unwrap() - (600.0 * 1.0 + 400.0 * 0.1) / 1e6).abs() < 1e-15);
    let c = price(None).cost(CallOperation::Chat, "m", &usage, UsageSource::Estimated);
    assert!((c.unwrap() - 1000.0 / 1e6).abs() < 1e-15);
    assert_eq!(
        price(None).cost(
            CallOperation::RecognizeText,
            "m",
            &usage,
            UsageSource::Measured
        ),
        None
    );
}

#[test]
fn cf_355_terminal_cost_null() {
    let row = priced().terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(row.cost, None);
}

#[test]
fn cf_356_usage_source_kept_on_success() {
    for us in [
        UsageSource::Measured,
        UsageSource::Estimated,
        UsageSource::Unavailable,
    ] {
        let mut r = ok_result(10, 5);
        r.usage_source = us;
        let row = priced().attempt_row(&success(chat_call(), "qwen-max", r));
        assert_eq!(row.usage_source, us);
    }
    let mut salvaged = ok_result(10, 5);
    salvaged.usage_source = UsageSource::Estimated;
    salvaged.stream_end = Some(StreamEnd::Salvaged);
    let row = priced().attempt_row(&success(chat_call(), "qwen-max", salvaged));
    assert_eq!(row.usage_source, UsageSource::Estimated);
}

#[test]
fn cf_357_usage_source_failed_cache_terminal() {
    let s = priced();
    let failed = s.attempt_row(&attempt(
        chat_call(),
        src("m"),
        AttemptRowOutcome::Failed(transient("x")),
    ));
    let hit = s.cache_hit_row(&cache_hit(chat_call(), historic()));
    let term = s.terminal_row(&terminal(chat_call(), TerminalOutcome::Error(exhausted())));
    assert_eq!(
        [failed.usage_source, hit.usage_source, term.usage_source],
        [
            UsageSource::Unavailable,
            UsageSource::Estimated,
            UsageSource::Unavailable
        ]
    );
    assert_eq!(
        (term.attempts, term.total_latency_ms, term.latency_ms),
        (Some(1), Some(1), 1)
    );
}
