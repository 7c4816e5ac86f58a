// The assetbus operators' page: plain JavaScript, no build step. Hash routes, one view at a time,
// data from /ui/api/... (keyset-paginated: "more" asks for the next page). Text is always set with
// textContent, never parsed as HTML.
"use strict";

const API = "/ui/api";
const PAGE = 50; // rows per page of every paginated table
const view = document.getElementById("view");
const statusLine = document.getElementById("status");
let refreshTimer = null;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

async function get(path) {
  const response = await fetch(API + path, { headers: { Accept: "application/json" } });
  if (response.status === 401) {
    location.assign("/ui/login"); // the sign-in expired
    throw new Error("signed out");
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || response.statusText);
  return body;
}

const enc = encodeURIComponent;
const when = (iso) => (iso ? new Date(iso).toISOString().replace("T", " ").slice(0, 19) + "Z" : "");
const partition = (key) => (key === null || key === undefined ? "(unpartitioned)" : key);
const badge = (status) => h("span", { class: `badge ${status}` }, status);
const eventLink = (id) => h("a", { href: `#/events/${id}`, "data-testid": "event-link" }, `#${id}`);
const runLink = (runId) => h("a", { href: `#/runs/${enc(runId)}`, "data-testid": "run-link" }, runId);
const dagLink = (dagId) => h("a", { href: `#/dags/${enc(dagId)}` }, dagId);
const assetLink = (name) => h("a", { href: `#/assets/${enc(name)}`, "data-testid": "asset-link" }, name);

const SHOWN = 8;
const eventList = (ids) => [ids.slice(0, SHOWN).map((id) => [eventLink(id), " "]),
  ids.length > SHOWN ? h("span", { class: "muted" }, `+${ids.length - SHOWN} more`) : null];

function provenance(e) {
  const task = e.task_id === null ? "DAG-level (no task)" : `${e.task_id}` +
    (e.map_index !== null && e.map_index >= 0 ? `[${e.map_index}]` : "") + ` try ${e.try_number}`;
  return `${e.dag_id} / ${e.run_id} / ${task}`;
}

function table(headers, rows, testid) {
  if (!rows.length) return h("p", { class: "empty" }, "nothing yet");
  return h("table", { "data-testid": testid },
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => h("td", {}, cell))))));
}

// A table whose "more" button fetches the next page with the cursor of the last row.
async function paged(container, headers, fetchPage, toCells, cursorOf, testid) {
  let cursor = null;
  const body = h("tbody");
  const more = h("button", { class: "more", "data-testid": `${testid}-more` }, "more");
  const load = async () => {
    const rows = await fetchPage(cursor);
    for (const row of rows) body.append(h("tr", {}, toCells(row).map((cell) => h("td", {}, cell))));
    if (rows.length) cursor = cursorOf(rows[rows.length - 1]);
    more.hidden = rows.length < PAGE;
    return rows.length;
  };
  more.addEventListener("click", () => { stopRefresh(); load().catch(showError); });
  const first = await load();
  container.append(first ? h("table", { "data-testid": testid },
    h("thead", {}, h("tr", {}, headers.map((name) => h("th", {}, name)))), body) : h("p", { class: "empty" }, "nothing yet"));
  if (first) container.append(more);
}

