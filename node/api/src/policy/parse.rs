//! The policy parser: a lexer and a recursive-descent parser over the grammar in the
//! module documentation, checking every limit as it goes.

use std::collections::HashSet;

use super::error::{clip, quote};
use super::{
    Expr, POLICY_DEPTH_MAX, POLICY_PRINCIPALS_MAX, POLICY_TEXT_BYTES_MAX, PolicyError,
    PolicyErrorKind, Principal, RoleMatch,
};

/// What the grammar allows where a policy starts.
const EXPECTED_POLICY: &str =
    "a policy (a principal such as 'Org1.peer', AND, OR, OutOf, MAJORITY or ANY)";

/// Parses `text` against the network's `orgs`.
pub(super) fn parse(text: &str, orgs: &[String]) -> Result<Expr, PolicyError> {
    if text.len() > POLICY_TEXT_BYTES_MAX {
        let kind = PolicyErrorKind::TooLong {
            bytes: text.len(),
            max: POLICY_TEXT_BYTES_MAX,
        };
        return Err(PolicyError::new(kind, text, POLICY_TEXT_BYTES_MAX));
    }
    let mut parser = Parser::new(text, orgs);
    let expr = parser.policy(0)?;
    let token = parser.next()?;
    if token.kind != TokenKind::End {
        let found = token.describe(text);
        return Err(parser.error(PolicyErrorKind::TrailingInput { found }, token.offset));
    }
    Ok(expr)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenKind {
    /// Letters, digits and `_`, starting with a letter or `_`: a gate or shorthand name,
    /// or a role after a shorthand.
    Name,
    /// ASCII digits.
    Number,
    /// `'...'`, quotes included.
    Quoted,
    LParen,
    RParen,
    Comma,
    /// A character no token starts with.
    Other,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: TokenKind,
    /// Byte offset of the first character.
    offset: usize,
    /// Byte offset just past the last character.
    end: usize,
}

impl Token {
    fn text<'t>(&self, text: &'t str) -> &'t str {
        &text[self.offset..self.end]
    }

    /// How an error message names the token.
    fn describe(&self, text: &str) -> String {
        match self.kind {
            TokenKind::End => "end of input".to_string(),
            TokenKind::Other => format!("`{}`", self.text(text).escape_debug()),
            _ => quote(self.text(text)),
        }
    }
}

/// Which gate a name stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    And,
    Or,
    OutOf,
    Majority,
    Any,
}

