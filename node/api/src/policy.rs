//! Endorsement policies: which organisations' signatures a transaction needs.
//!
//! The language is Hyperledger Fabric's signature-policy syntax, so a Fabric developer can
//! reuse the strings they know:
//!
//! ```text
//! policy    := principal | gate | shorthand
//! principal := "'" org "." role "'"          'Org1.peer', 'Org2.member'
//! gate      := AND "(" policy ("," policy)* ")"
//!            | OR "(" policy ("," policy)* ")"
//!            | OutOf "(" n ("," policy)+ ")"
//! shorthand := MAJORITY [role] | ANY [role]
//! ```
//!
//! - An org name is letters, digits, `-` and `_`, matched exactly against the network's
//!   orgs. A role is `client`, `peer`, `orderer`, `admin`, or `member` (any role of that
//!   org); roles, gate names and shorthands are case-insensitive.
//! - `OutOf(n, p1, ..., pk)` needs any `n` (a decimal number) of the `k` sub-policies,
//!   `1 <= n <= k`. `AND` needs all of them, `OR` one.
//! - The shorthands expand against the network's org list, one principal per org, the
//!   role defaulting to `peer`: `MAJORITY admin` (the default lifecycle policy) is
//!   `OutOf(floor(k/2)+1, 'Org1.admin', ..., 'Orgk.admin')`, `ANY` is `OutOf(1, ...)`.
//! - Whitespace (spaces, tabs, newlines) may appear between any two tokens.
//!
//! ```text
//! AND('Org1.member', OR('Org2.peer', 'Org3.peer'))
//! OutOf(2, 'Org1.member', 'Org2.member', 'Org3.member')
//! MAJORITY admin
//! ```
//!
//! [`Policy::parse`] checks the text against every limit below and answers a
//! [`PolicyError`] that points at the offending column. [`Policy`]'s `Display` is a
//! canonical form that parses back to the same policy.
//!
//! Evaluation follows Fabric's rule that one endorser satisfies at most one principal in
//! the whole policy (so `AND('Org1.peer', 'Org1.peer')` needs two Org1 peers), and is
//! exact where Fabric's evaluator is greedy: see [`Policy::evaluate`].

mod error;
mod eval;
mod parse;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use crate::identity::Role;

pub use error::{PolicyError, PolicyErrorKind};
pub use eval::{Assignment, EVAL_STEPS_MAX, Evaluation};

/// Longest policy text accepted, in bytes.
pub const POLICY_TEXT_BYTES_MAX: usize = 4096;

/// Deepest nesting of gates (`AND`, `OR`, `OutOf`, and shorthands, which expand to
/// `OutOf`) accepted. Bounds the parser's recursion.
pub const POLICY_DEPTH_MAX: usize = 16;

/// Most principals a policy may hold, counting each org of an expanded shorthand. Bounds
/// the evaluator's search, and so the most endorsers a policy can ever use.
pub const POLICY_PRINCIPALS_MAX: usize = 64;

/// Most endorsers of one org and role that evaluation counts; further ones are ignored.
/// A policy has at most [`POLICY_PRINCIPALS_MAX`] principals, so it can never use more
/// than this many endorsers of one kind: the cap changes no answer, and keeps the
/// search's counts small however many endorsers the caller passes (they are read once).
pub const ENDORSERS_MAX: usize = 64;

/// The role part of a principal: a specific role, or any role of the org.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleMatch {
    /// Any identity of the org (`'Org1.member'`).
    Member,
    /// Only identities holding this role (`'Org1.peer'`).
    Role(Role),
}

impl RoleMatch {
    /// The name in policies: `member` or the role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleMatch::Member => "member",
            RoleMatch::Role(role) => role.as_str(),
        }
    }

    /// Whether an identity with `role` matches.
    pub fn matches(self, role: Role) -> bool {
        match self {
            RoleMatch::Member => true,
            RoleMatch::Role(wanted) => wanted == role,
        }
    }
}

impl fmt::Display for RoleMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RoleMatch {
    type Err = crate::identity::UnknownRole;

    /// `member` or a role name, case-insensitive.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("member") {
            return Ok(RoleMatch::Member);
        }
        s.parse().map(RoleMatch::Role)
    }
}

/// Who must sign: an org and a role within it (`'Org1.peer'`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    /// The org, as named in the network's org list.
    pub org: String,
    /// The role wanted.
    pub role: RoleMatch,
}

impl Principal {
    /// Whether `endorser` can satisfy this principal.
    pub fn matches(&self, endorser: &Endorser) -> bool {
        self.org == endorser.org && self.role.matches(endorser.role)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}.{}'", self.org, self.role)
    }
}

/// A policy's syntax tree, with shorthands expanded. Sub-policies keep the order they
/// were written in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expr {
    /// One signature from this principal.
    Principal(Principal),
    /// Every sub-policy.
    And(Vec<Expr>),
    /// At least one sub-policy.
    Or(Vec<Expr>),
    /// At least `n` of the sub-policies.
    OutOf {
        /// How many sub-policies must be satisfied.
        n: usize,
        /// The sub-policies.
        of: Vec<Expr>,
    },
}

impl Expr {
    /// Calls `visit` on every principal, in the order they are written.
    pub fn for_each_principal<'a>(&'a self, visit: &mut impl FnMut(&'a Principal)) {
        match self {
            Expr::Principal(principal) => visit(principal),
            Expr::And(of) | Expr::Or(of) | Expr::OutOf { of, .. } => {
                for sub in of {
                    sub.for_each_principal(visit);
                }
            }
        }
    }
}

