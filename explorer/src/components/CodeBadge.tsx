import type { JSX } from "preact";
import { codeLabel } from "../model/format";

/** A validation code, green when valid, red when not. */
export function CodeBadge(props: { code: string }): JSX.Element {
  const valid = props.code === "VALID";
  return (
    <span class={`badge ${valid ? "valid" : "invalid"}`} data-code={props.code} title={props.code}>
      {valid ? "✓" : "✕"} {codeLabel(props.code)}
    </span>
  );
}
