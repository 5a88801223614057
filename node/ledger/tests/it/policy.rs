//! Endorsement policies through the public API: random policies and endorser sets check
//! the parser's round-trip and the evaluator against a brute-force reference.

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use runnel_ledger::identity::Role;
use runnel_ledger::policy::{Endorser, Expr, Policy, Principal, RoleMatch};

const ORGS: [&str; 3] = ["Org1", "Org2", "Org-3_x"];

/// Principals per generated policy, small enough for the brute-force reference.
const PRINCIPALS_MAX: usize = 10;

fn orgs() -> Vec<String> {
    ORGS.map(String::from).to_vec()
}

/// Roles, peers and admins the likeliest so that policies repeat principals and
/// endorsers compete for them.
fn role() -> impl Strategy<Value = Role> {
    prop_oneof![
        1 => Just(Role::Client),
        3 => Just(Role::Peer),
        1 => Just(Role::Orderer),
        2 => Just(Role::Admin),
    ]
}

fn role_match() -> impl Strategy<Value = RoleMatch> {
    prop_oneof![1 => Just(RoleMatch::Member), 3 => role().prop_map(RoleMatch::Role)]
}

fn principal() -> impl Strategy<Value = Expr> {
    (prop::sample::select(ORGS.to_vec()), role_match()).prop_map(|(org, role)| {
        Expr::Principal(Principal {
            org: org.to_string(),
            role,
        })
    })
}

fn principal_count(expr: &Expr) -> usize {
    let mut count = 0;
    expr.for_each_principal(&mut |_| count += 1);
    count
}

/// Valid policy trees: gates up to three deep, one to four sub-policies each, at most
/// [`PRINCIPALS_MAX`] principals.
fn expr() -> impl Strategy<Value = Expr> {
    expr_within(3).prop_filter("small enough for brute force", |e| {
        principal_count(e) <= PRINCIPALS_MAX
    })
}

fn expr_within(depth: usize) -> BoxedStrategy<Expr> {
    if depth == 0 {
        return principal().boxed();
    }
    let of = prop::collection::vec(expr_within(depth - 1), 1..=4);
    // Repeating a sub-policy makes endorsers compete for identical principals.
    let repeated = (of.clone(), any::<Index>()).prop_map(|(mut of, which)| {
        of.push(of[which.index(of.len())].clone());
        of
    });
    let out_of = |of: Vec<Expr>, n: Index| Expr::OutOf {
        n: n.index(of.len()) + 1,
        of,
    };
    prop_oneof![
        2 => principal(),
        1 => of.clone().prop_map(Expr::And),
        1 => of.clone().prop_map(Expr::Or),
        1 => (of, any::<Index>()).prop_map(move |(of, n)| out_of(of, n)),
        1 => repeated.clone().prop_map(Expr::And),
        1 => (repeated, any::<Index>()).prop_map(move |(of, n)| out_of(of, n)),
    ]
    .boxed()
}

/// A policy and endorsers for it: most match one of its principals, so that they satisfy
/// it about half the time and compete for principals; the rest are any org's, including
/// one no policy names.
fn case(endorsers_max: usize) -> impl Strategy<Value = (Expr, Vec<Endorser>)> {
    expr().prop_flat_map(move |expr| {
        let mut principals = Vec::new();
        expr.for_each_principal(&mut |p| principals.push(p.clone()));
        let matching = (prop::sample::select(principals), role()).prop_map(|(p, any)| {
            let role = match p.role {
                RoleMatch::Member => any,
                RoleMatch::Role(role) => role,
            };
            Endorser::new(p.org, role)
        });
        let one = prop_oneof![3 => matching, 1 => endorser()];
        (Just(expr), prop::collection::vec(one, 0..=endorsers_max))
    })
}

fn endorser() -> impl Strategy<Value = Endorser> {
    let org = prop::sample::select(vec!["Org1", "Org2", "Org-3_x", "Org4"]);
    (org, role()).prop_map(|(org, role)| Endorser::new(org, role))
}

fn parse(text: &str) -> Policy {
    match Policy::parse(text, &orgs()) {
        Ok(policy) => policy,
        Err(error) => panic!("`{text}` refused:\n{error}"),
    }
}

