import { parseTrustedCas, type TrustedCa } from "@runnel/sdk";
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { Hash } from "../components/Hash";
import { LedgerText } from "../components/LedgerText";
import { useLoad } from "../live/hooks";
import { NETWORK_CA_CHARS_MAX, saveNetworkCa, trustedCas, useNetworkCa } from "../live/network-ca";
import { dateTime, hex } from "../model/format";

/** Most files read at once from the file picker. */
const CA_FILES_MAX = 16;

/** Settings: the network's CA certificates that seal and inclusion checks trust. */
export function SettingsPage(): JSX.Element {
  return (
    <>
      <h1>Settings</h1>
      <NetworkCaForm />
    </>
  );
}

/** Paste or load the network's CA certificates (PEM), check them, keep them in this browser. */
function NetworkCaForm(): JSX.Element {
  const saved = useNetworkCa();
  const [draft, setDraft] = useState(saved);
  const [message, setMessage] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined);
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      const cas = await parseTrustedCas(trustedCas(draft));
      saveNetworkCa(draft);
      setMessage({
        kind: "ok",
        text: cas.length === 0 ? "Removed: checks show “not verified” until a CA is given." : `Saved: ${describe(cas)}.`,
      });
    } catch (error) {
      setMessage({ kind: "error", text: `Not saved: ${error instanceof Error ? error.message : String(error)}` });
    }
  };
  const remove = () => {
    saveNetworkCa("");
    setDraft("");
    setMessage({ kind: "ok", text: "Removed: checks show “not verified” until a CA is given." });
  };
  const load = async (event: Event) => {
    const files = [...((event.currentTarget as HTMLInputElement).files ?? [])].slice(0, CA_FILES_MAX);
    const texts = await Promise.all(files.map((file) => file.text()));
    setDraft(texts.map((text) => text.trim()).join("\n"));
    setMessage(undefined);
  };
  return (
    <section aria-labelledby="network-ca-heading">
      <h2 id="network-ca-heading">Network CA certificates</h2>
      <p>
        The explorer checks each block's seal and each inclusion proof against the organisation CA certificates of the network: the orderer's certificate must be
        signed by one of them. Give them here — <code>identities/&lt;Org&gt;/ca.pem</code> in the network's directory (<code>runnel init</code> and{" "}
        <code>runnel dev</code> write one per organisation), taken from the network's configuration, not from this page's node. They are kept in this browser only.
        Without them a check shows “not verified”, never ✓.
      </p>
      <p class="muted">
        This node's API serves no CA certificates, so there is no “trust this node's word” option: a CA taken from the node being checked would prove nothing more than
        the node's own say-so.
      </p>
      <TrustedCaTable pem={saved} />
      <form onSubmit={save}>
        <label for="network-ca-pem">CA certificates (PEM)</label>
        <textarea
          id="network-ca-pem"
          rows={8}
          maxLength={NETWORK_CA_CHARS_MAX}
          spellcheck={false}
          placeholder="-----BEGIN CERTIFICATE-----"
          value={draft}
          onInput={(event) => setDraft((event.currentTarget as HTMLTextAreaElement).value)}
        />
        <label for="network-ca-file">Or load the files</label>
        <input id="network-ca-file" type="file" accept=".pem,.crt,.cer,application/x-pem-file" multiple onChange={load} />
        <div class="actions">
          <button type="submit">Save</button>
          <button type="button" class="secondary outline" onClick={remove} disabled={saved === "" && draft === ""}>
            Remove
          </button>
        </div>
      </form>
      <p role={message?.kind === "error" ? "alert" : "status"} class={message?.kind === "error" ? "error" : "muted"} data-testid="network-ca-message">
        <LedgerText text={message?.text ?? ""} />
      </p>
    </section>
  );
}

/** The CAs the checks trust now. */
function TrustedCaTable(props: { pem: string }): JSX.Element {
  const cas = useLoad(async () => {
    const parsed = await parseTrustedCas(trustedCas(props.pem));
    return Promise.all(parsed.map(async (ca) => ({ ca, fingerprint: hex(new Uint8Array(await crypto.subtle.digest("SHA-256", ca.certificate.der.slice()))) })));
  }, [props.pem]);
  if (cas.state === "loading") return <p aria-busy="true">Reading the CA certificates…</p>;
  if (cas.state === "failed") return <p class="error">The CA certificates kept here do not read: <LedgerText text={cas.error} /></p>;
  if (cas.value.length === 0) {
    return (
      <p data-testid="trusted-cas" data-count="0">
        <strong>No network CA given.</strong>
      </p>
    );
  }
  return (
    <table class="striped" aria-labelledby="trusted-cas-caption" data-testid="trusted-cas" data-count={cas.value.length}>
      <caption id="trusted-cas-caption">Trusted CAs</caption>
      <thead>
        <tr>
          <th scope="col">Organisation</th>
          <th scope="col">Subject</th>
          <th scope="col">Valid until</th>
          <th scope="col">SHA-256</th>
        </tr>
      </thead>
      <tbody>
        {cas.value.map(({ ca, fingerprint }) => (
          <tr key={fingerprint}>
            <td>
              <LedgerText text={ca.org} />
            </td>
            <td>
              <LedgerText text={ca.certificate.subject} />
            </td>
            <td>{dateTime(ca.certificate.notAfter.getTime())}</td>
            <td>
              <Hash value={fingerprint} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function describe(cas: readonly TrustedCa[]): string {
  const orgs = cas.map((ca) => ca.org).join(", ");
  return `${cas.length} CA certificate${cas.length === 1 ? "" : "s"} (${orgs})`;
}
