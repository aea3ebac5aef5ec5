// Runs a notebook in JupyterLab in chromium, cell by cell, as a user
// pressing Shift+Enter would, and saves it with its outputs. For notebooks
// whose cells need the page: JavaScript that a cell shows and that talks
// back to the kernel (gonbui's widgets, comms and dom), which nbclient
// cannot run.
//
//   node e2e/browser/runnotebook.mjs NOTEBOOK.ipynb TIMEOUT_S
//
// NOTEBOOK must lie in the folder Lab should serve (its folder is the
// kernel's working directory); its kernelspec is replaced by goaccel's.
// It prints one JSON line per code cell, {cell, status, seconds}, with
// status "ok", "error" (an error output), "timeout" (interrupted after
// TIMEOUT_S seconds) or "kernel died", and leaves the executed notebook in NOTEBOOK.
// The environment is passed on to the kernel.
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { keepFailure, launchBrowser, startLab, waitIdle } from "./lab.mjs";

const [file, timeoutArg] = process.argv.slice(2);
if (!file || !timeoutArg) {
  console.error("usage: runnotebook.mjs NOTEBOOK.ipynb TIMEOUT_S");
  process.exit(2);
}
const path = resolve(file);
const timeoutMs = Number(timeoutArg) * 1000;

const server = await startLab("nbrun", { root: dirname(path), expose: true });
const nb = JSON.parse(readFileSync(path, "utf8"));
nb.metadata.kernelspec = { name: server.kernelName, display_name: server.display, language: "go" };
for (const c of nb.cells) {
  if (c.cell_type === "code") {
    c.outputs = [];
    c.execution_count = null;
  }
}
writeFileSync(path, JSON.stringify(nb, null, 1));

let browser;
let code = 0;
try {
  browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(server.url(`/lab/tree/${encodeURIComponent(basename(path))}`));
  await page.addStyleTag({ content: ".Toastify { display: none !important; }" });
  await page.waitForFunction(() => window.jupyterapp?.shell?.currentWidget?.content?.widgets?.length > 0,
    null, { timeout: 90_000 });
  await waitIdle(page, server);
  for (let i = 0; i < nb.cells.length; i++) {
    if (nb.cells[i].cell_type !== "code") continue;
    const r = await page.evaluate(async ([index, ms]) => {
      const app = window.jupyterapp;
      const panel = app.shell.currentWidget;
      const notebook = panel.content;
      notebook.activeCellIndex = index;
      notebook.deselectAll();
      const t0 = performance.now();
      const run = app.commands.execute("notebook:run-cell");
      let timer;
      const expired = new Promise((res) => { timer = setTimeout(() => res("timeout"), ms); });
      let status = await Promise.race([run.then(() => "ran", () => "ran"), expired]);
      clearTimeout(timer);
      if (status === "timeout") {
        await panel.sessionContext.session.kernel.interrupt();
        await run.catch(() => {});
      }
      const cell = notebook.widgets[index];
      const outputs = cell.model.outputs.toJSON();
      if (status !== "timeout") status = outputs.some((o) => o.output_type === "error") ? "error" : "ok";
      const kernel = panel.sessionContext.session?.kernel;
      if (!kernel || ["dead", "restarting", "autorestarting"].includes(kernel.status)) status = "kernel died";
      return { cell: index, status, seconds: Math.round((performance.now() - t0) / 100) / 10 };
    }, [i, timeoutMs]);
    console.log(JSON.stringify(r));
  }
  await page.evaluate(() => window.jupyterapp.commands.execute("docmanager:save"));
  // wait until the saved file holds the outputs (the save is written by the server)
  await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty, null,
    { timeout: 60_000 });
} catch (e) {
  console.error(`runnotebook: ${path}: ${e.stack || e}`);
  await keepFailure(browser, server);
  code = 1;
} finally {
  if (browser) await browser.close();
  server.stop();
}
process.exit(code);
