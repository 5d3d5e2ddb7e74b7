import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { currentIdentity, Identity } from "./session";
import { SignIn } from "./SignIn";
import { Workspace } from "./Workspace";
import "./style.css";

function App() {
  const [identity, setIdentity] = useState<Identity | null | undefined>(undefined);
  const [error, setError] = useState<string>();
  const load = () =>
    currentIdentity()
      .then(setIdentity)
      .catch((e) => setError(String(e.message ?? e)));
  useEffect(() => {
    load();
  }, []);
  if (error) return <div className="fatal">Cannot reach Trawl: {error}</div>;
  if (identity === undefined) return <div className="loading">Loading…</div>;
  if (identity === null) return <SignIn onSignedIn={load} />;
  return <Workspace identity={identity} onSignedOut={() => setIdentity(null)} />;
}

const root = document.getElementById("root");
if (root) createRoot(root).render(<StrictMode><App /></StrictMode>);
