//! `runnel identity` and `runnel config`: an organisation's identities, issued offline
//! from its CA, and changes of the network definition as configuration transactions
//! signed by as many organisations' admins as its `config_policy` needs.
//!
//! A change travels as a file between admins: `config propose` (or `identity revoke`)
//! writes the update, signed by the proposing admin; each other admin reads what it
//! changes and adds a signature with `config sign`; the proposer orders it with `config
//! submit`. Its proposal's timestamp must still be inside the network's proposal window
//! (15 minutes by default) when it is ordered.
//!
//! `config sign` never signs blind: before it signs it shows every field the update
//! changes against the definition in force at the admin's node, every signature the
//! update carries checked against that definition (not the proposed one), and whether
//! the network will accept the update ([`netconfig::check_next`]); then it asks on a
//! terminal, or needs `--yes`. `config show <file>` shows the same of any pending update.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand};
use prost::Message;
use runnel_client::{Connection, connect, signer, status};
use runnel_ledger::identity::{
    CertificateAuthority, IDENTITIES_DIR, NetworkDefinition, OrdererNode, Role, certificate_der,
    revocation, write_identity,
};
use runnel_ledger::netconfig::{self, CONFIG_NAMESPACE, FN_UPDATE};
use runnel_ledger::tx;
use runnel_server::proto::gateway_client::GatewayClient;
use runnel_server::proto::query_client::QueryClient;
use runnel_server::proto::{
    Endorsement, GetNetworkDefinitionRequest, SubmitRequest, Transaction, TxPhase, ValidationCode,
};
use serde_json::json;

use crate::client::runtime;
use crate::network::{CA_CERT, CA_DIR, CA_KEY};

/// `runnel identity`.
#[derive(Subcommand, Debug)]
pub enum IdentityCommand {
    /// Issue a new identity from the organisation's CA (offline: the CA's key never
    /// leaves its directory), written as identities/<org>/<name>.pem and .key.
    Issue(IssueArgs),
    /// Propose revoking a certificate: a configuration update, signed by this admin,
    /// that other admins sign (`runnel config sign`) before it is submitted.
    Revoke(RevokeArgs),
}

/// `runnel identity issue`.
#[derive(Args, Debug)]
pub struct IssueArgs {
    /// The organisation's directory (`runnel init`'s <dir>/<org>): its CA in ca/, the
    /// new identity written under identities/<org>/.
    #[arg(long, env = "RUNNEL_DIR")]
    pub dir: PathBuf,
    /// The organisation.
    #[arg(long, env = "RUNNEL_ORG", default_value = "Org1")]
    pub org: String,
    /// client, admin, peer or orderer.
    #[arg(long, default_value = "client")]
    pub role: Role,
    /// Its name: the certificate's CN and the files' name.
    #[arg(long)]
    pub name: String,
    /// The CA's directory, if not <dir>/ca.
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// How long the certificate is valid, in days.
    #[arg(long, default_value_t = 365)]
    pub validity_days: i64,
}

/// `runnel identity revoke`.
#[derive(Args, Debug)]
pub struct RevokeArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The certificate to revoke (PEM).
    #[arg(long)]
    pub cert: PathBuf,
    /// Where to write the update.
    #[arg(long)]
    pub out: PathBuf,
}

/// `runnel config`.
#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Print the network definition in force; or, given an update file, what the update
    /// changes against it, who signed it and whether the network will accept it.
    Show(ShowArgs),
    /// Propose a new network definition: an update file, signed by this admin.
    Propose(ProposeArgs),
    /// Show what an update file changes against the definition in force and who signed
    /// it, then add this organisation's admin's signature (asked on a terminal, else
    /// only with --yes).
    Sign(SignArgs),
    /// Order a signed update (as the admin who proposed it) and wait for it to commit.
    Submit(SubmitArgs),
    /// Print the genesis hash of a network definition file (network.json): sha256 of its
    /// canonical bytes, what a client pins to follow the network's configuration without
    /// trusting the node it asks (the SDK's `TrustedMembership`, the explorer's Settings).
    /// Offline: it reads the file and asks no node.
    GenesisHash(GenesisHashArgs),
}