/// The same policy written untidily: random case for names and roles, random whitespace.
fn untidy(expr: &Expr, noise: &mut impl FnMut() -> u32) -> String {
    fn space(noise: &mut impl FnMut() -> u32) -> &'static str {
        [" ", "", "\n\t", "  "][(noise() % 4) as usize]
    }
    fn case(word: &str, noise: &mut impl FnMut() -> u32) -> String {
        match noise() % 3 {
            0 => word.to_lowercase(),
            1 => word.to_uppercase(),
            _ => word.to_string(),
        }
    }
    let (name, n, of) = match expr {
        Expr::Principal(p) => {
            let before = space(noise);
            let role = case(p.role.as_str(), noise);
            return format!("{before}'{}.{role}'{}", p.org, space(noise));
        }
        Expr::And(of) => ("And", None, of),
        Expr::Or(of) => ("Or", None, of),
        Expr::OutOf { n, of } => ("OutOf", Some(*n), of),
    };
    let mut text = space(noise).to_string();
    text.push_str(&case(name, noise));
    text.push_str(space(noise));
    text.push('(');
    let mut args = Vec::new();
    if let Some(n) = n {
        args.push(format!("{}{n}{}", space(noise), space(noise)));
    }
    args.extend(of.iter().map(|sub| untidy(sub, noise)));
    text.push_str(&args.join(","));
    text.push(')');
    text.push_str(space(noise));
    text
}

/// Whether the principals marked in `chosen` (by written index) satisfy `expr`.
fn holds(expr: &Expr, chosen: &[bool], next: &mut usize) -> bool {
    let satisfied =
        |of: &[Expr], next: &mut usize| of.iter().filter(|sub| holds(sub, chosen, next)).count();
    match expr {
        Expr::Principal(_) => {
            *next += 1;
            chosen[*next - 1]
        }
        Expr::And(of) => satisfied(of, next) == of.len(),
        Expr::Or(of) => satisfied(of, next) >= 1,
        Expr::OutOf { n, of } => satisfied(of, next) >= *n,
    }
}

/// The reference: try every injective assignment of endorsers to principals.
fn brute_force(expr: &Expr, endorsers: &[Endorser]) -> bool {
    fn assign(
        expr: &Expr,
        principals: &[&Principal],
        endorsers: &[Endorser],
        chosen: &mut Vec<bool>,
        used: &mut Vec<bool>,
    ) -> bool {
        let k = chosen.len();
        if k == principals.len() {
            return holds(expr, chosen, &mut 0);
        }
        chosen.push(false);
        if assign(expr, principals, endorsers, chosen, used) {
            return true;
        }
        chosen[k] = true;
        for e in 0..endorsers.len() {
            let p = principals[k];
            let fits = p.org == endorsers[e].org
                && (p.role == RoleMatch::Member || p.role == RoleMatch::Role(endorsers[e].role));
            if fits && !used[e] {
                used[e] = true;
                let found = assign(expr, principals, endorsers, chosen, used);
                used[e] = false;
                if found {
                    return true;
                }
            }
        }
        chosen.pop();
        false
    }
    let mut principals = Vec::new();
    expr.for_each_principal(&mut |p| principals.push(p));
    let mut used = vec![false; endorsers.len()];
    assign(expr, &principals, endorsers, &mut Vec::new(), &mut used)
}

/// `text` parses to a policy that round-trips, or is refused at a position inside it.
fn check_parsed_or_refused(text: &str) -> Result<(), TestCaseError> {
    match Policy::parse(text, &orgs()) {
        Ok(policy) => prop_assert_eq!(parse(&policy.to_string()), policy),
        Err(error) => {
            prop_assert!(error.offset() <= text.len());
            prop_assert!(text.is_char_boundary(error.offset()));
            prop_assert!(error.line() >= 1 && error.column() >= 1);
            prop_assert!(error.to_string().ends_with('^'));
        }
    }
    Ok(())
}

