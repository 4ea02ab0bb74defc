// Positions of a drag on their way to the server, at most one at a time: the query's drag (static/drag.js)
// and the Projections tab's (static/projections.js) send through it. Their server ends pace what they take
// the same way (widgets/channel.py).
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
