/*
 * The console Memory panel (seed: "Console Memory panel").
 *
 * A small, dependency-free script: it calls the gateway's JSON-RPC endpoint
 * (POST ../rpc) with the bearer token entered once per browser session and
 * kept in sessionStorage, and reads the live timeline from GET ../events.
 * Every value is rendered with textContent / DOM nodes, never as HTML.
 */
"use strict";

(function () {
  const TOKEN_KEY = "meta-memory-console-token";
  const RPC_URL = new URL("../rpc", window.location.href).toString();
  const EVENTS_URL = new URL("../events", window.location.href).toString();
  const CURSORS_KEY = "meta-memory-console-cursors";
  const TIMELINE_MAX = 200;
  const PANEL = "meta/memory/panel/";
  const QUARANTINE_PAGE = 50;
  const PER_PAGE = 50;  // the records listing's page size when the address names none
  const MAX_PER_PAGE = 200;  // the largest page meta/memory/panel/records serves
  const RETRY_MS = 3000;
  const RATIONALE_BYTES = 400;  // a review rationale's cap, in UTF-8 bytes (limits.MAX_REASON_BYTES)
  /* How long the page waits for the gateway: a request (or the opening of the event stream) with no
   * answer after REQUEST_TIMEOUT_MS counts as the gateway being out of reach, like a refused
   * connection; an open event stream that carries nothing, not even the gateway's keep-alive comment
   * (sent every EVENTS_KEEPALIVE_MS on an idle stream), for STREAM_STALL_MS is reopened. A browser
   * session may set shorter values under TIMEOUTS_KEY ({"request_ms": …, "stall_ms": …}, each at
   * least MIN_TIMEOUT_MS), as the tests of an unresponsive gateway do. */
  const REQUEST_TIMEOUT_MS = 15000;
  const EVENTS_KEEPALIVE_MS = 15000;
  const STREAM_STALL_MS = 2 * EVENTS_KEEPALIVE_MS + 5000;
  const MIN_TIMEOUT_MS = 500;
  const TIMEOUTS_KEY = "meta-memory-console-timeouts";

  /** The waits of this browser session: the defaults above, or shorter ones from sessionStorage. */
  function timeouts() {
    let set = {};
    try {
      set = JSON.parse(sessionStorage.getItem(TIMEOUTS_KEY) || "{}") || {};
    } catch (e) { /* no storage, or not JSON: the defaults */ }
    const pick = (value, fallback) => Number.isInteger(value) && value >= MIN_TIMEOUT_MS && value <= fallback ? value : fallback;
    return { request: pick(set.request_ms, REQUEST_TIMEOUT_MS), stall: pick(set.stall_ms, STREAM_STALL_MS) };
  }

  const state = {
    token: null,
    anonymous: false,
    methods: [],
    records: { filters: {}, page: 0, cursor: null, next: null, realms: [] },
    retry: null,
    offline: false,
    lastGood: {},
    view: null,
    timeline: { lastId: null, controller: null, retry: null },
    seq: 0,
  };

  // ------------------------------------------------------------------ user text

  /* Characters that change how text reads without being seen: C0/C1 controls (tab and newlines
   * excepted), the line and paragraph separators, and every invisible character of the product's one
   * definition (meta_memory.textfold.is_invisible): format characters (bidirectional embeddings,
   * overrides, isolates and marks, zero-width characters, the soft hyphen, tag characters, interlinear
   * and musical format controls), default-ignorable code points (variation selectors, the combining
   * grapheme joiner, Hangul fillers) and the braille blank. The page shows each one as a visible
   * escape (⟨U+202E⟩), so the reviewer reads the same characters the model is given. */
  const INVISIBLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u2800\u{16FE4}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

  const SELECTOR = /^[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]$/u;
  const HIDDEN_ONE = new RegExp("^" + INVISIBLE.source + "$", "u");

  /** Whether the invisible character at ``index`` of ``text`` is one variation selector right after a
   *  visible character and not followed by another (the emoji presentation a write accepts, as in the
   *  heart emoji): shown as it is, since it only picks how that character looks. Runs are escaped. */
  function shownSelector(text, index, ch) {
    if (!SELECTOR.test(ch) || index === 0) return false;
    const before = String.fromCodePoint(text.codePointAt(index - 1) >= 0xDC00 && text.codePointAt(index - 1) <= 0xDFFF && index >= 2
      ? text.codePointAt(index - 2) : text.codePointAt(index - 1));
    const next = text.codePointAt(index + ch.length);
    return !HIDDEN_ONE.test(before) && !(next !== undefined && SELECTOR.test(String.fromCodePoint(next)));
  }

  function codePoint(ch) {
    return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  }

  /** ``value`` as a plain string with every invisible character written as its escape (for attributes). */
  function visibleString(value) {
    const text = value === null || value === undefined ? "" : String(value);
    return text.replace(INVISIBLE, (ch, index) => shownSelector(text, index, ch) ? ch : `⟨${codePoint(ch)}⟩`);
  }

  /** The alphabets whose letters look alike (``a`` and Cyrillic ``а``): a word mixing two of them is
   *  how a look-alike name is spelled (``maіn`` with a Cyrillic ``і``). Their code points come from
   *  lookalike_scripts.js, generated from the product's one table of them
   *  (meta_memory.mixed_script.LOOKALIKE_SCRIPTS, which the command line marks by too). */
  const hex = (cp) => "\\u{" + cp.toString(16) + "}";
  const CONFUSABLE_SCRIPTS = LOOKALIKE_SCRIPTS.map(([name, ranges]) =>
    [name, new RegExp("[" + ranges.map(([lo, hi]) => lo === hi ? hex(lo) : hex(lo) + "-" + hex(hi)).join("") + "]", "u")]);
  /** A word: a run of letters, marks and digits (the product's rule: mixed_script.mixed_script_words). */
  const WORD = /[\p{L}\p{M}\p{N}]+/gu;

  /** The confusable scripts a word mixes (two or more), else null. */
  function mixedScripts(word) {
    const found = CONFUSABLE_SCRIPTS.filter(([, re]) => re.test(word)).map(([name]) => name);
    return found.length > 1 ? found : null;
  }

  /** Why the name ``name`` (an identity, realm, scope, mob or session key, judged whole, separators and
   *  all) may imitate another, or null: the product's rule (mixed_script.name_mark). Its letters come from
   *  two or more look-alike alphabets (``а-team:lead``), and/or it reads as another, all-ASCII name
   *  (``lead:ѕео``, ``lead:maın``, ``ⅼead:main``: each letter of LOOKALIKE_READS_AS, generated from the
   *  product's table, read as the ASCII letter it imitates, any other character in NFKC and read so). */
  function nameMark(name) {
    if (!/[^\x00-\x7f]/.test(name)) return null;
    const scripts = mixedScripts(name);
    const read = (ch) => LOOKALIKE_READS_AS[ch] || Array.from(ch.normalize("NFKC"), (c) => LOOKALIKE_READS_AS[c] || c).join("");
    const shown = Array.from(name, read).join("");
    const reads = shown !== name && !/[^\x00-\x7f]/.test(shown) ? shown : null;
    const parts = [...(scripts ? [`mixes ${scripts.join(" and ")} letters`] : []), ...(reads ? [`reads as ${reads}`] : [])];
    return parts.length ? parts.join(", ") : null;
  }

  /** A name (identity, realm, scope key, mob, session key) as :func:`userText` shows text, marked whole
   *  when it may imitate another name (:func:`nameMark`), its title saying why. */
  function nameText(value, attrs) {
    const text = value === null || value === undefined ? "" : String(value);
    const why = nameMark(text);
    if (!why) return userText(text, attrs);
    const span = el("span", { class: "user-text", dir: "auto", ...(attrs || {}) });
    span.append(el("span", { class: "mixed-script name-mark", title: `${why}: it may imitate another name` }, visibleString(text)));
    return span;
  }

  /** A name that may be absent (a session key): :func:`nameText`, or a dash. */
  function optName(value) {
    return value ? nameText(value) : "—";
  }

  /** Append ``text`` to ``span``, each word that mixes confusable scripts marked (styled, and its
   *  title naming the scripts), so a reviewer sees a look-alike of another name for what it is. */
  function appendMarked(span, text) {
    if (!/[^\x00-\x7f]/.test(text)) { span.append(text); return; }
    let last = 0;
    for (const m of text.matchAll(WORD)) {
      const scripts = mixedScripts(m[0]);
      if (!scripts) continue;
      if (m.index > last) span.append(text.slice(last, m.index));
      span.append(el("span", { class: "mixed-script", title: `mixes ${scripts.join(" and ")} letters: it may imitate another word` }, m[0]));
      last = m.index + m[0].length;
    }
    if (last < text.length) span.append(text.slice(last));
  }

  /** User text (a title, body, tag, identity...) as an isolated span (``dir=auto``): its own direction,
   *  never reordering what stands beside it; each invisible character is a visible, styled escape and
   *  each word mixing look-alike alphabets is marked. */
  function userText(value, attrs) {
    const text = value === null || value === undefined ? "" : String(value);
    const span = el("span", { class: "user-text", dir: "auto", ...(attrs || {}) });
    let last = 0;
    for (const m of text.matchAll(INVISIBLE)) {
      if (shownSelector(text, m.index, m[0])) continue;
      if (m.index > last) appendMarked(span, text.slice(last, m.index));
      const code = codePoint(m[0]);
      span.append(el("span", { class: "invisible-char", title: `invisible character ${code}` }, `⟨${code}⟩`));
      last = m.index + m[0].length;
    }
    if (last < text.length) appendMarked(span, text.slice(last));
    return span;
  }

  // ------------------------------------------------------------------ DOM helpers

  const $ = (id) => document.getElementById(id);

  /** Build an element; children may be strings (text nodes) or nodes; attrs never take HTML. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function fmtTime(ms) {
    if (typeof ms !== "number") return "—";
    return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + "Z";
  }

  /** A time in a table cell: the date and the clock time, each kept whole, may go on two lines when the
   *  column is short of room (one line otherwise); the full instant is the element's datetime. */
  function timeCell(ms) {
    const text = fmtTime(ms);
    if (typeof ms !== "number") return text;
    const [day, clock] = text.split(" ");
    return el("time", { datetime: new Date(ms).toISOString(), class: "when" },
      el("span", { class: "nowrap" }, day), " ", el("span", { class: "nowrap" }, clock));
  }

  /** An integer with thousands separators: 4000 -> "4,000". */
  function fmtCount(n) {
    return Number(n).toLocaleString("en-US");
  }

  /** A byte count in binary units, exact when it is a whole number of them: 33554432 -> "32 MiB". */
  function fmtBytes(n) {
    const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let value = Number(n);
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    const shown = Number.isInteger(value) ? String(value) : value.toFixed(1);
    return unit === 0 ? `${fmtCount(n)} bytes` : `${shown} ${units[unit]}`;
  }

  function fmtScope(scope) {
    if (!scope || typeof scope !== "object") return "—";
    const kind = scope.scope;
    // a span that may wrap anywhere: a long identity or mob never widens its table
    return el("span", { class: "wrap" }, kind === "realm" ? "realm" : [`${kind}:`, nameText(scope[kind])]);
  }

  /** A listing's scope cell: the scope and, below it, the realm it lives in (an identity may hold
   *  records in several realms, and the listing spans them all). */
  function fmtScopeIn(scope) {
    const cell = fmtScope(scope);
    if (!scope || typeof scope !== "object" || !scope.realm) return cell;
    return el("span", { class: "scope-cell" }, cell, el("span", { class: "wrap realm-of muted" }, "in ", nameText(scope.realm)));
  }

  /** A record's status as text (shown as text, or as a tooltip): a quarantine reason names tools, MCP
   *  servers and agents the outside chose, so its invisible and bidirectional characters are escapes. */
  function fmtStatus(status) {
    if (!status || typeof status !== "object") return visibleString(status);
    if (status.status === "superseded") return `superseded by ${visibleString(status.by)}`;
    if (status.status === "quarantined") return `quarantined (${visibleString(status.reason)})`;
    return visibleString(status.status);
  }

  function table(caption, headers, rows, emptyText) {
    const t = el("table", {},
      el("caption", { text: caption }),
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col", text: h })))));
    const body = el("tbody");
    if (!rows.length) {
      body.append(el("tr", {}, el("td", { colspan: headers.length, class: "muted", text: emptyText || "Nothing to show." })));
    }
    for (const cells of rows) {
      body.append(el("tr", {}, cells.map((c) => el("td", {}, typeof c === "string" ? userText(c) : c))));
    }
    t.append(body);
    return el("div", { class: "table-wrap" }, t);
  }

  /** A link to one record's detail; a title label is clamped to two lines (full text in the tooltip). */
  function recordLink(id, realm, label) {
    const href = `#record/${encodeURIComponent(realm || "")}/${encodeURIComponent(id)}`;
    if (!label) return el("a", { href, class: "record-link" }, id);
    return el("a", { href, class: "record-link title-clamp", title: visibleString(label) }, userText(label));
  }

  /** An id that never wraps the table: truncated, full id in the tooltip and the text, plus a copy button. */
  function idCell(id) {
    const code = el("code", { class: "id", title: id }, id);
    const button = el("button", { type: "button", class: "copy", "aria-label": `Copy id ${id}`, title: "Copy id" }, "Copy");
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(id);
        button.textContent = "Copied";
      } catch (e) {
        // No clipboard access: select the id so the user can copy it by hand.
        const range = document.createRange();
        range.selectNodeContents(code);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        button.textContent = "Selected";
      }
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    });
    return el("span", { class: "id-cell" }, code, button);
  }

  function setNotice(text) { $("notice").textContent = text || ""; }

  /** The notice of a listing of every realm that left realms out (``skipped_realms``): null when none was. */
  function skippedNotice(...results) {
    const seen = new Map();
    for (const r of results) for (const s of (r && r.skipped_realms) || []) if (!seen.has(s.realm)) seen.set(s.realm, s);
    if (!seen.size) return null;
    const items = [...seen.values()].map((s) => el("li", {}, "realm “", nameText(s.realm, { class: "user-text realm" }),
      `” (${s.reason}): `, userText(s.message)));
    return el("div", { class: "notice skipped-realms", id: "skipped-realms", role: "alert" },
      el("p", {}, `${seen.size === 1 ? "One realm cannot" : `${seen.size} realms cannot`} be read and ` +
        `${seen.size === 1 ? "is" : "are"} left out of this view; the other realms are shown. ` +
        "Run meta-memory doctor on the gateway's state directory."),
      el("ul", {}, items));
  }

  function setError(err) {
    $("error").textContent = err ? describeError(err) : "";
  }

  // `*` is a realm-spanning view (or one needing the action on any scope): say so in words
  function deniedWhere(resource) {
    if (!resource || resource === "*") return "(no grant of yours covers this view)";
    return `on ${resource}`;
  }

  const UNREACHABLE = "Cannot reach the gateway; retrying…";

  /** Whether ``err`` says the gateway could not be reached (no answer, or a proxy's 502/503/504). */
  function isUnreachable(err) {
    return Boolean(err && err.unreachable);
  }

  function describeError(err) {
    if (isUnreachable(err)) return UNREACHABLE;
    if (err && err.rpc) {
      const data = err.rpc.data || {};
      let text = `${err.rpc.message} (code ${err.rpc.code})`;
      if (data.kind === "access_denied") text = `Access denied: you lack ${data.action} ${deniedWhere(data.resource)}.`;
      if (data.reason && data.kind !== "access_denied") text += ` — reason: ${data.reason}`;
      return text;
    }
    return String(err && err.message ? err.message : err);
  }

  // ------------------------------------------------------------------ RPC

  class RpcError extends Error {
    constructor(error, status) {
      super(error.message);
      this.rpc = error;
      this.status = status;
    }
  }

  async function rpc(method, params) {
    const headers = { "Content-Type": "application/json" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++state.seq, method, params: params || {} });
    const wait = timeouts().request;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), wait);
    const unreachable = (e) => {
      const failure = new Error(controller.signal.aborted ? `the gateway did not answer within ${wait / 1000} s`
        : `the gateway did not answer (${e && e.message ? e.message : e})`);
      failure.unreachable = true;
      return failure;
    };
    let resp;
    let payload;
    try {
      try {
        resp = await fetch(RPC_URL, { method: "POST", headers, body, cache: "no-store", signal: controller.signal });
      } catch (e) {
        throw unreachable(e);
      }
      try {
        payload = await resp.json();
      } catch (e) {
        if (controller.signal.aborted) throw unreachable(e);
        const failure = new Error(`the gateway answered HTTP ${resp.status} without JSON`);
        failure.unreachable = [502, 503, 504].includes(resp.status);
        throw failure;
      }
    } finally {
      clearTimeout(timer);
    }
    if (resp.status === 401 && headers.Authorization) {
      signOut();
      probe();
      $("login-error").textContent = payload.error ? payload.error.message : "authentication failed";
      throw new RpcError(payload.error || { code: -32030, message: "authentication failed" }, 401);
    }
    if (payload.error) throw new RpcError(payload.error, resp.status);
    return payload.result;
  }

  // ------------------------------------------------------------------ session

  /** The sign-in form; "Continue without a token" only when ``anonymousReads`` (the gateway's
   *  meta/capabilities, asked without a token, says an anonymous caller may read memory). */
  function showLogin(anonymousReads) {
    $("app").hidden = true;
    $("no-memory").hidden = true;
    $("login").hidden = false;
    $("no-token").hidden = !anonymousReads;
    $("no-token-hint").hidden = !anonymousReads;
    $("sign-out").hidden = true;
    $("who").textContent = "";
    $("token").focus();
  }

  /** Ask the gateway, without a token, what an anonymous caller gets; then go straight in (no access
   *  control) or show the sign-in form. An unreachable gateway is retried. */
  function probe() {
    rpc("meta/capabilities").then(
      (caps) => {
        if (state.token || !$("app").hidden) return;  // signed in meanwhile
        if (caps.access && caps.access.enabled === false) { state.anonymous = true; start(); return; }
        showLogin(Boolean(caps.memory && caps.memory.can_read));
      },
      (err) => {
        if (state.token || !$("app").hidden) return;
        showLogin(false);
        // 401: the gateway answers no caller without a token (the form is all that is needed)
        if (err && err.status !== 401) $("login-error").textContent = describeError(err);
        if (isUnreachable(err)) setTimeout(() => { if (!$("login").hidden) { $("login-error").textContent = ""; probe(); } }, RETRY_MS);
      },
    );
  }

  function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    state.anonymous = false;
    stopTimeline();
    showLogin(false);
  }

  async function start() {
    $("login").hidden = true;
    $("no-memory").hidden = true;
    let caps;
    try {
      caps = await rpc("meta/capabilities");
    } catch (err) {
      if (isUnreachable(err)) {
        const msg = $("no-memory");
        msg.hidden = false;
        msg.textContent = UNREACHABLE;
        setTimeout(start, RETRY_MS);
      } else if (!(err && err.status === 401)) {
        showLogin(false);
        $("login-error").textContent = describeError(err);
      }
      return;
    }
    state.methods = caps.methods || [];
    // grants off: with a token the gateway still authenticates (tokens only), so the caller signed in
    const grantsOff = caps.access && caps.access.enabled === false;
    const open = grantsOff && !state.token;
    $("sign-out").hidden = open;
    $("who").textContent = open ? "No access control on this gateway." :
      !state.token ? "No token (anonymous caller)." :
      grantsOff ? "Signed in with a token. No grants on this gateway: every token may read and change all memory." :
      "Signed in with a token.";
    const canRead = caps.memory && caps.memory.can_read;
    const hasPanel = state.methods.includes(PANEL + "records");
    if (!canRead || !hasPanel) {
      $("app").hidden = true;
      const msg = $("no-memory");
      msg.hidden = false;
      msg.textContent = !hasPanel
        ? "The Memory panel is not available on this gateway (no panel-capable store is wired)."
        : "Your grants do not let you read memory, so the Memory panel is not shown.";
      return;
    }
    $("app").hidden = false;
    startTimeline();
    route();
  }

  // ------------------------------------------------------------------ routing

  /** The location hash as ``{view, rest, params}``: ``#view/part/part?key=value&…`` (parts and
   *  values URI-encoded). The records view keeps its search, filters and page cursor in ``params``,
   *  the quarantine view its page cursor, so a reload, a bookmark and Back/Forward restore them. */
  function parseHash() {
    const raw = window.location.hash.slice(1);
    const at = raw.indexOf("?");
    const path = at >= 0 ? raw.slice(0, at) : raw;
    const [view, ...rest] = path.split("/");
    return { view: view || "records", rest, params: new URLSearchParams(at >= 0 ? raw.slice(at + 1) : "") };
  }

  /** Show ``hash``: a new history entry when it differs from the current one, else a fresh load. */
  function go(hash) {
    if (hash === window.location.hash || (hash === "#records" && !window.location.hash)) route();
    else window.location.hash = hash;
  }

  function route(opts) {
    if ($("app").hidden) return;
    const retry = Boolean(opts && opts.retry);
    if (state.retry) { clearTimeout(state.retry); state.retry = null; }
    const { view, rest, params } = parseHash();
    if (!retry) {
      setError(null);
      setNotice("");
    }
    for (const link of document.querySelectorAll("nav a[data-view]")) {
      if (link.dataset.view === view) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    const handlers = {
      records: showRecords,
      // ``#record/REALM/ID``; ``#record/ID`` (an address typed or pasted by hand) is the id in any realm
      record: () => (rest.length === 1 ? showRecord("", decodeURIComponent(rest[0]))
        : showRecord(decodeURIComponent(rest[0] || ""), decodeURIComponent(rest.slice(1).join("/")))),
      quarantine: showQuarantine,
      dreams: showDreams,
      overview: showOverview,
      proposals: showProposals,
      injections: showInjections,
      harvests: showHarvests,
    };
    const name = handlers[view] ? view : "records";
    state.loading = { name, hash: window.location.hash, retry };
    handlers[name](params);
  }

  /** Start a view: its heading in a new, detached body the view's reads fill. What the page shows
   *  stays on screen (marked busy) until :func:`load` puts the new body in its place, so a slow or
   *  silent gateway never leaves the page blank. */
  function beginView(title) {
    state.view = state.loading ? state.loading.name : null;
    $("view").setAttribute("aria-busy", "true");
    const view = el("div", { class: "view-body" }, el("h2", { id: "view-title", tabindex: "-1", text: title }));
    state.building = view;
    return view;
  }

  /** Put ``nodes`` on screen in place of the view shown. A field the user is typing in (focused, its
   *  value no longer the one it was rendered with) keeps what they typed, and the focus, when the new
   *  view has the same field rendered with another value: an answer arriving while they type never
   *  discards their words. Returns whether it did (the view's heading then leaves the focus alone). */
  function showNodes(nodes) {
    const shown = $("view");
    const edit = editInProgress(shown);
    clear(shown);
    for (const node of nodes) shown.append(node);
    shown.setAttribute("aria-labelledby", "view-title");
    return edit !== null && restoreEdit(shown, edit);
  }

  /** The text input of ``shown`` the user is editing: ``{id, value, start, end}``, or null. */
  function editInProgress(shown) {
    const field = document.activeElement;
    if (!(field instanceof HTMLInputElement) || !field.id || !shown.contains(field)) return null;
    if (field.value === field.defaultValue) return null;
    return { id: field.id, value: field.value, start: field.selectionStart, end: field.selectionEnd };
  }

  function restoreEdit(shown, edit) {
    const field = document.getElementById(edit.id);
    if (!(field instanceof HTMLInputElement) || !shown.contains(field) || field.defaultValue === edit.value) return false;
    field.value = edit.value;
    field.focus();
    try { field.setSelectionRange(edit.start, edit.end); } catch (e) { /* a number field has no selection */ }
    return true;
  }

  function endView(focus) {
    const view = $("view");
    view.setAttribute("aria-busy", "false");
    if (focus !== false) {
      const h = $("view-title");
      if (h) h.focus();
    }
  }

  /** Run a view's reads. When the gateway cannot be reached, the rows the same view showed before
   *  stay on screen (marked stale), the error says so plainly, and the view is loaded again every
   *  few seconds until the gateway answers (or the user goes elsewhere). */
  async function load(view, fn) {
    const loading = state.loading || { hash: window.location.hash, retry: false };
    // a listing's last good rows are kept per view; a record's page only for that very record
    const shownKey = state.view === "record" ? loading.hash : state.view;
    // a load the user has since left for another one changes nothing on screen
    const current = () => state.building === view;
    let typing = false;  // the user's edit was carried over: the focus stays in their field
    try {
      await fn();
      if (!current()) return;
      typing = showNodes(Array.from(view.childNodes));
      for (const key of Object.keys(state.lastGood)) if (key.startsWith("#record/")) delete state.lastGood[key];
      state.lastGood[shownKey] = Array.from($("view").childNodes);
      if (state.offline) { state.offline = false; setError(null); }
    } catch (err) {
      if (!current()) return;
      if (!isUnreachable(err)) {
        typing = showNodes(Array.from(view.childNodes));
        setError(err);
      } else {
        state.offline = true;
        const before = state.lastGood[shownKey];
        if (before && before.length) {
          typing = showNodes(before);
          $("view").classList.add("stale");
          setError(new Error(UNREACHABLE + " Showing the rows loaded before."));
        } else {
          typing = showNodes(Array.from(view.childNodes));
          setError(err);
        }
        state.retry = setTimeout(() => {
          state.retry = null;
          if (window.location.hash === loading.hash) route({ retry: true });
        }, RETRY_MS);
      }
    } finally {
      if (current()) {
        state.building = null;
        if (!state.offline) $("view").classList.remove("stale");
        endView(!loading.retry && !typing);
      }
    }
  }

  /** The cursors of one paged listing (``key``: its hash without page and cursor): ``[null, c2, c3,
   *  …]``, the cursor of each page seen in this tab, kept in sessionStorage so "Previous page" works
   *  after a reload too. */
  function cursorChain(key) {
    try {
      const all = JSON.parse(sessionStorage.getItem(CURSORS_KEY) || "{}");
      return Array.isArray(all[key]) ? all[key] : [null];
    } catch (e) {
      return [null];
    }
  }

  function saveChain(key, chain) {
    try {
      const all = JSON.parse(sessionStorage.getItem(CURSORS_KEY) || "{}");
      all[key] = chain;
      const keys = Object.keys(all);
      if (keys.length > 20) delete all[keys[0]];
      sessionStorage.setItem(CURSORS_KEY, JSON.stringify(all));
    } catch (e) { /* storage full or off: Previous page then works within this load only */ }
  }

  /** The last page an address may name: the kept chain of cursors has one entry a page before it. */
  const MAX_PAGE = 100000;

  /** What is wrong with the page a hash names (``page`` and ``cursor``), in words naming the value
   *  and the rule; null when nothing is. A page past the first needs its cursor, and a cursor belongs
   *  to a page past the first. */
  function pagingProblem(params) {
    const page = params.get("page");
    const cursor = params.get("cursor");
    if (page !== null && !/^[1-9][0-9]{0,8}$/.test(page)) {
      return `The address names page “${visibleString(page)}”: a page is a whole number from 1. Use First page.`;
    }
    if (page !== null && parseInt(page, 10) > MAX_PAGE) {
      return `The address names page ${page}: a page is at most ${MAX_PAGE}. Use First page.`;
    }
    if (page !== null && page !== "1" && !cursor) {
      return `The address names page ${page} without its cursor: a page past the first is reached with ` +
        "Next page (the address then holds page=N and cursor=…). Use First page.";
    }
    if (cursor !== null && (page === null || page === "1")) {
      return `The address holds a cursor (“${visibleString(cursor).slice(0, 60)}”) but ` +
        `${page === null ? "no page" : "page 1"}: a cursor belongs to a page past the first (page=2 or more). Use First page.`;
    }
    return null;
  }

  /** The page a hash names: ``{page (0-based), cursor, chain}``; a page past the first needs its cursor. */
  function pageOf(params, key) {
    let page = parseInt(params.get("page") || "1", 10) - 1;
    let cursor = params.get("cursor");
    // a page past MAX_PAGE is refused (pagingProblem) and never sizes the kept chain of cursors
    if (!Number.isFinite(page) || page < 1 || page >= MAX_PAGE || !cursor) { page = 0; cursor = null; }
    const chain = cursorChain(key);
    if (chain[page] !== cursor) { chain.length = page; chain[page] = cursor; }
    saveChain(key, chain);
    return { page, cursor, chain };
  }

  function pageHash(base, params, page, cursor) {
    const p = new URLSearchParams(params);
    if (page > 0 && cursor) { p.set("page", String(page + 1)); p.set("cursor", cursor); }
    const text = p.toString();
    return base + (text ? "?" + text : "");
  }

  /** The pager under a listing: First / Previous / "Page N · more follow | last page" / Next. */
  function pager(prefix, key, base, params, at, next, noun) {
    const { page, chain } = at;
    // the page before is known when it is the first, or when this tab saw its cursor
    const prevCursor = page > 1 && typeof chain[page - 1] === "string" ? chain[page - 1] : null;
    const prevKnown = page === 1 || prevCursor !== null;
    const first = el("button", { type: "button", id: `${prefix}-first`, disabled: page === 0 }, "First page");
    const prev = el("button", { type: "button", id: `${prefix}-prev`, disabled: !prevKnown,
      title: page > 1 && !prevKnown ? "Not known in this tab: use First page" : null }, "Previous page");
    const nextBtn = el("button", { type: "button", id: `${prefix}-next`, disabled: !next }, "Next page");
    first.addEventListener("click", () => go(pageHash(base, params, 0, null)));
    prev.addEventListener("click", () => { if (prevKnown) go(pageHash(base, params, page - 1, prevCursor)); });
    nextBtn.addEventListener("click", () => {
      if (!next) return;
      const chain2 = cursorChain(key);
      chain2.length = page + 1;
      chain2[page + 1] = next;
      saveChain(key, chain2);
      go(pageHash(base, params, page + 1, next));
    });
    return el("div", { class: "pager", role: "navigation", "aria-label": `${noun} pages` }, first, prev,
      el("span", { id: `${prefix}-page`, text: `Page ${page + 1}` }),
      el("span", { id: `${prefix}-more`, class: "muted", text: next ? `more ${noun} follow` : "last page" }),
      nextBtn);
  }

  // ------------------------------------------------------------------ records

  /** The records listing's filters in the hash: short names (``q`` the search). */
  const FILTER_PARAMS = [["query", "q"], ["realm", "realm"], ["scope", "scope"], ["identity", "identity"],
    ["scope_key", "scope_key"], ["status", "status"], ["limit", "limit"]];

  function filtersOf(params) {
    const f = {};
    for (const [key, name] of FILTER_PARAMS) {
      const value = (params.get(name) || "").trim();
      if (value) f[key] = value;
    }
    // a page size outside 1..MAX_PER_PAGE stays as written: the listing says what is wrong with it
    const limit = f.limit === undefined ? PER_PAGE : /^[0-9]{1,9}$/.test(f.limit) ? parseInt(f.limit, 10) : NaN;
    if (limit >= 1 && limit <= MAX_PER_PAGE) f.limit = limit;
    else if (f.limit === undefined) f.limit = PER_PAGE;
    return f;
  }

  /** What is wrong with the records listing's page size (``limit`` in the address), or null. */
  function limitProblem(f) {
    if (typeof f.limit === "number") return null;
    return `Per page must be a whole number from 1 to ${MAX_PER_PAGE}; “${visibleString(f.limit).slice(0, 60)}” is not.`;
  }

  /** The hash params of ``filters`` (no page): what the listing's cursors belong to. */
  function filterParams(f) {
    const p = new URLSearchParams();
    for (const [key, name] of FILTER_PARAMS) {
      if (key === "limit") { if (f.limit !== undefined && f.limit !== null && String(f.limit) !== String(PER_PAGE)) p.set(name, String(f.limit)); }
      else if (f[key]) p.set(name, f[key]);
    }
    return p;
  }

  function recordsParams() {
    const f = state.records.filters;
    const p = {};
    for (const key of ["realm", "scope", "identity", "scope_key", "status", "query"]) if (f[key]) p[key] = f[key];
    p.limit = typeof f.limit === "number" ? f.limit : PER_PAGE;
    if (state.records.cursor) p.cursor = state.records.cursor;
    return p;
  }

  function filterForm() {
    const f = state.records.filters;
    const hidden = Boolean(f.query) && visibleString(f.query) !== f.query;
    const field = (id, label, input) => el("div", { class: "field" }, el("label", { for: id, text: label }), input);
    const select = (id, options, value) => el("select", { id, name: id },
      options.map(([v, t]) => el("option", { value: v, selected: v === (value || "") }, t)));
    const realms = el("datalist", { id: "realm-list" }, state.records.realms.map((r) => el("option", { value: r })));
    const form = el("form", { class: "filters", "aria-label": "Record filters", role: "search" },
      field("f-query", "Search", el("input", {
        id: "f-query", name: "query", type: "search", value: f.query || "", maxlength: "200", size: "28", dir: "ltr",
        class: hidden ? "has-invisible" : null, "aria-describedby": hidden ? "f-query-warning" : null,
        placeholder: "title, body, tags…", title: "Every word must occur in the title, description, body or one tag (any case)", spellcheck: "false",
      })),
      field("f-realm", "Realm", el("input", { id: "f-realm", name: "realm", list: "realm-list", value: f.realm || "", placeholder: "all realms" })),
      realms,
      field("f-scope", "Scope", select("f-scope", [["", "any"], ["identity", "identity"], ["mob", "mob"], ["operator", "operator"], ["realm", "realm"]], f.scope)),
      field("f-key", "Identity / scope key", el("input", { id: "f-key", name: "scope_key", value: f.scope_key || f.identity || "" })),
      field("f-status", "Status", select("f-status", [["", "any"], ["active", "active"], ["quarantined", "quarantined"], ["superseded", "superseded"], ["tombstoned", "tombstoned"]], f.status)),
      field("f-limit", "Per page", el("input", { id: "f-limit", name: "limit", type: "number", min: "1", max: String(MAX_PER_PAGE), value: String(f.limit) })),
      el("div", { class: "actions" }, el("button", { type: "submit" }, "Apply filters"),
        f.query ? el("button", { type: "button", id: "f-clear-query", onclick: () => {
          go(pageHash("#records", filterParams({ ...state.records.filters, query: null }), 0, null));
        } }, "Clear search") : null),
      hidden ? el("p", { id: "f-query-warning", class: "query-warning" },
        "The search holds invisible characters: “", userText(f.query), "”") : null);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const key = $("f-key").value.trim();
      const scope = $("f-scope").value;
      const filters = { realm: $("f-realm").value.trim() || null, scope: scope || null, status: $("f-status").value || null,
        query: $("f-query").value.trim() || null };
      if (key && (scope === "" || scope === "identity")) filters.identity = key;
      else if (key) filters.scope_key = key;
      // as typed: a size outside 1..MAX_PER_PAGE is refused by the listing in words, never replaced
      filters.limit = $("f-limit").value.trim() || PER_PAGE;
      go(pageHash("#records", filterParams(filters), 0, null));
    });
    return form;
  }

  async function showRecords(params) {
    const filters = filtersOf(params || new URLSearchParams());
    const base = filterParams(filters);
    const key = "records?" + base.toString();
    const at = pageOf(params || new URLSearchParams(), key);
    const problem = limitProblem(filters) || pagingProblem(params || new URLSearchParams());
    state.records = { ...state.records, filters, page: at.page, cursor: at.cursor, next: null };
    const view = beginView("Records");
    view.append(filterForm());
    const holder = el("div", { id: "records-holder" });
    view.append(holder);
    await load(view, async () => {
      if (problem) throw new Error(problem);
      const result = await rpc(PANEL + "records", recordsParams());
      const skipped = skippedNotice(result);
      if (skipped) holder.append(skipped);
      state.records.next = result.next_cursor;
      state.records.realms = result.realms || [];
      const list = view.querySelector("#realm-list");
      if (list) { clear(list); for (const r of state.records.realms) list.append(el("option", { value: r })); }
      const query = state.records.filters.query;
      const count = result.records.length;
      const caption = [`Page ${at.page + 1}: ${count} ${count === 1 ? "record" : "records"}`,
        query ? [" matching “", userText(query, { class: "user-text query-text", title: visibleString(query).slice(0, 500) }), "”"] : "",
        ", newest updated first" + (result.next_cursor ? " (more follow)" : "")];
      const f = state.records.filters;
      const filtered = ["realm", "scope", "identity", "scope_key", "status"].some((k) => f[k]);
      // a page of every realm may end before its rows once it has read as many realms as one page may:
      // none here, but the search goes on through the realms not read yet
      const emptyText = result.next_cursor ? "None in the realms read for this page; the next page reads on." :
        query ? "No records you may read match this search." :
        filtered ? "No records you may read match these filters." :
        at.page > 0 ? "No more records." :
        "No memory you may read yet: records appear here as agents and applications remember them " +
        "(meta/agent_memory/remember, or meta-memory remember TITLE BODY --identity ID).";
      holder.append(recordsTable(caption, result.records, emptyText));
      holder.append(pager("records", key, "#records", base, at, result.next_cursor, "records"));
    });
  }

  /** A record's tags, each its own isolated span (so one tag's direction never reorders the next). */
  function tagList(tags) {
    if (!tags || !tags.length) return "—";
    const out = el("span", { class: "tags" });
    tags.forEach((tag, i) => { if (i) out.append(", "); out.append(userText(tag, { class: "user-text tag" })); });
    return out;
  }

  /** Whether an active record is past its expiry (the gateway already leaves it out of every active read). */
  function isExpired(r) {
    return r.expires_at_ms != null && r.expires_at_ms <= Date.now();
  }

  /** The status name of a listed record: "expired" for an active record past its expiry, not swept yet. */
  function fmtStatusName(r) {
    const name = (r.status && r.status.status) || String(r.status);
    return name === "active" && isExpired(r) ? "expired" : name;
  }

  /** The expiry a status cell's title adds: "" when the record never expires. */
  function fmtExpiry(r) {
    return r.expires_at_ms == null ? "" : ` · expires ${fmtTime(r.expires_at_ms)}`;
  }

  /** The records listing: body-free rows, each with a preview toggle that fetches the one record. */
  function recordsTable(caption, records, emptyText) {
    const headers = ["Preview", "Updated", "Title", "Scope", "Status", "Trust", "Body bytes", "Id"];
    const t = el("table", { class: "records" },
      el("caption", {}, caption),
      el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { scope: "col" },
        i === 0 ? el("span", { class: "visually-hidden" }, h) : h)))));
    const body = el("tbody");
    if (!records.length) {
      body.append(el("tr", {}, el("td", { colspan: headers.length, class: "muted", text: emptyText })));
    }
    records.forEach((r, i) => {
      const realm = r.scope && r.scope.realm;
      const paneId = `preview-${i}`;
      const toggle = el("button", {
        type: "button", class: "preview-toggle", "aria-expanded": "false", "aria-controls": paneId,
        "aria-label": `Preview ${visibleString(r.title)}`,
      }, "▸");
      const row = el("tr", { dataset: { id: r.id } },
        el("td", {}, toggle),
        el("td", {}, timeCell(r.updated_at_ms)),
        el("td", {}, recordLink(r.id, realm, r.title)),
        el("td", {}, fmtScopeIn(r.scope)),
        el("td", { title: fmtStatus(r.status) + fmtExpiry(r) }, fmtStatusName(r)),
        el("td", { title: r.trust }, String(r.trust || "").replace(/_/g, " ")),
        el("td", { class: "num" }, String(r.body_bytes)),
        el("td", { class: "nowrap" }, idCell(r.id)));
      // each cell names its column, which a listing too narrow for the columns shows beside the value
      Array.from(row.children).forEach((cell, n) => { cell.dataset.label = headers[n]; });
      toggle.addEventListener("click", () => togglePreview(row, toggle, paneId, realm, r, headers.length));
      body.append(row);
    });
    t.append(body);
    return el("div", { class: "table-wrap" }, t);
  }

  async function togglePreview(row, toggle, paneId, realm, listed, span) {
    const open = document.getElementById(paneId);
    if (open) {
      open.closest("tr").remove();
      toggle.setAttribute("aria-expanded", "false");
      toggle.textContent = "▸";
      return;
    }
    toggle.setAttribute("aria-expanded", "true");
    toggle.textContent = "▾";
    const pane = el("section", { id: paneId, class: "preview", "aria-label": `Preview of ${visibleString(listed.title)}`, "aria-busy": "true" },
      el("p", { class: "muted" }, "Loading…"));
    row.after(el("tr", { class: "preview-row" }, el("td", { colspan: span }, pane)));
    try {
      const params = { memory_id: listed.id };
      if (realm) params.realm = realm;
      const result = await rpc(PANEL + "record", params);
      const rec = result.record;
      clear(pane);
      const dl = el("dl", { class: "facts compact" });
      const fact = (k, v) => dl.append(el("dt", { text: k }), el("dd", {}, v));
      fact("Status", fmtStatus(rec.status));
      fact("Kind", rec.kind);
      fact("Tags", tagList(rec.tags));
      if (rec.description) fact("Description", userText(rec.description));
      fact("Content hash", el("samp", { class: "hash" }, rec.content_hash));
      pane.append(dl, el("pre", { class: "body preview-body", dir: "auto" }, userText(rec.body)),
        el("p", {}, recordLink(rec.id, result.realm, "Open the full record (chain, injections, review)")));
    } catch (err) {
      clear(pane);
      pane.append(el("p", { class: "error preview-error" }, describeError(err)));
    } finally {
      pane.setAttribute("aria-busy", "false");
    }
  }

  // ------------------------------------------------------------------ record detail

  /** A record's metadata (the JSON object recall's metadata filters match): indented JSON as user text
   *  (invisible characters escaped, never markup), or "none" for an empty object. */
  function metadataView(metadata, id) {
    if (!metadata || typeof metadata !== "object" || !Object.keys(metadata).length) {
      return el("span", { id, class: "muted" }, "none");
    }
    return el("pre", { id, class: "metadata", dir: "ltr" }, userText(JSON.stringify(metadata, null, 2)));
  }

  async function showRecord(realm, memoryId) {
    const view = beginView("Record");
    await load(view, async () => {
      if (!memoryId) {
        throw new Error("The address names no record: a record's address is #record/REALM/ID (or #record/ID). " +
          "Open one from Records.");
      }
      const params = { memory_id: memoryId };
      if (realm) params.realm = realm;
      const result = await rpc(PANEL + "record", params);
      const rec = result.record;
      const heading = view.querySelector("#view-title");
      clear(heading);
      heading.append("Record: ", userText(rec.title, { id: "record-title" }));
      const dl = el("dl", { class: "facts" });
      const fact = (k, v) => dl.append(el("dt", { text: k }), el("dd", {}, v));
      fact("Id", idCell(rec.id));
      fact("Realm", nameText(result.realm));
      fact("Scope", fmtScope(rec.scope));
      fact("Status", el("span", { id: "record-status" }, fmtStatus(rec.status)));
      fact("Kind", rec.kind);
      fact("Trust", rec.trust);
      fact("Ever quarantined", rec.ever_quarantined ? "yes" : "no");
      fact("Created", fmtTime(rec.created_at_ms));
      fact("Updated", fmtTime(rec.updated_at_ms));
      fact("Expires", el("span", { id: "record-expires" },
        rec.expires_at_ms == null ? "never" : fmtTime(rec.expires_at_ms) + (isExpired(rec) ? " (expired)" : "")));
      fact("Tags", tagList(rec.tags));
      if (rec.description) fact("Description", userText(rec.description, { id: "record-description" }));
      fact("Metadata", metadataView(rec.metadata, "record-metadata"));
      fact("Content hash", el("code", { id: "content-hash" }, rec.content_hash));
      view.append(dl);
      view.append(el("h3", { text: "Body" }), el("pre", { class: "body", id: "record-body", dir: "auto" }, userText(rec.body)));

      if (rec.status && rec.status.status === "quarantined") view.append(reviewForm(result));
      if (result.pending_forget) {
        const f = { ...result.pending_forget, realm: result.realm };
        const box = el("section", { class: "review", "aria-labelledby": "held-forget-title" });
        box.append(el("h3", { id: "held-forget-title", text: "A forget of this record is held for review" }),
          el("p", {}, "Requested by ", requester(f.requested_by), ": ", userText(f.reason), ". The record stays active until you decide."),
          forgetActions(f));
        view.append(box);
      }

      view.append(el("h3", { text: "Supersede chain" }));
      view.append(table("Supersede chain (ancestors, this record, successors, claimants)",
        ["Role", "Id", "Title", "Status", "Updated"],
        result.chain.map((c) => [c.chain_role, c.id === rec.id ? idCell(c.id) : recordLink(c.id, result.realm),
          c.title, c.id === rec.id ? el("span", { class: "chain-self-status" }, fmtStatus(c.status)) : fmtStatus(c.status),
          fmtTime(c.updated_at_ms)])));
      view.append(el("h3", { text: "Injection usage" }));
      view.append(table("Injection-ledger rows for this record, newest first",
        ["At", "Identity", "Session", "Surface"],
        result.injections.map((i) => [fmtTime(i.at_ms), nameText(i.identity), optName(i.session_key), i.surface]),
        "Never injected (or not into an identity you may read)."));
    });
  }

  function reviewForm(result) {
    const rec = result.record;
    const scope = rec.scope || {};
    const box = el("section", { class: "review", "aria-labelledby": "review-title" });
    box.append(el("h3", { id: "review-title", text: "Review this quarantined record" }));
    if (scope.scope !== "identity") {
      box.append(el("p", { class: "muted" }, "Mob-, operator- and realm-scoped quarantine is decided by the steward and the gating flow."));
      return box;
    }
    box.append(el("p", {}, "Release makes the content active memory of ", el("strong", {}, nameText(scope.identity)),
      "; Discard tombstones it. The decision is bound to the content hash shown above."));
    // The server's rule is 400 bytes of UTF-8 once trimmed (a "✓" is 3): a maxlength would count UTF-16
    // units and let through text the server refuses, so the page counts the bytes itself.
    const rationale = el("textarea", { id: "review-rationale", name: "rationale", rows: "2",
      "aria-describedby": "review-rationale-count" });
    const counter = el("p", { id: "review-rationale-count", class: "muted", "aria-live": "polite" });
    const rationaleBytes = () => new TextEncoder().encode(rationale.value.trim()).length;
    const recount = () => {
      const used = rationaleBytes();
      const over = used > RATIONALE_BYTES;
      counter.textContent = `${fmtCount(used)} of ${RATIONALE_BYTES} bytes` +
        (over ? ` — ${fmtCount(used - RATIONALE_BYTES)} too many: shorten it (a character such as ✓ or é takes 2 to 4 bytes)` : "");
      counter.classList.toggle("over", over);
      if (over) rationale.setAttribute("aria-invalid", "true");
      else rationale.removeAttribute("aria-invalid");
      return over;
    };
    rationale.addEventListener("input", recount);
    recount();
    const status = el("p", { id: "review-result", role: "status", "aria-live": "polite" });
    const decide = async (verdict) => {
      if (recount()) {
        status.textContent = `The rationale is ${fmtCount(rationaleBytes())} bytes; at most ${RATIONALE_BYTES} are ` +
          "accepted. Shorten it, then decide again.";
        rationale.focus();
        return;
      }
      status.textContent = "Deciding…";
      for (const b of box.querySelectorAll("button")) b.disabled = true;
      try {
        const params = {
          realm: result.realm,
          identity: scope.identity,
          memory_id: rec.id,
          verdict,
          expected_content_hash: rec.content_hash,
        };
        const why = rationale.value.trim();
        if (why) params.rationale = why;
        const out = await rpc("meta/memory/quarantine/decide", params);
        const successor = out.successor && out.successor.memory_id;
        clear(status);
        status.append(`Decision committed: ${out.outcome}`);
        if (successor) status.append(" — successor ", recordLink(successor, result.realm));
        status.append(".");
        setNotice(status.textContent);
        // every place on the page that shows this record's status says the same thing
        if (out.origin) {
          const shown = fmtStatus(out.origin.status);
          const statusCell = $("record-status");
          if (statusCell) statusCell.textContent = shown;
          for (const cell of document.querySelectorAll(".chain-self-status")) cell.textContent = shown;
          if (statusCell && successor && successor !== rec.id && !$("record-successor")) {
            statusCell.after(el("span", { id: "record-successor" }, " — successor ", recordLink(successor, result.realm)));
          }
        }
        // decided: the record is no longer quarantined, so its review form goes; what was decided stays
        const quarantined = out.origin && out.origin.status && out.origin.status.status === "quarantined";
        if (!quarantined) {
          box.replaceWith(status);
          status.setAttribute("tabindex", "-1");
          status.focus();  // the button that had the focus is gone with the form
        }
        else for (const b of box.querySelectorAll("button")) b.disabled = false;
      } catch (err) {
        status.textContent = describeError(err);
        for (const b of box.querySelectorAll("button")) b.disabled = false;
      }
    };
    box.append(
      el("div", { class: "field" }, el("label", { for: "review-rationale", text: `Rationale (optional, at most ${RATIONALE_BYTES} bytes)` }),
        rationale, counter),
      el("div", { class: "actions" },
        el("button", { type: "button", id: "release", class: "primary", onclick: () => decide("release") }, "Release"),
        el("button", { type: "button", id: "discard", class: "danger", onclick: () => decide("tombstone") }, "Discard")),
      status);
    return box;
  }

  // ------------------------------------------------------------------ other views

  async function showQuarantine(params) {
    const at = pageOf(params || new URLSearchParams(), "quarantine");
    const problem = pagingProblem(params || new URLSearchParams());
    const view = beginView("Quarantine");
    await load(view, async () => {
      if (problem) throw new Error(problem);
      const query = { limit: QUARANTINE_PAGE };
      if (at.cursor) query.cursor = at.cursor;
      const result = await rpc(PANEL + "quarantine", query);
      const skipped = skippedNotice(result);
      if (skipped) view.append(skipped);
      const count = result.records.length;
      view.append(table(`Page ${at.page + 1}: ${count} quarantined ${count === 1 ? "record" : "records"}, newest first` +
        (result.next_cursor ? " (more follow)" : ""),
        ["Created", "Title", "Scope", "Reason", "Id"],
        result.records.map((r) => [fmtTime(r.created_at_ms), recordLink(r.id, r.scope && r.scope.realm, r.title),
          fmtScopeIn(r.scope), (r.status && r.status.reason) || "—", idCell(r.id)]),
        // a page of every realm may end once it has started as many realms as one page may: the next reads on
        result.next_cursor ? "None in the realms read for this page; the next page reads on." :
        at.page > 0 ? "No more quarantined records." : "The queue is empty."));
      view.append(pager("quarantine", "quarantine", "#quarantine", new URLSearchParams(), at, result.next_cursor,
        "quarantined records"));
      view.append(table("Pending gated promotions (decided through the gating flow)",
        ["Created", "Realm", "Pending id", "Record", "Target", "Rationale"],
        result.pending_promotions.map((p) => [fmtTime(p.created_at_ms), nameText(p.realm), p.pending_id, p.record_id,
          [`${p.scope_kind}:`, nameText(p.scope_key)], p.rationale || "—"]),
        "No promotion is waiting."));
      view.append(el("h3", { text: "Pending forgets" }));
      view.append(el("p", { class: "muted" }, "A forget from a tainted session (or under the strict llm_writes posture) is held: ",
        "the record stays active until you approve the forget or keep the record. The decision is bound to the content hash."));
      view.append(table("Pending forgets (held for review), newest first",
        ["Requested", "Record", "Scope", "Reason", "Requested by", "Decision"],
        (result.pending_forgets || []).map((f) => [fmtTime(f.created_at_ms), recordLink(f.memory_id, f.realm, f.title),
          [`${f.scope_kind}:`, nameText(f.scope_key)], f.reason, requester(f.requested_by), forgetActions(f)]),
        "No forget is waiting."));
    });
  }

  function requester(author) {
    if (!author) return "—";
    return author.identity ? el("span", {}, userText(`${author.author}:`), nameText(author.identity)) : userText(String(author.author));
  }

  function forgetActions(f) {
    const cell = el("div", { class: "actions", "data-forget": f.forget_id });
    const status = el("span", { role: "status", "aria-live": "polite", class: "forget-result" });
    if (f.scope_kind !== "identity") {
      cell.append(el("span", { class: "muted" }, "decided by the steward"));
      return cell;
    }
    const decide = async (verdict) => {
      for (const b of cell.querySelectorAll("button")) b.disabled = true;
      status.textContent = "Deciding…";
      try {
        const out = await rpc("meta/memory/quarantine/decide", {
          realm: f.realm, identity: f.scope_key, memory_id: f.memory_id, verdict, expected_content_hash: f.content_hash,
        });
        status.textContent = out.outcome === "tombstoned" || out.outcome === "already_tombstoned"
          ? "Forget approved: the record is tombstoned." : "Kept: the record stays active.";
        setNotice(status.textContent);
      } catch (err) {
        status.textContent = describeError(err);
        for (const b of cell.querySelectorAll("button")) b.disabled = false;
      }
    };
    cell.append(
      el("button", { type: "button", class: "danger", "aria-label": `Approve forget of ${visibleString(f.title)}`, onclick: () => decide("tombstone") }, "Approve forget"),
      el("button", { type: "button", class: "primary", "aria-label": `Keep ${visibleString(f.title)}`, onclick: () => decide("release") }, "Keep record"),
      status);
    return cell;
  }

  async function showDreams() {
    const view = beginView("Dreams");
    await load(view, async () => {
      const [dreams, runs, verdicts] = await Promise.all([
        rpc(PANEL + "dreams", { limit: 50 }),
        rpc(PANEL + "dream_runs", { limit: 50 }),
        rpc(PANEL + "audit_verdicts", { limit: 100 }),
      ]);
      const skipped = skippedNotice(dreams, runs, verdicts);
      if (skipped) view.append(skipped);
      if (dreams.withheld_by_access || runs.withheld_by_access) {
        view.append(el("p", { class: "notice", id: "dreams-withheld" },
          "Some realms' dream history is withheld: it spans scopes (or quarantined content) you may not read."));
      }
      view.append(table("Dream runs (from the durable run log)",
        ["Completed", "Realm", "Run", "Partition", "Ops committed", "Started"],
        runs.runs.map((d) => [fmtTime(d.completed_at_ms), nameText(d.realm), el("code", {}, d.run_id), d.partition,
          String(d.ops_committed), fmtTime(d.started_at_ms)]),
        "No dream runs you may see."));
      view.append(table("Steward operations by run (reconstructed from the audit rows)",
        ["Last op", "Realm", "Run", "Ops", "Kinds", "Quarantined ops", "Records", "Rationales"],
        dreams.runs.map((s) => [fmtTime(s.last_op_at_ms), nameText(s.realm), el("code", {}, s.run_id), String(s.ops),
          Object.entries(s.op_kinds).map(([k, n]) => `${k}×${n}`).join(", "), String(s.quarantined_ops),
          s.memory_ids.join(", "), s.rationales.join(" | ")]),
        "No steward operations you may see."));
      view.append(table("Open usage-audit verdicts",
        ["Created", "Realm", "Run", "Record", "Verdict", "Rationale"],
        verdicts.verdicts.map((v) => [fmtTime(v.created_at_ms), nameText(v.realm), v.run_id, recordLink(v.record_id, v.realm),
          v.verdict, v.rationale || "—"]),
        "No open verdicts."));
    });
  }

  async function showOverview() {
    const view = beginView("Overview");
    await load(view, async () => {
      const result = await rpc(PANEL + "overview", {});
      const skipped = skippedNotice(result);
      if (skipped) view.append(skipped);
      const t = result.totals;
      const dl = el("dl", { class: "facts", id: "overview-totals" });
      const fact = (k, v) => dl.append(el("dt", { text: k }), el("dd", { text: v }));
      fact("Records you may read", String(t.records));
      for (const [status, n] of Object.entries(t.counts)) fact(status, String(n));
      fact("Body bytes", String(t.body_bytes));
      fact("Floors per scope", `${fmtCount(result.floors.records)} records / ${fmtBytes(result.floors.bytes)}`);
      const floors = dl.lastElementChild;
      floors.id = "overview-floors";
      floors.title = floors.previousElementSibling.title = "The retention floors of each scope: a scope holding more " +
        `than ${fmtCount(result.floors.records)} records, or more than ${fmtCount(result.floors.bytes)} bytes of ` +
        "title, description and body text, is reported as over its floor (the Pressure column shows how near each " +
        "scope is). Crossing a floor only warns: no record is refused or evicted.";
      view.append(dl);
      const backlog = await vectorBacklog();
      if (backlog) fact("Vector backlog", backlog);
      view.append(overviewCharts(result));
      view.append(table("Per-scope counts and pressure",
        ["Realm", "Scope", "Active", "Expired", "Superseded", "Quarantined", "Tombstoned", "Body bytes", "Pressure"],
        result.scopes.map((s) => [nameText(s.realm), s.scope_kind === "realm" ? "realm" : [`${s.scope_kind}:`, nameText(s.scope_key)],
          String(s.counts.active || 0), String(s.counts.expired || 0), String(s.counts.superseded || 0),
          s.quarantined_content_withheld ? "withheld" : String(s.counts.quarantined || 0),
          String(s.counts.tombstoned || 0), String(s.body_bytes),
          `${Math.round(s.pressure.records * 100)}% records, ${Math.round(s.pressure.bytes * 100)}% bytes${s.pressure.over_floor ? " — over floor" : ""}`]),
        "No scope you may read."));
    });
  }

  /** Records still waiting for a vector (hybrid recall), from meta/status; null when the caller
   *  lacks operator.status or agent memory is off (the row is then left out). */
  async function vectorBacklog() {
    let status;
    try {
      status = await rpc("meta/status", null);
    } catch (err) {
      return null;
    }
    const b = status && status.agent_memory && status.agent_memory.vector_backlog;
    if (!b) return null;
    if (b.provider !== "hybrid") return "none (lexical recall)";
    if (b.complete) return "complete: every active record has a vector";
    const realms = (b.realms || []).filter((r) => r.pending > 0).map((r) => `${r.realm} ${r.pending}`).join(", ");
    return `${b.pending} records ranked lexically until their vector lands (${realms})`;
  }

  /** Small charts: every readable record by status and by trust tier, in total and per scope. */
  function overviewCharts(result) {
    const charts = window.MetaMemoryCharts;
    const box = el("section", { id: "overview-charts", class: "charts", "aria-labelledby": "charts-title" },
      el("h3", { id: "charts-title", text: "Status and trust per scope" }));
    if (!charts) return box;
    const card = (scopeLabel, realm, counts, trust, note) => {
      const c = el("article", { class: "chart-card", dataset: { scope: scopeLabel, realm: realm || "" } },
        el("h4", {}, scopeLabel, realm ? el("span", { class: "muted" }, ` · ${realm}`) : null));
      c.append(charts.statusBar("Status", counts), charts.trustBar("Trust tier", trust || {}));
      if (note) c.append(el("p", { class: "muted small" }, note));
      return c;
    };
    const grid = el("div", { class: "chart-grid" });
    grid.append(card("All readable records", null, result.totals.counts, result.totals.trust));
    for (const s of result.scopes) {
      const label = s.scope_kind === "realm" ? "realm" : `${s.scope_kind}:${s.scope_key}`;
      grid.append(card(label, s.realm, s.counts, s.trust,
        s.quarantined_content_withheld ? "Quarantined content is withheld (you do not review this scope)." : null));
    }
    box.append(grid);
    return box;
  }

  async function showProposals() {
    const view = beginView("Proposals");
    await load(view, async () => {
      const result = await rpc(PANEL + "proposals", { limit: 200 });
      const skipped = skippedNotice(result);
      if (skipped) view.append(skipped);
      view.append(table("Pending proposals (bodies withheld)",
        ["Created", "Realm", "Proposal", "Target", "Title", "Kind", "Body bytes", "Tainted", "Status"],
        result.proposals.map((p) => [fmtTime(p.created_at_ms), nameText(p.realm), el("code", {}, p.proposal_id),
          [`${p.scope_kind}:`, nameText(p.scope_key)], p.title || "—", p.kind || "—", String(p.body_bytes),
          p.tainted === null ? "withheld" : (p.tainted ? "yes" : "no"), p.status]),
        "No pending proposals you may see."));
    });
  }

  async function showInjections() {
    const view = beginView("Injections");
    await load(view, async () => {
      const result = await rpc(PANEL + "injections", { limit: 200 });
      const skipped = skippedNotice(result);
      if (skipped) view.append(skipped);
      view.append(table("Recent injection-ledger rows, newest first",
        ["At", "Realm", "Record", "Identity", "Session", "Surface"],
        result.injections.map((i) => [fmtTime(i.at_ms), nameText(i.realm), recordLink(i.record_id, i.realm), nameText(i.identity),
          optName(i.session_key), i.surface]),
        "No injections you may see."));
    });
  }

  async function showHarvests() {
    const view = beginView("Harvests");
    await load(view, async () => {
      const result = await rpc(PANEL + "harvests", { limit: 200 });
      const skipped = skippedNotice(result);
      if (skipped) view.append(skipped);
      view.append(table("Pending exit-interview harvests",
        ["Retired", "Realm", "Identity", "Session", "Cause"],
        result.harvests.map((h) => [fmtTime(h.retired_at_ms), nameText(h.realm), nameText(h.identity), optName(h.session_key), h.cause]),
        "No pending harvests you may see."));
    });
  }

  // ------------------------------------------------------------------ timeline

  function stopTimeline() {
    if (state.timeline.controller) state.timeline.controller.abort();
    if (state.timeline.retry) clearTimeout(state.timeline.retry);
    state.timeline.controller = null;
    state.timeline.retry = null;
    clear($("timeline"));
    state.timeline.lastId = null;
    $("timeline-state").textContent = "Not connected.";
  }

  /** The keys of an event's data that hold a name (marked whole: :func:`nameText`). */
  const EVENT_NAMES = new Set(["realm", "session_key", "scope_key"]);

  /** An event's data as ``key=value`` pieces, names marked as names and other values as text. */
  function summarise(data) {
    if (!data || typeof data !== "object") return "";
    const parts = [];
    for (const key of ["realm", "record_id", "verdict", "successor_id", "run_id", "ops_committed", "reason", "kind", "session_key", "scope_kind", "scope_key"]) {
      if (data[key] === undefined || data[key] === null) continue;
      const value = typeof data[key] === "object" ? JSON.stringify(data[key]) : String(data[key]);
      if (parts.length) parts.push(" · ");
      parts.push(`${key}=`, EVENT_NAMES.has(key) ? nameText(value) : userText(value));
    }
    return parts;
  }

  function addEvent(env) {
    const list = $("timeline");
    const item = el("li", { class: "event", dataset: { type: env.event_type } },
      el("span", { class: "event-type" }, env.event_type),
      el("time", { datetime: new Date(env.timestamp_ms).toISOString() }, fmtTime(env.timestamp_ms)),
      el("span", { class: "event-identity" }, nameText(env.identity)),
      el("span", { class: "event-data" }, summarise(env.data)));
    list.insertBefore(item, list.firstChild);
    while (list.children.length > TIMELINE_MAX) list.removeChild(list.lastChild);
  }

  /** Read GET ../events as a stream (fetch, so the token travels in a header and every event type is seen).
   *  A stream that does not open within the request timeout, or then carries nothing (not even the
   *  keep-alive) for the stall window, is given up and opened again: the timeline then says so. */
  async function startTimeline() {
    if (state.timeline.controller) return;
    const controller = new AbortController();
    state.timeline.controller = controller;
    const headers = { Accept: "text/event-stream" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    if (state.timeline.lastId) headers["Last-Event-ID"] = state.timeline.lastId;
    const waits = timeouts();
    let silent = null;  // why the stream was given up, when it was for silence
    let watchdog = null;
    const watch = (ms, why) => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => { silent = why; controller.abort(); }, ms);
    };
    try {
      watch(waits.request, `the gateway did not answer within ${waits.request / 1000} s`);
      const resp = await fetch(EVENTS_URL, { headers, signal: controller.signal, cache: "no-store" });
      if (!resp.ok || !resp.body) throw new Error(`HTTP ${resp.status}`);
      $("timeline-state").textContent = "Live.";
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        watch(waits.stall, `nothing from the gateway for ${waits.stall / 1000} s`);
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let id = null;
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (!data.length) continue;
          try {
            addEvent(JSON.parse(data.join("\n")));
          } catch (e) { /* a malformed event is skipped */ }
          if (id) state.timeline.lastId = id;
        }
      }
      throw new Error("the stream ended");
    } catch (err) {
      if (state.timeline.controller !== controller || (controller.signal.aborted && !silent)) return;
      $("timeline-state").textContent = silent ? `Reconnecting… (${silent})` : `Disconnected (${err.message}); retrying…`;
    } finally {
      clearTimeout(watchdog);
    }
    if (state.timeline.controller !== controller) return;  // stopped meanwhile
    if (controller.signal.aborted && !silent) return;
    state.timeline.controller = null;
    state.timeline.retry = setTimeout(() => { state.timeline.retry = null; startTimeline(); }, 2000);
  }

  // ------------------------------------------------------------------ wiring

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("token").value.trim();
      if (!token) {
        $("login-error").textContent = $("no-token").hidden ? "Enter the token the gateway gave you." :
          "Enter a token, or continue without one.";
        return;
      }
      $("login-error").textContent = "";
      state.token = token;
      sessionStorage.setItem(TOKEN_KEY, token);
      $("token").value = "";
      start();
    });
    $("no-token").addEventListener("click", () => {
      $("login-error").textContent = "";
      state.token = null;
      state.anonymous = true;
      sessionStorage.setItem(TOKEN_KEY, "");
      start();
    });
    $("sign-out").addEventListener("click", () => { signOut(); probe(); });
    window.addEventListener("hashchange", () => route());
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved !== null) { state.token = saved || null; start(); return; }
    // A gateway without access control needs no token: go straight in; otherwise sign in, and
    // "Continue without a token" only where an anonymous caller may read memory.
    probe();
  });
})();
