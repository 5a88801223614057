//! Why a policy text was refused, and where.

use std::fmt;

use super::POLICY_TEXT_BYTES_MAX;

/// Widest excerpt of the policy text an error shows, in characters; longer lines are
/// cut around the offending column.
const EXCERPT_CHARS_MAX: usize = 72;

/// Longest piece of user text quoted in an error message, in characters.
const QUOTE_CHARS_MAX: usize = 64;

/// What is wrong with a policy text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyErrorKind {
    /// The text is longer than [`POLICY_TEXT_BYTES_MAX`].
    #[error("policy is {bytes} bytes long, more than the {max} allowed")]
    TooLong {
        /// The text's length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A token other than the ones the grammar allows here.
    #[error("expected {expected}, found {found}")]
    Expected {
        /// What the grammar allows here.
        expected: &'static str,
        /// What the text has instead.
        found: String,
    },
    /// Input continues after a complete policy.
    #[error("unexpected {found} after the end of the policy")]
    TrailingInput {
        /// What follows the policy.
        found: String,
    },
    /// A principal's opening `'` has no closing one.
    #[error("principal has no closing `'`")]
    UnterminatedPrincipal,
    /// A principal's org name is empty or has a character other than a letter, digit,
    /// `-` or `_`.
    #[error("expected an org name (letters, digits, '-' and '_'), found {found}")]
    BadOrgName {
        /// The offending character, or "nothing".
        found: String,
    },
    /// The org is not in the network's org list.
    #[error("unknown org `{0}` (not an org of this network)")]
    UnknownOrg(String),
    /// The role is not `member`, `client`, `peer`, `orderer` or `admin`.
    #[error("unknown role `{0}` (expected member, admin, client, peer or orderer)")]
    UnknownRole(String),
    /// A name that is not a gate or shorthand.
    #[error(
        "unknown function `{0}` (expected AND, OR, OutOf, MAJORITY or ANY; principals are quoted, as in 'Org1.peer')"
    )]
    UnknownFunction(String),
    /// `AND()` or `OR()`.
    #[error("{gate} needs at least one sub-policy")]
    EmptyGate {
        /// `AND` or `OR`.
        gate: &'static str,
    },
    /// `OutOf`'s count is 0 or more than its number of sub-policies.
    #[error("OutOf needs 1 <= n <= {count} (its number of sub-policies), found {n}")]
    ThresholdOutOfRange {
        /// The count written.
        n: usize,
        /// The number of sub-policies.
        count: usize,
    },
    /// `OutOf`'s count does not fit in a machine word.
    #[error("OutOf count is too large")]
    NumberTooLarge,
    /// Gates nest deeper than [`POLICY_DEPTH_MAX`](super::POLICY_DEPTH_MAX).
    #[error("policy nests gates more than {max} deep")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// More principals than
    /// [`POLICY_PRINCIPALS_MAX`](super::POLICY_PRINCIPALS_MAX).
    #[error("policy has more than {max} principals")]
    TooManyPrincipals {
        /// The limit.
        max: usize,
    },
    /// `MAJORITY` or `ANY` with an empty org list.
    #[error("{shorthand} expands over the network's orgs, and there are none")]
    NoOrgs {
        /// `MAJORITY` or `ANY`.
        shorthand: &'static str,
    },
    /// A shorthand would expand to an org whose name a principal cannot hold.
    #[error("network org `{0}` is not a valid org name (letters, digits, '-' and '_')")]
    BadNetworkOrg(String),
}

