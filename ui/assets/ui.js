// The lease view: a client of the node's own REST API, as kubectl is. It
// lists Leases and LeaseCandidates, then watches them from the list's
// resourceVersion; the Lease watch first replays the node's watch history
// to build each Lease's holder timeline. Times are the server's: the page
// measures its clock against the Date header of every API answer.

import { candidateState, decide, parseTime } from "./election.js";

const ROW_H = 28; // px, the same as --row in ui.css
const OVERSCAN = 8; // rows rendered above and below the visible ones
// Items per list request: a small first page shows rows at once, then
// large ones keep the round trips few.
const FIRST_PAGE = 500;
const PAGE = 5000;
const MAX_RUNS = 200; // holder runs kept per Lease
const LEASES = { group: "/apis/coordination.k8s.io/v1", resource: "leases" };
const CANDIDATES = { group: "/apis/coordination.k8s.io/v1beta1", resource: "leasecandidates" };

const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function setText(node, s) {
  if (node.textContent !== s) node.textContent = s;
}

// ---- formatting

function fmtDur(ms) {
  const neg = ms < 0;
  ms = Math.abs(ms);
  let s;
  if (ms < 10000) s = (Math.floor(ms / 100) / 10).toFixed(1) + "s";
  else if (ms < 60000) s = Math.floor(ms / 1000) + "s";
  else if (ms < 3600000) s = Math.floor(ms / 60000) + "m " + (Math.floor(ms / 1000) % 60) + "s";
  else if (ms < 86400000) s = Math.floor(ms / 3600000) + "h " + (Math.floor(ms / 60000) % 60) + "m";
  else s = Math.floor(ms / 86400000) + "d " + (Math.floor(ms / 3600000) % 24) + "h";
  return neg ? "-" + s : s;
}

const pad = (n, w = 2) => String(n).padStart(w, "0");

