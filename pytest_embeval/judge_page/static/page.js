// The judging page: one pair at a time, graded by one key, each grade sent to the server as it is given.
// Every text from the sheet is put on the page with textContent, never parsed as HTML.
'use strict';

const WINDOW_BEHIND = 5;    // pairs kept loaded behind the one on screen
const WINDOW_AHEAD = 40;    // and ahead of it, so the next pair shows at once
const BATCH = 50;           // pairs asked for at a time
const PACE_GRADES = 30;     // the pace is measured over this many of the latest grades

const page = {};
const state = {
  session: null,
  total: 0,
  grades: [],
  notes: [],
  position: 0,
  texts: new Map(),         // position -> {query, title, text, seed, shared}
  loading: new Set(),       // first positions of windows being fetched
  undo: [],                 // {position, grade, notes} before each change made on this page
  stamps: [],               // performance.now() of this page's latest grades
  outbox: [],               // marks given and not sent yet
  sending: null,            // marks sent and not confirmed yet
  paused: false,
  sharedDoneAtStart: false,
  broken: false,
};

function element(id) {
  return document.getElementById(id);
}

function show(node, visible) {
  node.hidden = !visible;
}

async function getJSON(url) {
  const response = await fetch(url, {cache: 'no-store'});
  if (!response.ok) {
    throw new Error(await problem(response));
  }
  return response.json();
}

async function problem(response) {
  if (response.status === 403) {
    return 'the server refused this page: it was restarted or stopped; open the address it printed';
  }
  try {
    return (await response.json()).error;
  } catch (error) {
    return `${response.status} ${response.statusText}`;
  }
}

function fail(message) {
  page.error.textContent = message;
  show(page.error, true);
}

// ------------------------------------------------------------------------------------------ the texts

function windowStart(position) {
  return Math.max(0, position - WINDOW_BEHIND);
}

async function load(first) {
  if (state.loading.has(first)) {
    return;
  }
  state.loading.add(first);
  try {
    const answer = await getJSON(`api/pairs?from=${first}&count=${BATCH}`);
    for (const pair of answer.pairs) {
      state.texts.set(pair.position, pair);
    }
  } finally {
    state.loading.delete(first);
  }
}

function prefetch() {
  const last = Math.min(state.total, state.position + WINDOW_AHEAD);
  for (let position = windowStart(state.position); position < last; position += 1) {
    if (!state.texts.has(position)) {
      load(position).catch((error) => fail(error.message));
      return;
    }
  }
}

// --------------------------------------------------------------------------------------------- render

function gradedCount() {
  return state.grades.filter((grade) => grade !== '').length;
}

function sharedDone() {
  const shared = state.session.shared;
  return shared > 0 && state.grades.slice(0, shared).every((grade) => grade !== '');
}

function timeLeft(value) {
  if (value < 1) {
    return 'under a minute left';
  }
  const total = Math.round(value);
  const hours = Math.floor(total / 60);
  return `about ${hours ? `${hours} h ${total % 60} min` : `${total} min`} left`;
}

function renderProgress() {
  const done = gradedCount();
  page.progress.max = Math.max(1, state.total);
  page.progress.value = done;
  page.done.textContent = `${done} of ${state.total} done`;
  const stamps = state.stamps;
  if (stamps.length >= 2) {
    const perMinute = (stamps.length - 1) / ((stamps[stamps.length - 1] - stamps[0]) / 60000);
    page.pace.textContent = `${perMinute.toFixed(1)} pairs a minute`;
    page.left.textContent = timeLeft((state.total - done) / perMinute);
  } else {
    page.pace.textContent = 'pairs a minute: after two grades';
    page.left.textContent = '';
  }
  const session = state.session;
  if (session.shared > 0) {
    const sharedGraded = state.grades.slice(0, session.shared).filter((grade) => grade !== '').length;
    const finished = sharedGraded === session.shared;
    page.calibration.classList.toggle('finished', finished);
    page.calibration.textContent = finished
      ? `Calibration done: all ${session.shared} shared pairs graded. ` +
        `Compare with the other judge: embeval agreement ${session.sheets[0]} OTHER.csv`
      : `Calibration: ${sharedGraded} of ${session.shared} shared pairs graded ` +
        '(the other judge grades the same ones, first).';
  }
  renderSaved();
}

function renderSaved() {
  const pending = unsaved();
  page.saved.classList.toggle('unsaved', pending > 0 || state.broken);
  if (state.broken) {
    page.saved.textContent = `${pending} not saved`;
  } else {
    page.saved.textContent = pending > 0 ? `saving ${pending}…` : 'saved';
  }
}

