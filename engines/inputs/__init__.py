"""The user's modules read and checked: agent, datasets, config, references to user code, safe YAML/JSON, user text files, secrets and ${ENV}."""
