//! `pgw sim --listen ADDR --script FILE` (spec 15): serves a simulator script until
//! Ctrl-C, printing the bound address (`127.0.0.1:PORT`) as its first stdout line.
//!
//! Reuses `upstream_sim::Sim` on the CLI's runtime; requests are not recorded (nobody could
//! read them). An unreadable or invalid script exits 1 with the reason on stderr.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use upstream_sim::Sim;
use upstream_sim::script::Script;

use crate::exit;
use crate::out;
use crate::signals;

/// Arguments of `pgw sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// The script file (format version 1, `docs/simulator.md`).
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
}

/// Largest simulator script read, in bytes (16 MiB); larger files, FIFOs and devices are refused.
const MAX_SCRIPT_BYTES: u64 = 16 * 1024 * 1024;

/// Runs `pgw sim`; returns the exit code (130 when stopped with Ctrl-C).
pub async fn run(args: SimArgs) -> u8 {
    let shown = args.script.display();
    let text = match gateway_ports::files::read_regular_file_capped(&args.script, MAX_SCRIPT_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|b| String::from_utf8(b).map_err(|_| "is not valid UTF-8".to_owned()))
    {
        Ok(t) => t,
        Err(e) => {
            out::stderr_line(&format!("pgw sim: cannot read {shown}: {e}"));
            return exit::INTERNAL;
        }
    };
    let script = match Script::from_json(&text) {
        Ok(s) => s,
        Err(e) => {
            out::stderr_line(&format!("pgw sim: {shown}: {e}"));
            return exit::INTERNAL;
        }
    };
    let sim = match Sim::start_at(args.listen, script) {
        Ok(sim) => sim,
        Err(e) => {
            out::stderr_line(&format!("pgw sim: cannot listen on {}: {e}", args.listen));
            return exit::INTERNAL;
        }
    };
    sim.set_recording(false);
    out::stdout_line(&sim.addr().to_string());
    let signal = signals::interrupted().await;
    sim.shutdown();
    signal.exit_code()
}
