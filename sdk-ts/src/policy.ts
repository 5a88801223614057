/**
 * Fabric's signature-policy language, as the node parses and evaluates it
 * (node/api/src/policy.rs, policy/parse.rs, policy/eval.rs): what a client needs to
 * decide, without trusting a node, whether the admins who signed a `_config` update meet
 * the `config_policy` of the definition in force. The Rust code is the reference; this
 * port keeps its grammar, its limits, its error kinds and codes, and its exact
 * evaluation (one endorser per principal, the same search with the same step budget), so
 * that both answer alike. It never decides an endorsement policy for the node (endorsers
 * are nodes) and holds no state.
 *
 * ```text
 * policy    := principal | gate | shorthand
 * principal := "'" org "." role "'"          'Org1.admin', 'Org2.member'
 * gate      := AND "(" policy ("," policy)* ")" | OR "(" ... ")" | OutOf "(" n ("," policy)+ ")"
 * shorthand := MAJORITY [role] | ANY [role]  (role defaulting to peer)
 * ```
 */

import { ROLES, type Role } from "./msp.js";

/** Longest policy text accepted, in bytes (UTF-8). */
export const POLICY_TEXT_BYTES_MAX = 4096;
/** Deepest nesting of gates (shorthands count as gates). */
export const POLICY_DEPTH_MAX = 16;
/** Most principals a policy may hold, each org of an expanded shorthand counted. */
export const POLICY_PRINCIPALS_MAX = 64;
/** Most endorsers of one org and role that evaluation counts; a policy can use no more. */
export const POLICY_ENDORSERS_MAX = 64;
/** Most search steps one evaluation takes; past it the answer is `"steps-exhausted"`, unsatisfied. */
export const POLICY_EVAL_STEPS_MAX = 10_000;

/** A principal's role: one of {@link ROLES}, or `member` (any role of the org). */
export type RoleMatch = Role | "member";

/** Who must sign: an org and a role within it (`'Org1.admin'`). */
export interface Principal {
  readonly org: string;
  readonly role: RoleMatch;
}

/** A policy's syntax tree, shorthands expanded, sub-policies in written order. */
export type PolicyExpr =
  | { readonly kind: "principal"; readonly principal: Principal }
  | { readonly kind: "and"; readonly of: readonly PolicyExpr[] }
  | { readonly kind: "or"; readonly of: readonly PolicyExpr[] }
  | { readonly kind: "outOf"; readonly n: number; readonly of: readonly PolicyExpr[] };

/** A verified, distinct signer, as evaluation sees it. */
export interface PolicySigner {
  readonly org: string;
  readonly role: Role;
}

/** The outcome of {@link Policy.evaluate}. */
export type PolicyEvaluation = "satisfied" | "unsatisfied" | "steps-exhausted";

/** The node's stable codes of a refused policy text (`PolicyErrorKind::code`). */
export type PolicyErrorCode =
  | "policy.too_long"
  | "policy.expected"
  | "policy.trailing_input"
  | "policy.unterminated_principal"
  | "policy.bad_org_name"
  | "policy.unknown_org"
  | "policy.unknown_role"
  | "policy.unknown_function"
  | "policy.empty_gate"
  | "policy.threshold_out_of_range"
  | "policy.number_too_large"
  | "policy.too_deep"
  | "policy.too_many_principals"
  | "policy.no_orgs"
  | "policy.bad_network_org";

/** A refused policy text: what is wrong (`code`, as the node names it) and where. */
export class PolicyError extends Error {
  /** The node's code for the kind of error. */
  readonly code: PolicyErrorCode;
  /** Where, in UTF-8 bytes from the start of the text. */
  readonly offset: number;
  /** Where, 1-based, in characters from the start of its line. */
  readonly column: number;
  /** The org the text names that the network does not have (`policy.unknown_org`). */
  readonly org: string | undefined;