function render() {
  const pair = state.texts.get(state.position);
  if (pair === undefined) {
    page.where.textContent = `pair ${state.position + 1} of ${state.total}: loading…`;
    load(windowStart(state.position)).then(render, (error) => fail(error.message));
    return;
  }
  const grade = state.grades[state.position];
  const label = grade === '' ? 'not graded' : `graded ${grade} (${labelOf(grade)})`;
  const part = pair.shared ? ' · shared (calibration)' : '';
  page.where.textContent = `pair ${state.position + 1} of ${state.total} · ${label}${part}`;
  page.query.textContent = pair.query;
  page.title.textContent = pair.title;
  page.text.textContent = pair.text;
  page.seed.textContent = pair.seed ? `A ${pair.seed} claims this document answers the query: confirm it or not.` : '';
  show(page.seed, Boolean(pair.seed));
  for (const button of page.grades.children) {
    button.classList.toggle('chosen', button.dataset.grade === grade);
  }
  if (document.activeElement !== page.note) {
    page.note.value = state.notes[state.position] || '';
  }
  window.scrollTo(0, 0);
  renderProgress();
  prefetch();
}

function labelOf(grade) {
  const step = state.session.scale.find((entry) => entry.grade === grade);
  return step && step.label ? step.label : grade;
}

// ----------------------------------------------------------------------------------------- the writes

// Marks go out at once; those given while a write is on its way go together in the next request, so a
// judge faster than the disk never waits and never queues one request per key.
function save(mark) {
  state.outbox.push(mark);
  renderSaved();
  if (!state.sending) {
    send();
  }
}

async function send() {
  state.sending = state.outbox;
  state.outbox = [];
  try {
    const response = await fetch('api/mark', {
      method: 'POST',
      headers: {'Content-Type': 'application/json'},
      body: JSON.stringify({marks: state.sending}),
    });
    if (!response.ok) {
      throw new Error(await problem(response));
    }
    const marks = await response.json();
    state.sending = null;
    if (state.outbox.length === 0) {
      // Every grade of this page is in: take the sheets' marks, other pages' grades included.
      state.grades = marks.grades;
      state.notes = marks.notes;
      renderProgress();
    } else {
      send();
    }
  } catch (error) {
    state.broken = true;
    const unsaved = state.sending.length + state.outbox.length;
    fail(`Not saved: the last ${unsaved} change(s) (${error.message}). ` +
         'Every grade confirmed before them is in the sheet; restart the server and open its new address.');
    renderSaved();
  }
}

function unsaved() {
  return state.outbox.length + (state.sending ? state.sending.length : 0);
}

function nextUngraded(from) {
  for (let position = from + 1; position < state.total; position += 1) {
    if (state.grades[position] === '') {
      return position;
    }
  }
  for (let position = 0; position <= from; position += 1) {
    if (state.grades[position] === '') {
      return position;
    }
  }
  return -1;
}

function moveTo(position) {
  state.position = Math.min(Math.max(position, 0), state.total - 1);
  show(page.finished, false);
  render();
}

function grade(value) {
  const position = state.position;
  const sharedBefore = sharedDone();
  state.undo.push({position, grade: state.grades[position], notes: state.notes[position]});
  state.grades[position] = value;
  state.stamps.push(performance.now());
  if (state.stamps.length > PACE_GRADES) {
    state.stamps.shift();
  }
  save({position, grade: value});
  const next = nextUngraded(position);
  if (!sharedBefore && sharedDone() && !state.sharedDoneAtStart) {
    pause();
  }
  if (next === -1) {
    finish();
    return;
  }
  moveTo(next);
}

function undo() {
  const last = state.undo.pop();
  if (last === undefined) {
    return;
  }
  state.grades[last.position] = last.grade;
  state.notes[last.position] = last.notes;
  save({position: last.position, grade: last.grade, notes: last.notes});
  page.note.value = last.notes;
  moveTo(last.position);
}

function saveNote() {
  const position = state.position;
  const value = page.note.value.trim();
  page.note.blur();
  if (value === (state.notes[position] || '')) {
    return;
  }
  state.undo.push({position, grade: state.grades[position], notes: state.notes[position]});
  state.notes[position] = value;
  save({position, notes: value});
}

function pause() {
  const session = state.session;
  state.paused = true;
  page.pauseText.textContent =
    `You have graded the ${session.shared} pairs you share with the other judge. Before the rest, ` +
    'check that you agree: when both of you are done, one of you runs';
  page.pauseCommand.textContent = `embeval agreement ${session.sheets[0]} OTHER-JUDGES-COPY.csv`;
  show(page.pause, true);
}

