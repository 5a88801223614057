//! Configuration updates against a `runnel up` network, each node a process of its own:
//! an admin reads every change an update makes before signing it (a revocation cannot
//! hide a change of policies), and an update that would leave the network with a policy
//! it cannot evaluate is refused as `BAD_CONFIG_UPDATE` while every peer keeps serving.

use std::path::Path;

use prost::Message;
use runnel_ledger::identity::{NetworkDefinition, Role};
use runnel_ledger::netconfig::{self, CONFIG_NAMESPACE, FN_UPDATE};
use runnel_ledger::tx;
use runnel_server::proto::{Endorsement, Transaction};
use serde_json::Value;

use crate::orgs::Network;
use crate::raft_cluster::ops_get;

const PEERS: [&str; 2] = ["Org1/peer0", "Org2/peer0"];

/// The definition in force, as `config show` prints it, and the version of its key.
fn in_force(net: &Network) -> (NetworkDefinition, Option<runnel_runtime::Version>) {
    let mut shown = net.json("Org1/peer0", "Org1", &["config", "show"]);
    let seq = shown["written_at_seq"].as_u64().unwrap();
    shown.as_object_mut().unwrap().remove("written_at_seq");
    let definition = serde_json::from_value(shown).unwrap();
    (
        definition,
        (seq > 0).then(|| runnel_runtime::Version::from_seq(seq)),
    )
}

/// `org`'s admin, from its organisation's directory.
fn admin(net: &Network, org: &str) -> runnel_ledger::identity::Signer {
    let connection =
        runnel_client::Connection::to(&net.url(&format!("{org}/peer0")), &net.dir.join(org), org);
    runnel_client::signer(&connection, Role::Admin).unwrap()
}

/// Writes to `path` an update file from the definition in force to `next`, proposed by
/// Org1's admin and signed by the admins of `signers`, made the way `config propose`
/// makes one but without its checks: what a careless or hostile proposer can send.
fn update_file(net: &Network, path: &Path, next: &NetworkDefinition, signers: &[&str]) {
    let (_, version) = in_force(net);
    let proposer = admin(net, "Org1");
    let proposal = tx::new_proposal(
        &next.channel,
        CONFIG_NAMESPACE,
        FN_UPDATE,
        vec![next.to_bytes()],
        &proposer,
    );
    let mut update =
        netconfig::update_transaction(tx::sign_proposal(&proposer, &proposal), version, next);
    let message = tx::endorsement_message(
        &tx::sha256(&update.proposal.as_ref().unwrap().proposal),
        &tx::sha256(&update.payload),
    );
    for org in signers {
        let signer = admin(net, org);
        update.endorsements.push(Endorsement {
            endorser: signer.cert_der().to_vec(),
            signature: signer.sign(&message).to_vec(),
        });
    }
    std::fs::write(path, update.encode_to_vec()).unwrap();
}