// fmtTime shows a server time in the browser's time zone: the time of day
// for today, with the date otherwise.
function fmtTime(ms, withMillis) {
  if (ms == null) return "—";
  const d = new Date(ms);
  let s = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (withMillis) s += "." + pad(d.getMilliseconds(), 3);
  const today = new Date(clock.now());
  if (d.toDateString() !== today.toDateString()) {
    s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${s}`;
  }
  return s;
}

const ago = (ms, now) => (ms == null ? "—" : fmtDur(now - ms) + " ago");

// ---- the server's clock

// ServerClock estimates the server's clock from the Date header (whole
// seconds) of API answers: an answer sent between t0 and t1 on this
// browser's clock, dated D, says the offset (server - browser) lies in
// [D - t1, D + 1000 - t0]. Intersecting the intervals of recent answers
// narrows it to about a round trip once answers fall on both sides of a
// second's edge. An answer that contradicts the older ones means a clock
// was stepped: those are dropped.
class ServerClock {
  constructor() {
    this.samples = [];
    this.lo = 0;
    this.hi = 0;
    this.known = false;
  }

  sample(date, t0, t1) {
    const d = date ? Date.parse(date) : NaN;
    if (Number.isNaN(d)) return;
    this.samples.push([d - t1, d + 1000 - t0]);
    if (this.samples.length > 32) this.samples.shift();
    let lo = -Infinity;
    let hi = Infinity;
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const [a, b] = this.samples[i];
      if (Math.max(lo, a) > Math.min(hi, b)) {
        this.samples.splice(0, i + 1);
        break;
      }
      lo = Math.max(lo, a);
      hi = Math.min(hi, b);
    }
    this.lo = lo;
    this.hi = hi;
    this.known = true;
    const root = document.documentElement.dataset;
    root.clockOffset = String(Math.round(this.offset));
    root.clockUncertainty = String(Math.round(this.uncertainty));
  }

  get offset() {
    return this.known ? (this.lo + this.hi) / 2 : 0;
  }

  get uncertainty() {
    return this.known ? (this.hi - this.lo) / 2 : Infinity;
  }

  now() {
    return Date.now() + this.offset;
  }
}

const clock = new ServerClock();

// ---- requests and credentials

class APIError extends Error {
  constructor(status, reason, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.reason = reason || "";
  }
}

// auth holds the bearer token of this tab, in this variable only: never in
// a cookie or in Web Storage, so that no other page, tab or later visit
// can read it, and a reload or a closed tab forgets it. A 401 shows the
// login box; every request that got one waits until the user gives a
// token, then retries.
const auth = {
  token: "",
  waiting: null,

  headers() {
    const h = { Accept: "application/json" };
    if (this.token) h.Authorization = "Bearer " + this.token;
    return h;
  },

  refused(sent) {
    if (this.token && sent !== this.token) return Promise.resolve(); // a newer token: retry with it
    if (sent) {
      this.forget();
      showLoginError("The server did not accept that token.");
    }
    if (!this.waiting) {
      let resolve;
      const promise = new Promise((r) => (resolve = r));
      this.waiting = { promise, resolve };
      $("login").hidden = false;
      $("token").focus();
    }
    return this.waiting.promise;
  },

  set(token) {
    this.token = token;
    $("login").hidden = true;
    $("logout").hidden = false;
    $("login-error").hidden = true;
    if (this.waiting) {
      this.waiting.resolve();
      this.waiting = null;
    }
  },

  forget() {
    this.token = "";
    $("logout").hidden = true;
  },
};

function showLoginError(msg) {
  $("login-error").textContent = msg;
  $("login-error").hidden = false;
}

// apiURL is the URL of the API path path ("/apis/...", "/readyz"),
// relative to the page: the page is served at <root>/ui/ and the API at
// <root>/, where <root> is the node itself or a proxy's prefix (kubectl
// proxy serves both under its --api-prefix), so the page works wherever it
// was loaded from.
const apiURL = (path) => ".." + path;

async function request(path, { signal } = {}) {
  for (;;) {
    const sent = auth.token;
    const t0 = Date.now();
    const resp = await fetch(apiURL(path), { headers: auth.headers(), signal, cache: "no-store", credentials: "same-origin" });
    clock.sample(resp.headers.get("Date"), t0, Date.now());
    if (resp.status !== 401) return resp;
    if (resp.body) resp.body.cancel().catch(() => {});
    await auth.refused(sent);
  }
}

async function apiError(resp) {
  let message = `${resp.status} ${resp.statusText}`;
  let reason = "";
  try {
    const text = await resp.text();
    try {
      const st = JSON.parse(text);
      message = st.message || message;
      reason = st.reason || "";
    } catch {
      if (text.trim()) message = text.trim();
    }
  } catch {
    // the body is gone; the status says enough
  }
  return new APIError(resp.status, reason, message);
}

async function getJSON(path, opts) {
  const resp = await request(path, opts);
  if (!resp.ok) throw await apiError(resp);
  return resp.json();
}

// watchEvents yields the JSON lines of a watch response as they arrive.
async function* watchEvents(resp, onBytes) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onBytes();
      buf += dec.decode(value, { stream: true });
      const end = buf.lastIndexOf("\n");
      if (end < 0) continue;
      const lines = buf.slice(0, end).split("\n");
      buf = buf.slice(end + 1);
      for (const line of lines) {
        if (line.trim() !== "") yield JSON.parse(line);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// ---- list and watch

const params = new URLSearchParams(location.search);
// scopeNs is the one namespace the page shows ("" for all); the scope form
// changes it in place (see rescope).
let scopeNs = params.get("namespace") || "";

// Reflector keeps a resource in step with the server: list, then watch from
// the list's resourceVersion, resuming after a dropped stream and listing
// again after 410 Gone. With replay, its first watch starts from the oldest
// version the node's history holds, so the events before the list arrive
// first (live = false), then the live ones.
class Reflector {
  static all = [];

  // restartAll drops every open watch stream; each resumes at once. A node
  // that died without closing its connections (a crash, a partition)
  // leaves a stream open and silent: the cluster poll notices first.
  static restartAll() {
    for (const r of Reflector.all) if (r.ctrl) r.ctrl.abort();
  }

  // wakeAll cuts short every pause between attempts: the node answers
  // again.
  static wakeAll() {
    for (const r of Reflector.all) if (r.wake) r.wake();
  }

  // relistAll makes every reflector list again at once, from its path as
  // it is now (the scope changed).
  static relistAll() {
    for (const r of Reflector.all) {
      r.relist = true;
      if (r.ctrl) r.ctrl.abort();
    }
    Reflector.wakeAll();
  }

  // pause waits before the next attempt, growing the wait each time (with
  // jitter, so that tabs do not come back in step) up to 15 s.
  async pause() {
    const ms = this.backoff * (0.75 + Math.random() / 2);
    this.backoff = Math.min(this.backoff * 2, 15000);
    await new Promise((resolve) => {
      const t = setTimeout(() => this.wake(), ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
    });
  }

  constructor(api, { replay, onPage, onReset, onEvent, onState, onReplay }) {
    Reflector.all.push(this);
    this.api = api;
    this.replay = replay;
    this.onPage = onPage;
    this.onReset = onReset;
    this.onEvent = onEvent;
    this.onState = onState;
    this.onReplay = onReplay || (() => {});
    this.rv = 0;
    this.backoff = 500;
    this.wake = null;
    this.relist = false;
  }

  path(query) {
    const base = scopeNs
      ? `${this.api.group}/namespaces/${encodeURIComponent(scopeNs)}/${this.api.resource}`
      : `${this.api.group}/${this.api.resource}`;
    return base + "?" + new URLSearchParams(query);
  }

  // list reads every page of the list, handing each to onPage as it
  // comes (all at one resourceVersion), and returns that version and the
  // newest version of any item.
  async list() {
    for (;;) {
      let cont = "";
      let rv = 0;
      let newest = 0;
      try {
        do {
          const q = { limit: cont ? PAGE : FIRST_PAGE };
          if (cont) q.continue = cont;
          const l = await getJSON(this.path(q));
          const items = l.items || [];
          for (const it of items) newest = Math.max(newest, Number(it.metadata.resourceVersion));
          this.onPage(items);
          cont = (l.metadata && l.metadata.continue) || "";
          rv = Number(l.metadata.resourceVersion);
        } while (cont);
        return { rv, newest };
      } catch (e) {
        if (!(e instanceof APIError && e.status === 410)) throw e; // a continue token expired: start over
      }
    }
  }

  async run() {
    let replay = this.replay;
    for (;;) {
      let listRV;
      this.relist = false;
      try {
        this.onState("listing");
        const { rv, newest } = await this.list();
        listRV = rv;
        this.onReset(rv);
        // The replay has caught up with the list once it has passed the
        // newest version the list holds.
        this.replayEnd = newest;
        this.rv = replay ? 0 : rv;
      } catch (e) {
        this.onState(e instanceof APIError && e.status === 403 ? "forbidden" : "retrying", e);
        await this.pause();
        continue;
      }
      let from = replay ? 1 : listRV;
      if (replay) this.replayed(from, listRV);
      for (;;) {
        if (this.relist) break;
        let r;
        try {
          r = await this.watch(from, listRV, replay);
        } catch (e) {
          if (this.relist || (e instanceof APIError && (e.status === 403 || e.status === 410))) break;
          this.onState("retrying", e);
          await this.pause();
          from = Math.max(from, this.rv);
          continue;
        }
        if (r.expired) {
          // The history's oldest version is in the message: replay from
          // there, unless the list is already older than that.
          if (replay && r.oldest != null && r.oldest < listRV && from < r.oldest) {
            from = r.oldest;
            this.rv = 0;
            this.replayed(from, listRV);
            continue;
          }
          if (replay && from < listRV) {
            from = listRV;
            this.rv = listRV;
            this.replayed(from, listRV);
            continue;
          }
          break; // relist
        }
        from = Math.max(from, this.rv);
      }
      if (replay) this.onReplay({ from, listRV, done: true });
      replay = false;
    }
  }

  // replayed reports the replay's progress: where it started, and whether
  // it has caught up with the list.
  replayed(from, listRV) {
    this.replayFrom = from;
    const done = Math.max(from, this.rv) >= this.replayEnd;
    if (done === this.replayDone && from === this.reportedFrom) return;
    this.replayDone = done;
    this.reportedFrom = from;
    this.onReplay({ from, listRV, done });
  }

  async watch(from, listRV, replay) {
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    const q = {
      watch: "1",
      resourceVersion: String(from),
      allowWatchBookmarks: "true",
      // Streams are renewed now and then, as client-go does.
      timeoutSeconds: String(300 + Math.floor(Math.random() * 300)),
    };
    const resp = await request(this.path(q), { signal: ctrl.signal });
    if (!resp.ok) throw await apiError(resp);
    this.backoff = 500;
    this.onState("live");
    // A stream that goes silent past two bookmark intervals is dead.
    let last = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - last > 150000) ctrl.abort();
    }, 10000);
    try {
      for await (const ev of watchEvents(resp, () => (last = Date.now()))) {
        const obj = ev.object || {};
        if (ev.type === "ERROR") {
          if (obj.code === 410) {
            // "too old resource version: X (OLDEST)"; after a snapshot
            // install the number is not the history's oldest.
            const m = /too old resource version: \d+ \((\d+)\)/.exec(obj.message || "");
            const oldest = m && !/snapshot/.test(obj.message) ? Number(m[1]) : null;
            return { expired: true, oldest };
          }
          throw new APIError(obj.code || 500, obj.reason, obj.message);
        }
        const rv = Number(obj.metadata && obj.metadata.resourceVersion);
        if (ev.type !== "BOOKMARK") this.onEvent(ev.type, obj, rv > listRV);
        if (rv > this.rv) this.rv = rv;
        if (replay && !this.replayDone) this.replayed(this.replayFrom, listRV);
      }
      return { ended: true };
    } finally {
      clearInterval(watchdog);
      this.ctrl = null;
    }
  }
}

// ---- Leases and their holder history

const leases = new Map(); // "namespace/name" -> record
let listGeneration = 0; // counts the Lease lists; record.listed says which one saw it
const runsByLease = new Map(); // "namespace/name" -> {runs, lastRV, acquire, renew}
const namespaces = new Set();
// The history replay: whether it has caught up with the list, and the
// server time of the oldest change it brought (where the history starts).
const replayState = { done: false, startMs: null };

function writeTime(meta) {
  let t = null;
  for (const f of meta.managedFields || []) {
    const x = parseTime(f.time);
    if (x != null && (t == null || x > t)) t = x;
  }
  return t;
}

function leaseRecord(obj) {
  const m = obj.metadata || {};
  const s = obj.spec || {};
  return {
    key: m.namespace + "/" + m.name,
    ns: m.namespace,
    name: m.name,
    rv: Number(m.resourceVersion),
    holder: s.holderIdentity || "",
    dur: s.leaseDurationSeconds ?? null,
    renew: parseTime(s.renewTime),
    acquire: parseTime(s.acquireTime),
    transitions: s.leaseTransitions ?? 0,
    strategy: s.strategy || "",
    preferred: s.preferredHolder || "",
    created: parseTime(m.creationTimestamp),
    // The server's time of the last write, to the second: managedFields
    // entries are stamped by the server.
    written: writeTime(m),
  };
}

const expiry = (r) => (r.renew != null && r.dur != null ? r.renew + r.dur * 1000 : null);

// leaseStatus: "held" (a holder, renewed within its duration), "expired"
// (a holder, not renewed in time: kube-apiserver's isLeaseExpired), "free"
// (no holder, but held before) or "never" (never held).
function leaseStatus(r, now) {
  if (!r.holder) {
    return r.acquire == null && r.renew == null && !r.transitions ? "never" : "free";
  }
  const exp = expiry(r);
  return exp == null || exp < now ? "expired" : "held";
}

// recordHistory adds one version of a Lease to its holder runs. Versions
// arrive in resourceVersion order per Lease (history replay, then live).
// seenAt is when a live event arrived (server clock), null for replayed ones.
function recordHistory(type, r, seenAt) {
  let h = runsByLease.get(r.key);
  if (!h) {
    h = { runs: [], lastRV: 0, acquire: null, renew: null };
    runsByLease.set(r.key, h);
  }
  if (r.rv <= h.lastRV) return;
  h.lastRV = r.rv;
  const last = h.runs.length ? h.runs[h.runs.length - 1] : null;
  if (type === "DELETED") {
    h.runs.push({ holder: "", deleted: true, from: seenAt ?? r.written ?? (last ? last.from : null), approx: true });
    return;
  }
  if (last && !last.deleted && last.holder === r.holder) {
    if (r.renew != null && (last.lastRenew == null || r.renew > last.lastRenew)) last.lastRenew = r.renew;
    last.dur = r.dur;
    h.acquire = r.acquire;
    h.renew = r.renew;
    return;
  }
  // When did this holder start? acquireTime if this write moved it, else
  // renewTime if it moved, else when the write happened (the live event's
  // arrival, or the server's stamp to the second).
  let from;
  let approx = false;
  if (!last) {
    from = r.acquire ?? r.renew ?? r.written ?? r.created;
    approx = r.acquire == null;
  } else if (r.acquire != null && r.acquire !== h.acquire) {
    from = r.acquire;
  } else if (r.renew != null && r.renew !== h.renew) {
    from = r.renew;
  } else {
    from = seenAt ?? r.written ?? last.from;
    approx = true;
  }
  h.acquire = r.acquire;
  h.renew = r.renew;
  h.runs.push({ holder: r.holder, from, approx, lastRenew: r.holder ? r.renew : null, dur: r.dur, rv: r.rv });
  if (h.runs.length > MAX_RUNS) h.runs.shift();
}

// holderRuns is a Lease's timeline: its recorded runs, plus its current
// version when that is newer than the history (a Lease untouched during the
// history window, or one the replay has not reached yet), each with its end.
function holderRuns(key, now) {
  const h = runsByLease.get(key);
  const r = leases.get(key);
  const runs = h ? h.runs.map((run) => ({ ...run })) : [];
  if (r && (!h || r.rv > h.lastRV)) {
    const last = runs.length ? runs[runs.length - 1] : null;
    if (last && !last.deleted && last.holder === r.holder) {
      if (r.renew != null && (last.lastRenew == null || r.renew > last.lastRenew)) last.lastRenew = r.renew;
      last.dur = r.dur;
    } else {
      runs.push({
        holder: r.holder,
        from: r.acquire ?? r.renew ?? r.written ?? r.created,
        approx: r.acquire == null,
        lastRenew: r.holder ? r.renew : null,
        dur: r.dur,
      });
    }
  }
  return runs.map((run, i) => {
    const next = runs[i + 1];
    const limit = next ? next.from : now;
    let end = limit;
    let lapsed = false;
    if (run.holder) {
      const exp = run.lastRenew != null && run.dur != null ? run.lastRenew + run.dur * 1000 : null;
      if (exp == null || exp < limit) {
        end = exp ?? run.from;
        lapsed = true;
      }
    }
    return { ...run, end: Math.max(end, run.from ?? end), lapsed, current: !next };
  });
}

// ---- LeaseCandidates

const candidates = new Map(); // "namespace/name" -> record
const candidatesByLease = new Map(); // "namespace/leaseName" -> Set of keys

function candidateRecord(obj) {
  const m = obj.metadata || {};
  const s = obj.spec || {};
  return {
    key: m.namespace + "/" + m.name,
    name: m.name,
    lease: m.namespace + "/" + (s.leaseName || ""),
    binaryVersion: s.binaryVersion || "",
    emulationVersion: s.emulationVersion || "",
    strategy: s.strategy || "",
    renewMs: parseTime(s.renewTime),
    pingMs: parseTime(s.pingTime),
    createdMs: parseTime(m.creationTimestamp),
  };
}

function putCandidate(c) {
  dropCandidate(c.key);
  candidates.set(c.key, c);
  let set = candidatesByLease.get(c.lease);
  if (!set) candidatesByLease.set(c.lease, (set = new Set()));
  set.add(c.key);
}

function dropCandidate(key) {
  const old = candidates.get(key);
  if (!old) return;
  candidates.delete(key);
  const set = candidatesByLease.get(old.lease);
  if (set) {
    set.delete(key);
    if (set.size === 0) candidatesByLease.delete(old.lease);
  }
}

// leaseCandidates are a Lease's candidates in list order (by name), as the
// election reads them.
function leaseCandidates(leaseKey) {
  const set = candidatesByLease.get(leaseKey);
  if (!set) return [];
  return [...set].map((k) => candidates.get(k)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// ---- the table: filter, sort, and render only the visible rows

const view = { rows: [], sort: "namespace", dir: 1, stale: true, selected: null, pool: [], first: 0, shown: 0 };

const sorters = {
  namespace: (r) => r.ns,
  name: (r) => r.name,
  holder: (r) => r.holder || "\uffff",
  left: (r) => expiry(r) ?? -Infinity,
  duration: (r) => r.dur ?? -Infinity,
  renew: (r) => r.renew ?? -Infinity,
  acquire: (r) => r.acquire ?? -Infinity,
  transitions: (r) => r.transitions,
};

function rebuildRows(now) {
  const nsf = $("ns-filter").value;
  const stf = $("status-filter").value;
  const text = $("text-filter").value.trim().toLowerCase();
  const out = [];
  for (const r of leases.values()) {
    if (nsf && r.ns !== nsf) continue;
    if (text && !r.key.toLowerCase().includes(text) && !r.holder.toLowerCase().includes(text)) continue;
    if (stf && leaseStatus(r, now) !== stf) continue;
    out.push(r);
  }
  const key = sorters[view.sort];
  const dir = view.dir;
  out.sort((a, b) => {
    const x = key(a);
    const y = key(b);
    if (x < y) return -dir;
    if (x > y) return dir;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
  view.rows = out;
  view.stale = false;
  setText($("count"), out.length === leases.size ? `${leases.size} Leases` : `${out.length} of ${leases.size} Leases`);
  $("empty").hidden = out.length > 0 || !listedOnce;
  setText($("empty"), leases.size ? "No Leases match the filter." : "No Leases.");
  document.documentElement.dataset.leases = String(leases.size);
}

function newRow() {
  const row = el("div", "row");
  row.setAttribute("role", "row");
  const cells = {};
  for (const name of ["ns", "name", "holder", "left", "duration", "renew", "acquire", "transitions"]) {
    const c = el("div", "c " + name);
    c.setAttribute("role", "gridcell");
    if (["left", "duration", "renew", "transitions"].includes(name)) c.classList.add("num");
    row.appendChild(c);
    cells[name] = c;
  }
  cells.holderText = el("span");
  cells.badge = el("span", "badge");
  cells.holder.append(cells.holderText, cells.badge);
  row.cellRefs = cells;
  return row;
}

function fillRow(row, r, now) {
  const c = row.cellRefs;
  row.dataset.key = r.key;
  setText(c.ns, r.ns);
  setText(c.name, r.name);
  c.name.title = r.name;
  setText(c.holderText, r.holder || "—");
  c.holder.title = r.holder;
  setText(c.duration, r.dur != null ? r.dur + "s" : "—");
  setText(c.acquire, fmtTime(r.acquire));
  setText(c.transitions, String(r.transitions));
  fillTimes(row, r, now);
}

const badgeText = { held: "", expired: "expired", free: "released", never: "never held" };

// fillTimes updates what changes with the clock alone.
function fillTimes(row, r, now) {
  const c = row.cellRefs;
  const st = leaseStatus(r, now);
  const exp = expiry(r);
  const cls = "row st-" + st + (r.key === view.selected ? " selected" : "");
  if (row.className !== cls) row.className = cls;
  if (row.dataset.status !== st) {
    row.dataset.status = st;
    setText(c.badge, badgeText[st]);
    c.badge.className = "badge " + st;
    c.badge.hidden = st === "held";
  }
  if (exp != null && r.holder) {
    row.dataset.leftMs = String(Math.round(exp - now));
    setText(c.left, st === "expired" ? "expired" : fmtDur(exp - now));
    c.left.title = (st === "expired" ? "expired at " : "expires at ") + fmtTime(exp, true);
  } else {
    delete row.dataset.leftMs;
    setText(c.left, "—");
    c.left.title = "";
  }
  setText(c.renew, ago(r.renew, now));
  c.renew.title = r.renew != null ? fmtTime(r.renew, true) : "";
}

function visibleRange() {
  const vp = $("viewport");
  const first = Math.max(0, Math.floor(vp.scrollTop / ROW_H) - OVERSCAN);
  const last = Math.min(view.rows.length, Math.ceil((vp.scrollTop + vp.clientHeight) / ROW_H) + OVERSCAN);
  return [first, Math.max(first, last)];
}

function renderTable(now) {
  if (view.stale) rebuildRows(now);
  $("spacer").style.height = view.rows.length * ROW_H + "px";
  const [first, last] = visibleRange();
  const box = $("rows");
  box.style.transform = `translateY(${first * ROW_H}px)`;
  const n = last - first;
  while (view.pool.length < n) view.pool.push(newRow());
  for (let i = 0; i < n; i++) {
    const row = view.pool[i];
    fillRow(row, view.rows[first + i], now);
    if (row.parentNode !== box) box.appendChild(row);
  }
  for (let i = n; i < view.pool.length; i++) {
    if (view.pool[i].parentNode) view.pool[i].remove();
  }
  view.first = first;
  view.shown = n;
}

function tickTable(now) {
  for (let i = 0; i < view.shown; i++) {
    const r = view.rows[view.first + i];
    if (r) fillTimes(view.pool[i], r, now);
  }
}

// ---- the detail panel

const HOLDER_COLORS = 8;

function colorOf(holder) {
  let h = 0;
  for (let i = 0; i < holder.length; i++) h = (h * 31 + holder.charCodeAt(i)) | 0;
  return "h" + (Math.abs(h) % HOLDER_COLORS);
}

function field(dl, name, value, attr) {
  const dt = el("dt", "", name);
  const dd = el("dd", "", value);
  if (attr) dd.dataset.field = attr;
  dl.append(dt, dd);
  return dd;
}

function renderDetail(now) {
  const key = view.selected;
  const panel = $("detail");
  if (!key) {
    panel.hidden = true;
    return;
  }
  panel.hidden = false;
  panel.dataset.key = key;
  const r = leases.get(key);
  setText($("d-title"), key);
  const dl = $("d-fields");
  dl.replaceChildren();
  if (!r) {
    field(dl, "Status", "deleted", "status");
  } else {
    const st = leaseStatus(r, now);
    const exp = expiry(r);
    field(dl, "Holder", r.holder || "—", "holder");
    field(dl, "Status", { held: "held", expired: "expired", free: "released", never: "never held" }[st], "status");
    field(dl, "Time left", r.holder && exp != null ? (st === "expired" ? `expired ${fmtDur(now - exp)} ago` : fmtDur(exp - now)) : "—", "left");
    field(dl, "Lease duration", r.dur != null ? r.dur + "s" : "—");
    field(dl, "Last renewal", r.renew != null ? `${fmtTime(r.renew, true)} (${ago(r.renew, now)})` : "—");
    field(dl, "Acquired", r.acquire != null ? `${fmtTime(r.acquire, true)} (${ago(r.acquire, now)})` : "—");
    field(dl, "Transitions", String(r.transitions));
    if (r.preferred) field(dl, "Preferred holder", r.preferred + " (asked to take over)");
    if (r.strategy) field(dl, "Strategy", r.strategy);
    field(dl, "resourceVersion", String(r.rv));
  }
  renderTimeline(key, now);
  renderCandidates(key, r, now);
}

function renderTimeline(key, now) {
  const runs = holderRuns(key, now);
  const bar = $("d-timeline");
  const list = $("d-history");
  bar.replaceChildren();
  list.replaceChildren();
  if (runs.length === 0) {
    setText($("d-window"), "");
    return;
  }
  // The axis covers the history window, and reaches back before it to
  // the first holder's start by as much as the window is long (at least 5
  // minutes): a run that began earlier is cut at the edge (the list below
  // has its real start).
  const first = runs[0].from ?? now;
  const windowStart = Math.min(replayState.startMs ?? first, now - 10000);
  const reach = Math.max(now - windowStart, 300000);
  const start = Math.min(Math.max(first, windowStart - reach), now - 10000);
  const span = now - start;
  setText($("d-window"), replayState.startMs != null ? `since ${fmtTime(replayState.startMs)}, the node's watch history` : "");
  setText($("d-axis-from"), fmtTime(start));
  setText($("d-axis-to"), "now");
  for (const run of runs) {
    if (!run.holder || run.from == null) continue;
    const a = Math.max(run.from, start);
    const b = Math.max(run.end, a);
    const seg = el("div", "seg " + colorOf(run.holder));
    seg.style.left = ((a - start) / span) * 100 + "%";
    seg.style.width = ((b - a) / span) * 100 + "%";
    seg.title = `${run.holder}: ${fmtTime(run.from, true)} – ${run.current && !run.lapsed ? "now" : fmtTime(run.end, true)}`;
    bar.appendChild(seg);
  }
  for (let i = runs.length - 1; i >= 0; i--) {
    const run = runs[i];
    const next = runs[i + 1];
    if (run.holder && run.lapsed && (!next || next.from > run.end)) {
      // Between a holder's expiry and the next holder, nobody held it.
      const li = el("li", "none");
      li.dataset.holder = "";
      const until = next ? next.from : now;
      li.append(el("span", "swatch"), el("span", "who gap", "expired"),
        el("span", "when", `${fmtTime(run.end, true)} → ${next ? fmtTime(until, true) : "now"} (${fmtDur(until - run.end)})`));
      list.appendChild(li);
    }
    const li = el("li");
    li.dataset.holder = run.holder;
    const sw = el("span", "swatch " + (run.holder ? colorOf(run.holder) : ""));
    const who = el("span", "who" + (run.holder ? "" : " gap"), run.holder || (run.deleted ? "deleted" : "no holder"));
    const to = run.current && !run.lapsed ? "now" : fmtTime(run.end, true);
    const when = el("span", "when", `${run.approx ? "≈" : ""}${fmtTime(run.from, true)} → ${to} (${fmtDur(run.end - run.from)})`);
    li.append(sw, who, when);
    list.appendChild(li);
  }
}

function renderCandidates(key, r, now) {
  const cands = leaseCandidates(key);
  const body = $("d-candidates").querySelector("tbody");
  body.replaceChildren();
  $("d-candidates").hidden = cands.length === 0;
  $("d-no-candidates").hidden = cands.length > 0;
  const d = decide(cands, now);
  const pick = d.pick ? d.pick.name : "";
  $("d-election").dataset.pick = pick;
  let summary = "";
  if (d.error) summary = "conflict: " + d.error;
  else if (pick) summary = (r && r.holder === pick ? `${d.strategy} picks ${pick}, the holder` : `${d.strategy} would pick ${pick}`);
  else if (cands.length) summary = d.reason;
  setText($("d-election"), summary);
  for (const c of cands) {
    const state = candidateState(c, now);
    const tr = el("tr", state + (c.name === pick ? " pick" : ""));
    tr.dataset.candidate = c.name;
    tr.dataset.state = state;
    tr.title = `${c.name}: strategy ${c.strategy || "none"}`;
    tr.append(
      el("td", "star", c.name === pick ? "★" : ""),
      el("td", "", c.name),
      el("td", "", c.binaryVersion || "—"),
      el("td", "", c.emulationVersion || "—"),
      el("td", "", ago(c.renewMs, now)),
      el("td", "", ago(c.pingMs, now)),
      el("td", "", state),
    );
    if (c.name === pick) tr.title += "; the coordinated election picks this candidate";
    body.appendChild(tr);
  }
}

function select(key) {
  view.selected = key;
  if (key) window.history.replaceState(null, "", "#lease=" + encodeURIComponent(key));
  else window.history.replaceState(null, "", location.pathname + location.search);
  scheduleRender();
}

// ---- the cluster

let membersSupported = true;
let membersCheckedAt = 0;

async function readyz() {
  try {
    const resp = await request("/readyz");
    const text = (await resp.text()).trim();
    return { ready: resp.ok, why: resp.ok ? "" : text };
  } catch (e) {
    return { ready: false, why: e.message };
  }
}

async function members() {
  if (!membersSupported && Date.now() - membersCheckedAt < 30000) return null;
  membersCheckedAt = Date.now();
  const resp = await request("/cluster/members");
  if (resp.status === 404 || resp.status === 403) {
    // An older node, or a user who may not list members: use
    // /cluster/status alone, and ask again now and then.
    membersSupported = false;
    return null;
  }
  if (!resp.ok) throw await apiError(resp);
  membersSupported = true;
  return resp.json();
}

async function pollCluster() {
  let unreachable = false;
  for (;;) {
    const [status, mem, ready] = await Promise.all([
      getJSON("/cluster/status").catch((e) => e),
      members().catch((e) => e),
      readyz(),
    ]);
    // fetch fails with a TypeError when the node cannot be reached at all;
    // once it answers again, the streams need not wait out their pauses.
    if (status instanceof TypeError) Reflector.restartAll();
    else if (unreachable) Reflector.wakeAll();
    unreachable = status instanceof TypeError;
    renderCluster(status, mem, ready);
    // Irregular spacing samples the server's clock at different points of
    // its second, which narrows the offset.
    await sleep(2000 + Math.random() * 1000);
  }
}

function cell(tr, text, cls) {
  const td = el("td", cls || "", text == null || text === "" ? "—" : String(text));
  tr.appendChild(td);
  return td;
}

function renderCluster(status, mem, ready) {
  const body = $("members").querySelector("tbody");
  const note = $("cluster-note");
  const section = $("cluster");
  body.replaceChildren();
  $("members").classList.toggle("status-only", !(mem && !(mem instanceof Error) && Array.isArray(mem.members)));
  if (status instanceof Error) {
    setText($("cluster-summary"), "");
    setText(note, status instanceof APIError && status.status === 403 ? "Not allowed to read /cluster/status: " + status.message : "Cluster status unavailable: " + status.message);
    section.dataset.source = "none";
    return;
  }
  const useMembers = mem && !(mem instanceof Error) && Array.isArray(mem.members);
  section.dataset.source = useMembers ? "members" : "status";
  const leader = status.leader ? status.leader.name : "";
  section.dataset.leader = leader;
  section.dataset.term = String(status.term);
  setText(
    $("node-summary"),
    `node ${status.name} (${status.state})` + (leader ? ` · leader ${leader}` : " · no leader") + ` · term ${status.term}`,
  );
  setText(
    $("cluster-summary"),
    `${leader ? "leader " + leader : "no leader"} · term ${status.term} · this node ${status.name}: ${ready.ready ? "ready" : "not ready"}`,
  );
  const rows = useMembers ? mem.members : status.members;
  for (const m of rows) {
    const self = m.name === status.name;
    const tr = el("tr", self ? "this" : "");
    tr.dataset.member = m.name;
    const state = useMembers ? m.state : self ? status.state : m.name === leader ? "leader" : "";
    tr.dataset.state = state || "";
    cell(tr, m.name, m.name === leader ? "leader" : "");
    cell(tr, m.peerAddr);
    cell(tr, m.apiURL, "m-only");
    cell(tr, m.suffrage);
    cell(tr, state, state === "unreachable" ? "unreachable" : "");
    cell(tr, self ? status.term : useMembers && m.term ? m.term : m.name === leader ? status.term : "");
    cell(tr, self ? status.commitIndex : useMembers && m.term ? m.commitIndex : "");
    cell(tr, self ? status.appliedIndex : m.applied);
    cell(tr, m.behind, "m-only");
    cell(tr, m.lastContact, "m-only");
    let readyText = "";
    let why = "";
    let bad = false;
    if (self) {
      readyText = ready.ready ? "ready" : "not ready";
      why = ready.why;
      bad = !ready.ready;
    } else if (useMembers) {
      bad = state === "unreachable" || m.healthy === false;
      readyText = state === "unreachable" ? "unreachable" : m.healthy === false ? "unhealthy" : "healthy";
      why = m.error || "";
    }
    const rc = cell(tr, readyText, bad ? "notready" : "");
    if (why) rc.title = why;
    tr.dataset.ready = self ? String(ready.ready) : "";
    body.appendChild(tr);
  }
  setText(
    note,
    useMembers
      ? ""
      : "Commit and applied index and readiness are this node's; the other members' need /cluster/members.",
  );
}

// ---- wiring

let listedOnce = false;
let renderQueued = false;
let dirtyTimer = 0;

// scheduleRender redraws at the next frame; changes from the watch are
// batched for a moment first, so a burst costs one sort.
function scheduleRender(batch) {
  if (batch) {
    view.stale = true;
    if (!dirtyTimer) dirtyTimer = setTimeout(() => ((dirtyTimer = 0), scheduleRender()), 50);
    return;
  }
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    const now = clock.now();
    fillNamespaces();
    renderTable(now);
    renderDetail(now);
  });
}

