// The admin page (admins and maintainers; the gateway answers /admin with 403 to anyone
// else and the meta service refuses their calls): accounts and roles, passwords, access
// tokens of users and service accounts, ingest tokens. A new token's text shows once.

import { Fragment, useEffect, useState } from "react";
import type { AccessToken, IngestToken, Principal, SsoSettings } from "./gen/trawl/meta/v1/meta_pb";
import { describe, meta, when } from "./meta";
import { Identity } from "./session";

const ROLES = ["admin", "maintainer", "observer"];

/** A token's text, shown this once, with a copy button. */
function ShownOnce({ label, token, onDone }: { label: string; token: string; onDone: () => void }) {
  return (
    <div className="shown-once" role="status" data-testid="shown-once">
      <strong>{label}</strong> — copy it now, it is not shown again:
      <code data-testid="new-token">{token}</code>
      <button onClick={() => navigator.clipboard?.writeText(token).catch(() => undefined)}>Copy</button>
      <button onClick={onDone}>Done</button>
    </div>
  );
}

function Tokens({ principal, isAdmin, onError }: { principal: Principal; isAdmin: boolean; onError: (e: string) => void }) {
  const [tokens, setTokens] = useState<AccessToken[]>([]);
  const [days, setDays] = useState("90");
  const [made, setMade] = useState<string>();
  const load = () =>
    meta
      .listAccessTokens({ name: principal.name })
      .then((answer) => setTokens(answer.tokens))
      .catch((e) => onError(describe(e)));
  useEffect(() => {
    load();
  }, [principal.name]);
  const create = async () => {
    try {
      const seconds = BigInt(Math.round(Number(days || "0") * 86_400));
      const answer = await meta.createAccessToken({ name: principal.name, expiresInSeconds: seconds });
      setMade(answer.token);
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const revoke = async (id: string) => {
    try {
      await meta.revokeAccessToken({ id });
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const now = BigInt(Date.now()) * 1_000_000n;
  return (
    <div className="tokens">
      {made && <ShownOnce label={`New token of ${principal.name}`} token={made} onDone={() => setMade(undefined)} />}
      <table className="plain">
        <thead>
          <tr>
            <th>Token</th>
            <th>Created</th>
            <th>Expires</th>
            <th>State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {tokens.map((t) => {
            const state = t.revokedAt ? "revoked" : t.expiresAt && t.expiresAt < now ? "expired" : "live";
            return (
              <tr key={t.id}>
                <td>
                  <code>{t.id.slice(0, 12)}…</code>
                </td>
                <td>{when(t.createdAt)}</td>
                <td>{t.expiresAt ? when(t.expiresAt) : "never"}</td>
                <td>{state}</td>
                <td>
                  {state === "live" && isAdmin && (
                    <button className="small" onClick={() => revoke(t.id)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {isAdmin && (
        <div className="row">
          <label>
            Expires in days (0: never)
            <input type="number" min={0} value={days} onChange={(e) => setDays(e.target.value)} />
          </label>
          <button onClick={create} data-testid="create-access-token">
            New token
          </button>
        </div>
      )}
    </div>
  );
}

function Accounts({ identity, onError }: { identity: Identity; onError: (e: string) => void }) {
  const isAdmin = identity.role === "admin";
  const [principals, setPrincipals] = useState<Principal[]>();
  const [open, setOpen] = useState<string>();
  const [name, setName] = useState("");
  const [kind, setKind] = useState("user");
  const [role, setRole] = useState("observer");
  const [password, setPassword] = useState("");
  const load = () =>
    meta
      .listPrincipals({})
      .then((answer) => setPrincipals(answer.principals))
      .catch((e) => onError(describe(e)));
  useEffect(() => {
    load();
  }, []);
  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      if (kind === "user") await meta.createUser({ name, role, password });
      else if (kind === "sso") await meta.createUser({ name, role, sso: true });
      else await meta.createServiceAccount({ name, role });
      setName("");
      setPassword("");
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const grant = async (who: string, newRole: string) => {
    try {
      await meta.grantRole({ name: who, role: newRole });
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const switchToSso = async (who: string) => {
    if (!window.confirm(`${who} will sign in through SSO only: the password is removed (sessions and role stay).`)) return;
    try {
      await meta.switchToSso({ name: who });
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const reset = async (who: string) => {
    const next = window.prompt(`New password for ${who} (at least 8 characters)`);
    if (!next) return;
    try {
      await meta.setPassword({ name: who, password: next });
    } catch (e) {
      onError(describe(e));
    }
  };
  return (
    <section className="admin-section" data-testid="accounts">
      <h3>Accounts</h3>
      <table className="plain">
        <thead>
          <tr>
            <th>Name</th>
            <th>Kind</th>
            <th>Role</th>
            <th>Signs in with</th>
            <th>Created</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(principals ?? []).map((p) => (
            <Fragment key={p.id}>
              <tr data-testid="account">
                <td>{p.name}</td>
                <td>{p.kind === "service_account" ? "service account" : "user"}</td>
                <td>
                  {isAdmin ? (
                    <select value={p.role} onChange={(e) => grant(p.name, e.target.value)} aria-label={`Role of ${p.name}`}>
                      {ROLES.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  ) : (
                    p.role
                  )}
                </td>
                <td data-testid="sign-in-method">{p.signIn === "sso" ? "SSO" : p.signIn}</td>
                <td>{when(p.createdAt)}</td>
                <td>
                  {isAdmin && p.signIn === "password" && (
                    <button className="small" onClick={() => reset(p.name)}>
                      Reset password
                    </button>
                  )}
                  {isAdmin && p.signIn === "password" && (
                    <button className="small" onClick={() => switchToSso(p.name)}>
                      Switch to SSO
                    </button>
                  )}
                  <button className="small" onClick={() => setOpen(open === p.id ? undefined : p.id)}>
                    Tokens
                  </button>
                </td>
              </tr>
              {open === p.id && (
                <tr>
                  <td colSpan={6}>
                    <Tokens principal={p} isAdmin={isAdmin} onError={onError} />
                  </td>
                </tr>
              )}
            </Fragment>
          ))}
        </tbody>
      </table>
      {isAdmin && (
        <form className="row" onSubmit={create} aria-label="New account">
          <input placeholder="name" value={name} onChange={(e) => setName(e.target.value)} required aria-label="Name" />
          <select value={kind} onChange={(e) => setKind(e.target.value)} aria-label="Kind">
            <option value="user">user (password)</option>
            <option value="sso">user (SSO)</option>
            <option value="service_account">service account (tokens)</option>
          </select>
          <select value={role} onChange={(e) => setRole(e.target.value)} aria-label="Role">
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
          {kind === "user" && (
            <input
              type="password"
              placeholder="password (8+ characters)"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              required
              aria-label="Password"
            />
          )}
          <button className="primary" type="submit">
            Create
          </button>
        </form>
      )}
    </section>
  );
}

function Sso({ onError }: { onError: (e: string) => void }) {
  const [settings, setSettings] = useState<SsoSettings>();
  const [secret, setSecret] = useState("");
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    meta
      .getSsoSettings({})
      .then(setSettings)
      .catch((e) => onError(describe(e)));
  }, []);
  if (!settings) return null;
  const field = (key: "issuer" | "clientId" | "redirectUrl" | "scopes" | "usernameClaim" | "label", label: string, hint = "") => (
    <label>
      {label}
      <input
        value={settings[key]}
        placeholder={hint}
        onChange={(e) => {
          setSaved(false);
          setSettings({ ...settings, [key]: e.target.value });
        }}
        aria-label={label}
      />
    </label>
  );
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      const answer = await meta.setSsoSettings({ ...settings, clientSecret: secret });
      setSettings(answer);
      setSecret("");
      setSaved(true);
    } catch (e) {
      onError(describe(e));
    }
  };
  const callback = `${window.location.origin}/api/ui/sso/callback`;
  return (
    <section className="admin-section sso-settings" data-testid="sso">
      <h3>Single sign-on (OpenID Connect)</h3>
      <p className="muted">
        Register Trawl with the identity provider as a confidential client with the redirect URL <code>{callback}</code>{" "}
        (authorization code flow with PKCE). Accounts sign in one way only: a user with a password is refused SSO.
      </p>
      <form onSubmit={save} aria-label="SSO settings">
        <div className="grid2">
          {field("issuer", "Issuer URL", "https://login.example.com/realms/main")}
          {field("clientId", "Client id")}
          <label>
            Client secret
            <input
              type="password"
              value={secret}
              placeholder={settings.clientSecretSet ? "stored (leave empty to keep)" : ""}
              onChange={(e) => setSecret(e.target.value)}
              aria-label="Client secret"
            />
          </label>
          {field("redirectUrl", "Redirect URL", callback)}
          {field("scopes", "Scopes", "openid profile email")}
          {field("usernameClaim", "Account name claim", "preferred_username, then email")}
          <label>
            Accounts made at the first SSO sign-in
            <select
              value={settings.newUserRole}
              onChange={(e) => setSettings({ ...settings, newUserRole: e.target.value })}
              aria-label="New account role"
            >
              <option value="">none: an admin makes them</option>
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  with the role {r}
                </option>
              ))}
            </select>
          </label>
          {field("label", "Button text", "Sign in with SSO")}
        </div>
        <div className="row">
          <label className="check">
            <input
              type="checkbox"
              checked={settings.enabled}
              onChange={(e) => setSettings({ ...settings, enabled: e.target.checked })}
              aria-label="SSO on"
            />
            On
          </label>
          <button className="primary" type="submit" data-testid="save-sso">
            Save
          </button>
          {saved && <span role="status">Saved.</span>}
        </div>
      </form>
    </section>
  );
}

function IngestTokens({ onError }: { onError: (e: string) => void }) {
  const [tokens, setTokens] = useState<IngestToken[]>();
  const [made, setMade] = useState<string>();
  const [name, setName] = useState("");
  const [database, setDatabase] = useState("default");
  const [table, setTable] = useState("logs");
  const load = () =>
    meta
      .listIngestTokens({})
      .then((answer) => setTokens(answer.tokens))
      .catch((e) => onError(describe(e)));
  useEffect(() => {
    load();
  }, []);
  const create = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      const answer = await meta.createIngestToken({ name, database, table });
      setMade(answer.token);
      setName("");
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  const revoke = async (id: string) => {
    try {
      await meta.revokeIngestToken({ id });
      load();
    } catch (e) {
      onError(describe(e));
    }
  };
  return (
    <section className="admin-section" data-testid="ingest-tokens">
      <h3>Ingest tokens</h3>
      {made && <ShownOnce label="New ingest token" token={made} onDone={() => setMade(undefined)} />}
      <table className="plain">
        <thead>
          <tr>
            <th>Name</th>
            <th>Routes to</th>
            <th>Created</th>
            <th>State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(tokens ?? []).map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>
                <code>
                  {t.database}.{t.table}
                </code>
                {t.allowTableOverride && " (records may choose their table)"}
              </td>
              <td>{when(t.createdAt)}</td>
              <td>{t.revokedAt ? `revoked ${when(t.revokedAt)}` : "live"}</td>
              <td>
                {!t.revokedAt && (
                  <button className="small" onClick={() => revoke(t.id)}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="row" onSubmit={create} aria-label="New ingest token">
        <input placeholder="name" value={name} onChange={(e) => setName(e.target.value)} required aria-label="Token name" />
        <input value={database} onChange={(e) => setDatabase(e.target.value)} required aria-label="Database" />
        <input value={table} onChange={(e) => setTable(e.target.value)} required aria-label="Table" />
        <button className="primary" type="submit" data-testid="create-ingest-token">
          Create
        </button>
      </form>
    </section>
  );
}

export function Admin({ identity, onBack }: { identity: Identity; onBack: () => void }) {
  const [error, setError] = useState<string>();
  const allowed = identity.role === "admin" || identity.role === "maintainer";
  return (
    <div className="admin" data-testid="admin">
      <div className="toolbar">
        <button onClick={onBack}>← Explore</button>
        <h2>Administration</h2>
      </div>
      {!allowed ? (
        <div className="error" role="alert" data-testid="forbidden">
          The admin page is for admins and maintainers; you are {identity.name} ({identity.role}).
        </div>
      ) : (
        <>
          {error && (
            <div className="error" role="alert" onClick={() => setError(undefined)}>
              {error}
            </div>
          )}
          <Accounts identity={identity} onError={setError} />
          <IngestTokens onError={setError} />
          {identity.role === "admin" && <Sso onError={setError} />}
        </>
      )}
    </div>
  );
}