fn join(exprs: &[Expr]) -> String {
    exprs
        .iter()
        .map(Expr::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

proptest! {
    // Regressions beside this file: the default looks for a lib.rs next to it.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn display_parses_back_to_the_same_policy(expr in expr(), seed in any::<u64>()) {
        let text = expr.to_string();
        let policy = parse(&text);
        prop_assert_eq!(policy.expr(), &expr);
        prop_assert_eq!(policy.to_string(), text.clone());

        let mut state = seed;
        let mut noise = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        let untidy = untidy(&expr, &mut noise);
        prop_assert_eq!(parse(&untidy).to_string(), text, "from {:?}", untidy);
    }

    #[test]
    fn adding_an_endorser_never_unsatisfies(
        (expr, endorsers) in case(6),
        extra in endorser(),
        at in any::<Index>(),
    ) {
        let policy = parse(&expr.to_string());
        let before = policy.is_satisfied_by(&endorsers);
        let mut more = endorsers;
        more.insert(at.index(more.len() + 1), extra);
        prop_assert!(!before || policy.is_satisfied_by(&more));
    }

    #[test]
    fn endorser_order_does_not_matter(
        (expr, endorsers, shuffled) in case(8).prop_flat_map(|(expr, e)| {
            (Just(expr), Just(e.clone()), Just(e).prop_shuffle())
        }),
    ) {
        let policy = parse(&expr.to_string());
        prop_assert_eq!(policy.evaluate(&endorsers).is_satisfied(), policy.is_satisfied_by(&shuffled));
    }

    #[test]
    fn gate_identities_hold((p, endorsers) in case(6)) {
        let sat = |text: &str| parse(text).is_satisfied_by(&endorsers);
        let p_sat = sat(&p.to_string());
        prop_assert_eq!(sat(&format!("OR({p})")), p_sat);
        prop_assert_eq!(sat(&format!("AND({p})")), p_sat);
        prop_assert_eq!(sat(&format!("OutOf(1, {p})")), p_sat);
        // A gate's sub-policies make a list the endorsers are relevant to.
        let list = match &p {
            Expr::Principal(_) => vec![p.clone()],
            Expr::And(of) | Expr::Or(of) | Expr::OutOf { of, .. } => of.clone(),
        };
        let (text, len) = (join(&list), list.len());
        prop_assert_eq!(sat(&format!("OutOf(1, {text})")), sat(&format!("OR({text})")));
        prop_assert_eq!(sat(&format!("OutOf({len}, {text})")), sat(&format!("AND({text})")));
    }

    #[test]
    fn satisfied_assignments_are_valid((expr, endorsers) in case(6)) {
        let policy = parse(&expr.to_string());
        if let runnel_ledger::policy::Evaluation::Satisfied(assignment) = policy.evaluate(&endorsers) {
            let principals = policy.principals();
            let mut chosen = vec![false; principals.len()];
            let mut used = vec![false; endorsers.len()];
            for a in &assignment {
                prop_assert!(principals[a.principal].matches(&endorsers[a.endorser]));
                prop_assert!(!used[a.endorser], "endorser used twice");
                used[a.endorser] = true;
                chosen[a.principal] = true;
            }
            prop_assert!(holds(&expr, &chosen, &mut 0));
        }
    }

    #[test]
    fn damaged_policies_are_parsed_or_refused_with_a_position_inside_them(
        expr in expr(),
        at in any::<Index>(),
        edit in 0..3u8,
        c in prop::sample::select(vec!['(', ')', ',', '\'', '.', ' ', '1', 'A', 'x', 'é']),
    ) {
        let mut text = expr.to_string();
        let at = at.index(text.len());
        match edit {
            0 => {
                text.remove(at);
            }
            1 => text.insert(at, c),
            _ => text.replace_range(at..at + 1, &c.to_string()),
        }
        check_parsed_or_refused(&text)?;
    }

    #[test]
    fn any_text_is_parsed_or_refused_with_a_position_inside_it(
        text in "[ANDORoutfMJIYny()',.0-9a-z_ \\-]{0,40}|\\PC{0,40}",
    ) {
        check_parsed_or_refused(&text)?;
    }
}

proptest! {
    // The reference is the specification, and cheap at these sizes: more cases.
    #![proptest_config(ProptestConfig {
        cases: 2048,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn agrees_with_brute_force((expr, endorsers) in case(5)) {
        let policy = parse(&expr.to_string());
        let want = brute_force(&expr, &endorsers);
        prop_assert_eq!(policy.is_satisfied_by(&endorsers), want, "{} with {:?}", policy, endorsers);
    }
}
