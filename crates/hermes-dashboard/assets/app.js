// The Hermes dashboard: one page, no framework. Every value from the server is put into the
// page as text (textContent), never as HTML. Pages are picked by the address's #/fragment.
"use strict";

const $ = (sel, root) => (root || document).querySelector(sel);
const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));

// el("div", {class: "x", onclick: f}, "text", child, ...)
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "value") node.value = v;
    else if (k === "checked") node.checked = !!v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children.flat()) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

class ApiError extends Error {
  constructor(status, detail) { super(detail); this.status = status; }
}

async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (_) { data = null; }
  if (!res.ok) {
    if (res.status === 401 && path !== "/api/auth/login") showLogin();
    const err = new ApiError(res.status, (data && data.detail) || res.statusText);
    err.data = data;
    throw err;
  }
  return data;
}

function toast(text, bad) {
  const t = $("#toast");
  t.textContent = text;
  t.className = bad ? "bad" : "";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 5000);
}

const fmtInt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const fmtCost = (n) => "$" + Number(n || 0).toFixed(4);
function fmtTime(ts) {
  if (!ts) return "–";
  const d = typeof ts === "number" ? new Date(ts * 1000) : new Date(ts);
  return isNaN(d) ? String(ts) : d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

// A snippet with >>>hits<<< shown as <mark> elements, built from text nodes.
function snippet(text) {
  const out = el("span", { class: "snippet" });
  const parts = String(text || "").split(/(>>>|<<<)/);
  let marking = false;
  for (const p of parts) {
    if (p === ">>>") { marking = true; continue; }
    if (p === "<<<") { marking = false; continue; }
    out.append(marking ? el("mark", {}, p) : document.createTextNode(p));
  }
  return out;
}

function setMain(...children) {
  const main = $("#main");
  main.replaceChildren(...children);
}

function showLogin() {
  if ($("#login-form")) return;
  const input = el("input", { type: "text", id: "login-token", placeholder: "token", autocomplete: "off" });
  const msg = el("p", { class: "error", id: "login-error" });
  const form = el("form", { id: "login-form", class: "panel login", onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api("POST", "/api/auth/login", { token: input.value.trim() });
      route();
    } catch (err) { msg.textContent = err.message; }
  } },
    el("h1", {}, "Log in"),
    el("p", { class: "muted" }, "Open the link `hermes dashboard` printed, or paste its token here."),
    el("div", { class: "row" }, input, el("button", { class: "primary", type: "submit" }, "Log in")),
    msg);
  setMain(form);
}

// ---------------------------------------------------------------- sessions

