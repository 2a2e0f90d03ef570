// The Monitor's live view: runs in the run header element (Gradio's ``js_on_load``; ``element``,
// ``props``, ``server`` and ``trigger`` are Gradio's). What to watch comes from the header's data
// attributes (set by Python, aworld_gui/tabs/monitor_tab.py); the stream (aworld_gui/core/live_stream.py)
// pushes what changed, and each part is patched in place.
let es = null, sub = null, shown = null, shownRun = null, lastB;
const clear = () => ['aw-chart-reward', 'aw-chart-loss', 'aw-chart-custom', 'aw-samples', 'aw-events', 'aw-log']
  .forEach(id => put(id, ''));
function morph(a, b) {                           // patch a's DOM into b's, touching only what differs
  if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) { a.replaceWith(b.cloneNode(true)); return; }
  if (a.nodeType === 3) { if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue; return; }
  if (a.nodeType !== 1) return;
  for (const at of b.attributes) if (a.getAttribute(at.name) !== at.value) a.setAttribute(at.name, at.value);
  for (const at of [...a.attributes]) if (!b.hasAttribute(at.name)) a.removeAttribute(at.name);
  const ac = a.childNodes, bc = b.childNodes;
  if (ac.length !== bc.length) { a.replaceChildren(...[...bc].map(n => n.cloneNode(true))); return; }
  for (let i = 0; i < bc.length; i++) morph(ac[i], bc[i]);
}
function put(id, html) {           // patch a part in place: a new curve moves points, it does not rebuild
  const el = document.getElementById(id);
  if (!el) return;
  const b = el.cloneNode(false);
  b.innerHTML = html;
  morph(el, b);
}
function setLog(el, text) {        // a tail that moved on: drop the lines that left it, append the new ones
  const cur = el.textContent, node = el.firstChild;
  if (text === cur) return;
  const i = node && el.childNodes.length === 1 && node.nodeType === 3 ? cur.indexOf(text.slice(0, 200)) : -1;
  if (i >= 0 && text.startsWith(cur.slice(i))) { node.deleteData(0, i); node.appendData(text.slice(cur.length - i)); }
  else el.textContent = text;
}
function setHeader(html) {         // same view: patch the text that changed (no re-render, little layout)
  const cur = element.querySelector('[data-testid="run-header"]'), t = document.createElement('template');
  t.innerHTML = html;
  const next = t.content.firstElementChild;
  if (cur && next && cur.dataset.gen && cur.dataset.gen === next.dataset.gen) morph(cur, next);
  else props.value = html;
}
function apply(r) {
  if (r.header) setHeader(r.header);
  if (r.charts) for (const [k, v] of Object.entries(r.charts)) put('aw-chart-' + k, v);
  if (r.samples != null) put('aw-samples', r.samples);
  if (r.events != null) put('aw-events', r.events);
  if (r.log != null) {
    const el = document.getElementById('aw-log');
    if (el) { const tail = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
              setLog(el, r.log); if (tail) el.scrollTop = el.scrollHeight; }
  }
  // state/metrics changed: the buttons. Also on a new stream's first message: the run may have changed state
  // between the header's render (and the buttons computed with it) and this stream's start (a Stop that
  // finished at once left Kill showing on a stopped run)
  if (r.keys.b !== lastB) trigger('apply');
  lastB = r.keys.b;
}
function pageLocale() {            // the page's language: the title's locale probe, which Gradio translates
  // (one probe in the page: one the stream rendered in the header kept the old language after a switch)
  const el = document.querySelector('[data-aw-locale]');
  return el && el.textContent && !el.textContent.includes('__i18n__') ? el.textContent : 'en';
}
async function sync() {            // (re)open the stream for what the header shows, or close it
  if (!element.isConnected) { if (es) es.close(); es = null; return; }     // unmounted
  const head = element.querySelector('[data-run]');
  if (!head && shown !== null) {                  // no run shown any more: nothing of it, nor its buttons
    shown = shownRun = null; clear(); dropPending(); trigger('apply');
  }
  const want = head && !document.hidden && element.offsetParent !== null
    ? [head.dataset.run, head.dataset.gen, JSON.parse(head.dataset.picks || '[]'), parseFloat(head.dataset.smoothing || '0'),
       pageLocale()]
    : null;
  const key = want && JSON.stringify(want);
  if (key === sub) return;
  sub = key;
  if (es) { es.close(); es = null; delete element.dataset.stream; }
  if (!want) return;
  if (want[1] !== shown) {
    if (want[0] !== shownRun) clear();            // another run: nothing of the last one under its header
    shown = want[1]; shownRun = want[0]; lastB = undefined; dropPending();
  }
  try {
    const ticket = await server.live_ticket(...want);
    if (sub !== key) return;                      // the view changed meanwhile
    es = new EventSource('aworld/live/' + ticket);
    element.dataset.stream = es.url;              // which stream this page reads (tests, benchmarks)
    es.onmessage = e => { reachable(true); if (sub === key) apply(JSON.parse(e.data)); };
    es.onerror = () => {
      reachable(false);
      if (es && es.readyState === EventSource.CLOSED) { sub = null; setTimeout(sync, 2000); }
    };
  } catch (e) { reachable(false); sub = null; setTimeout(sync, 2000); }     // the studio restarting: try again
}
// The stream down (the studio stopped or unreachable): after a grace of a few seconds (a stream that
// reconnects at once says nothing) the header says so — runs keep training, its figures are the last ones
// received — until the next message, which hides it again. The text is the header's own (translated).
let offlineTimer = null;
function reachable(ok) {
  if (ok) {
    clearTimeout(offlineTimer); offlineTimer = null;
    if (element.dataset.offline) { delete element.dataset.offline; }
    element.querySelectorAll('[data-testid="studio-unreachable"]').forEach(b => { b.hidden = true; });
  } else if (offlineTimer === null && !element.dataset.offline) {
    offlineTimer = setTimeout(() => {
      offlineTimer = null;
      element.dataset.offline = '1';
      element.querySelectorAll('[data-testid="studio-unreachable"]').forEach(b => { b.hidden = false; });
    }, 4000);
  }
}
// A Stop, Kill or Resume press shows at once: the pressed button is marked pending in the page (aworld_gui/rendering/
// theme.py: dimmed, not clickable; Stop reads the header's "Stopping…"). The mark is the page's, not the run's
// state: whether each button shows has one writer, the header's ``apply`` (monitor_tab.py ``buttons``, its
// answers in order), which hides a pressed Stop once the stream has seen the request; a new view drops the mark.
function dropPending() {
  document.querySelectorAll('#stop-btn[data-aw-pending], #kill-btn[data-aw-pending], #resume-btn[data-aw-pending]')
    .forEach(b => { delete b.dataset.awPending; });
}
document.addEventListener('click', ev => {
  const b = element.isConnected && ev.target instanceof Element && ev.target.closest('#stop-btn, #kill-btn, #resume-btn');
  if (!b || shown === null) return;
  const label = element.querySelector('[data-stopping]')?.dataset.stopping || '';
  b.dataset.awPending = b.id === 'stop-btn' && !label.includes('__i18n__') ? label : '';
}, true);
new MutationObserver(sync).observe(element, {childList: true, subtree: true, attributes: true,
                                             attributeFilter: ['data-run', 'data-gen']});
