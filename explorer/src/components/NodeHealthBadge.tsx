import type { JSX } from "preact";
import type { NodeHealthState } from "../model/network";
import { LedgerText } from "./LedgerText";

/** A node's health as the serving node knows it: alive, unreachable with why, or not checked. */
export function NodeHealthBadge(props: { health: NodeHealthState }): JSX.Element {
  const { health } = props;
  if (health.state === "unchecked") return <span class="muted">{health.reason}</span>;
  const age = health.checkedMsAgo === undefined ? undefined : <small class="muted"> checked {(health.checkedMsAgo / 1000).toFixed(1)} s ago</small>;
  if (health.state === "alive") {
    return (
      <>
        <span class="badge valid">● alive</span>
        {age}
      </>
    );
  }
  return (
    <>
      <span class="badge invalid">● unreachable</span>{" "}
      <small class="error">
        <LedgerText text={health.error} />
      </small>
      {age}
    </>
  );
}