impl PolicyErrorKind {
    /// A stable code for the error, for logs and API answers.
    pub fn code(&self) -> &'static str {
        match self {
            PolicyErrorKind::TooLong { .. } => "policy.too_long",
            PolicyErrorKind::Expected { .. } => "policy.expected",
            PolicyErrorKind::TrailingInput { .. } => "policy.trailing_input",
            PolicyErrorKind::UnterminatedPrincipal => "policy.unterminated_principal",
            PolicyErrorKind::BadOrgName { .. } => "policy.bad_org_name",
            PolicyErrorKind::UnknownOrg(_) => "policy.unknown_org",
            PolicyErrorKind::UnknownRole(_) => "policy.unknown_role",
            PolicyErrorKind::UnknownFunction(_) => "policy.unknown_function",
            PolicyErrorKind::EmptyGate { .. } => "policy.empty_gate",
            PolicyErrorKind::ThresholdOutOfRange { .. } => "policy.threshold_out_of_range",
            PolicyErrorKind::NumberTooLarge => "policy.number_too_large",
            PolicyErrorKind::TooDeep { .. } => "policy.too_deep",
            PolicyErrorKind::TooManyPrincipals { .. } => "policy.too_many_principals",
            PolicyErrorKind::NoOrgs { .. } => "policy.no_orgs",
            PolicyErrorKind::BadNetworkOrg(_) => "policy.bad_network_org",
        }
    }
}

/// A refused policy text: what is wrong and where.
///
/// `Display` gives the message, the position, and the offending line with a caret under
/// the column:
///
/// ```text
/// expected ',' or ')', found `'Org2.peer'` at column 17
///   AND('Org1.peer' 'Org2.peer')
///                   ^
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at {}\n{}", self.location(), self.excerpt_with_caret())]
pub struct PolicyError {
    kind: PolicyErrorKind,
    offset: usize,
    line: usize,
    column: usize,
    multiline: bool,
    excerpt: String,
    excerpt_caret: usize,
}

impl PolicyError {
    /// An error of `kind` at byte `offset` of `text` (clamped to the text and moved back
    /// to a character boundary).
    pub(crate) fn new(kind: PolicyErrorKind, text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line = text[..line_start].matches('\n').count() + 1;
        let before: Vec<char> = text[line_start..offset].chars().collect();
        let column = before.len() + 1;
        // Bounded: an over-long text is refused at the limit, so look no further.
        let scanned = text.len().min(POLICY_TEXT_BYTES_MAX + 1);
        let multiline = text.as_bytes()[..scanned].contains(&b'\n');

        // Cut the line to a window around the column, reading no further than the window
        // (the text may be far over the length limit).
        let skip = before.len().saturating_sub(EXCERPT_CHARS_MAX / 2);
        let mut excerpt = String::new();
        if skip > 0 {
            excerpt.push_str("...");
        }
        let excerpt_caret = excerpt.chars().count() + before.len() - skip;
        for (shown, c) in text[line_start..].chars().skip(skip).enumerate() {
            if c == '\n' || c == '\r' {
                break;
            }
            if shown == EXCERPT_CHARS_MAX {
                excerpt.push_str("...");
                break;
            }
            excerpt.push(if c.is_control() { ' ' } else { c });
        }
        PolicyError {
            kind,
            offset,
            line,
            column,
            multiline,
            excerpt,
            excerpt_caret,
        }
    }

    /// What is wrong.
    pub fn kind(&self) -> &PolicyErrorKind {
        &self.kind
    }

    /// A stable code for the error, for logs and API answers.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// Where, as a byte offset into the text.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Where: the line, counting from 1.
    pub fn line(&self) -> usize {
        self.line
    }

    /// Where: the column within the line, in characters, counting from 1.
    pub fn column(&self) -> usize {
        self.column
    }

    fn location(&self) -> String {
        if self.multiline {
            format!("line {}, column {}", self.line, self.column)
        } else {
            format!("column {}", self.column)
        }
    }

    fn excerpt_with_caret(&self) -> ExcerptWithCaret<'_> {
        ExcerptWithCaret(self)
    }
}

struct ExcerptWithCaret<'a>(&'a PolicyError);

impl fmt::Display for ExcerptWithCaret<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = self.0;
        write!(
            f,
            "  {}\n  {:width$}^",
            error.excerpt,
            "",
            width = error.excerpt_caret
        )
    }
}

/// How an error message names a piece of the policy text: quoted, and cut if long.
pub(crate) fn quote(text: &str) -> String {
    format!("`{}`", clip(text))
}

