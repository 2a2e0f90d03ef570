// Chat's outbox (issue 42, item 7; run with the title's js_on_load, see aworld_gui/tabs/chat_tab.py): the messages
// sent from this page since its last Clear, and how many Clears there were. This script is their one writer. A
// message leaves the box in the very event that sends it — the Enter key's, the Send button's click — read and the
// box emptied at once, before anything else can run. Gradio's own submit runs a tick later (its Textbox waits for
// Svelte's tick(), a timer or an animation frame, before it says "submit"): read then, the box held the next message
// already when one was typed (or pasted) quickly, and the message Enter was pressed for was lost.
// The hidden gr.JSON the server reads is a copy of this outbox (chat_tab._COPY_JS, after each Send, Enter, Clear).
(() => {
  if (window.awChat) return;
  const outbox = {epoch: 0, messages: []};
  const box = () => document.querySelector('#chat-input textarea');
  function set(ta, text) {                        // the box's text, and Gradio's copy of it (its input listener)
    ta.value = text;
    ta.dispatchEvent(new Event('input', {bubbles: true}));
  }
  function take() {                               // the box's message into the outbox, the box emptied
    const ta = box();
    if (!ta) return;
    if (ta.value.trim()) outbox.messages.push(ta.value);
    if (ta.value) set(ta, '');
  }
  // Enter as Gradio's Textbox reads it (a one-line box: Enter without Shift sends; keypress, so never the Enter
  // that ends an input method's composition), before its own listener (capture)
  document.addEventListener('keypress', e => {
    if (e.key === 'Enter' && !e.shiftKey && e.target === box()) take();
  }, true);
  document.addEventListener('click', e => {
    const at = e.target.closest ? e.target.closest('#chat-send, #chat-clear') : null;
    if (at && at.id === 'chat-send') take();
    else if (at) { outbox.epoch += 1; outbox.messages = []; }  // Clear: what was sent and not answered is dropped
  }, true);
  window.awChat = {
    outbox: () => ({epoch: outbox.epoch, messages: [...outbox.messages]}),
    giveBack(texts) {                             // messages the model did not take: back before what the box holds
      const ta = box();
      if (!ta || !Array.isArray(texts) || !texts.length) return;
      set(ta, [...texts, ta.value].filter(t => t.trim()).join('\n'));
    },
  };
})();
