import { defineConfig } from "vite";

// One script and one stylesheet, so the HTML report can inline both.
export default defineConfig({
  base: "./",
  build: {
    outDir: "../src/perfsleuth/server/static",
    emptyOutDir: true,
    modulePreload: false,
    cssCodeSplit: false,
    assetsInlineLimit: 100000,
    target: "es2022",
    rollupOptions: { output: { inlineDynamicImports: true } },
  },
});
