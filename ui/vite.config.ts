import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";
import { nodePolyfills } from "vite-plugin-node-polyfills";

// The build is checked in (ui/dist) and must be reproducible: no timestamps, content-hashed
// names only (CI rebuilds it and compares).
// The Kusto language service (in its worker) expects Node's `global`, `Buffer` and `process`.
const polyfills = () => nodePolyfills({ include: ["buffer", "process", "util"], globals: { Buffer: true, global: true, process: true } });

export default defineConfig({
  plugins: [react(), polyfills()],
  // Workers get no injected globals: name Node's `global` for what it is in a browser.
  define: { global: "globalThis" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 16000,
    assetsInlineLimit: 0,
  },
  worker: { format: "es", plugins: () => [polyfills()] },
  server: {
    proxy: {
      "/api": "http://127.0.0.1:9500",
      "/v1": "http://127.0.0.1:9500",
      "/v2": "http://127.0.0.1:9500",
    },
  },
});
