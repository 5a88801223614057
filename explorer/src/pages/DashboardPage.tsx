import type { JSX } from "preact";
import { BlockList } from "../components/BlockList";
import { CodeBadge } from "../components/CodeBadge";
import { LineChart, type Line } from "../components/LineChart";
import { NetworkFacts } from "../components/NetworkFacts";
import { NodeTable } from "../components/NodeTable";
import { StatCard } from "../components/StatCard";
import { TxList } from "../components/TxList";
import { useFeed, useSnapshot } from "../live/hooks";
import { count, durationShort } from "../model/format";
import { STEPS } from "../model/stages";
import { Link, paths } from "../router";

const STEP_COLORS: Record<(typeof STEPS)[number], string> = {
  endorse: "#2a7de1",
  order: "#9b59b6",
  validate: "#e67e22",
  commit: "#27ae60",
  notify: "#7f8c8d",
};

const THROUGHPUT_LINES: readonly Line[] = [
  { label: "valid tx/s", color: "#27ae60", column: 0 },
  { label: "invalid tx/s", color: "#e74c3c", column: 1 },
];
const P50_LINES: readonly Line[] = STEPS.slice(0, 4).map((step) => ({ label: step, color: STEP_COLORS[step], column: STEPS.indexOf(step) * 2 }));
const P99_LINES: readonly Line[] = STEPS.slice(0, 4).map((step) => ({ label: step, color: STEP_COLORS[step], column: STEPS.indexOf(step) * 2 + 1 }));

const perSecond = (v: number) => `${v < 10 && !Number.isInteger(v) ? v.toFixed(1) : Math.round(v)}/s`;
const micros = (v: number) => durationShort(v);

/** The network at a glance: heights, throughput, latency per stage, codes, nodes. */
export function DashboardPage(): JSX.Element {
  const feed = useFeed();
  const snapshot = useSnapshot();
  const { info, codeCounts } = snapshot;
  const version = snapshot.throughput.x[snapshot.throughput.x.length - 1] ?? 0;
  let valid = 0;
  let invalid = 0;
  for (const [code, n] of codeCounts) {
    if (code === "VALID") valid += n;
    else invalid += n;
  }
  const nodeCounts = snapshot.metrics?.transactionsByCode;
  // Every code either count knows, most frequent first.
  const merged = new Map(codeCounts);
  for (const code of nodeCounts?.keys() ?? []) if (!merged.has(code)) merged.set(code, 0);
  const codes = [...merged.entries()].sort((a, b) => b[1] - a[1] || (nodeCounts?.get(b[0]) ?? 0) - (nodeCounts?.get(a[0]) ?? 0));
  // The streams run ahead of the 2-second info poll: take whichever is further.
  const committedHeight = max(info?.committedHeight, snapshot.transactions[0]?.seq);
  const blockHeight = max(info?.blockHeight, snapshot.blocks[0]?.number);
  return (
    <>
      <h1>Dashboard</h1>
      <div class="stats">
        <StatCard testId="stat-block-height" label="Block height" value={blockHeight === undefined ? "—" : count(blockHeight)} />
        <StatCard testId="stat-committed" label="Committed transactions" value={committedHeight === undefined ? "—" : count(committedHeight)} hint={info && committedHeight !== undefined ? `validated ${count(max(info.validatedHeight, committedHeight) ?? 0n)}, ordered ${count(max(info.orderedHeight, max(info.validatedHeight, committedHeight)) ?? 0n)}` : undefined} />
        <StatCard testId="stat-rate" label="Transactions / s" value={count(snapshot.ratePerSecond)} hint="last second" />
        <StatCard testId="stat-valid" label="Valid" value={count(valid)} hint="since the page loaded (with the last 500 stored)" />
        <StatCard testId="stat-invalid" label="Invalid" value={count(invalid)} hint="since the page loaded" />
      </div>
      <div class="charts">
        <LineChart title="Throughput (tx/s)" series={snapshot.throughput} lines={THROUGHPUT_LINES} format={perSecond} version={version} yMin={10} />
        <LineChart title="Latency p50 by stage" series={snapshot.latency} lines={P50_LINES} format={micros} version={version} yMin={1_000} />
        <LineChart title="Latency p99 by stage" series={snapshot.latency} lines={P99_LINES} format={micros} version={version} yMin={1_000} />
      </div>
      <div class="grid-2 wide-second">
        <section aria-labelledby="codes-heading">
          <h2 id="codes-heading">Transactions by validation code</h2>
          {codes.length === 0 ? (
            <p class="muted">None yet.</p>
          ) : (
            <table aria-labelledby="codes-heading" data-testid="code-counts">
              <thead>
                <tr>
                  <th scope="col">Code</th>
                  <th scope="col" class="num" title="runnel_transactions_total: committed since the node started">
                    Node
                  </th>
                  <th scope="col" class="num" title="Seen by this page since it loaded, with the last 500 stored">
                    Page
                  </th>
                </tr>
              </thead>
              <tbody>
                {codes.map(([code, n]) => (
                  <tr key={code} data-code={code}>
                    <td>
                      <Link href={paths.transactions({ status: code })}>
                        <CodeBadge code={code} />
                      </Link>
                    </td>
                    <td class="num node-count">{nodeCounts?.get(code) === undefined ? "—" : count(nodeCounts.get(code) ?? 0)}</td>
                    <td class="num page-count">{count(n)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <section aria-labelledby="nodes-heading">
          <h2 id="nodes-heading">
            Network and nodes <Link href={paths.network()}>all →</Link>
          </h2>
          <NodeTable url={feed.url} info={info} health={snapshot.health} live={snapshot.connection === "live"} />
          {snapshot.metrics !== undefined && (
            <p class="muted node-metrics" data-testid="node-metrics">
              Validator queues:{" "}
              {[...snapshot.metrics.queueDepth].map(([queue, depth]) => `${queue} ${count(depth)}`).join(", ") || "—"}. Mean commit latency
              since start: {snapshot.metrics.commitLatencyMeanUs === undefined ? "—" : durationShort(snapshot.metrics.commitLatencyMeanUs)}.
            </p>
          )}
          {info !== undefined && <NetworkFacts info={info} />}
        </section>
      </div>
      <div class="grid-2">
        <section aria-labelledby="recent-tx-heading">
          <h2 id="recent-tx-heading">
            Latest transactions <Link href={paths.transactions()}>all →</Link>
          </h2>
          <TxList transactions={snapshot.transactions} height={320} label="Latest transactions" compact />
        </section>
        <section aria-labelledby="recent-blocks-heading">
          <h2 id="recent-blocks-heading">
            Latest blocks <Link href={paths.blocks()}>all →</Link>
          </h2>
          <BlockList blocks={snapshot.blocks} height={320} />
        </section>
      </div>
    </>
  );
}

function max(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return a > b ? a : b;
}
