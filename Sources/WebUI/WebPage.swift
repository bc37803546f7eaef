/// The page: one HTML file with its style and script inline (no font, script or style from
/// anywhere else). It reads `/api/state`, listens on `/live` for events (progress among them) and
/// changes things only through `/api/resolve`, `/api/send` and `/api/restore`.
enum WebPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>syncagent</title>
<style>
:root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --mute:#667085; --line:#e3e6eb; --ok:#1a7f37; --bad:#c62828; --warn:#9a6700; --acc:#2457c5; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
header { display:flex; align-items:center; gap:.75rem; padding:.75rem 1rem; background:#1d2330; color:#fff; position:sticky; top:0; z-index:2; }
header h1 { font-size:1.1rem; margin:0; font-weight:600; }
#live { font-size:.8rem; padding:.1rem .5rem; border-radius:1rem; background:#3a4256; }
#live.on { background:var(--ok); }
main { max-width:1100px; margin:0 auto; padding:1rem; display:grid; gap:1rem; }
section.agent { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:1rem; }
section.agent > h2 { margin:0 0 .25rem; font-size:1.2rem; display:flex; gap:.5rem; align-items:baseline; flex-wrap:wrap; }
.sub { color:var(--mute); font-size:.85rem; word-break:break-all; }
h3 { font-size:.95rem; margin:1rem 0 .4rem; text-transform:uppercase; letter-spacing:.04em; color:var(--mute); }
table { width:100%; border-collapse:collapse; font-size:.9rem; }
td, th { text-align:left; padding:.3rem .4rem; border-bottom:1px solid var(--line); vertical-align:top; }
.dot { display:inline-block; width:.6rem; height:.6rem; border-radius:50%; background:var(--mute); margin-right:.3rem; }
.dot.ok { background:var(--ok); } .dot.bad { background:var(--bad); }
.badge { font-size:.75rem; padding:.05rem .45rem; border-radius:1rem; background:#eef1f6; color:var(--ink); }
.badge.warn { background:#fff4d6; color:var(--warn); } .badge.bad { background:#fde7e7; color:var(--bad); }
.empty { color:var(--mute); font-style:italic; margin:.2rem 0; }
.task { margin:.3rem 0; } .task progress { width:100%; height:1rem; }
.task .line { font-size:.85rem; color:var(--mute); }
ul.plain { list-style:none; padding:0; margin:0; } ul.plain li { padding:.3rem 0; border-bottom:1px solid var(--line); }
.problem { color:var(--bad); }
button { font:inherit; padding:.3rem .7rem; border-radius:6px; border:1px solid #b8c0cc; background:#fff; cursor:pointer; }
button:hover, button:focus-visible { border-color:var(--acc); outline:2px solid #c9d7f5; }
button.primary { background:var(--acc); color:#fff; border-color:var(--acc); }
.conflict { border:1px solid var(--line); border-radius:8px; padding:.6rem; margin:.5rem 0; }
.conflict .head { display:flex; gap:.5rem; align-items:center; flex-wrap:wrap; }
.conflict .path { font-family: ui-monospace, monospace; font-weight:600; word-break:break-all; }
.versions { display:grid; grid-template-columns:repeat(auto-fit, minmax(240px, 1fr)); gap:.6rem; margin-top:.6rem; }
.version { border:1px solid var(--line); border-radius:6px; padding:.5rem; min-width:0; }
.version.current { border-color:var(--acc); }
.version h4 { margin:0 0 .3rem; font-size:.9rem; display:flex; justify-content:space-between; gap:.3rem; flex-wrap:wrap; }
pre { margin:0; white-space:pre-wrap; word-break:break-word; font: 12.5px/1.4 ui-monospace, monospace; max-height:22rem; overflow:auto; background:#fafbfc; padding:.4rem; border-radius:4px; }
.add { background:#e6f4ea; } .del { background:#fde7e7; text-decoration:line-through; }
.version img { max-width:100%; max-height:18rem; display:block; margin:auto; }
.keys td.diff { background:#fff4d6; }
textarea { width:100%; min-height:8rem; font: 12.5px/1.4 ui-monospace, monospace; }
.actions { display:flex; gap:.4rem; flex-wrap:wrap; margin-top:.5rem; }
.row { display:flex; gap:.4rem; flex-wrap:wrap; align-items:center; }
input[type=text] { font:inherit; padding:.3rem .5rem; border:1px solid #b8c0cc; border-radius:6px; min-width:12rem; flex:1; }
.events li { font-size:.85rem; } .events time { color:var(--mute); font-size:.75rem; margin-right:.4rem; }
#toast { position:fixed; bottom:1rem; left:50%; transform:translateX(-50%); background:#1d2330; color:#fff; padding:.5rem 1rem; border-radius:6px; display:none; max-width:90vw; }
@media (max-width: 560px) { main { padding:.5rem; } section.agent { padding:.7rem; } td, th { padding:.25rem; } .hide-narrow { display:none; } }
</style>
</head>
<body>
<header><h1>syncagent</h1><span id="live" title="live updates from the agents">connecting</span><span class="sub" id="updated"></span></header>
<main id="agents" aria-live="polite"><p class="empty">Loading…</p></main>
<div id="toast" role="status"></div>
<script>
"use strict";
const $ = (s, r = document) => r.querySelector(s);
const esc = (v) => String(v ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
let state = [];
const live = {};          // agent -> title -> progress report (from events)
const open = new Set();   // "agent/id" of conflicts shown side by side
const details = {};       // "agent/id" -> ConflictView

function toast(text) { const t = $("#toast"); t.textContent = text; t.style.display = "block"; clearTimeout(toast.t); toast.t = setTimeout(() => t.style.display = "none", 5000); }

async function api(path, body) {
  const r = await fetch(path, body ? { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) } : {});
  const j = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

async function refresh() {
  try {
    state = await api("/api/state");
    for (const key of open) { const [a, id] = key.split("/"); details[key] = await api(`/api/conflict?agent=${a}&id=${encodeURIComponent(id)}`).catch(() => null); if (!details[key]) open.delete(key); }
    render();
    $("#updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) { toast("cannot read the agents: " + e.message); }
}
let pending = null;
function soon() { clearTimeout(pending); pending = setTimeout(refresh, 250); }

function tasksOf(a) {
  const byTitle = {};
  for (const t of (a.status && a.status.tasks) || []) byTitle[title(t)] = t;
  for (const [k, t] of Object.entries(live[a.index] || {})) if (!byTitle[k] || t.done >= byTitle[k].done) byTitle[k] = t;
  return Object.values(byTitle);
}
function title(t) { return t.peer ? `${t.task} ${t.task === "send" ? "to" : "from"} ${t.peer}` : t.task; }
function unit(t) { return t.task === "receive" || t.task === "send" ? "objects" : "paths"; }
function size(b) { const u = ["B", "KB", "MB", "GB"]; let i = 0; while (b >= 1000 && i < 3) { b /= 1000; i++; } return i ? b.toFixed(1) + " " + u[i] : b + " B"; }
function taskLine(t) {
  let s = `${title(t)}: ${t.done}${t.total != null ? " of " + t.total : ""} ${unit(t)}`;
  if (t.total) s += ` (${Math.min(100, Math.floor(t.done * 100 / t.total))}%)`;
  if (t.bytes) s += ", " + size(t.bytes);
  if (t.rate && !(t.total != null && t.done >= t.total)) s += `, ${Math.round(t.rate)}/s`;
  if (t.secondsLeft != null && !(t.total != null && t.done >= t.total)) s += `, ${t.secondsLeft} s left`;
  return s;
}

// A redraw keeps what the person is doing: text typed into a merge or a path, open editors,
// shown histories, the focused control.
function render() {
  const main = $("#agents");
  if (!state.length) { main.innerHTML = '<p class="empty">No agents configured.</p>'; return; }
  const keep = { values: {}, opened: [], histories: {}, focus: document.activeElement && document.activeElement.id };
  for (const t of main.querySelectorAll("textarea, input[type=text]")) if (t.id) keep.values[t.id] = t.value;
  for (const d of main.querySelectorAll("details[open]")) if (d.id) keep.opened.push(d.id);
  for (const h of main.querySelectorAll(".history")) keep.histories[h.id] = h.innerHTML;
  main.innerHTML = state.map(renderAgent).join("");
  for (const [id, v] of Object.entries(keep.values)) { const t = document.getElementById(id); if (t) t.value = v; }
  for (const id of keep.opened) { const d = document.getElementById(id); if (d) d.open = true; }
  for (const [id, v] of Object.entries(keep.histories)) { const h = document.getElementById(id); if (h) h.innerHTML = v; }
  if (keep.focus) { const f = document.getElementById(keep.focus); if (f) f.focus(); }
}

function renderTasks(a) {
  const tasks = tasksOf(a);
  return tasks.length ? tasks.map(t => `<div class="task" data-task="${esc(title(t))}"><progress max="${t.total || ""}" ${t.total ? `value="${t.done}"` : ""} aria-label="${esc(title(t))}"></progress><div class="line">${esc(taskLine(t))}</div></div>`).join("")
    : '<p class="empty">Nothing in hand: every change is where it belongs.</p>';
}

function renderAgent(a) {
  const s = a.status;
  const name = s ? s.device : "(unknown)";
  let h = `<section class="agent" id="agent-${a.index}" data-agent="${a.index}" data-device="${esc(name)}">`;
  h += `<h2><span class="device-name">${esc(name)}</span> `;
  h += s ? (s.running ? '<span class="badge">agent running</span>' : '<span class="badge warn">agent stopped</span>') : "";
  if (s && s.conflicts.open) h += ` <span class="badge bad">${s.conflicts.open} conflict${s.conflicts.open === 1 ? "" : "s"}</span>`;
  if (s && s.held) h += ` <span class="badge warn">${s.held} held</span>`;
  h += `</h2><div class="sub">${esc(s ? s.data : "")} · head ${esc(s && s.head ? s.head.slice(0, 12) : "none yet")}${s && s.storeBytes != null ? " · store " + size(s.storeBytes) : ""}</div>`;
  if (a.statusError) h += `<p class="problem">${esc(a.statusError)}</p>`;

  h += "<h3>Peers</h3>";
  const peers = (s && s.peers) || [];
  h += peers.length ? `<table class="peers"><tr><th>peer</th><th>state</th><th class="hide-narrow">last sync</th><th>ahead / behind</th></tr>` + peers.map(p => {
    const st = p.paused ? '<span class="badge warn">paused</span>' : p.reachable === true ? '<span class="dot ok"></span>reachable' : p.reachable === false ? '<span class="dot bad"></span>not reachable' : '<span class="dot"></span>unknown';
    return `<tr data-peer="${esc(p.name)}"><td>${esc(p.name)}${p.via ? `<div class="sub">through ${esc(p.via)}</div>` : ""}</td><td>${st}${p.lastError ? `<div class="sub problem">${esc(p.lastError)}</div>` : ""}</td><td class="hide-narrow">${esc(p.lastSync || "never")}</td><td>${p.ahead ?? "-"} / ${p.behind ?? "-"}</td></tr>`;
  }).join("") + "</table>" : '<p class="empty">No peers configured.</p>';

  h += `<h3>Work in hand</h3><div class="tasks" id="tasks-${a.index}">${renderTasks(a)}</div>`;

  if (s && s.problems.length) h += "<h3>Problems</h3><ul class=\"plain\">" + s.problems.map(p => `<li class="problem">${esc(p)}</li>`).join("") + "</ul>";

  h += "<h3>Held changes</h3>";
  h += a.held.length ? `<ul class="plain held">` + a.held.map(e => `<li class="row"><span class="path">${esc(e.path)}</span> <span class="badge warn">${esc(e.reason)}</span> <button data-send="${esc(e.path)}" data-deletes="${e.reason === "mass-delete" ? 1 : ""}" data-agent="${a.index}">Send</button></li>`).join("") + "</ul>"
    : '<p class="empty">Nothing held back.</p>';

  h += "<h3>Conflicts</h3>";
  h += a.conflicts.length ? a.conflicts.map(c => renderConflict(a, c)).join("") : '<p class="empty">No open conflicts.</p>';

  h += `<h3>History</h3><form class="row history-form" data-agent="${a.index}"><input type="text" id="history-path-${a.index}" name="path" placeholder="a path in the data directory" aria-label="path"><button type="submit">Show history</button></form><div class="history" id="history-${a.index}"></div>`;

  h += "<h3>Events</h3>";
  h += a.events.length ? '<ul class="plain events">' + a.events.slice(0, 15).map(e => `<li><time>${esc(e.time.slice(11, 19))}</time>${esc(e.text)}</li>`).join("") + "</ul>" : '<p class="empty">No events yet.</p>';
  return h + "</section>";
}

function renderConflict(a, c) {
  const key = `${a.index}/${c.id}`;
  let h = `<div class="conflict" data-conflict="${esc(c.id)}" data-agent="${a.index}"><div class="head"><span class="path">${esc(c.path)}</span> <span class="badge">${esc(c.kind)}</span> <span class="sub">holding ${esc(c.current || "-")}'s version · ${esc(c.id)}</span> <button data-compare="${esc(c.id)}" data-agent="${a.index}" aria-expanded="${open.has(key)}">${open.has(key) ? "Hide" : "Compare"}</button></div>`;
  const d = details[key];
  if (open.has(key) && d) {
    const base = d.versions.find(v => v.name === "base");
    h += '<div class="versions">' + d.versions.map(v => renderVersion(a, c, v, base)).join("") + "</div>";
    const devices = d.versions.filter(v => v.name !== "base");
    h += '<div class="actions">' + devices.map(v => `<button class="primary" data-keep="${esc(v.name)}" data-id="${esc(c.id)}" data-agent="${a.index}">Keep ${esc(v.name)}'s</button>`).join("")
      + `<button data-keep="both" data-id="${esc(c.id)}" data-agent="${a.index}">Keep both</button></div>`;
    const editable = devices.find(v => v.current && (v.kind === "text" || v.kind === "json")) || devices.find(v => v.kind === "text" || v.kind === "json");
    if (editable) h += `<details id="edit-${a.index}-${esc(c.id)}"><summary>Edit a merge</summary><textarea id="merge-${a.index}-${esc(c.id)}" aria-label="the merged text">${esc(editable.text)}</textarea><div class="actions"><button data-save="${esc(c.id)}" data-agent="${a.index}">Save this merge</button></div></details>`;
  }
  return h + "</div>";
}

function renderVersion(a, c, v, base) {
  let h = `<div class="version${v.current ? " current" : ""}" data-version="${esc(v.name)}"><h4><span>${esc(v.name === "base" ? "common base" : v.name)}${v.current ? " (on disk)" : ""}</span><span class="sub">${esc(v.time ? v.time.slice(0, 19).replace("T", " ") : "")}</span></h4>`;
  if (v.kind === "deleted") h += '<p class="empty">deleted</p>';
  else if (v.kind === "directory") h += '<p class="empty">a directory</p>';
  else if (v.kind === "image") h += `<img alt="${esc(v.name)}'s version" src="/api/version?agent=${a.index}&id=${encodeURIComponent(c.id)}&version=${encodeURIComponent(v.name)}"><div class="sub">${size(v.size)} · ${esc((v.blob || "").slice(0, 12))}</div>`;
  else if (v.kind === "binary") h += `<p>${size(v.size)}</p><div class="sub">blob ${esc(v.blob || "")}</div>`;
  else if (v.kind === "json" && base && base.kind === "json" && v.name !== "base") h += jsonKeys(base.text, v.text);
  else if (v.name !== "base" && base && (base.kind === "text" || base.kind === "json")) h += "<pre>" + diff(base.text, v.text) + "</pre>";
  else h += "<pre>" + esc(v.text) + "</pre>";
  return h + "</div>";
}

// A line diff against the base (longest common subsequence; big files shown whole).
function diff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  if (x.length * y.length > 4e6) return esc(b);
  const n = x.length, m = y.length, L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  let i = 0, j = 0, out = [];
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { out.push(esc(x[i])); i++; j++; }
    else if (j < m && (i >= n || L[i][j + 1] >= L[i + 1][j])) { out.push(`<span class="add">${esc(y[j]) || " "}</span>`); j++; }
    else { out.push(`<span class="del">${esc(x[i]) || " "}</span>`); i++; }
  }
  return out.join("\n");
}

// Key by key: each top-level key's value here, marked where it differs from the base.
function jsonKeys(baseText, text) {
  let b, v;
  try { b = JSON.parse(baseText); v = JSON.parse(text); } catch { return "<pre>" + esc(text) + "</pre>"; }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "<pre>" + esc(text) + "</pre>";
  const keys = [...new Set([...Object.keys(b || {}), ...Object.keys(v)])].sort();
  return '<table class="keys">' + keys.map(k => {
    const was = JSON.stringify((b || {})[k]), now = JSON.stringify(v[k]);
    return `<tr><th>${esc(k)}</th><td class="${was !== now ? "diff" : ""}">${now === undefined ? '<span class="del">removed</span>' : esc(now)}</td></tr>`;
  }).join("") + "</table>";
}

document.addEventListener("click", async (ev) => {
  const b = ev.target.closest("button"); if (!b) return;
  const agent = Number(b.dataset.agent);
  try {
    if (b.dataset.compare) {
      const key = `${agent}/${b.dataset.compare}`;
      if (open.has(key)) open.delete(key); else { open.add(key); details[key] = await api(`/api/conflict?agent=${agent}&id=${encodeURIComponent(b.dataset.compare)}`); }
      render();
    } else if (b.dataset.keep) {
      b.disabled = true;
      const r = await api("/api/resolve", { agent, id: b.dataset.id, keep: b.dataset.keep });
      if (r[0] && r[0].error) throw new Error(r[0].error);
      open.delete(`${agent}/${b.dataset.id}`); toast(`resolved ${b.dataset.id}: kept ${b.dataset.keep}`); refresh();
    } else if (b.dataset.save) {
      const text = $(`#merge-${agent}-${CSS.escape(b.dataset.save)}`).value;
      const r = await api("/api/resolve", { agent, id: b.dataset.save, content: text });
      if (r[0] && r[0].error) throw new Error(r[0].error);
      open.delete(`${agent}/${b.dataset.save}`); toast(`resolved ${b.dataset.save} with your merge`); refresh();
    } else if (b.dataset.send) {
      const r = await api("/api/send", b.dataset.deletes ? { agent, deletes: true } : { agent, path: b.dataset.send });
      if (r.error) throw new Error(r.error); toast(r.message); refresh();
    } else if (b.dataset.restore) {
      const r = await api("/api/restore", { agent, path: b.dataset.path, at: b.dataset.restore });
      if (r.error) throw new Error(r.error); toast(r.message); refresh();
    }
  } catch (e) { b.disabled = false; toast(e.message); }
});

document.addEventListener("submit", async (ev) => {
  const f = ev.target.closest("form.history-form"); if (!f) return;
  ev.preventDefault();
  const agent = Number(f.dataset.agent), path = f.path.value.trim(); if (!path) return;
  const box = $(`#history-${agent}`);
  try {
    const h = await api(`/api/history?agent=${agent}&path=${encodeURIComponent(path)}`);
    box.innerHTML = h.length ? '<table>' + h.map(e => `<tr><td>${esc(e.time.slice(0, 19).replace("T", " "))}</td><td>${esc(e.device)}</td><td>${esc(e.change)}</td><td><button data-restore="${esc(e.commit)}" data-path="${esc(path)}" data-agent="${agent}">Restore</button></td></tr>`).join("") + "</table>"
      : `<p class="empty">No history for ${esc(path)}.</p>`;
  } catch (e) { box.innerHTML = `<p class="problem">${esc(e.message)}</p>`; }
});

function connect() {
  const ws = new WebSocket(`ws://${location.host}/live`);
  ws.onopen = () => { $("#live").textContent = "live"; $("#live").className = "on"; };
  ws.onclose = () => { $("#live").textContent = "reconnecting"; $("#live").className = ""; setTimeout(connect, 2000); };
  ws.onmessage = (m) => {
    const { agent, event } = JSON.parse(m.data);
    if (event.type === "progress") {
      const t = { task: event.task, peer: event.peer, done: event.done, total: event.total, bytes: event.bytes, rate: event.rate, secondsLeft: event.secondsLeft };
      (live[agent] ||= {})[title(t)] = t;
      if (t.total != null && t.done >= t.total) setTimeout(() => { delete live[agent][title(t)]; soon(); }, 3000);
      const a = state.find(x => x.index === agent), box = $(`#tasks-${agent}`);
      if (a && box) box.innerHTML = renderTasks(a);
    } else soon();
  };
}
refresh(); connect(); setInterval(refresh, 5000);
</script>
</body>
</html>
"""#
}
