// A real browser against a real JupyterLab: pick the Go kernel from the
// launcher, run cells and read their outputs. Screenshot:
// e2e/artifacts/jupyterlab.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { artifacts, withGoNotebook } from "./lab.mjs";

test("JupyterLab runs Go cells with the goaccel kernel", { timeout: 300_000 }, async () => {
  await withGoNotebook("browser", { width: 1400, height: 900 }, async (page, runCell) => {
    await runCell('import "fmt"\nfmt.Println("hello from the browser", 6*7)');
    const out = page.locator(".jp-OutputArea-output", { hasText: "hello from the browser 42" });
    await out.first().waitFor({ timeout: 60_000 });

    await runCell('import "github.com/goaccel/goaccel/display"\ndisplay.HTML(`<b id="goaccel-html">rich html</b>`)');
    await page.locator("#goaccel-html").first().waitFor({ timeout: 60_000 });

    await runCell("type T struct{ A int }\nT{A: 5}");
    await page.locator(".jp-OutputArea-output", { hasText: "{5}" }).first().waitFor({ timeout: 60_000 });

    // A table of 10,000 rows: an HTML table of its first 50, and a count of
    // the rest. How long it took is printed, not asserted (machines differ).
    const sent = Date.now();
    await runCell("rows := make([]struct {\n\tI  int\n\tSq float64\n}, 10000)\nfor i := range rows {\n\trows[i].I, rows[i].Sq = i, float64(i*i)\n}\nrows");
    const cut = page.locator(".jp-OutputArea-output", { hasText: "9950 rows more" });
    await cut.first().waitFor({ timeout: 120_000 });
    console.log(`a 10,000-row table shown ${Date.now() - sent} ms after its cell was sent (compiling the cell included)`);
    assert.equal(await cut.first().locator("table.goaccel-table tbody tr").count(), 50);
    const numbers = await cut.first().locator("table.goaccel-table tbody tr").nth(3).locator("td").evaluateAll(
      (tds) => tds.map((td) => [td.textContent, getComputedStyle(td).textAlign]));
    assert.deepEqual(numbers, [["3", "right"], ["9", "right"]]);

    await page.screenshot({ path: join(artifacts, "jupyterlab.png"), fullPage: true });
    assert.equal(await out.count(), 1);
  });
});