const views = {
  async assets() {
    const assets = await get("/assets?limit=200");
    return [h("h1", {}, "Assets"),
      table(["asset", "URI", "events", "latest partition", "latest event", "provenance", "stored"],
        assets.map((a) => [assetLink(a.name), h("code", {}, a.uri), a.events_capped ? `${a.events}+` : a.events,
          a.latest ? partition(a.latest.partition_key) : "", a.latest ? eventLink(a.latest.id) : "",
          a.latest ? provenance(a.latest) : "", a.latest ? when(a.latest.created_at) : ""]), "assets")];
  },

  async asset(name) {
    const out = [h("h1", {}, `Asset ${name}`), h("h2", {}, "Latest event per partition")];
    const partitions = h("div");
    await paged(partitions, ["partition", "event", "provenance", "extra", "stored"],
      (before) => get(`/assets/${enc(name)}/partitions?limit=${PAGE}` + (before !== null ? `&before=${enc(before)}` : "")),
      (e) => [partition(e.partition_key), eventLink(e.id), provenance(e), h("code", {}, JSON.stringify(e.extra)),
        when(e.created_at)],
      (e) => e.partition_key, "partitions");
    const events = h("div");
    await paged(events, ["event", "partition", "dedupe key", "provenance", "stored"],
      (before) => get(`/events?asset=${enc(name)}&limit=${PAGE}` + (before !== null ? `&before=${before}` : "")),
      (e) => [eventLink(e.id), partition(e.partition_key), h("code", {}, e.dedupe_key), provenance(e),
        when(e.created_at)],
      (e) => e.id, "asset-events");
    return [...out, partitions, h("h2", {}, "All events, newest first"), events];
  },

  async event(id) {
    const d = await get(`/events/${id}`);
    const e = d.event;
    return [h("h1", {}, `Event #${e.id}`),
      h("dl", { "data-testid": "event-detail" },
        h("dt", {}, "asset"), h("dd", {}, assetLink(e.asset), " ", h("code", {}, e.uri)),
        h("dt", {}, "partition"), h("dd", {}, partition(e.partition_key),
          e.partition_date ? ` (${when(e.partition_date)})` : ""),
        h("dt", {}, "emitted by"), h("dd", {}, `${e.source_kind}: ${provenance(e)}`),
        h("dt", {}, "dedupe key"), h("dd", {}, h("code", {}, e.dedupe_key)),
        h("dt", {}, "stored"), h("dd", {}, when(e.created_at)),
        h("dt", {}, "extra"), h("dd", {}, h("pre", {}, JSON.stringify(e.extra, null, 2)))),
      h("h2", {}, "Runs it triggered"),
      table(["run", "DAG", "partition", "outcome", "created"],
        d.runs.map((r) => [runLink(r.run_id), dagLink(r.dag_id), partition(r.partition_key), badge(r.status),
          when(r.created_at)]), "event-runs"),
      h("h2", {}, "Still waiting in"),
      table(["DAG", "target partition"], d.waiting_in.map((w) => [dagLink(w.dag_id), partition(w.target_key)]),
        "event-waiting")];
  },

  async run(runId) {
    const d = await get(`/runs/${enc(runId)}`);
    const r = d.run;
    return [h("h1", {}, `Run ${r.run_id}`),
      h("dl", { "data-testid": "run-detail" },
        h("dt", {}, "DAG"), h("dd", {}, dagLink(r.dag_id)),
        h("dt", {}, "partition"), h("dd", {}, partition(r.partition_key), ` (generation ${r.generation})`),
        h("dt", {}, "outcome"), h("dd", {}, badge(r.status), r.detail ? ` ${r.detail}` : ""),
        h("dt", {}, "origin"), h("dd", {}, r.origin, r.published ? ", signal published" : ", signal not yet published"),
        h("dt", {}, "consumer"), h("dd", {}, r.consumer ? `${r.consumer} (${r.attempts} attempt(s))` : "none yet"),
        h("dt", {}, "created / finished"), h("dd", {}, `${when(r.created_at)} / ${when(r.finished_at) || "-"}`)),
      h("h2", {}, "Triggering events"),
      table(["event", "asset", "partition", "provenance", "stored"],
        d.events.map((e) => [eventLink(e.id), assetLink(e.asset), partition(e.partition_key), provenance(e),
          when(e.created_at)]), "run-events")];
  },

  async dags() {
    const dags = await get("/dags");
    const counts = (runs) => Object.entries(runs).map(([s, n]) => h("span", {}, badge(s), ` ${n} `));
    return [h("h1", {}, "Consumer DAGs"),
      table(["DAG", "waits for", "runs by outcome", "waiting partitions", "coalesce"],
        dags.map((d) => [dagLink(d.dag_id), d.assets.join(", "), counts(d.runs),
          d.waiting_partitions ? `${d.waiting_partitions} (${d.queued_events} events queued)` : "none",
          d.coalesce ? "yes" : "one run per event"]), "dags")];
  },

  async dag(dagId) {
    const waiting = h("div");
    await paged(waiting, ["target partition", "waits for", "queued events"],
      (after) => get(`/dags/${enc(dagId)}/waiting?limit=${PAGE}` + (after !== null ? `&after=${enc(after)}` : "")),
      (w) => [partition(w.target_key),
        w.waits.map((p) => h("div", {}, badge(p.complete ? "success" : "waiting"), ` ${p.asset} ${p.have}/${p.need} ${p.unit}`)),
        eventList(w.queued_event_ids)],
      (w) => w.target_key ?? "", "waiting");
    const runs = h("div");
    await paged(runs, ["run", "partition", "outcome", "triggering events", "created"],
      (before) => get(`/dags/${enc(dagId)}/runs?limit=${PAGE}` + (before !== null ? `&before=${before}` : "")),
      (r) => [runLink(r.run_id), partition(r.partition_key), [badge(r.status), r.detail ? ` ${r.detail}` : ""],
        eventList(r.event_ids), when(r.created_at)],
      (r) => r.id, "runs");
    return [h("h1", {}, `Consumer DAG ${dagId}`), h("h2", {}, "Partitions still waiting"), waiting,
      h("h2", {}, "Runs, newest first"), runs];
  },

  async lag() {
    const groups = await get("/lag");
    return [h("h1", {}, "Consumer-group lag"),
      table(["group", "lag", "per topic"],
        groups.map((g) => [h("code", {}, g.group), g.lag,
          Object.entries(g.topics).map(([t, n]) => h("div", {}, h("code", {}, t), `: ${n}`))]), "lag")];
  },

  async deadLetters() {
    const letters = await get("/dead-letters?limit=100");
    return [h("h1", {}, "Dead letters"),
      h("p", { class: "muted" }, "Records the persister could not even read as a command, newest first."),
      table(["when", "reason", "error", "source", "key", "value"],
        letters.map((d) => [when(d.timestamp), badge(d.reason), d.error, d.source || "", d.key || "",
          h("code", {}, d.value_preview.slice(0, 120))]), "dead-letters")];
  },
};

