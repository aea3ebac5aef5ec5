// A real browser against a real JupyterLab: start JupyterLab with goaccel's
// kernelspec, open it in Debian's chromium through playwright-core, pick the
// Go kernel from the launcher, run cells and read their outputs. Screenshots
// go to e2e/artifacts/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";
import { createRequire } from "node:module";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const nodeDir = process.env.GOACCEL_NODE_DIR || join(homedir(), ".cache", "goaccel", "node");
const require = createRequire(join(nodeDir, "node_modules", "x.js"));
const { chromium } = require("playwright-core");
const venv = process.env.GOACCEL_VENV || join(homedir(), ".cache", "goaccel", "venv");
const artifacts = join(root, "e2e", "artifacts");
mkdirSync(artifacts, { recursive: true });

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); });
    s.on("error", rej);
  });
}

async function waitHTTP(url, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try { const r = await fetch(url); if (r.ok) return; } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`JupyterLab did not answer at ${url} within ${ms} ms`);
}

test("JupyterLab runs Go cells with the goaccel kernel", { timeout: 300_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), "goaccel-lab-"));
  const work = join(scratch, "work");
  mkdirSync(work);
  execFileSync(join(root, "bin", "goaccel"), ["install", "--prefix", scratch, "--name", "goaccel-browser",
    "--display-name", "Go (goaccel browser test)"], { stdio: "inherit" });
  const port = await freePort();
  const token = "goaccel-browser-test";
  const env = { ...process.env, JUPYTER_PATH: join(scratch, "share", "jupyter"),
    JUPYTER_CONFIG_DIR: join(scratch, "config"), JUPYTER_RUNTIME_DIR: join(scratch, "runtime"),
    XDG_DATA_HOME: join(scratch, "data"), JUPYTERLAB_WORKSPACES_DIR: join(scratch, "ws") };
  const lab = spawn(join(venv, "bin", "jupyter"), ["lab", "--no-browser", "--ip=127.0.0.1", `--port=${port}`,
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${work}`, "--allow-root",
    "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
    { env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  let labLog = "";
  lab.stderr.on("data", (d) => { labLog += d; });
  let browser;
  try {
    await waitHTTP(`http://127.0.0.1:${port}/api/status?token=${token}`, 90_000);
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`http://127.0.0.1:${port}/lab?token=${token}`);
    // pick the Go kernel from the launcher
    const card = page.locator('.jp-LauncherCard[title*="Go (goaccel browser test)"]').first();
    await card.waitFor({ timeout: 90_000 });
    await card.click();
    await page.locator(".jp-Notebook .jp-Cell .cm-content").first().waitFor({ timeout: 60_000 });
    // wait until the kernel is connected and idle (the status bar says so)
    await page.locator(".jp-StatusBar-TextItem", { hasText: /Go \(goaccel browser test\) \| Idle/ })
      .first().waitFor({ timeout: 90_000 });

    async function runCell(code) {
      const editors = page.locator(".jp-Notebook .jp-Cell .cm-content");
      const ed = editors.last();
      await ed.click();
      await page.keyboard.insertText(code);
      await page.keyboard.press("Shift+Enter");
    }

    await runCell('import "fmt"\nfmt.Println("hello from the browser", 6*7)');
    const out = page.locator(".jp-OutputArea-output", { hasText: "hello from the browser 42" });
    await out.first().waitFor({ timeout: 60_000 });

    await runCell('import "github.com/goaccel/goaccel/display"\ndisplay.HTML(`<b id="goaccel-html">rich html</b>`)');
    await page.locator("#goaccel-html").first().waitFor({ timeout: 60_000 });

    await runCell("type T struct{ A int }\nT{A: 5}");
    await page.locator(".jp-OutputArea-output", { hasText: "{5}" }).first().waitFor({ timeout: 60_000 });

    await page.screenshot({ path: join(artifacts, "jupyterlab.png"), fullPage: true });
    assert.ok(await out.count() >= 1);
  } catch (e) {
    try { const pages = browser ? browser.contexts().flatMap((c) => c.pages()) : [];
      if (pages[0]) await pages[0].screenshot({ path: join(artifacts, "jupyterlab-failure.png"), fullPage: true }); } catch { /* best effort */ }
    writeFileSync(join(artifacts, "jupyterlab-server.log"), labLog);
    throw e;
  } finally {
    if (browser) await browser.close();
    try { process.kill(-lab.pid, "SIGTERM"); } catch { /* already gone */ }
  }
});
