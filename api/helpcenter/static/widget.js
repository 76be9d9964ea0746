/* The FAQ widget (issue 41): <faq-widget>, a custom element in a shadow root, no framework,
   nothing loaded from anywhere but the service's API. Served by api/helpcenter/widget.py,
   which puts the labels of every language in LABELS; docs/help-center.md ("Widget") shows it.

   One tag:  <script src="https://faq.example.com/hc/widget.js" data-org="acme"
                     data-key="faq_pk_…" defer></script>
   adds a widget right after itself; <faq-widget org="acme" key="faq_pk_…"> works as well.
   Attributes: org, key (publishable), api (default: where this script came from), color
   (#rrggbb), locale (default: the page's <html lang>). */
(() => {
  "use strict";

  const LABELS = /*LABELS*/ {};
  const TAG = "faq-widget";
  const DEFAULT_COLOR = "#1f5fbf";
  const DEFAULT_LINK = "#1a4a99";
  const DEBOUNCE_MS = 250;
  const RESULTS = 5;
  const RTL = new Set(["ar", "he", "fa", "ur", "ps", "yi", "dv", "ckb", "sd", "ug"]);
  const script = document.currentScript;
  const scriptOrigin = script && script.src ? new URL(script.src, location.href).origin : "";
  let instances = 0;

  // ---- language -------------------------------------------------------------------------
  function languagesOf(tag) {
    const lower = String(tag || "").trim().replace(/_/g, "-").toLowerCase();
    const primary = lower.split("-")[0];
    return [lower, primary].filter(Boolean);
  }

  function catalogOf(tag) {
    for (const candidate of languagesOf(tag)) {
      if (LABELS[candidate]) return LABELS[candidate];
    }
    return {};
  }

  function directionOf(tag) {
    return RTL.has(languagesOf(tag).pop() || "") ? "rtl" : "ltr";
  }

  // ``%(name)s`` filled with its value, ``%%`` a percent sign; nothing else is interpreted.
  function fill(text, values) {
    return text.replace(/%(%|\((\w+)\)s)/g, (all, _, name) =>
      name === undefined ? "%" : name in values ? String(values[name]) : all,
    );
  }

  // ---- colour ---------------------------------------------------------------------------
  function parseColor(value) {
    const text = String(value || "").trim();
    if (/^#[0-9a-f]{6}$/i.test(text)) return text.toLowerCase();
    if (/^#[0-9a-f]{3}$/i.test(text)) {
      return ("#" + [...text.slice(1)].map((c) => c + c).join("")).toLowerCase();
    }
    return null;
  }

  function luminance(hex) {
    const channels = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
    const [r, g, b] = channels.map((c) =>
      c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4),
    );
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }

  function contrast(a, b) {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
    return (hi + 0.05) / (lo + 0.05);
  }

  function theme(color) {
    const on = contrast(color, "#ffffff") >= contrast(color, "#000000") ? "#ffffff" : "#000000";
    const link = contrast(color, "#ffffff") >= 4.5 ? color : DEFAULT_LINK;
    return { color, on, link };
  }

  // ---- styles (a constructed sheet: a host page's CSP without 'unsafe-inline' allows it) --
  const CSS = `
:host { display: block; font: inherit; color: #1b1b1b; }
:host([hidden]) { display: none; }
* { box-sizing: border-box; }
.faq { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 1rem;
  line-height: 1.5; max-width: 34rem; }
button { font: inherit; cursor: pointer; }
:focus-visible { outline: 3px solid var(--faq-link); outline-offset: 2px; }
.launcher { display: inline-flex; align-items: center; gap: .5rem; padding: .55rem 1rem;
  border: 2px solid var(--faq-color); border-radius: 999px; background: var(--faq-color);
  color: var(--faq-on); font-weight: 600; }
.launcher svg { width: 1.1em; height: 1.1em; flex: none; }
.panel { margin-block-start: .75rem; padding: 1rem; border: 1px solid #c9c9c9; border-radius: .75rem;
  background: #ffffff; color: #1b1b1b; box-shadow: 0 .5rem 1.5rem rgba(0, 0, 0, .12); }
.panel[hidden] { display: none; }
.head { display: flex; align-items: center; justify-content: space-between; gap: 1rem;
  margin-block-end: .5rem; }
h2 { font-size: 1.1rem; margin: 0; }
.close { border: 1px solid #767676; background: #ffffff; color: #1b1b1b; border-radius: .4rem;
  padding: .2rem .6rem; }
label { display: block; font-weight: 600; margin-block-end: .25rem; }
input { width: 100%; font: inherit; padding: .5rem .7rem; border: 2px solid #767676;
  border-radius: .5rem; background: #ffffff; color: #1b1b1b; }
input:focus-visible { border-color: var(--faq-link); }
.status { margin: .6rem 0 0; color: #474747; font-size: .95rem; min-height: 1.5em; }
.results { list-style: none; margin: .5rem 0 0; padding: 0; }
.result { padding: .75rem 0; border-block-start: 1px solid #e2e2e2; }
.badge { display: inline-block; margin: 0 0 .3rem; padding: .05rem .55rem; border-radius: 999px;
  background: var(--faq-color); color: var(--faq-on); font-size: .85rem; font-weight: 600; }
h3 { font-size: 1rem; margin: 0 0 .2rem; }
a { color: var(--faq-link); text-decoration: underline; text-underline-offset: .15em; }
.snippet { margin: 0 0 .4rem; color: #2b2b2b; }
mark { background: #fff1a8; color: #1b1b1b; padding: 0 .1em; }
.vote { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin-block-start: .4rem;
  font-size: .95rem; }
.vote button { border: 1px solid #767676; background: #ffffff; color: #1b1b1b;
  border-radius: .4rem; padding: .1rem .7rem; }
.thanks { margin: .4rem 0 0; font-size: .95rem; }
.problem { margin: 0; padding: .75rem 1rem; border: 2px solid #b3261e; border-radius: .5rem;
  background: #fdf0ef; color: #5c1410; }
`;
  let sheet = null;
  function adopt(root) {
    try {
      if (!sheet) {
        sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
      }
      root.adoptedStyleSheets = [sheet];
    } catch (_) {
      const style = document.createElement("style");
      style.textContent = CSS;
      root.append(style);
    }
  }

  // ---- DOM helpers -----------------------------------------------------------------------
  function el(name, attributes = {}, ...children) {
    const node = document.createElement(name);
    for (const [key, value] of Object.entries(attributes)) {
      if (value === false || value === null || value === undefined) continue;
      node.setAttribute(key, value === true ? "" : String(value));
    }
    node.append(...children);
    return node;
  }

  // A snippet is HTML-escaped text with <mark> around matched words (docs/answers.md): it is
  // read as HTML in an inert document and only its text and <mark>s are copied over.
  function marked(html) {
    const parsed = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
    const out = document.createDocumentFragment();
    const copy = (from, into) => {
      for (const node of from.childNodes) {
        if (node.nodeType === Node.TEXT_NODE) into.append(node.textContent);
        else if (node.nodeName === "MARK") copy(node, into.appendChild(el("mark")));
        else copy(node, into);
      }
    };
    copy(parsed.body, out);
    return out;
  }

  const SEARCH_ICON =
    '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path fill="currentColor" ' +
    'd="M10 2a8 8 0 0 1 6.32 12.9l5.39 5.4-1.42 1.4-5.39-5.38A8 8 0 1 1 10 2zm0 2a6 6 0 1 0 0 ' +
    '12 6 6 0 0 0 0-12z"/></svg>';

  class FaqWidget extends HTMLElement {
    static get observedAttributes() {
      return ["org", "key", "api", "color", "locale"];
    }

    constructor() {
      super();
      this.attachShadow({ mode: "open" });
      adopt(this.shadowRoot);
      this.uid = `faq${++instances}`;
      this.timer = null;
      this.controller = null;
      this.sequence = 0;
    }

    connectedCallback() {
      this.render();
    }

    disconnectedCallback() {
      clearTimeout(this.timer);
      if (this.controller) this.controller.abort();
      this.rendered = false;
    }

    // Attributes set before the element is in a page are read when it is (connectedCallback).
    attributeChangedCallback() {
      if (this.rendered) this.render();
    }

    // ---- configuration -------------------------------------------------------------------
    get locale() {
      const own = this.getAttribute("locale");
      const page = document.documentElement.getAttribute("lang");
      return (own || page || "en").trim() || "en";
    }

    t(english, values = {}) {
      const text = catalogOf(this.locale)[english] || english;
      return fill(text, values);
    }

    // The problem with the attributes, in words a site's developer can act on; or null.
    problem() {
      const org = (this.getAttribute("org") || "").trim();
      const key = (this.getAttribute("key") || "").trim();
      if (!org) return this.t("This help widget is not set up: it needs %(attribute)s.", {
        attribute: "org (data-org)",
      });
      if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(org)) {
        return this.t("This help widget is not set up: it needs %(attribute)s.", {
          attribute: "org (data-org)",
        });
      }
      if (!key) return this.t("This help widget is not set up: it needs %(attribute)s.", {
        attribute: "key (data-key: faq_pk_…)",
      });
      if (key.startsWith("faq_") && !key.startsWith("faq_pk_")) {
        return this.t(
          "This help widget cannot use a secret key. Use the organization's publishable key (faq_pk_…).",
        );
      }
      if (!key.startsWith("faq_pk_")) {
        return this.t("This help widget is not set up: it needs %(attribute)s.", {
          attribute: "key (data-key: faq_pk_…)",
        });
      }
      if (!this.apiBase()) return this.t("This help widget is not set up: it needs %(attribute)s.", {
        attribute: "api (data-api: https://…)",
      });
      return null;
    }

    apiBase() {
      const given = (this.getAttribute("api") || "").trim();
      try {
        const url = new URL(given || scriptOrigin, location.href);
        if (url.protocol !== "https:" && url.protocol !== "http:") return null;
        return url.origin;
      } catch (_) {
        return null;
      }
    }

    // ---- rendering ------------------------------------------------------------------------
    render() {
      this.rendered = true;
      clearTimeout(this.timer);
      if (this.controller) this.controller.abort();
      const root = this.shadowRoot;
      for (const node of [...root.childNodes]) if (node.nodeName !== "STYLE") node.remove();
      const locale = this.locale;
      const colors = theme(parseColor(this.getAttribute("color")) || DEFAULT_COLOR);
      this.style.setProperty("--faq-color", colors.color);
      this.style.setProperty("--faq-on", colors.on);
      this.style.setProperty("--faq-link", colors.link);
      const frame = el("div", { class: "faq", lang: locale, dir: directionOf(locale) });
      root.append(frame);
      const problem = this.problem();
      if (problem) {
        frame.append(el("p", { class: "problem", role: "alert" }, problem));
        return;
      }
      const id = (name) => `${this.uid}-${name}`;
      const launcher = el("button", {
        class: "launcher", type: "button", "aria-expanded": "false", "aria-controls": id("panel"),
      });
      launcher.innerHTML = SEARCH_ICON;
      launcher.append(el("span", {}, this.t("Help")));
      const input = el("input", {
        id: id("q"), type: "search", autocomplete: "off", spellcheck: "false", maxlength: "500",
        "aria-describedby": id("status"), "aria-controls": id("results"),
      });
      const status = el("p", { class: "status", id: id("status"), role: "status" });
      const results = el("ol", { class: "results", id: id("results"), "aria-labelledby": id("title") });
      const close = el("button", { class: "close", type: "button" }, this.t("Close"));
      const panel = el(
        "div",
        { class: "panel", id: id("panel"), role: "dialog", "aria-labelledby": id("title"), hidden: true },
        el("div", { class: "head" }, el("h2", { id: id("title") }, this.t("Search the help center")), close),
        el("label", { for: id("q") }, this.t("Type your question")),
        input,
        status,
        results,
      );
      frame.append(launcher, panel);
      Object.assign(this, { launcher, panel, input, status, results });

      launcher.addEventListener("click", () => (panel.hidden ? this.open() : this.close()));
      close.addEventListener("click", () => this.close());
      input.addEventListener("input", () => this.queue());
      frame.addEventListener("keydown", (event) => this.key(event));
    }

    open() {
      this.panel.hidden = false;
      this.launcher.setAttribute("aria-expanded", "true");
      this.input.focus();
    }

    close() {
      this.panel.hidden = true;
      this.launcher.setAttribute("aria-expanded", "false");
      this.launcher.focus();
    }

    // Escape closes (focus back on the launcher); the arrows move between the box and the
    // results' titles.
    key(event) {
      if (this.panel.hidden) return;
      if (event.key === "Escape") {
        event.preventDefault();
        this.close();
        return;
      }
      if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
      const stops = [this.input, ...this.results.querySelectorAll("h3 a")];
      const at = stops.indexOf(this.shadowRoot.activeElement);
      if (at < 0 || stops.length < 2) return;
      event.preventDefault();
      const next = event.key === "ArrowDown" ? Math.min(at + 1, stops.length - 1) : Math.max(at - 1, 0);
      stops[next].focus();
    }

    queue() {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.search(this.input.value.trim()), DEBOUNCE_MS);
    }

    // ---- the API ---------------------------------------------------------------------------
    endpoint(path) {
      const org = encodeURIComponent(this.getAttribute("org").trim());
      return new URL(`/api/v1/${org}${path}`, this.apiBase());
    }

    headers(extra = {}) {
      return {
        Authorization: `Bearer ${this.getAttribute("key").trim()}`,
        "Accept-Language": this.locale,
        ...extra,
      };
    }

    failure(status) {
      if (status === 429) return this.t("Too many requests. Please wait a moment and try again.");
      return this.t(
        "The help service could not be reached, or does not accept this site, organization or key.",
      );
    }

    async search(q) {
      const sequence = ++this.sequence;
      if (this.controller) this.controller.abort();
      if (q.length < 2) {
        this.results.replaceChildren();
        this.status.textContent = "";
        return;
      }
      this.controller = new AbortController();
      const url = this.endpoint("/answers");
      url.searchParams.set("q", q);
      url.searchParams.set("limit", String(RESULTS));
      let response;
      let body = null;
      try {
        response = await fetch(url, {
          headers: this.headers(), signal: this.controller.signal, credentials: "omit",
        });
        body = await response.json().catch(() => null);
      } catch (error) {
        if (error && error.name === "AbortError") return;
        if (sequence === this.sequence) this.show([], this.failure(0));
        return;
      }
      if (sequence !== this.sequence) return;
      if (response.ok && body && Array.isArray(body.data)) {
        const found = body.data;
        this.show(found, found.length
          ? this.t("Results found: %(count)s", { count: found.length })
          : this.t("No results for this search. Try other words."));
      } else if (response.status === 400) {
        this.show([], this.t("No results for this search. Try other words."));
      } else {
        this.show([], this.failure(response.status));
      }
    }

    show(answers, message) {
      const org = encodeURIComponent(this.getAttribute("org").trim());
      const base = this.apiBase();
      // A reader on a result (the arrows, Tab) keeps their place when the list is drawn again
      // (the answer of a later keystroke): the same result's title, else the search box.
      const active = this.shadowRoot.activeElement;
      const items = [...this.results.children];
      const at = active ? items.findIndex((item) => item.contains(active)) : -1;
      this.results.replaceChildren(...answers.map((answer, index) => {
        const question = answer.question;
        const lang = question.locale || this.locale;
        const titleId = `${this.uid}-r${index}`;
        const page = new URL(
          `/hc/${org}/${encodeURIComponent(lang)}/questions/${encodeURIComponent(question.slug)}`,
          base,
        ).href;
        const item = el("li", { class: "result" });
        if (answer.confident) item.append(el("p", { class: "badge" }, this.t("Best answer")));
        item.append(
          el("h3", {}, el("a", { href: page, id: titleId, lang, dir: "auto" }, marked(answer.snippet.title))),
          el("p", { class: "snippet", lang, dir: "auto" }, marked(answer.snippet.answer)),
          el("a", { href: page, class: "more", "aria-describedby": titleId }, this.t("Read the full answer")),
          this.voteGroup(question, `${titleId}-vote`),
        );
        return item;
      }));
      if (at >= 0) {
        const titles = this.results.querySelectorAll("h3 a");
        (titles[Math.min(at, titles.length - 1)] || this.input).focus();
      }
      this.status.textContent = message;
    }

    voteGroup(question, id) {
      const group = el("div", { class: "vote", role: "group", "aria-labelledby": id });
      const yes = el("button", { type: "button" }, this.t("Yes"));
      const no = el("button", { type: "button" }, this.t("No"));
      group.append(el("span", { id }, this.t("Was this helpful?")), yes, no);
      yes.addEventListener("click", () => this.vote(group, question, true));
      no.addEventListener("click", () => this.vote(group, question, false));
      return group;
    }

    async vote(group, question, helpful) {
      for (const button of group.querySelectorAll("button")) button.disabled = true;
      let ok = false;
      try {
        const response = await fetch(this.endpoint(`/questions/${encodeURIComponent(question.id)}/votes`), {
          method: "POST",
          headers: this.headers({ "Content-Type": "application/json" }),
          body: JSON.stringify({ helpful, locale: question.locale }),
          credentials: "omit",
        });
        ok = response.ok;
      } catch (_) {
        ok = false;
      }
      const note = el(
        "p",
        { class: "thanks", tabindex: "-1", role: "status" },
        ok ? this.t("Thank you for your feedback.") : this.t("Your vote was not recorded. Please try again."),
      );
      if (ok) {
        group.replaceWith(note);
      } else {
        for (const button of group.querySelectorAll("button")) button.disabled = false;
        const old = group.parentNode.querySelector(".thanks");
        if (old) old.remove();
        group.after(note);
      }
      note.focus();
    }
  }

  if (!customElements.get(TAG)) customElements.define(TAG, FaqWidget);

  // The one-tag form: the <script>'s data-* attributes make a widget right after it.
  if (script && (script.dataset.org !== undefined || script.dataset.key !== undefined)) {
    const widget = document.createElement(TAG);
    for (const name of FaqWidget.observedAttributes) {
      const value = script.dataset[name];
      if (value !== undefined) widget.setAttribute(name, value);
    }
    // In <head> (a deferred script there), at the end of the page's body instead.
    if (script.parentNode && script.parentNode !== document.head) script.after(widget);
    else document.body.append(widget);
  }
})();