function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [name, arg] = parts;
  const table = {
    "": ["assets", () => views.assets()], assets: arg ? ["assets", () => views.asset(arg)] : ["assets", () => views.assets()],
    events: ["assets", () => views.event(arg)], runs: ["dags", () => views.run(arg)],
    dags: arg ? ["dags", () => views.dag(arg)] : ["dags", () => views.dags()],
    lag: ["lag", () => views.lag()], "dead-letters": ["dead-letters", () => views.deadLetters()],
  };
  return table[name] || table[""];
}

function stopRefresh() {
  if (refreshTimer !== null) clearInterval(refreshTimer);
  refreshTimer = null;
}

function showError(error) {
  view.replaceChildren(h("p", { class: "error", "data-testid": "error" }, `Could not load: ${error.message}`));
}

async function render() {
  stopRefresh();
  const [tab, build] = route();
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.tab === tab);
  const draw = async () => {
    try {
      view.replaceChildren(...await build());
      view.dataset.loaded = location.hash || "#/assets";
    } catch (error) {
      showError(error);
    }
  };
  await draw();
  refreshTimer = setInterval(() => { if (!document.hidden) draw(); }, 5000);
}

// The live feed: the newest events, then every 2 s whatever is newer than the last id seen.
const feed = document.getElementById("feed");
let lastSeen = null;

function feedItem(e, fresh) {
  return h("li", { class: fresh ? "new" : null, "data-testid": "feed-item" },
    eventLink(e.id), " ", assetLink(e.asset), ` ${partition(e.partition_key)}`,
    h("div", { class: "muted" }, `${provenance(e)} · ${when(e.created_at)}`));
}

async function poll() {
  try {
    if (lastSeen === null) {
      const newest = await get("/events?limit=25");
      feed.replaceChildren(...newest.map((e) => feedItem(e, false)));
      lastSeen = newest.length ? newest[0].id : 0;
    } else {
      const newer = await get(`/events?after=${lastSeen}&limit=100`);
      for (const e of newer) feed.prepend(feedItem(e, true));
      if (newer.length) lastSeen = newer[newer.length - 1].id;
      while (feed.children.length > 200) feed.lastChild.remove();
    }
    statusLine.textContent = `live · updated ${new Date().toLocaleTimeString()}`;
    statusLine.classList.remove("down");
  } catch (error) {
    statusLine.textContent = `disconnected: ${error.message}`;
    statusLine.classList.add("down");
  }
}

window.addEventListener("hashchange", render);
render();
poll();
setInterval(poll, 2000);
