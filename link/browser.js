// The page's end of BrowserBridge (link/browser.py): keys to the server, the look on <html>, the address bar,
// the Check tab's progress in localStorage, the connection-lost banner, the answer line. Panel loads it as the
// component's module; link/browser.py puts the constants it shares with the server before it (FINE_NUDGE, NUDGE,
// STORE_NAME, STORAGE_KEY, MAX_JSON_CHARS, ANSWER_CSS), and link/answer.js.
const TEXT_INPUTS = new Set(["INPUT", "TEXTAREA", "SELECT"])
const CLICKABLE_INPUTS = new Set(["checkbox", "radio", "button", "submit", "reset", "file"])
const OWN_ARROWS = new Set(["slider", "tab", "tablist", "listbox", "menu", "menubar", "radiogroup", "spinbutton"])
const KEYS = new Set(["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", " ", "1", "2", "3", "r", "R"])

function wantsKey(e) {
  const path = e.composedPath()
  const target = path[0]
  if (!(target instanceof Element)) return true
  const tag = target.tagName
  if (target.isContentEditable) return false
  if (TEXT_INPUTS.has(tag) && !(tag === "INPUT" && CLICKABLE_INPUTS.has(target.type))) return false
  const role = target.getAttribute("role")
  if (e.key.startsWith("Arrow") && role && OWN_ARROWS.has(role)) return false
  // a radio button moves its group's choice with the arrows (the Check tab's answers)
  if (e.key.startsWith("Arrow") && tag === "INPUT" && target.type === "radio") return false
  const activates = tag === "BUTTON" || tag === "A" || tag === "INPUT" || ["button", "switch", "checkbox", "tab"].includes(role)
  if ((e.key === " " || e.key === "Enter") && activates) return false
  return true
}

// A nudge is previewed like a tap at the nudged position (link/drag.js's pointer handler, told not to send
// it: the key goes to the server), so the numbers change on this key press; the server's arrive after.
// Same arithmetic as handle_key: 9-decimal rounding, then the plane's bounds (the callback clamps).
const STEPS = {ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1]}
function previewNudge(doc, key, shift, inPlot) {
  // link/drag.js's handler for this document's query plot, once it is on the page
  const preview = window.attentionExplorerPointers?.get(doc)
  const inputs = doc.get_model_by_name("drag-inputs")
  if (preview == null || inputs == null) return
  if (inputs.data.guided[0] && !inPlot && (key === "ArrowLeft" || key === "ArrowRight")) return  // a step
  const h = shift ? FINE_NUDGE : NUDGE, [dx, dy] = STEPS[key]
  const round9 = (v) => Math.round(v * 1e9) / 1e9
  const q = doc.get_model_by_name("drag-confirmed").data
  preview({event_name: "tap", x: round9(q.x[0] + dx * h), y: round9(q.y[0] + dy * h), preview_only: true})
}

// The page's changes to BokehJS below replace or wrap names of BokehJS 3.10.2 (the version Bokeh 3.10.2 serves,
// pinned in requirements.txt). Each looks its name up as the page loads; a name BokehJS no longer has is said once in
// the browser's console, naming it, and the change is left out (BokehJS's own behaviour runs): never silently.
// server/patches/ does the same for the server's changes to Bokeh's and Panel's Python code.
const LAYOUT_STEPS = ["invalidate_layout", "update_layout", "update_style", "after_layout"]
const missingSaid = new Set()
function missingInBokehJS(name) {
  if (missingSaid.has(name)) return
  missingSaid.add(name)
  console.warn(`Attention Explorer: BokehJS has no ${name} (the page's change to it was written for BokehJS 3.10.2); ` +
               "left out, BokehJS's own behaviour runs")
}

// BokehJS restyles a layout from scratch whenever the page is laid out again (a notice shown above, a figure
// resized), and on the way the shown tab's scrolling contents went back to their top, away from the box a
// learner had just typed in. The tabs and the layouts around them keep that place through their restyling.
// The place is the one the tab's own scroll events last reported: reading it live is a layout the browser
// must do, hundreds of times as the page first lays itself out. True once done.
const scrolled = new WeakMap()  // a tab's scrolling contents -> {top, left}, from its scroll events

