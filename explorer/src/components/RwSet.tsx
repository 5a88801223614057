import type { TransactionDetail } from "@runnel/sdk";
import type { JSX } from "preact";
import { bytesText } from "../model/format";
import { Link, paths } from "../router";

type NsRwSet = NonNullable<TransactionDetail["payload"]>["rwsets"][number];

/** What a transaction read and wrote, per namespace; keys link to their history. */
export function RwSet(props: { rwsets: readonly NsRwSet[] }): JSX.Element {
  if (props.rwsets.length === 0) return <p class="muted">No reads or writes.</p>;
  return (
    <div class="rwsets">
      {props.rwsets.map((set) => (
        <section key={set.namespace} aria-label={`Read/write set of ${set.namespace}`} class="rwset">
          <h4>
            <code>{set.namespace}</code>
          </h4>
          <table aria-label={`Reads and writes in ${set.namespace}`}>
            <thead>
              <tr>
                <th scope="col">Op</th>
                <th scope="col">Key</th>
                <th scope="col">Version read / value written</th>
              </tr>
            </thead>
            <tbody>
              {set.reads.map((read) => (
                <tr key={`r${bytesText(read.key)}`} class="read">
                  <td>read</td>
                  <td>
                    <KeyLink namespace={set.namespace} keyBytes={read.key} />
                  </td>
                  <td class="num">{read.version === undefined ? <em class="muted">absent</em> : `seq ${read.version.seq}`}</td>
                </tr>
              ))}
              {set.rangeReads.map((range, i) => (
                <tr key={`q${i}`} class="range">
                  <td>range</td>
                  <td>
                    <code>[{bytesText(range.start)}, {range.end === undefined ? "∞" : bytesText(range.end)})</code>
                  </td>
                  <td>
                    {range.reads.length} keys
                    {range.exhausted
                      ? ""
                      : range.last === undefined
                        ? ", none yielded"
                        : `, stopped after ${bytesText(range.last)}`}
                  </td>
                </tr>
              ))}
              {set.writes.map((write) => (
                <tr key={`w${bytesText(write.key)}`} class="write">
                  <td>{write.isDelete ? "delete" : "write"}</td>
                  <td>
                    <KeyLink namespace={set.namespace} keyBytes={write.key} />
                  </td>
                  <td class="value">{write.isDelete ? "" : <code>{bytesText(write.value)}</code>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </div>
  );
}

function KeyLink(props: { namespace: string; keyBytes: Uint8Array }): JSX.Element {
  const key = bytesText(props.keyBytes);
  return (
    <Link href={paths.key(props.namespace, key)}>
      <code>{key}</code>
    </Link>
  );
}
