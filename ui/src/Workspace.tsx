// The signed-in page: the header with its query tabs (each with its own query, database and
// time range, kept in the browser) and the explore page of each tab.

import { lazy, Suspense, useEffect, useState } from "react";
import { Explore } from "./Explore";
import { Identity, signOut } from "./session";
import { loadTabs, newTab, saveTabs, TabState } from "./tabs";
const Library = lazy(() => import("./Library").then((m) => ({ default: m.Library })));

/** A tab from a share link (`?q=…&db=…&range=…`), if the address has one. */
function sharedTab(): TabState | undefined {
  const params = new URLSearchParams(window.location.search);
  const query = params.get("q");
  if (!query) return undefined;
  return newTab({
    query,
    db: params.get("db") ?? undefined,
    range: params.get("range") ?? undefined,
    from: params.get("from") ?? undefined,
    to: params.get("to") ?? undefined,
  });
}

export function Workspace({
  identity,
  onSignedOut,
  onAdmin,
}: {
  identity: Identity;
  onSignedOut: () => void;
  onAdmin: () => void;
}) {
  const [library, setLibrary] = useState(false);
  const [tabs, setTabs] = useState<TabState[]>(() => {
    const saved = loadTabs(identity.name);
    const shared = sharedTab();
    if (shared) return [...saved, shared];
    return saved.length ? saved : [newTab()];
  });
  const [active, setActive] = useState(() => tabs[tabs.length - 1].id);

  useEffect(() => saveTabs(identity.name, tabs), [tabs, identity.name]);

  const update = (id: string, change: Partial<TabState>) =>
    setTabs((current) => current.map((t) => (t.id === id ? { ...t, ...change } : t)));
  const add = () => {
    const tab = newTab({ db: tabs.find((t) => t.id === active)?.db });
    setTabs((current) => [...current, tab]);
    setActive(tab.id);
  };
  const open = (partial: Partial<TabState>) => {
    const tab = newTab({ ...partial, db: partial.db || tabs.find((t) => t.id === active)?.db });
    setTabs((current) => [...current, tab]);
    setActive(tab.id);
  };
  const close = (id: string) => {
    setTabs((current) => {
      const rest = current.filter((t) => t.id !== id);
      const next = rest.length ? rest : [newTab()];
      if (id === active) setActive(next[Math.max(0, current.findIndex((t) => t.id === id) - 1)]?.id ?? next[0].id);
      return next;
    });
  };

  return (
    <div className="app">
      <header className="top">
        <span className="brand">Trawl</span>
        <nav className="query-tabs" role="tablist" aria-label="Query tabs">
          {tabs.map((tab) => (
            <span key={tab.id} className={"query-tab" + (tab.id === active ? " active" : "")}>
              <button role="tab" aria-selected={tab.id === active} onClick={() => setActive(tab.id)} data-testid="query-tab">
                {tab.title}
              </button>
              <button className="close" aria-label={`Close ${tab.title}`} onClick={() => close(tab.id)}>
                ×
              </button>
            </span>
          ))}
          <button className="add" onClick={add} aria-label="New tab" data-testid="new-tab">
            +
          </button>
        </nav>
        <span className="spacer" />
        <button onClick={() => setLibrary((shown) => !shown)} data-testid="open-library" aria-pressed={library}>
          Library
        </button>
        {(identity.role === "admin" || identity.role === "maintainer") && (
          <button onClick={onAdmin} data-testid="open-admin">
            Admin
          </button>
        )}
        <span className="who" data-testid="who">
          {identity.name} · {identity.role}
        </span>
        <button
          onClick={async () => {
            await signOut().catch(() => undefined);
            onSignedOut();
          }}
        >
          Sign out
        </button>
      </header>
      {library && (
        <Suspense fallback={null}>
        <Library
          identity={identity}
          onClose={() => setLibrary(false)}
          onOpen={(saved) => {
            open({
              query: saved.query,
              db: saved.database || undefined,
              range: saved.timeRange || undefined,
              title: saved.name.length > 24 ? `${saved.name.slice(0, 23)}…` : saved.name,
            });
            setLibrary(false);
          }}
        />
        </Suspense>
      )}
      {tabs.map((tab) => (
        <Explore
          key={tab.id}
          identity={identity}
          tab={tab}
          active={tab.id === active}
          onChange={(change) => update(tab.id, change)}
        />
      ))}
    </div>
  );
}