impl Gate {
    fn from_name(name: &str) -> Option<Gate> {
        [
            ("AND", Gate::And),
            ("OR", Gate::Or),
            ("OutOf", Gate::OutOf),
            ("MAJORITY", Gate::Majority),
            ("ANY", Gate::Any),
        ]
        .into_iter()
        .find(|(written, _)| written.eq_ignore_ascii_case(name))
        .map(|(_, gate)| gate)
    }
}

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next character to lex.
    pos: usize,
    /// The network's orgs, duplicates dropped, in their order (what shorthands expand
    /// to), and as a set (what principals are checked against).
    orgs: Vec<&'a str>,
    known: HashSet<&'a str>,
    principals: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, orgs: &'a [String]) -> Self {
        let mut known = HashSet::with_capacity(orgs.len());
        let orgs = orgs
            .iter()
            .map(String::as_str)
            .filter(|org| known.insert(*org))
            .collect();
        Parser {
            text,
            pos: 0,
            orgs,
            known,
            principals: 0,
        }
    }

    fn error(&self, kind: PolicyErrorKind, offset: usize) -> PolicyError {
        PolicyError::new(kind, self.text, offset)
    }

    fn expected(&self, expected: &'static str, token: Token) -> PolicyError {
        let found = token.describe(self.text);
        self.error(PolicyErrorKind::Expected { expected, found }, token.offset)
    }

    /// The next token, without consuming it.
    fn peek(&self) -> Result<Token, PolicyError> {
        let bytes = self.text.as_bytes();
        let mut offset = self.pos;
        while offset < bytes.len() && bytes[offset].is_ascii_whitespace() {
            offset += 1;
        }
        let token = |kind, end| Token { kind, offset, end };
        let Some(c) = self.text[offset..].chars().next() else {
            return Ok(token(TokenKind::End, offset));
        };
        let run = |accept: fn(u8) -> bool| {
            offset + bytes[offset..].iter().take_while(|&&b| accept(b)).count()
        };
        Ok(match c {
            '(' => token(TokenKind::LParen, offset + 1),
            ')' => token(TokenKind::RParen, offset + 1),
            ',' => token(TokenKind::Comma, offset + 1),
            '\'' => match self.text[offset + 1..].find('\'') {
                Some(close) => token(TokenKind::Quoted, offset + 1 + close + 1),
                None => {
                    let kind = PolicyErrorKind::UnterminatedPrincipal;
                    return Err(self.error(kind, offset));
                }
            },
            '0'..='9' => token(TokenKind::Number, run(|b| b.is_ascii_digit())),
            c if c.is_ascii_alphabetic() || c == '_' => token(
                TokenKind::Name,
                run(|b| b.is_ascii_alphanumeric() || b == b'_'),
            ),
            c => token(TokenKind::Other, offset + c.len_utf8()),
        })
    }

    /// The next token, consumed.
    fn next(&mut self) -> Result<Token, PolicyError> {
        let token = self.peek()?;
        self.pos = token.end;
        Ok(token)
    }

    /// Consumes the next token, which must be of `kind`.
    fn expect(&mut self, kind: TokenKind, expected: &'static str) -> Result<Token, PolicyError> {
        let token = self.next()?;
        if token.kind == kind {
            Ok(token)
        } else {
            Err(self.expected(expected, token))
        }
    }

    /// A policy, inside `depth` gates.
    fn policy(&mut self, depth: usize) -> Result<Expr, PolicyError> {
        let token = self.next()?;
        match token.kind {
            TokenKind::Quoted => self.principal(token),
            TokenKind::Name => {
                let name = token.text(self.text);
                let Some(gate) = Gate::from_name(name) else {
                    let kind = PolicyErrorKind::UnknownFunction(clip(name));
                    return Err(self.error(kind, token.offset));
                };
                if depth >= POLICY_DEPTH_MAX {
                    let kind = PolicyErrorKind::TooDeep {
                        max: POLICY_DEPTH_MAX,
                    };
                    return Err(self.error(kind, token.offset));
                }
                match gate {
                    Gate::And | Gate::Or | Gate::OutOf => self.gate(gate, depth + 1),
                    Gate::Majority | Gate::Any => self.shorthand(gate, token),
                }
            }
            _ => Err(self.expected(EXPECTED_POLICY, token)),
        }
    }

    /// `AND(...)`, `OR(...)` or `OutOf(n, ...)`, after the name; the sub-policies are
    /// inside `depth` gates.
    fn gate(&mut self, gate: Gate, depth: usize) -> Result<Expr, PolicyError> {
        self.expect(TokenKind::LParen, "'('")?;
        let mut threshold = None;
        if gate == Gate::OutOf {
            let number = self.expect(TokenKind::Number, "a number (how many of)")?;
            let n = number
                .text(self.text)
                .parse::<usize>()
                .map_err(|_| self.error(PolicyErrorKind::NumberTooLarge, number.offset))?;
            threshold = Some((n, number.offset));
            self.expect(TokenKind::Comma, "',' and the sub-policies")?;
        } else {
            let token = self.peek()?;
            if token.kind == TokenKind::RParen {
                let gate = if gate == Gate::And { "AND" } else { "OR" };
                return Err(self.error(PolicyErrorKind::EmptyGate { gate }, token.offset));
            }
        }
        let mut of = Vec::new();
        loop {
            of.push(self.policy(depth)?);
            let token = self.next()?;
            match token.kind {
                TokenKind::Comma => continue,
                TokenKind::RParen => break,
                _ => return Err(self.expected("',' or ')'", token)),
            }
        }
        Ok(match (gate, threshold) {
            (_, Some((n, offset))) => {
                if n < 1 || n > of.len() {
                    let count = of.len();
                    let kind = PolicyErrorKind::ThresholdOutOfRange { n, count };
                    return Err(self.error(kind, offset));
                }
                Expr::OutOf { n, of }
            }
            (Gate::And, None) => Expr::And(of),
            _ => Expr::Or(of),
        })
    }

    /// `MAJORITY [role]` or `ANY [role]`, after the name token `name`.
    fn shorthand(&mut self, gate: Gate, name: Token) -> Result<Expr, PolicyError> {
        let mut role = RoleMatch::Role(crate::identity::Role::Peer);
        let token = self.peek()?;
        if token.kind == TokenKind::Name {
            self.next()?;
            let written = token.text(self.text);
            role = written.parse().map_err(|_| {
                self.error(PolicyErrorKind::UnknownRole(clip(written)), token.offset)
            })?;
        }
        let shorthand = if gate == Gate::Majority {
            "MAJORITY"
        } else {
            "ANY"
        };
        if self.orgs.is_empty() {
            return Err(self.error(PolicyErrorKind::NoOrgs { shorthand }, name.offset));
        }
        if let Some(bad) = self.orgs.iter().find(|org| !is_org_name(org)) {
            let kind = PolicyErrorKind::BadNetworkOrg(clip(bad));
            return Err(self.error(kind, name.offset));
        }
        self.count_principals(self.orgs.len(), name.offset)?;
        let of: Vec<Expr> = self
            .orgs
            .iter()
            .map(|org| {
                Expr::Principal(Principal {
                    org: (*org).to_string(),
                    role,
                })
            })
            .collect();
        let n = if gate == Gate::Majority {
            of.len() / 2 + 1
        } else {
            1
        };
        Ok(Expr::OutOf { n, of })
    }

    /// `'org.role'`, the token `quoted`.
    fn principal(&mut self, quoted: Token) -> Result<Expr, PolicyError> {
        let start = quoted.offset + 1;
        let close = quoted.end - 1;
        let content = &self.text[start..close];
        let Some(dot) = content.find(|c: char| !is_org_char(c)) else {
            let kind = PolicyErrorKind::Expected {
                expected: "'.' and a role after the org name",
                found: "`'`".to_string(),
            };
            return Err(self.error(kind, close));
        };
        let (org, rest) = content.split_at(dot);
        if org.is_empty() || !rest.starts_with('.') {
            let found = match rest.chars().next() {
                Some(c) if !org.is_empty() => format!("`{}`", c.escape_debug()),
                Some(c) => format!("`{}` where the org name starts", c.escape_debug()),
                None => "nothing".to_string(),
            };
            let kind = PolicyErrorKind::BadOrgName { found };
            return Err(self.error(kind, start + dot));
        }
        if !self.known.contains(org) {
            return Err(self.error(PolicyErrorKind::UnknownOrg(clip(org)), start));
        }
        let role_text = &rest[1..];
        let role_offset = start + dot + 1;
        if role_text.is_empty() {
            let kind = PolicyErrorKind::Expected {
                expected: "a role after '.'",
                found: "`'`".to_string(),
            };
            return Err(self.error(kind, role_offset));
        }
        let role = role_text
            .parse()
            .map_err(|_| self.error(PolicyErrorKind::UnknownRole(clip(role_text)), role_offset))?;
        self.count_principals(1, quoted.offset)?;
        Ok(Expr::Principal(Principal {
            org: org.to_string(),
            role,
        }))
    }

    /// Counts `more` principals, written at `offset`, against the limit.
    fn count_principals(&mut self, more: usize, offset: usize) -> Result<(), PolicyError> {
        self.principals += more;
        if self.principals > POLICY_PRINCIPALS_MAX {
            let kind = PolicyErrorKind::TooManyPrincipals {
                max: POLICY_PRINCIPALS_MAX,
            };
            return Err(self.error(kind, offset));
        }
        Ok(())
    }
}

