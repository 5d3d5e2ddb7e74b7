import { FormEvent, useState } from "react";
import { signIn } from "./session";

export function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
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
      </form>
    </div>
  );
}