let namespacesChanged = false;

function rememberNamespace(ns) {
  if (namespaces.has(ns)) return;
  namespaces.add(ns);
  namespacesChanged = true;
}

// fillNamespaces refreshes the namespace filter's choices, once per render.
function fillNamespaces() {
  if (!namespacesChanged) return;
  namespacesChanged = false;
  const sel = $("ns-filter");
  const opts = [...namespaces].sort();
  const keep = sel.value;
  sel.replaceChildren(el("option", "", "all"));
  sel.firstChild.value = "";
  for (const n of opts) {
    const o = el("option", "", n);
    o.value = n;
    sel.appendChild(o);
  }
  sel.value = keep;
}

function setConn(state, err) {
  const conn = $("conn");
  conn.dataset.state = state;
  const text = {
    connecting: "connecting",
    listing: "loading",
    live: "live",
    retrying: "reconnecting",
    forbidden: "forbidden",
  }[state];
  setText(conn, text || state);
  conn.title = err ? err.message : "";
  const banner = $("banner");
  if (state === "forbidden" && err) {
    banner.hidden = false;
    setText($("banner-text"), err.message);
    $("scope-form").hidden = !!scopeNs;
  } else if (state === "live" || state === "listing") {
    banner.hidden = true;
  }
}

function startLeases() {
  new Reflector(LEASES, {
    replay: true,
    onPage(items) {
      // Pages are shown as they come; a Lease is never older in a list
      // than in the page (the list's version is newer than anything shown).
      for (const obj of items) {
        const r = leaseRecord(obj);
        r.listed = listGeneration;
        leases.set(r.key, r);
        rememberNamespace(r.ns);
        // After the history replay, a relist's versions extend the runs.
        if (replayState.done) recordHistory("MODIFIED", r, null);
      }
      listedOnce = true;
      view.stale = true;
      scheduleRender();
    },
    onReset(rv) {
      // What the list did not hold is gone.
      for (const [k, r] of leases) if (r.listed !== listGeneration) leases.delete(k);
      listGeneration++;
      view.stale = true;
      scheduleRender();
      document.documentElement.dataset.listRv = String(rv);
    },
    onEvent(type, obj, live) {
      const r = leaseRecord(obj);
      if (!live) {
        // Before the list: history only.
        if (r.written != null && (replayState.startMs == null || r.written < replayState.startMs)) replayState.startMs = r.written;
        recordHistory(type, r, null);
        if (r.key === view.selected) scheduleRender();
        return;
      }
      recordHistory(type, r, clock.now());
      if (type === "DELETED") leases.delete(r.key);
      else {
        leases.set(r.key, r);
        rememberNamespace(r.ns);
      }
      scheduleRender(true);
    },
    onReplay(st) {
      replayState.done = st.done;
      document.documentElement.dataset.historyFrom = String(st.from);
      document.documentElement.dataset.historyDone = String(st.done);
      setText(
        $("history-note"),
        st.done
          ? replayState.startMs != null
            ? `history since ${fmtTime(replayState.startMs)}`
            : `history from resourceVersion ${st.from}`
          : "replaying the watch history…",
      );
      if (st.done) scheduleRender();
    },
    onState(state, err) {
      setConn(state, err);
    },
  }).run();
}