fn is_org_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn is_org_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_org_char)
}

#[cfg(test)]
mod tests {
    use super::super::{Policy, PolicyErrorKind as Kind};
    use super::*;
    use crate::identity::Role;

    fn orgs() -> Vec<String> {
        ["Org1", "Org2", "Org3"].map(String::from).to_vec()
    }

    fn parse(text: &str) -> Result<Policy, PolicyError> {
        Policy::parse(text, &orgs())
    }

    fn principal(org: &str, role: RoleMatch) -> Expr {
        Expr::Principal(Principal {
            org: org.to_string(),
            role,
        })
    }

    fn peer(org: &str) -> Expr {
        principal(org, RoleMatch::Role(Role::Peer))
    }

    /// The error for `text`, its kind and 1-based column.
    fn error(text: &str) -> (Kind, usize) {
        match parse(text) {
            Ok(policy) => panic!("`{text}` parsed as {policy}"),
            Err(error) => (error.kind().clone(), error.column()),
        }
    }

    fn expected(expected: &'static str, found: &str) -> Kind {
        Kind::Expected {
            expected,
            found: found.to_string(),
        }
    }

    #[test]
    fn parses_fabric_examples() {
        let policy = parse("AND('Org1.member', OR('Org2.peer','Org3.peer'))").unwrap();
        let want = Expr::And(vec![
            principal("Org1", RoleMatch::Member),
            Expr::Or(vec![peer("Org2"), peer("Org3")]),
        ]);
        assert_eq!(policy.expr(), &want);

        let policy = parse("OutOf(2, 'Org1.member','Org2.member','Org3.member')").unwrap();
        let of = ["Org1", "Org2", "Org3"].map(|org| principal(org, RoleMatch::Member));
        assert_eq!(
            policy.expr(),
            &Expr::OutOf {
                n: 2,
                of: of.into()
            }
        );
    }

