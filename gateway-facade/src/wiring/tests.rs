//! Unit tests of the wiring: settings reaching the Redis connection options.

use std::time::Duration;

use crate::settings::GatewaySettings;

use super::backends::redis_options;

/// The two buffering keys reach the Redis connection options; 0 turns either off and the
/// other options keep the adapter's defaults.
#[test]
fn redis_options_follow_the_settings() {
    let defaults = adapter_redis::RedisOptions::default();
    let o = redis_options(&GatewaySettings::default());
    assert_eq!(o, defaults);
    assert_eq!(o.breaker_mirror, Duration::from_millis(250));
    assert_eq!(o.write_behind, Duration::from_millis(100));
    let o = redis_options(&GatewaySettings {
        redis_breaker_mirror_ms: 0,
        redis_write_behind_ms: 1500,
        ..GatewaySettings::default()
    });
    assert_eq!(o.breaker_mirror, Duration::ZERO);
    assert_eq!(o.write_behind, Duration::from_millis(1500));
    assert_eq!(o.op_timeout, defaults.op_timeout);
    assert_eq!(o.reconnect_delay, defaults.reconnect_delay);
    assert_eq!(o.connect_timeout, defaults.connect_timeout);
}
