// The coordinated leader election's choice among a Lease's candidates, as
// the lease view shows it.
//
// This mirrors election/strategy.go (parseTolerant, compareVersions,
// compareCandidates, pickOldestEmulationVersion and
// resolveHighestBinaryVersion) and the candidate filters of
// election/controller.go (reconcile: admissible, then responsive), with the
// controller's default GCAge and PingWindow. Change them together; the ui
// package's tests hold this file to the running controller's decisions.

export const OLDEST_EMULATION_VERSION = "OldestEmulationVersion";
export const GC_AGE_MS = 30 * 60 * 1000;
export const PING_WINDOW_MS = 5 * 1000;

const MAX_UINT64 = (1n << 64n) - 1n;

// parseUint is Go's strconv.ParseUint(s, 10, 64): digits only, no sign,
// at most 2^64-1. It returns a BigInt, or null.
function parseUint(s) {
  if (!/^[0-9]+$/.test(s)) return null;
  const n = BigInt(s);
  return n > MAX_UINT64 ? null : n;
}

const versionRE = /^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$/;
const extraRE = /^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$/;

// parseSemantic is k8s.io/apimachinery's version.ParseSemantic: exactly
// three numeric parts without leading zeros, then an optional pre-release
// and build metadata. It returns {parts, pre, build} or null.
function parseSemantic(str) {
  const m = versionRE.exec(str);
  if (!m) return null;
  const comps = m[1].split(".");
  if (comps.length !== 3) return null;
  const parts = [];
  for (const c of comps) {
    if (c.startsWith("0") && c !== "0") return null;
    const n = parseUint(c);
    if (n === null) return null;
    parts.push(n);
  }
  let pre = "";
  let build = "";
  if (m[2] !== "") {
    const x = extraRE.exec(m[2]);
    if (!x) return null;
    pre = x[1] || "";
    build = x[2] || "";
    for (const c of pre.split(".")) {
      if (parseUint(c) !== null && c.startsWith("0") && c !== "0") return null;
    }
  }
  return { parts, pre, build };
}

// versionString is a parsed version as version.Version's String writes it.
export function versionString(v) {
  return v.parts.join(".") + (v.pre ? "-" + v.pre : "") + (v.build ? "+" + v.build : "");
}

function trimZeros(p) {
  if (p.length <= 1) return p;
  let t = p.replace(/^0+/, "");
  if (t === "" || t[0] < "0" || t[0] > "9") t = "0" + t;
  return t;
}

// parseTolerant is blang/semver's ParseTolerant as election/strategy.go
// implements it: surrounding space and a leading "v" dropped, leading zeros
// dropped, fewer than three parts padded with zeros unless the last one
// carries pre-release or build metadata. null when it does not parse.
export function parseTolerant(s) {
  if (typeof s !== "string") return null;
  s = s.trim();
  if (s.startsWith("v")) s = s.slice(1);
  // strings.SplitN(s, ".", 3): the third part keeps its dots.
  const parts = [];
  let rest = s;
  while (parts.length < 2) {
    const i = rest.indexOf(".");
    if (i < 0) break;
    parts.push(rest.slice(0, i));
    rest = rest.slice(i + 1);
  }
  parts.push(rest);
  if (parts.length < 3) {
    if (/[+-]/.test(parts[parts.length - 1])) return null;
    while (parts.length < 3) parts.push("0");
  }
  return parseSemantic(parts.map(trimZeros).join("."));
}

const ZERO = { parts: [0n, 0n, 0n], pre: "", build: "" };

function parseOrZero(s) {
  return parseTolerant(s) || ZERO;
}

// compareVersions orders by semver precedence as version.Version does; null
// sorts first.
export function compareVersions(a, b) {
  if (a === null && b === null) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  for (let i = 0; i < 3; i++) {
    if (a.parts[i] < b.parts[i]) return -1;
    if (a.parts[i] > b.parts[i]) return 1;
  }
  if (a.pre === b.pre) return 0;
  if (a.pre === "") return 1;
  if (b.pre === "") return -1;
  const ap = a.pre.split(".");
  const bp = b.pre.split(".");
  for (let i = 0; i < ap.length && i < bp.length; i++) {
    const an = parseUint(ap[i]);
    const bn = an === null ? null : parseUint(bp[i]);
    if (an !== null && bn !== null) {
      if (an < bn) return -1;
      if (an > bn) return 1;
      continue;
    }
    if (ap[i] < bp[i]) return -1;
    if (ap[i] > bp[i]) return 1;
  }
  if (ap.length < bp.length) return -1;
  if (ap.length > bp.length) return 1;
  return 0;
}

