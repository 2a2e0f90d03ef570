// The edits of the Setup's one spec, the overrides YAML (issue 46: one implementation, here in the page). The form's
// fields are derived from that text (docs/ARCHITECTURE.md, "One spec in Setup"); every edit of it is made by this
// script on the text the page holds at that moment — a field left, a box ticked, a line the settings editor's Set /
// Remove had the server render, an engine picked — so an edit is never a round trip behind another one (an edit
// made after an edit was lost that way). Only the key's line changes: other lines, comments and order stay, and the
// replaced line's comment stays at its column. The events' js= call window.awYaml (config_form_render.py,
// config_editor.py, config_form.switch_engine_js); run with the title's js_on_load (web/page.py). Its tests:
// tests/test_browser_config_form.py, in headless Chromium.
(() => {
  if (window.awYaml) return;
  const keep = () => ({__type__: 'update'});    // an event's output that leaves its component as it is
  const AGENT_MODEL = "(the agent's model)";    // the model picker's "the agent's own" (config_form.AGENT_MODEL)
  const indented = l => /^[ \t-]/.test(l);      // a line of a block value (indented, or a list's item)
  const bare = l => l.split('#')[0];
  // whether l is key's top-level line
  const keyLine = (l, key) => !indented(l) && bare(l).includes(':') && bare(l).split(':')[0].trim() === key;
  function commentAt(l) {                       // where l's comment starts (# at the start or after a space, not
    let quote = null;                           // in quotes), or -1
    for (let i = 0; i < l.length; i++) {
      const c = l[i];
      if (quote) { if (c === '\\' && quote === '"') i++; else if (c === quote) quote = null; }
      else if (c === '"' || c === "'") quote = c;
      else if (c === '#' && (i === 0 || /\s/.test(l[i - 1]))) return i;
    }
    return -1;
  }
  // text with key's top-level line replaced by line (appended if the key is not there; removed for null), or keep()
  // when that changes nothing. A block value under the key (indented or - lines) goes with it; blank and comment
  // lines inside it too, those after it stay. Blank lines at the end go; the text's line ends (\n, \r\n) are kept.
  function setLine(text, key, line) {
    text = text || '';
    const eol = text.includes('\r\n') ? '\r\n' : '\n';
    const lines = text.split(/\r?\n/);
    while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
    const out = [];
    let done = false, inBlock = false, held = [];
    for (const old of lines) {
      if (inBlock && (!old.trim() || old.startsWith('#'))) { held.push(old); continue; }
      if (inBlock && indented(old)) { held = []; continue; }
      out.push(...held);
      held = [];
      inBlock = false;
      if (keyLine(old, key)) {
        if (line !== null && !done) {
          const at = commentAt(old);
          out.push(at < 0 ? line : line + ' '.repeat(Math.max(1, at - line.length)) + old.slice(at));
        }
        done = inBlock = true;
        continue;
      }
      out.push(old);
    }
    out.push(...held);
    if (!done && line !== null) out.push(line);
    const next = out.join(eol) + eol;
    return next.replace(/[\r\n]+$/, '') === text.replace(/[\r\n]+$/, '') ? keep() : next;
  }
  // a form field's value as key's line, or null (the key goes). A number field's text is read as a number (its box
  // is a text box: config_form_render._value); a float keeps a dot (PyYAML reads 1e-05 as a string), an int field's
  // number is rounded; a string is plain when it is a name or a path YAML reads back as that string, else
  // double-quoted (JSON's quoting is YAML's). null, NaN, an empty string and the agent's model give null.
  function line(key, type, value) {
    if ((type === 'int' || type === 'float') && typeof value === 'string') {
      const t = value.trim(), n = Number(t);
      value = t === '' ? null : Number.isFinite(n) ? n : t;  // not a number: written as typed, the check says so
    }
    if (typeof value === 'boolean') return key + ': ' + value;
    if (typeof value === 'number' && Number.isFinite(value)) {
      if (type === 'int') return key + ': ' + Math.round(value);
      if (Number.isInteger(value) && type !== 'float') return key + ': ' + value;
      const [mant, exp] = String(value).split('e');
      return key + ': ' + (mant.includes('.') ? mant : mant + '.0') + (exp === undefined ? '' : 'e' + exp);
    }
    if (typeof value === 'string' && value !== '' && value !== AGENT_MODEL) {
      const plain = /^[A-Za-z_][A-Za-z0-9_./-]*$/.test(value) && !/^(y|n|yes|no|on|off|true|false|null)$/i.test(value);
      return key + ': ' + (plain ? value : JSON.stringify(value));
    }
    return null;
  }
  const edit = (key, type, value, text) => setLine(text, key, line(key, type, value));
  // a form field's edit: the field shows shown (its box: the selector box). Left as it showed, a field the YAML
  // does not set changes nothing (a click in and out pinned its effective value); one it sets writes the same line.
  // Emptied, a field whose key the YAML does not set changes no spec, so nothing updates it: its box is given shown,
  // its effective value, again, as if typed (Gradio does not put back a value it believes the field still has).
  function fieldEdit(key, type, shown, box, value, text) {
    const set = (text || '').split(/\r?\n/).some(l => keyLine(l, key));
    if (!set && value === shown) return keep();
    const next = edit(key, type, value, text);
    const emptied = value === null || value === undefined || value === '' || Number.isNaN(value);
    if (box && shown !== null && shown !== '' && emptied && next.__type__ === 'update') setTimeout(() => {
      const el = document.querySelector(box);
      if (el && el.value === '') { el.value = String(shown); el.dispatchEvent(new Event('input', {bubbles: true})); }
    }, 0);
    return next;
  }
  // the edit of form slot slot: its key, type, shown value and box read from its mark (config_form.slot_mark)
  function slotEdit(slot, value, text) {
    const m = document.querySelector(`[data-testid="form-fields"][data-slot="${slot}"]`);
    if (!m || !m.dataset.key) return keep();
    const d = m.dataset;
    return fieldEdit(d.key, JSON.parse(d.type), JSON.parse(d.shown), d.box || null, value, text);
  }
  // a line the server rendered ({key, line}: the settings editor's Set / Remove) put into the text as it is now
  const applyEdit = (e, text) => (e && e.key ? setLine(text, e.key, e.line ?? null) : keep());
  // another engine picked: each engine keeps its own overrides (one engine's keys mean nothing to another) in the
  // memory {engine, previous, texts}; the last engine's text is put aside, this one's comes back. An engine picked
  // for the first time starts from its defaults, or from its own demo config (demos: engine → text) when the last
  // engine's text is that engine's demo config as shipped (demo: true then). [text or keep(), memory]
  function switchEngine(engine, text, memory, defaultEngine, demos) {
    const m = memory && typeof memory.texts === 'object' && memory.texts ? memory : {};
    const previous = m.engine || defaultEngine;
    const texts = Object.assign({}, m.texts || {});
    if (previous === engine) return [keep(), Object.assign({}, m, {engine, previous, texts})];
    texts[previous] = text || '';
    const has = (o, e) => Object.prototype.hasOwnProperty.call(o, e);
    if (has(texts, engine)) {
      const next = texts[engine];
      delete texts[engine];
      return [next, {engine, previous, texts}];
    }
    demos = demos || {};
    const demo = has(demos, engine) && has(demos, previous) && (text || '').trim() === demos[previous].trim();
    return [demo ? demos[engine] : '', {engine, previous, texts, demo}];
  }
  window.awYaml = {AGENT_MODEL, keyLine, commentAt, setLine, line, edit, fieldEdit, slotEdit, applyEdit, switchEngine};
})();