/// `runnel config genesis-hash`.
#[derive(Args, Debug)]
pub struct GenesisHashArgs {
    /// The genesis network.json, or a directory holding it (`runnel init`'s <dir>, an
    /// organisation's or a node's directory).
    pub definition: PathBuf,
}

/// `runnel config show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// A pending update file to review instead (nothing is signed or written).
    pub update: Option<PathBuf>,
}

/// `runnel config propose`.
#[derive(Args, Debug)]
pub struct ProposeArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The new definition (JSON, the form of network.json); its sequence is set to the
    /// next one.
    #[arg(long)]
    pub definition: PathBuf,
    /// Where to write the update.
    #[arg(long)]
    pub out: PathBuf,
}

/// `runnel config sign`.
#[derive(Args, Debug)]
pub struct SignArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The update file.
    pub update: PathBuf,
    /// Sign without asking, having read the changes (`config show <file>`). Without a
    /// terminal to ask on, nothing is signed without it.
    #[arg(long)]
    pub yes: bool,
}

/// `runnel config submit`.
#[derive(Args, Debug)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The update file.
    pub update: PathBuf,
}

/// `runnel orderer ...`: the members of the ordering cluster.
#[derive(Subcommand, Debug)]
pub enum OrdererCommand {
    /// Propose adding an orderer of this admin's organisation to the Raft cluster: a
    /// configuration update, signed by this admin, that other admins sign (`runnel config
    /// sign`) before it is submitted; and the new orderer's directory in the
    /// organisation's (its keys from the org's CAs), to start once the update commits.
    Add(AddOrdererArgs),
    /// Propose removing an orderer from the Raft cluster: a configuration update, signed by
    /// this admin, that other admins sign before it is submitted.
    Remove(RemoveOrdererArgs),
}

/// `runnel orderer add`.
#[derive(Args, Debug)]
pub struct AddOrdererArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// Its name, the CN of its certificate (e.g. orderer1.Org2); its directory is the
    /// name's first part, in the organisation's directory (--dir).
    #[arg(long)]
    pub name: String,
    /// Its ordering service, `https://host:port`: it listens on that address.
    #[arg(long)]
    pub endpoint: String,
    /// Where to write the update.
    #[arg(long)]
    pub out: PathBuf,
    /// How long its certificates are valid, in days.
    #[arg(long, default_value_t = 365)]
    pub validity_days: i64,
    /// A name its TLS certificate holds besides the endpoint's host and the local ones;
    /// repeat for more.
    #[arg(long = "tls-host")]
    pub tls_hosts: Vec<String>,
}

/// `runnel orderer remove`.
#[derive(Args, Debug)]
pub struct RemoveOrdererArgs {
    #[command(flatten)]
    pub connection: Connection,
    /// The orderer's name (e.g. orderer0.Org1).
    #[arg(long)]
    pub name: String,
    /// Where to write the update.
    #[arg(long)]
    pub out: PathBuf,
}

/// `runnel orderer ...`.
pub fn orderer(command: &OrdererCommand) -> Result<()> {
    match command {
        OrdererCommand::Add(args) => add_orderer(args),
        OrdererCommand::Remove(args) => remove_orderer(args),
    }
}

/// Refuses an identity name that is not 1-64 letters, digits, `-`, `_` or `.`, or that
/// starts with `.` (a node's directory is named after its first part).
fn check_name(name: &str) -> Result<()> {
    let valid = name.len() <= 64
        && !name.starts_with('.')
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid {
        bail!("--name: 1-64 letters, digits, `-`, `_` or `.`, not starting with `.`");
    }
    Ok(())
}

/// The Raft id of the first orderer an update of sequence `sequence` adds: the sequence
/// times 2^32, plus one. Sequences only grow, so no id is ever one a removed orderer had
/// (Raft must never see a removed member come back under its old id), and the ids
/// `runnel init` gives (1, 2, ...) stay below every one.
fn added_raft_id(sequence: u64) -> Result<u64> {
    sequence
        .checked_mul(1 << 32)
        .map(|id| id | 1)
        .context("the configuration's sequence is past what Raft ids can follow")
}

