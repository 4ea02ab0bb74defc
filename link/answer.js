// The answer line: the readout's last line (Output Σ aᵢvᵢ = …) at the bottom of the screen, while the readout's own
// last line is out of view. Part of the browser bridge's module (link/browser.py puts it, and ANSWER_CSS, static/
// answer.css, before link/browser.js, whose render calls answerLine for a page that is the whole app).
//
// On a phone or an upright tablet the page is one column that scrolls as a whole (static/app.css): a tapped tab
// brings its contents up (widgets/tabs.js), and the plot and the readout above them leave the screen. This bar
// copies the readout's text as the page shows it (the server's numbers, or the drag preview's, which link/drag.js
// writes straight into the readout's element) and shows itself only then. Its height is the room the page keeps
// below the tabs (--ae-answer-room on <html>, static/app.css), so a tab brought to the top ends above it. Where the
// page is two columns the readout is always in view and the bar is not drawn (static/answer.css). The server sends
// nothing for it. Returns what stops it.
function answerLine(doc) {
  const root = document.documentElement
  if (document.getElementById("ae-answer-css") == null) {
    const style = document.createElement("style")
    style.id = "ae-answer-css"
    style.textContent = ANSWER_CSS
    document.head.append(style)
  }
  const bar = document.createElement("div")
  bar.className = "ae-answer-line"
  bar.setAttribute("aria-hidden", "true")  // the readout and the announcer say it already
  bar.dataset.testid = "answer-line"
  document.body.append(bar)
  let text = null, readout = null
  const copy = () => {
    const lines = (text?.textContent ?? "").split("\n")
    const last = lines[lines.length - 1]
    if (bar.textContent !== last) bar.textContent = last
  }
  // its height is the room kept for it, also while hidden (visibility): the page never jumps as it comes and goes
  const room = new ResizeObserver(() => {
    const h = getComputedStyle(bar).display === "none" ? 0 : Math.ceil(bar.getBoundingClientRect().height)
    root.style.setProperty("--ae-answer-room", `${h}px`)
  })
  room.observe(bar)
  // the readout's last line is in view when the bottom of its text is inside every box around it and the screen
  // (the observer clips by them all); thresholds a few pixels apart, as the column scrolls
  const seen = new IntersectionObserver((entries) => {
    const entry = entries[entries.length - 1]
    if (entry.target !== text) return
    const r = entry.boundingClientRect, v = entry.intersectionRect
    const line = parseFloat(getComputedStyle(text).lineHeight) || 20
    const inView = entry.isIntersecting && v.bottom >= r.bottom - 2 && v.height >= Math.min(line, r.height) - 2
    bar.classList.toggle("shown", !inView)
  }, {threshold: Array.from({length: 51}, (_, k) => k / 50)})
  // BokehJS draws the readout's text element again when it lays the page out anew (a tab built, a change of
  // language): its view's shadow root stays, and the text element in it is looked up after every change there
  const follow = () => {
    const now = readout?.markup_el
    if (now != null && now !== text) {
      if (text != null) seen.unobserve(text)
      text = now
      seen.observe(text)
    }
    copy()
  }
  const changed = new MutationObserver(follow)
  const attach = (tries) => {
    const model = doc.get_model_by_name("readout")
    readout = model && window.Bokeh.index.find_one(model)
    if (readout?.el?.shadowRoot == null || readout.markup_el == null) {
      if (tries > 0) requestAnimationFrame(() => attach(tries - 1))
      return
    }
    changed.observe(readout.el.shadowRoot, {childList: true, characterData: true, subtree: true})
    follow()
  }
  attach(600)  // the readout may be drawn after the bridge
  return () => {
    for (const o of [changed, seen, room]) o.disconnect()
    bar.remove()
  }
}
