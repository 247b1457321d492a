// Leasehold's live page: polls /api/locks, /api/events, /api/cluster and
// /api/charts every second and renders them; between polls the lease
// countdowns (and hold and wait times) move on the browser's own monotonic
// clock. Lock names, owners and details are user input: they reach the DOM
// only through textContent and attributes, never as HTML. Each lock's
// health is the server's verdict (diagnose's classifier), not judged here.
"use strict";

const REFRESH_MS = 1000;
const TICK_MS = 250;
const FETCH_TIMEOUT_MS = 5000;
const EVENTS_SHOWN = 50;
const SKEW_SHOWN_MS = 2000;
// SVG's namespace, read from an <svg> the HTML parser made (the page names
// no URL at all, not even a namespace's).
const SVG = document.getElementById("svg-namespace").namespaceURI;
const CHART_WIDTH = 240;
const CHART_HEIGHT = 60;

// The browser's time zone, shown with every time ("Europe/Paris, UTC+01:00").
const ZONE = zoneName();

const prefix = new URLSearchParams(location.search).get("prefix") || "";
document.getElementById("prefix").value = prefix;

// Cells whose text moves between polls: {cell, baseMs, sign, ttlMs}.
let moving = [];
// performance.now() when the shown locks arrived.
let receivedAt = performance.now();
// Date.now() of the first failed poll since the last good one, or null.
let unreachableSince = null;
let lastError = "";
// The last events reply, re-rendered when the kind filter changes.
let lastEvents = null;

function cell(className, text) {
  const td = document.createElement("td");
  td.className = className;
  td.textContent = text;
  return td;
}

function duration(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s} s`;
  const pad = (n) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)} m ${pad(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${pad(Math.floor(s / 60) % 60)} m`;
}

function clock(unixMs) {
  const t = new Date(unixMs);
  const pad = (n, w) => String(n).padStart(w || 2, "0");
  return `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)}`;
}

