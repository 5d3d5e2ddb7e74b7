// Tabs and query history, kept in the browser per user (localStorage).

export interface TabState {
  id: string;
  title: string;
  query: string;
  db: string;
  range: string;
  from?: string;
  to?: string;
}

export interface HistoryEntry {
  query: string;
  db: string;
  range: string;
  at: number;
}

const MAX_HISTORY = 100;

function read<T>(key: string, fallback: T): T {
  try {
    const text = window.localStorage.getItem(key);
    return text ? (JSON.parse(text) as T) : fallback;
  } catch {
    return fallback;
  }
}

function write(key: string, value: unknown) {
  try {
    window.localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or disabled: tabs and history last as long as the page
  }
}

export function newTab(partial: Partial<TabState> = {}): TabState {
  const db = partial.db ?? "default";
  return {
    id: Math.random().toString(36).slice(2, 10),
    title: partial.title ?? "Query",
    query: partial.query ?? `${db}\n| take 100`,
    db,
    range: partial.range ?? "1h",
    from: partial.from,
    to: partial.to,
  };
}

export function loadTabs(user: string): TabState[] {
  const tabs = read<TabState[]>(`trawl.tabs.${user}`, []);
  return Array.isArray(tabs) ? tabs.filter((t) => t && typeof t.id === "string") : [];
}

export function saveTabs(user: string, tabs: TabState[]) {
  write(`trawl.tabs.${user}`, tabs);
}

export function loadHistory(user: string): HistoryEntry[] {
  const entries = read<HistoryEntry[]>(`trawl.history.${user}`, []);
  return Array.isArray(entries) ? entries : [];
}

/** Adds a run to the user's history (newest first, the same query once). */
export function remember(user: string, entry: HistoryEntry): HistoryEntry[] {
  const entries = [entry, ...loadHistory(user).filter((e) => e.query !== entry.query || e.db !== entry.db)].slice(
    0,
    MAX_HISTORY,
  );
  write(`trawl.history.${user}`, entries);
  return entries;
}

/** A tab's title from its query: the first line, shortened. */
export function titleOf(query: string): string {
  const first = query.trim().split("\n")[0]?.trim() ?? "";
  return first.length > 24 ? `${first.slice(0, 23)}…` : first || "Query";
}
