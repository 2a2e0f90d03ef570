"""One module per tab (Setup, Monitor, Runs, Evaluate, Chat) and the Setup tab's cards."""
