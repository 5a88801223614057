//! Contracts' lifecycle as a ledger sees it: the definitions in force and the approvals
//! recorded, and deploying or upgrading a contract with the admin keys this process holds.

use prost::Message;
use runnel_runtime::VersionedValue;

use super::{Committed, Ledger, LedgerError};
use crate::identity::{Role, Signer};
use crate::lifecycle::{self, FN_APPROVE, FN_DEPLOY, FN_UPGRADE, LIFECYCLE_NAMESPACE};
use crate::policy::{Endorser as PolicyEndorser, Policy};
use crate::proto::{ContractDefinition, DeployRequest};
use crate::tx;

/// A ledger's contract lifecycle ([`Ledger::lifecycle`]).
#[derive(Clone, Copy)]
pub struct Lifecycle<'a> {
    pub(super) ledger: &'a Ledger,
}

impl Lifecycle<'_> {
    /// Up to `limit` contract definitions in force, by name, after `start_after`.
    pub fn contracts(
        &self,
        start_after: &str,
        limit: usize,
    ) -> Result<Vec<ContractDefinition>, LedgerError> {
        let start = if start_after.is_empty() {
            lifecycle::DEFINITION_PREFIX.to_vec()
        } else {
            // The first key after `start_after`'s.
            let mut key = lifecycle::definition_key(start_after);
            key.push(0);
            key
        };
        self.scan(&start, lifecycle::DEFINITION_PREFIX, limit)?
            .into_iter()
            .map(|(key, stored)| {
                ContractDefinition::decode(stored.value.as_slice()).map_err(|e| {
                    LedgerError::BadResult(format!(
                        "stored definition {}: {e}",
                        String::from_utf8_lossy(&key)
                    ))
                })
            })
            .collect()
    }

    /// Contract `name`'s approvals recorded on the ledger, `(sequence, org, definition
    /// hash)` by sequence then org, at most `limit`.
    pub fn approvals(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<Vec<(u64, String, Vec<u8>)>, LedgerError> {
        let prefix = lifecycle::approvals_prefix(name);
        Ok(self
            .scan(&prefix, &prefix, limit)?
            .into_iter()
            .filter_map(|(key, stored)| {
                let (_, sequence, org) = lifecycle::parse_approval_key(&key)?;
                Some((sequence, org.to_string(), stored.value))
            })
            .collect())
    }

    /// Up to `limit` of `_lifecycle`'s entries from key `start` on whose keys begin with
    /// `prefix`, as of the state now.
    fn scan(
        &self,
        start: &[u8],
        prefix: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, VersionedValue)>, LedgerError> {
        // The first key past every key that begins with `prefix` (whose last byte, a
        // `/`, is never 0xff).
        let mut end = prefix.to_vec();
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        Ok(self
            .ledger
            .world
            .snapshot()
            .scan(LIFECYCLE_NAMESPACE, start, Some(&end), limit)?)
    }

    /// The definition of `name` in force, if deployed.
    pub fn definition(&self, name: &str) -> Result<Option<ContractDefinition>, LedgerError> {
        let snapshot = self.ledger.world.snapshot();
        lifecycle::read_definition(&*snapshot.view(LIFECYCLE_NAMESPACE), name)
            .map(|found| found.map(|(definition, _)| definition))
            .map_err(|e| LedgerError::BadResult(e.to_string()))
    }

    /// Deploys a contract (`policy` empty: a majority of the organisations' peers),
    /// endorsed by as many organisations' admins as the lifecycle policy needs.
    pub fn deploy(
        &self,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        self.define(FN_DEPLOY, name, version, code, policy)
    }

    /// Upgrades a deployed contract to new code, version and policy.
    pub fn upgrade(
        &self,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        self.define(FN_UPGRADE, name, version, code, policy)
    }

    /// Approves the definition for as many organisations as the lifecycle policy needs,
    /// each approval a transaction signed by that organisation's admin, then commits it
    /// as the first organisation's admin (whose commit is its own organisation's
    /// approval). Only a ledger holding those admins' keys can: one process standing
    /// for every organisation, or a one-organisation network.
    fn define(
        &self,
        function: &str,
        name: &str,
        version: &str,
        code: &[u8],
        policy: &str,
    ) -> Result<ContractDefinition, LedgerError> {
        let request = DeployRequest {
            name: name.to_string(),
            version: version.to_string(),
            policy: policy.to_string(),
            code: code.to_vec(),
            ..DeployRequest::default()
        };
        let network = self.ledger.reader().network()?;
        let orgs = network.org_names();
        let approvals = Policy::parse(&network.lifecycle_policy, &orgs)
            .map_err(|e| LedgerError::Policy(e.to_string()))?;
        let first = &self.ledger.local.orgs[0];
        let committer = first.admin.as_ref().ok_or_else(|| {
            LedgerError::Identity(format!(
                "this node holds no admin key of {}: an organisation's admin approves and \
                 commits contract definitions",
                first.name
            ))
        })?;
        let mut approving = vec![PolicyEndorser::new(
            self.ledger.local.orgs[0].name.clone(),
            Role::Admin,
        )];
        for org in &self.ledger.local.orgs[1..] {
            if approvals.is_satisfied_by(&approving) {
                break;
            }
            let Some(approver) = org.admin.as_ref() else {
                continue;
            };
            self.lifecycle_call(approver, FN_APPROVE, &request)?;
            approving.push(PolicyEndorser::new(org.name.clone(), Role::Admin));
        }
        let committed = self.lifecycle_call(committer, function, &request)?;
        ContractDefinition::decode(committed.result.as_slice())
            .map_err(|e| LedgerError::BadResult(format!("contract definition: {e}")))
    }

    /// Runs `_lifecycle.function(request)` as a transaction signed by `admin`.
    fn lifecycle_call(
        &self,
        admin: &Signer,
        function: &str,
        request: &DeployRequest,
    ) -> Result<Committed, LedgerError> {
        let proposal = tx::new_proposal(
            &self.ledger.channel,
            LIFECYCLE_NAMESPACE,
            function,
            vec![request.encode_to_vec()],
            admin,
        );
        let signed = self.ledger.sign_own_proposal(admin, &proposal);
        self.ledger.run(admin, &signed)
    }
}
