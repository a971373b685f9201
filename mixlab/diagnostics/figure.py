"""The ``diagnostics`` figure of any run (``mixlab plot RUN --figure diagnostics``): for up to
:data:`ROWS` statistics (the first ones of each stream, streams in turn), the trace of up to four
chains (left) and the autocorrelation function, averaged over chains, up to lag 200 (right)."""

from __future__ import annotations

import numpy as np

from ..plugins.registry import figure
from ..runfile.store import RunReader
from .mixing import stream_statistics

ROWS = 6
#: a figure registered for this "experiment" name is offered for every run, never rendered
#: automatically with a run's own figures
ANY_RUN = "*"


def _picks(run: RunReader) -> list[tuple[str, str, np.ndarray]]:
    per_stream = [(n, stream_statistics(run, n)) for n in run.stream_names()]
    per_stream = [(n, s) for n, s in per_stream if s]
    picks, depth = [], 0
    while len(picks) < ROWS and any(len(s) > depth for _, s in per_stream):
        for n, s in per_stream:
            if depth < len(s) and len(picks) < ROWS:
                k = list(s)[depth]
                picks.append((n, k, s[k]))
        depth += 1
    return picks


@figure("diagnostics", experiment=ANY_RUN, size=(10.0, 9.0))
def diagnostics(run: RunReader, fig) -> None:
    from .arviz_quiet import arviz

    az = arviz()
    picks = _picks(run)
    if not picks:
        fig.text(0.5, 0.5, "no stream with real-valued statistics to diagnose", ha="center")
        return
    axes = fig.subplots(len(picks), 2, squeeze=False)
    for (stream, stat, x), (ax_t, ax_a) in zip(picks, axes):
        for c in range(min(4, x.shape[0])):
            ax_t.plot(x[c], lw=0.5, alpha=0.8, label=f"chain {c}")
        ax_t.set_ylabel(f"{stream}\n{stat}", fontsize=7)
        lags = min(200, x.shape[1] - 1)
        acf = np.mean([az.autocorr(x[c])[: lags + 1] for c in range(x.shape[0])], axis=0)
        ax_a.plot(np.arange(lags + 1), acf, color="k", lw=1)
        ax_a.axhline(0, color="0.6", lw=0.5)
        ax_a.set_ylim(-0.2, 1.05)
        ax_t.set_xlabel("draw (index)", fontsize=7)
        ax_a.set_xlabel("lag (draws)", fontsize=7)
        ax_a.set_ylabel("autocorrelation", fontsize=7)
    axes[0][0].set_title("trace (first chains)", fontsize=9)
    axes[0][1].set_title("autocorrelation (mean over chains)", fontsize=9)
    axes[0][0].legend(fontsize=6, loc="upper right")
    fig.suptitle(f"{run.run_dir}: mixing of the per-draw summaries ('mixlab diagnose' for "
                 f"ESS and R-hat)", fontsize=9)
