"""The sandbox backends: the engine that runs a task's sandbox (one module each), their registry, the warm pool."""
