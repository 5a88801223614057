//! Exact evaluation: does a set of endorsers satisfy a policy, one principal per endorser?
//!
//! Endorsers of the same org and role are interchangeable, so the search never picks an
//! endorser for a principal. It decides, principal by principal, which ones to satisfy,
//! and keeps per org the count of principals taken: a set of principals can be given
//! distinct endorsers exactly when, in every org, each specific role has no more
//! principals than endorsers of that role, and the org has no more principals (`member`
//! ones included) than endorsers. That is Hall's condition for this bipartite graph:
//! role principals only compete with their own role, `member` ones take what is left.
//!
//! Pruning, each step: every node's cost (the fewest principals still to take before it
//! is satisfied) bounds what is left; a principal under a gate that is already satisfied,
//! or that needs more endorsers than remain, is not taken; identical sibling principals
//! are taken in order only; a state that failed once is remembered.
//!
//! Costs (64-principal policies, optimised build): a step re-evaluates every node, about
//! 1-2 µs; random policies over 3 to 32 orgs need at most ~1,500 steps, typical ones tens.
//! [`EVAL_STEPS_MAX`] bounds the worst case at ~20 ms and ~1 MB. The policy is compiled
//! for search once, when parsed.

use std::collections::HashSet;

use super::{ENDORSERS_MAX, Endorser, Expr, POLICY_DEPTH_MAX, POLICY_PRINCIPALS_MAX, RoleMatch};
use crate::identity::Role;

/// Most search steps one evaluation takes. Reached only by contrived policies (puzzles of
/// overlapping gates competing for a few endorsers); the evaluation then answers
/// [`Evaluation::StepsExhausted`]. Deterministic: every node counts the same steps for
/// the same policy and endorsers, in any order.
pub const EVAL_STEPS_MAX: usize = 10_000;

/// Longest state key: the leaf, a count per gate above it, the twin flag, a count per
/// slot (at most one slot per principal).
const KEY_BYTES_MAX: usize = 1 + POLICY_DEPTH_MAX + 1 + POLICY_PRINCIPALS_MAX;

/// A node's cost when it can no longer be satisfied.
const UNREACHABLE: usize = usize::MAX;

/// The outcome of [`Policy::evaluate`](super::Policy::evaluate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluation {
    /// Satisfied; one way to do it, by principal in written order. Principals not listed
    /// are not needed.
    Satisfied(Vec<Assignment>),
    /// No assignment of distinct endorsers satisfies the policy.
    Unsatisfied,
    /// The search reached [`EVAL_STEPS_MAX`] without finding an assignment; treated as
    /// unsatisfied.
    StepsExhausted,
}

impl Evaluation {
    /// Whether the policy is satisfied.
    pub fn is_satisfied(&self) -> bool {
        matches!(self, Evaluation::Satisfied(_))
    }
}

/// One endorser standing for one principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Assignment {
    /// Index into [`Policy::principals`](super::Policy::principals).
    pub principal: usize,
    /// Index into the endorsers evaluated.
    pub endorser: usize,
}

/// Evaluates the compiled policy `tree`.
pub(super) fn evaluate(tree: &Tree, endorsers: &[Endorser]) -> Evaluation {
    evaluate_within(tree, endorsers, EVAL_STEPS_MAX)
}

fn evaluate_within(tree: &Tree, endorsers: &[Endorser], steps_max: usize) -> Evaluation {
    let mut search = Search::new(tree, endorsers, steps_max);
    match search.run(0) {
        Outcome::Found => Evaluation::Satisfied(search.assignment(endorsers)),
        Outcome::Failed => Evaluation::Unsatisfied,
        Outcome::Exhausted => Evaluation::StepsExhausted,
    }
}

fn role_index(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Peer => 1,
        Role::Orderer => 2,
        Role::Admin => 3,
    }
}

/// A principal as the search sees it: an org (index into [`Tree::orgs`]) and a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    org: usize,
    role: RoleMatch,
}