async function pageSessions(params) {
  const search = el("input", { type: "search", id: "session-search", placeholder: "Search every message…", value: params.get("q") || "" });
  const results = el("ul", { class: "list", id: "session-results" });
  const detail = el("div", { id: "session-detail", class: "panel" }, el("p", { class: "muted" }, "Pick a session."));
  const form = el("form", { class: "row", onsubmit: (e) => { e.preventDefault(); runSearch(); } },
    search, el("button", { class: "primary", type: "submit", id: "session-search-button" }, "Search"));
  setMain(el("h1", {}, "Sessions"), el("div", { class: "split" },
    el("div", { class: "panel" }, form, results), detail));

  async function runSearch() {
    const q = search.value.trim();
    results.replaceChildren(el("li", { class: "muted" }, "Searching…"));
    try {
      if (!q) return listRecent();
      const data = await api("GET", "/api/sessions/search?q=" + encodeURIComponent(q));
      results.replaceChildren();
      if (!data.results.length) results.append(el("li", { class: "muted", id: "no-results" }, "No session mentions that."));
      for (const r of data.results) {
        results.append(el("li", { class: "session-item", dataset: { id: r.session_id }, onclick: () => openSession(r.session_id) },
          el("div", { class: "title" }, r.title || r.session_id),
          snippet(r.snippet),
          el("div", { class: "snippet" }, [r.source, r.model, fmtTime(r.session_started)].filter(Boolean).join(" · "))));
      }
    } catch (err) { results.replaceChildren(el("li", { class: "error" }, err.message)); }
  }

  async function listRecent(offset) {
    const data = await api("GET", "/api/sessions?limit=100&offset=" + (offset || 0));
    if (!offset) results.replaceChildren();
    $$("#sessions-more", results).forEach((b) => b.remove());
    if (!data.sessions.length && !offset) results.append(el("li", { class: "muted" }, "No sessions yet."));
    for (const s of data.sessions) {
      results.append(el("li", { class: "session-item", dataset: { id: s.id }, onclick: () => openSession(s.id) },
        el("div", { class: "title" }, s.title || s.preview || s.id),
        el("div", { class: "snippet" }, [s.source, s.model, fmtTime(s.last_active), s.message_count + " messages"].filter(Boolean).join(" · "))));
    }
    const shown = (offset || 0) + data.sessions.length;
    if (shown < data.total) {
      results.append(el("li", { id: "sessions-more" }, el("button", { onclick: () => listRecent(shown) },
        "More (" + (data.total - shown) + " older)")));
    }
  }

  async function openSession(id) {
    $$(".session-item").forEach((li) => li.classList.toggle("selected", li.dataset.id === id));
    detail.replaceChildren(el("p", { class: "muted" }, "Loading…"));
    try {
      const [s, m] = await Promise.all([
        api("GET", "/api/sessions/" + encodeURIComponent(id)),
        api("GET", "/api/sessions/" + encodeURIComponent(id) + "/messages"),
      ]);
      const del = el("button", { class: "danger", id: "session-delete", onclick: async () => {
        if (!confirm("Delete this session and its messages?")) return;
        try {
          await api("DELETE", "/api/sessions/" + encodeURIComponent(s.id));
          toast("Session deleted.");
          detail.replaceChildren(el("p", { class: "muted" }, "Deleted."));
          runSearch();
        } catch (err) { toast(err.message, true); }
      } }, "Delete");
      const messages = m.messages.map((msg) => el("div", { class: "message role-" + msg.role },
        el("div", { class: "role" }, msg.role + (msg.tool_name ? " · " + msg.tool_name : "")),
        msg.content ? el("div", { class: "body" }, msg.content) : null,
        ...(msg.tool_calls || []).map((c) => el("pre", {}, c.name + "(" + c.arguments + ")"))));
      detail.replaceChildren(
        el("h2", { id: "session-title" }, s.title || s.id),
        el("p", { class: "muted" }, [s.source, s.model, "started " + fmtTime(s.started_at), fmtInt(s.input_tokens) + " in / " + fmtInt(s.output_tokens) + " out tokens", s.estimated_cost_usd != null ? fmtCost(s.estimated_cost_usd) : null].filter(Boolean).join(" · ")),
        el("div", { class: "row" }, el("span", { class: "muted" }, "Resume:"), el("code", { class: "resume", id: "resume-command" }, s.resume_command), del),
        el("div", { id: "session-messages" }, messages.length ? messages : el("p", { class: "muted" }, "No messages.")));
    } catch (err) { detail.replaceChildren(el("p", { class: "error" }, err.message)); }
  }

  await runSearch();
  if (params.get("id")) openSession(params.get("id"));
}

// ---------------------------------------------------------------- usage

function barChart(id, days, series, height) {
  const W = 900, H = height || 220, padL = 56, padB = 28, padT = 10;
  // The scale's floor: 1 token, or one cent for costs.
  const max = Math.max(series[0].floor || 1, ...days.map((d) => series.reduce((a, s) => a + (Number(d[s.key]) || 0), 0)));
  const n = Math.max(days.length, 1);
  const slot = (W - padL - 10) / n;
  const bw = Math.max(2, Math.min(38, slot * 0.7));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id });
  for (let i = 0; i <= 4; i++) {
    const y = padT + (H - padT - padB) * (1 - i / 4);
    root.append(svg("line", { class: "axis", x1: padL, x2: W - 10, y1: y, y2: y }));
    const v = (max * i) / 4;
    root.append(svg("text", { x: padL - 6, y: y + 3, "text-anchor": "end" }, series[0].fmt(v)));
  }
  days.forEach((d, i) => {
    let base = H - padB;
    const x = padL + slot * i + (slot - bw) / 2;
    for (const s of series) {
      const v = Number(d[s.key]) || 0;
      const h = ((H - padT - padB) * v) / max;
      base -= h;
      const rect = svg("rect", { class: s.cls, x, y: base, width: bw, height: Math.max(h, 0) });
      rect.append(svg("title", {}, `${d.day} ${s.label}: ${s.fmt(v)}`));
      root.append(rect);
    }
    if (days.length <= 16 || i % Math.ceil(days.length / 16) === 0) {
      root.append(svg("text", { x: x + bw / 2, y: H - 10, "text-anchor": "middle" }, d.day.slice(5)));
    }
  });
  return root;
}