/// Renders the canonical form: `AND`, `OR`, `OutOf`, lowercase roles, `", "` between
/// arguments.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, n, of) = match self {
            Expr::Principal(principal) => return principal.fmt(f),
            Expr::And(of) => ("AND", None, of),
            Expr::Or(of) => ("OR", None, of),
            Expr::OutOf { n, of } => ("OutOf", Some(*n), of),
        };
        write!(f, "{name}(")?;
        let mut separator = "";
        if let Some(n) = n {
            write!(f, "{n}")?;
            separator = ", ";
        }
        for sub in of {
            write!(f, "{separator}{sub}")?;
            separator = ", ";
        }
        f.write_str(")")
    }
}

/// A verified, distinct signer of a transaction, as evaluation sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endorser {
    /// The signer's org.
    pub org: String,
    /// The signer's role.
    pub role: Role,
}

impl Endorser {
    /// An endorser of `org` with `role`.
    pub fn new(org: impl Into<String>, role: Role) -> Self {
        Endorser {
            org: org.into(),
            role,
        }
    }
}

/// A parsed endorsement policy, within every limit of this module.
///
/// Only [`Policy::parse`] makes one, so a `Policy` always has `1 <= n <= k` in every
/// `OutOf`, no empty gate, at most [`POLICY_PRINCIPALS_MAX`] principals and at most
/// [`POLICY_DEPTH_MAX`] levels of gates.
#[derive(Debug, Clone)]
pub struct Policy {
    expr: Expr,
    /// `expr` compiled for evaluation, once.
    tree: eval::Tree,
}

impl PartialEq for Policy {
    fn eq(&self, other: &Self) -> bool {
        self.expr == other.expr
    }
}

impl Eq for Policy {}

impl Hash for Policy {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.expr.hash(state);
    }
}

impl Policy {
    /// Parses `text`; `orgs` is the network's org list, which principals must name and
    /// shorthands expand against (in its order, duplicates ignored).
    pub fn parse(text: &str, orgs: &[String]) -> Result<Policy, PolicyError> {
        let expr = parse::parse(text, orgs)?;
        let tree = eval::Tree::new(&expr);
        Ok(Policy { expr, tree })
    }

    /// The syntax tree.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Every principal, in the order they are written; [`Assignment::principal`] indexes
    /// this list.
    pub fn principals(&self) -> Vec<&Principal> {
        let mut principals = Vec::new();
        self.expr.for_each_principal(&mut |p| principals.push(p));
        principals
    }

    /// Whether `endorsers` (verified, distinct signers) satisfy the policy. See
    /// [`Policy::evaluate`]; an evaluation that runs out of steps counts as unsatisfied.
    pub fn is_satisfied_by(&self, endorsers: &[Endorser]) -> bool {
        self.evaluate(endorsers).is_satisfied()
    }

    /// Decides whether `endorsers` (verified, distinct signers) satisfy the policy, each
    /// endorser standing for at most one principal, and if so which endorser stands for
    /// which principal.
    ///
    /// The answer is exact, where Fabric's evaluator hands each signature to the first
    /// principal it matches and can miss an assignment that exists. It comes from a
    /// backtracking search over which principals to satisfy: endorsers of the same org
    /// and role are interchangeable, so whether chosen principals can have distinct
    /// endorsers is a count per org and role. The search prunes with a lower bound on the
    /// endorsers each gate still needs, skips principals that cannot help, tries
    /// identical sibling principals in one order only, and remembers failed states.
    /// Policies people write finish in tens of steps; a contrived one that reaches
    /// [`EVAL_STEPS_MAX`] answers [`Evaluation::StepsExhausted`], which counts as
    /// unsatisfied. At most [`ENDORSERS_MAX`] endorsers of any one org and role count.
    /// Whether the policy is satisfied never depends on the endorsers' order.
    pub fn evaluate(&self, endorsers: &[Endorser]) -> Evaluation {
        eval::evaluate(&self.tree, endorsers)
    }

    /// The fewest organisations of `candidates` whose peers, one endorsement each,
    /// satisfy the policy together with `have`: of the smallest sets that do, the one
    /// earliest in `candidates`' order (so a gateway lists its preferred orgs first).
    /// `None` when even all of them do not. Over [`PLAN_EXACT_ORGS_MAX`] candidates, orgs
    /// are added in order until the policy is met, which may ask more than the fewest.
    pub fn orgs_to_ask(&self, have: &[Endorser], candidates: &[String]) -> Option<Vec<String>> {
        let satisfied = |orgs: &[&String]| {
            let mut endorsers = have.to_vec();
            endorsers.extend(orgs.iter().map(|org| Endorser::new(*org, Role::Peer)));
            self.is_satisfied_by(&endorsers)
        };
        if satisfied(&[]) {
            return Some(Vec::new());
        }
        let n = candidates.len();
        if n > PLAN_EXACT_ORGS_MAX {
            let all: Vec<&String> = candidates.iter().collect();
            return (1..=n)
                .find(|&k| satisfied(&all[..k]))
                .map(|k| candidates[..k].to_vec());
        }
        for size in 1..=n {
            // Combinations of `size` indices in lexicographic order.
            let mut picked: Vec<usize> = (0..size).collect();
            loop {
                let orgs: Vec<&String> = picked.iter().map(|&i| &candidates[i]).collect();
                if satisfied(&orgs) {
                    return Some(orgs.into_iter().cloned().collect());
                }
                let Some(at) = (0..size).rev().find(|&i| picked[i] < n - size + i) else {
                    break;
                };
                picked[at] += 1;
                for i in at + 1..size {
                    picked[i] = picked[i - 1] + 1;
                }
            }
        }
        None
    }
}

/// Most candidate organisations [`Policy::orgs_to_ask`] searches exhaustively (2^n sets).
pub const PLAN_EXACT_ORGS_MAX: usize = 12;

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)
    }
}