#[derive(Debug, Clone)]
enum Node {
    /// Index into [`Tree::leaves`].
    Leaf(usize),
    /// Satisfied when `need` children are.
    Gate { need: usize, children: Vec<usize> },
}

#[derive(Debug, Clone)]
struct Leaf {
    /// Index into [`Tree::slots`].
    slot: usize,
    /// Index among the principals in written order.
    written: usize,
    /// The previous leaf is an identical sibling: this one may be taken only if that one
    /// is (any solution can swap the two, so the search tries one order only).
    twin_of_previous: bool,
    /// The gates above, root first, with the position of the child leading here.
    path: Vec<(usize, usize)>,
}

/// A policy compiled for search: gates with `need` counts, children sorted so identical
/// siblings are adjacent, nodes in preorder (children after their parent).
#[derive(Debug, Clone)]
pub(super) struct Tree {
    nodes: Vec<Node>,
    leaves: Vec<Leaf>,
    slots: Vec<Slot>,
    /// The orgs named in the policy, sorted.
    orgs: Vec<String>,
}

impl Tree {
    /// Compiles `expr`, a tree [`Policy::parse`](super::Policy::parse) accepted.
    pub(super) fn new(expr: &Expr) -> Self {
        let mut orgs = Vec::new();
        expr.for_each_principal(&mut |p| orgs.push(p.org.clone()));
        // A `Policy` holds at most this many principals; the search's byte-sized counts
        // rely on it.
        assert!(
            orgs.len() <= POLICY_PRINCIPALS_MAX,
            "policy over the principal limit"
        );
        orgs.sort_unstable();
        orgs.dedup();
        let mut tree = Tree {
            nodes: Vec::new(),
            leaves: Vec::new(),
            slots: Vec::new(),
            orgs,
        };
        tree.add(expr, 0, &mut Vec::new());
        tree
    }

    fn org_index(&self, org: &str) -> Option<usize> {
        self.orgs.binary_search_by(|o| o.as_str().cmp(org)).ok()
    }

    /// Adds `expr`, whose first principal is `written`-th in written order, below the
    /// gates in `path`; returns its node.
    fn add(&mut self, expr: &Expr, written: usize, path: &mut Vec<(usize, usize)>) -> usize {
        let node = self.nodes.len();
        let (need, of) = match expr {
            Expr::Principal(principal) => {
                let Some(org) = self.org_index(&principal.org) else {
                    unreachable!("orgs holds every principal's org");
                };
                let slot = Slot {
                    org,
                    role: principal.role,
                };
                let slot = match self.slots.iter().position(|s| *s == slot) {
                    Some(index) => index,
                    None => {
                        self.slots.push(slot);
                        self.slots.len() - 1
                    }
                };
                let twin_of_previous = match path.last() {
                    Some(&(parent, position)) if position > 0 => match &self.nodes[parent] {
                        Node::Gate { children, .. } => matches!(
                            self.nodes[children[position - 1]],
                            Node::Leaf(previous) if self.leaves[previous].slot == slot
                        ),
                        Node::Leaf(_) => false,
                    },
                    _ => false,
                };
                self.nodes.push(Node::Leaf(self.leaves.len()));
                self.leaves.push(Leaf {
                    slot,
                    written,
                    twin_of_previous,
                    path: path.clone(),
                });
                return node;
            }
            Expr::And(of) => (of.len(), of),
            Expr::Or(of) => (1, of),
            Expr::OutOf { n, of } => (*n, of),
        };
        self.nodes.push(Node::Gate {
            need,
            children: Vec::with_capacity(of.len()),
        });
        // Each child with the written index of its first principal, in canonical order.
        let mut children = Vec::with_capacity(of.len());
        let mut first = written;
        for sub in of {
            children.push((sub, first));
            sub.for_each_principal(&mut |_| first += 1);
        }
        children.sort_by(|a, b| a.0.cmp(b.0));
        for (position, (sub, first)) in children.into_iter().enumerate() {
            path.push((node, position));
            let child = self.add(sub, first, path);
            path.pop();
            if let Node::Gate { children, .. } = &mut self.nodes[node] {
                children.push(child);
            }
        }
        node
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Found,
    Failed,
    Exhausted,
}

struct Search<'t> {
    tree: &'t Tree,
    steps_max: usize,
    /// Endorsers per org of the policy and role (at most [`ENDORSERS_MAX`] each), per
    /// org, and in all.
    supply_role: Vec<[usize; 4]>,
    supply_org: Vec<usize>,
    supply_all: usize,
    /// Principals taken, per slot, per org and role, per org, and in all.
    taken_slot: Vec<usize>,
    taken_role: Vec<[usize; 4]>,
    taken_org: Vec<usize>,
    taken_all: usize,
    /// For leaves before the one being decided: taken or not.
    taken: Vec<bool>,
    /// Every node's cost at the current step: the fewest principals still to take before
    /// it is satisfied (0: satisfied), or [`UNREACHABLE`].
    cost: Vec<usize>,
    /// Scratch for a gate's children's costs.
    child_costs: Vec<usize>,
    /// States (see [`Search::write_key`]) from which no solution exists.
    failed: HashSet<Vec<u8>>,
    steps: usize,
}

