// Run by tests/ui/test_layout_screens.py in every tab, mode and screen size. `minFont` is the smallest text
// (CSS px) allowed, 0 for no limit; with `figures` (a list of figure names) only those figures' labels and
// titles are checked, not the rest of the page; with `answer`, only whether the readout's Weights and Output
// lines are in view; with `together` (a list of [what, CSS selector]), only whether the first shown element each
// selector finds (through shadow roots) is wholly in view, all of them at once, with nothing scrolled.
({minFont = 0, figures = null, answer = false, together = null}) => {
  const problems = [];
  const vw = window.innerWidth, vh = window.innerHeight;
  const name = (el) => (el.getAttribute && (el.getAttribute("aria-label") || el.getAttribute("name"))) ||
    (el.textContent || el.value || el.tagName).trim().replace(/\s+/g, " ").slice(0, 40);

  const measure = document.createElement("canvas").getContext("2d");
  // Every element under `root`, through shadow roots, in document order (a host's shadow tree right after the
  // host), to `visit` until it returns false.
  const each = (root, visit) => {
    for (const el of root.querySelectorAll("*")) {
      if (visit(el) === false || (el.shadowRoot && each(el.shadowRoot, visit) === false)) return false;
    }
    return true;
  };
  // The page's elements, listed once for the whole check: the page holds thousands (every tab shown before stays
  // in it, hidden).
  let all = null;
  const deep = () => {
    if (all == null) { all = []; each(document, (el) => { all.push(el); }); }
    return all;
  };
  const parentOf = (el) => el.parentElement || (el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null);
  // Nothing changes the page while it is checked: each element's style is asked for once, and whether it is
  // hidden (itself or any box around it) is known from its parent's answer.
  const styles = new Map();
  const style = (el) => { let cs = styles.get(el); if (!cs) styles.set(el, cs = getComputedStyle(el)); return cs; };
  const overlap = (a, b, tol = 2) =>
    Math.min(a.right, b.right) - Math.max(a.left, b.left) > tol && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > tol;
  const box = (r) => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
  const hiddenOf = new Map();
  const hidden = (el) => {
    if (el == null) return false;
    let h = hiddenOf.get(el);
    if (h === undefined) {
      // the boxes around it first: inside a hidden one (a tab shown before), its own style is never needed
      h = hidden(parentOf(el));
      if (!h) {
        const cs = style(el);
        h = cs.display === "none" || cs.visibility === "hidden" || cs.opacity === "0" || cs.clipPath.startsWith("inset(50%");
      }
      hiddenOf.set(el, h);
    }
    return h;
  };
  // The part of `r` one can see, and whether `r` is cut off: clipped by an ancestor that does not scroll, or by the
  // window's edge, with no scroll container on the way that could bring it into view.
  // What one sees is clipped by every such ancestor, the scroll containers around the first one included (a panel
  // that scrolls inside a page that scrolls shows only what both show).
  function visibility(el, r) {
    let seen = box(r), cut = false, scroller = null;
    for (let a = parentOf(el); a; a = parentOf(a)) {
      const cs = style(a);
      const ox = cs.overflowX, oy = cs.overflowY;
      if (ox === "visible" && oy === "visible") continue;
      const ar = a.getBoundingClientRect();
      seen = {left: Math.max(seen.left, ar.left), top: Math.max(seen.top, ar.top),
              right: Math.min(seen.right, ar.right), bottom: Math.min(seen.bottom, ar.bottom)};
      if (scroller) continue;
      if ([ox, oy].some((o) => o === "auto" || o === "scroll")) { scroller = a; cut = false; continue; }
      if (r.left < ar.left - 1 || r.right > ar.right + 1 || r.top < ar.top - 1 || r.bottom > ar.bottom + 1) cut = true;
    }
    if (!scroller && (r.left < -1 || r.top < -1 || r.right > vw + 1 || r.bottom > vh + 1)) cut = true;
    return {seen, cut, scroller};
  }

  // --- what a class must see together: each element wholly inside the window and inside every box around it
  // (scroll containers included, as they are now), so nobody has to scroll to see them all ---
  if (together) {
    for (const [what, selector] of together) {
      const el = deep().find((e) => e.matches(selector) && !hidden(e) && e.getBoundingClientRect().width > 0);
      if (el == null) { problems.push(`${what} (${selector}) is not shown`); continue; }
      const r = el.getBoundingClientRect(), {seen} = visibility(el, r);
      const out = Math.max(0, -r.left, -r.top, r.right - vw, r.bottom - vh,
                           seen.left - r.left, seen.top - r.top, r.right - seen.right, r.bottom - seen.bottom);
      if (out > 1) {
        problems.push(`${what} is not wholly in view: ${Math.round(out)} px of it hidden ` +
                      `(${[r.left, r.top, r.right, r.bottom].map(Math.round)} in ${vw}x${vh})`);
      }
    }
    return problems;
  }

  // --- the answer: the readout's Weights and Output lines (its last two) inside the window and every box around
  // them, scroll containers included, so nobody has to scroll to see them ---
  if (answer) {
    let readout = null;
    each(document, (el) => { if (el.getAttribute?.("data-testid") !== "readout") return true; readout = el; return false; });
    const text = readout && (readout.shadowRoot?.querySelector(".bk-clearfix") ?? readout);
    if (text == null) return ["no readout"];
    const walker = document.createTreeWalker(text, NodeFilter.SHOW_TEXT);
    const nodes = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n);
    const whole = nodes.map((n) => n.textContent).join("");
    const lines = whole.split("\n");
    // the offset in `whole` of each of the last two lines, as (node, offset) pairs
    const at = (offset) => {
      for (const n of nodes) { if (offset <= n.textContent.length) return [n, offset]; offset -= n.textContent.length; }
      return [nodes[nodes.length - 1], nodes[nodes.length - 1].textContent.length];
    };
    let start = whole.length;
    for (const line of lines.slice(-2).reverse()) {
      const end = start;
      start = end - line.length;
      const range = document.createRange();
      range.setStart(...at(start));
      range.setEnd(...at(end));
      start -= 1;  // the newline before it
      for (const r of range.getClientRects()) {
        if (r.width < 1) continue;
        const what = `the readout's line "${line.slice(0, 40)}"`;
        if (r.top < -1 || r.bottom > vh + 1 || r.left < -1 || r.right > vw + 1) { problems.push(`${what} is out of the window`); break; }
        let clipped = null;
        for (let a = parentOf(text); a && a !== document.documentElement; a = parentOf(a)) {
          const cs = getComputedStyle(a);
          if (cs.overflowX === "visible" && cs.overflowY === "visible") continue;
          const ar = a.getBoundingClientRect();
          if (r.top < ar.top - 1 || r.bottom > ar.bottom + 1 || r.left < ar.left - 1 || r.right > ar.right + 1) { clipped = a; break; }
        }
        if (clipped) { problems.push(`${what} is cut off by ${clipped.tagName.toLowerCase()}.${[...clipped.classList].join(".")}`); break; }
      }
    }
    return problems;
  }

  if (figures == null) {
    // --- the page never scrolls sideways (nor at all: its panels scroll inside themselves) ---
    const doc = document.documentElement;
    if (doc.scrollWidth > vw + 1) problems.push(`the page scrolls sideways: ${doc.scrollWidth} px wide in ${vw}`);
    if (doc.scrollHeight > vh + 1) problems.push(`the page itself scrolls: ${doc.scrollHeight} px tall in ${vh}`);

    // --- nothing scrolls sideways unless it shows that it does: headless Chromium draws no scroll bars, so an element
    // that scrolls sideways must carry the page's scroll hint (--ae-scroll-hint: 1, static/theme.css: a bar drawn
    // and a shadow at the side where more waits); anything else wider than its box is a table to reflow or shrink ---
    for (const el of deep()) {
      if (!(el instanceof HTMLElement) || el.scrollWidth <= el.clientWidth + 1) continue;
      const cs = style(el);
      if (!["auto", "scroll"].includes(cs.overflowX) || hidden(el)) continue;
      if (cs.getPropertyValue("--ae-scroll-hint").trim() !== "1") {
        const host = el.getRootNode() instanceof ShadowRoot ? el.getRootNode().host : null;
        const where = `${el.tagName.toLowerCase()}.${[...el.classList].join(".")}` +
          (host ? ` in ${host.tagName.toLowerCase()}.${[...host.classList].join(".")}` : "");
        problems.push(`scrolls sideways with no hint: ${where} "${name(el)}" (${el.scrollWidth} px in ${el.clientWidth})`);
      }
    }

    // --- every text box, with the element that holds it ---
    const texts = [];   // {el, r, seen, label, group}
    const marks = [];   // boxes that text must not hide: figure canvases, SVG chart marks
    const small = [];
    for (const el of deep()) {
      if (["STYLE", "SCRIPT", "TITLE", "NOSCRIPT", "TEMPLATE", "OPTION"].includes(el.tagName)) continue;
      const isInput = (el.tagName === "INPUT" && !["checkbox", "radio", "hidden", "file"].includes(el.type)) || el.tagName === "SELECT";
      const isCanvas = el.classList.contains("bk-Canvas");
      const isMark = el instanceof SVGElement && ["rect", "line"].includes(el.tagName) && !el.classList.contains("axis");
      const own = [];
      for (const n of el.childNodes) {
        if (n.nodeType !== 3) continue;
        const t = n.textContent.trim();
        if (t && t !== "\u200b") own.push(n);
      }
      // most elements hold no text of their own and draw nothing: nothing more to ask of them
      if (!own.length && !isInput && !isCanvas && !isMark) continue;
      if (el.closest(".katex-mathml")) continue;
      if (isCanvas) {
        const r = el.getBoundingClientRect();
        if (r.width > 2 && r.height > 2 && !hidden(el)) marks.push({el, r: visibility(el, r).seen, label: "figure " + name(parentOf(el) || el)});
      }
      if (isMark) {
        const r = el.getBoundingClientRect();
        if ((r.width > 1 || r.height > 1) && !hidden(el)) marks.push({el, r: visibility(el, r).seen, label: `chart ${el.tagName}.${el.getAttribute("class") || ""}`, svg: el.ownerSVGElement});
      }
      if (!own.length && !isInput) continue;
      if (hidden(el)) continue;
      const katex = el.closest(".katex");  // KaTeX stacks its own parts (fractions, scripts): one box for a formula
      const rects = [];
      if (isInput) rects.push(el.getBoundingClientRect());
      else for (const n of own) { const range = document.createRange(); range.selectNodeContents(n); rects.push(...range.getClientRects()); }
      for (const r of rects) {
        if (r.width < 1 || r.height < 1) continue;
        const v = visibility(el, r);
        const w = v.seen.right - v.seen.left, h = v.seen.bottom - v.seen.top;
        if (w < 1 || h < 1) {
          if (v.cut) problems.push(`cut off, no way to scroll to it: "${name(el)}"`);
          continue;  // scrolled out of its panel's view
        }
        const label = (isInput ? "input " : "") + `"${name(el)}"`;
        texts.push({el, r: box(r), seen: v.seen, label, group: katex || (el instanceof SVGElement ? el : null)});
        if (v.cut) problems.push(`cut off, no way to scroll to it: ${label}`);
      }
      if (isInput && el.scrollWidth > el.clientWidth + 1) problems.push(`an input too narrow for its text: "${el.value}"`);
      // a select's scrollWidth never exceeds its box in some Chromium builds, however much of its choice is cut:
      // each choice it can show is measured in its own font against the room inside its padding (the arrow's)
      if (el.tagName === "SELECT") {
        const cs = style(el);
        measure.font = cs.font;
        const room = el.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        for (const option of el.options)
          if (measure.measureText(option.text).width > room + 1) problems.push(`an input too narrow for its text: "${option.text}"`);
      }
      if (minFont) {
        const size = parseFloat(style(el).fontSize);
        // KaTeX's index letters (the i of s_i, the j under a sum): letters only, never a number
        const script = !!el.closest(".katex") && !/\d/.test(el.textContent);
        if (size < minFont - 0.01 && !script) small.push(`${label(el)} ${size.toFixed(1)} px`);
      }
    }
    function label(el) { return `"${name(el)}"`; }
    if (small.length) problems.push(`text under ${minFont} px: ${[...new Set(small)].slice(0, 12).join("; ")}`);

    // --- no two text boxes overlap; no text box lies over a figure or a chart's marks ---
    for (let i = 0; i < texts.length; i++) {
      const a = texts[i];
      for (let j = i + 1; j < texts.length; j++) {
        const b = texts[j];
        if (a.el === b.el || (a.group && a.group === b.group)) continue;
        if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
        if (overlap(a.seen, b.seen)) problems.push(`text over text: ${a.label} and ${b.label}`);
      }
      for (const m of marks) {
        if (m.el.contains(a.el)) continue;
        if (m.svg && a.el.ownerSVGElement !== m.svg) continue;   // a chart's own marks against its own text
        // a matrix's number inside its own cell is written on it, not over it (it hides nothing)
        if (m.svg && m.el.classList.contains("cell") && a.seen.left >= m.r.left - 1 && a.seen.right <= m.r.right + 1 &&
            a.seen.top >= m.r.top - 1 && a.seen.bottom <= m.r.bottom + 1) continue;
        if (overlap(a.seen, m.r)) problems.push(`text over a mark: ${a.label} on ${m.label}`);
      }
    }
  }

  // --- inside each Bokeh figure: labels never overlap each other or a marker, stay in the frame; titles fit ---
  // the planes whose picture is geometry: the query plane, the values' plane, the Projections tab's two planes
  const EQUAL_UNITS = ["query-plot", "value-plane", "projection-x", "projection-w"];
  const fontOf = (model) => `${model.text_font_style} ${typeof model.text_font_size === "string" ? model.text_font_size : model.text_font_size?.value ?? "16px"} ${model.text_font}`;
  for (const model of Bokeh.documents[0].all_models) {
    if (model.type !== "Figure" && model.type !== "Plot") continue;
    if (figures != null && !figures.includes(model.name)) continue;
    const view = Bokeh.index.find_one(model);
    if (view == null || !view.el.isConnected || hidden(view.el) || view.el.getBoundingClientRect().width < 2) continue;
    const fig = view.model.name || view.model.title?.text || "figure";
    const title = view.model.title;
    const frame = view.frame.bbox;
    if (title && title.text) {
      measure.font = fontOf(title);
      const width = measure.measureText(title.text).width;
      // a title starts at the frame's left edge and may run on to the figure's right one
      const room = view.bbox.width - (title.align === "left" ? frame.left : 0) - 4;
      if (width > room) problems.push(`${fig}: title "${title.text}" is ${width | 0} px in ${room | 0} px of its figure`);
    }
    // --- a plane's units: one unit as long across as up, so angles and lengths are true (a dot product's picture) ---
    if (EQUAL_UNITS.includes(model.name)) {
      const across = frame.width / Math.abs(model.x_range.end - model.x_range.start);
      const up = frame.height / Math.abs(model.y_range.end - model.y_range.start);
      if (!(Math.abs(across / up - 1) <= 0.01))
        problems.push(`${fig}: one unit is ${across.toFixed(1)} px across and ${up.toFixed(1)} px up`);
    }
    const labels = [], markers = [], leaders = [];
    for (const rv of view.renderer_views.values()) {
      if (!rv.model.visible || !rv.glyph) continue;
      const g = rv.glyph, type = g.model.type;
      const n = g.data_size ?? g.sx?.length ?? 0;
      if (type === "Segment" && rv.model.name === "label-leaders") {
        for (let i = 0; i < n; i++)
          if (isFinite(g.sx0[i] + g.sy0[i] + g.sx1[i] + g.sy1[i]) && (g.sx0[i] !== g.sx1[i] || g.sy0[i] !== g.sy1[i]))
            leaders.push({x0: g.sx0[i], y0: g.sy0[i], x1: g.sx1[i], y1: g.sy1[i]});
      } else if (type === "Text" && g.labels) {
        for (let i = 0; i < n; i++) {
          const sx = g.sx[i] + g.x_offset.get(i), sy = g.sy[i] + g.y_offset.get(i);
          if (!isFinite(sx + sy) || g.labels[i] == null) continue;
          const anchor = g.anchor_.get(i), w = g.swidth[i], h = g.sheight[i];
          const r = {left: sx - anchor.x * w, top: sy - anchor.y * h};
          r.right = r.left + w; r.bottom = r.top + h;
          const text = String(g.labels[i].text ?? "");
          if (!text.trim()) continue;
          labels.push({r, text, renderer: rv.model.id});
          if (r.left < frame.left - 1 || r.right > frame.right + 1 || r.top < frame.top - 1 || r.bottom > frame.bottom + 1)
            problems.push(`${fig}: label "${text}" runs out of the plot's frame`);
        }
      } else if (type === "Scatter") {
        for (let i = 0; i < n; i++) {
          const s = g.size.get(i) / 2;
          if (isFinite(g.sx[i] + g.sy[i])) markers.push({left: g.sx[i] - s, top: g.sy[i] - s, right: g.sx[i] + s, bottom: g.sy[i] + s});
        }
      }
    }
    // a leader line runs from its point to its own label's edge, and through no other label (Liang-Barsky,
    // the box shrunk by a pixel so that touching is not crossing)
    const crosses = (s, b) => {
      let t0 = 0, t1 = 1;
      const dx = s.x1 - s.x0, dy = s.y1 - s.y0;
      for (const [p, q] of [[-dx, s.x0 - b.left - 1], [dx, b.right - 1 - s.x0], [-dy, s.y0 - b.top - 1], [dy, b.bottom - 1 - s.y0]]) {
        if (p === 0) { if (q < 0) return false; continue; }
        const t = q / p;
        if (p < 0) t0 = Math.max(t0, t); else t1 = Math.min(t1, t);
        if (t0 > t1) return false;
      }
      return true;
    };
    const touches = (x, y, b) => x >= b.left - 1.5 && x <= b.right + 1.5 && y >= b.top - 1.5 && y <= b.bottom + 1.5;
    for (const s of leaders)
      for (const l of labels)
        if (!touches(s.x1, s.y1, l.r) && crosses(s, l.r)) problems.push(`${fig}: a leader line runs through label "${l.text}"`);
    for (let i = 0; i < labels.length; i++) {
      for (let j = i + 1; j < labels.length; j++)
        if (overlap(labels[i].r, labels[j].r, 1)) problems.push(`${fig}: label "${labels[i].text}" over label "${labels[j].text}"`);
      for (const m of markers) if (overlap(labels[i].r, m, 1)) problems.push(`${fig}: label "${labels[i].text}" over a marker ${JSON.stringify([labels[i].r, m].map(b => [b.left, b.top, b.right, b.bottom].map(Math.round)))}`);
    }
  }
  return [...new Set(problems)];
}