async function pageUsage(params) {
  const days = Number(params.get("days")) || 30;
  const data = await api("GET", "/api/analytics/usage?days=" + days);
  const t = data.totals;
  const stat = (label, value, id) => el("div", { class: "stat", id }, el("div", { class: "muted" }, label), el("div", { class: "n" }, value));
  const select = el("select", { id: "usage-days", onchange: () => { location.hash = "#/usage?days=" + select.value; } },
    ...[7, 30, 90, 365].map((d) => el("option", { value: d, selected: d === days }, "last " + d + " days")));
  const intFmt = (v) => (v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : Math.round(v));
  const costFmt = (v) => "$" + (v >= 1 ? v.toFixed(2) : v.toFixed(4));
  const tokens = el("div", { class: "panel chart", id: "usage-tokens" }, el("h2", {}, "Tokens per day (input, output)"),
    data.daily.length ? barChart("usage-tokens-chart", data.daily, [
      { key: "input_tokens", cls: "bar-in", label: "input", fmt: intFmt },
      { key: "output_tokens", cls: "bar-out", label: "output", fmt: intFmt },
    ]) : el("p", { class: "muted" }, "No sessions in this period."));
  const cost = el("div", { class: "panel chart", id: "usage-cost" }, el("h2", {}, "Estimated cost per day"),
    data.daily.length ? barChart("usage-cost-chart", data.daily, [{ key: "estimated_cost", cls: "bar-cost", label: "cost", fmt: costFmt, floor: 0.01 }], 180)
      : el("p", { class: "muted" }, "No sessions in this period."));
  const models = el("table", { id: "usage-models" }, el("tr", {}, ...["Model", "Sessions", "API calls", "Input", "Output", "Cost"].map((h) => el("th", {}, h))),
    ...data.by_model.map((m) => el("tr", {}, el("td", {}, m.model), el("td", {}, fmtInt(m.sessions)), el("td", {}, fmtInt(m.api_calls)),
      el("td", {}, fmtInt(m.input_tokens)), el("td", {}, fmtInt(m.output_tokens)), el("td", {}, fmtCost(m.estimated_cost)))));
  setMain(el("div", { class: "row" }, el("h1", {}, "Usage & cost"), select),
    el("div", { class: "cards" },
      stat("Sessions", fmtInt(t.total_sessions), "usage-sessions"),
      stat("API calls", fmtInt(t.total_api_calls)),
      stat("Input tokens", fmtInt(t.total_input), "usage-input"),
      stat("Output tokens", fmtInt(t.total_output), "usage-output"),
      stat("Estimated cost", fmtCost(t.total_estimated_cost), "usage-cost-total")),
    tokens, cost, el("div", { class: "panel" }, el("h2", {}, "By model"), models));
}

// ---------------------------------------------------------------- kanban

