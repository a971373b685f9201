"""The plugin layer: the registration tables (registrations), discovery and import of the modules
that register (discovery, checks), the lookups (registry), the target families (families,
family_pages) and the checks of what a sampler builds and returns (sampler_builds, contract)."""
