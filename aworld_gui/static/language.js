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

  let last = shown();
  new MutationObserver(() => {
    const now = shown();
    if (!now || now === last) return;
    const first = last === null;                  // the probe just rendered: the page's start, not a pick
    last = now;
    if (first) return;
    try { localStorage.setItem(KEY, now); } catch (e) { /* not kept: the next load starts from the browser */ }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
})();
