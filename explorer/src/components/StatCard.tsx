import type { ComponentChildren, JSX } from "preact";

/** One figure of the dashboard, with its label. */
export function StatCard(props: { label: string; value: ComponentChildren; hint?: string; testId?: string }): JSX.Element {
  return (
    <article class="stat" data-testid={props.testId}>
      <div class="stat-value">{props.value}</div>
      <div class="stat-label">{props.label}</div>
      {props.hint !== undefined && <small class="muted">{props.hint}</small>}
    </article>
  );
}
