// Translation markers Gradio leaves in the page (a gr.HTML whose js_on_load is this file; see i18n.py).
// Gradio's front end translates only the FIRST `__i18n__{...}` marker of a string, so an HTML value with
// several translated words shows the rest raw. This replaces every marker left in the page's text (and in
// title / placeholder / aria-label attributes) with the page's language, as the page changes, and keeps the
// tabs' buttons in the page's language.
const TABLES = __AW_TABLES__;
// a marker in a field's info has fullwidth low lines for its underscores (config_form_render._unbolded): Gradio
// renders an info with a small Markdown of its own, which reads `__x__` as bold and `_x_` as italic
const MARKER = /[_\uff3f]{2}i18n[_\uff3f]{2}\{"[_\uff3f]{2}type[_\uff3f]{2}": "translation[_\uff3f]metadata", "key": "(t[0-9a-f]{12})"\}/g;
const HAS_MARKER = /[_\uff3f]{2}i18n/;
function locale() {              // the page's language: the title's probe, which Gradio itself translates
  const probe = document.querySelector('[data-aw-locale]');
  const text = (probe && probe.textContent) || 'en';
  return text.startsWith('zh') ? 'zh' : 'en';
}
const ATTRS = ['title', 'placeholder', 'aria-label'];
const ATTR_SELECTOR = ATTRS.map(a => `[${a}*="__i18n__"]`).join(',');
function hasMarker(root) {       // cheap: text and a native attribute query (never serializes the subtree)
  if (root.nodeType === Node.TEXT_NODE) return HAS_MARKER.test(root.nodeValue);
  if (root.nodeType !== Node.ELEMENT_NODE) return false;
  return HAS_MARKER.test(root.textContent) || root.matches(ATTR_SELECTOR) || root.querySelector(ATTR_SELECTOR) !== null;
}
function fix(root) {
  if (!root || !hasMarker(root)) return;
  const table = TABLES[locale()];
  const swap = s => s.replace(MARKER, (m, key) => table[key] ?? key);
  if (root.nodeType === Node.TEXT_NODE) { root.nodeValue = swap(root.nodeValue); return; }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const hits = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (HAS_MARKER.test(n.nodeValue)) hits.push(n);
  for (const n of hits) n.nodeValue = swap(n.nodeValue);
  const els = [root, ...root.querySelectorAll(ATTR_SELECTOR)];
  for (const el of els) for (const a of ATTRS) { const v = el.getAttribute && el.getAttribute(a); if (v && v.includes('__i18n__')) el.setAttribute(a, swap(v)); }
}
// Gradio translates a tab's button once, and again only when it is selected: after the language changes
// in Settings the other tabs kept the old language. TABS maps each tab's button id to its text's key.
const TABS = __AW_TAB_KEYS__;
function relabelTabs() {
  const table = TABLES[locale()];
  for (const [id, key] of Object.entries(TABS)) {
    const button = document.getElementById(id);
    const want = table[key];
    if (!button || !want || button.textContent.trim() === want) continue;
    const walker = document.createTreeWalker(button, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeValue.trim()) { n.nodeValue = want; break; }
    }
  }
}
new MutationObserver(mutations => {
  relabelTabs();
  for (const m of mutations) {
    if (m.type === 'characterData') { if (HAS_MARKER.test(m.target.nodeValue)) fix(m.target); }
    else if (m.type === 'attributes') fix(m.target);
    else for (const n of m.addedNodes) fix(n);
  }
}).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ATTRS});
fix(document.body);
relabelTabs();
