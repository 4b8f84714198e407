//! `pgw` — the PolyGateway command line.
//!
//! Subcommands: `demo` (the main job), `chat` and `embed` (one governed call,
//! ), `sim` (the scripted upstream), `doctor` (configuration and reachability,
//! R-53), `status` (the sources of a scope) and `schema-sql` (the telemetry DDL).
//! Logging goes to stderr through `tracing-subscriber`: `RUST_LOG` when set, else `-v` (info),
//! `-vv` (debug), `-vvv` (trace), `-q` (errors only), default warnings only; ANSI colours only
//! when stderr is a terminal. Exit codes live in [`exit`]; every stdout write goes through
//! [`out`] so a closed pipe never panics.

mod chat;
mod config;
mod demo;
mod demo_args;
mod demo_redis;
mod demo_structured;
mod doctor;
mod embed;
mod envmap;
mod exit;
mod ocr;
mod out;
mod retry_lines;
mod serve;
mod signals;
mod sim;
mod soak;
mod status;
mod telemetry_cmd;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use gateway_ports::schema::{SqlBackend, telemetry_schema_sql};
use tracing_subscriber::EnvFilter;

/// The process allocator: mimalloc instead of the system allocator. A request through
/// `pgw serve` allocates about a hundred blocks (the governed call, hyper, the JSON bodies), and
/// with glibc's allocator allocation and freeing were about a fifth of its instructions; the
/// library itself leaves the allocator to the application, as a library must.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The PolyGateway command line.
#[derive(Debug, Parser)]
#[command(
    name = "pgw",
    version,
    about = "PolyGateway: governed LLM calls, the demo, the simulator"
)]
struct Cli {
    /// More logging on stderr: -v info, -vv debug, -vvv trace (default: warnings only).
    /// `RUST_LOG` (e.g. `RUST_LOG=polygateway=debug`) wins when set. Colours only on a terminal.
    #[arg(short, long, action = clap::ArgAction::Count, global = true, conflicts_with = "quiet")]
    verbose: u8,
    /// Less logging on stderr: errors only (configuration warnings are still printed).
    #[arg(short, long, global = true)]
    quiet: bool,
    /// The subcommand.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    // Spec: 05 R-54, R-55 (help text stays free of rule ids).
    /// Run the main job: the same 200 chat calls over four local upstreams (healthy, hanging,
    /// rate-limited, refusing), sent naively and then governed, side by side.
    Demo(demo::DemoArgs),
    // Spec: 05.
    /// One governed chat call to the sources of the environment, `.env` or the flags.
    Chat(chat::ChatArgs),
    /// One governed embedding call.
    Embed(embed::EmbedArgs),
    /// One governed OCR call on an image or PDF: its text, or with `--layout` its layout.
    Ocr(ocr::OcrArgs),
    // Spec: 05 R-49.
    /// Serve a simulator script (docs/simulator.md); prints the bound address first.
    Sim(sim::SimArgs),
    /// Fault soak: many calls against in-process faulty simulators with random caller drops;
    /// prints RSS, in-flight counts and the telemetry ledger check.
    Soak(soak::SoakArgs),
    /// Serve the configured scopes over the OpenAI HTTP API (chat completions, embeddings,
    /// models, health, metrics); prints the bound address first. See docs/serve.md.
    ///
    /// It needs the caller keys, `PGW_SERVE_KEYS=token=tenant,…` (or `PGW_SERVE_KEYS_FILE`),
    /// and the sources of every served scope, read from the same keys as the library:
    /// `LLM__<PROVIDER>__<N>__BASE_URL`, `…__API_KEY` and `…__MODEL` for the chat scope `LLM`
    /// (`PGW_SERVE_CHAT_SCOPES` serves others), and `PGW_SERVE_EMBED_SCOPES` for embedding
    /// scopes. To try it without a provider, point a source at `pgw sim`.
    Serve(serve::ServeArgs),
    // Spec: 05 R-53.
    /// Validate the configuration and probe every source with `GET /models`.
    // Doctor sends no call and writes no telemetry: these flags would mean nothing here.
    #[command(
        mut_arg("missing_done", |a| a.hide(true)),
        mut_arg("telemetry", |a| a.hide(true))
    )]
    Doctor(doctor::DoctorArgs),
    /// Show every source of a scope: breaker state and opens, limits in use, health.
    #[command(
        mut_arg("missing_done", |a| a.hide(true)),
        mut_arg("telemetry", |a| a.hide(true)),
        mut_arg("timeout_s", |a| a.hide(true))
    )]
    Status(status::StatusArgs),
    // Spec: 80 T-49.
    /// Print the telemetry table DDL (`CREATE TABLE`, then upgrades for older tables).
    SchemaSql {
        /// The database.
        #[arg(value_enum)]
        backend: BackendArg,
    },
    // Spec: 80 T-60, T-61.
    /// Telemetry table operations: `stats` (calls, errors, latency, cost) and `retention`.
    Telemetry(telemetry_cmd::TelemetryArgs),
}

/// `schema-sql` backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BackendArg {
    /// SQLite.
    Sqlite,
    /// Postgres.
    Postgres,
}

fn init_logging(verbose: u8, quiet: bool, retry_lines: bool) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{Layer as _, filter};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // Configuration warnings are printed by the CLI itself (config::print_warnings); the
        // library's copy of them (target polygateway::config) is shown only with -v.
        let level = match verbose {
            _ if quiet => "error",
            0 => "warn,polygateway::config=error",
            1 => "info",
            2 => "debug",
            _ => "trace",
        };
        EnvFilter::new(level)
    });
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // No colour codes in files, pipes and CI logs.
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    // README D26: `pgw chat` in human mode prints one line per retry or wait, at any level.
    let lines = retry_lines
        .then_some(retry_lines::RetryLines)
        .map(|l| l.with_filter(filter::filter_fn(retry_lines::is_retry_event)));
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(lines)
        .try_init();
}

async fn dispatch(command: Command) -> u8 {
    match command {
        Command::Demo(args) => demo::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Embed(args) => embed::run(args).await,
        Command::Ocr(args) => ocr::run(args).await,
        Command::Sim(args) => sim::run(args).await,
        Command::Soak(args) => soak::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Doctor(args) => doctor::run(args).await,
        Command::Telemetry(args) => telemetry_cmd::run(args).await,
        Command::Status(args) => status::run(args).await,
        Command::SchemaSql { backend } => {
            let backend = match backend {
                BackendArg::Sqlite => SqlBackend::Sqlite,
                BackendArg::Postgres => SqlBackend::Postgres,
            };
            out::stdout_line(telemetry_schema_sql(backend).trim_end());
            exit::OK
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" with exit 0; real usage errors exit 2.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let retry_lines = matches!(&cli.command, Command::Chat(args) if !args.json);
    init_logging(cli.verbose, cli.quiet, retry_lines);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out::stderr_line(&format!("pgw: cannot start the runtime: {e}"));
            return ExitCode::from(exit::INTERNAL);
        }
    };
    let mut code = runtime.block_on(dispatch(cli.command));
    // An answer that could not be written (a full disk, /dev/full) is not a success.
    if code == exit::OK && out::stdout_failed() {
        code = exit::INTERNAL;
    }
    // Hung simulator connections and detached cleanup must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    ExitCode::from(code)
}