async function pageKanban(params) {
  const board = await api("GET", "/api/kanban/board");
  const detail = el("div", { id: "task-detail" });
  const grid = el("div", { class: "board", id: "kanban-board" });
  for (const col of board.columns) {
    const column = el("section", { class: "kanban-column", dataset: { status: col.name }, id: "column-" + col.name },
      el("h3", {}, el("span", {}, col.name), el("span", {}, String(col.tasks.length))));
    for (const t of col.tasks) {
      const card = el("article", { class: "kanban-card", dataset: { id: t.id, status: t.status }, id: "card-" + t.id },
        el("div", {}, t.title),
        el("div", { class: "meta" }, [t.id, t.assignee ? "@" + t.assignee : null, t.priority ? "p" + t.priority : null,
          t.comment_count ? t.comment_count + " comments" : null].filter(Boolean).join(" · ")));
      enableDrag(card);
      column.append(card);
    }
    grid.append(column);
  }
  setMain(el("h1", {}, "Kanban"), el("p", { class: "muted" }, "Drag a card to another column to move it; click it for its events and comments."), grid, detail);
  if (params.get("task")) openTask(params.get("task"));

  function columnAt(x, y) {
    const hit = document.elementFromPoint(x, y);
    return hit ? hit.closest(".kanban-column") : null;
  }

  // Pointer events (mouse, pen, touch, and the DevTools protocol's mouse input alike).
  function enableDrag(card) {
    card.addEventListener("pointerdown", (down) => {
      if (down.button !== 0) return;
      down.preventDefault();
      const rect = card.getBoundingClientRect();
      const dx = down.clientX - rect.left, dy = down.clientY - rect.top;
      let moved = false, over = null;
      const move = (e) => {
        if (!moved && Math.hypot(e.clientX - down.clientX, e.clientY - down.clientY) < 5) return;
        if (!moved) {
          moved = true;
          card.style.width = rect.width + "px";
          card.classList.add("dragging");
        }
        card.style.left = e.clientX - dx + "px";
        card.style.top = e.clientY - dy + "px";
        const col = columnAt(e.clientX, e.clientY);
        if (col !== over) {
          if (over) over.classList.remove("drop-target");
          over = col;
          if (over) over.classList.add("drop-target");
        }
      };
      const up = async (e) => {
        document.removeEventListener("pointermove", move);
        document.removeEventListener("pointerup", up);
        document.removeEventListener("pointercancel", up);
        if (over) over.classList.remove("drop-target");
        if (!moved) { openTask(card.dataset.id); return; }
        card.classList.remove("dragging");
        card.style.left = card.style.top = card.style.width = "";
        const target = columnAt(e.clientX, e.clientY);
        if (!target || target.dataset.status === card.dataset.status) return;
        try {
          await api("PATCH", "/api/kanban/tasks/" + encodeURIComponent(card.dataset.id), { status: target.dataset.status });
          toast("Moved " + card.dataset.id + " to " + target.dataset.status + ".");
        } catch (err) { toast(err.message, true); }
        route();
      };
      document.addEventListener("pointermove", move);
      document.addEventListener("pointerup", up);
      document.addEventListener("pointercancel", up);
    });
  }

  async function openTask(id) {
    detail.replaceChildren(el("div", { class: "panel" }, el("p", { class: "muted" }, "Loading…")));
    try {
      const d = await api("GET", "/api/kanban/tasks/" + encodeURIComponent(id));
      const t = d.task;
      const body = el("textarea", { id: "comment-body", rows: 2, placeholder: "Add a comment…" });
      const commentForm = el("form", { class: "row", onsubmit: async (e) => {
        e.preventDefault();
        if (!body.value.trim()) return;
        try {
          await api("POST", "/api/kanban/tasks/" + encodeURIComponent(t.id) + "/comments", { body: body.value });
          openTask(t.id);
        } catch (err) { toast(err.message, true); }
      } }, body, el("button", { class: "primary", type: "submit" }, "Comment"));
      detail.replaceChildren(el("div", { class: "panel", id: "task-panel" },
        el("h2", {}, t.title + " "), el("p", {}, el("span", { class: "badge", id: "task-status" }, t.status), " ", el("code", {}, t.id),
          t.assignee ? " · assigned to " + t.assignee : ""),
        t.body ? el("pre", {}, t.body) : null,
        t.result ? el("div", {}, el("h2", {}, "Result"), el("pre", {}, t.result)) : null,
        el("p", { class: "muted" }, "Parents: " + (d.links.parents.join(", ") || "none") + " · Children: " + (d.links.children.join(", ") || "none")),
        el("h2", {}, "Events"),
        el("table", { id: "task-events" }, ...d.events.map((ev) => el("tr", {}, el("td", {}, fmtTime(ev.created_at)), el("td", {}, ev.kind),
          el("td", {}, ev.payload ? JSON.stringify(ev.payload) : "")))),
        el("h2", {}, "Comments"),
        el("div", { id: "task-comments" }, d.comments.length ? d.comments.map((c) => el("div", { class: "message" },
          el("div", { class: "role" }, c.author + " · " + fmtTime(c.created_at)), el("div", { class: "body" }, c.body))) : el("p", { class: "muted" }, "No comments.")),
        commentForm));
    } catch (err) { detail.replaceChildren(el("p", { class: "error" }, err.message)); }
  }
}