    #[test]
    fn a_principal_alone_is_a_policy() {
        assert_eq!(
            parse("'Org2.admin'").unwrap().expr(),
            &principal("Org2", RoleMatch::Role(Role::Admin))
        );
    }

    #[test]
    fn every_role_parses() {
        for (written, role) in [
            ("member", RoleMatch::Member),
            ("admin", RoleMatch::Role(Role::Admin)),
            ("client", RoleMatch::Role(Role::Client)),
            ("peer", RoleMatch::Role(Role::Peer)),
            ("orderer", RoleMatch::Role(Role::Orderer)),
        ] {
            let policy = parse(&format!("'Org1.{written}'")).unwrap();
            assert_eq!(policy.expr(), &principal("Org1", role));
        }
    }

    #[test]
    fn names_and_roles_are_case_insensitive_orgs_are_not() {
        let a = parse("and('Org1.PEER', Or('Org2.Peer'), outof(1, 'Org3.peer'))").unwrap();
        let b = parse("AND('Org1.peer', OR('Org2.peer'), OutOf(1, 'Org3.peer'))").unwrap();
        assert_eq!(a, b);
        assert_eq!(error("'org1.peer'"), (Kind::UnknownOrg("org1".into()), 2));
    }

    #[test]
    fn whitespace_is_allowed_between_any_tokens() {
        let text = " \t\n OutOf ( 1 ,\r\n\t'Org1.peer' ,  AND ( 'Org2.peer' ) ) \n";
        let want = Expr::OutOf {
            n: 1,
            of: vec![peer("Org1"), Expr::And(vec![peer("Org2")])],
        };
        assert_eq!(parse(text).unwrap().expr(), &want);
    }

    #[test]
    fn org_names_may_hold_digits_dashes_and_underscores() {
        let orgs = vec!["Org-1_a".to_string(), "42".to_string()];
        let policy = Policy::parse("AND('Org-1_a.peer', '42.peer')", &orgs).unwrap();
        assert_eq!(policy.expr(), &Expr::And(vec![peer("Org-1_a"), peer("42")]));
    }

    #[test]
    fn majority_and_any_expand_over_the_orgs() {
        let peers = ["Org1", "Org2", "Org3"].map(peer).to_vec();
        assert_eq!(
            parse("MAJORITY").unwrap().expr(),
            &Expr::OutOf {
                n: 2,
                of: peers.clone()
            }
        );
        assert_eq!(
            parse("ANY").unwrap().expr(),
            &Expr::OutOf { n: 1, of: peers }
        );
        let admins =
            ["Org1", "Org2", "Org3"].map(|org| principal(org, RoleMatch::Role(Role::Admin)));
        let policy = parse("majority  Admin").unwrap();
        assert_eq!(
            policy.expr(),
            &Expr::OutOf {
                n: 2,
                of: admins.into()
            }
        );
        let members = ["Org1", "Org2", "Org3"].map(|org| principal(org, RoleMatch::Member));
        let policy = parse("ANY member").unwrap();
        assert_eq!(
            policy.expr(),
            &Expr::OutOf {
                n: 1,
                of: members.into()
            }
        );
    }

    #[test]
    fn majority_is_more_than_half() {
        for (count, n) in [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (64, 33)] {
            let orgs: Vec<String> = (0..count).map(|i| format!("Org{i}")).collect();
            let policy = Policy::parse("MAJORITY admin", &orgs).unwrap();
            let Expr::OutOf { n: got, of } = policy.expr() else {
                panic!("{policy}");
            };
            assert_eq!((*got, of.len()), (n, count), "{count} orgs");
        }
    }

