"""The studio's logic without components (Gradio only for its translation markers): Studio, the Setup inputs, what the studio knows of each run, the chat client, presets."""
