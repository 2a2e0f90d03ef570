"""Gradio and the web: the page, the studio's command, named API endpoints, the live stream, login, uploads, Gradio patches."""
