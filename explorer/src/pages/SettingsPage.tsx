import { identityCertificate, identityFromPem, MembershipError, parseTrustedCas, type TrustedCa, type TrustedMembership } from "@runnel/sdk";
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { Hash } from "../components/Hash";
import { LedgerText } from "../components/LedgerText";
import { useFeed, useLoad } from "../live/hooks";
import { pinnedMembership, saveGenesisHash, useGenesisHash } from "../live/genesis-pin";
import { NETWORK_CA_CHARS_MAX, saveNetworkCa, trustedCas, useNetworkCa } from "../live/network-ca";
import { forgetReader, grantEnded, READER_PEM_CHARS_MAX, saveReader, savedReader } from "../live/reader";
import { dateTime, hex } from "../model/format";

/** Most files read at once from the file picker. */
const CA_FILES_MAX = 16;

/**
 * Settings: the identity the explorer reads as, the genesis hash seal and inclusion checks
 * follow the network's membership from, and the network's CA certificates they fall back
 * on without one.
 */
export function SettingsPage(): JSX.Element {
  return (
    <>
      <h1>Settings</h1>
      <ReaderForm />
      <GenesisHashForm />
      <NetworkCaForm />
    </>
  );
}

/** Pin the network's genesis hash; shows the membership followed from it, or the rule it broke. */
function GenesisHashForm(): JSX.Element {
  const saved = useGenesisHash();
  const [draft, setDraft] = useState(saved);
  const [message, setMessage] = useState<{ kind: "ok" | "error"; text: string } | undefined>(undefined);
  const save = (event: Event) => {
    event.preventDefault();
    try {
      saveGenesisHash(draft);
      setMessage({ kind: "ok", text: draft.trim() === "" ? "Unpinned." : "Pinned." });
    } catch (error) {
      setMessage({ kind: "error", text: `Not pinned: ${error instanceof Error ? error.message : String(error)}` });
    }
  };
  const remove = () => {
    saveGenesisHash("");
    setDraft("");
    setMessage({ kind: "ok", text: "Unpinned." });
  };
  return (
    <section aria-labelledby="genesis-heading">
      <h2 id="genesis-heading">Genesis hash</h2>
      <p>
        Pin the network's genesis definition by its hash: <code>runnel init</code> prints it, and <code>runnel config genesis-hash network.json</code> prints it from any
        member's copy. The explorer then reads the genesis definition and every configuration update from the node and checks them itself: the genesis hashes to the
        pin, each update is signed by the admins its config policy needs and sealed by the orderers then in force. Seals and inclusion proofs get a ✓ only when the
        orderers of the definition in force at their seq signed them, as many as its quorum needs. Kept in this browser only.
      </p>
      <MembershipSummary hash={saved} />
      <form onSubmit={save}>
        <label for="genesis-hash">Genesis hash (64 hex digits)</label>
        <input
          id="genesis-hash"
          type="text"
          maxLength={64}
          spellcheck={false}
          autocomplete="off"
          placeholder="sha256 of the genesis network definition"
          value={draft}
          onInput={(event) => setDraft((event.currentTarget as HTMLInputElement).value)}
        />
        <div class="actions">
          <button type="submit">Pin</button>
          <button type="button" class="secondary outline" onClick={remove} disabled={saved === "" && draft === ""}>
            Unpin
          </button>
        </div>
      </form>
      <p role={message?.kind === "error" ? "alert" : "status"} class={message?.kind === "error" ? "error" : "muted"} data-testid="genesis-message">
        <LedgerText text={message?.text ?? ""} />
      </p>
    </section>
  );
}