  constructor(code: PolicyErrorCode, message: string, text: string, offset: number, org?: string) {
    const bytes = new TextEncoder().encode(text);
    const at = Math.min(offset, bytes.length);
    const before = new TextDecoder().decode(bytes.subarray(0, at));
    const lineStart = before.lastIndexOf("\n") + 1;
    const column = [...before.slice(lineStart)].length + 1;
    super(`${message} at column ${column}`);
    this.name = "PolicyError";
    this.code = code;
    this.offset = at;
    this.column = column;
    this.org = org;
  }
}

/** A parsed policy, within every limit above; only {@link Policy.parse} makes one. */
export class Policy {
  /** The syntax tree. */
  readonly expr: PolicyExpr;
  readonly #tree: Tree;

  private constructor(expr: PolicyExpr) {
    this.expr = expr;
    this.#tree = new Tree(expr);
  }

  /**
   * Parses `text` over the network's `orgs` (which principals must name, and shorthands
   * expand over, in order, duplicates ignored).
   *
   * @throws PolicyError saying what is wrong and where.
   */
  static parse(text: string, orgs: readonly string[]): Policy {
    return new Policy(parse(text, orgs));
  }

  /** Every principal, in written order. */
  principals(): Principal[] {
    const principals: Principal[] = [];
    forEachPrincipal(this.expr, (p) => principals.push(p));
    return principals;
  }

  /**
   * Whether `signers` (verified, distinct) satisfy the policy, each standing for at most
   * one principal; exact, as the node decides it. Never depends on the signers' order.
   */
  evaluate(signers: readonly PolicySigner[]): PolicyEvaluation {
    return new Search(this.#tree, signers, POLICY_EVAL_STEPS_MAX).evaluate();
  }

  /** {@link Policy.evaluate} is `"satisfied"`. */
  isSatisfiedBy(signers: readonly PolicySigner[]): boolean {
    return this.evaluate(signers) === "satisfied";
  }

  /** The canonical form, as the node prints it: `AND`, `OR`, `OutOf`, lowercase roles. */
  toString(): string {
    return show(this.expr);
  }
}

function show(expr: PolicyExpr): string {
  switch (expr.kind) {
    case "principal":
      return `'${expr.principal.org}.${expr.principal.role}'`;
    case "and":
      return `AND(${expr.of.map(show).join(", ")})`;
    case "or":
      return `OR(${expr.of.map(show).join(", ")})`;
    case "outOf":
      return `OutOf(${[String(expr.n), ...expr.of.map(show)].join(", ")})`;
  }
}

function forEachPrincipal(expr: PolicyExpr, visit: (principal: Principal) => void): void {
  if (expr.kind === "principal") visit(expr.principal);
  else for (const sub of expr.of) forEachPrincipal(sub, visit);
}

// ---------------------------------------------------------------------------------------
// Parsing (policy/parse.rs). Offsets are UTF-8 byte offsets, as the node's.

const EXPECTED_POLICY = "a policy (a principal such as 'Org1.peer', AND, OR, OutOf, MAJORITY or ANY)";
const QUOTE_CHARS_MAX = 64;

type TokenKind = "name" | "number" | "quoted" | "lparen" | "rparen" | "comma" | "other" | "end";

interface Token {
  readonly kind: TokenKind;
  /** Byte offsets of its first character and just past its last. */
  readonly offset: number;
  readonly end: number;
}

type Gate = "AND" | "OR" | "OutOf" | "MAJORITY" | "ANY";
const GATES: readonly Gate[] = ["AND", "OR", "OutOf", "MAJORITY", "ANY"];

const isAsciiDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isAsciiAlpha = (b: number) => (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a);
const isAsciiWhitespace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0c || b === 0x0d;
const isOrgChar = (c: string) => /^[A-Za-z0-9_-]$/.test(c);
const isOrgName = (name: string) => name.length > 0 && [...name].every(isOrgChar);

/** `text` cut to {@link QUOTE_CHARS_MAX} characters, as the node quotes user text. */
function clip(text: string): string {
  const chars = [...text];
  return chars.length <= QUOTE_CHARS_MAX ? text : `${chars.slice(0, QUOTE_CHARS_MAX).join("")}...`;
}

function roleMatch(written: string): RoleMatch | undefined {
  // The node compares ASCII case-insensitively: a non-ASCII letter never matches.
  if (!/^[A-Za-z]+$/.test(written)) return undefined;
  const lower = written.toLowerCase();
  if (lower === "member") return "member";
  return ROLES.find((role) => role === lower);
}

function parse(text: string, orgs: readonly string[]): PolicyExpr {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > POLICY_TEXT_BYTES_MAX) {
    throw new PolicyError(
      "policy.too_long",
      `policy is ${bytes.length} bytes long, more than the ${POLICY_TEXT_BYTES_MAX} allowed`,
      text,
      POLICY_TEXT_BYTES_MAX,
    );
  }
  const parser = new Parser(text, bytes, orgs);
  const expr = parser.policy(0);
  const token = parser.next();
  if (token.kind !== "end") {
    throw parser.error("policy.trailing_input", `unexpected ${parser.describe(token)} after the end of the policy`, token.offset);
  }
  return expr;
}

