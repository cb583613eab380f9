// The page of `harnessx serve`: start runs, follow their events, approve calls, answer
// questions. Everything from the server, a model or a tool is put in the page as text
// (textContent), never as HTML; the Content-Security-Policy runs no other script.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("harnessx-token") || "", run: null, last: null, reader: null, tools: null, generation: 0 };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (state.token) headers.Authorization = "Bearer " + state.token;
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (response.status === 401) {
    $("token-form").hidden = false;
    throw new Error("this server needs its token");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
  return data;
}

function say(text, className) {
  $("transcript").append(el("div", className || "notice", text));
}

// ---- runs ----

function usageLine(usage) {
  if (!usage) return "";
  const tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
  const cost = typeof usage.cost_usd === "number" ? ", $" + usage.cost_usd.toFixed(4) : "";
  return tokens + " tokens" + cost;
}

async function listRuns() {
  let data;
  try { data = await api("GET", "/v1/runs"); } catch (_) { return; }
  const list = $("runs");
  list.replaceChildren();
  for (const run of data.runs || []) {
    const row = el("button", "run-row" + (run.run_id === state.run ? " open" : ""));
    row.type = "button";
    row.dataset.runId = run.run_id;
    row.setAttribute("role", "listitem");
    row.append(el("span", "", run.prompt || run.run_id));
    row.append(el("span", "meta", run.status + " · " + (run.turns || 0) + " turns · " + usageLine(run.usage)));
    row.addEventListener("click", () => openRun(run.run_id));
    list.append(row);
  }
}

async function showStatus() {
  if (!state.run) return null;
  let run;
  try { run = await api("GET", "/v1/runs/" + encodeURIComponent(state.run)); } catch (e) { say(e.message, "error"); return null; }
  setStatus(run.status);
  return run;
}

// Shows the open run's status (and the actions it allows): from the server, or at once
// from the event that ended or paused the stream.
function setStatus(status) {
  $("run-status").textContent = status;
  $("actions").hidden = !(status === "running" || status === "limit_reached" || status === "needs_input");
  $("resume").hidden = status !== "limit_reached";
}

async function openRun(id) {
  state.generation += 1;
  if (state.reader) { state.reader.cancel().catch(() => {}); state.reader = null; }
  state.run = id;
  state.last = null;
  location.hash = "run=" + encodeURIComponent(id);
  $("transcript").replaceChildren();
  const run = await showStatus();
  if (run) {
    const prompt = el("div", "user");
    prompt.append(el("div", "", run.prompt));
    for (const part of run.attachments || []) prompt.append(el("span", "badge", describe(part)));
    $("transcript").append(prompt);
  }
  listRuns();
  follow(id, state.generation);
}

// ---- events ----

async function follow(id, generation) {
  for (;;) {
    if (generation !== state.generation) return;
    const headers = {};
    if (state.token) headers.Authorization = "Bearer " + state.token;
    if (state.last !== null) headers["Last-Event-ID"] = String(state.last);
    try {
      const response = await fetch("/v1/runs/" + encodeURIComponent(id) + "/events", { headers });
      if (response.status === 401) { $("token-form").hidden = false; return; }
      if (!response.ok) { say("the events could not be read (HTTP " + response.status + ")", "error"); return; }
      const reader = response.body.getReader();
      state.reader = reader;
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (generation === state.generation) dispatch(block);
        }
      }
    } catch (_) {
      // The connection dropped: look again below.
    }
    if (generation !== state.generation) return;
    const run = await showStatus();
    listRuns();
    if (!run || run.status !== "running") return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function dispatch(block) {
  let id = null;
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("id:")) id = Number(line.slice(3).trim());
    else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
  }
  if (!data) return;
  if (id !== null && !Number.isNaN(id)) state.last = id;
  let event;
  try { event = JSON.parse(data); } catch (_) { return; }
  show(event);
}

function describe(part) {
  if (!part || typeof part !== "object") return "";
  if (part.type === "text") return "text";
  const size = typeof part.bytes === "number" ? (part.bytes >= 1000 ? Math.round(part.bytes / 1000) + " kB" : part.bytes + " bytes") : (part.url || "");
  return (part.name ? part.name + ": " : "") + (part.media_type || part.type) + ", " + size;
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (_) { return String(text); }
}

function block(text) {
  const pre = el("pre", "", text);
  if (String(text).split("\n").length > 30) {
    pre.classList.add("collapsed");
    const more = el("button", "", "show all");
    more.type = "button";
    more.addEventListener("click", () => { pre.classList.remove("collapsed"); more.remove(); });
    const box = el("div");
    box.append(pre, more);
    return box;
  }
  return pre;
}