/** The membership followed from the pinned hash through this node: its definitions now, or why it is refused. */
function MembershipSummary(props: { hash: string }): JSX.Element {
  const feed = useFeed();
  const membership = useLoad(async (): Promise<TrustedMembership | MembershipError | undefined> => {
    if (props.hash === "") return undefined;
    try {
      return await pinnedMembership(feed, props.hash, 0n);
    } catch (error) {
      if (error instanceof MembershipError) return error;
      throw error;
    }
  }, [props.hash, feed]);
  if (props.hash === "") {
    return (
      <p data-testid="membership" data-state="none">
        <strong>No genesis hash pinned:</strong> checks fall back on the network CAs below, which cannot tell a removed orderer, or too few of a BFT cluster's, from the
        network's.
      </p>
    );
  }
  if (membership.state === "loading") return <p aria-busy="true">Following the network's configuration from the pinned genesis…</p>;
  if (membership.state === "failed") return <p class="error">The node could not be asked: <LedgerText text={membership.error} /></p>;
  const value = membership.value;
  if (value instanceof MembershipError) {
    return (
      <p class="check bad" data-testid="membership" data-state="failed" data-rule={value.code}>
        <strong>✕ The node's configuration does not follow from the pinned genesis:</strong> <code>{value.code}</code> <LedgerText text={value.reason} />
        {value.seq !== undefined && ` (the update at seq ${value.seq})`}
      </p>
    );
  }
  if (value === undefined) return <></>;
  const current = value.current;
  const orderers = current.definition.orderers.map((o) => `${o.name} (${o.org})`).join(", ");
  return (
    <p class="check ok" data-testid="membership" data-state="verified">
      <strong>✓ Pinned</strong> <Hash value={value.genesisHash} />: {value.definitions.length - 1} configuration update{value.definitions.length === 2 ? "" : "s"} checked;
      definition #{current.definition.sequence.toString()} in force since seq {current.fromSeq.toString()}, {current.definition.ordering} ordering, orderers{" "}
      <LedgerText text={orderers === "" ? "any of its CAs'" : orderers} />, quorum {current.quorum}.
    </p>
  );
}

/**
 * Load the certificate and key the explorer reads as, for a node that serves members
 * only. Saving signs a read grant with the key, keeps the grant (not the key) and
 * reconnects (the page reloads) so that every read carries it.
 */
function ReaderForm(): JSX.Element {
  const feed = useFeed();
  const saved = savedReader();
  const [certificatePem, setCertificatePem] = useState("");
  const [keyPem, setKeyPem] = useState("");
  const [message, setMessage] = useState<string | undefined>(undefined);
  const subject = useLoad(async () => {
    if (saved === undefined) return undefined;
    return (await identityCertificate(identityFromPem(saved.certificatePem))).subject;
  }, [saved?.certificatePem]);
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await saveReader({ certificatePem, keyPem }, feed.url);
      location.reload();
    } catch (error) {
      setMessage(`Not saved: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const forget = () => {
    forgetReader();
    location.reload();
  };
  const load = (set: (text: string) => void) => async (event: Event) => {
    const file = (event.currentTarget as HTMLInputElement).files?.[0];
    if (file !== undefined) set((await file.text()).slice(0, READER_PEM_CHARS_MAX + 1));
    setMessage(undefined);
  };
  return (
    <section aria-labelledby="reader-heading">
      <h2 id="reader-heading">Identity</h2>
      <p>
        A node whose reads are for members of the network (<code>read_access = "members"</code>, what <code>runnel init</code> sets) serves its ledger only to an identity
        of the network. Load one here: a certificate and its private key, e.g. <code>identities/&lt;Org&gt;/client.pem</code> and <code>client.key</code>. The explorer signs
        one read grant with the key, good for 15 minutes of reads, and forgets the key at once: it is never stored or sent. This tab keeps the certificate and the
        grant (session storage, forgotten when it closes), which can sign nothing. When the grant ends, load the identity again.
      </p>
      <p data-testid="reader" data-loaded={saved === undefined ? "no" : "yes"}>
        {saved === undefined ? (
          <strong>No identity loaded: reads go as no one.</strong>
        ) : (
          <>
            Reading as <strong>{subject.state === "ready" && subject.value !== undefined ? <LedgerText text={subject.value} /> : "…"}</strong>
            <span data-testid="reader-grant" data-ended={grantEnded(saved) ? "yes" : "no"}>
              {grantEnded(saved) ? `: its read grant ended at ${dateTime(saved.notAfterMs)}; load it again.` : ` until ${dateTime(saved.notAfterMs)}.`}
            </span>{" "}
            <button type="button" class="secondary outline" onClick={forget}>
              Forget
            </button>
          </>
        )}
      </p>
      <form onSubmit={save}>
        <label for="reader-certificate">Certificate (PEM)</label>
        <input id="reader-certificate" type="file" accept=".pem,.crt,.cer,application/x-pem-file" onChange={load(setCertificatePem)} />
        <label for="reader-key">Private key (PEM)</label>
        <input id="reader-key" type="file" accept=".key,.pem" onChange={load(setKeyPem)} />
        <div class="actions">
          <button type="submit" disabled={certificatePem === "" || keyPem === ""}>
            Use this identity
          </button>
        </div>
      </form>
      <p role={message === undefined ? "status" : "alert"} class="error" data-testid="reader-message">
        <LedgerText text={message ?? ""} />
      </p>
    </section>
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