fn add_orderer(args: &AddOrdererArgs) -> Result<()> {
    let org = args.connection.org.clone();
    if !(args.endpoint.starts_with("https://") || args.endpoint.starts_with("http://")) {
        bail!("--endpoint: an https://host:port URL");
    }
    check_name(&args.name)?;
    // Before the update is written: its directory must be free.
    let dir = crate::network::node_dir(&args.connection.dir, &args.name);
    if dir.exists() {
        bail!("{} exists already", dir.display());
    }
    let (next, mut report) = propose(&args.connection, &args.out, |current, sequence| {
        if current.cluster().is_empty() {
            bail!(
                "the network orders through one solo orderer, not a Raft cluster: orderers are \
                 added to a cluster (`runnel init --orderers 3`)"
            );
        }
        if current.orderers.iter().any(|o| o.name == args.name) {
            bail!("orderer {} is in the network already", args.name);
        }
        let mut next = current.clone();
        next.orderers.push(OrdererNode {
            name: args.name.clone(),
            org: org.clone(),
            endpoint: args.endpoint.clone(),
            raft_id: added_raft_id(sequence)?,
            key: String::new(),
        });
        Ok(next)
    })?;
    let orderer = next
        .orderers
        .iter()
        .find(|o| o.name == args.name)
        .context("the update adds the orderer")?;
    let dir = crate::network::add_orderer_dir(
        &args.connection.dir,
        orderer,
        &next,
        time::Duration::days(args.validity_days),
        &args.tls_hosts,
    )?;
    report["orderer"] = json!(orderer.name);
    report["raft_id"] = json!(orderer.raft_id);
    report["dir"] = json!(dir);
    report["start"] = json!(format!(
        "runnel start --dir {} (once the update commits)",
        dir.display()
    ));
    print(&report)
}

fn remove_orderer(args: &RemoveOrdererArgs) -> Result<()> {
    let (_, report) = propose(&args.connection, &args.out, |current, _| {
        if current.cluster().is_empty() {
            bail!("the network orders through one solo orderer, not a Raft cluster");
        }
        let mut next = current.clone();
        next.orderers.retain(|o| o.name != args.name);
        if next.orderers.len() == current.orderers.len() {
            bail!("no orderer {} in the network", args.name);
        }
        if next.orderers.is_empty() {
            bail!("{} is the cluster's last orderer", args.name);
        }
        Ok(next)
    })?;
    print(&report)
}

/// `runnel identity ...`.
pub fn identity(command: &IdentityCommand) -> Result<()> {
    match command {
        IdentityCommand::Issue(args) => issue(args),
        IdentityCommand::Revoke(args) => revoke(args),
    }
}

/// `runnel config ...`.
pub fn config(command: &ConfigCommand) -> Result<()> {
    match command {
        ConfigCommand::Show(ShowArgs {
            connection,
            update: Some(update),
        }) => {
            let (transaction, next) = read_update(update)?;
            let reviewed = review(connection, update, &transaction, &next)?;
            reviewed.tell();
            print(&reviewed.report)
        }
        ConfigCommand::Show(args) => runtime()?.block_on(async {
            let (definition, version) = in_force(&args.connection).await?;
            let mut shown = serde_json::to_value(&definition)?;
            shown["written_at_seq"] = json!(version);
            runnel_orderer::raft::quorum::warn_of_a_holder(&definition);
            println!("{}", serde_json::to_string_pretty(&shown)?);
            Ok(())
        }),
        ConfigCommand::Propose(args) => {
            let text = std::fs::read_to_string(&args.definition)
                .with_context(|| format!("reading {}", args.definition.display()))?;
            let next: NetworkDefinition = serde_json::from_str(&text).with_context(|| {
                format!("{} is not a network definition", args.definition.display())
            })?;
            print(&propose(&args.connection, &args.out, |_, _| Ok(next))?.1)
        }
        ConfigCommand::Sign(args) => sign(args),
        ConfigCommand::Submit(args) => submit(args),
        ConfigCommand::GenesisHash(args) => {
            println!("{}", genesis_hash(&args.definition)?);
            Ok(())
        }
    }
}