let assistant = null;
let thinking = null;

function show(event) {
  const transcript = $("transcript");
  switch (event.type) {
    case "model_request": {
      assistant = null;
      thinking = null;
      if (Array.isArray(event.parts) && event.parts.length) say("sent with " + event.parts.map(describe).join(", "));
      break;
    }
    case "text_delta": {
      if (!assistant) { assistant = el("div", "assistant-text", ""); transcript.append(assistant); }
      assistant.textContent += event.text;
      break;
    }
    case "reasoning_delta": {
      if (!thinking) {
        const details = el("details", "notice");
        details.append(el("summary", "", "thinking"));
        thinking = el("div", "assistant-text", "");
        details.append(thinking);
        const box = el("div");
        box.append(details);
        transcript.append(box);
      }
      thinking.textContent += event.text;
      break;
    }
    case "tool_call_start": {
      assistant = null;
      const call = el("div", "tool-call");
      call.dataset.callId = event.call_id;
      call.append(el("span", "name", "→ " + event.name));
      call.append(block(pretty(event.arguments)));
      transcript.append(call);
      break;
    }
    case "tool_call_end": {
      const result = el("div", "tool-result" + (event.is_error ? " error" : ""));
      result.dataset.callId = event.call_id;
      result.append(el("span", "name", (event.is_error ? "✗ " : "✓ ") + event.name));
      result.append(block(event.content));
      for (const part of event.parts || []) result.append(el("span", "badge", describe(part)));
      const call = transcript.querySelector('.tool-call[data-call-id="' + CSS.escape(event.call_id) + '"]');
      if (call) call.append(result); else transcript.append(result);
      break;
    }
    case "hook":
      say("hook " + event.hook + ": " + event.decision + (event.call_id ? " (" + event.call_id + ")" : ""));
      break;
    case "tool_progress": {
      const of = event.total === null || event.total === undefined ? "" : "/" + event.total;
      say("… " + event.progress + of + (event.message ? ": " + event.message : ""));
      break;
    }
    case "compaction":
      say("history compacted: about " + event.tokens_before + " → " + event.tokens_after + " tokens");
      break;
    case "model_fallback":
      say(event.from + " is down (" + event.reason + "); asking " + event.to);
      break;
    case "needs_input":
      for (const item of event.needs_input || []) transcript.append(needed(item));
      setStatus("needs_input");
      break;
    case "run_end": {
      const end = el("div", "run-end");
      end.append(el("div", "", event.output || "(" + event.status + ")"));
      end.append(el("div", "notice", event.status + " · " + (event.turns || 0) + " turns · " + usageLine(event.usage)));
      transcript.append(end);
      setStatus(event.status);
      break;
    }
    case "error":
      say(event.message, "error");
      setStatus("failed");
      break;
    default:
      break;
  }
}

// Follows the open run again from the last event seen (after an approval, an answer or
// a resume), in place of any stream still open.
function refollow() {
  state.generation += 1;
  if (state.reader) { state.reader.cancel().catch(() => {}); state.reader = null; }
  follow(state.run, state.generation);
}

// ---- approvals and questions ----

// POSTs `body` to the open run's `path`; `box` then says `done`, or why it failed.
async function post(box, path, body, done) {
  try {
    await api("POST", "/v1/runs/" + encodeURIComponent(state.run) + path, body);
    box.replaceChildren(el("span", "notice", done));
    refollow();
  } catch (e) {
    box.append(el("div", "error", e.message));
  }
}

function decide(item, box, body) {
  return post(box, "/approvals/" + encodeURIComponent(item.call_id), body, "sent: " + body.decision);
}

function answerCall(item, box, text) {
  return post(box, "/answers/" + encodeURIComponent(item.call_id), { text }, "answered");
}

