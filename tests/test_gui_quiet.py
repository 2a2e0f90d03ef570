"""The studio's queue sleeps while idle and wakes when an event arrives (aworld_gui/quiet.py)."""
from __future__ import annotations

import time

import gradio as gr
import gradio.queueing as gq
from gradio_client import Client

from aworld_gui import quiet


def test_the_idle_queue_sleeps_until_an_event_is_pushed():
    check_an_app()
    check_an_app()   # a second app has an event loop of its own: its queue is woken too


def check_an_app():
    with gr.Blocks() as demo:
        box = gr.Number()
        gr.Button("add").click(lambda x: (x or 0) + 1, box, box, api_name="add")
    demo.queue()
    quiet.relax_queue_polling(demo)
    assert isinstance(gq.asyncio, quiet.WakeableSleep), "the queue's sleep was not made wakeable"
    assert demo._queue.sleep_when_free == quiet.QUEUE_IDLE_S
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = Client(demo.local_url, verbose=False)
        assert client.predict(1, api_name="/add") == 2
        shim = gq.asyncio
        before = shim.idle_sleeps
        time.sleep(3.0)
        idle = shim.idle_sleeps - before
        # Polling every 0.1 s would be ~30 turns; sleeping until woken: one per QUEUE_IDLE_S.
        assert idle <= 3, f"the idle queue loop turned {idle} times in 3 s"
        t0 = time.monotonic()
        for i in range(5):
            assert client.predict(i, api_name="/add") == i + 1
        took = time.monotonic() - t0
        # Were a push not waking the loop, each call would wait for the rest of its idle sleep
        # (QUEUE_IDLE_S = 2 s; ~1 s on average): five calls, ~5 s.
        assert took < quiet.QUEUE_IDLE_S, f"5 calls took {took:.2f} s: the queue was not woken by them"
    finally:
        demo.close()