function startCandidates() {
  let generation = 0;
  new Reflector(CANDIDATES, {
    replay: false,
    onPage(items) {
      for (const obj of items) {
        const c = candidateRecord(obj);
        c.listed = generation;
        putCandidate(c);
      }
      scheduleRender();
    },
    onReset() {
      for (const [k, c] of candidates) if (c.listed !== generation) dropCandidate(k);
      generation++;
      scheduleRender();
    },
    onEvent(type, obj) {
      const c = candidateRecord(obj);
      if (type === "DELETED") dropCandidate(c.key);
      else putCandidate(c);
      if (c.lease === view.selected) scheduleRender();
    },
    onState(state, err) {
      // Candidates are optional: a user may not be allowed to read them.
      $("d-no-candidates").textContent =
        state === "forbidden" && err ? "LeaseCandidates: " + err.message : "No LeaseCandidates name this Lease.";
    },
  }).run();
}

// probeClock takes a few quick samples at the start, spread over a second,
// so the offset is good to a fraction of a second from the outset.
async function probeClock() {
  for (let i = 0; i < 6; i++) {
    try {
      const resp = await request("/readyz");
      await resp.text();
    } catch {
      // the cluster panel will say what is wrong
    }
    await sleep(170);
  }
}

function renderClock() {
  const c = $("clock");
  if (!clock.known) return;
  const off = clock.offset;
  const unc = clock.uncertainty;
  const skewed = Math.abs(off) > Math.max(1000, unc);
  c.classList.toggle("skewed", skewed);
  setText(
    c,
    skewed
      ? `server clock: this browser is ${fmtDur(Math.abs(off))} ${off < 0 ? "ahead" : "behind"}; times are the server's`
      : `server clock: in step (±${unc < 1000 ? Math.round(unc) + " ms" : fmtDur(unc)})`,
  );
}

