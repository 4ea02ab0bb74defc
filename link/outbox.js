// A drag on a plot, from the pointer to the server, shared by the query's drag (link/drag.js) and the
// Projections tab's (link/projections.js): the page's own pointer listening (listenToPointer), and the
// positions on their way to the server, at most one at a time (send). Their server ends pace what they take
// the same way (link/channel.py).
//
// `a.channel` is the one-row data source the page writes, `a.confirmed` the server's answer, whose `seq` is
// the last position it has taken. `st` is the drag's own state: outbox (positions waiting to go), inFlight
// (seq of the one sent and not yet answered, 0 for none), seq, sentAt, releaseSeq (seq of the last release
// sent), and sent, a counter a test reads.

// An answer that never comes (a lost message, a server that refused it) holds the drag this long at most.
const ANSWER_WAIT_MS = 3000;

// Queue a position for the server: {x, y, start, end, ...the channel's other columns}. A move replaces a
// move still waiting (only the newest matters), and so does a release (it carries the last position); a
// press never replaces anything. The release goes at once, with whatever still waits before it: whatever
// the page sends after the hand lets go (a key, a click) must reach the server after it.
function send(a, st, m) {
  const last = st.outbox[st.outbox.length - 1];
  if (last != null && !last.start && !last.end && !m.start) st.outbox[st.outbox.length - 1] = m;
  else st.outbox.push(m);
  if (m.end) while (st.outbox.length) write(a, st, st.outbox.shift());
  else pump(a, st);
}

// Send the next waiting position, unless one is in flight and not yet answered (or overdue).
function pump(a, st) {
  if (st.inFlight && performance.now() - st.sentAt < ANSWER_WAIT_MS) return;
  const m = st.outbox.shift();
  if (m != null) write(a, st, m);
}

function write(a, st, m) {
  st.inFlight = ++st.seq;
  if (m.end) st.releaseSeq = st.seq;
  st.sentAt = performance.now();
  st.sent += 1;
  const row = {seq: [st.seq], start: [!!m.start], end: [!!m.end]};
  for (const [k, v] of Object.entries(m)) if (!(k in row)) row[k] = [v];
  a.channel.data = row;
  clearTimeout(st.answerTimer);
  st.answerTimer = setTimeout(() => pump(a, st), ANSWER_WAIT_MS);
}

const answeredSeq = (a) => (a.confirmed.data.seq ? a.confirmed.data.seq[0] : 0);

// The server has answered up to its seq: the next waiting position may go.
function answered(a, st) {
  if (st.inFlight && answeredSeq(a) >= st.inFlight) {
    st.inFlight = 0;
    clearTimeout(st.answerTimer);
    pump(a, st);
  }
}

// The page's own pointer events on a Bokeh figure's view, not Bokeh's gestures: Bokeh recognises a pan only once
// the pointer has moved a few pixels within a short time of the press, so a slow finger (about a pixel per
// move) could hold a drag still the whole time, and a press held a moment before moving became a "press".
// Here any movement with the button or finger down is a drag, and a press let go where it was is a tap.
// handle gets {event_name: "panstart" | "pan" | "panend" | "tap", x, y} in the plot's data units, as Bokeh
// computes them for its events (UIEventBus._get_sxy); raw, if given, each pointerrawupdate's {x, y} of a drag.
function listenToPointer(view, handle, raw = null) {
  const el = view.canvas_view.events_el, st = {pointerId: null, pressedAt: null, moved: false};
  const at = (e) => {
    const box = el.getBoundingClientRect();
    const sx = e.pageX - (box.left + scrollX - document.documentElement.clientLeft);
    const sy = e.pageY - (box.top + scrollY - document.documentElement.clientTop);
    return {x: view.frame.x_scale.invert(sx), y: view.frame.y_scale.invert(sy)};
  };
  el.addEventListener("pointerdown", (e) => {
    if (st.pointerId != null || (e.pointerType === "mouse" && e.button !== 0)) return;
    st.pointerId = e.pointerId;
    st.pressedAt = at(e);
    st.moved = false;
    el.setPointerCapture(e.pointerId);
  });
  const move = (e) => {
    if (e.pointerId !== st.pointerId) return;
    if (!st.moved) {
      st.moved = true;
      handle({event_name: "panstart", ...st.pressedAt});
    }
    if (e.type === "pointerrawupdate") raw(at(e));
    else handle({event_name: "pan", ...at(e)});
  };
  el.addEventListener("pointermove", move);
  if (raw != null && "onpointerrawupdate" in window) el.addEventListener("pointerrawupdate", move);
  const up = (e) => {
    if (e.pointerId !== st.pointerId) return;
    st.pointerId = null;
    if (st.moved) handle({event_name: "panend", ...at(e)});
    else if (e.type === "pointerup") handle({event_name: "tap", ...st.pressedAt});
  };
  el.addEventListener("pointerup", up);
  el.addEventListener("pointercancel", up);
}
