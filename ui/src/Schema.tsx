// The schema browser: the database's tables and their columns with types, from
// `.show database schema as json`; a click inserts the name into the query.

import { useState } from "react";

export interface Schema {
  Databases?: Record<
    string,
    {
      Name: string;
      Tables?: Record<string, { Name: string; OrderedColumns?: { Name: string; CslType?: string; Type?: string }[] }>;
    }
  >;
}

/** A name as KQL needs it: bracketed when it is not a plain identifier. */
export function quoted(name: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? name : `['${name.replace(/'/g, "\\'")}']`;
}

export function SchemaTree({
  schema,
  database,
  onInsert,
}: {
  schema?: Schema;
  database: string;
  onInsert: (name: string) => void;
}) {
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const [filter, setFilter] = useState("");
  const tables = Object.values(schema?.Databases?.[database]?.Tables ?? {}).sort((a, b) => a.Name.localeCompare(b.Name));
  const wanted = filter.toLowerCase();
  return (
    <nav className="schema" aria-label="Schema" data-testid="schema">
      <input placeholder="Filter tables and columns" value={filter} onChange={(e) => setFilter(e.target.value)} />
      {!schema && <div className="muted">Loading schema…</div>}
      {schema && tables.length === 0 && <div className="muted">No tables yet.</div>}
      <ul>
        {tables.map((table) => {
          const columns = (table.OrderedColumns ?? []).filter(
            (c) => !wanted || c.Name.toLowerCase().includes(wanted) || table.Name.toLowerCase().includes(wanted),
          );
          if (wanted && columns.length === 0 && !table.Name.toLowerCase().includes(wanted)) return null;
          const expanded = open[table.Name] || (wanted !== "" && columns.length > 0);
          return (
            <li key={table.Name}>
              <button
                className="toggle"
                aria-expanded={expanded}
                onClick={() => setOpen((o) => ({ ...o, [table.Name]: !o[table.Name] }))}
              >
                {expanded ? "▾" : "▸"}
              </button>
              <button className="name table" onClick={() => onInsert(quoted(table.Name))}>
                {table.Name}
              </button>
              {expanded && (
                <ul>
                  {columns.map((column) => (
                    <li key={column.Name}>
                      <button className="name column" onClick={() => onInsert(quoted(column.Name))}>
                        {column.Name}
                      </button>
                      <span className="type">{column.CslType ?? column.Type}</span>
                    </li>
                  ))}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
    </nav>
  );
}
