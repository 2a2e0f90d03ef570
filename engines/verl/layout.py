"""What the verl engine writes into a run directory: everything verl needs lands in ``<run>/verl/``.

=========================  ======================================================================
``train.parquet``          verl RL rows (``test.parquet`` too when a test set is given)
``reward_bridge.py``       ``compute_score(data_source, solution_str, ground_truth, extra_info, ...)``
``aworld_engines/``        snapshot of the studio's reward code the bridge imports
``function_tools.py``      the agent's tools as verl ``@function_tool`` s (tool-using agents only)
``mcp_servers.json``       the agent's MCP servers, AWorld's ``{"mcpServers": ...}``, secrets as ``${VAR}``
``mcp_tools.py``           its MCP tools as function tools, after its Python tools (agents with MCP servers)
``verl_config.yaml``       the final config (verl's ``ppo_trainer`` + derived + the user's settings)
``verl_config_cluster``    the same with run-dir paths made relative (a Ray job's ``working_dir``)
``verl_metrics.jsonl``     verl's ``file`` logger output, mirrored into ``metrics.jsonl``
``rollouts/``              verl's rollout dumps, mirrored into ``samples.jsonl``
=========================  ======================================================================
"""

VERL_DIR = "verl"
CONFIG_FILE = "verl_config.yaml"
CLUSTER_CONFIG_FILE = "verl_config_cluster.yaml"
METRICS_FILE = "verl_metrics.jsonl"
ROLLOUTS_DIR = "rollouts"
