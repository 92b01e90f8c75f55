"""The parallel pipeline's parts: its config section, the worker roles and their transports (local processes, Ray)."""
