//! Turning `PGW_TELEMETRY_PG_DSN` into a driver configuration: the
//! SQLAlchemy `+driver` suffix stripped, `sslmode` honoured over rustls, and nothing of the DSN
//! (its password above all) ever in an error, a log line or `Debug`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_postgres::config::SslMode;

/// The application name the recorder's sessions carry unless the DSN sets one
/// (`pg_stat_activity.application_name`).
pub const APPLICATION_NAME: &str = "polygateway-telemetry";

/// Why a DSN cannot be used; never contains any part of the DSN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DsnError(pub String);

impl fmt::Display for DsnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Removes a SQLAlchemy-style driver suffix: `postgresql+asyncpg://…` → `postgresql://…`.
/// Any other text is returned unchanged.
pub fn strip_driver_suffix(dsn: &str) -> String {
    for base in ["postgresql", "postgres"] {
        if let Some(rest) = dsn.strip_prefix(base)
            && let Some(after_plus) = rest.strip_prefix('+')
            && let Some(pos) = after_plus.find("://")
            && after_plus[..pos]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return format!("{base}{}", &after_plus[pos..]);
        }
    }
    dsn.to_owned()
}

/// A parsed DSN ready to connect. `Debug` shows the host list and database only.
#[derive(Clone)]
pub struct ParsedDsn {
    pub(crate) config: tokio_postgres::Config,
}

impl fmt::Debug for ParsedDsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedDsn")
            .field("dbname", &self.config.get_dbname())
            .field("ssl_mode", &self.config.get_ssl_mode())
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl ParsedDsn {
    /// Parses `dsn` (`postgres://`, `postgresql://`, a `+driver` variant, or libpq
    /// `key=value` text). The error names the setting and the kind of problem, never a
    /// character of the value.
    pub fn parse(dsn: &str) -> Result<Self, DsnError> {
        let stripped = strip_driver_suffix(dsn.trim());
        let config = tokio_postgres::Config::from_str(&stripped).map_err(|e| {
            let text = e.to_string();
            // The driver's parse errors name an option, never its value; keep that part only
            // when it is the `invalid value for option` shape, else say it generically.
            let hint = text
                .strip_prefix("invalid configuration: ")
                .unwrap_or(&text)
                .split('`')
                .nth(1)
                .filter(|opt| opt.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
                .map(|opt| format!(" (option `{opt}` has an invalid value)"))
                .unwrap_or_default();
            DsnError(format!(
                "the Postgres DSN in PGW_TELEMETRY_PG_DSN cannot be parsed{hint}; expected \
                 postgres://user:password@host:port/database"
            ))
        })?;
        if config.get_hosts().is_empty() {
            return Err(DsnError(
                "the Postgres DSN in PGW_TELEMETRY_PG_DSN names no host; expected \
                 postgres://user:password@host:port/database"
                    .to_owned(),
            ));
        }
        Ok(Self { config })
    }

    /// The driver configuration with the recorder's additions: a connect timeout and a server
    /// `statement_timeout` of `budget` and the application name.
    pub(crate) fn driver_config(&self, budget: Duration) -> tokio_postgres::Config {
        let mut config = self.config.clone();
        config.connect_timeout(budget);
        let ms = budget.as_millis().max(1);
        let options = match config.get_options() {
            Some(existing) if !existing.trim().is_empty() => {
                format!("{existing} -c statement_timeout={ms}")
            }
            _ => format!("-c statement_timeout={ms}"),
        };
        config.options(&options);
        if config.get_application_name().is_none() {
            config.application_name(APPLICATION_NAME);
        }
        config
    }

    /// `postgres://user@host:port/dbname` without the password or any option: safe to print.
    pub fn redacted(&self) -> String {
        use tokio_postgres::config::Host;
        let user = self
            .config
            .get_user()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        let hosts: Vec<String> = self
            .config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let host = match h {
                    Host::Tcp(name) => name.clone(),
                    #[cfg(unix)]
                    Host::Unix(path) => path.display().to_string(),
                };
                match self
                    .config
                    .get_ports()
                    .get(i)
                    .or(self.config.get_ports().first())
                {
                    Some(port) => format!("{host}:{port}"),
                    None => host,
                }
            })
            .collect();
        format!(
            "postgres://{user}{}/{}",
            hosts.join(","),
            self.config.get_dbname().unwrap_or_default()
        )
    }

    /// One plain connection for operator tools (`pgw telemetry`, the demo's read-back):
    /// TLS per `sslmode`, connect timeout `timeout`, the connection driven on the current
    /// runtime. The error is secret-free.
    pub async fn connect(&self, timeout: Duration) -> Result<tokio_postgres::Client, DsnError> {
        let mut config = self.config.clone();
        config.connect_timeout(timeout);
        if config.get_application_name().is_none() {
            config.application_name("pgw");
        }
        let tls = tls_connector()?;
        let (client, connection) = config
            .connect(tls)
            .await
            .map_err(|e| DsnError(format!("cannot connect to Postgres: {e}")))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// The `sslmode` of the DSN (`disable`, `prefer` — the default — or `require`).
    pub fn ssl_mode(&self) -> SslMode {
        self.config.get_ssl_mode()
    }
}

/// The TLS connector for `sslmode=prefer|require` (libpq semantics: the session is encrypted,
/// the server certificate is not verified — `verify-ca`/`verify-full` are not offered by the
/// driver). Handshake signatures are still checked with the ring provider.
pub(crate) fn tls_connector() -> Result<tokio_postgres_rustls::MakeRustlsConnect, DsnError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| DsnError(format!("cannot set up TLS for Postgres: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(EncryptOnly { provider }))
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// libpq's `sslmode=require`: encryption without certificate verification.
#[derive(Debug)]
struct EncryptOnly {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `+driver` suffixes are stripped; other DSNs untouched.
    #[test]
    fn t_42_driver_suffix_is_stripped() {
        assert_eq!(
            strip_driver_suffix("postgresql+asyncpg://u:p@h/db"),
            "postgresql://u:p@h/db"
        );
        assert_eq!(
            strip_driver_suffix("postgres+psycopg2://h/db"),
            "postgres://h/db"
        );
        assert_eq!(strip_driver_suffix("postgres://h/db"), "postgres://h/db");
        assert_eq!(strip_driver_suffix("host=h dbname=d"), "host=h dbname=d");
    }

    /// 80 T-56, CF-394: an unparseable DSN is refused without echoing any of it.
    #[test]
    fn cf_394_malformed_dsn_error_is_secret_free() {
        for dsn in [
            "postgres://user:s3cr3t-pw@127.0.0.1:notaport/test",
            "postgresql+asyncpg://user:s3cr3t-pw@[::1/test",
            "postgres://user:s3cr3t-pw@127.0.0.1/test?sslmode=s3cr3t-pw",
        ] {
            let err = ParsedDsn::parse(dsn).expect_err(dsn);
            assert!(!err.0.contains("s3cr3t"), "{err}");
            assert!(err.0.contains("PGW_TELEMETRY_PG_DSN"), "{err}");
        }
    }

    /// The password never shows in `Debug`.
    #[test]
    fn parsed_dsn_debug_redacts_password() {
        let dsn = ParsedDsn::parse("postgres://u:s3cr3t@127.0.0.1:5432/test?sslmode=disable")
            .expect("parse");
        let text = format!("{dsn:?}");
        assert!(!text.contains("s3cr3t"), "{text}");
        assert_eq!(dsn.ssl_mode(), SslMode::Disable);
    }
}
