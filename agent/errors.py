"""The root of codebox's own errors: every error a user or a model can cause is one of these,
with a message for a person (catch CodeboxError to catch them all)."""


class CodeboxError(Exception):
    """Something codebox cannot do as asked; the message says why and what to do."""


class SandboxError(CodeboxError):
    """The sandbox cannot be started or is unusable; the message says why and what to do.

    Defined here, not beside the Docker driver, so the agent loop can catch it without
    loading the container driver."""