// compareCandidates is negative when a is the better leader: lower
// emulationVersion, then lower binaryVersion, then older creationTimestamp
// (whole seconds); on a full tie a, the one listed first, wins.
export function compareCandidates(a, b) {
  let c = compareVersions(parseOrZero(a.emulationVersion), parseOrZero(b.emulationVersion));
  if (c !== 0) return c;
  c = compareVersions(parseOrZero(a.binaryVersion), parseOrZero(b.binaryVersion));
  if (c !== 0) return c;
  return a.createdMs > b.createdMs ? 1 : -1;
}

// validVersions: both versions parse, or the candidate cannot be picked.
export function validVersions(c) {
  return parseTolerant(c.emulationVersion) !== null && parseTolerant(c.binaryVersion) !== null;
}

// pickOldestEmulationVersion returns the best leader among cands, which
// must be in list order (by name), or null.
export function pickOldestEmulationVersion(cands) {
  let best = null;
  for (const c of cands) {
    if (!validVersions(c)) continue;
    if (best === null || compareCandidates(best, c) > 0) best = c;
  }
  return best;
}

// resolveStrategy is the v1beta1 rule: the strategy of the highest
// binaryVersion (unparsable counts as 0.0.0); different strategies at that
// version are a conflict. {strategy} or {error}.
export function resolveStrategy(cands) {
  let best = null;
  let winners = [];
  for (const c of cands) {
    if (!c.strategy) continue;
    const v = parseOrZero(c.binaryVersion);
    const cmp = compareVersions(v, best);
    if (best === null || cmp > 0) {
      best = v;
      winners = [c];
    } else if (cmp === 0) {
      winners.push(c);
    }
  }
  if (winners.length === 0) return { error: "no candidate states a strategy" };
  for (const w of winners.slice(1)) {
    if (w.strategy !== winners[0].strategy) {
      return { error: `conflicting strategies: candidates "${winners[0].name}" and "${w.name}" have the same binaryVersion but ask for "${winners[0].strategy}" and "${w.strategy}"` };
    }
  }
  return { strategy: winners[0].strategy };
}

// unansweredPing is the time of a ping the candidate has not answered
// (renewTime not after pingTime), or null.
function unansweredPing(c) {
  if (c.pingMs == null) return null;
  if (c.renewMs != null && c.renewMs > c.pingMs) return null;
  return c.pingMs;
}

// candidateState says how the election sees one candidate at now:
// "stale" (not renewed within GCAge: ignored, and soon deleted), "ignored"
// (left a ping unanswered for PingWindow), "invalid" (a version does not
// parse), or "eligible".
export function candidateState(c, now) {
  if (c.renewMs == null || !(c.renewMs > now - GC_AGE_MS)) return "stale";
  const p = unansweredPing(c);
  if (p !== null && p + PING_WINDOW_MS <= now) return "ignored";
  if (!validVersions(c)) return "invalid";
  return "eligible";
}

// decide is what the coordinated election makes of a Lease's candidates
// (cands in list order, by name) at now: {strategy, pick, reason, error}.
// pick is null when leasehold's controller would elect nobody.
export function decide(cands, now) {
  const admissible = cands.filter((c) => candidateState(c, now) !== "stale");
  if (admissible.length === 0) {
    return { pick: null, reason: cands.length ? "no candidate renewed within 30m" : "no candidates" };
  }
  const s = resolveStrategy(admissible);
  if (s.error) return { pick: null, error: s.error };
  if (s.strategy !== OLDEST_EMULATION_VERSION) {
    return { strategy: s.strategy, pick: null, reason: `strategy ${s.strategy} is left to another controller` };
  }
  const responsive = admissible.filter((c) => candidateState(c, now) !== "ignored");
  const pick = pickOldestEmulationVersion(responsive);
  if (pick === null) {
    return { strategy: s.strategy, pick: null, reason: "no responsive candidate has a valid binaryVersion and emulationVersion" };
  }
  return { strategy: s.strategy, pick };
}

// parseTime reads an RFC 3339 time (metav1.Time, or MicroTime with its
// microseconds) as milliseconds since the epoch, keeping the fraction;
// null when absent or malformed.
export function parseTime(s) {
  if (typeof s !== "string") return null;
  const m = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$/.exec(s);
  if (!m) return null;
  let ms = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  if (m[7]) ms += Number("0." + m[7]) * 1000;
  if (m[8] !== "Z" && m[8] !== "z") {
    const sign = m[8][0] === "-" ? -1 : 1;
    ms -= sign * (Number(m[8].slice(1, 3)) * 60 + Number(m[8].slice(4, 6))) * 60000;
  }
  return ms;
}