/// The lines of a review (`config show <file>` or `config sign`'s report) as strings.
fn lines(report: &Value, field: &str) -> Vec<String> {
    report[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {report}"))
        .iter()
        .map(|line| line.as_str().unwrap().to_string())
        .collect()
}

/// [`Network::run`] that must fail: its output and error output.
fn refused(net: &Network, node: &str, org: &str, args: &[&str]) -> String {
    let output = net.run(node, org, args);
    assert!(!output.status.success(), "{args:?} at {node} succeeded");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `runnel config sign <update>` as `org`'s admin on a terminal (`script` gives it one),
/// typing `answer`.
fn on_terminal(net: &Network, org: &str, update: &str, answer: &str) -> std::process::Output {
    use std::io::Write;
    let command = format!(
        "'{}' config sign --url '{}' --dir '{}' --org {org} '{update}'",
        crate::process::RUNNEL,
        net.url(&format!("{org}/peer0")),
        net.dir.join(org).display(),
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script`, to give the command a terminal");
    // The typing end stays open until the command ends: `script` passes an end of input
    // on to the terminal, which could come before the question is read.
    let mut typing = child.stdin.take().unwrap();
    typing.write_all(answer.as_bytes()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "config sign did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(typing);
    child.wait_with_output().unwrap()
}

fn healthy(net: &Network) {
    for peer in PEERS {
        assert_eq!(
            ops_get(net, peer, "/healthz").0,
            200,
            "{peer} is not healthy"
        );
    }
}

#[test]
fn config_sign_shows_a_disguised_policy_change_before_signing_and_needs_yes() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();
    // Org1's admin proposes "a routine revocation" of its client alice that also sets
    // both policies to Org1's admin alone.
    let people = net.dir.join("Org1");
    let issued = std::process::Command::new(crate::process::RUNNEL)
        .args(["identity", "issue", "--dir", people.to_str().unwrap()])
        .args(["--org", "Org1", "--name", "alice"])
        .output()
        .unwrap();
    assert!(issued.status.success(), "{issued:?}");
    let cert = people.join("identities/Org1/alice.pem");
    let revocation = net.dir.join("revoke-alice.update");
    net.json(
        "Org1/peer0",
        "Org1",
        &[
            "identity",
            "revoke",
            "--cert",
            cert.to_str().unwrap(),
            "--out",
            revocation.to_str().unwrap(),
        ],
    );
    let revoking = Transaction::decode(std::fs::read(&revocation).unwrap().as_slice()).unwrap();
    let mut disguised = netconfig::proposed(&revoking).unwrap();
    disguised.config_policy = "'Org1.admin'".into();
    disguised.lifecycle_policy = "'Org1.admin'".into();
    let update = net.propose("disguised", &disguised);
    let update = update.as_str();
    let proposed = std::fs::read(update).unwrap();

    // Org2's admin, with no terminal and no --yes: shown every change, nothing signed.
    let refused = net.fails("Org2/peer0", "Org2", &["config", "sign", update]);
    for change in [
        "config_policy: \"MAJORITY admin\" -> \"'Org1.admin'\"",
        "lifecycle_policy: \"MAJORITY admin\" -> \"'Org1.admin'\"",
        "org Org1 revokes ",
        "Org1 (admin.Org1, admin): signature verifies, counts",
        "not signed, nothing written",
    ] {
        assert!(refused.contains(change), "{change} not in:\n{refused}");
    }
    assert!(
        refused.find("config_policy").unwrap() < refused.find("not signed").unwrap(),
        "{refused}"
    );
    assert_eq!(std::fs::read(update).unwrap(), proposed, "the file changed");

    // `config show <file>` reviews the same, signatures checked against the definition
    // in force: Org1's alone does not meet its majority.
    let review = net.json("Org2/peer0", "Org2", &["config", "show", update]);
    let changes = lines(&review, "changes");
    assert!(
        changes.contains(&"config_policy: \"MAJORITY admin\" -> \"'Org1.admin'\"".to_string()),
        "{review}"
    );
    assert_eq!(
        review["signed_by"],
        serde_json::json!(["Org1 (admin.Org1)"])
    );
    assert_eq!(review["meets_config_policy"], false, "{review}");
    assert_eq!(review["refused"], Value::Null, "{review}");

    // On a terminal it asks: "n" signs nothing, "y" signs.
    let no = on_terminal(&net, "Org2", update, "n\n");
    assert!(!no.status.success(), "{no:?}");
    let asked = String::from_utf8_lossy(&no.stdout);
    assert!(
        asked.contains("sign this update as Org2's admin? [y/N]"),
        "{asked}"
    );
    assert!(
        asked.contains("lifecycle_policy: \"MAJORITY admin\" -> \"'Org1.admin'\""),
        "{asked}"
    );
    assert_eq!(std::fs::read(update).unwrap(), proposed, "the file changed");
    let yes = on_terminal(&net, "Org2", update, "y\n");
    assert!(yes.status.success(), "{yes:?}");
    assert_ne!(std::fs::read(update).unwrap(), proposed, "not signed");

    // Having read it, an admin who means it signs with --yes (again: its signature is
    // replaced, and counts once).
    let signed = net.json("Org2/peer0", "Org2", &["config", "sign", update, "--yes"]);
    assert_eq!(signed["signed_by"].as_array().unwrap().len(), 2, "{signed}");
    assert_eq!(signed["meets_config_policy"], true, "{signed}");
}

#[test]
fn updates_the_network_must_refuse_are_bad_config_update_and_peers_keep_serving() {
    let mut net = Network::init_with("Org1,Org2", 1, 1);
    net.up();
    let update = net.dir.join("bad.update");
    let update_path = update.to_str().unwrap();

    // The live finding: lifecycle_policy 'Org9.admin', signed by both admins.
    // `config sign` will not sign it; ordered all the same, it is BAD_CONFIG_UPDATE.
    let (current, _) = in_force(&net);
    let mut next = current.clone();
    next.sequence += 1;
    next.lifecycle_policy = "'Org9.admin'".into();
    update_file(&net, &update, &next, &["Org1"]);
    let refusal = refused(
        &net,
        "Org2/peer0",
        "Org2",
        &["config", "sign", update_path, "--yes"],
    );
    assert!(refusal.contains("BAD_CONFIG_UPDATE"), "{refusal}");
    assert!(refusal.contains("Org9"), "{refusal}");
    update_file(&net, &update, &next, &["Org1", "Org2"]);
    let refusal = refused(
        &net,
        "Org1/peer0",
        "Org1",
        &["config", "submit", update_path],
    );
    assert!(refusal.contains("BAD_CONFIG_UPDATE"), "{refusal}");
    assert!(refusal.contains("lifecycle_policy"), "{refusal}");
    healthy(&net);

    // An honest route to the same end: a policy names Org2 explicitly, and an update
    // removes Org2 without changing it.
    let mut named = current.clone();
    named.sequence += 1;
    named.lifecycle_policy = "AND('Org1.admin', 'Org2.admin')".into();
    update_file(&net, &update, &named, &["Org1", "Org2"]);
    let applied = net.json("Org1/peer0", "Org1", &["config", "submit", update_path]);
    assert_eq!(applied["code"], "VALID", "{applied}");
    let (current, _) = in_force(&net);
    let mut without = current.clone();
    without.sequence += 1;
    without.orgs.retain(|org| org.name != "Org2");
    update_file(&net, &update, &without, &["Org1", "Org2"]);
    let refusal = refused(
        &net,
        "Org1/peer0",
        "Org1",
        &["config", "submit", update_path],
    );
    assert!(refusal.contains("BAD_CONFIG_UPDATE"), "{refusal}");
    assert!(refusal.contains("removes organisation `Org2`"), "{refusal}");

    // Both peers keep serving, and the lifecycle goes on: an approval commits.
    healthy(&net);
    let kv = runnel_wasm_build::wasm_path("kv");
    let approved = net.json(
        "Org2/peer0",
        "Org2",
        &["approve", "kv2", kv.to_str().unwrap()],
    );
    assert_eq!(approved["code"], "VALID", "{approved}");
    healthy(&net);
    let shown = net.json("Org2/peer0", "Org2", &["config", "show"]);
    assert_eq!(shown["sequence"], 1, "{shown}");
    assert_eq!(shown["orgs"].as_array().unwrap().len(), 2);

    // And after both peers restart (replaying past the refused updates).
    for peer in PEERS {
        net.stop(peer);
    }
    let again = std::process::Command::new(crate::process::RUNNEL)
        .args(["up", "--dir", net.dir.to_str().unwrap(), "--no-examples"])
        .env("RUNNEL_LOG", "warn")
        .output()
        .unwrap();
    assert!(again.status.success(), "runnel up again: {again:?}");
    healthy(&net);
    let approved = net.json(
        "Org1/peer0",
        "Org1",
        &["approve", "kv3", kv.to_str().unwrap()],
    );
    assert_eq!(approved["code"], "VALID", "{approved}");
}