// ---------------------------------------------------------------- skills

async function pageSkills() {
  const skills = await api("GET", "/api/skills");
  const view = el("div", { id: "skill-view" });
  const table = el("table", { id: "skills-table" }, el("tr", {}, ...["Enabled", "Name", "Category", "Origin", "Description", ""].map((h) => el("th", {}, h))));
  for (const s of skills) {
    const box = el("input", { type: "checkbox", class: "skill-toggle", dataset: { name: s.name }, checked: s.enabled, onchange: async () => {
      try {
        await api("PUT", "/api/skills/toggle", { name: s.name, enabled: box.checked });
        toast((box.checked ? "Enabled " : "Disabled ") + s.name + " (skills.disabled in config.yaml).");
      } catch (err) { box.checked = !box.checked; toast(err.message, true); }
    } });
    table.append(el("tr", { dataset: { name: s.name } }, el("td", {}, box), el("td", {}, s.name), el("td", {}, s.category || "–"),
      el("td", {}, s.provenance || "–"), el("td", {}, s.description || ""),
      el("td", {}, el("button", { onclick: async () => {
        try {
          const c = await api("GET", "/api/skills/content?name=" + encodeURIComponent(s.name));
          view.replaceChildren(el("div", { class: "panel" }, el("h2", {}, c.name), el("p", { class: "muted" }, c.path), el("pre", {}, c.content),
            c.files.length ? el("p", { class: "muted" }, "Files: " + c.files.join(", ")) : null));
        } catch (err) { toast(err.message, true); }
      } }, "View"))));
  }
  const ident = el("input", { type: "text", id: "hub-identifier", placeholder: "owner/repo/path, a git URL, a folder or an index name" });
  const out = el("pre", { id: "hub-output", hidden: true });
  const install = el("form", { class: "row", onsubmit: async (e) => {
    e.preventDefault();
    out.hidden = false;
    out.textContent = "Installing… (fetch, scan, install)";
    try {
      const r = await api("POST", "/api/skills/hub/install", { identifier: ident.value.trim() });
      out.textContent = (r.ok ? "Installed.\n" : "Not installed (exit " + r.exit_code + ").\n") + r.output;
      if (r.ok) setTimeout(route, 800);
    } catch (err) { out.textContent = err.message; }
  } }, ident, el("button", { class: "primary", type: "submit" }, "Install from hub"));
  setMain(el("h1", {}, "Skills"), el("div", { class: "panel" }, install, out),
    el("div", { class: "panel" }, skills.length ? table : el("p", { class: "muted" }, "No skills yet.")), view);
}

// ---------------------------------------------------------------- cron