/// The genesis hash of the definition at `path` (a network.json or a directory holding
/// one), hex: sha256 of [`NetworkDefinition::to_bytes`], the bytes a node answers
/// `GetNetworkDefinition` with. Hashing the canonical bytes, not the file's, lets every
/// member's copy of network.json give the same hash whatever its layout.
fn genesis_hash(path: &Path) -> Result<String> {
    let definition = if path.is_dir() {
        NetworkDefinition::load(path)?
    } else {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        NetworkDefinition::parse(&text)
            .with_context(|| format!("{} is not a network definition", path.display()))?
    };
    if definition.sequence != 0 {
        bail!(
            "{} is a definition of sequence {}, not the genesis one (sequence 0)",
            path.display(),
            definition.sequence
        );
    }
    Ok(hex::encode(tx::sha256(&definition.to_bytes())))
}

fn issue(args: &IssueArgs) -> Result<()> {
    let ca_dir = args.ca.clone().unwrap_or_else(|| args.dir.join(CA_DIR));
    let read = |name: &str| {
        let path = ca_dir.join(name);
        std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {} (the organisation's CA: `runnel init` wrote it in <dir>/<org>/{CA_DIR})",
                path.display()
            )
        })
    };
    let ca = CertificateAuthority::from_pem(&read(CA_CERT)?, &read(CA_KEY)?)
        .context("loading the organisation's CA")?;
    if ca.org() != args.org {
        bail!(
            "the CA in {} is {}'s, not {}'s",
            ca_dir.display(),
            ca.org(),
            args.org
        );
    }
    check_name(&args.name)?;
    let identity = ca
        .issue(
            args.role,
            &args.name,
            time::Duration::days(args.validity_days),
        )
        .context("issuing the certificate")?;
    let out = args.dir.join(IDENTITIES_DIR).join(&args.org);
    write_identity(&out, &args.name, &identity)
        .with_context(|| format!("writing {}/{}.pem and .key", out.display(), args.name))?;
    let report = json!({
        "org": args.org,
        "role": args.role.as_str(),
        "name": args.name,
        "certificate": out.join(format!("{}.pem", args.name)),
        "key": out.join(format!("{}.key", args.name)),
        "fingerprint": hex::encode(tx::sha256(&identity.cert_der)),
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

fn revoke(args: &RevokeArgs) -> Result<()> {
    let pem = std::fs::read_to_string(&args.cert)
        .with_context(|| format!("reading {}", args.cert.display()))?;
    let der = certificate_der(&pem, "certificate").context("the certificate to revoke")?;
    let (_, report) = propose(&args.connection, &args.out, |current, _| {
        let msp = current.msp()?;
        let identity = msp.identify(&der).map_err(|e| {
            anyhow!(
                "{} is not a certificate of this network: {e}",
                args.cert.display()
            )
        })?;
        let mut next = current.clone();
        let org = next
            .orgs
            .iter_mut()
            .find(|org| org.name == identity.org)
            .ok_or_else(|| anyhow!("no organisation {} in the definition", identity.org))?;
        // The key, not the certificate's bytes: every certificate of the org's CA for
        // it is refused, however it is encoded.
        let entry = revocation(&identity.key);
        if org.revoked.contains(&entry) {
            bail!("{} ({}) is revoked already", identity.id(), entry);
        }
        org.revoked.push(entry.clone());
        eprintln!("revoking {} ({}), {entry}", identity.id(), identity.role);
        Ok(next)
    })?;
    print(&report)
}

/// The definition in force at the connection's node, and the seq that wrote it.
async fn in_force(connection: &Connection) -> Result<(NetworkDefinition, u64)> {
    let channel = connect(connection).await?;
    let answer = QueryClient::new(channel)
        .get_network_definition(GetNetworkDefinitionRequest::default())
        .await
        .map_err(status)?
        .into_inner();
    let definition = NetworkDefinition::from_bytes(&answer.definition)
        .context("the node's network definition")?;
    Ok((definition, answer.version))
}

/// Writes an update to `out`: the definition `change` makes of the one in force, with
/// the next sequence, proposed and signed by the connection's admin. The new definition,
/// and the report to print: the file, the sequence, who signed and what it needs.
fn propose(
    connection: &Connection,
    out: &Path,
    change: impl FnOnce(&NetworkDefinition, u64) -> Result<NetworkDefinition>,
) -> Result<(NetworkDefinition, serde_json::Value)> {
    let admin = signer(connection, Role::Admin)?;
    let (current, version) = runtime()?.block_on(in_force(connection))?;
    let mut next = change(&current, current.sequence + 1)?;
    next.sequence = current.sequence + 1;
    netconfig::check_next(&current, &next)
        .context("the network would refuse this update (BAD_CONFIG_UPDATE)")?;
    runnel_orderer::raft::quorum::warn_of_a_holder(&next);
    let proposal = tx::new_proposal(
        &current.channel,
        CONFIG_NAMESPACE,
        FN_UPDATE,
        vec![next.to_bytes()],
        &admin,
    );
    let signed = tx::sign_proposal(&admin, &proposal);
    let read_version = (version > 0).then(|| runnel_runtime::Version::from_seq(version));
    let mut update = netconfig::update_transaction(signed, read_version, &next);
    add_signature(&mut update, &admin);
    std::fs::write(out, update.encode_to_vec())
        .with_context(|| format!("writing {}", out.display()))?;
    let policy = netconfig::update_policy(&current)?;
    let report = json!({
        "update": out,
        "sequence": next.sequence,
        "signed_by": [connection.org],
        "needs": policy.to_string(),
    });
    Ok((next, report))
}

/// Prints a command's report.
fn print(report: &serde_json::Value) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(report)?);
    Ok(())
}

