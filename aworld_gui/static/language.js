// The page's language: one of the studio's own, kept across reloads (run with the title's js_on_load; see i18n.py).
// Gradio starts from the browser's language, forgets a language picked in Settings on reload, and its picker
// offers some thirty languages the studio has no text for (a French browser got Gradio's French around English
// text). Here the page is switched, once it is up, to the language last picked on this browser or else the nearest
// of ours; the picker offers only ours; and a pick is remembered when the page's language changes (the title's
// locale probe, which Gradio itself translates, is the one source of the page's language).
(() => {
  const KEY = 'aworld-studio-language';
  const OURS = __AW_LANGUAGES__;                  // Gradio's codes for the languages the studio has text in
  const nearest = code => (code || '').toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
  const shown = () => {                           // the page's language now, as Gradio's code for it
    const probe = document.querySelector('[data-aw-locale]');
    return probe && probe.textContent ? nearest(probe.textContent) : null;
  };
  let saved = null;
  try { saved = localStorage.getItem(KEY); } catch (e) { /* storage refused: the browser's language */ }
  const want = OURS.includes(saved) ? saved : nearest(navigator.language);

  async function gradio() {                       // Gradio's own i18n module: the one instance the page runs
    const url = performance.getEntriesByType('resource').map(e => e.name).find(n => /\/assets\/core-[\w-]+\.js$/.test(n));
    if (!url) throw new Error('Gradio\'s core module is not among the page\'s resources');
    return import(url);
  }
  gradio().then(core => {
    const choices = core.language_choices;        // the picker reads this list when Settings open
    if (Array.isArray(choices)) choices.splice(0, choices.length, ...choices.filter(([, code]) => OURS.includes(code)));
    if (want !== navigator.language || shown() !== want) core.changeLocale(want);
  }).catch(e => console.warn('aworld: the page keeps Gradio\'s language handling:', e));

  // A machine without a Chinese font draws every Chinese character as the same empty box: the page says so, in
  // English (readable there), with the fix. A glyph is missing when it draws like a character no font has.
  function drawn(ch) {
    const c = document.createElement('canvas');
    c.width = c.height = 32;
    const g = c.getContext('2d');
    g.font = '24px sans-serif';
    g.fillText(ch, 2, 26);
    return g.getImageData(0, 0, 32, 32).data.join(',');
  }
  function fontNote(ch = '\u4e2d') {             // 中; tests give a character no font has
    const missing = shown() === 'zh-CN' && drawn(ch) === drawn('\u{10FFFD}');
    let note = document.getElementById('aw-font-note');
    if (missing && !note) {
      note = document.createElement('div');
      note.id = 'aw-font-note';
      note.className = 'aw-msg aw-msg-warn';
      note.textContent = 'This machine has no Chinese font, so Chinese text shows as empty boxes. Install one '
        + '(Debian/Ubuntu: apt-get install fonts-wqy-microhei, or fonts-noto-cjk) and reload, or pick English '
        + 'in Settings (the footer).';
      const title = document.querySelector('.aw-title');
      if (title) title.after(note);
    } else if (!missing && note) note.remove();
  }
  window.awFontNote = fontNote;

  let last = shown();
  fontNote();
  new MutationObserver(() => {
    const now = shown();
    if (!now || now === last) return;
    const first = last === null;                  // the probe just rendered: the page's start, not a pick
    last = now;
    fontNote();
    if (first) return;
    try { localStorage.setItem(KEY, now); } catch (e) { /* not kept: the next load starts from the browser */ }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
})();
