//! `upstream-sim --listen ADDR --script FILE [--threads N]`: serves a script until killed and
//! prints the bound address (`127.0.0.1:PORT`) as its first line (spec 15).
//!
//! The default runtime is `current_thread` (the benchmark setup of 05 R-56); `--threads N` with
//! N > 1 uses a multi-thread runtime with N workers.

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

use upstream_sim::Sim;
use upstream_sim::script::Script;

const USAGE: &str = "usage: upstream-sim --listen ADDR --script FILE [--threads N]";

struct Args {
    listen: SocketAddr,
    script: String,
    threads: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut listen = None;
    let mut script = None;
    let mut threads = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                listen = Some(
                    v.parse::<SocketAddr>()
                        .map_err(|e| format!("--listen {v}: {e}"))?,
                );
            }
            "--script" => script = Some(value()?),
            "--threads" => {
                let v = value()?;
                threads = v
                    .parse::<usize>()
                    .map_err(|e| format!("--threads {v}: {e}"))?;
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    Ok(Args {
        listen: listen.ok_or_else(|| format!("--listen is required\n{USAGE}"))?,
        script: script.ok_or_else(|| format!("--script is required\n{USAGE}"))?,
        threads,
    })
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let text = std::fs::read_to_string(&args.script)
        .map_err(|e| format!("cannot read {}: {e}", args.script))?;
    let script = Script::from_json(&text).map_err(|e| format!("{}: {e}", args.script))?;
    let runtime = if args.threads > 1 {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    }
    .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let sim = Sim::start_at(args.listen, script).map_err(|e| e.to_string())?;
        // Nobody can read the records of a separate process: keep memory flat on long runs.
        sim.set_recording(false);
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "{}", sim.addr());
        let _ = stdout.flush();
        std::future::pending::<()>().await;
        drop(sim);
        Ok(())
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("upstream-sim: {message}");
            ExitCode::from(2)
        }
    }
}