    #[test]
    fn shorthands_drop_duplicate_orgs_and_keep_their_order() {
        let orgs = ["B", "A", "B", "C", "A"].map(String::from);
        let policy = Policy::parse("ANY", &orgs).unwrap();
        assert_eq!(policy.to_string(), "OutOf(1, 'B.peer', 'A.peer', 'C.peer')");
    }

    #[test]
    fn shorthands_nest_inside_gates() {
        let policy = parse("AND('Org1.admin', MAJORITY, ANY client)").unwrap();
        assert_eq!(
            policy.to_string(),
            "AND('Org1.admin', OutOf(2, 'Org1.peer', 'Org2.peer', 'Org3.peer'), \
             OutOf(1, 'Org1.client', 'Org2.client', 'Org3.client'))"
        );
    }

    #[test]
    fn display_is_canonical_and_parses_back() {
        for text in [
            "'Org1.peer'",
            "and ( 'Org1.Member' ,or('Org2.peer','Org3.ADMIN'))",
            "OUTOF(2,'Org1.client','Org2.orderer','Org3.member')",
            "OR(AND('Org1.peer', 'Org1.peer'), OutOf(1, AND('Org2.peer')))",
            "MAJORITY admin",
        ] {
            let policy = parse(text).unwrap();
            let shown = policy.to_string();
            assert_eq!(parse(&shown).unwrap(), policy, "{text} -> {shown}");
            assert_eq!(parse(&shown).unwrap().to_string(), shown);
        }
        let policy = parse("and ( 'Org1.Member' ,outof(1,'Org2.peer','Org3.ADMIN'))").unwrap();
        assert_eq!(
            policy.to_string(),
            "AND('Org1.member', OutOf(1, 'Org2.peer', 'Org3.admin'))"
        );
    }

    #[test]
    fn principals_are_listed_in_written_order() {
        let policy = parse("OR(AND('Org3.peer', 'Org1.admin'), 'Org2.member')").unwrap();
        let written: Vec<String> = policy.principals().iter().map(|p| p.to_string()).collect();
        assert_eq!(written, ["'Org3.peer'", "'Org1.admin'", "'Org2.member'"]);
    }

    #[test]
    fn refuses_a_missing_separator_at_its_column() {
        let text = "AND('Org1.peer' 'Org2.peer')";
        let found = "`'Org2.peer'`";
        assert_eq!(error(text), (expected("',' or ')'", found), 17));
        let shown = parse(text).unwrap_err().to_string();
        assert!(shown.starts_with("expected ',' or ')', found `'Org2.peer'` at column 17\n"));
    }

    #[test]
    fn refuses_what_is_not_a_policy() {
        assert_eq!(error(""), (expected(EXPECTED_POLICY, "end of input"), 1));
        assert_eq!(error("   "), (expected(EXPECTED_POLICY, "end of input"), 4));
        assert_eq!(
            error("AND(,'Org1.peer')"),
            (expected(EXPECTED_POLICY, "`,`"), 5)
        );
        assert_eq!(
            error("OR('Org1.peer',)"),
            (expected(EXPECTED_POLICY, "`)`"), 16)
        );
        assert_eq!(error("OR(2)"), (expected(EXPECTED_POLICY, "`2`"), 4));
        assert_eq!(
            error("OR(\"Org1.peer\")"),
            (expected(EXPECTED_POLICY, "`\\\"`"), 4)
        );
        assert_eq!(
            error("OR(\u{a0}'Org1.peer')"),
            (expected(EXPECTED_POLICY, "`\\u{a0}`"), 4)
        );
    }

    #[test]
    fn refuses_unknown_functions() {
        assert_eq!(
            error("NAND('Org1.peer')"),
            (Kind::UnknownFunction("NAND".into()), 1)
        );
        assert_eq!(
            error("OR(Org1.peer)"),
            (Kind::UnknownFunction("Org1".into()), 4)
        );
        let shown = parse("OR(Org1.peer)").unwrap_err().to_string();
        assert!(shown.contains("principals are quoted"), "{shown}");
    }

