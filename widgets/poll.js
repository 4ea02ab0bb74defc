// The page's end of a poll card (widgets/poll.py). widgets/poll.py puts the constants it shares with the
// server before it (BROWSER_KEY, ANSWER_KEY, MAX_NUMBER_CHARS, BROWSER_ID).
// This browser's id, kept in localStorage with its progress: a reloaded page is the same browser, which a
// room's poll lets answer once. Without storage (blocked), the page's own, so a reload is a new browser.
function browserId() {
  const mint = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18))))
    .split("+").join("-").split("/").join("_")
  try {
    let id = localStorage.getItem(BROWSER_KEY)
    if (!new RegExp(`^(?:${BROWSER_ID})$`).test(id || "")) {
      id = mint()
      localStorage.setItem(BROWSER_KEY, id)
    }
    return id
  } catch (e) {
    if (!window.attentionExplorerBrowser) window.attentionExplorerBrowser = mint()
    return window.attentionExplorerBrowser
  }
}
function remembered(key) {
  try {
    const kept = JSON.parse(localStorage.getItem(ANSWER_KEY) || "null")
    return kept && kept.poll === key ? kept.answer : null
  } catch (e) { return null }
}
function remember(key, answer) {
  try { localStorage.setItem(ANSWER_KEY, JSON.stringify({poll: key, answer})) } catch (e) {}
}

export function render({ model }) {
  const make = (tag, cls, text) => {
    const e = document.createElement(tag)
    if (cls) e.className = cls
    if (text != null) e.textContent = text
    return e
  }
  const card = make("div", "poll-card")
  const head = make("div", "poll-head"), title = make("h3"), hide = make("button", "poll-hide")
  hide.type = "button"
  head.append(title, hide)
  const body = make("div", "poll-body")
  const prompt = make("p", "poll-prompt")
  prompt.id = "poll-prompt"
  const choices = make("fieldset", "poll-choices")
  choices.setAttribute("aria-labelledby", "poll-prompt")
  const number = make("label", "poll-number"), numberText = make("span")
  const input = make("input")
  Object.assign(input, {type: "text", inputMode: "decimal", maxLength: MAX_NUMBER_CHARS, autocomplete: "off"})
  number.append(numberText, input)
  const send = make("button", "poll-send primary")
  send.type = "button"
  const status = make("div", "poll-status")
  status.setAttribute("role", "status")
  body.append(prompt, choices, number, send, status)
  card.append(head, body)

  let hidden = false, shown = null, labels = null, reported = null
  // The question is on the screen once the browser has painted it: two animation frames, which a browser runs
  // only while the page is shown. Only then may the page answer (the server checks the nonce and the socket).
  function report(nonce) {
    const poll = model.poll
    if (!nonce || reported === nonce || poll.nonce !== nonce) return
    reported = nonce
    model.send_msg({drawn: poll.id, nonce, browser: browserId(), mine: remembered(poll.key)})
  }
  function draw() {
    const poll = model.poll
    if (poll.id == null) return
    if (poll.id !== shown) {  // a new question: shown, with nothing chosen or typed yet
      shown = poll.id
      hidden = false
      input.value = ""
    }
    const key = JSON.stringify([shown, poll.choices])
    if (key !== labels) {
      labels = key
      choices.replaceChildren(...poll.choices.map((text, i) => {
        const label = make("label"), radio = make("input")
        Object.assign(radio, {type: "radio", name: "poll-choice", value: String(i)})
        label.append(radio, make("span", null, text))
        return label
      }))
    }
    const words = poll.words  // the page's language: the server's catalogs
    numberText.textContent = words.your_answer
    input.placeholder = words.a_number
    send.textContent = words.send
    title.textContent = poll.title
    hide.textContent = hidden ? words.show : words.hide
    hide.setAttribute("aria-expanded", String(!hidden))
    body.hidden = hidden
    prompt.textContent = poll.prompt
    choices.hidden = !(poll.can_answer && poll.kind === "choice")
    number.hidden = !(poll.can_answer && poll.kind === "number")
    send.hidden = !poll.can_answer
    status.replaceChildren(...poll.status.map(([cls, text, strong, after]) => {
      const p = make("p", cls, text)
      if (strong) p.append(make("strong", null, strong))
      if (after) p.append(after)
      return p
    }))
    if (poll.mine != null && poll.key) remember(poll.key, poll.mine)
    const nonce = poll.nonce
    if (nonce && reported !== nonce) requestAnimationFrame(() => requestAnimationFrame(() => report(nonce)))
  }
  const answer = () => {
    const chosen = choices.querySelector("input:checked"), poll = model.poll
    report(poll.nonce)  // drawn it is, if the learner answers before the second frame
    model.send_msg({poll: poll.id, answer: poll.kind === "choice" ? (chosen ? Number(chosen.value) : null)
                                                                  : input.value})
  }
  hide.addEventListener("click", () => { hidden = !hidden; draw() })
  send.addEventListener("click", answer)
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") answer() })
  model.on("poll", draw)
  // the browser this page runs in, named as the card loads: a page there before the question names it before it
  model.send_msg({hello: browserId()})
  draw()
  return card
}
