"""``mixlab run league/FAMILY`` hands the league its workers as any run gets its jobs: ``-j``,
else the spec's ``jobs:``, else ``MIXLAB_JOBS``, else 1; and ``--scheduler`` too."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mixlab.cli import cli


@pytest.fixture
def seen(monkeypatch):
    from mixlab.cli import league_cmd

    calls = []
    monkeypatch.setattr(league_cmd, "run_league_spec",
                        lambda spec, out, workers, scheduler, quiet:
                        calls.append((workers, scheduler)))
    monkeypatch.delenv("MIXLAB_JOBS", raising=False)
    return calls


@pytest.mark.parametrize("args, env, expect", [
    ([], {}, (1, None)),
    ([], {"MIXLAB_JOBS": "2"}, (2, None)),
    (["jobs=3"], {"MIXLAB_JOBS": "2"}, (3, None)),
    (["jobs=3", "-j", "1"], {"MIXLAB_JOBS": "2"}, (1, None)),
    (["--scheduler", "tcp://127.0.0.1:1"], {}, (1, "tcp://127.0.0.1:1")),
])
def test_a_league_run_gets_the_runs_jobs(seen, monkeypatch, args, env, expect):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = CliRunner().invoke(cli, ["run", "league/spinglass", "targets=[mixed-c1.5]", *args])
    assert r.exit_code == 0, r.output
    assert seen == [expect]
