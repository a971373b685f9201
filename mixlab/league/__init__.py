"""The sampler league: every sampler of a family on the family's standard targets, at equal
wall time and at equal work, ranked against exact or reference truth (docs/league.md).

- :mod:`.targets` and :mod:`.truth`: the targets (definitions as data) and their cached truths;
- :mod:`.cost`: each family's work unit, read from the samplers' statistics;
- :mod:`.yardstick`, :mod:`.bias`: the error, its Monte Carlo error and the bias flag;
- :mod:`.cell`: experiment kind ``league.cell`` (one sampler x one target, an ordinary run);
- :mod:`.league`: the league itself (cells on the sweep machinery), :mod:`.rank`,
  :mod:`.report` and :mod:`.figure` its ranking, tables and figure.
"""
