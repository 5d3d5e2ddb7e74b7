// The KQL editor: Monaco with Microsoft's Kusto language service (highlighting, completion
// from the live schema, syntax errors), loaded on first use (it is large).

import { forwardRef, useEffect, useImperativeHandle, useRef } from "react";
import type { ErrorLocation } from "./api";

type Monaco = typeof import("monaco-editor/esm/vs/editor/editor.api");
type Kusto = typeof import("@kusto/monaco-kusto");

let loading: Promise<{ monaco: Monaco; kusto: Kusto }> | undefined;

function loadMonaco() {
  loading ??= (async () => {
    const [{ default: EditorWorker }, { default: KustoWorker }] = await Promise.all([
      import("monaco-editor/esm/vs/editor/editor.worker?worker"),
      import("@kusto/monaco-kusto/release/esm/kusto.worker?worker"),
    ]);
    (self as any).MonacoEnvironment = {
      getWorker: (_: string, label: string) => (label === "kusto" ? new KustoWorker() : new EditorWorker()),
    };
    const monaco = await import("monaco-editor/esm/vs/editor/editor.api");
    await Promise.all([
      import("monaco-editor/esm/vs/editor/contrib/suggest/browser/suggestController"),
      import("monaco-editor/esm/vs/editor/contrib/hover/browser/hoverContribution"),
      import("monaco-editor/esm/vs/editor/contrib/find/browser/findController"),
      import("monaco-editor/esm/vs/editor/contrib/bracketMatching/browser/bracketMatching"),
      import("monaco-editor/esm/vs/editor/contrib/comment/browser/comment"),
      import("monaco-editor/esm/vs/editor/contrib/wordHighlighter/browser/wordHighlighter"),
    ]);
    const kusto = await import("@kusto/monaco-kusto");
    return { monaco, kusto };
  })();
  return loading;
}

export interface EditorHandle {
  value(): string;
  setValue(text: string): void;
  insert(text: string): void;
  showError(message: string, location?: ErrorLocation): void;
  clearErrors(): void;
  focus(): void;
}

interface Props {
  initial: string;
  database: string;
  /** The database schema as `.show database schema as json` answers it. */
  schema?: unknown;
  onRun: () => void;
  onChange?: (text: string) => void;
}

export const Editor = forwardRef<EditorHandle, Props>(function Editor(props, ref) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<import("monaco-editor/esm/vs/editor/editor.api").editor.IStandaloneCodeEditor | undefined>(undefined);
  const monacoRef = useRef<Monaco | undefined>(undefined);
  const run = useRef(props.onRun);
  run.current = props.onRun;
  const change = useRef(props.onChange);
  change.current = props.onChange;

  useEffect(() => {
    let disposed = false;
    loadMonaco().then(({ monaco }) => {
      if (disposed || !host.current) return;
      monacoRef.current = monaco;
      const instance = monaco.editor.create(host.current, {
        value: props.initial,
        language: "kusto",
        theme: "kusto-light",
        minimap: { enabled: false },
        automaticLayout: true,
        fontSize: 14,
        scrollBeyondLastLine: false,
        wordWrap: "on",
        suggest: { showWords: false },
        fixedOverflowWidgets: true,
      });
      instance.addCommand(monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, () => run.current());
      instance.addCommand(monaco.KeyMod.Shift | monaco.KeyCode.Enter, () => run.current());
      instance.onDidChangeModelContent(() => change.current?.(instance.getValue()));
      editor.current = instance;
      host.current.dataset.ready = "true";
    });
    return () => {
      disposed = true;
      editor.current?.dispose();
    };
  }, []);

  useEffect(() => {
    if (!props.schema) return;
    let cancelled = false;
    const apply = async () => {
      const { kusto } = await loadMonaco();
      if (cancelled) return;
      const model = editor.current?.getModel();
      if (!model) {
        // The editor is not up yet.
        window.setTimeout(apply, 200);
        return;
      }
      const getWorker = await kusto.getKustoWorker();
      const worker = await getWorker(model.uri);
      await worker.setSchemaFromShowSchema(props.schema as any, "https://trawl", props.database);
      if (!cancelled && host.current) host.current.dataset.schema = props.database;
    };
    apply();
    return () => {
      cancelled = true;
    };
  }, [props.schema, props.database]);

  useImperativeHandle(ref, () => ({
    value: () => editor.current?.getValue() ?? props.initial,
    setValue: (text) => editor.current?.setValue(text),
    insert: (text) => {
      const instance = editor.current;
      if (!instance) return;
      const selection = instance.getSelection();
      if (selection) instance.executeEdits("schema", [{ range: selection, text, forceMoveMarkers: true }]);
      instance.focus();
    },
    showError: (message, location) => {
      const monaco = monacoRef.current;
      const model = editor.current?.getModel();
      if (!monaco || !model) return;
      const where = location ?? { start_line: 1, start_column: 1, end_line: 1, end_column: 2 };
      const endColumn =
        where.end_line === where.start_line && where.end_column <= where.start_column
          ? where.start_column + 1
          : where.end_column;
      monaco.editor.setModelMarkers(model, "trawl", [
        {
          severity: monaco.MarkerSeverity.Error,
          message,
          startLineNumber: where.start_line,
          startColumn: where.start_column,
          endLineNumber: where.end_line,
          endColumn,
        },
      ]);
    },
    clearErrors: () => {
      const monaco = monacoRef.current;
      const model = editor.current?.getModel();
      if (monaco && model) monaco.editor.setModelMarkers(model, "trawl", []);
    },
    focus: () => editor.current?.focus(),
  }));

  return <div className="editor" ref={host} data-testid="editor" />;
});
