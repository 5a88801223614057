//! `runnel`: the Runnel command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use local::LocalCall;

mod client;
mod local;
mod netadmin;
mod network;
mod node;
mod seals;
mod up;

/// mimalloc: the API's many small allocations cost less than with glibc's malloc
/// (docs/perf-log.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// `runnel bench`: the load generator's flags, and how its threads are scheduled.
#[derive(clap::Args, Debug)]
struct BenchCommand {
    #[command(flatten)]
    load: runnel_bench::BenchArgs,
    /// How the load generator's threads are scheduled: batch (SCHED_BATCH, as a node
    /// runs by default: neither process preempts the other on each wake-up) or normal.
    #[arg(long, value_enum, default_value = "batch")]
    scheduling: runnel_server::sched::Scheduling,
}

#[derive(Subcommand)]
enum Command {
    /// Create a network: per organisation a CA, its people's identities and its nodes'
    /// directories, each holding only its own keys, and the public network definition
    /// (like Fabric's cryptogen and configtxgen together).
    Init(node::InitArgs),
    /// Run a one-organisation dev node: created on first run in .runnel/dev, the example
    /// contracts (kv, token, basic) deployed, the explorer served when built.
    Dev(node::DevArgs),
    /// Run the node of a network made by `runnel init`: every role in one process, or
    /// the orderer or a peer alone (`--role`).
    Start(node::ServeArgs),
    /// Start a whole network on this machine, each node a process with only its own
    /// keys: created the first time, the example contracts approved by every
    /// organisation and committed.
    Up(up::UpArgs),
    /// Stop the network `runnel up` started; its data stays for the next `up`.
    Down(up::DownArgs),
    /// An organisation's identities: issue one from its CA, revoke one.
    #[command(subcommand)]
    Identity(netadmin::IdentityCommand),
    /// The network definition: show it, propose a change, sign one, submit one.
    #[command(subcommand)]
    Config(netadmin::ConfigCommand),
    /// The ordering cluster's members: propose adding or removing an orderer.
    #[command(subcommand)]
    Orderer(netadmin::OrdererCommand),
    /// Call a contract function as a transaction: endorse, sign, order, wait for commit.
    Invoke(client::CallArgs),
    /// Call a contract function on the node's current state, without a transaction.
    Query(client::CallArgs),
    /// Commit a contract definition (deploy, or --upgrade), signed by the organisation's
    /// admin: once the organisations the lifecycle policy needs have approved it (this
    /// one's approval is the commit).
    Deploy(client::DeployArgs),
    /// Approve a contract definition for the organisation, signed by its admin.
    Approve(client::DeployArgs),
    /// Show a contract's definition in force and which organisations approved what.
    ContractStatus(client::ContractStatusArgs),
    /// Show a transaction: proposal, read/write sets, events, endorsements, status.
    Tx(client::TxArgs),
    /// Show a sealed block and its transactions.
    Block(client::BlockArgs),
    /// Show the network and the node's heights.
    Status(runnel_client::Connection),
    /// Load a node like an application would and report throughput, latency per stage
    /// and outcomes: per-transaction CSV, summary (text and JSON) and SVG plots.
    Bench(Box<BenchCommand>),
    /// Show a digest of the node's durable state and its height: equal at equal heights
    /// on every peer that validated the same stream.
    StateHash(runnel_client::Connection),
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

/// `purge_delay` in mimalloc's `mi_option_e` (mimalloc.h, v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps memory no longer used before it returns it to the OS. Its
/// default, one second, is shorter than the swings of a busy node's memory (batches,
/// the sled cache), so the node kept returning pages and faulting them back in: about 3%
/// of its CPU under load (docs/perf-log.md). `MIMALLOC_PURGE_DELAY` overrides it.
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// `allow_thp` in mimalloc's `mi_option_e` (mimalloc.h, v3).
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Turns transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` says
/// otherwise: what an orderer does (`runnel start` of `role = "orderer"`). mimalloc asks
/// for them on its arenas, and the kernel then zeroes 2 MiB at the first touch of each:
/// with the requests and batches of a busy orderer that was a fifth of its CPU, and BFT
/// ordering of 1 KB transactions went from 9,700 to 11,300 tx/s with it off. A peer or a
/// dev node keeps them: without, a dev node spent ~10% more CPU a transaction
/// (docs/perf-log.md). The `prctl` covers the arenas mimalloc already reserved (the
/// kernel checks it at each fault); the option, the arenas after. Called before the
/// node starts any thread.
pub(crate) fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    // SAFETY: sets a plain option before any other thread runs.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours. A
    // kernel without it leaves huge pages on, which costs speed only.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

fn main() -> ExitCode {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a plain option before any other thread runs.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    // A write past the file size limit (RLIMIT_FSIZE) fails with EFBIG, which the node
    // reports as it reports a full disk, instead of SIGXFSZ ending the process unexplained.
    // SAFETY: sets a signal disposition before any other thread runs.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Init(args) => node::init(&args),
        Command::Dev(args) => node::dev(&args),
        Command::Start(args) => node::start(&args),
        Command::Up(args) => up::up(&args),
        Command::Identity(command) => netadmin::identity(&command),
        Command::Config(command) => netadmin::config(&command),
        Command::Orderer(command) => netadmin::orderer(&command),
        Command::Down(args) => up::down(&args),
        Command::Invoke(args) => client::invoke(&args),
        Command::Query(args) => client::query(&args),
        Command::Deploy(args) => client::deploy(&args),
        Command::Approve(args) => client::approve(&args),
        Command::ContractStatus(args) => client::contract_status(&args),
        Command::Tx(args) => client::transaction(&args),
        Command::Block(args) => client::block(&args),
        Command::Status(args) => client::node_status(&args),
        Command::Bench(args) => {
            // Before the load generator's runtime starts its threads, which inherit it.
            if let Err(error) = runnel_server::sched::apply(args.scheduling) {
                eprintln!("keeping the system's scheduling policy: {error}");
            }
            runnel_bench::bench(&args.load, &seals::LedgerSeals)
        }
        Command::StateHash(args) => client::state_hash(&args),
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
            local::run(&call).map(|report| {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            })
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mimalloc's `option` now, or `None` when the environment sets it (`variable`).
    fn option(option: libmimalloc_sys::mi_option_t, variable: &str) -> Option<std::ffi::c_long> {
        // SAFETY: reads a plain option.
        let value = unsafe { libmimalloc_sys::mi_option_get(option) };
        std::env::var_os(variable).is_none().then_some(value)
    }

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // mimalloc v3's documented default for purge_delay: the index names that option.
        if let Some(default) = option(MI_OPTION_PURGE_DELAY, "MIMALLOC_PURGE_DELAY") {
            assert_eq!(default, 1_000);
        }
    }

    #[test]
    fn the_allow_thp_option_is_the_one_set() {
        // mimalloc v3's documented default for allow_thp (on Linux): the index names it.
        let Some(default) = option(MI_OPTION_ALLOW_THP, "MIMALLOC_ALLOW_THP") else {
            return;
        };
        assert_eq!(default, 1);
        no_transparent_huge_pages();
        assert_eq!(option(MI_OPTION_ALLOW_THP, "MIMALLOC_ALLOW_THP"), Some(0));
        // SAFETY: PR_GET_THP_DISABLE reads a flag of this process.
        assert_eq!(
            unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) },
            1
        );
    }
}
