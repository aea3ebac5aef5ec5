// Shared set-up of the browser tests: a private JupyterLab with goaccel's
// kernelspec, Debian's chromium through playwright-core, and a notebook
// opened on the Go kernel from Lab's launcher.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createServer } from "node:net";
import { createRequire } from "node:module";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const artifacts = join(root, "e2e", "artifacts");
mkdirSync(artifacts, { recursive: true });

const nodeDir = process.env.GOACCEL_NODE_DIR || join(homedir(), ".cache", "goaccel", "node");
const { chromium } = createRequire(join(nodeDir, "node_modules", "x.js"))("playwright-core");
const venv = process.env.GOACCEL_VENV || join(homedir(), ".cache", "goaccel", "venv");

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

// withGoNotebook starts JupyterLab with a kernelspec named after `name`,
// opens a new notebook on it from the launcher in chromium, waits until the
// kernel is idle and calls body(page, runCell). On failure it saves a
// screenshot and the server's log as e2e/artifacts/<name>-failure.png/.log.
export async function withGoNotebook(name, viewport, body) {
  const display = `Go (goaccel ${name} test)`;
  const scratch = mkdtempSync(join(tmpdir(), `goaccel-${name}-`));
  const work = join(scratch, "work");
  mkdirSync(work);
  execFileSync(join(root, "bin", "goaccel"), ["install", "--prefix", scratch, "--name", `goaccel-${name}`,
    "--display-name", display], { stdio: "inherit" });
  const port = await freePort();
  const token = `goaccel-${name}-test`;
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
    const page = await browser.newPage({ viewport });
    await page.goto(`http://127.0.0.1:${port}/lab?token=${token}`);
    // pick the Go kernel from the launcher
    const card = page.locator(`.jp-LauncherCard[title*="${display}"]`).first();
    await card.waitFor({ timeout: 90_000 });
    await card.click();
    // keep Lab's notification toasts ("get notified about news?") off the screenshots
    await page.addStyleTag({ content: ".Toastify { display: none !important; }" });
    await page.locator(".jp-Notebook .jp-Cell .cm-content").first().waitFor({ timeout: 60_000 });
    // wait until the kernel is connected and idle (the status bar says so)
    const escaped = display.replace(/[()]/g, "\\$&");
    await page.locator(".jp-StatusBar-TextItem", { hasText: new RegExp(`${escaped} \\| Idle`) })
      .first().waitFor({ timeout: 90_000 });
    const runCell = async (code) => {
      await page.locator(".jp-Notebook .jp-Cell .cm-content").last().click();
      await page.keyboard.insertText(code);
      await page.keyboard.press("Shift+Enter");
    };
    await body(page, runCell);
  } catch (e) {
    try {
      const pages = browser ? browser.contexts().flatMap((c) => c.pages()) : [];
      if (pages[0]) await pages[0].screenshot({ path: join(artifacts, `${name}-failure.png`), fullPage: true });
    } catch { /* best effort */ }
    writeFileSync(join(artifacts, `${name}-server.log`), labLog);
    throw e;
  } finally {
    if (browser) await browser.close();
    try { process.kill(-lab.pid, "SIGTERM"); } catch { /* already gone */ }
  }
}
