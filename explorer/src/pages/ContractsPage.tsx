import type { JSX } from "preact";
import { Hash } from "../components/Hash";
import { LedgerText } from "../components/LedgerText";
import { useFeed, useLoad } from "../live/hooks";
import { Link, paths } from "../router";

/** The contracts deployed: version, sequence, endorsement policy, code hash. */
export function ContractsPage(): JSX.Element {
  const feed = useFeed();
  const contracts = useLoad(() => feed.gateway.getQuery().listContracts({ limit: 1000 }), []);
  return (
    <>
      <h1>Contracts</h1>
      {contracts.state === "loading" && <p aria-busy="true">Loading contracts…</p>}
      {contracts.state === "failed" && (
        <p class="error">
          <LedgerText text={contracts.error} />
        </p>
      )}
      {contracts.state === "ready" && (
        <table class="striped" aria-label="Deployed contracts">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Version</th>
              <th scope="col">Sequence</th>
              <th scope="col">Endorsement policy</th>
              <th scope="col">Code hash (sha256)</th>
            </tr>
          </thead>
          <tbody>
            {contracts.value.map((contract) => (
              <tr key={contract.name} data-contract={contract.name}>
                <td>
                  <Link href={paths.contract(contract.name)}>
                    <strong>
                      <LedgerText text={contract.name} />
                    </strong>
                  </Link>
                </td>
                <td>
                  <LedgerText text={contract.version} />
                </td>
                <td class="num">{contract.sequence.toString()}</td>
                <td>
                  <code>
                    <LedgerText text={contract.policy} />
                  </code>
                </td>
                <td>
                  <Hash value={contract.codeHash} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