/// Adds `admin`'s signature over the update's payload.
fn add_signature(update: &mut Transaction, admin: &runnel_ledger::identity::Signer) {
    let message = netconfig::signing_message(update);
    update
        .endorsements
        .retain(|e| e.endorser != admin.cert_der());
    update.endorsements.push(Endorsement {
        endorser: admin.cert_der().to_vec(),
        signature: admin.sign(&message).to_vec(),
    });
}

fn read_update(path: &Path) -> Result<(Transaction, NetworkDefinition)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let update = Transaction::decode(bytes.as_slice())
        .map_err(|e| anyhow!("{} is not an update file: {e}", path.display()))?;
    let next = netconfig::proposed(&update)
        .map_err(|e| anyhow!("{} is not a well-formed update: {e}", path.display()))?;
    Ok((update, next))
}

/// What an admin reads of an update before signing it, checked against the definition
/// in force at the connection's node.
struct Review {
    /// The review as JSON: `changes`, `signatures`, `signed_by`, `meets_config_policy`,
    /// `refused` (why the network would refuse it, or null).
    report: serde_json::Value,
    /// The review as lines for a person.
    lines: Vec<String>,
    /// Why the network would refuse the update, if it would.
    refused: Option<String>,
}

impl Review {
    /// Writes the review for the person at the terminal (stderr: stdout is the report).
    fn tell(&self) {
        for line in &self.lines {
            eprintln!("{line}");
        }
    }
}

/// Reviews `update` (read from `path`, proposing `next`) against the definition in force.
fn review(
    connection: &Connection,
    path: &Path,
    update: &Transaction,
    next: &NetworkDefinition,
) -> Result<Review> {
    let (current, version) = runtime()?.block_on(in_force(connection))?;
    let changes = netconfig::changes(&current, next);
    let signatures = netconfig::check_signatures(update, &current, tx::now_seconds());
    let proposer = proposer(update, &current);
    let mut refused = netconfig::check_next(&current, next)
        .err()
        .map(|e| format!("BAD_CONFIG_UPDATE: {e}"));
    let read_version = (version > 0).then(|| runnel_runtime::Version::from_seq(version));
    if refused.is_none() && signatures.forged > 0 {
        refused = Some("BAD_ENDORSER_SIGNATURE: a signature that counts does not verify".into());
    }
    if refused.is_none() && proposed_against(update) != Some(read_version) {
        refused = Some(format!(
            "MVCC_READ_CONFLICT: it was proposed against another definition than the one \
             in force (sequence {}, written at seq {version}): propose it again",
            current.sequence
        ));
    }
    let policy = netconfig::update_policy(&current)
        .map(|p| p.to_string())
        .unwrap_or_else(|e| format!("unusable: {e}"));
    let mut lines = vec![
        format!(
            "update {}: sequence {} proposed by {proposer}",
            path.display(),
            next.sequence
        ),
        format!(
            "changes against the definition in force (sequence {}):",
            current.sequence
        ),
    ];
    lines.extend(changes.iter().map(|line| format!("  {line}")));
    lines.push(format!(
        "signatures, checked against the definition in force (config_policy {policy}):"
    ));
    lines.extend(signatures.lines.iter().map(|line| format!("  {line}")));
    lines.push(match signatures.meets_policy {
        Some(true) => "  those that count meet the config policy in force".to_string(),
        Some(false) => "  those that count do not meet the config policy in force yet".to_string(),
        None => "  the config policy in force cannot be evaluated: no update is valid".to_string(),
    });
    lines.push(match &refused {
        None => "the network will accept this update once its signatures meet the policy".into(),
        Some(why) => format!("the network will refuse this update: {why}"),
    });
    let report = json!({
        "update": path,
        "sequence": next.sequence,
        "proposed_by": proposer,
        "changes": changes,
        "signatures": signatures.lines,
        "signed_by": signatures.counted,
        "config_policy": policy,
        "meets_config_policy": signatures.meets_policy,
        "refused": refused,
    });
    Ok(Review {
        report,
        lines,
        refused,
    })
}