function button(className, text, onClick) {
  const b = el("button", className, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

function approval(item) {
  const box = el("div", "approval");
  box.dataset.callId = item.call_id;
  box.append(el("div", "", item.tool + " waits for your approval"));
  box.append(el("div", "notice", item.reason));
  box.append(block(pretty(item.arguments)));
  const reason = el("input", "deny-reason");
  reason.placeholder = "why not (for the model)";
  reason.setAttribute("aria-label", "reason to deny");
  const buttons = el("div", "buttons");
  buttons.append(
    button("approve", "Approve", () => decide(item, box, { decision: "approve" })),
    button("always", "Always allow " + item.tool, () => decide(item, box, { decision: "session" })),
    button("deny", "Deny", () => decide(item, box, reason.value.trim() ? { decision: "deny", message: reason.value.trim() } : { decision: "deny" })),
    reason,
    button("edit", "Edit arguments", () => editor(item, box)),
  );
  box.append(buttons);
  return box;
}

async function editor(item, box) {
  if (box.querySelector(".edit-arguments")) return;
  const area = el("textarea", "edit-arguments");
  area.value = pretty(item.arguments);
  area.setAttribute("aria-label", "arguments");
  const problem = el("div", "invalid");
  const save = button("approve-edited", "Approve with these arguments", async () => {
    let value;
    try { value = JSON.parse(area.value); } catch (e) { problem.textContent = "not JSON: " + e.message; return; }
    const schema = await toolSchema(item.tool);
    const error = schema ? check(value, schema, "arguments") : null;
    if (error) { problem.textContent = error; return; }
    decide(item, box, { decision: "approve", arguments: value });
  });
  box.append(area, problem, save);
}

async function toolSchema(name) {
  if (!state.tools) {
    try { state.tools = (await api("GET", "/v1/tools")).tools || []; } catch (_) { state.tools = []; }
  }
  const tool = state.tools.find((t) => t.name === name);
  return tool ? tool.input_schema : null;
}

// The checks a tool's schema usually makes; the server checks the whole schema again.
function check(value, schema, at) {
  if (!schema || typeof schema !== "object") return null;
  const type = Array.isArray(value) ? "array" : value === null ? "null" : Number.isInteger(value) ? "integer" : typeof value;
  const types = schema.type === undefined ? null : [].concat(schema.type);
  if (types && !types.includes(type) && !(type === "integer" && types.includes("number"))) return at + " must be " + types.join(" or ");
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => JSON.stringify(v) === JSON.stringify(value))) return at + " must be one of " + schema.enum.map((v) => JSON.stringify(v)).join(", ");
  if (typeof value === "number") {
    if (typeof schema.minimum === "number" && value < schema.minimum) return at + " must be at least " + schema.minimum;
    if (typeof schema.maximum === "number" && value > schema.maximum) return at + " must be at most " + schema.maximum;
  }
  if (typeof value === "string") {
    if (typeof schema.minLength === "number" && value.length < schema.minLength) return at + " must have at least " + schema.minLength + " characters";
    if (typeof schema.maxLength === "number" && value.length > schema.maxLength) return at + " must have at most " + schema.maxLength + " characters";
  }
  if (type === "array" && schema.items) {
    for (let i = 0; i < value.length; i++) { const e = check(value[i], schema.items, at + "[" + i + "]"); if (e) return e; }
  }
  if (type === "object") {
    for (const name of schema.required || []) if (!(name in value)) return at + "." + name + " is required";
    const properties = schema.properties || {};
    for (const [name, v] of Object.entries(value)) {
      if (properties[name]) { const e = check(v, properties[name], at + "." + name); if (e) return e; }
      else if (schema.additionalProperties === false) return at + "." + name + " is not a field of this tool";
    }
  }
  return null;
}

function needed(item) {
  switch (item.kind) {
    case "approval": return approval(item);
    case "elicitation": return elicitation(item);
    case "auth": return login(item);
    default: return question(item);
  }
}

// A tool's server asks a question mid-call (MCP elicitation): a form of the fields its
// schema asks for; the answer, a decline or a cancel goes back to the server as the call
// runs again.
function elicitation(item) {
  const box = el("div", "elicitation");
  box.dataset.callId = item.call_id;
  box.append(el("div", "asked", item.reason));
  const schema = item.schema || {};
  const required = schema.required || [];
  const fields = [];
  for (const [name, field] of Object.entries(schema.properties || {})) {
    const row = el("label", "field");
    const title = (field.title || name) + (required.includes(name) ? " *" : "");
    row.append(el("span", "field-name", title));
    if (field.description) row.append(el("span", "notice", field.description));
    const choices = Array.isArray(field.enum) ? field.enum : Array.isArray(field.oneOf) ? field.oneOf.map((c) => c.const) : null;
    let input;
    if (field.type === "boolean") {
      input = el("input", "field-input");
      input.type = "checkbox";
    } else if (choices) {
      input = el("select", "field-input");
      input.append(el("option", "", ""));
      for (const c of choices) { const o = el("option", "", String(c)); o.value = String(c); input.append(o); }
    } else {
      input = el("input", "field-input");
      input.type = field.type === "integer" || field.type === "number" ? "number" : "text";
    }
    input.name = name;
    row.append(input);
    box.append(row);
    fields.push({ name, field, input });
  }
  const problem = el("div", "invalid");
  const collect = () => {
    const value = {};
    for (const { name, field, input } of fields) {
      if (field.type === "boolean") { if (input.checked || required.includes(name)) value[name] = input.checked; continue; }
      const raw = input.value.trim();
      if (raw === "") continue;
      if (field.type === "integer" || field.type === "number") value[name] = Number(raw);
      else if (field.type === "array") value[name] = raw.split(",").map((s) => s.trim()).filter(Boolean);
      else value[name] = raw;
    }
    return value;
  };
  const buttons = el("div", "buttons");
  buttons.append(
    button("elicit-send", "Send", () => {
      const value = collect();
      const error = check(value, schema, "answer");
      if (error) { problem.textContent = error; return; }
      answerCall(item, box, JSON.stringify(value));
    }),
    button("elicit-decline", "Decline", () => answerCall(item, box, "decline")),
    button("elicit-cancel", "Cancel", () => answerCall(item, box, "cancel")),
  );
  box.append(problem, buttons);
  return box;
}

