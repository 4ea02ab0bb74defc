// The Check tab (widgets/check.py's CheckTab), drawn by the page from the texts the server sends: one Bokeh model
// for the whole tab instead of about a hundred Panel widgets and panes. Native form controls, so every card works
// with the keyboard (Tab, the arrows within a choice, Enter in a number box, Space and Enter on a button).
//
// The server sends HTML it has escaped (the texts of course/questions/ and what it says about an answer), and
// plain texts, which are set as text. The page sends only messages to its own session:
//   {check: id, answer: choice index, null or the typed text}, {show: id}, {practice: open?},
//   {restart: "ask" | "keep" | "confirm"}.
// What a learner typed or chose but has not checked yet is kept on the model, so it survives the tab being hidden
// and shown again, and a change of language.

const DRAFTS = new WeakMap()  // the component's data model -> {restarts, answers: question id -> box or choice}

export function render({ model, data }) {
  const make = (tag, cls, text) => {
    const e = document.createElement(tag)
    if (cls) e.className = cls
    if (text != null) e.textContent = text
    return e
  }
  const html = (cls, inner) => {  // a box whose first div holds the server's HTML (the tests' hook: .cls > div)
    const box = make("div", cls), body = make("div")
    box.append(body)
    if (inner != null) body.innerHTML = inner
    return [box, body]
  }
  if (!DRAFTS.has(data)) DRAFTS.set(data, {restarts: model.restarts, answers: {}})
  const kept = DRAFTS.get(data), drafts = kept.answers

  const root = make("div", "check-tab")
  const [intro, introBody] = html("check-intro")
  const [notice, noticeBody] = html("check-notice")
  noticeBody.setAttribute("role", "alert")
  const [score, scoreBody] = html("check-score")
  scoreBody.setAttribute("role", "status")
  const own = make("p", "check-own")
  const [tasksIntro, tasksIntroBody] = html("check-tasks-intro")
  const tasks = make("div", "check-tasks")
  const questions = make("div", "check-questions")
  const [trainIntro, trainIntroBody] = html("check-train")
  const trainQuestions = make("div", "check-train-questions")
  const [modelIntro, modelIntroBody] = html("check-model")
  const modelQuestions = make("div", "check-model-questions")
  const [practiceIntro, practiceIntroBody] = html("check-practice")
  const practiceToggle = make("button", "check-practice-toggle")
  practiceToggle.type = "button"
  const practice = make("div", "check-practice-cards")
  practice.id = "check-practice-cards"
  practiceToggle.setAttribute("aria-controls", practice.id)
  const restart = make("div", "check-restart")
  const start = make("button", "check-start-again"), confirm = make("button", "danger check-confirm")
  const keep = make("button", "check-keep")
  for (const b of [start, confirm, keep]) b.type = "button"
  restart.append(start, confirm, keep)
  const [lab, labBody] = html("check-lab")
  root.append(intro, notice, score, own, tasksIntro, tasks, questions, trainIntro, trainQuestions, modelIntro,
              modelQuestions, practiceIntro,
              practiceToggle, practice, restart, lab)

  let cards = {}  // question id -> its elements

  function card(q) {
    const section = make("section", `check-question question-${q.id}`)
    const prompt = make("div", "check-prompt")
    prompt.innerHTML = q.prompt
    const heading = prompt.querySelector("h4")
    if (heading) {
      heading.id = `check-title-${q.id}`
      section.setAttribute("aria-labelledby", heading.id)
    }
    const c = {section, kind: q.kind, inputs: []}
    let field
    if (q.kind === "choice") {
      field = make("fieldset", "check-choices")
      field.append(make("legend", "visually-hidden", q.title))
      q.choices.forEach((text, i) => {
        const label = make("label"), radio = make("input")
        Object.assign(radio, {type: "radio", name: `check-${q.id}`, value: String(i)})
        radio.addEventListener("change", () => { drafts[q.id] = i })
        label.append(radio, make("span", null, text))
        field.append(label)
        c.inputs.push(radio)
      })
    } else {
      field = make("label", "check-number")
      const input = make("input")
      Object.assign(input, {type: "text", inputMode: "decimal", maxLength: model.max_chars, autocomplete: "off",
                            spellcheck: false})
      input.addEventListener("input", () => { drafts[q.id] = input.value })
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") send(q.id) })
      c.caption = make("span", "check-caption")
      field.append(c.caption, input)
      c.inputs.push(input)
    }
    const buttons = make("div", "check-buttons")
    c.check = make("button", "primary check-check")
    c.show = make("button", "check-show")
    for (const b of [c.check, c.show]) b.type = "button"
    c.check.addEventListener("click", () => send(q.id))
    c.show.addEventListener("click", () => model.send_msg({show: q.id}))
    buttons.append(c.check, c.show)
    const [feedback, feedbackBody] = html(`check-feedback feedback-${q.id}`)
    feedbackBody.setAttribute("role", "status")
    c.feedback = feedbackBody
    section.append(prompt, field, buttons, feedback)
    return c
  }

  function answerOf(id) {
    const c = cards[id]
    if (c.kind === "choice") {
      const chosen = c.inputs.find((r) => r.checked)
      return chosen ? Number(chosen.value) : null
    }
    return c.inputs[0].value
  }

  function send(id) {
    if (!cards[id].check.disabled) model.send_msg({check: id, answer: answerOf(id)})
  }

  function build() {  // the cards, anew for each language: what was typed or chosen stays
    cards = {}
    const built = model.questions.map((q) => [q, (cards[q.id] = card(q))])
    const group = (g) => built.filter(([q]) => q.group === g).map(([, c]) => c.section)
    questions.replaceChildren(...group("section"))
    trainQuestions.replaceChildren(...group("train"))
    modelQuestions.replaceChildren(...group("model"))
    practice.replaceChildren(...group("practice"))
    fill()
  }

  function fill() {  // each card's record: what was said about it, what still applies, the last answer checked
    const words = model.words
    if (kept.restarts !== model.restarts) {  // Start again, here or in another tab: every box and choice empty
      kept.restarts = model.restarts
      for (const id of Object.keys(drafts)) delete drafts[id]
    }
    model.questions.forEach((q, i) => {
      const c = cards[q.id], r = model.records[i]
      if (c === undefined || r === undefined) return
      const value = q.id in drafts ? drafts[q.id] : r.value
      if (c.kind === "choice") c.inputs.forEach((radio, k) => { radio.checked = value === k })
      else {
        c.inputs[0].value = value == null ? "" : String(value)
        c.inputs[0].placeholder = words.a_number
        c.caption.textContent = words.your_answer
      }
      for (const input of c.inputs) input.disabled = r.done
      c.check.disabled = r.done
      c.show.disabled = r.done || r.shown
      c.check.textContent = words.check
      c.show.textContent = words.show
      if (c.feedback.innerHTML !== r.feedback) c.feedback.innerHTML = r.feedback
    })
  }

  function texts() {
    const words = model.words
    introBody.innerHTML = model.intro
    noticeBody.innerHTML = model.notice
    notice.hidden = !model.notice
    scoreBody.innerHTML = model.score
    own.textContent = words.own_record
    tasksIntroBody.innerHTML = model.tasks_intro
    trainIntroBody.innerHTML = model.train_intro
    modelIntroBody.innerHTML = model.model_intro
    practiceIntroBody.innerHTML = model.practice_intro
    labBody.innerHTML = model.lab
    practiceToggle.textContent = model.practice_open ? words.close_practice : words.open_practice
    practiceToggle.setAttribute("aria-expanded", String(model.practice_open))
    practice.hidden = !model.practice_open
    start.textContent = words.start_again
    confirm.textContent = words.confirm
    keep.textContent = words.keep
    start.hidden = model.asking
    confirm.hidden = keep.hidden = !model.asking
  }

  function drawTasks() {
    tasks.replaceChildren(...model.tasks.map(([id, inner]) => html(`check-task task-${id}`, inner)[0]))
  }

  practiceToggle.addEventListener("click", () => model.send_msg({practice: !model.practice_open}))
  start.addEventListener("click", () => model.send_msg({restart: "ask"}))
  keep.addEventListener("click", () => model.send_msg({restart: "keep"}))
  confirm.addEventListener("click", () => model.send_msg({restart: "confirm"}))
  model.on("questions", build)
  model.on(["records", "restarts"], fill)
  model.on("tasks", drawTasks)
  model.on(["words", "intro", "notice", "score", "tasks_intro", "train_intro", "model_intro", "practice_intro", "lab", "practice_open", "asking"],
           () => { texts(); fill() })
  texts()
  drawTasks()
  build()
  return root
}
