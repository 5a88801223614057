/**
 * The policy port (src/policy.ts) against the cases of the node's own tests
 * (node/api/src/policy/parse.rs and eval.rs): the same texts parse to the same canonical
 * form or fail with the same code at the same column, and the same signers satisfy the
 * same policies. Needs no node.
 */

import { describe, expect, test } from "vitest";
import type { Role } from "../src/msp.js";
import {
  Policy,
  POLICY_DEPTH_MAX,
  POLICY_PRINCIPALS_MAX,
  POLICY_TEXT_BYTES_MAX,
  PolicyError,
  type PolicyErrorCode,
  type PolicySigner,
} from "../src/policy.js";

const ORGS = ["Org1", "Org2", "Org3"];
const parse = (text: string, orgs: readonly string[] = ORGS) => Policy.parse(text, orgs);

/** The code and 1-based column `text` is refused with. */
function refused(text: string, orgs: readonly string[] = ORGS): [PolicyErrorCode, number] {
  try {
    const policy = parse(text, orgs);
    throw new Error(`\`${text}\` parsed as ${policy.toString()}`);
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error;
    return [error.code, error.column];
  }
}

describe("parsing, as policy/parse.rs", () => {
  test("Fabric's examples, a principal alone, every role", () => {
    expect(parse("AND('Org1.member', OR('Org2.peer','Org3.peer'))").toString()).toBe(
      "AND('Org1.member', OR('Org2.peer', 'Org3.peer'))",
    );
    expect(parse("OutOf(2, 'Org1.member','Org2.member','Org3.member')").toString()).toBe(
      "OutOf(2, 'Org1.member', 'Org2.member', 'Org3.member')",
    );
    expect(parse("'Org2.admin'").expr).toEqual({ kind: "principal", principal: { org: "Org2", role: "admin" } });
    for (const role of ["member", "admin", "client", "peer", "orderer"]) {
      expect(parse(`'Org1.${role}'`).principals()).toEqual([{ org: "Org1", role }]);
    }
  });

  test("names and roles are case-insensitive, orgs are not; whitespace anywhere between tokens", () => {
    const a = parse("and('Org1.PEER', Or('Org2.Peer'), outof(1, 'Org3.peer'))");
    const b = parse("AND('Org1.peer', OR('Org2.peer'), OutOf(1, 'Org3.peer'))");
    expect(a.toString()).toBe(b.toString());
    expect(refused("'org1.peer'")).toEqual(["policy.unknown_org", 2]);
    expect(parse(" \t\n OutOf ( 1 ,\r\n\t'Org1.peer' ,  AND ( 'Org2.peer' ) ) \n").toString()).toBe(
      "OutOf(1, 'Org1.peer', AND('Org2.peer'))",
    );
    expect(Policy.parse("AND('Org-1_a.peer', '42.peer')", ["Org-1_a", "42"]).toString()).toBe("AND('Org-1_a.peer', '42.peer')");
  });

  test("MAJORITY and ANY expand over the orgs, in order, duplicates dropped; majority is more than half", () => {
    expect(parse("MAJORITY").toString()).toBe("OutOf(2, 'Org1.peer', 'Org2.peer', 'Org3.peer')");
    expect(parse("ANY").toString()).toBe("OutOf(1, 'Org1.peer', 'Org2.peer', 'Org3.peer')");
    expect(parse("majority  Admin").toString()).toBe("OutOf(2, 'Org1.admin', 'Org2.admin', 'Org3.admin')");
    expect(parse("ANY member").toString()).toBe("OutOf(1, 'Org1.member', 'Org2.member', 'Org3.member')");
    for (const [count, n] of [[1, 1], [2, 2], [3, 2], [4, 3], [5, 3], [64, 33]] as const) {
      const orgs = Array.from({ length: count }, (_, i) => `Org${i}`);
      const expr = Policy.parse("MAJORITY admin", orgs).expr;
      expect(expr.kind === "outOf" ? [expr.n, expr.of.length] : []).toEqual([n, count]);
    }
    expect(Policy.parse("ANY", ["B", "A", "B", "C", "A"]).toString()).toBe("OutOf(1, 'B.peer', 'A.peer', 'C.peer')");
    expect(parse("AND('Org1.admin', MAJORITY, ANY client)").toString()).toBe(
      "AND('Org1.admin', OutOf(2, 'Org1.peer', 'Org2.peer', 'Org3.peer'), OutOf(1, 'Org1.client', 'Org2.client', 'Org3.client'))",
    );
  });

  test("the canonical form parses back to itself", () => {
    for (const text of [
      "'Org1.peer'",
      "and ( 'Org1.Member' ,or('Org2.peer','Org3.ADMIN'))",
      "OUTOF(2,'Org1.client','Org2.orderer','Org3.member')",
      "OR(AND('Org1.peer', 'Org1.peer'), OutOf(1, AND('Org2.peer')))",
      "MAJORITY admin",
    ]) {
      const shown = parse(text).toString();
      expect(parse(shown).toString()).toBe(shown);
    }
    expect(parse("and ( 'Org1.Member' ,outof(1,'Org2.peer','Org3.ADMIN'))").toString()).toBe(
      "AND('Org1.member', OutOf(1, 'Org2.peer', 'Org3.admin'))",
    );
    expect(parse("OR(AND('Org3.peer', 'Org1.admin'), 'Org2.member')").principals().map((p) => `${p.org}.${p.role}`)).toEqual([
      "Org3.peer",
      "Org1.admin",
      "Org2.member",
    ]);
  });

  test("malformed text is refused with the node's code at the node's column", () => {
    const cases: [string, PolicyErrorCode, number][] = [
      ["AND('Org1.peer' 'Org2.peer')", "policy.expected", 17],
      ["", "policy.expected", 1],
      ["   ", "policy.expected", 4],
      ["AND(,'Org1.peer')", "policy.expected", 5],
      ["OR('Org1.peer',)", "policy.expected", 16],
      ["OR(2)", "policy.expected", 4],
      ['OR("Org1.peer")', "policy.expected", 4],
      ["OR(\u00a0'Org1.peer')", "policy.expected", 4],
      ["NAND('Org1.peer')", "policy.unknown_function", 1],
      ["OR(Org1.peer)", "policy.unknown_function", 4],
      ["AND 'Org1.peer'", "policy.expected", 5],
      ["AND('Org1.peer'", "policy.expected", 16],
      ["AND('Org1.peer';", "policy.expected", 16],
      ["OutOf('Org1.peer')", "policy.expected", 7],
      ["OutOf(-1, 'Org1.peer')", "policy.expected", 7],
      ["OutOf(1)", "policy.expected", 8],
      ["OutOf(1 'Org1.peer')", "policy.expected", 9],
      ["MAJORITY(admin)", "policy.trailing_input", 9],
      ["AND()", "policy.empty_gate", 5],
      ["OR('Org1.peer', or( ))", "policy.empty_gate", 21],
      ["OutOf(0, 'Org1.peer')", "policy.threshold_out_of_range", 7],
      ["OutOf( 3, 'Org1.peer', 'Org2.peer')", "policy.threshold_out_of_range", 8],
      ["OutOf(99999999999999999999999, 'Org1.peer')", "policy.number_too_large", 7],
      ["OR('Org1.peer", "policy.unterminated_principal", 4],
      ["'Org1'", "policy.expected", 6],
      ["'Org1.'", "policy.expected", 7],
      ["'.peer'", "policy.bad_org_name", 2],
      ["''", "policy.expected", 2],
      ["'Org 1.peer'", "policy.bad_org_name", 5],
      ["'Org1 .peer'", "policy.bad_org_name", 6],
      ["'Ö.peer'", "policy.bad_org_name", 2],
      ["'Org1.peer.x'", "policy.unknown_role", 7],
      ["'Org1. peer'", "policy.unknown_role", 7],
      ["AND('Org1.boss')", "policy.unknown_role", 11],
      ["MAJORITY admins", "policy.unknown_role", 10],
      ["OR('Org1.peer', 'Org9.peer')", "policy.unknown_org", 18],
      ["'Org1.peer' 'Org2.peer'", "policy.trailing_input", 13],
      ["AND('Org1.peer'))", "policy.trailing_input", 17],
      ["ANY peer peer", "policy.trailing_input", 10],
    ];
    for (const [text, code, column] of cases) expect([text, ...refused(text)]).toEqual([text, code, column]);
    expect(parse("OutOf(002, 'Org1.peer', 'Org2.peer')").toString()).toBe("OutOf(2, 'Org1.peer', 'Org2.peer')");
    // The org a policy names that the network lacks is told apart: an update removing it.
    try {
      parse("'Org9.admin'");
    } catch (error) {
      expect(error).toBeInstanceOf(PolicyError);
      expect((error as PolicyError).org).toBe("Org9");
    }
  });

  test("shorthands need usable orgs", () => {
    expect(refused("OR('Org1.peer', MAJORITY)", [])).toEqual(["policy.unknown_org", 5]);
    expect(refused("ANY admin", [])).toEqual(["policy.no_orgs", 1]);
    expect(refused("  MAJORITY", ["Org1", "Org.2"])).toEqual(["policy.bad_network_org", 3]);
  });

  test("nesting, principals and length are bounded, refused at the limit", () => {
    const nested = (depth: number) => `${"OR(".repeat(depth)}'Org1.peer'${")".repeat(depth)}`;
    expect(() => parse(nested(POLICY_DEPTH_MAX))).not.toThrow();
    expect(refused(nested(POLICY_DEPTH_MAX + 1))).toEqual(["policy.too_deep", 3 * POLICY_DEPTH_MAX + 1]);
    expect(refused(`${"OR(".repeat(POLICY_DEPTH_MAX)}MAJORITY${")".repeat(POLICY_DEPTH_MAX)}`)[0]).toBe("policy.too_deep");
    expect(refused(nested(100_000))[0]).toBe("policy.too_long");
    expect(refused("OR(".repeat(1_000))[0]).toBe("policy.too_deep");
    const many = (count: number) => `OR(${new Array(count).fill("'Org1.peer'").join(",")})`;
    expect(parse(many(POLICY_PRINCIPALS_MAX)).principals()).toHaveLength(64);
    expect(refused(many(POLICY_PRINCIPALS_MAX + 1))).toEqual(["policy.too_many_principals", 4 + 12 * POLICY_PRINCIPALS_MAX]);
    const orgs = Array.from({ length: POLICY_PRINCIPALS_MAX }, (_, i) => `Org${i}`);
    expect(() => Policy.parse("ANY", orgs)).not.toThrow();
    expect(refused("AND('Org0.peer', ANY)", orgs)).toEqual(["policy.too_many_principals", 18]);
    const padded = (bytes: number) => `'Org1.peer'${" ".repeat(bytes - 11)}`;
    expect(() => parse(padded(POLICY_TEXT_BYTES_MAX))).not.toThrow();
    expect(refused(padded(POLICY_TEXT_BYTES_MAX + 1))[0]).toBe("policy.too_long");
  });
});

