import type { SealCheck } from "@runnel/sdk";
import type { ComponentChildren, JSX } from "preact";
import { Link, paths } from "../router";
import { verdict } from "../model/verdict";
import { LedgerText } from "./LedgerText";
import { NoNetworkCa } from "./NoNetworkCa";

/**
 * The frame of a check's result in the browser: ✓ and what holds, ✕ with the rule that
 * failed and why, or "not verified" when nothing is pinned or given (never a ✓); the
 * check's details below. A ✓ made against the CAs alone says that the membership was not
 * checked.
 */
export function CheckVerdict(props: {
  /** The element's test id. */
  testId: string;
  /** The check's result. */
  result: { readonly valid: boolean; readonly reason?: string; readonly code?: string };
  /** Whether it was checked against the membership of a pinned genesis hash. */
  pinned?: boolean;
  /** The ✓ line's title and text. */
  verified: [title: string, what: ComponentChildren];
  /** The ✕ line's title. */
  failed: string;
  /** What could not be checked without a network CA. */
  unverified: string;
  children?: ComponentChildren;
}): JSX.Element {
  const state = verdict(props.result);
  const pinned = props.pinned ?? false;
  return (
    <div
      class={`check ${state === "verified" ? "ok" : state === "failed" ? "bad" : "neutral"}`}
      data-testid={props.testId}
      data-state={state}
      data-trust={pinned ? "pinned" : "cas"}
      data-rule={props.result.code ?? ""}
    >
      {state === "verified" && (
        <>
          <strong>✓ {props.verified[0]}:</strong>
          <span> {props.verified[1]}</span>
          {!pinned && (
            <>
              <br />
              <small data-testid="unpinned">
                Membership not checked: no genesis hash is pinned, so this says only that an orderer of the CAs given signed, not that it is one of the network's
                orderers now nor that enough of them signed. <Link href={paths.settings()}>Pin the network's genesis hash</Link>.
              </small>
            </>
          )}
        </>
      )}
      {state === "failed" && (
        <>
          <strong>✕ {props.failed}:</strong>{" "}
          {props.result.code !== undefined && <code data-testid="check-rule">{props.result.code}</code>}{" "}
          <span data-testid="check-reason">
            <LedgerText text={props.result.reason ?? ""} />
          </span>
        </>
      )}
      {state === "unverified" && <NoNetworkCa what={props.unverified} />}
      {props.children}
    </div>
  );
}

/**
 * Who signed a seal checked by a pinned membership: "3 of 4 orderers, quorum 3" and
 * their names, of which definition.
 */
export function signedBy(result: SealCheck): JSX.Element {
  const signers = result.signers ?? [];
  const names = signers.map((s) => `${s.name} (${s.org})`).join(", ");
  const definition = `network definition #${result.definitionSequence?.toString() ?? "?"}, followed from the pinned genesis hash`;
  if (!result.ordererCount) {
    return (
      <span data-testid="signed-by">
        signed by {signers.length} orderer{signers.length === 1 ? "" : "s"}, quorum {result.quorum ?? 1}: <LedgerText text={names} /> (the {definition}, names no orderers: any
        orderer of its CAs may sign)
      </span>
    );
  }
  return (
    <span data-testid="signed-by">
      signed by {signers.length} of {result.ordererCount} orderers, quorum {result.quorum ?? 1}: <LedgerText text={names} />, each one the {definition}, names
    </span>
  );
}