async function pageCron() {
  const jobs = await api("GET", "/api/cron/jobs");
  const errorLine = el("p", { class: "error", id: "cron-error", role: "alert" });
  const output = el("div", { id: "cron-output" });
  const name = el("input", { type: "text", id: "cron-name", placeholder: "name" });
  const schedule = el("input", { type: "text", id: "cron-schedule", placeholder: "every 1h · 0 9 * * * · 30m · 2026-12-24T09:00" });
  const prompt = el("textarea", { id: "cron-prompt", rows: 3, placeholder: "What the agent should do each time" });
  const create = el("form", { onsubmit: async (e) => {
    e.preventDefault();
    errorLine.textContent = "";
    try {
      await api("POST", "/api/cron/jobs", { name: name.value, schedule: schedule.value, prompt: prompt.value });
      toast("Job created.");
      route();
    } catch (err) { errorLine.textContent = err.message; }
  } }, el("div", { class: "row" }, name, schedule), prompt, el("div", { class: "row" }, el("button", { class: "primary", type: "submit", id: "cron-create" }, "Create job")), errorLine);
  const act = (job, verb) => async () => {
    try {
      await api("POST", "/api/cron/jobs/" + encodeURIComponent(job.id) + "/" + verb);
      toast({ pause: "Paused ", resume: "Resumed ", trigger: "Started " }[verb] + (job.name || job.id) + ".");
      route();
    } catch (err) { toast(err.message, true); }
  };
  const table = el("table", { id: "cron-table" }, el("tr", {}, ...["Name", "Schedule", "State", "Next run", "Last run", ""].map((h) => el("th", {}, h))));
  for (const j of jobs) {
    const paused = j.state === "paused";
    table.append(el("tr", { class: "cron-row", dataset: { id: j.id, state: j.state } },
      el("td", {}, j.name || j.id, el("div", { class: "snippet" }, j.id)),
      el("td", {}, j.schedule_display || ""),
      el("td", {}, el("span", { class: "badge " + (paused ? "warn" : "good"), dataset: { role: "state" } }, j.state)),
      el("td", {}, fmtTime(j.next_run_at)),
      el("td", {}, j.last_run_at ? fmtTime(j.last_run_at) + " · " + (j.last_status || "") : "never"),
      el("td", {}, el("div", { class: "row" },
        paused ? el("button", { class: "cron-resume", onclick: act(j, "resume") }, "Resume") : el("button", { class: "cron-pause", onclick: act(j, "pause") }, "Pause"),
        el("button", { class: "cron-run", onclick: act(j, "trigger") }, "Run now"),
        el("button", { onclick: () => output.replaceChildren(el("div", { class: "panel" }, el("h2", {}, "Last output of " + (j.name || j.id)),
          j.last_output ? el("pre", {}, j.last_output.text) : el("p", { class: "muted" }, "No output saved yet."))) }, "Output")))));
  }
  setMain(el("h1", {}, "Cron jobs"), el("div", { class: "panel" }, el("h2", {}, "New job"), create),
    el("div", { class: "panel" }, jobs.length ? table : el("p", { class: "muted" }, "No jobs yet.")), output);
}

// ---------------------------------------------------------------- memory

async function pageMemory() {
  const data = await api("GET", "/api/memory");
  const panels = data.files.map((f) => {
    const area = el("textarea", { id: "memory-" + f.target, rows: 12, value: f.content });
    const status = el("p", { class: "muted", id: "memory-status-" + f.target }, `${f.entries} entries · ${fmtInt(f.used)}/${fmtInt(f.limit)} chars · ${f.path}`);
    const save = el("button", { class: "primary", id: "memory-save-" + f.target, onclick: async () => {
      try {
        const r = await api("PUT", "/api/memory", { target: f.target, content: area.value });
        status.className = "ok";
        status.textContent = `Saved · ${r.file.entries} entries · ${fmtInt(r.file.used)}/${fmtInt(r.file.limit)} chars`;
      } catch (err) { status.className = "error"; status.textContent = err.message; }
    } }, "Save " + f.file);
    return el("div", { class: "panel" }, el("h2", {}, f.file), el("p", { class: "muted" }, "Entries are separated by a line holding only §."), area, el("div", { class: "row" }, save), status);
  });
  setMain(el("h1", {}, "Memory"), data.enabled ? null : el("p", { class: "error" }, "Memory is switched off in config.yaml."), ...panels);
}

// ---------------------------------------------------------------- config

async function pageConfig() {
  const data = await api("GET", "/api/config/raw");
  const area = el("textarea", { id: "config-text", rows: 28, spellcheck: "false", value: data.yaml });
  const errorLine = el("div", { class: "error", id: "config-error", role: "alert" });
  const status = el("p", { class: "muted", id: "config-status" }, data.path);
  const save = el("button", { class: "primary", id: "config-save", onclick: async () => {
    errorLine.textContent = "";
    status.className = "muted";
    status.textContent = "Checking…";
    try {
      await api("PUT", "/api/config/raw", { yaml_text: area.value });
      status.className = "ok";
      status.textContent = "Saved " + data.path + ". New sessions use it.";
    } catch (err) {
      status.className = "muted";
      status.textContent = "Not saved: the file is unchanged.";
      errorLine.textContent = err.message + (err.data && err.data.key ? "\n(key: " + err.data.key + ")" : "");
    }
  } }, "Check & save");
  setMain(el("h1", {}, "Config"), el("div", { class: "panel" }, el("p", { class: "muted" }, "config.yaml is checked by Hermes's own loader before it is written."), area, el("div", { class: "row" }, save), errorLine, status));
}

