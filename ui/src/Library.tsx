// The query library: saved queries shared by everyone signed in, in folders, searchable;
// stored in the catalog through the meta service. Opening one makes a new tab.

import { useEffect, useMemo, useState } from "react";
import type { SavedQuery } from "./gen/trawl/meta/v1/meta_pb";
import { describe, meta, when } from "./meta";
import { Identity } from "./session";

export interface SaveDraft {
  query: string;
  db: string;
  range: string;
}

const CHANGERS = ["admin", "maintainer"];

function matches(query: SavedQuery, words: string[]): boolean {
  const text = `${query.name} ${query.folder} ${query.description} ${query.query}`.toLowerCase();
  return words.every((w) => text.includes(w));
}

/** The library as a panel: search, folders, open, delete. */
export function Library({
  identity,
  onOpen,
  onClose,
}: {
  identity: Identity;
  onOpen: (query: SavedQuery) => void;
  onClose: () => void;
}) {
  const [queries, setQueries] = useState<SavedQuery[]>();
  const [search, setSearch] = useState("");
  const [error, setError] = useState<string>();
  const load = () =>
    meta
      .listSavedQueries({})
      .then((answer) => setQueries(answer.queries))
      .catch((e) => setError(describe(e)));
  useEffect(() => {
    load();
  }, []);
  const folders = useMemo(() => {
    const words = search.toLowerCase().split(/\s+/).filter(Boolean);
    const grouped = new Map<string, SavedQuery[]>();
    for (const query of queries ?? []) {
      if (!matches(query, words)) continue;
      const list = grouped.get(query.folder) ?? [];
      list.push(query);
      grouped.set(query.folder, list);
    }
    return [...grouped.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [queries, search]);
  const remove = async (query: SavedQuery) => {
    if (!window.confirm(`Delete the saved query "${query.name}"?`)) return;
    try {
      await meta.deleteSavedQuery({ id: query.id });
      load();
    } catch (e) {
      setError(describe(e));
    }
  };
  const mayChange = (query: SavedQuery) => query.owner === identity.name || CHANGERS.includes(identity.role);
  return (
    <aside className="panel library" data-testid="library" aria-label="Query library">
      <div className="panel-head">
        <strong>Query library</strong>
        <input
          type="search"
          placeholder="Search names, folders, queries…"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          aria-label="Search the library"
          autoFocus
        />
        <button onClick={onClose} aria-label="Close the library">
          ×
        </button>
      </div>
      {error && <div className="error">{error}</div>}
      {!queries && !error && <div className="empty">Loading…</div>}
      {queries && folders.length === 0 && (
        <div className="empty">{queries.length ? "Nothing matches." : "No saved queries yet: save one with Save."}</div>
      )}
      {folders.map(([folder, list]) => (
        <section key={folder} className="folder">
          <h4>{folder ? `${folder}/` : "(top)"}</h4>
          <ul>
            {list.map((query) => (
              <li key={query.id} data-testid="saved-query">
                <button className="link" onClick={() => onOpen(query)} title={query.query}>
                  {query.name}
                </button>
                <span className="muted">
                  {query.database || "any database"} · {query.timeRange || "any time"} · {query.owner} ·{" "}
                  {when(query.updatedAt)}
                </span>
                {query.description && <div className="description">{query.description}</div>}
                {mayChange(query) && (
                  <button className="small" onClick={() => remove(query)} aria-label={`Delete ${query.name}`}>
                    Delete
                  </button>
                )}
              </li>
            ))}
          </ul>
        </section>
      ))}
    </aside>
  );
}

/** The dialog that saves the current query into the library. */
export function SaveDialog({ draft, onClose }: { draft: SaveDraft; onClose: (saved?: SavedQuery) => void }) {
  const [name, setName] = useState("");
  const [folder, setFolder] = useState("");
  const [description, setDescription] = useState("");
  const [keepDb, setKeepDb] = useState(true);
  const [keepRange, setKeepRange] = useState(true);
  const [error, setError] = useState<string>();
  const save = async (e: React.FormEvent) => {
    e.preventDefault();
    try {
      const saved = await meta.saveQuery({
        name,
        folder,
        description,
        query: draft.query,
        database: keepDb ? draft.db : "",
        timeRange: keepRange && draft.range !== "absolute" ? draft.range : "",
      });
      onClose(saved);
    } catch (e) {
      setError(describe(e));
    }
  };
  return (
    <div className="dialog-backdrop">
      <form className="dialog" onSubmit={save} data-testid="save-dialog" aria-label="Save the query">
        <h3>Save to the library</h3>
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required autoFocus data-testid="save-name" />
        </label>
        <label>
          Folder <span className="muted">(a/b for nested folders)</span>
          <input value={folder} onChange={(e) => setFolder(e.target.value)} data-testid="save-folder" />
        </label>
        <label>
          Description
          <textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
        </label>
        <label className="check">
          <input type="checkbox" checked={keepDb} onChange={(e) => setKeepDb(e.target.checked)} /> Always in database{" "}
          <code>{draft.db}</code>
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={keepRange}
            onChange={(e) => setKeepRange(e.target.checked)}
            disabled={draft.range === "absolute"}
          />{" "}
          Default time range <code>{draft.range}</code>
        </label>
        <pre className="preview">{draft.query}</pre>
        {error && <div className="error">{error}</div>}
        <div className="buttons">
          <button type="button" onClick={() => onClose()}>
            Cancel
          </button>
          <button className="primary" type="submit" data-testid="save-confirm">
            Save
          </button>
        </div>
      </form>
    </div>
  );
}