function finish() {
  const session = state.session;
  const sheets = session.sheets.join(' ');
  const golden = session.golden || 'GOLDEN.yaml';
  page.finishedText.textContent =
    `All ${state.total} pairs of ${sheets} are graded and saved. Merge them into the golden set with: ` +
    `embeval merge ${golden} ${sheets}`;
  show(page.finished, true);
  renderProgress();
}

// ------------------------------------------------------------------------------------------- the keys

function onKey(event) {
  if (event.target === page.note) {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      saveNote();
    } else if (event.key === 'Escape') {
      page.note.value = state.notes[state.position] || '';
      page.note.blur();
    }
    return;
  }
  if (state.paused) {
    if (event.key === 'Enter') {
      state.paused = false;
      show(page.pause, false);
    }
    event.preventDefault();
    return;
  }
  if ((event.ctrlKey || event.metaKey) && event.key === 'z') {
    event.preventDefault();
    undo();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  const grades = state.session.scale.map((entry) => entry.grade);
  if (grades.includes(event.key)) {
    event.preventDefault();
    grade(event.key);
  } else if (event.key === 'ArrowLeft') {
    event.preventDefault();
    moveTo(state.position - 1);
  } else if (event.key === 'ArrowRight' || event.key === 's') {
    event.preventDefault();
    moveTo(state.position + 1);
  } else if (event.key === 'u') {
    event.preventDefault();
    undo();
  } else if (event.key === 'n') {
    event.preventDefault();
    page.note.focus();
  }
}

// ---------------------------------------------------------------------------------------------- start

function buildScale(scale) {
  for (const entry of scale) {
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.grade = entry.grade;
    const key = document.createElement('kbd');
    key.textContent = entry.grade;
    button.append(key, entry.label || `grade ${entry.grade}`);
    button.addEventListener('click', () => {
      if (!state.paused) {
        grade(entry.grade);
      }
      button.blur();
    });
    page.grades.append(button);
  }
  const top = scale[scale.length - 1].grade;
  page.keys.textContent =
    `0–${top} grade · ← back · → or s skip · u undo · n note · ` +
    'every grade is saved to the sheet as you give it';
}

async function start() {
  for (const id of ['sheet', 'progress', 'done', 'pace', 'left', 'saved', 'error', 'guidelines',
    'no-guidelines', 'calibration', 'pause', 'finished', 'where', 'query', 'seed', 'title', 'text',
    'grades', 'note', 'keys']) {
    page[id.replace(/-(\w)/g, (_, letter) => letter.toUpperCase())] = element(id);
  }
  page.guidelinesName = element('guidelines-name');
  page.guidelinesText = element('guidelines-text');
  page.pauseText = element('pause-text');
  page.pauseCommand = element('pause-command');
  page.finishedText = element('finished-text');
  const session = await getJSON('api/session');
  state.session = session;
  state.total = session.total;
  state.grades = session.grades;
  state.notes = session.notes;
  state.sharedDoneAtStart = sharedDone();
  page.sheet.textContent = session.sheets.join(' + ') + (session.judge ? ` · ${session.judge}` : '');
  if (session.guidelines) {
    page.guidelinesName.textContent = `(${session.guidelines.name})`;
    page.guidelinesText.textContent = session.guidelines.text;
  } else {
    show(page.guidelines, false);
    page.noGuidelines.textContent = session.golden
      ? `No guidelines: ${session.golden} names no written relevance definition ('guidelines:'), so ` +
        'grade by the scale below and write down what you decide.'
      : 'No guidelines: the server was started without the golden set (--golden GOLDEN.yaml), so its ' +
        'written relevance definition is not shown.';
    show(page.noGuidelines, true);
  }
  show(page.calibration, session.shared > 0);
  buildScale(session.scale);
  document.addEventListener('keydown', onKey);
  if (state.total === 0) {
    page.where.textContent = 'The sheet holds no pairs.';
    return;
  }
  if (session.resume >= state.total) {
    state.position = state.total - 1;
    render();
    finish();
    return;
  }
  moveTo(session.resume);
}

// Closing the tab while a grade is on its way asks first.
window.addEventListener('beforeunload', (event) => {
  if (unsaved() > 0) {
    event.preventDefault();
  }
});

document.addEventListener('DOMContentLoaded', () => {
  start().catch((error) => fail(error.message));
});