impl<'t> Search<'t> {
    fn new(tree: &'t Tree, endorsers: &[Endorser], steps_max: usize) -> Self {
        let orgs = tree.orgs.len();
        let mut supply_role = vec![[0; 4]; orgs];
        for endorser in endorsers {
            if let Some(org) = tree.org_index(&endorser.org) {
                let count = &mut supply_role[org][role_index(endorser.role)];
                *count = (*count + 1).min(ENDORSERS_MAX);
            }
        }
        let supply_org: Vec<usize> = supply_role.iter().map(|r| r.iter().sum()).collect();
        Search {
            tree,
            steps_max,
            supply_all: supply_org.iter().sum(),
            supply_role,
            supply_org,
            taken_slot: vec![0; tree.slots.len()],
            taken_role: vec![[0; 4]; orgs],
            taken_org: vec![0; orgs],
            taken_all: 0,
            taken: vec![false; tree.leaves.len()],
            cost: vec![UNREACHABLE; tree.nodes.len()],
            child_costs: Vec::new(),
            failed: HashSet::new(),
            steps: 0,
        }
    }

    /// Whether one more principal of `slot` can still get its own endorser.
    fn can_take(&self, slot: usize) -> bool {
        let Slot { org, role } = self.tree.slots[slot];
        let role_left = match role {
            RoleMatch::Member => true,
            RoleMatch::Role(role) => {
                let role = role_index(role);
                self.taken_role[org][role] < self.supply_role[org][role]
            }
        };
        role_left && self.taken_org[org] < self.supply_org[org]
    }

    fn take(&mut self, slot: usize) {
        let Slot { org, role } = self.tree.slots[slot];
        self.taken_slot[slot] += 1;
        self.taken_org[org] += 1;
        self.taken_all += 1;
        if let RoleMatch::Role(role) = role {
            self.taken_role[org][role_index(role)] += 1;
        }
    }

    fn give_back(&mut self, slot: usize) {
        let Slot { org, role } = self.tree.slots[slot];
        self.taken_slot[slot] -= 1;
        self.taken_org[org] -= 1;
        self.taken_all -= 1;
        if let RoleMatch::Role(role) = role {
            self.taken_role[org][role_index(role)] -= 1;
        }
    }