function zoneName() {
  const offset = -new Date().getTimezoneOffset();
  const pad = (n) => String(n).padStart(2, "0");
  const hours = `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone || "local time";
  return offset === 0 && name === "UTC" ? "UTC" : `${name}, UTC${hours}`;
}

// The fraction of its ttl a lease has left, as the legend names it.
function freshness(remainingMs, ttlMs) {
  if (!(ttlMs > 0)) return "";
  const left = remainingMs / ttlMs;
  if (left >= 2 / 3) return "fresh";
  return left >= 1 / 3 ? "late" : "low";
}

function ownerName(owner) {
  return owner ? owner.owner : "";
}

function ownerWhere(owner) {
  if (!owner) return "";
  return owner.pid ? `${owner.host}:${owner.pid}` : owner.host;
}

async function getJson(path) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), FETCH_TIMEOUT_MS);
  try {
    const response = await fetch(path, { cache: "no-store", signal: abort.signal });
    if (!response.ok) {
      const text = (await response.text()).trim().slice(0, 200);
      throw new Error(`${path}: HTTP ${response.status}: ${text}`);
    }
    return await response.json();
  } catch (error) {
    if (error.name === "AbortError") throw new Error(`${path}: no answer in ${FETCH_TIMEOUT_MS / 1000} s`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

// The verdict in the cell; the evidence and what to do in its tooltip (the
// advice is a sentence: in the table it would crush the names beside it).
function healthCell(lock) {
  const health = lock.health || { verdict: "", findings: [], evidence: [], advice: "" };
  const td = cell("health", health.verdict);
  td.dataset.verdict = health.verdict;
  const lines = [`findings: ${health.findings.join(", ")}`, ...health.evidence];
  if (health.advice) lines.push(`what to do: ${health.advice}`);
  td.title = lines.join("\n");
  return td;
}

function queueCell(lock, serverNowMs) {
  const td = cell("queue", "");
  if (lock.waiters.length === 0) return td;
  const list = document.createElement("ol");
  list.className = "queue";
  for (const waiter of lock.waiters) {
    const item = document.createElement("li");
    item.dataset.waiterLease = String(waiter.lease);
    const where = ownerWhere(waiter.owner);
    item.appendChild(document.createTextNode(`${ownerName(waiter.owner)}${where ? " (" + where + ")" : ""} waited `));
    const waited = document.createElement("span");
    waited.className = "waited";
    moving.push({ cell: waited, baseMs: Math.max(0, serverNowMs - waiter.since_unix_ms), sign: 1, ttlMs: 0 });
    item.appendChild(waited);
    item.appendChild(document.createTextNode(` of up to ${duration(waiter.wait_ms)}`));
    list.appendChild(item);
  }
  td.appendChild(list);
  return td;
}

// What a semaphore or read-write lock is and how much of it is held:
// "semaphore, 2 of 3 permits", "read-write, 2 readers", "read-write, writer".
function kindLabel(lock) {
  const held = lock.holders.reduce((sum, h) => sum + h.permits, 0);
  if (lock.kind === "semaphore") return `semaphore, ${held} of ${lock.permits} permits`;
  if (lock.holders.length === 0) return "read-write, free";
  if (held === lock.permits) return "read-write, writer";
  return `read-write, ${lock.holders.length} reader${lock.holders.length === 1 ? "" : "s"}`;
}

function lockRow(lock, serverNowMs) {
  const tr = document.createElement("tr");
  tr.dataset.lock = lock.name;
  tr.dataset.kind = lock.kind;
  if (lock.health) tr.dataset.verdict = lock.health.verdict;
  const pooled = lock.kind !== "lock";
  tr.appendChild(cell("name", pooled ? `${lock.name} (${kindLabel(lock)})` : lock.name));
  tr.appendChild(healthCell(lock));
  // A semaphore's or read-write lock's grants share the row: every owner
  // and token, and the oldest grant's lease and times.
  const grants = pooled ? lock.holders : (lock.holder ? [lock.holder] : []);
  const holder = grants.length ? grants[0] : null;
  const head = lock.waiters.length ? lock.waiters[0] : null;
  const remaining = cell("remaining", "");
  const held = cell("held", "");
  if (holder) {
    const tokens = grants.map((g) => String(g.token)).join(", ");
    tr.dataset.token = tokens;
    tr.appendChild(cell("owner", grants.map((g) => ownerName(g.owner)).join(", ")));
    tr.appendChild(cell("where", ownerWhere(holder.owner)));
    tr.appendChild(cell("token", tokens));
    tr.appendChild(cell("fenced", pooled ? "" : (holder.fenced ? "yes" : "no")));
    moving.push({ cell: remaining, baseMs: holder.lease_remaining_ms, sign: -1, ttlMs: holder.lease_ttl_ms });
    moving.push({ cell: held, baseMs: holder.held_ms, sign: 1, ttlMs: 0 });
  } else {
    tr.className = "free";
    tr.appendChild(cell("owner", "(free)"));
    for (const name of ["where", "token", "fenced"]) tr.appendChild(cell(name, ""));
    if (lock.lock_delay_remaining_ms > 0) {
      moving.push({ cell: remaining, baseMs: lock.lock_delay_remaining_ms, sign: -1, ttlMs: 0, label: "lock delay " });
    }
  }
  tr.appendChild(remaining);
  tr.appendChild(cell("ttl", holder ? duration(holder.lease_ttl_ms) : ""));
  tr.appendChild(held);
  tr.appendChild(cell("renewals", holder ? String(holder.renewals) : ""));
  tr.appendChild(cell("waiters", String(lock.waiters.length)));
  tr.appendChild(cell("next", head ? ownerName(head.owner) : ""));
  tr.appendChild(queueCell(lock, serverNowMs));
  return tr;
}

function renderLocks(reply) {
  moving = [];
  receivedAt = performance.now();
  const rows = reply.locks.map((lock) => lockRow(lock, reply.server_time_unix_ms));
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("empty", prefix ? `no locks under ${JSON.stringify(prefix)}` : "no locks");
    td.colSpan = 13;
    tr.appendChild(td);
    rows.push(tr);
  }
  document.getElementById("lock-rows").replaceChildren(...rows);
  const note = document.getElementById("locks-note");
  note.hidden = !reply.truncated;
  note.textContent = reply.truncated
    ? `Showing the first ${reply.locks.length} locks (the limit LIST_LOCKS_MAX is ${reply.limit}); narrow with a name prefix.`
    : "";
  const skew = reply.server_time_unix_ms - Date.now();
  const parts = [
    `node ${reply.node_id}`,
    reply.leader ? `leader: node ${reply.leader}` : "no leader known",
    `revision ${reply.revision}`,
    `${reply.locks.length} lock${reply.locks.length === 1 ? "" : "s"}`,
    `updated ${clock(Date.now())} (${ZONE})`,
  ];
  if (Math.abs(skew) > SKEW_SHOWN_MS) {
    parts.push(`this browser's clock is ${duration(Math.abs(skew))} ${skew > 0 ? "behind" : "ahead of"} the server's`);
  }
  document.getElementById("status").textContent = parts.join(" · ");
}

function contactText(member) {
  if (member.reachable === null || member.reachable === undefined) return "";
  if (member.last_contact_ms === null || member.last_contact_ms === undefined) return "never";
  return `${(member.last_contact_ms / 1000).toFixed(1)} s ago`;
}

function lagText(member) {
  if (member.lag === null || member.lag === undefined) return "";
  return member.lag === 0 ? "0 (caught up)" : `${member.lag} entr${member.lag === 1 ? "y" : "ies"}`;
}

function memberRow(member, leader) {
  const tr = document.createElement("tr");
  tr.dataset.member = String(member.id);
  const known = member.reachable !== null && member.reachable !== undefined;
  tr.dataset.reachable = known ? String(member.reachable) : "unknown";
  if (known && !member.reachable) tr.className = "unreachable";
  tr.appendChild(cell("member", member.id === leader ? `${member.id} (leader)` : String(member.id)));
  tr.appendChild(cell("addr", member.addr));
  tr.appendChild(cell("role", member.voter ? member.role : `${member.role} (non-voting)`));
  tr.appendChild(cell("reachable", known ? (member.reachable ? "yes" : "no") : "(no view)"));
  tr.appendChild(cell("contact", contactText(member)));
  tr.appendChild(cell("lag", lagText(member)));
  return tr;
}

function clusterSummary(reply) {
  const reachable = reply.members.filter((m) => m.reachable === true).length;
  const voters = reply.members.filter((m) => m.voter).length;
  const parts = [
    reply.leader ? `leader: node ${reply.leader}` : "no leader known",
    `term ${reply.term}`,
    `${reply.members.length} member${reply.members.length === 1 ? "" : "s"} (${voters} voting)`,
    reply.state === "Leader" ? `${reachable} reachable` : "reachability is known to the leader",
    reply.quorum ? "quorum: yes" : "quorum: NO",
    `log ${reply.last_log_index}, applied ${reply.applied_index}`,
  ];
  const summary = document.getElementById("cluster-summary");
  summary.dataset.leader = String(reply.leader || "");
  summary.textContent = parts.join(" · ");
}

function renderCluster(reply) {
  const quorum = document.getElementById("quorum");
  quorum.dataset.quorum = String(reply.quorum);
  quorum.className = reply.quorum ? "ok" : "bad";
  const state = reply.state === "Leader" && !reply.quorum ? "Leader (NO QUORUM)" : reply.state;
  quorum.textContent = reply.quorum
    ? `node ${reply.node_id}: ${state}, term ${reply.term}, quorum ok`
    : `node ${reply.node_id}: ${state}, term ${reply.term}: ${reply.quorum_problem}`;
  clusterSummary(reply);
  document.getElementById("member-rows").replaceChildren(...reply.members.map((m) => memberRow(m, reply.leader)));
  const transport = document.getElementById("transport");
  transport.dataset.security = reply.transport_security;
  transport.className = reply.transport_security === "insecure" ? "bad" : "ok";
  transport.textContent = reply.transport_security === "insecure"
    ? "transport: insecure (plaintext on a non-loopback address, started with --insecure)"
    : `transport: ${reply.transport_security}`;
}

function eventRow(event) {
  const tr = document.createElement("tr");
  tr.className = "event";
  tr.dataset.kind = event.kind;
  tr.dataset.eventLock = event.lock;
  const time = cell("time", clock(event.at_unix_ms));
  time.title = new Date(event.at_unix_ms).toISOString();
  tr.appendChild(time);
  tr.appendChild(cell("kind", event.kind));
  tr.appendChild(cell("lock", event.lock));
  tr.appendChild(cell("token", event.token ? String(event.token) : ""));
  tr.appendChild(cell("owner", event.owner));
  tr.appendChild(cell("detail", event.detail));
  return tr;
}

// The kind filter offers every kind seen (and the one chosen).
function kindOptions(events) {
  const select = document.getElementById("event-kind");
  const kinds = new Set(events.map((e) => e.kind));
  if (select.value) kinds.add(select.value);
  const have = new Set(Array.from(select.options).map((o) => o.value));
  for (const kind of Array.from(kinds).sort()) {
    if (have.has(kind)) continue;
    const option = document.createElement("option");
    option.value = kind;
    option.textContent = kind;
    select.appendChild(option);
  }
  return select.value;
}

function renderEvents(reply) {
  lastEvents = reply;
  const kind = kindOptions(reply.events);
  const shown = reply.events.filter((e) => !kind || e.kind === kind);
  const rows = shown.slice().reverse().map(eventRow);
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("empty", kind ? `no ${kind} events among the last ${reply.events.length}` : "no events remembered yet");
    td.colSpan = 6;
    tr.appendChild(td);
    rows.push(tr);
  }
  document.getElementById("event-rows").replaceChildren(...rows);
  document.getElementById("event-time-head").textContent = `Time (${ZONE})`;
}

// One small chart: `values` (null: no data in that interval) over the
// kept intervals, oldest left; `max` fixes the scale (else the largest).
function chart(series, title, values, max, guide) {
  const figure = document.createElement("figure");
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`);
  svg.setAttribute("width", String(CHART_WIDTH));
  svg.setAttribute("height", String(CHART_HEIGHT));
  svg.dataset.series = series;
  const top = max || Math.max(1, ...values.filter((v) => v !== null));
  const step = CHART_WIDTH / Math.max(1, values.length - 1);
  const y = (v) => (CHART_HEIGHT - 4 - (v / top) * (CHART_HEIGHT - 14)).toFixed(1);
  const points = [];
  values.forEach((v, i) => { if (v !== null) points.push(`${(i * step).toFixed(1)},${y(v)}`); });
  svg.dataset.points = String(points.length);
  if (guide !== undefined) {
    const line = document.createElementNS(SVG, "line");
    line.setAttribute("class", "guide");
    line.setAttribute("x1", "0"); line.setAttribute("x2", String(CHART_WIDTH));
    line.setAttribute("y1", y(guide)); line.setAttribute("y2", y(guide));
    svg.appendChild(line);
  }
  const polyline = document.createElementNS(SVG, "polyline");
  polyline.setAttribute("points", points.join(" "));
  svg.appendChild(polyline);
  if (points.length === 1) {
    const [cx, cy] = points[0].split(",");
    const dot = document.createElementNS(SVG, "circle");
    dot.setAttribute("cx", cx); dot.setAttribute("cy", cy); dot.setAttribute("r", "2");
    svg.appendChild(dot);
  }
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", "2"); label.setAttribute("y", "10");
  label.textContent = max === 1 ? "100%" : `max ${top}`;
  svg.appendChild(label);
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  figure.append(caption, svg);
  return figure;
}

