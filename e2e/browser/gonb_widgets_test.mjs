// gonbui's widgets in a real page: the kernel shows the script that opens
// the "gonb_comm" comm (notebook/gonb/frontend.js), chromium runs it, a
// person clicks a button and moves a slider, and the cell, which waits on
// them, hears both. Screenshot: e2e/artifacts/gonb-widgets.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { artifacts, withGoNotebook } from "./lab.mjs";

const CELL = `import (
	"github.com/janpfeifer/gonb/gonbui/dom"
	"github.com/janpfeifer/gonb/gonbui/widgets"
)

%%
root := dom.CreateTransientDiv()
button := widgets.Button("Press me").AppendTo(root).Done()
slider := widgets.Slider(0, 100, 10).AppendTo(root).Done()
pressed, moved := button.Listen(), slider.Listen()
fmt.Println("waiting for a person")
<-pressed.C
fmt.Println("button pressed")
fmt.Println("slider at", <-moved.C)`;

test("gonbui's widgets answer a person in JupyterLab", { timeout: 600_000 }, async () => {
  await withGoNotebook("gonb-widgets", { width: 1400, height: 900 }, async (page, runCell) => {
    await runCell(CELL);
    // the first build of gonbui's packages may take minutes on a cold machine
    await page.locator(".jp-OutputArea-output", { hasText: "waiting for a person" }).first()
      .waitFor({ timeout: 480_000 });
    const button = page.locator(".jp-OutputArea-output button", { hasText: "Press me" }).first();
    await button.waitFor({ timeout: 60_000 });
    await button.click();
    await page.locator(".jp-OutputArea-output", { hasText: "button pressed" }).first().waitFor({ timeout: 60_000 });
    // a person drags the slider: the page sets its value and fires "change"
    const slider = page.locator('.jp-OutputArea-output input[type="range"]').first();
    await slider.evaluate((el) => { el.value = 73; el.dispatchEvent(new Event("change")); });
    const moved = page.locator(".jp-OutputArea-output", { hasText: "slider at 73" }).first();
    await moved.waitFor({ timeout: 60_000 });
    await page.screenshot({ path: join(artifacts, "gonb-widgets.png"), fullPage: true });
    assert.equal(await moved.count(), 1);
  });
});