// ---------------------------------------------------------------- MCP and platforms

async function pageMcp() {
  const data = await api("GET", "/api/mcp/servers");
  const table = el("table", { id: "mcp-table" }, el("tr", {}, ...["Name", "Transport", "Enabled", "Toolset", "Timeout"].map((h) => el("th", {}, h))),
    ...data.servers.map((s) => el("tr", {}, el("td", {}, s.name), el("td", {}, el("code", {}, s.transport)),
      el("td", {}, el("span", { class: "badge " + (s.enabled ? "good" : "warn") }, s.enabled ? "enabled" : "disabled")), el("td", {}, s.toolset), el("td", {}, s.timeout + " s"))));
  setMain(el("h1", {}, "MCP servers"), el("div", { class: "panel" }, data.servers.length ? table : el("p", { class: "muted" }, "No MCP servers in config.yaml (mcp_servers)."),
    ...data.warnings.map((w) => el("p", { class: "error" }, w))), el("p", { class: "muted" }, "`hermes mcp list` connects to each and lists its tools."));
}

async function pagePlatforms() {
  const [data, status] = await Promise.all([api("GET", "/api/messaging/platforms"), api("GET", "/api/status")]);
  const table = el("table", { id: "platforms-table" }, el("tr", {}, ...["Platform", "State", "Received", "Sent", "Reconnects", "Problem"].map((h) => el("th", {}, h))),
    ...data.platforms.map((p) => el("tr", {}, el("td", {}, p.name),
      el("td", {}, el("span", { class: "badge " + (p.error ? "bad" : p.state === "connected" || p.state === "running" ? "good" : "") }, p.state)),
      el("td", {}, fmtInt(p.received)), el("td", {}, fmtInt(p.sent)), el("td", {}, fmtInt(p.reconnects)),
      el("td", {}, p.error || (p.last_error && p.last_error.error) || ""))));
  setMain(el("h1", {}, "Platforms"),
    el("div", { class: "panel", id: "gateway-state" }, el("p", {}, "Gateway: ", el("span", { class: "badge " + (status.gateway_running ? "good" : "warn") }, status.gateway_state),
      status.gateway_pid ? " (pid " + status.gateway_pid + ")" : " — `hermes gateway` starts it", status.api_server ? " · API server " + status.api_server : "")),
    el("div", { class: "panel" }, data.platforms.length ? table : el("p", { class: "muted" }, "No chat platform is enabled in config.yaml."),
      ...data.warnings.map((w) => el("p", { class: "muted" }, w))));
}

// ---------------------------------------------------------------- routing

const PAGES = { sessions: pageSessions, usage: pageUsage, kanban: pageKanban, skills: pageSkills, cron: pageCron,
  memory: pageMemory, config: pageConfig, mcp: pageMcp, platforms: pagePlatforms };

async function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name, query] = hash.split("?");
  const page = PAGES[name] ? name : "sessions";
  $$("#nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === page));
  document.body.dataset.page = page;
  delete document.body.dataset.ready;
  try {
    await PAGES[page](new URLSearchParams(query || ""));
    document.body.dataset.ready = page;
  } catch (err) {
    if (err.status !== 401) setMain(el("h1", {}, page), el("p", { class: "error" }, err.message));
  }
}

async function statusLine() {
  try {
    const s = await api("GET", "/api/status");
    $("#status-line").textContent = "v" + s.version + " · gateway " + s.gateway_state + " · " + s.home;
  } catch (_) { /* the login form is shown by api() */ }
}

window.addEventListener("hashchange", route);
statusLine().then(route);
