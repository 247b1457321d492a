// Leasehold's live page: polls /api/locks, /api/events and /api/cluster
// every second and renders them; between polls the lease countdowns (and hold times) move on
// the browser's own monotonic clock. Lock names, owners and details are user
// input: they reach the DOM only through textContent, never as HTML.
"use strict";

const REFRESH_MS = 1000;
const TICK_MS = 250;
const FETCH_TIMEOUT_MS = 5000;
const EVENTS_SHOWN = 50;
const SKEW_SHOWN_MS = 2000;

const prefix = new URLSearchParams(location.search).get("prefix") || "";
document.getElementById("prefix").value = prefix;

// Cells whose text moves between polls: {cell, baseMs, sign, ttlMs}.
let moving = [];
// performance.now() when the shown locks arrived.
let receivedAt = performance.now();
// Date.now() of the first failed poll since the last good one, or null.
let unreachableSince = null;
let lastError = "";

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

function lockRow(lock) {
  const tr = document.createElement("tr");
  tr.dataset.lock = lock.name;
  tr.appendChild(cell("name", lock.name));
  const holder = lock.holder;
  const head = lock.waiters.length ? lock.waiters[0] : null;
  let remaining, held;
  if (holder) {
    tr.dataset.token = String(holder.token);
    tr.appendChild(cell("owner", ownerName(holder.owner)));
    tr.appendChild(cell("where", ownerWhere(holder.owner)));
    tr.appendChild(cell("token", String(holder.token)));
    tr.appendChild(cell("fenced", holder.fenced ? "yes" : "no"));
    remaining = cell("remaining", "");
    held = cell("held", "");
    moving.push({ cell: remaining, baseMs: holder.lease_remaining_ms, sign: -1, ttlMs: holder.lease_ttl_ms });
    moving.push({ cell: held, baseMs: holder.held_ms, sign: 1, ttlMs: 0 });
  } else {
    tr.className = "free";
    tr.appendChild(cell("owner", "(free)"));
    tr.appendChild(cell("where", ""));
    tr.appendChild(cell("token", ""));
    tr.appendChild(cell("fenced", ""));
    remaining = cell("remaining", "");
    if (lock.lock_delay_remaining_ms > 0) {
      moving.push({ cell: remaining, baseMs: lock.lock_delay_remaining_ms, sign: -1, ttlMs: 0, label: "lock delay " });
    }
    held = cell("held", "");
  }
  tr.appendChild(remaining);
  tr.appendChild(held);
  tr.appendChild(cell("renewals", holder ? String(holder.renewals) : ""));
  tr.appendChild(cell("waiters", String(lock.waiters.length)));
  tr.appendChild(cell("next", head ? ownerName(head.owner) : ""));
  return tr;
}

function renderLocks(reply) {
  moving = [];
  receivedAt = performance.now();
  const rows = reply.locks.map(lockRow);
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("empty", prefix ? `no locks under ${JSON.stringify(prefix)}` : "no locks");
    td.colSpan = 10;
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
    `updated ${clock(Date.now())}`,
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

function memberRow(member) {
  const tr = document.createElement("tr");
  tr.dataset.member = String(member.id);
  const known = member.reachable !== null && member.reachable !== undefined;
  tr.dataset.reachable = known ? String(member.reachable) : "unknown";
  if (known && !member.reachable) tr.className = "unreachable";
  tr.appendChild(cell("member", String(member.id)));
  tr.appendChild(cell("addr", member.addr));
  tr.appendChild(cell("role", member.voter ? member.role : `${member.role} (non-voting)`));
  tr.appendChild(cell("reachable", known ? (member.reachable ? "yes" : "no") : "(no view)"));
  tr.appendChild(cell("contact", contactText(member)));
  return tr;
}

function renderCluster(reply) {
  const quorum = document.getElementById("quorum");
  quorum.dataset.quorum = String(reply.quorum);
  quorum.className = reply.quorum ? "ok" : "bad";
  const state = reply.state === "Leader" && !reply.quorum ? "Leader (NO QUORUM)" : reply.state;
  quorum.textContent = reply.quorum
    ? `node ${reply.node_id}: ${state}, term ${reply.term}, quorum ok`
    : `node ${reply.node_id}: ${state}, term ${reply.term}: ${reply.quorum_problem}`;
  document.getElementById("member-rows").replaceChildren(...reply.members.map(memberRow));
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
  tr.appendChild(cell("time", clock(event.at_unix_ms)));
  tr.appendChild(cell("kind", event.kind));
  tr.appendChild(cell("lock", event.lock));
  tr.appendChild(cell("token", event.token ? String(event.token) : ""));
  tr.appendChild(cell("owner", event.owner));
  tr.appendChild(cell("detail", event.detail));
  return tr;
}

function renderEvents(reply) {
  const rows = reply.events.slice().reverse().map(eventRow);
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell("empty", "no events remembered yet");
    td.colSpan = 6;
    tr.appendChild(td);
    rows.push(tr);
  }
  document.getElementById("event-rows").replaceChildren(...rows);
}

function tick() {
  const elapsed = performance.now() - receivedAt;
  for (const m of moving) {
    const ms = Math.max(0, m.baseMs + m.sign * elapsed);
    m.cell.textContent = (m.label || "") + duration(ms);
    m.cell.classList.toggle("low", m.ttlMs > 0 && ms < m.ttlMs / 3);
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
    const [locks, events, cluster] = await Promise.all([
      getJson(query ? `/api/locks?${query}` : "/api/locks"),
      getJson(`/api/events?limit=${EVENTS_SHOWN}${query ? "&" + query : ""}`),
      getJson("/api/cluster"),
    ]);
    renderLocks(locks);
    renderEvents(events);
    renderCluster(cluster);
    unreachableSince = null;
  } catch (error) {
    if (unreachableSince === null) unreachableSince = Date.now();
    lastError = String(error.message || error);
  }
  tick();
  setTimeout(refresh, REFRESH_MS);
}

setInterval(tick, TICK_MS);
refresh();
