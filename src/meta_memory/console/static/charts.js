/*
 * Small charts for the console's overview: one stacked bar per breakdown
 * (records by status, records by trust tier), drawn as inline SVG built with
 * DOM calls (no markup strings, no inline styles, so the page's strict
 * Content-Security-Policy holds). Colours come from console.css classes.
 *
 * window.MetaMemoryCharts.stackedBar(title, parts) -> <figure>
 *   parts: [{key, label, value}] with value a non-negative integer; parts with
 *   value 0 are left out. The figure carries a text legend with every count,
 *   so the chart is readable without colour and by screen readers.
 */
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  //: The orders bars are stacked in (lowest trust first; live statuses first).
  const STATUS_ORDER = ["active", "expired", "superseded", "quarantined", "tombstoned"];
  const TRUST_ORDER = ["untrusted", "agent_observed", "agent_verified", "application", "operator"];

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  function html(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** Order a {key: count} map by `order` (unknown keys last, by name) into chart parts. */
  function parts(counts, order) {
    const keys = Object.keys(counts || {});
    keys.sort((a, b) => {
      const ia = order.indexOf(a), ib = order.indexOf(b);
      return (ia < 0 ? order.length : ia) - (ib < 0 ? order.length : ib) || (a < b ? -1 : a > b ? 1 : 0);
    });
    return keys.map((key) => ({ key, label: key.replace(/_/g, " "), value: Number(counts[key]) || 0 }));
  }

  function safeClass(key) {
    return String(key).toLowerCase().replace(/[^a-z0-9_-]/g, "-");
  }

  function stackedBar(title, items, kind) {
    const shown = items.filter((p) => p.value > 0);
    const total = shown.reduce((n, p) => n + p.value, 0);
    const summary = shown.map((p) => `${p.label} ${p.value}`).join(", ") || "none";
    const figure = html("figure", `bar-chart bar-${kind}`);
    figure.dataset.chart = kind;
    figure.append(html("figcaption", "bar-title", title));
    const chart = svg("svg", {
      class: "bar", viewBox: "0 0 100 10", preserveAspectRatio: "none", role: "img",
      "aria-label": `${title}: ${summary}`, width: "100%", height: "14",
    });
    chart.append(svg("rect", { class: "bar-track", x: 0, y: 0, width: 100, height: 10 }));
    let x = 0;
    for (const p of shown) {
      const width = (p.value / total) * 100;
      const rect = svg("rect", { class: `seg seg-${safeClass(p.key)}`, x: x.toFixed(3), y: 0, width: width.toFixed(3), height: 10 });
      rect.dataset.key = p.key;
      rect.dataset.value = String(p.value);
      const tip = svg("title");
      tip.textContent = `${p.label}: ${p.value} (${Math.round(width)}%)`;
      rect.append(tip);
      chart.append(rect);
      x += width;
    }
    figure.append(chart);
    const legend = html("ul", "legend");
    for (const p of shown) {
      const item = html("li", "legend-item");
      item.dataset.key = p.key;
      item.append(html("span", `swatch seg-${safeClass(p.key)}`), html("span", "legend-text", `${p.label} ${p.value}`));
      legend.append(item);
    }
    if (!shown.length) legend.append(html("li", "muted", "none"));
    figure.append(legend);
    return figure;
  }

  window.MetaMemoryCharts = {
    statusBar: (title, counts) => stackedBar(title, parts(counts, STATUS_ORDER), "status"),
    trustBar: (title, counts) => stackedBar(title, parts(counts, TRUST_ORDER), "trust"),
  };
})();
