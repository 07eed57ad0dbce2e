"""The task core: one task from spec to report (the loop, its history, the policy, events, budgets, workspaces)."""
