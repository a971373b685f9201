"""``mixlab report``: a run, a sweep, a league, several runs or a figures directory as one
self-contained HTML page (figures embedded as PNG, style and script inline, nothing fetched).

Every string read from a run, spec, plugin record or league table is data: the templates are
rendered by Jinja2 with autoescape on, and no value from a run directory is marked safe. Run
directories are read through the same confined readers as ``mixlab show`` (mixlab.runfile.confined,
RunReader), within the same read bounds; a long value is cut with a visible marker.

- :mod:`.page`: the Jinja2 environment and the page shell (CSP, inline style and sorter);
- :mod:`.values`: cutting and formatting values for a cell;
- :mod:`.run_page`, :mod:`.league_page`, :mod:`.compare_page`, :mod:`.figures_page`: one
  page kind each; :mod:`.claims`: the papers' claims tables read by the figures page;
- :mod:`.kinds`: which kind of page a path asks for.
"""
