import type { TransactionDetail } from "@runnel/sdk";
import type { JSX } from "preact";
import { bytesText, hex, keyText } from "../model/format";
import { markedText } from "../model/text";
import { Link, paths } from "../router";
import { LedgerText } from "./LedgerText";

type NsRwSet = NonNullable<TransactionDetail["payload"]>["rwsets"][number];

/** What a transaction read and wrote, per namespace; keys link to their history. */
export function RwSet(props: { rwsets: readonly NsRwSet[] }): JSX.Element {
  if (props.rwsets.length === 0) return <p class="muted">No reads or writes.</p>;
  return (
    <div class="rwsets">
      {props.rwsets.map((set) => (
        <section key={set.namespace} aria-label={`Read/write set of ${markedText(set.namespace)}`} class="rwset">
          <h4>
            <code>
              <LedgerText text={set.namespace} />
            </code>
          </h4>
          <table aria-label={`Reads and writes in ${markedText(set.namespace)}`}>
            <thead>
              <tr>
                <th scope="col">Op</th>
                <th scope="col">Key</th>
                <th scope="col">Version read / value written</th>
              </tr>
            </thead>
            <tbody>
              {set.reads.map((read) => (
                <tr key={`r${hex(read.key)}`} class="read">
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
                    <code>
                      [<LedgerText text={keyText(range.start)} />, {range.end === undefined ? "∞" : <LedgerText text={keyText(range.end)} />})
                    </code>
                  </td>
                  <td>
                    {range.reads.length} keys
                    {range.exhausted ? (
                      ""
                    ) : range.last === undefined ? (
                      ", none yielded"
                    ) : (
                      <>
                        , stopped after <LedgerText text={keyText(range.last)} />
                      </>
                    )}
                  </td>
                </tr>
              ))}
              {set.writes.map((write) => (
                <tr key={`w${hex(write.key)}`} class="write">
                  <td>{write.isDelete ? "delete" : "write"}</td>
                  <td>
                    <KeyLink namespace={set.namespace} keyBytes={write.key} />
                  </td>
                  <td class="value">
                    {write.isDelete ? (
                      ""
                    ) : (
                      <code>
                        <LedgerText text={bytesText(write.value)} />
                      </code>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </div>
  );
}

/** A key, marked where it would mislead, linking to the page of its exact bytes. */
export function KeyLink(props: { namespace: string; keyBytes: Uint8Array }): JSX.Element {
  return (
    <Link href={paths.key(props.namespace, props.keyBytes)}>
      <code>
        <LedgerText text={keyText(props.keyBytes)} />
      </code>
    </Link>
  );
}
