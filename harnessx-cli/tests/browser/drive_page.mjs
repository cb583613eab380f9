// Drives the page of `harnessx serve` in headless Chromium over the DevTools protocol, as a
// person would: types a prompt and sends it, waits for the pending approval, edits the
// call's arguments and approves them, and waits for the tool calls and the answer. Saves
// a screenshot. Prints one JSON line: what it saw. In the mode `question`, it waits for the
// model's `ask_user` question instead and replies with its suggested reply `blue`; in the
// mode `elicitation`, it answers an MCP server's question mid-call in its form. In the
// mode `report`, URL is `harnessx eval --report`'s page (a file:// URL): it reads what the
// page shows (the table, the charts' bars and their drawn sizes, any injected element).
//
// node --experimental-websocket drive_page.mjs CHROMIUM URL SCREENSHOT USER_DATA_DIR [question|elicitation|report]
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const [chromium, url, screenshot, profile, mode] = process.argv.slice(2);
const browser = spawn(chromium, [
  "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
  "--remote-debugging-port=0", `--user-data-dir=${profile}`, "--window-size=412,915", "about:blank",
], { stdio: ["ignore", "ignore", "pipe"] });
const fail = (why) => { console.log(JSON.stringify({ error: why })); browser.kill("SIGKILL"); process.exit(1); };
setTimeout(() => fail("timed out"), 90_000).unref();

const endpoint = await new Promise((resolve) => {
  let text = "";
  browser.stderr.on("data", (chunk) => {
    text += chunk;
    const found = /DevTools listening on (ws:\/\/\S+)/.exec(text);
    if (found) resolve(found[1]);
  });
});
const socket = new WebSocket(endpoint);
await new Promise((resolve, reject) => { socket.onopen = resolve; socket.onerror = reject; });
let next = 0;
const pending = new Map();
const errors = [];
socket.onmessage = (message) => {
  const data = JSON.parse(message.data);
  if (data.id !== undefined && pending.has(data.id)) {
    const { resolve, reject } = pending.get(data.id);
    pending.delete(data.id);
    data.error ? reject(new Error(data.error.message)) : resolve(data.result);
  } else if (data.method === "Runtime.exceptionThrown") {
    errors.push(data.params.exceptionDetails.text + " " + (data.params.exceptionDetails.exception?.description || ""));
  } else if (data.method === "Log.entryAdded" && data.params.entry.level === "error") {
    errors.push(data.params.entry.text);
  }
};
const send = (method, params = {}, sessionId) => new Promise((resolve, reject) => {
  const id = ++next;
  pending.set(id, { resolve, reject });
  socket.send(JSON.stringify({ id, method, params, sessionId }));
});

const { targetId } = await send("Target.createTarget", { url: "about:blank" });
const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
await send("Runtime.enable", {}, sessionId);
await send("Log.enable", {}, sessionId);
await send("Page.enable", {}, sessionId);
await send("Page.navigate", { url }, sessionId);
const evaluate = async (expression) => {
  const { result, exceptionDetails } = await send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, sessionId);
  if (exceptionDetails) throw new Error(exceptionDetails.text);
  return result.value;
};
const waitFor = async (what, expression, ms = 30_000) => {
  const until = Date.now() + ms;
  for (;;) {
    const value = await evaluate(expression).catch(() => null);
    if (value) return value;
    if (Date.now() > until) fail("never saw " + what + "; errors: " + errors.join(" | "));
    await new Promise((r) => setTimeout(r, 100));
  }
};

