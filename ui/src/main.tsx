import { lazy, StrictMode, Suspense, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { currentIdentity, Identity } from "./session";
import { SignIn } from "./SignIn";
import { Workspace } from "./Workspace";
const Admin = lazy(() => import("./Admin").then((m) => ({ default: m.Admin })));
import "./style.css";

function App() {
  const [identity, setIdentity] = useState<Identity | null | undefined>(undefined);
  const [error, setError] = useState<string>();
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const moved = () => setPath(window.location.pathname);
    window.addEventListener("popstate", moved);
    return () => window.removeEventListener("popstate", moved);
  }, []);
  const go = (to: string) => {
    window.history.pushState(null, "", to);
    setPath(to);
  };
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
  if (path === "/admin")
    return (
      <Suspense fallback={<div className="loading">Loading…</div>}>
        <Admin identity={identity} onBack={() => go("/")} />
      </Suspense>
    );
  return <Workspace identity={identity} onSignedOut={() => setIdentity(null)} onAdmin={() => go("/admin")} />;
}

const root = document.getElementById("root");
if (root) createRoot(root).render(<StrictMode><App /></StrictMode>);