/// Who proposed `update`, checked against the definition in force.
fn proposer(update: &Transaction, current: &NetworkDefinition) -> String {
    let creator = update
        .proposal
        .as_ref()
        .and_then(|p| runnel_ledger::proto::Proposal::decode(p.proposal.as_slice()).ok())
        .map(|p| p.creator)
        .unwrap_or_default();
    match current.msp().and_then(|msp| msp.identify(&creator)) {
        Ok(identity) => format!("{} ({}, {})", identity.org, identity.name, identity.role),
        Err(error) => format!("a certificate the definition in force does not accept ({error})"),
    }
}

/// The version of the definition's key `update` read when it was proposed.
fn proposed_against(update: &Transaction) -> Option<Option<runnel_runtime::Version>> {
    let payload = runnel_ledger::proto::ResponsePayload::decode(update.payload.as_slice()).ok()?;
    Some(payload.rwsets.first()?.reads.first()?.version)
}

/// Asks the person at the terminal whether to sign; false without a terminal.
fn confirmed(org: &str) -> Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("sign this update as {org}'s admin? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

fn sign(args: &SignArgs) -> Result<()> {
    let (mut update, next) = read_update(&args.update)?;
    let admin = signer(&args.connection, Role::Admin)?;
    let before = review(&args.connection, &args.update, &update, &next)?;
    before.tell();
    if let Some(why) = &before.refused {
        bail!("not signed: the network would refuse this update ({why})");
    }
    if !args.yes && !confirmed(&args.connection.org)? {
        bail!(
            "not signed, nothing written: read the changes above; sign on a terminal, or \
             pass --yes"
        );
    }
    add_signature(&mut update, &admin);
    std::fs::write(&args.update, update.encode_to_vec())
        .with_context(|| format!("writing {}", args.update.display()))?;
    let signed = review(&args.connection, &args.update, &update, &next)?;
    print(&signed.report)
}

fn submit(args: &SubmitArgs) -> Result<()> {
    let (update, next) = read_update(&args.update)?;
    let admin = signer(&args.connection, Role::Admin)?;
    runtime()?.block_on(async {
        let (current, _) = in_force(&args.connection).await?;
        let signed_by = netconfig::check_signatures(&update, &current, tx::now_seconds()).counted;
        let channel = connect(&args.connection).await?;
        let signed = tx::sign_transaction(&admin, &update);
        let reached = GatewayClient::new(channel)
            .submit(SubmitRequest {
                transaction: signed.encode_to_vec(),
                wait_for: TxPhase::Committed as i32,
            })
            .await
            .map_err(status)?
            .into_inner()
            .status
            .ok_or_else(|| anyhow!("the node answered Submit without a status"))?;
        let code = ValidationCode::try_from(reached.code)
            .map(|c| {
                c.as_str_name()
                    .trim_start_matches("VALIDATION_CODE_")
                    .to_string()
            })
            .unwrap_or_default();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "tx_id": reached.tx_id,
                "seq": reached.seq,
                "code": code,
                "sequence": next.sequence,
                "signed_by": signed_by,
            }))?
        );
        if reached.code != ValidationCode::Valid as i32 {
            // The definition in force is still the one the update was checked against.
            let reason = netconfig::check_next(&current, &next)
                .err()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            bail!("the update is invalid: {code}{reason}");
        }
        Ok(())
    })
}