if (mode === "report") {
  await waitFor("the report", `document.readyState === "complete" && !!document.getElementById("cases")`);
  const seen = await evaluate(`(() => {
    const bars = (id) => Array.from(document.querySelectorAll("#" + id + " rect.bar")).map((r) => {
      const box = r.getBoundingClientRect();
      return { width: Math.round(box.width), height: Math.round(box.height) };
    });
    const chart = document.querySelector("#tokens-chart svg")?.getBoundingClientRect();
    return {
      title: document.title,
      summary: document.getElementById("summary")?.textContent || "",
      rows: Array.from(document.querySelectorAll("#cases tbody tr")).map((tr) => Array.from(tr.cells).map((c) => c.textContent)),
      tokenBars: bars("tokens-chart"),
      costBars: bars("cost-chart"),
      chart: chart ? { width: Math.round(chart.width), height: Math.round(chart.height), visible: chart.width > 0 && chart.height > 0 } : null,
      injected: document.querySelectorAll("img, script, iframe, b").length,
      transcripts: document.querySelectorAll("#transcripts details").length,
    };
  })()`);
  const shot = await send("Page.captureScreenshot", { format: "png", captureBeyondViewport: true }, sessionId);
  writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  console.log(JSON.stringify({ ...seen, errors }));
  socket.close();
  browser.kill("SIGKILL");
  process.exit(0);
}
await waitFor("the page", `document.readyState === "complete" && !!document.getElementById("send")`);
if (mode === "question") {
  await evaluate(`document.getElementById("prompt").value = "Paint it."; document.getElementById("send").click(); true`);
  await waitFor("the question", `!!document.querySelector(".question .choice")`);
  const asked = await evaluate(`document.querySelector(".question .asked").textContent`);
  const choices = await evaluate(`Array.from(document.querySelectorAll(".question .choice")).map((b) => b.textContent)`);
  await evaluate(`Array.from(document.querySelectorAll(".question .choice")).find((b) => b.textContent === "blue").click(); true`);
  const answer = await waitFor("the answer", `document.querySelector(".run-end")?.textContent || ""`);
  console.log(JSON.stringify({ asked, choices, answer, errors }));
  socket.close();
  browser.kill("SIGKILL");
  process.exit(0);
}
if (mode === "elicitation") {
  // A tool's server asks mid-call: its form, a refusal of an answer missing a required
  // field, then the answer sent.
  await evaluate(`document.getElementById("prompt").value = "Go."; document.getElementById("send").click(); true`);
  await waitFor("the server's question", `!!document.querySelector(".elicitation .elicit-send")`);
  const asked = await evaluate(`document.querySelector(".elicitation .asked").textContent`);
  const fields = await evaluate(`Array.from(document.querySelectorAll(".elicitation .field-input")).map((i) => i.name)`);
  await evaluate(`document.querySelector(".elicitation .elicit-send").click(); true`);
  const refused = await waitFor("the schema's refusal", `document.querySelector(".elicitation .invalid")?.textContent || ""`);
  await evaluate(`document.querySelector('.elicitation [name="name"]').value = "Ada <b>bold</b>";
    document.querySelector('.elicitation [name="integer"]').value = "7";
    document.querySelector(".elicitation .elicit-send").click(); true`);
  const answer = await waitFor("the answer", `document.querySelector(".run-end")?.textContent || ""`);
  const injected = await evaluate(`document.querySelectorAll("#transcript b").length`);
  const shot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
  writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
  console.log(JSON.stringify({ asked, fields, refused, answer, injected, errors }));
  socket.close();
  browser.kill("SIGKILL");
  process.exit(0);
}
await evaluate(`document.getElementById("prompt").value = "Look around <img src=x onerror=alert(1)>"; document.getElementById("send").click(); true`);
await waitFor("the pending approval", `!!document.querySelector(".approval .edit")`);
await evaluate(`document.querySelector(".approval .edit").click(); true`);
await waitFor("the argument editor", `!!document.querySelector(".edit-arguments")`);
// An edit that the tool's schema refuses is said, and nothing is sent.
await evaluate(`document.querySelector(".edit-arguments").value = '{"path": 3}'; document.querySelector(".approve-edited").click(); true`);
const refused = await waitFor("the schema's refusal", `document.querySelector(".approval .invalid")?.textContent || ""`);
await evaluate(`document.querySelector(".edit-arguments").value = JSON.stringify({path: "edited.txt", content: "from the browser"}); document.querySelector(".approve-edited").click(); true`);
const answer = await waitFor("the answer", `document.querySelector(".run-end")?.textContent || ""`);
const seen = await evaluate(`({
  toolCalls: Array.from(document.querySelectorAll(".tool-call > .name")).map((n) => n.textContent),
  status: document.getElementById("run-status").textContent,
  runs: document.querySelectorAll("#runs .run-row").length,
  promptShown: document.querySelector("#transcript .user")?.textContent || "",
  injected: document.querySelectorAll("#transcript img").length,
})`);
const shot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
writeFileSync(screenshot, Buffer.from(shot.data, "base64"));
console.log(JSON.stringify({ ...seen, answer, refused, errors }));
socket.close();
browser.kill("SIGKILL");
process.exit(0);
