// JupyterLab's debugger on a Go notebook, in a real browser: enable the
// debugger from the notebook's toolbar, set a breakpoint by clicking the
// cell's gutter, run the cell, and see the call stack stop in the function
// and the variables panel show its arguments' values; continue and see the
// cell's result. Screenshot: e2e/artifacts/debugger.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { artifacts, withGoNotebook } from "./lab.mjs";

const CELL = `func add(a, b int) int {
	c := a + b
	return c
}

add(40, 2)`;

test("JupyterLab's debugger stops a Go cell at a breakpoint and shows its variables", { timeout: 300_000 }, async () => {
  await withGoNotebook("debugger", { width: 1500, height: 950 }, async (page) => {
    const cell = page.locator(".jp-Notebook .jp-Cell").first();
    await cell.locator(".cm-content").click();
    await page.keyboard.insertText(CELL);

    // The debugger switch in the notebook's toolbar (JupyterLab offers it
    // because kernel_info and the kernelspec say "debugger": true).
    const bug = page.locator(".jp-DebuggerBugButton").first();
    await bug.waitFor({ timeout: 60_000 });
    await bug.click();
    await page.locator('.jp-DebuggerBugButton[aria-pressed="true"]').first().waitFor({ timeout: 60_000 });

    // A breakpoint on line 2 (`c := a + b`): the gutter's first element is
    // CodeMirror's spacer, line n is element n.
    const gutter = cell.locator(".cm-gutters .cm-breakpoint-gutter .cm-gutterElement");
    await gutter.nth(2).waitFor({ timeout: 60_000 });
    await gutter.nth(2).click();
    // the kernel has it: the Breakpoints panel lists line 2 of the cell's file
    await page.locator(".jp-DebuggerBreakpoint-line", { hasText: /^2$/ }).first().waitFor({ timeout: 30_000 });

    // Run it: it stops in add.
    await cell.locator(".cm-content").click();
    await page.keyboard.press("Shift+Enter");
    await page.locator(".jp-DebuggerCallstackFrame-name", { hasText: "add" }).first().waitFor({ timeout: 90_000 });
    const vars = page.locator(".jp-DebuggerVariables-body");
    await vars.locator("text=/\\b40\\b/").first().waitFor({ timeout: 60_000 });
    const text = await vars.first().textContent();
    // names and values, as the panel lists them: a: 40, b: 2, c: 0
    assert.match(text, /a:?\s*40/);
    assert.match(text, /b:?\s*2(?!\d)/);
    assert.match(text, /c:?\s*0/);
    await page.screenshot({ path: join(artifacts, "debugger.png") });

    // Continue: the cell ends with add's result.
    await page.locator('jp-button[title^="Continue"]').first().click();
    await page.locator(".jp-OutputArea-output", { hasText: "42" }).first().waitFor({ timeout: 60_000 });
  });
});