function wire() {
  $("viewport").addEventListener("scroll", () => scheduleRender(), { passive: true });
  window.addEventListener("resize", () => scheduleRender());
  for (const id of ["ns-filter", "status-filter", "text-filter"]) {
    $(id).addEventListener("input", () => {
      view.stale = true;
      $("viewport").scrollTop = 0;
      scheduleRender();
    });
  }
  for (const h of document.querySelectorAll(".row.head .c")) {
    h.addEventListener("click", () => {
      const key = h.dataset.sort;
      view.dir = view.sort === key ? -view.dir : 1;
      view.sort = key;
      for (const o of document.querySelectorAll(".row.head .c")) delete o.dataset.dir;
      h.dataset.dir = view.dir > 0 ? "asc" : "desc";
      view.stale = true;
      scheduleRender();
    });
  }
  document.querySelector('.row.head .c[data-sort="namespace"]').dataset.dir = "asc";
  $("rows").addEventListener("click", (e) => {
    const row = e.target.closest(".row");
    if (row && row.dataset.key) select(row.dataset.key);
  });
  $("d-close").addEventListener("click", () => select(null));
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const t = $("token").value.trim();
    if (!t) return;
    $("token").value = "";
    auth.set(t);
  });
  $("logout").addEventListener("click", () => {
    auth.forget();
    location.reload();
  });
  $("logout").hidden = !auth.token;
  $("scope-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const ns = $("scope-ns").value.trim();
    if (ns) rescope(ns);
  });
  const m = /^#lease=(.+)$/.exec(location.hash);
  if (m) view.selected = decodeURIComponent(m[1]);
  if (scopeNs) document.title = `Leases in ${scopeNs} · leasehold`;
}

// rescope shows one namespace from now on. It changes the page in place,
// URL included (?namespace=), rather than loading it again: a reload would
// forget the token.
function rescope(ns) {
  scopeNs = ns;
  window.history.replaceState(null, "", "?namespace=" + encodeURIComponent(ns) + location.hash);
  document.title = `Leases in ${ns} · leasehold`;
  $("scope-form").hidden = true;
  Reflector.relistAll();
}

// One timer moves every clock-dependent figure, for the visible rows only;
// the detail panel redraws once a second.
function startTicking() {
  let lastDetail = 0;
  let lastFilter = 0;
  setInterval(() => {
    const now = clock.now();
    if ($("status-filter").value && Date.now() - lastFilter > 1000) {
      // A status filter changes with time: held Leases expire.
      lastFilter = Date.now();
      view.stale = true;
      scheduleRender();
    }
    tickTable(now);
    if (Date.now() - lastDetail >= 1000) {
      lastDetail = Date.now();
      renderDetail(now);
      renderClock();
    }
  }, 200);
}

wire();
startLeases();
startCandidates();
pollCluster();
probeClock();
startTicking();