class Parser {
  readonly #text: string;
  readonly #bytes: Uint8Array;
  readonly #orgs: string[];
  readonly #known: Set<string>;
  #pos = 0;
  #principals = 0;

  constructor(text: string, bytes: Uint8Array, orgs: readonly string[]) {
    this.#text = text;
    this.#bytes = bytes;
    this.#known = new Set();
    this.#orgs = [];
    for (const org of orgs) {
      if (!this.#known.has(org)) {
        this.#known.add(org);
        this.#orgs.push(org);
      }
    }
  }

  error(code: PolicyErrorCode, message: string, offset: number, org?: string): PolicyError {
    return new PolicyError(code, message, this.#text, offset, org);
  }

  #slice(from: number, to: number): string {
    return new TextDecoder().decode(this.#bytes.subarray(from, to));
  }

  describe(token: Token): string {
    if (token.kind === "end") return "end of input";
    return `\`${clip(this.#slice(token.offset, token.end))}\``;
  }

  #expected(expected: string, token: Token): PolicyError {
    return this.error("policy.expected", `expected ${expected}, found ${this.describe(token)}`, token.offset);
  }

  peek(): Token {
    const bytes = this.#bytes;
    let offset = this.#pos;
    while (offset < bytes.length && isAsciiWhitespace(bytes[offset]!)) offset += 1;
    const token = (kind: TokenKind, end: number): Token => ({ kind, offset, end });
    if (offset >= bytes.length) return token("end", offset);
    const b = bytes[offset]!;
    const run = (accept: (b: number) => boolean) => {
      let end = offset;
      while (end < bytes.length && accept(bytes[end]!)) end += 1;
      return end;
    };
    if (b === 0x28) return token("lparen", offset + 1);
    if (b === 0x29) return token("rparen", offset + 1);
    if (b === 0x2c) return token("comma", offset + 1);
    if (b === 0x27) {
      const close = bytes.indexOf(0x27, offset + 1);
      if (close < 0) throw this.error("policy.unterminated_principal", "principal has no closing `'`", offset);
      return token("quoted", close + 1);
    }
    if (isAsciiDigit(b)) return token("number", run(isAsciiDigit));
    if (isAsciiAlpha(b) || b === 0x5f) return token("name", run((c) => isAsciiAlpha(c) || isAsciiDigit(c) || c === 0x5f));
    // One character, however many bytes it takes.
    const length = b < 0x80 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
    return token("other", Math.min(offset + length, bytes.length));
  }

  next(): Token {
    const token = this.peek();
    this.#pos = token.end;
    return token;
  }

