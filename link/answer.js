// The answer line: the readout's last line (Output Σ aᵢvᵢ = …) at the bottom of the screen, while the readout's own
// last line is out of view. Part of the browser bridge's module (link/browser.py puts it, and ANSWER_CSS, static/
// answer.css, before link/browser.js, whose render calls answerLine for a page that is the whole app).
//
// On a phone or an upright tablet the page is one column that scrolls as a whole (static/app.css): a tapped tab
// brings its contents up (widgets/tabs.js), and the plot and the readout above them leave the screen. This bar
// copies the readout's text as the page shows it (the server's numbers, or the drag preview's, which link/drag.js
// writes straight into the readout's element) and shows itself only then, unless a tab that takes the stage has set
// the readout aside. While it shows, the page's column ends above it (--ae-answer-room on <html>, its height, is the
// column's bottom margin: static/app.css), so it covers nothing. Where the page is two columns the readout is always
// in view and the bar is not drawn (static/answer.css).
// The server sends nothing for it. Returns what stops it.
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
  // the room kept for it below the page's column: its height while it shows. Showing it only ever hides more of the
  // column (its bottom edge moves up; what is above stays), and hiding it only shows more, so the two never chase
  // each other
  const place = () => {
    const shown = bar.classList.contains("shown") && getComputedStyle(bar).display !== "none"
    const h = shown ? `${Math.ceil(bar.getBoundingClientRect().height)}px` : "0px"
    if (root.style.getPropertyValue("--ae-answer-room") !== h) root.style.setProperty("--ae-answer-room", h)
  }
  const room = new ResizeObserver(place)
  room.observe(bar)
  // the readout's last line is in view when the bottom of its text is inside every box around it and the screen
  // (the observer clips by them all); thresholds a few pixels apart, as the column scrolls
  let inView = true, aside = false
  const show = () => {
    bar.classList.toggle("shown", !inView && !aside)
    place()
  }
  const seen = new IntersectionObserver((entries) => {
    const entry = entries[entries.length - 1]
    if (entry.target !== text) return
    const r = entry.boundingClientRect, v = entry.intersectionRect
    const line = parseFloat(getComputedStyle(text).lineHeight) || 20
    inView = entry.isIntersecting && v.bottom >= r.bottom - 2 && v.height >= Math.min(line, r.height) - 2
    show()
  }, {threshold: Array.from({length: 51}, (_, k) => k / 50)})
  // a readout with no box has been set aside, not scrolled away: a tab that takes the stage (widgets/stage.py: Train,
  // Real model) hides it with the query plot, and its Output line, the first example's, answers nothing shown there.
  // Hiding it changes its size to nothing (an intersection observer may say nothing: it was out of view already)
  const sized = new ResizeObserver(() => {
    const r = text?.getBoundingClientRect()
    aside = r != null && r.width === 0 && r.height === 0
    show()
  })
  // BokehJS draws the readout's text element again when it lays the page out anew (a tab built, a change of
  // language): its view's shadow root stays, and the text element in it is looked up after every change there
  const follow = () => {
    const now = readout?.markup_el
    if (now != null && now !== text) {
      if (text != null) {
        seen.unobserve(text)
        sized.unobserve(text)
      }
      text = now
      seen.observe(text)
      sized.observe(text)
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
    for (const o of [changed, seen, sized, room]) o.disconnect()
    bar.remove()
    root.style.removeProperty("--ae-answer-room")
  }
}
