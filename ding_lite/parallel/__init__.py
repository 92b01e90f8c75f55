"""The parallel pipeline's parts: its transport (``worker_transport``: ``WorkerTransport``), the worker roles written
once, versioned shared-memory weights and the two backends (local processes, Ray)."""
