#!/usr/bin/env node
// Screenshots of experimaestro's web monitor showing an experiment's jobs, then the first job's
// details (its progress levels), through headless Chromium and its DevTools protocol.
//
//   node --experimental-websocket scripts/screenshot-monitor.mjs URL EXPERIMENT OUT_PREFIX
//
// URL: the monitor's address with its token, as `experimaestro experiments --workdir WS monitor
// --port P` prints it. Writes OUT_PREFIX-jobs.png and OUT_PREFIX-job.png (without the job's
// folder), and prints the page's text.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const [url, experiment, prefix] = process.argv.slice(2);
if (!url || !experiment || !prefix) {
  console.error("usage: node --experimental-websocket scripts/screenshot-monitor.mjs URL EXPERIMENT OUT_PREFIX");
  process.exit(2);
}
const port = 9300 + Math.floor(Math.random() * 500);
const chromium = spawn("chromium", ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,700", `--remote-debugging-port=${port}`, "about:blank"], { stdio: "ignore" });
const sleep = (ms) => new Promise((wake) => setTimeout(wake, ms));

async function pageSocket() {
  for (let i = 0; i < 100; i++) {
    try {
      const pages = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      const page = pages.find((p) => p.type === "page");
      if (page) return page.webSocketDebuggerUrl;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error("Chromium's DevTools did not answer within 10 s");
}

const socket = new WebSocket(await pageSocket());
await new Promise((open) => socket.addEventListener("open", open));
let next = 0;
const pending = new Map();
socket.addEventListener("message", (event) => {
  const message = JSON.parse(event.data);
  pending.get(message.id)?.(message.result);
  pending.delete(message.id);
});
const send = (method, params = {}) => new Promise((answer) => {
  pending.set(++next, answer);
  socket.send(JSON.stringify({ id: next, method, params }));
});
const evaluate = async (expression) => (await send("Runtime.evaluate", { expression, returnByValue: true })).result?.value;
const screenshot = async (file) => writeFileSync(file, Buffer.from((await send("Page.captureScreenshot", { format: "png" })).data, "base64"));

try {
  await send("Page.enable");
  await send("Page.navigate", { url });
  await sleep(5000);
  const opened = await evaluate(`(() => {
    const cell = [...document.querySelectorAll("*")].find((e) => e.children.length === 0 && e.textContent.trim() === ${JSON.stringify(experiment)});
    cell?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
    return cell !== undefined;
  })()`);
  if (!opened) throw new Error(`no experiment ${experiment} on the monitor's first page`);
  await sleep(4000);
  await screenshot(`${prefix}-jobs.png`);
  // The first icon of the first job's row opens its details.
  await evaluate(`(() => {
    const icon = document.querySelector("tbody tr td:last-child :is(a, button, span, i, svg)");
    (icon?.closest("a, button, span, i") ?? icon)?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  })()`);
  await sleep(3000);
  // The job's folder names this machine's directories: its row is hidden from the picture.
  await evaluate(`(() => {
    const label = [...document.querySelectorAll(".modal *")].find((e) => e.children.length === 0 && e.textContent.trim() === "Path");
    for (const cell of [label, label?.nextElementSibling]) if (cell) cell.style.display = "none";
  })()`);
  await screenshot(`${prefix}-job.png`);
  console.log(await evaluate("document.body.innerText"));
} finally {
  socket.close();
  chromium.kill();
}