describe("evaluation, as policy/eval.rs", () => {
  const ORGS7 = Array.from({ length: 7 }, (_, i) => `Org${i}`);
  const signers = (text: string): PolicySigner[] =>
    text
      .split(/\s+/)
      .filter((s) => s !== "")
      .map((s) => {
        const [org, role] = s.split(".");
        return { org: org!, role: role as Role };
      });
  const satisfied = (policy: string, by: string, orgs = ORGS7) => {
    const evaluation = Policy.parse(policy, orgs).evaluate(signers(by));
    expect(evaluation).not.toBe("steps-exhausted");
    return evaluation === "satisfied";
  };

  test("Fabric's AND of member and OR; two out of three members", () => {
    const p = "AND('Org1.member', OR('Org2.peer','Org3.peer'))";
    expect(satisfied(p, "Org1.client Org2.peer")).toBe(true);
    expect(satisfied(p, "Org3.peer Org1.admin")).toBe(true);
    expect(satisfied(p, "Org1.client")).toBe(false);
    expect(satisfied(p, "Org2.peer Org3.peer")).toBe(false);
    expect(satisfied(p, "Org1.peer Org2.admin Org3.client")).toBe(false);
    const q = "OutOf(2, 'Org1.member','Org2.member','Org3.member')";
    expect(satisfied(q, "Org1.peer Org3.admin")).toBe(true);
    expect(satisfied(q, "Org2.client Org3.orderer Org1.peer")).toBe(true);
    expect(satisfied(q, "Org1.peer Org1.admin Org4.peer")).toBe(false);
    expect(satisfied(q, "")).toBe(false);
  });

  test("each signer stands for one principal; member matches every role, a role only itself", () => {
    expect(satisfied("AND('Org1.peer','Org1.peer')", "Org1.peer")).toBe(false);
    expect(satisfied("AND('Org1.peer','Org1.peer')", "Org1.peer Org1.peer")).toBe(true);
    expect(satisfied("AND('Org1.member', 'Org1.peer')", "Org1.peer")).toBe(false);
    expect(satisfied("AND('Org1.member', 'Org1.peer')", "Org1.peer Org1.client")).toBe(true);
    expect(satisfied("OutOf(2, 'Org1.peer', OR('Org1.peer', 'Org2.peer'))", "Org1.peer")).toBe(false);
    const roles: Role[] = ["client", "peer", "orderer", "admin"];
    for (const role of roles) {
      expect(satisfied("'Org1.member'", `Org1.${role}`)).toBe(true);
      for (const wanted of roles) expect(satisfied(`'Org1.${wanted}'`, `Org1.${role}`)).toBe(wanted === role);
      expect(satisfied("'Org2.member'", `Org1.${role}`)).toBe(false);
    }
  });

  test("exact where a greedy evaluator misses; signers outside the policy are ignored", () => {
    expect(satisfied("AND(OR('Org1.member', 'Org2.member'), 'Org1.peer')", "Org1.peer Org2.peer")).toBe(true);
    expect(satisfied("OutOf(2, 'Org1.member', 'Org1.peer', 'Org1.admin')", "Org1.admin Org1.peer")).toBe(true);
    const p = "AND('Org1.member', 'Org1.member', 'Org1.peer', 'Org1.admin')";
    expect(satisfied(p, "Org1.peer Org1.peer Org1.admin Org1.client")).toBe(true);
    expect(satisfied(p, "Org1.peer Org1.admin Org1.admin")).toBe(false);
    expect(satisfied("'Org1.peer'", "Org9.peer Org2.peer Org1.peer")).toBe(true);
    expect(satisfied("'Org1.peer'", "Org9.peer Org2.peer")).toBe(false);
  });

  test("MAJORITY admin needs admins of more than half the orgs, one each", () => {
    const orgs = ["Org1", "Org2", "Org3", "Org4", "Org5"];
    const policy = Policy.parse("MAJORITY admin", orgs);
    expect(policy.isSatisfiedBy(signers("Org1.admin Org2.admin Org3.peer"))).toBe(false);
    expect(policy.isSatisfiedBy(signers("Org1.admin Org1.admin Org1.admin"))).toBe(false);
    expect(policy.isSatisfiedBy(signers("Org1.admin Org5.admin Org3.admin"))).toBe(true);
    // The configuration's usual shapes.
    const two = ["Org1", "Org2"];
    expect(Policy.parse("MAJORITY admin", two).isSatisfiedBy(signers("Org1.admin"))).toBe(false);
    expect(Policy.parse("MAJORITY admin", two).isSatisfiedBy(signers("Org1.admin Org2.admin"))).toBe(true);
    expect(Policy.parse("ANY admin", two).isSatisfiedBy(signers("Org2.admin"))).toBe(true);
    expect(Policy.parse("'Org1.admin'", two).isSatisfiedBy(signers("Org2.admin"))).toBe(false);
    expect(Policy.parse("OutOf(1, 'Org2.admin', 'Org1.admin')", two).isSatisfiedBy(signers("Org1.admin"))).toBe(true);
  });

  test("the answer does not depend on the signers' order; many of one kind are capped", () => {
    const p = Policy.parse(
      "OutOf(3, AND('Org1.peer', 'Org2.member'), 'Org2.admin', OR('Org1.member', 'Org3.peer'), 'Org3.peer')",
      ORGS7,
    );
    const e = signers("Org1.peer Org2.admin Org3.peer Org1.client Org2.peer");
    expect(p.isSatisfiedBy(e)).toBe(true);
    for (let i = 0; i < e.length; i += 1) {
      e.push(e.shift()!);
      expect(p.isSatisfiedBy(e)).toBe(true);
      e.reverse();
      expect(p.isSatisfiedBy(e)).toBe(true);
    }
    const many: PolicySigner[] = [...new Array(10_000).fill({ org: "Org1", role: "peer" }), { org: "Org2", role: "peer" }];
    const q = Policy.parse(`AND('Org2.peer', ${new Array(63).fill("'Org1.peer'").join(", ")})`, ORGS7);
    expect(q.isSatisfiedBy(many)).toBe(true);
    many.pop();
    expect(q.isSatisfiedBy(many)).toBe(false);
  });

  test("pigeonhole policies and competing gates are decided within the step budget", () => {
    const p = `OutOf(16, ${new Array(32).fill("'Org1.peer'").join(", ")})`;
    expect(satisfied(p, new Array(15).fill("Org1.peer").join(" "))).toBe(false);
    expect(satisfied(p, new Array(16).fill("Org1.peer").join(" "))).toBe(true);
    const any = "OR('Org1.peer', 'Org2.peer', 'Org3.peer', 'Org4.peer', 'Org5.peer', 'Org6.peer')";
    const six = signers("Org1.peer Org2.peer Org3.peer Org4.peer Org5.peer Org6.peer");
    expect(Policy.parse(`AND(${new Array(7).fill(any).join(", ")})`, ORGS7).evaluate(six)).toBe("unsatisfied");
    expect(Policy.parse(`AND(${new Array(6).fill(any).join(", ")})`, ORGS7).isSatisfiedBy(six)).toBe(true);
    const q =
      "OutOf(2, OutOf(2, 'Org2.member', 'Org2.member'), OutOf(1, OutOf(1, 'Org0.peer', 'Org2.client'), " +
      "OutOf(1, 'Org2.admin', 'Org1.admin'), AND('Org0.member'), AND('Org2.member', 'Org0.orderer')))";
    expect(satisfied(q, "Org2.client Org1.admin Org2.admin Org4.peer")).toBe(true);
    expect(satisfied(q, "Org2.client Org2.admin Org4.peer")).toBe(false);
  });
});
