// The live chart in a real browser: JupyterLab with goaccel's kernelspec,
// Debian's chromium through playwright-core, a cell that trains for ~50
// steps with an Accelerator (which adds the live chart under the cell). The
// chart must appear as SVG with one line per metric, update while the cell
// runs (the step in its heading moves on) and end "finished" at the last
// step. The chart is saved to e2e/artifacts/livechart.png.
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

const CELL = `import (
	"math"
	"time"

	"github.com/goaccel/goaccel/accelerate"
)

acc, _ := accelerate.NewAccelerator()
acc.InitTrackers("browser_run", nil, nil)
for step := 0; step < 50; step++ {
	loss := 2.0/(1.0+0.2*float64(step)) + 0.05
	acc.Log(map[string]any{
		"loss":     loss,
		"accuracy": 1 - math.Exp(-float64(step)/12),
		"losses":   map[string]float64{"train": loss, "valid": loss + 0.15},
	}, step, nil)
	time.Sleep(100 * time.Millisecond)
}
acc.EndTraining()`;

test("the live chart draws and updates under a running cell", { timeout: 300_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), "goaccel-livechart-"));
  const work = join(scratch, "work");
  mkdirSync(work);
  execFileSync(join(root, "bin", "goaccel"), ["install", "--prefix", scratch, "--name", "goaccel-livechart",
    "--display-name", "Go (goaccel livechart test)"], { stdio: "inherit" });
  const port = await freePort();
  const token = "goaccel-livechart-test";
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
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(`http://127.0.0.1:${port}/lab?token=${token}`);
    const card = page.locator('.jp-LauncherCard[title*="Go (goaccel livechart test)"]').first();
    await card.waitFor({ timeout: 90_000 });
    await card.click();
    // keep Lab's notification toasts ("get notified about news?") off the screenshot
    await page.addStyleTag({ content: ".Toastify { display: none !important; }" });
    await page.locator(".jp-Notebook .jp-Cell .cm-content").first().waitFor({ timeout: 60_000 });
    await page.locator(".jp-StatusBar-TextItem", { hasText: /Go \(goaccel livechart test\) \| Idle/ })
      .first().waitFor({ timeout: 90_000 });

    await page.locator(".jp-Notebook .jp-Cell .cm-content").last().click();
    await page.keyboard.insertText(CELL);
    await page.keyboard.press("Shift+Enter");

    // The chart appears while the cell runs, as inline SVG with lines.
    const chart = page.locator(".jp-OutputArea-output .goaccel-livechart").first();
    await chart.waitFor({ timeout: 60_000 });
    const heading = chart.locator("div").first();
    const stepOf = async () => {
      const m = /browser_run — step (\d+) \((running|finished)\)/.exec(await heading.textContent());
      assert.ok(m, `unexpected heading ${await heading.textContent()}`);
      return { step: Number(m[1]), state: m[2] };
    };
    await chart.locator("svg polyline").first().waitFor({ timeout: 30_000 });
    const first = await stepOf();
    assert.equal(first.state, "running", "the chart should be drawn while the cell runs");
    // ...and updates in place: the step moves on, still in one chart.
    let later = first;
    const end = Date.now() + 20_000;
    while (later.step === first.step && Date.now() < end) {
      await page.waitForTimeout(200);
      later = await stepOf();
    }
    assert.ok(later.step > first.step, `the chart did not update (step ${first.step})`);
    assert.equal(await page.locator(".jp-OutputArea-output .goaccel-livechart").count(), 1);

    // The end: finished at the last step, one line per metric, the table.
    await chart.locator("div", { hasText: "browser_run — step 49 (finished)" }).first().waitFor({ timeout: 60_000 });
    const metrics = await chart.locator("svg polyline").evaluateAll((ls) => ls.map((l) => l.getAttribute("data-metric")));
    assert.deepEqual(metrics.sort(), ["accuracy", "loss", "losses/train", "losses/valid"]);
    for (const n of await chart.locator("svg polyline").evaluateAll((ls) => ls.map((l) => l.getAttribute("points").trim().split(/\s+/).length))) {
      assert.equal(n, 50);
    }
    // every chart is drawn at a visible size
    for (const box of await chart.locator("svg").evaluateAll((ss) => ss.map((s) => s.getBoundingClientRect().toJSON()))) {
      assert.ok(box.width >= 300 && box.height >= 180, `chart drawn at ${box.width}x${box.height}`);
    }
    const table = await chart.locator("table").textContent();
    assert.match(table, /loss\s*0\.2/);
    await chart.screenshot({ path: join(artifacts, "livechart.png") });
  } catch (e) {
    try { const pages = browser ? browser.contexts().flatMap((c) => c.pages()) : [];
      if (pages[0]) await pages[0].screenshot({ path: join(artifacts, "livechart-failure.png"), fullPage: true }); } catch { /* best effort */ }
    writeFileSync(join(artifacts, "livechart-server.log"), labLog);
    throw e;
  } finally {
    if (browser) await browser.close();
    try { process.kill(-lab.pid, "SIGTERM"); } catch { /* already gone */ }
  }
});
