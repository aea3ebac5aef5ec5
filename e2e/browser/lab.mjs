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

// startLab installs goaccel's kernelspec as goaccel-<name> in a scratch
// prefix and starts a private JupyterLab on it, serving root (a new scratch
// folder when not given). opts.expose sets window.jupyterapp in the page,
// for drivers that run Lab's commands. Returns what a test needs to reach
// the server, and stop().
export async function startLab(name, opts = {}) {
  const display = `Go (goaccel ${name} test)`;
  const kernelName = `goaccel-${name}`;
  const scratch = mkdtempSync(join(tmpdir(), `goaccel-${name}-`));
  const work = opts.root || join(scratch, "work");
  mkdirSync(work, { recursive: true });
  execFileSync(join(root, "bin", "goaccel"), ["install", "--prefix", scratch, "--name", kernelName,
    "--display-name", display], { stdio: ["ignore", "ignore", "inherit"] });
  const port = await freePort();
  const token = `goaccel-${name}-test`;
  const env = { ...process.env, JUPYTER_PATH: join(scratch, "share", "jupyter"),
    JUPYTER_CONFIG_DIR: join(scratch, "config"), JUPYTER_RUNTIME_DIR: join(scratch, "runtime"),
    XDG_DATA_HOME: join(scratch, "data"), JUPYTERLAB_WORKSPACES_DIR: join(scratch, "ws") };
  const args = ["lab", "--no-browser", "--ip=127.0.0.1", `--port=${port}`,
    `--IdentityProvider.token=${token}`, `--ServerApp.root_dir=${work}`, "--allow-root",
    "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"];
  if (opts.expose) args.push("--expose-app-in-browser");
  const lab = spawn(join(venv, "bin", "jupyter"), args, { env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  const server = { name, display, kernelName, work, port, token, log: "",
    url: (path) => `http://127.0.0.1:${port}${path}${path.includes("?") ? "&" : "?"}token=${token}`,
    stop() { try { process.kill(-lab.pid, "SIGTERM"); } catch { /* already gone */ } } };
  lab.stderr.on("data", (d) => { server.log += d; });
  try {
    await waitHTTP(server.url("/api/status"), 90_000);
  } catch (e) {
    server.stop();
    throw e;
  }
  return server;
}

// launchBrowser starts Debian's chromium, headless.
export function launchBrowser() {
  return chromium.launch({ executablePath: "/usr/bin/chromium", headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
}

// waitIdle waits until Lab's status bar shows the kernel connected and idle.
export async function waitIdle(page, server, ms = 90_000) {
  const escaped = server.display.replace(/[()]/g, "\\$&");
  await page.locator(".jp-StatusBar-TextItem", { hasText: new RegExp(`${escaped} \\| Idle`) })
    .first().waitFor({ timeout: ms });
}

// withGoNotebook starts JupyterLab with a kernelspec named after `name`,
// opens a new notebook on it from the launcher in chromium, waits until the
// kernel is idle and calls body(page, runCell). On failure it saves a
// screenshot and the server's log as e2e/artifacts/<name>-failure.png/.log.
export async function withGoNotebook(name, viewport, body) {
  const server = await startLab(name);
  let browser;
  try {
    browser = await launchBrowser();
    const page = await browser.newPage({ viewport });
    await page.goto(server.url("/lab"));
    // pick the Go kernel from the launcher
    const card = page.locator(`.jp-LauncherCard[title*="${server.display}"]`).first();
    await card.waitFor({ timeout: 90_000 });
    await card.click();
    // keep Lab's notification toasts ("get notified about news?") off the screenshots
    await page.addStyleTag({ content: ".Toastify { display: none !important; }" });
    await page.locator(".jp-Notebook .jp-Cell .cm-content").first().waitFor({ timeout: 60_000 });
    await waitIdle(page, server);
    const runCell = async (code) => {
      await page.locator(".jp-Notebook .jp-Cell .cm-content").last().click();
      await page.keyboard.insertText(code);
      await page.keyboard.press("Shift+Enter");
    };
    await body(page, runCell);
  } catch (e) {
    await keepFailure(browser, server);
    throw e;
  } finally {
    if (browser) await browser.close();
    server.stop();
  }
}

// keepFailure saves a screenshot of the first page and the server's log as
// e2e/artifacts/<name>-failure.png and <name>-server.log.
export async function keepFailure(browser, server) {
  try {
    const pages = browser ? browser.contexts().flatMap((c) => c.pages()) : [];
    if (pages[0]) await pages[0].screenshot({ path: join(artifacts, `${server.name}-failure.png`), fullPage: true });
  } catch { /* best effort */ }
  writeFileSync(join(artifacts, `${server.name}-server.log`), server.log);
}