  #expect(kind: TokenKind, expected: string): Token {
    const token = this.next();
    if (token.kind !== kind) throw this.#expected(expected, token);
    return token;
  }

  policy(depth: number): PolicyExpr {
    const token = this.next();
    if (token.kind === "quoted") return this.#principal(token);
    if (token.kind !== "name") throw this.#expected(EXPECTED_POLICY, token);
    const name = this.#slice(token.offset, token.end);
    const gate = GATES.find((g) => g.toLowerCase() === name.toLowerCase());
    if (gate === undefined) {
      throw this.error(
        "policy.unknown_function",
        `unknown function \`${clip(name)}\` (expected AND, OR, OutOf, MAJORITY or ANY; principals are quoted, as in 'Org1.peer')`,
        token.offset,
      );
    }
    if (depth >= POLICY_DEPTH_MAX) {
      throw this.error("policy.too_deep", `policy nests gates more than ${POLICY_DEPTH_MAX} deep`, token.offset);
    }
    return gate === "MAJORITY" || gate === "ANY" ? this.#shorthand(gate, token) : this.#gate(gate, depth + 1);
  }

  #gate(gate: "AND" | "OR" | "OutOf", depth: number): PolicyExpr {
    this.#expect("lparen", "'('");
    let threshold: { n: number; written: bigint; offset: number } | undefined;
    if (gate === "OutOf") {
      const number = this.#expect("number", "a number (how many of)");
      const written = BigInt(this.#slice(number.offset, number.end));
      // usize on the node: a count that does not fit 64 bits is too large.
      if (written > 0xffff_ffff_ffff_ffffn) {
        throw this.error("policy.number_too_large", "OutOf count is too large", number.offset);
      }
      // Past any count of sub-policies, the exact number changes no verdict.
      const n = written > BigInt(POLICY_PRINCIPALS_MAX + 1) ? POLICY_PRINCIPALS_MAX + 1 : Number(written);
      threshold = { n, written, offset: number.offset };
      this.#expect("comma", "',' and the sub-policies");
    } else {
      const token = this.peek();
      if (token.kind === "rparen") {
        throw this.error("policy.empty_gate", `${gate} needs at least one sub-policy`, token.offset);
      }
    }
    const of: PolicyExpr[] = [];
    for (;;) {
      of.push(this.policy(depth));
      const token = this.next();
      if (token.kind === "comma") continue;
      if (token.kind === "rparen") break;
      throw this.#expected("',' or ')'", token);
    }
    if (threshold !== undefined) {
      const { n, written, offset } = threshold;
      if (n < 1 || n > of.length) {
        throw this.error(
          "policy.threshold_out_of_range",
          `OutOf needs 1 <= n <= ${of.length} (its number of sub-policies), found ${written}`,
          offset,
        );
      }
      return { kind: "outOf", n, of };
    }
    return gate === "AND" ? { kind: "and", of } : { kind: "or", of };
  }

  #shorthand(gate: "MAJORITY" | "ANY", name: Token): PolicyExpr {
    let role: RoleMatch = "peer";
    const token = this.peek();
    if (token.kind === "name") {
      this.next();
      const written = this.#slice(token.offset, token.end);
      const parsed = roleMatch(written);
      if (parsed === undefined) throw this.#unknownRole(written, token.offset);
      role = parsed;
    }
    if (this.#orgs.length === 0) {
      throw this.error("policy.no_orgs", `${gate} expands over the network's orgs, and there are none`, name.offset);
    }
    const bad = this.#orgs.find((org) => !isOrgName(org));
    if (bad !== undefined) {
      throw this.error(
        "policy.bad_network_org",
        `network org \`${clip(bad)}\` is not a valid org name (letters, digits, '-' and '_')`,
        name.offset,
      );
    }
    this.#count(this.#orgs.length, name.offset);
    const of: PolicyExpr[] = this.#orgs.map((org) => ({ kind: "principal", principal: { org, role } }));
    const n = gate === "MAJORITY" ? Math.floor(of.length / 2) + 1 : 1;
    return { kind: "outOf", n, of };
  }

  #unknownRole(written: string, offset: number): PolicyError {
    return this.error(
      "policy.unknown_role",
      `unknown role \`${clip(written)}\` (expected member, admin, client, peer or orderer)`,
      offset,
    );
  }

  #principal(quoted: Token): PolicyExpr {
    const start = quoted.offset + 1;
    const close = quoted.end - 1;
    const content = this.#slice(start, close);
    const chars = [...content];
    const dotIndex = chars.findIndex((c) => !isOrgChar(c));
    if (dotIndex < 0) {
      throw this.error("policy.expected", "expected '.' and a role after the org name, found `'`", close);
    }
    const org = chars.slice(0, dotIndex).join("");
    const rest = chars.slice(dotIndex).join("");
    // Org characters are ASCII, so the org's length in bytes is its length in characters.
    const dot = start + org.length;
    if (org === "" || !rest.startsWith(".")) {
      const c = rest[0] !== undefined ? [...rest][0]! : undefined;
      const found =
        c === undefined ? "nothing" : org !== "" ? `\`${c}\`` : `\`${c}\` where the org name starts`;
      throw this.error("policy.bad_org_name", `expected an org name (letters, digits, '-' and '_'), found ${found}`, dot);
    }
    if (!this.#known.has(org)) {
      throw this.error("policy.unknown_org", `unknown org \`${clip(org)}\` (not an org of this network)`, start, org);
    }
    const roleText = rest.slice(1);
    const roleOffset = dot + 1;
    if (roleText === "") throw this.error("policy.expected", "expected a role after '.', found `'`", roleOffset);
    const role = roleMatch(roleText);
    if (role === undefined) throw this.#unknownRole(roleText, roleOffset);
    this.#count(1, quoted.offset);
    return { kind: "principal", principal: { org, role } };
  }

  #count(more: number, offset: number): void {
    this.#principals += more;
    if (this.#principals > POLICY_PRINCIPALS_MAX) {
      throw this.error("policy.too_many_principals", `policy has more than ${POLICY_PRINCIPALS_MAX} principals`, offset);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Exact evaluation (policy/eval.rs): the same compiled tree, search, pruning and step
// budget, so that a contrived policy runs out of steps here exactly when it does there.

const UNREACHABLE = Number.MAX_SAFE_INTEGER;
const ROLE_ORDER: readonly Role[] = ["client", "peer", "orderer", "admin"];
const roleIndex = (role: Role): number => ROLE_ORDER.indexOf(role);

/** Rust's derived `Ord` of `Expr`: principals, then AND, OR, OutOf; fields in order. */
function compareExpr(a: PolicyExpr, b: PolicyExpr): number {
  const rank = { principal: 0, and: 1, or: 2, outOf: 3 } as const;
  if (a.kind !== b.kind) return rank[a.kind] - rank[b.kind];
  if (a.kind === "principal" && b.kind === "principal") {
    const org = compareStrings(a.principal.org, b.principal.org);
    if (org !== 0) return org;
    return roleRank(a.principal.role) - roleRank(b.principal.role);
  }
  if (a.kind === "outOf" && b.kind === "outOf" && a.n !== b.n) return a.n - b.n;
  const of = (e: PolicyExpr) => (e.kind === "principal" ? [] : e.of);
  const [x, y] = [of(a), of(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const c = compareExpr(x[i]!, y[i]!);
    if (c !== 0) return c;
  }
  return x.length - y.length;
}

/** `RoleMatch`'s derived order: `Member` first, then the roles in declaration order. */
function roleRank(role: RoleMatch): number {
  return role === "member" ? 0 : 1 + roleIndex(role);
}

/** Rust's `str` order: by UTF-8 bytes. */
function compareStrings(a: string, b: string): number {
  const [x, y] = [new TextEncoder().encode(a), new TextEncoder().encode(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i]! - y[i]!;
  }
  return x.length - y.length;
}

interface Slot {
  readonly org: number;
  readonly role: RoleMatch;
}

type Node = { readonly leaf: number } | { readonly need: number; readonly children: number[] };

interface Leaf {
  readonly slot: number;
  readonly twinOfPrevious: boolean;
  /** The gates above, root first, with the position of the child leading here. */
  readonly path: readonly (readonly [number, number])[];
}

class Tree {
  readonly nodes: Node[] = [];
  readonly leaves: Leaf[] = [];
  readonly slots: Slot[] = [];
  /** The orgs named in the policy, sorted. */
  readonly orgs: string[];

  constructor(expr: PolicyExpr) {
    const orgs: string[] = [];
    forEachPrincipal(expr, (p) => orgs.push(p.org));
    this.orgs = [...new Set(orgs)].sort(compareStrings);
    this.#add(expr, []);
  }

  orgIndex(org: string): number {
    return this.orgs.indexOf(org);
  }

  #add(expr: PolicyExpr, path: (readonly [number, number])[]): number {
    const node = this.nodes.length;
    if (expr.kind === "principal") {
      const org = this.orgIndex(expr.principal.org);
      const role = expr.principal.role;
      let slot = this.slots.findIndex((s) => s.org === org && s.role === role);
      if (slot < 0) {
        this.slots.push({ org, role });
        slot = this.slots.length - 1;
      }
      const parent = path[path.length - 1];
      let twinOfPrevious = false;
      if (parent !== undefined && parent[1] > 0) {
        const gate = this.nodes[parent[0]]!;
        if ("children" in gate) {
          const previous = this.nodes[gate.children[parent[1] - 1]!]!;
          twinOfPrevious = "leaf" in previous && this.leaves[previous.leaf]!.slot === slot;
        }
      }
      this.nodes.push({ leaf: this.leaves.length });
      this.leaves.push({ slot, twinOfPrevious, path: [...path] });
      return node;
    }
    const need = expr.kind === "and" ? expr.of.length : expr.kind === "or" ? 1 : expr.n;
    const children: number[] = [];
    this.nodes.push({ need, children });
    const sorted = [...expr.of].sort(compareExpr);
    sorted.forEach((sub, position) => {
      path.push([node, position]);
      children.push(this.#add(sub, path));
      path.pop();
    });
    return node;
  }
}

class Search {
  readonly #tree: Tree;
  readonly #stepsMax: number;
  readonly #supplyRole: number[][];
  readonly #supplyOrg: number[];
  readonly #supplyAll: number;
  readonly #takenSlot: number[];
  readonly #takenRole: number[][];
  readonly #takenOrg: number[];
  #takenAll = 0;
  readonly #taken: boolean[];
  readonly #cost: number[];
  readonly #failed = new Set<string>();
  #steps = 0;

  constructor(tree: Tree, signers: readonly PolicySigner[], stepsMax: number) {
    this.#tree = tree;
    this.#stepsMax = stepsMax;
    const orgs = tree.orgs.length;
    this.#supplyRole = Array.from({ length: orgs }, () => [0, 0, 0, 0]);
    for (const signer of signers) {
      const org = tree.orgIndex(signer.org);
      const role = roleIndex(signer.role);
      if (org < 0 || role < 0) continue;
      const counts = this.#supplyRole[org]!;
      counts[role] = Math.min(counts[role]! + 1, POLICY_ENDORSERS_MAX);
    }
    this.#supplyOrg = this.#supplyRole.map((r) => r.reduce((a, b) => a + b, 0));
    this.#supplyAll = this.#supplyOrg.reduce((a, b) => a + b, 0);
    this.#takenSlot = tree.slots.map(() => 0);
    this.#takenRole = Array.from({ length: orgs }, () => [0, 0, 0, 0]);
    this.#takenOrg = Array.from({ length: orgs }, () => 0);
    this.#taken = tree.leaves.map(() => false);
    this.#cost = tree.nodes.map(() => UNREACHABLE);
  }

  evaluate(): PolicyEvaluation {
    const outcome = this.#run(0);
    return outcome === "found" ? "satisfied" : outcome === "failed" ? "unsatisfied" : "steps-exhausted";
  }

  #canTake(slot: number): boolean {
    const { org, role } = this.#tree.slots[slot]!;
    const roleLeft = role === "member" || this.#takenRole[org]![roleIndex(role)]! < this.#supplyRole[org]![roleIndex(role)]!;
    return roleLeft && this.#takenOrg[org]! < this.#supplyOrg[org]!;
  }

  #move(slot: number, by: 1 | -1): void {
    const { org, role } = this.#tree.slots[slot]!;
    this.#takenSlot[slot]! += by;
    this.#takenOrg[org]! += by;
    this.#takenAll += by;
    if (role !== "member") this.#takenRole[org]![roleIndex(role)]! += by;
  }

  /** Every node's cost with leaves before `next` decided (a lower bound of what each still needs). */
  #updateCosts(next: number): void {
    const { nodes, leaves } = this.#tree;
    for (let node = nodes.length - 1; node >= 0; node -= 1) {
      const current = nodes[node]!;
      if ("leaf" in current) {
        const leaf = current.leaf;
        if (leaf < next) {
          this.#cost[node] = this.#taken[leaf] ? 0 : UNREACHABLE;
        } else {
          const { slot, twinOfPrevious } = leaves[leaf]!;
          const twinRefused = twinOfPrevious && leaf === next && !this.#taken[next - 1];
          this.#cost[node] = !twinRefused && this.#canTake(slot) ? 1 : UNREACHABLE;
        }
      } else {
        const costs = current.children.map((child) => this.#cost[child]!).sort((a, b) => a - b);
        let sum = 0;
        for (const cost of costs.slice(0, current.need)) sum = Math.min(sum + cost, UNREACHABLE);
        this.#cost[node] = sum;
      }
    }
  }

  /** What the rest of the search from leaf `next` depends on. */
  #key(next: number): string {
    const leaf = this.#tree.leaves[next]!;
    const key: number[] = [next];
    for (const [gate, position] of leaf.path) {
      const node = this.#tree.nodes[gate]!;
      if ("children" in node) {
        key.push(node.children.slice(0, position).filter((child) => this.#cost[child] === 0).length);
      }
    }
    key.push(next > 0 && this.#taken[next - 1] ? 1 : 0);
    key.push(...this.#takenSlot);
    return key.join(",");
  }

  #run(next: number): "found" | "failed" | "exhausted" {
    if (this.#steps === this.#stepsMax) return "exhausted";
    this.#steps += 1;
    this.#updateCosts(next);
    const root = this.#cost[0]!;
    if (root === 0) {
      this.#taken.fill(false, next);
      return "found";
    }
    const remaining = this.#supplyAll - this.#takenAll;
    if (root > remaining || next === this.#tree.leaves.length) return "failed";
    const key = this.#key(next);
    if (this.#failed.has(key)) return "failed";
    const leaf = this.#tree.leaves[next]!;
    const useful = leaf.path.every(([gate]) => {
      const cost = this.#cost[gate]!;
      return cost !== 0 && cost <= remaining;
    });
    const twinOk = !leaf.twinOfPrevious || this.#taken[next - 1] === true;
    if (useful && twinOk && this.#canTake(leaf.slot)) {
      this.#move(leaf.slot, 1);
      this.#taken[next] = true;
      const outcome = this.#run(next + 1);
      this.#move(leaf.slot, -1);
      if (outcome !== "failed") return outcome;
    }
    this.#taken[next] = false;
    const outcome = this.#run(next + 1);
    if (outcome === "failed") this.#failed.add(key);
    return outcome;
  }
}