    #[test]
    fn refuses_malformed_gates() {
        assert_eq!(
            error("AND 'Org1.peer'"),
            (expected("'('", "`'Org1.peer'`"), 5)
        );
        assert_eq!(
            error("AND('Org1.peer'"),
            (expected("',' or ')'", "end of input"), 16)
        );
        assert_eq!(
            error("AND('Org1.peer';"),
            (expected("',' or ')'", "`;`"), 16)
        );
        assert_eq!(
            error("OutOf('Org1.peer')"),
            (expected("a number (how many of)", "`'Org1.peer'`"), 7)
        );
        assert_eq!(
            error("OutOf(-1, 'Org1.peer')"),
            (expected("a number (how many of)", "`-`"), 7)
        );
        assert_eq!(
            error("OutOf(1)"),
            (expected("',' and the sub-policies", "`)`"), 8)
        );
        assert_eq!(
            error("OutOf(1 'Org1.peer')"),
            (expected("',' and the sub-policies", "`'Org1.peer'`"), 9)
        );
        assert_eq!(
            error("MAJORITY(admin)"),
            (
                Kind::TrailingInput {
                    found: "`(`".into()
                },
                9
            )
        );
    }

    #[test]
    fn refuses_empty_gates() {
        assert_eq!(error("AND()"), (Kind::EmptyGate { gate: "AND" }, 5));
        assert_eq!(
            error("OR('Org1.peer', or( ))"),
            (Kind::EmptyGate { gate: "OR" }, 21)
        );
    }

    #[test]
    fn refuses_thresholds_out_of_range() {
        let out_of_range = |n, count| Kind::ThresholdOutOfRange { n, count };
        assert_eq!(error("OutOf(0, 'Org1.peer')"), (out_of_range(0, 1), 7));
        assert_eq!(
            error("OutOf( 3, 'Org1.peer', 'Org2.peer')"),
            (out_of_range(3, 2), 8)
        );
        assert_eq!(
            error("OutOf(99999999999999999999999, 'Org1.peer')"),
            (Kind::NumberTooLarge, 7)
        );
        assert!(parse("OutOf(002, 'Org1.peer', 'Org2.peer')").is_ok());
    }

    #[test]
    fn refuses_malformed_principals() {
        assert_eq!(error("OR('Org1.peer"), (Kind::UnterminatedPrincipal, 4));
        let no_role = expected("'.' and a role after the org name", "`'`");
        assert_eq!(error("'Org1'"), (no_role, 6));
        assert_eq!(error("'Org1.'"), (expected("a role after '.'", "`'`"), 7));
        let bad = |found: &str| Kind::BadOrgName {
            found: found.to_string(),
        };
        assert_eq!(error("'.peer'"), (bad("`.` where the org name starts"), 2));
        assert_eq!(
            error("''"),
            (expected("'.' and a role after the org name", "`'`"), 2)
        );
        assert_eq!(error("'Org 1.peer'"), (bad("` `"), 5));
        assert_eq!(error("'Org1 .peer'"), (bad("` `"), 6));
        assert_eq!(error("'Ö.peer'"), (bad("`Ö` where the org name starts"), 2));
        assert_eq!(
            error("'Org1.peer.x'"),
            (Kind::UnknownRole("peer.x".into()), 7)
        );
        assert_eq!(
            error("'Org1. peer'"),
            (Kind::UnknownRole(" peer".into()), 7)
        );
    }

    #[test]
    fn refuses_unknown_roles() {
        assert_eq!(
            error("AND('Org1.boss')"),
            (Kind::UnknownRole("boss".into()), 11)
        );
        assert_eq!(
            error("MAJORITY admins"),
            (Kind::UnknownRole("admins".into()), 10)
        );
    }

    #[test]
    fn refuses_unknown_orgs() {
        assert_eq!(
            error("OR('Org1.peer', 'Org9.peer')"),
            (Kind::UnknownOrg("Org9".into()), 18)
        );
    }

    #[test]
    fn refuses_trailing_input() {
        let trailing = |found: &str| Kind::TrailingInput {
            found: found.to_string(),
        };
        assert_eq!(
            error("'Org1.peer' 'Org2.peer'"),
            (trailing("`'Org2.peer'`"), 13)
        );
        assert_eq!(error("AND('Org1.peer'))"), (trailing("`)`"), 17));
        assert_eq!(error("ANY peer peer"), (trailing("`peer`"), 10));
    }