    /// Every node's cost with leaves before `next` decided: a leaf costs 1 if it can still
    /// be taken, a gate the sum of its `need` cheapest children. A lower bound, as it
    /// lets children share endorsers.
    fn update_costs(&mut self, next: usize) {
        for node in (0..self.tree.nodes.len()).rev() {
            self.cost[node] = match &self.tree.nodes[node] {
                Node::Leaf(leaf) if *leaf < next => {
                    if self.taken[*leaf] {
                        0
                    } else {
                        UNREACHABLE
                    }
                }
                Node::Leaf(leaf) => {
                    let Leaf {
                        slot,
                        twin_of_previous,
                        ..
                    } = self.tree.leaves[*leaf];
                    let twin_refused = twin_of_previous && *leaf == next && !self.taken[next - 1];
                    if !twin_refused && self.can_take(slot) {
                        1
                    } else {
                        UNREACHABLE
                    }
                }
                Node::Gate { need, children } => {
                    let costs = &mut self.child_costs;
                    costs.clear();
                    costs.extend(children.iter().map(|&child| self.cost[child]));
                    if *need < costs.len() {
                        costs.select_nth_unstable(*need - 1);
                    }
                    costs[..*need]
                        .iter()
                        .fold(0, |sum: usize, &cost| sum.saturating_add(cost))
                }
            };
        }
    }

    /// Writes to `key` what the rest of the search from leaf `next` depends on, and
    /// returns its length: the leaf, how many finished children each gate above it has
    /// satisfied, whether its twin was taken, and the principals taken per slot. Every
    /// count is at most [`POLICY_PRINCIPALS_MAX`], so a byte each.
    fn write_key(&self, next: usize, key: &mut [u8; KEY_BYTES_MAX]) -> usize {
        let leaf = &self.tree.leaves[next];
        let mut len = 0;
        let mut push = |count: usize| {
            key[len] = count as u8;
            len += 1;
        };
        push(next);
        for &(gate, position) in &leaf.path {
            if let Node::Gate { children, .. } = &self.tree.nodes[gate] {
                let satisfied = children[..position]
                    .iter()
                    .filter(|&&child| self.cost[child] == 0)
                    .count();
                push(satisfied);
            }
        }
        push(usize::from(next > 0 && self.taken[next - 1]));
        for &count in &self.taken_slot {
            push(count);
        }
        len
    }

    /// Decides leaves from `next` on, taking each before trying without it.
    fn run(&mut self, next: usize) -> Outcome {
        if self.steps == self.steps_max {
            return Outcome::Exhausted;
        }
        self.steps += 1;
        self.update_costs(next);
        let root = self.cost[0];
        if root == 0 {
            self.taken[next..].fill(false);
            return Outcome::Found;
        }
        let remaining = self.supply_all - self.taken_all;
        if root > remaining || next == self.tree.leaves.len() {
            return Outcome::Failed;
        }
        let mut key = [0; KEY_BYTES_MAX];
        let key_len = self.write_key(next, &mut key);
        let key = &key[..key_len];
        if self.failed.contains(key) {
            return Outcome::Failed;
        }
        let leaf = &self.tree.leaves[next];
        // A principal under a gate already satisfied, or past saving, cannot help; a twin
        // waits for its predecessor.
        let useful = leaf.path.iter().all(|&(gate, _)| {
            let cost = self.cost[gate];
            cost != 0 && cost <= remaining
        });
        let twin_ok = !leaf.twin_of_previous || self.taken[next - 1];
        let slot = leaf.slot;
        if useful && twin_ok && self.can_take(slot) {
            self.take(slot);
            self.taken[next] = true;
            let outcome = self.run(next + 1);
            self.give_back(slot);
            if outcome != Outcome::Failed {
                return outcome;
            }
        }
        self.taken[next] = false;
        let outcome = self.run(next + 1);
        if outcome == Outcome::Failed {
            self.failed.insert(key.to_vec());
        }
        outcome
    }

