from agent.model.base import EmitFn, ModelClient, ModelError

__all__ = ["EmitFn", "ModelClient", "ModelError"]