function renderCharts(reply) {
  const s = reply.samples;
  const per = duration(reply.sample_ms);
  const last = (k) => (s.length ? s[s.length - 1][k] : 0);
  const margins = s.map((x) => (x.margin_ratio_min === null ? null : x.margin_ratio_min));
  const lowest = margins.filter((m) => m !== null);
  const marginNow = lowest.length ? `${Math.round(Math.min(...lowest) * 100)}% lowest` : "no renewals measured";
  document.getElementById("charts").replaceChildren(
    chart("grants", `Grants per ${per} (now ${last("grants")})`, s.map((x) => x.grants)),
    chart("releases", `Releases per ${per} (now ${last("releases")})`, s.map((x) => x.releases)),
    chart("expiries", `Lease expiries per ${per} (now ${last("expiries")})`, s.map((x) => x.expiries)),
    chart("margin", `Keep-alive margin, lowest % of ttl left (${marginNow}; red: 1/3)`, margins, 1, 1 / 3),
  );
  const span = duration(reply.sample_ms * s.length);
  document.getElementById("charts-note").textContent =
    `(node ${reply.node_id}'s own counts over the last ${span}, one point per ${per}, newest right; the margin is measured by the leader)`;
}

function tick() {
  const elapsed = performance.now() - receivedAt;
  for (const m of moving) {
    const ms = Math.max(0, m.baseMs + m.sign * elapsed);
    m.cell.textContent = (m.label || "") + duration(ms);
    if (m.ttlMs > 0) {
      const fresh = freshness(ms, m.ttlMs);
      for (const name of ["fresh", "late", "low"]) m.cell.classList.toggle(name, name === fresh);
    }
  }
  const banner = document.getElementById("unreachable");
  banner.hidden = unreachableSince === null;
  if (unreachableSince !== null) {
    const down = Date.now() - unreachableSince;
    banner.textContent = `server unreachable since ${clock(unreachableSince)} (${duration(down)}): ${lastError}. The locks shown are as of the last answer.`;
  }
}

async function refresh() {
  try {
    const query = prefix ? `prefix=${encodeURIComponent(prefix)}` : "";
    const [locks, events, cluster, charts] = await Promise.all([
      getJson(query ? `/api/locks?${query}` : "/api/locks"),
      getJson(`/api/events?limit=${EVENTS_SHOWN}${query ? "&" + query : ""}`),
      getJson("/api/cluster"),
      getJson("/api/charts"),
    ]);
    renderLocks(locks);
    renderEvents(events);
    renderCluster(cluster);
    renderCharts(charts);
    unreachableSince = null;
  } catch (error) {
    if (unreachableSince === null) unreachableSince = Date.now();
    lastError = String(error.message || error);
  }
  tick();
  setTimeout(refresh, REFRESH_MS);
}

document.getElementById("event-kind").addEventListener("change", () => {
  if (lastEvents) renderEvents(lastEvents);
});
document.getElementById("event-filter").addEventListener("submit", (e) => e.preventDefault());
setInterval(tick, TICK_MS);
refresh();