    /// Endorsers for the principals taken: role principals from their role first, then
    /// `member` ones from what is left of their org.
    fn assignment(&self, endorsers: &[Endorser]) -> Vec<Assignment> {
        let mut pools: Vec<[Vec<usize>; 4]> = vec![Default::default(); self.tree.orgs.len()];
        for (index, endorser) in endorsers.iter().enumerate() {
            if let Some(org) = self.tree.org_index(&endorser.org) {
                let pool = &mut pools[org][role_index(endorser.role)];
                if pool.len() < ENDORSERS_MAX {
                    pool.push(index);
                }
            }
        }
        // Reversed, so `pop` hands out endorsers in the order given.
        pools.iter_mut().flatten().for_each(|pool| pool.reverse());
        let taken = self.tree.leaves.iter().zip(&self.taken);
        let (members, roles): (Vec<_>, Vec<_>) = taken
            .filter(|(_, taken)| **taken)
            .map(|(leaf, _)| leaf)
            .partition(|leaf| self.tree.slots[leaf.slot].role == RoleMatch::Member);
        let mut assignment = Vec::with_capacity(roles.len() + members.len());
        for leaf in roles.into_iter().chain(members) {
            let Slot { org, role } = self.tree.slots[leaf.slot];
            let endorser = match role {
                RoleMatch::Role(role) => pools[org][role_index(role)].pop(),
                RoleMatch::Member => pools[org].iter_mut().find_map(Vec::pop),
            };
            // The search only takes principals the counts can cover.
            let Some(endorser) = endorser else {
                unreachable!("the search took more principals than endorsers");
            };
            assignment.push(Assignment {
                principal: leaf.written,
                endorser,
            });
        }
        assignment.sort_unstable();
        assignment
    }
}

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use super::*;

    fn orgs() -> Vec<String> {
        (0..=6).map(|i| format!("Org{i}")).collect()
    }

    fn policy(text: &str) -> Policy {
        Policy::parse(text, &orgs()).unwrap()
    }

    /// Endorsers written as `Org1.peer Org2.admin ...`.
    fn endorsers(text: &str) -> Vec<Endorser> {
        text.split_whitespace()
            .map(|e| {
                let (org, role) = e.split_once('.').unwrap();
                Endorser::new(org, role.parse().unwrap())
            })
            .collect()
    }

    fn satisfied(policy_text: &str, endorser_text: &str) -> bool {
        let policy = policy(policy_text);
        let endorsers = endorsers(endorser_text);
        let evaluation = policy.evaluate(&endorsers);
        if let Evaluation::Satisfied(assignment) = &evaluation {
            check_assignment(&policy, &endorsers, assignment);
        }
        assert_ne!(evaluation, Evaluation::StepsExhausted);
        evaluation.is_satisfied()
    }

    /// The assignment is injective, each endorser matches its principal, and the
    /// principals it names satisfy the policy.
    fn check_assignment(policy: &Policy, endorsers: &[Endorser], assignment: &[Assignment]) {
        let principals = policy.principals();
        let mut used = HashSet::new();
        let mut chosen = HashSet::new();
        for a in assignment {
            assert!(
                used.insert(a.endorser),
                "endorser used twice: {assignment:?}"
            );
            assert!(principals[a.principal].matches(&endorsers[a.endorser]));
            chosen.insert(a.principal);
        }
        fn holds(expr: &Expr, chosen: &HashSet<usize>, next: &mut usize) -> bool {
            match expr {
                Expr::Principal(_) => {
                    *next += 1;
                    chosen.contains(&(*next - 1))
                }
                Expr::And(of) => {
                    of.iter()
                        .map(|e| holds(e, chosen, next))
                        .filter(|&s| s)
                        .count()
                        == of.len()
                }
                Expr::Or(of) => {
                    of.iter()
                        .map(|e| holds(e, chosen, next))
                        .filter(|&s| s)
                        .count()
                        >= 1
                }
                Expr::OutOf { n, of } => {
                    of.iter()
                        .map(|e| holds(e, chosen, next))
                        .filter(|&s| s)
                        .count()
                        >= *n
                }
            }
        }
        assert!(
            holds(policy.expr(), &chosen, &mut 0),
            "{policy}: {assignment:?}"
        );
    }

    #[test]
    fn fabric_and_of_member_and_or() {
        let p = "AND('Org1.member', OR('Org2.peer','Org3.peer'))";
        assert!(satisfied(p, "Org1.client Org2.peer"));
        assert!(satisfied(p, "Org3.peer Org1.admin"));
        assert!(!satisfied(p, "Org1.client"));
        assert!(!satisfied(p, "Org2.peer Org3.peer"));
        assert!(!satisfied(p, "Org1.peer Org2.admin Org3.client"));
    }

    #[test]
    fn fabric_two_out_of_three_members() {
        let p = "OutOf(2, 'Org1.member','Org2.member','Org3.member')";
        assert!(satisfied(p, "Org1.peer Org3.admin"));
        assert!(satisfied(p, "Org2.client Org3.orderer Org1.peer"));
        assert!(!satisfied(p, "Org1.peer Org1.admin Org4.peer"));
        assert!(!satisfied(p, ""));
    }

    #[test]
    fn each_endorser_stands_for_one_principal() {
        let p = "AND('Org1.peer','Org1.peer')";
        assert!(!satisfied(p, "Org1.peer"));
        assert!(satisfied(p, "Org1.peer Org1.peer"));
        assert!(!satisfied("AND('Org1.member', 'Org1.peer')", "Org1.peer"));
        assert!(satisfied(
            "AND('Org1.member', 'Org1.peer')",
            "Org1.peer Org1.client"
        ));
        assert!(!satisfied(
            "OutOf(2, 'Org1.peer', OR('Org1.peer', 'Org2.peer'))",
            "Org1.peer"
        ));
    }

    #[test]
    fn member_matches_every_role_a_role_only_itself() {
        for role in Role::ALL {
            let endorser = format!("Org1.{role}");
            assert!(satisfied("'Org1.member'", &endorser));
            for wanted in Role::ALL {
                assert_eq!(
                    satisfied(&format!("'Org1.{wanted}'"), &endorser),
                    wanted == role
                );
            }
            assert!(!satisfied("'Org2.member'", &endorser));
        }
    }

    #[test]
    fn finds_what_a_greedy_evaluator_misses() {
        // Giving Org1's peer to the first principal that matches it (Fabric's way)
        // leaves nobody for 'Org1.peer'.
        let p = "AND(OR('Org1.member', 'Org2.member'), 'Org1.peer')";
        assert!(satisfied(p, "Org1.peer Org2.peer"));
        let p = "OutOf(2, 'Org1.member', 'Org1.peer', 'Org1.admin')";
        assert!(satisfied(p, "Org1.admin Org1.peer"));
        let p = "AND('Org1.member', 'Org1.member', 'Org1.peer', 'Org1.admin')";
        assert!(satisfied(p, "Org1.peer Org1.peer Org1.admin Org1.client"));
        assert!(!satisfied(p, "Org1.peer Org1.admin Org1.admin"));
    }

    #[test]
    fn majority_admin_needs_more_than_half_the_orgs() {
        let orgs: Vec<String> = (1..=5).map(|i| format!("Org{i}")).collect();
        let policy = Policy::parse("MAJORITY admin", &orgs).unwrap();
        assert!(!policy.is_satisfied_by(&endorsers("Org1.admin Org2.admin Org3.peer")));
        assert!(!policy.is_satisfied_by(&endorsers("Org1.admin Org1.admin Org1.admin")));
        assert!(policy.is_satisfied_by(&endorsers("Org1.admin Org5.admin Org3.admin")));
    }

    #[test]
    fn endorsers_outside_the_policy_are_ignored() {
        assert!(satisfied("'Org1.peer'", "Org9.peer Org2.peer Org1.peer"));
        assert!(!satisfied("'Org1.peer'", "Org9.peer Org2.peer"));
    }

    #[test]
    fn the_assignment_names_principals_and_endorsers_by_index() {
        let p = policy("AND('Org2.member', 'Org1.peer', OR('Org3.peer', 'Org1.member'))");
        let e = endorsers("Org4.peer Org1.peer Org1.admin Org2.client");
        let Evaluation::Satisfied(assignment) = p.evaluate(&e) else {
            panic!("not satisfied");
        };
        let want = [(0, 3), (1, 1), (3, 2)].map(|(principal, endorser)| Assignment {
            principal,
            endorser,
        });
        assert_eq!(assignment, want);
    }

    #[test]
    fn the_answer_does_not_depend_on_endorser_order() {
        let p = policy(
            "OutOf(3, AND('Org1.peer', 'Org2.member'), 'Org2.admin', OR('Org1.member', 'Org3.peer'), 'Org3.peer')",
        );
        let mut e = endorsers("Org1.peer Org2.admin Org3.peer Org1.client Org2.peer");
        let want = p.is_satisfied_by(&e);
        assert!(want);
        for _ in 0..e.len() {
            e.rotate_left(1);
            assert_eq!(p.is_satisfied_by(&e), want);
            e.reverse();
            assert_eq!(p.is_satisfied_by(&e), want);
        }
    }

    #[test]
    fn many_endorsers_of_one_kind_are_capped_without_changing_answers() {
        let mut e = vec![Endorser::new("Org1", Role::Peer); 10_000];
        e.push(Endorser::new("Org2", Role::Peer));
        let p = policy(&format!(
            "AND('Org2.peer', {})",
            vec!["'Org1.peer'"; 63].join(", ")
        ));
        assert!(p.is_satisfied_by(&e));
        e.pop();
        assert!(!p.is_satisfied_by(&e));
    }

    #[test]
    fn pigeonhole_policies_are_decided_quickly() {
        // 16 identical principals, 15 endorsers: identical siblings are one choice.
        let p = format!("OutOf(16, {})", vec!["'Org1.peer'"; 32].join(", "));
        assert!(!satisfied(&p, &vec!["Org1.peer"; 15].join(" ")));
        assert!(satisfied(&p, &vec!["Org1.peer"; 16].join(" ")));
        // Identical gates competing for the same endorsers: the memo of failed states
        // keeps the search from trying every permutation.
        let any =
            "OR('Org1.peer', 'Org2.peer', 'Org3.peer', 'Org4.peer', 'Org5.peer', 'Org6.peer')";
        let p = policy(&format!("AND({})", [any; 7].join(", ")));
        let six = endorsers("Org1.peer Org2.peer Org3.peer Org4.peer Org5.peer Org6.peer");
        assert_eq!(p.evaluate(&six), Evaluation::Unsatisfied);
        let p = policy(&format!("AND({})", [any; 6].join(", ")));
        assert!(p.is_satisfied_by(&six));
    }

    #[test]
    fn failed_states_are_told_apart_by_the_principals_taken() {
        // Giving Org2's client and admin to the first gate, or not, reaches the later
        // gates in states that differ only in what Org2 has left.
        let p = "OutOf(2, OutOf(2, 'Org2.member', 'Org2.member'), OutOf(1, \
                 OutOf(1, 'Org0.peer', 'Org2.client'), OutOf(1, 'Org2.admin', 'Org1.admin'), \
                 AND('Org0.member'), AND('Org2.member', 'Org0.orderer')))";
        assert!(satisfied(p, "Org2.client Org1.admin Org2.admin Org4.peer"));
        assert!(!satisfied(p, "Org2.client Org2.admin Org4.peer"));
    }

    #[test]
    fn a_search_over_its_step_budget_answers_steps_exhausted() {
        let p = policy("AND('Org1.peer', 'Org2.peer', 'Org3.peer')");
        let e = endorsers("Org3.peer Org2.peer Org1.peer");
        // One step per principal taken, and one to see the policy satisfied.
        assert_eq!(evaluate_within(&p.tree, &e, 3), Evaluation::StepsExhausted);
        assert!(evaluate_within(&p.tree, &e, 4).is_satisfied());
        assert!(!Evaluation::StepsExhausted.is_satisfied());
    }
}
