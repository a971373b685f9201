"""The spec layer: a spec file (YAML + scale + overrides) becomes a validated spec (resolver),
through the schema nodes (nodes), the walk that validates (schema), the reserved keys (keys),
and the specs shipped with mixlab (builtin)."""