// A tool's server wants a login (its token was refused): the command to run, then resume.
function login(item) {
  const box = el("div", "login");
  box.dataset.callId = item.call_id;
  box.append(el("div", "", item.tool + " needs a login"));
  box.append(el("div", "notice", item.reason));
  box.append(button("login-resume", "Resume after the login", () => post(box, "/resume", {}, "resumed")));
  return box;
}

// A call waiting for words: an `ask_user` question (its suggested replies as buttons),
// or whether a call whose outcome is unknown took effect.
function question(item) {
  const box = el("div", "question");
  box.dataset.callId = item.call_id;
  const reply = (words) => answerCall(item, box, words);
  if (item.kind === "question") {
    box.append(el("div", "asked", item.reason));
    let choices = [];
    try { choices = JSON.parse(item.arguments).choices || []; } catch (_) { choices = []; }
    const row = el("div", "choices");
    for (const choice of choices) if (typeof choice === "string") row.append(button("choice", choice, () => reply(choice)));
    if (row.childElementCount) box.append(row);
  } else {
    box.append(el("div", "", item.tool + ": did it take effect?"));
    box.append(el("div", "notice", item.reason));
  }
  const text = el("textarea", "answer-text");
  text.setAttribute("aria-label", "answer");
  const send = button("answer-send", item.kind === "question" ? "Reply" : "Answer", () => reply(text.value));
  box.append(text, send);
  return box;
}

// ---- starting runs ----

function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ name: file.name, data: String(reader.result).replace(/^data:[^,]*,/, "") });
    reader.onerror = () => reject(new Error("cannot read " + file.name));
    reader.readAsDataURL(file);
  });
}

async function send(event) {
  if (event) event.preventDefault();
  const prompt = $("prompt").value.trim();
  if (!prompt) return;
  const body = { prompt };
  const files = Array.from($("attach").files || []);
  try {
    if (files.length) body.attachments = await Promise.all(files.map(readFile));
    const limits = {};
    if ($("max-turns").value) limits.max_turns = Number($("max-turns").value);
    if ($("max-tool-calls").value) limits.max_tool_calls = Number($("max-tool-calls").value);
    if ($("max-cost").value) limits.max_cost_usd = Number($("max-cost").value);
    if (Object.keys(limits).length) body.limits = limits;
    const started = await api("POST", "/v1/runs", body);
    $("prompt").value = "";
    $("attach").value = "";
    openRun(started.run_id);
  } catch (e) {
    say(e.message, "error");
  }
}

function start() {
  $("ask").addEventListener("submit", send);
  $("prompt").addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(e); });
  $("token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    state.token = $("token").value;
    sessionStorage.setItem("harnessx-token", state.token);
    $("token-form").hidden = true;
    listRuns();
    if (state.run) openRun(state.run);
  });
  $("resume").addEventListener("click", async () => {
    try {
      await api("POST", "/v1/runs/" + encodeURIComponent(state.run) + "/resume", { limits: { max_turns: Number($("more-turns").value) || 20 } });
      refollow();
    } catch (e) { say(e.message, "error"); }
  });
  $("cancel").addEventListener("click", async () => {
    try { await api("POST", "/v1/runs/" + encodeURIComponent(state.run) + "/cancel"); openRun(state.run); } catch (e) { say(e.message, "error"); }
  });
  const open = /^#run=(.+)$/.exec(location.hash);
  if (open) openRun(decodeURIComponent(open[1])); else listRuns();
  setInterval(listRuns, 5000);
}

document.addEventListener("DOMContentLoaded", start);
