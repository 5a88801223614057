import type { ComponentChildren, JSX } from "preact";
import { verdict } from "../model/verdict";
import { LedgerText } from "./LedgerText";
import { NoNetworkCa } from "./NoNetworkCa";

/**
 * The frame of a check's result in the browser: ✓ and what holds, ✕ and the reason, or
 * "not verified" for want of a network CA (never a ✓); the check's details below.
 */
export function CheckVerdict(props: {
  /** The element's test id. */
  testId: string;
  /** The check's result. */
  result: { readonly valid: boolean; readonly reason?: string };
  /** The ✓ line's title and text. */
  verified: [title: string, what: ComponentChildren];
  /** The ✕ line's title. */
  failed: string;
  /** What could not be checked without a network CA. */
  unverified: string;
  children?: ComponentChildren;
}): JSX.Element {
  const state = verdict(props.result);
  return (
    <div class={`check ${state === "verified" ? "ok" : state === "failed" ? "bad" : "neutral"}`} data-testid={props.testId} data-state={state}>
      {state === "verified" && (
        <>
          <strong>✓ {props.verified[0]}:</strong>
          <span> {props.verified[1]}</span>
        </>
      )}
      {state === "failed" && (
        <>
          <strong>✕ {props.failed}:</strong> <span data-testid="check-reason">
            <LedgerText text={props.result.reason ?? ""} />
          </span>
        </>
      )}
      {state === "unverified" && <NoNetworkCa what={props.unverified} />}
      {props.children}
    </div>
  );
}