function focusedIn(area) {
  let el = document.activeElement
  while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement
  for (let n = el; n != null; n = n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null))
    if (n === area) return el
  return null
}

function keepTabsScroll(doc) {
  const model = [...doc.all_models].find((m) => (m.css_classes || []).includes("explorer-tabs"))
  const tabs = model && window.Bokeh.index.find_one(model)
  if (tabs == null) return false
  layOutShownTabOnly(tabs)
  const shown = () => {
    const child = tabs.model.tabs[tabs.model.active]?.child
    const area = tabs.child_views.find((v) => v.model === child)?.el
    if (area != null && !scrolled.has(area)) {
      scrolled.set(area, {top: 0, left: 0})
      area.addEventListener("scroll", () => scrolled.set(area, {top: area.scrollTop, left: area.scrollLeft}),
                            {passive: true})
    }
    return area
  }
  // a relayout starts at any view and runs up to the root and down again: whichever of these views it
  // enters puts the place back as it leaves, if the relayout lost it
  for (let v = tabs; v != null; v = v.parent) {
    if (v.keepsTabsScroll) continue
    v.keepsTabsScroll = true
    for (const name of LAYOUT_STEPS) {
      const step = v[name]
      if (typeof step !== "function") { missingInBokehJS(`${v.constructor?.name ?? "a layout view"}.${name}`); continue }
      v[name] = function (...args) {
        const out = step.apply(this, args)
        const area = shown(), place = area && scrolled.get(area)
        if (place != null && (place.top > 0 || place.left > 0) &&
            (area.scrollTop !== place.top || area.scrollLeft !== place.left)) {
          area.scrollTop = place.top
          area.scrollLeft = place.left
          // and the box being typed in stays in sight (a notice above pushes the tab down)
          focusedIn(area)?.scrollIntoView({block: "nearest"})
        }
        return out
      }
    }
  }
  return true
}

// BokehJS lays out every tab built so far whenever the page is laid out again: on each tab switch, each window
// resize, each notice shown. A hidden tab is not displayed (BokehJS and Panel hide it), so its layout is of no
// use until it is shown, and a tab switch lays out the tab it shows. Only the shown tab is laid out, and a hidden
// one until it has finished its first drawing (a preset rebuilds plots in hidden tabs; BokehJS's idle signal waits
// for them): a switch between built tabs costs the same however many tabs a learner has opened.
function layOutShownTabOnly(tabs) {
  if (Object.prototype.hasOwnProperty.call(tabs, "layoutable_views")) return
  let all = null
  try {
    all = Object.getOwnPropertyDescriptor(window.Bokeh.require("models/layouts/layout_dom").LayoutDOMView.prototype,
                                          "layoutable_views")?.get
  } catch {}
  if (all == null) { missingInBokehJS("LayoutDOMView.prototype.layoutable_views"); return }  // another BokehJS
  Object.defineProperty(tabs, "layoutable_views", {configurable: true, get() {
    const shown = this.model.tabs[this.normalized_active]?.child
    return all.call(this).filter((v) => v.model === shown || !v.has_finished())
  }})
}

// BokehJS asks the CSS cascade for a `--bk-*` variable before it uses each line, fill, text and hatch property of
// anything it paints (bokeh/bokeh#15286): a style recalculation each time, since painting changes styles. The app
// defines no such variable (tests/test_page_styles.py checks its stylesheets), so for its own documents the
// answer is the model's value at once; other documents (a notebook's other outputs) keep Bokeh's lookup.
const ownDocuments = new WeakSet()
function paintFromModels(doc) {
  ownDocuments.add(doc)
  let proto = null
  try { proto = window.Bokeh.require("core/visuals/visual").VisualProperties.prototype } catch {}
  const lookup = proto?._get_css_value
  if (typeof lookup !== "function") { missingInBokehJS("VisualProperties.prototype._get_css_value"); return }
  if (lookup.original != null) return
  const fromModels = function (name) {
    // by the root view's document: a colour bar's own axis and title are models of no document
    return ownDocuments.has((this.obj?.root ?? this.obj)?.model?.document) ? "" : lookup.call(this, name)
  }
  fromModels.original = lookup
  proto._get_css_value = fromModels
}

