//! `runnel`: the Runnel command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use runnel_node::local::{self, LocalCall};

#[derive(Parser)]
#[command(
    name = "runnel",
    version,
    about = "Runnel: a low-latency smart-contract ledger"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one contract call locally against a state file and print the result, the
    /// read/write set and the events. Writes are kept (as if committed) unless --dry-run.
    Exec {
        /// The contract module (.wasm), e.g. target/wasm32-unknown-unknown/contract/kv.wasm.
        #[arg(long)]
        wasm: PathBuf,
        /// The contract's namespace; defaults to the module's file name.
        #[arg(long)]
        namespace: Option<String>,
        /// The caller, as org/role/name.
        #[arg(long = "as", default_value = "Org1/client/user1")]
        identity: String,
        /// Directory for the state file and the compiled-artifact cache.
        #[arg(long, env = "RUNNEL_DATA_DIR", default_value = ".runnel")]
        data_dir: PathBuf,
        /// Do not keep the call's writes.
        #[arg(long)]
        dry_run: bool,
        /// The function to call.
        function: String,
        /// Its arguments (each is JSON, or plain text for strings).
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Exec {
            wasm,
            namespace,
            identity,
            data_dir,
            dry_run,
            function,
            args,
        } => {
            let call = LocalCall {
                wasm,
                namespace,
                function,
                args,
                identity,
                data_dir,
                commit: !dry_run,
            };
            match local::run(&call) {
                Ok(report) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&report).unwrap_or_default()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
