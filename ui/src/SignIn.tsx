import { FormEvent, useEffect, useState } from "react";
import { callJson } from "./api";
import { signIn } from "./session";

/** A refusal the SSO callback sent back in the address (`?sso_error=`), taken out of it. */
function ssoError(): string | undefined {
  const params = new URLSearchParams(window.location.search);
  const error = params.get("sso_error");
  if (error === null) return undefined;
  params.delete("sso_error");
  const rest = params.toString();
  window.history.replaceState(null, "", window.location.pathname + (rest ? `?${rest}` : ""));
  return error;
}

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | undefined>(ssoError);
  const [busy, setBusy] = useState(false);
  const [sso, setSso] = useState<{ enabled: boolean; label?: string }>({ enabled: false });
  useEffect(() => {
    callJson<{ enabled: boolean; label?: string }>("/api/ui/sso")
      .then(setSso)
      .catch(() => setSso({ enabled: false }));
  }, []);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(name, password);
      onSignedIn();
    } catch (e: any) {
      setError(e.message ?? String(e));
    } finally {
      setBusy(false);
    }
  };
  // After signing in with SSO the browser comes back to this page and address.
  const next = encodeURIComponent(window.location.pathname + window.location.search);
  return (
    <div className="sign-in">
      <form onSubmit={submit} aria-label="Sign in">
        <h1>Trawl</h1>
        <label>
          Name
          <input name="name" autoComplete="username" value={name} onChange={(e) => setName(e.target.value)} autoFocus />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error && <p className="error" role="alert">{error}</p>}
        <button type="submit" disabled={busy || !name}>
          Sign in
        </button>
        {sso.enabled && (
          <>
            <div className="or">or</div>
            <a className="button sso" href={`/api/ui/sso/start?next=${next}`} data-testid="sso-sign-in">
              {sso.label ?? "Sign in with SSO"}
            </a>
          </>
        )}
      </form>
    </div>
  );
}
