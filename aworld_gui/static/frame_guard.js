// The frame guard (aworld_gui/web/gradio_patches.py, patch "frame_guard"; docs/UPSTREAM.md, Gradio 2).
// Gradio 6.31's StatusTracker runs a requestAnimationFrame loop while its status is pending and ends it
// from an effect that only runs while the component lives: a tracker removed while pending — the page's
// own "Loading..." tracker, on every load — keeps asking for a frame 60 times a second, for ever, with
// nothing to draw. The bundle keeps its own reference to requestAnimationFrame, taken before any script of
// ours can run, so the loop cannot be wrapped; it can be cancelled: frame requests are numbered in order,
// so a frame this script asks for, then the next, brackets every request made between them.
// Once the page has not changed for QUIET_MS, the guard asks for frames itself; requests made by others
// on each of LOOP_FRAMES frames in a row (~0.25 s) while the page still does not change are a loop that
// draws nothing, and the guard cancels them. A shown timer changes the page 10 times a second (its tenths)
// and is left alone; a page with no such loop costs the guard one frame after each change. Its limit: a
// loop that draws on a <canvas> changes no DOM either and would be cancelled — the studio has none (no
// ImageEditor, Model3D or canvas plot); one that adds such a component must switch the guard off there.
(() => {
  if (window.aworldFrameGuard) return;
  const QUIET_MS = 300;
  const LOOP_FRAMES = 15;
  const MAX_FRAMES = 20;
  const guard = (window.aworldFrameGuard = { probes: 0, cancelled: 0 });
  let timer = null;
  let probing = false;
  let changed = false;

  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(probe, QUIET_MS);
  };

  function probe() {
    probing = true;
    changed = false;
    guard.probes += 1;
    let frames = 0;
    let busy = 0;
    let last = requestAnimationFrame(step);
    function step() {
      frames += 1;
      const next = requestAnimationFrame(step);
      const others = next - last - 1; // requests made by others since our last one
      busy = others > 0 ? busy + 1 : 0;
      if (!changed && busy >= LOOP_FRAMES) {
        for (let id = last + 1; id < next; id++) cancelAnimationFrame(id);
        guard.cancelled += others;
      }
      last = next;
      if (changed || busy === 0 || frames >= MAX_FRAMES) {
        cancelAnimationFrame(next);
        probing = false;
        if (changed) arm();
      }
    }
  }

  new MutationObserver(() => {
    changed = true;
    if (!probing) arm();
  }).observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
  arm();
})();
