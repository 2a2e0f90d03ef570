"""The trainer API's core: the engine base class and registry, AgentTrainer, the standard run lifecycle, check results, and the check pipeline (in this process and isolated)."""