// Python's repr of a float, as session/address.py writes q: the shortest digits that read back to the same number
// (JavaScript's own choice too), written the way Python writes them: 1.0, 1e-05, 1e+16.
function reprFloat(x) {
  if (Object.is(x, -0)) return "-0.0"
  const [digits, exponent] = x.toExponential().split("e")
  const e = Number(exponent)
  if (e < -4 || e >= 16) return digits + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0")
  const s = String(x)  // fixed-point at these exponents
  return s.includes(".") ? s : s + ".0"
}

// Everything is looked up in this component's own document, never in Bokeh.documents[0]: a notebook page holds
// one document per output (each display of the app, pn.extension's own), made in no fixed order.
export function render({ model, el, view }) {
  const root = document.documentElement
  const doc = view.model.document
  paintFromModels(doc)
  const keep = (tries) => { if (!keepTabsScroll(doc) && tries > 0) requestAnimationFrame(() => keep(tries - 1)) }
  keep(600)  // the tabs may be drawn after this component
  const go = () => { if (model.navigate) window.location.search = model.navigate }
  go()
  model.on("navigate", go)
  const here = window.location.origin + window.location.pathname
  if (model.page_address !== here) model.page_address = here
  // The whole app is the page's main content: one landmark for screen-reader navigation.
  const app = model.whole_page ? document.querySelector("[data-root-id]") : null  // a notebook has its own
  if (app && !app.hasAttribute("role")) app.setAttribute("role", "main")
  // Text sizes come from CSS, which Bokeh's layout does not watch: measure every view again once they apply. A
  // view's invalidate_layout lays out the whole tree of layouts it is in, from its top: once for each such tree
  // (once a view, as before, was the whole page laid out a hundred times over, half a second of a page's load).
  const relayout = () => requestAnimationFrame(() => {
    const { LayoutDOMView } = window.Bokeh.require("models/layouts/layout_dom")
    const tops = new Set()
    for (const m of doc.all_models) {
      let v = window.Bokeh.index.find_one(m)
      if (!(v instanceof LayoutDOMView)) continue
      while (v.parent instanceof LayoutDOMView) v = v.parent  // as LayoutDOMView.invalidate_layout goes up
      tops.add(v)
    }
    for (const v of tops) v.invalidate_layout()
  })
  // the app's root element in a notebook cell (the one Bokeh renders the document into)
  const scope = () => {
    if (model.whole_page) return root
    let n = el
    while (n != null && !(n.dataset && n.dataset.rootId))
      n = n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null)
    return n
  }
  const paint = () => {
    const target = scope()
    if (target == null) { requestAnimationFrame(paint); return }  // not in the page yet
    const changed = target.dataset.mode !== model.mode || target.dir !== model.dir || target.lang !== model.lang
    target.dataset.mode = model.mode
    target.dataset.theme = model.theme
    target.lang = model.lang
    target.dir = model.dir
    if (changed) relayout()
  }
  paint()
  model.on(["mode", "theme", "lang", "dir"], paint)
  // The address bar follows the state a moment after it settles, so a drag does not fill the history; a
  // room's arguments stay, so reloading keeps presenting or following (widgets/room.py).
  let timer = null
  const written = doc.get_model_by_name("page-address")
  const replace = () => {
    clearTimeout(timer)
    const text = written?.text
    if (!text) return
    const next = new URLSearchParams(text)
    // the server's address (BrowserBridge.address), with q where the page's own drag last drew it
    // (link/drag.js): the server writes a drag's q only at the release, which a cut connection never brings
    const drawn = window.attentionExplorerDrawn?.get(doc)?.()
    if (drawn != null) next.set("q", drawn.map(reprFloat).join(","))
    const now = new URLSearchParams(window.location.search)
    for (const name of ["room", "token"]) if (now.has(name)) next.set(name, now.get(name))
    const search = "?" + next.toString()
    if (search !== window.location.search)
      window.history.replaceState(window.history.state, "", search + window.location.hash)
  }
  const address = () => { clearTimeout(timer); timer = setTimeout(replace, 300) }
  // the address as the page opens, then each one the server writes; at once when the page's drag lets go
  if (written != null) {
    address()
    written.connect(written.properties.text.change, address)
    ;(window.attentionExplorerAddress ??= new WeakMap()).set(doc, replace)
  }

  const onKey = (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || !KEYS.has(e.key) || !wantsKey(e)) return
    if (!model.whole_page && !e.composedPath().includes(scope())) return  // the notebook's own keys
    const inPlot = e.composedPath().some((n) => n.classList && n.classList.contains("ae-query-plot"))
    e.preventDefault()  // arrows and Space would otherwise scroll the page
    if (e.key.startsWith("Arrow")) previewNudge(doc, e.key, e.shiftKey, inPlot)
    model.send_msg({key: e.key, shift: e.shiftKey, in_plot: inPlot})
  }
  document.addEventListener("keydown", onKey)
  // the title's language menu (app.py) says what was chosen; the server rewrites the page in place
  const onLanguage = (e) => {
    if (!model.whole_page && !e.composedPath().includes(scope())) return  // another display of the app
    model.send_msg({lang: String(e.detail)})
  }
  document.addEventListener("ae-language", onLanguage)
  // the readout's Output line kept in view on a phone (link/answer.js); a notebook's cell is no phone's page
  const stopAnswer = model.whole_page ? answerLine(doc) : () => {}
  model.on("remove", () => {
    document.removeEventListener("keydown", onKey)
    document.removeEventListener("ae-language", onLanguage)
    clearTimeout(timer)
    stopAnswer()
  })

  // The learner's progress on the Check tab (widgets/check.py's ProgressStore), kept in this browser's
  // localStorage: what it holds goes to this page's own session once as the page opens, and each progress the
  // server writes into its Div is stored. Storage that is disabled, full or private is left alone.
  const progress = doc.get_model_by_name(STORE_NAME)
  if (progress != null) {
    const read = () => { try { return window.localStorage.getItem(STORAGE_KEY) } catch (e) { return null } }
    const write = () => {
      try {
        if (progress.text) window.localStorage.setItem(STORAGE_KEY, progress.text)
        else window.localStorage.removeItem(STORAGE_KEY)
      } catch (e) {}
    }
    const stored = read()
    if (stored) model.send_msg({stored: stored.length <= MAX_JSON_CHARS ? stored : ""})
    else if (progress.text) write()
    progress.connect(progress.properties.text.change, write)
    // Another tab of this browser wrote or removed the progress (Start again): this page takes it too, or its
    // next write would put the old answers back.
    const onStorage = (e) => {
      if (e.storageArea !== window.localStorage || (e.key !== null && e.key !== STORAGE_KEY)) return
      model.send_msg({stored: e.newValue && e.newValue.length <= MAX_JSON_CHARS ? e.newValue : null})
    }
    window.addEventListener("storage", onStorage)
    model.on("remove", () => window.removeEventListener("storage", onStorage))
  }

  // The server went away (a restart, a cut network). Bokeh's own notice is not shown in a Panel page, and
  // a session does not survive a restart, so say so and offer a reload: the address holds the view.
  doc.on_event("connection_lost", () => {
    if (written != null) replace()  // now: a reload may come before the address's usual moment
    if (document.querySelector(".ae-connection-lost")) return
    const banner = document.createElement("div")
    banner.className = "ae-connection-lost"
    banner.setAttribute("role", "alert")
    banner.setAttribute("data-testid", "connection-lost")
    banner.style.cssText = "position: fixed; top: 0; left: 0; right: 0; z-index: 10000; padding: 12px 16px; " +
      "background: #8a1c00; color: #fff; font: 600 20px/1.4 system-ui, sans-serif; text-align: center"
    banner.textContent = model.lost[0] + " "
    const reload = document.createElement("button")
    reload.textContent = model.lost[1]
    reload.style.cssText = "font: inherit; margin-left: 12px; padding: 2px 14px; color: #8a1c00; background: #fff; " +
      "border: 2px solid #fff; border-radius: 4px; cursor: pointer"
    reload.addEventListener("click", () => window.location.reload())
    banner.append(reload)
    document.body.append(banner)
  })
  return document.createElement("span")
}