    #[test]
    fn refuses_shorthands_without_usable_orgs() {
        let none: Vec<String> = Vec::new();
        let error = Policy::parse("OR('Org1.peer', MAJORITY)", &none).unwrap_err();
        assert_eq!(error.kind(), &Kind::UnknownOrg("Org1".into()));
        let error = Policy::parse("ANY admin", &none).unwrap_err();
        assert_eq!(
            (error.kind(), error.column()),
            (&Kind::NoOrgs { shorthand: "ANY" }, 1)
        );
        let orgs = vec!["Org1".to_string(), "Org.2".to_string()];
        let error = Policy::parse("  MAJORITY", &orgs).unwrap_err();
        assert_eq!(
            (error.kind(), error.column()),
            (&Kind::BadNetworkOrg("Org.2".into()), 3)
        );
    }

    #[test]
    fn nesting_is_limited() {
        let nested =
            |depth: usize| format!("{}'Org1.peer'{}", "OR(".repeat(depth), ")".repeat(depth));
        assert!(parse(&nested(POLICY_DEPTH_MAX)).is_ok());
        let text = nested(POLICY_DEPTH_MAX + 1);
        let column = 3 * POLICY_DEPTH_MAX + 1;
        assert_eq!(
            error(&text),
            (
                Kind::TooDeep {
                    max: POLICY_DEPTH_MAX
                },
                column
            )
        );
        // A shorthand is a gate too.
        let text = format!(
            "{}MAJORITY{}",
            "OR(".repeat(POLICY_DEPTH_MAX),
            ")".repeat(POLICY_DEPTH_MAX)
        );
        assert_eq!(
            error(&text).0,
            Kind::TooDeep {
                max: POLICY_DEPTH_MAX
            }
        );
        // Far deeper input is refused at the limit, not by exhausting the stack.
        assert_eq!(
            error(&nested(100_000)).0,
            Kind::TooLong {
                bytes: 400_011,
                max: POLICY_TEXT_BYTES_MAX
            }
        );
        assert_eq!(
            error(&"OR(".repeat(1_000)).0,
            Kind::TooDeep {
                max: POLICY_DEPTH_MAX
            }
        );
    }

    #[test]
    fn principals_are_limited() {
        let many = |count: usize| format!("OR({})", vec!["'Org1.peer'"; count].join(","));
        assert_eq!(
            parse(&many(POLICY_PRINCIPALS_MAX))
                .unwrap()
                .principals()
                .len(),
            64
        );
        let column = 4 + 12 * POLICY_PRINCIPALS_MAX;
        let too_many = Kind::TooManyPrincipals {
            max: POLICY_PRINCIPALS_MAX,
        };
        assert_eq!(
            error(&many(POLICY_PRINCIPALS_MAX + 1)),
            (too_many.clone(), column)
        );
        // Shorthands count one principal per org.
        let orgs: Vec<String> = (0..POLICY_PRINCIPALS_MAX)
            .map(|i| format!("Org{i}"))
            .collect();
        assert!(Policy::parse("ANY", &orgs).is_ok());
        let error = Policy::parse("AND('Org0.peer', ANY)", &orgs).unwrap_err();
        assert_eq!((error.kind(), error.column()), (&too_many, 18));
    }

    #[test]
    fn text_length_is_limited() {
        let padded = |bytes: usize| {
            let text = "'Org1.peer'";
            format!("{text}{}", " ".repeat(bytes - text.len()))
        };
        assert!(parse(&padded(POLICY_TEXT_BYTES_MAX)).is_ok());
        let error = parse(&padded(POLICY_TEXT_BYTES_MAX + 1)).unwrap_err();
        let kind = Kind::TooLong {
            bytes: POLICY_TEXT_BYTES_MAX + 1,
            max: POLICY_TEXT_BYTES_MAX,
        };
        assert_eq!(
            (error.kind(), error.offset()),
            (&kind, POLICY_TEXT_BYTES_MAX)
        );
    }

    #[test]
    fn long_names_are_cut_in_errors() {
        let name = "X".repeat(1_000);
        let Kind::UnknownFunction(shown) = error(&format!("{name}()")).0 else {
            panic!("wrong kind");
        };
        assert!(shown.len() < 100 && shown.ends_with("..."));
    }
}