new IntersectionObserver(sync).observe(element);  // the Monitor tab shown / hidden
document.addEventListener('visibilitychange', sync);
let shownLocale = pageLocale();     // Gradio's Settings switch the language without touching this element
const localeTimer = setInterval(() => {
  if (!element.isConnected) { clearInterval(localeTimer); return; }
  const l = pageLocale(); if (l !== shownLocale) { shownLocale = l; sync(); }
}, 1000);
sync();
element.addEventListener('click', ev => {   // a diagnosis's "Clone into Setup" (aworld_gui/tabs/diagnoses_panel.py)
  const b = ev.target.closest('[data-clone-setting]');
  if (!b) return;
  const t = document.querySelector('#monitor-clone-setting textarea, #monitor-clone-setting input');
  if (t) { t.value = b.dataset.cloneSetting; t.dispatchEvent(new Event('input', {bubbles: true})); }
  setTimeout(() => document.getElementById('monitor-clone')?.click(), 50);
  const name = b.dataset.cloneSetting, t0 = Date.now();
  if (!name) return;
  const focus = setInterval(() => {        // once Setup shows the clone's form: the setting to change, focused
    const f = document.querySelector(`#cfg-${name} input`);   // the form's field (config_form_render.py)
    if (f && f.offsetParent !== null && Date.now() - t0 > 1500) {
      clearInterval(focus); f.scrollIntoView({block: 'center'}); f.focus();
    } else if (Date.now() - t0 > 20000) clearInterval(focus);
  }, 250);
});
