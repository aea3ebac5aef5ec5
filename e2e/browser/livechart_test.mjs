// The live chart in a real browser: JupyterLab with goaccel's kernelspec,
// Debian's chromium through playwright-core, a cell that trains for ~50
// steps with an Accelerator (which adds the live chart under the cell). The
// chart must appear as SVG with one line per metric, update while the cell
// runs (the step in its heading moves on) and end "finished" at the last
// step. The chart is saved to e2e/artifacts/livechart.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { artifacts, withGoNotebook } from "./lab.mjs";

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
  await withGoNotebook("livechart", { width: 1400, height: 1000 }, async (page, runCell) => {
    await runCell(CELL);

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
  });
});