/// A piece of the policy text as error messages carry it: cut if long.
pub(crate) fn clip(text: &str) -> String {
    let mut chars = text.chars();
    let mut head: String = chars.by_ref().take(QUOTE_CHARS_MAX).collect();
    if chars.next().is_some() {
        head.push_str("...");
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected() -> PolicyErrorKind {
        PolicyErrorKind::Expected {
            expected: "',' or ')'",
            found: quote("'Org2.peer'"),
        }
    }

    #[test]
    fn display_points_a_caret_at_the_column() {
        let text = "AND('Org1.peer' 'Org2.peer')";
        let error = PolicyError::new(expected(), text, 16);
        assert_eq!((error.offset(), error.line(), error.column()), (16, 1, 17));
        let caret = format!("  {}^", " ".repeat(16));
        assert_eq!(
            error.to_string(),
            format!("expected ',' or ')', found `'Org2.peer'` at column 17\n  {text}\n{caret}")
        );
    }

    #[test]
    fn multiline_text_reports_line_and_column() {
        let text = "AND(\n  'Org1.peer'\n  'Org2.peer')";
        let offset = text.rfind("'Org2").unwrap();
        let error = PolicyError::new(expected(), text, offset);
        assert_eq!((error.line(), error.column()), (3, 3));
        let shown = error.to_string();
        assert!(shown.contains("at line 3, column 3\n"), "{shown}");
        assert!(shown.ends_with("\n    'Org2.peer')\n    ^"), "{shown}");
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        let text = "OR('Örg.peer')";
        let error = PolicyError::new(expected(), text, text.find("peer").unwrap());
        assert_eq!(error.column(), 9);
        assert!(error.offset() > 8);
    }

    #[test]
    fn an_offset_inside_a_character_moves_back_to_its_start() {
        let text = "'Ö'";
        let error = PolicyError::new(expected(), text, 2);
        assert_eq!((error.offset(), error.column()), (1, 2));
        let error = PolicyError::new(expected(), text, 99);
        assert_eq!(error.offset(), text.len());
    }

    #[test]
    fn long_lines_are_cut_around_the_column() {
        let text = format!("OR({})", "x".repeat(10_000));
        let error = PolicyError::new(expected(), &text, 5_000);
        let shown = error.to_string();
        let mut lines = shown.lines().skip(1);
        let excerpt = lines.next().unwrap();
        let caret = lines.next().unwrap();
        assert!(excerpt.starts_with("  ...") && excerpt.ends_with("..."));
        assert!(excerpt.len() < 100);
        assert_eq!(caret.len() - 1, 2 + 3 + EXCERPT_CHARS_MAX / 2);
        assert_eq!(error.column(), 5_001);
    }

    #[test]
    fn quotes_are_cut_when_long() {
        assert_eq!(quote("abc"), "`abc`");
        assert_eq!(quote(&"a".repeat(70)), format!("`{}...`", "a".repeat(64)));
    }

    #[test]
    fn every_kind_has_a_distinct_code() {
        let kinds = [
            PolicyErrorKind::TooLong { bytes: 1, max: 0 },
            expected(),
            PolicyErrorKind::TrailingInput { found: quote(")") },
            PolicyErrorKind::UnterminatedPrincipal,
            PolicyErrorKind::BadOrgName { found: quote(" ") },
            PolicyErrorKind::UnknownOrg("X".into()),
            PolicyErrorKind::UnknownRole("x".into()),
            PolicyErrorKind::UnknownFunction("X".into()),
            PolicyErrorKind::EmptyGate { gate: "AND" },
            PolicyErrorKind::ThresholdOutOfRange { n: 0, count: 1 },
            PolicyErrorKind::NumberTooLarge,
            PolicyErrorKind::TooDeep { max: 16 },
            PolicyErrorKind::TooManyPrincipals { max: 64 },
            PolicyErrorKind::NoOrgs { shorthand: "ANY" },
            PolicyErrorKind::BadNetworkOrg("a.b".into()),
        ];
        let mut codes: Vec<_> = kinds.iter().map(PolicyErrorKind::code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), kinds.len());
    }
}
