"""The studio's Gradio-free core: Studio, the Setup inputs, what the studio knows of each run, the chat client, presets."""
