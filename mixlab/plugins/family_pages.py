"""The plugin author's page of each target family, generated from mixlab.plugins.families and the
sampler registry (``mixlab plugins --markdown FAMILY`` prints one); docs/plugins/<family>.md and
the families table of docs/plugins.md are this output (``python -m mixlab.plugins.family_pages``
rewrites them), and a test keeps the committed pages equal to it."""

from __future__ import annotations

from pathlib import Path

from ..spec.schema import describe
from . import registry
from .discovery import PLUGIN_MODULES
from .families import FAMILY_INFO, Family, family, family_module

_KINDS = {"b": "bool", "f": "float", "i": "int", "u": "uint"}

HEADER = ("<!-- generated from mixlab/plugins/families.py and the sampler registry by `python -m "
          "mixlab.plugins.family_pages` (or `mixlab plugins --markdown {name}`): edit those, not this -->")
PLUGIN_HEADER = ("<!-- generated from the plugin's register_family(...) and the sampler registry "
                 "by `mixlab plugins --markdown {name}` (with the plugin installed): edit the "
                 "plugin, not this -->")
START, END = "<!-- families:start -->\n", "<!-- families:end -->"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _builtin_samplers(name: str) -> list:
    """The samplers of family ``name`` that come with it, sorted by name: mixlab's own for
    mixlab's families, the family's own package's (or file's) for a plugin's."""
    kinds = registry.samplers_for(name)
    module = family_module(name)
    home = "mixlab." if module is None else module.split(".")[0]
    if module is None:      # mixlab's own: its plugin groups' (not the league's calibration set)
        return [kinds[n] for n in sorted(kinds) if kinds[n].module in PLUGIN_MODULES]
    return [kinds[n] for n in sorted(kinds)
            if kinds[n].module == home or kinds[n].module.startswith(home.rstrip(".") + ".")]


def _intro(f: Family) -> str:
    """The page's first paragraph: how a sampler of the family is registered."""
    if f.name in FAMILY_INFO:
        return (f"`mixlab.api.{f.constant}` = `\"{f.name}\"`. A sampler of this family is "
                f"registered with `@sampler({f.constant}, NAME, params={{...}})` on "
                f"`factory(target, params, chains)`; the contract common to every family is in "
                f"[../plugins.md](../plugins.md).")
    return (f"A family from a plugin: registered by `{family_module(f.name)}` with "
            f"`register_family(Family(name=\"{f.name}\", ...))` (docs/plugins.md, \"A family of "
            f"your own\"). A sampler of this family is registered with `@sampler(\"{f.name}\", "
            f"NAME, params={{...}})` on `factory(target, params, chains)`; the contract common to "
            f"every family is in [../plugins.md](../plugins.md).")


def _benchmarks(f: Family) -> str:
    if f.benchmarks or f.name in FAMILY_INFO:
        return f.benchmarks
    runs = "`league.sample` (any of its samplers on one of its league targets)"
    if f.league is not None:
        runs += f", `mixlab league {f.name}`"
    return runs


def family_page(name: str) -> str:
    """The markdown page of family ``name``."""
    f: Family = family(name)
    header = HEADER if name in FAMILY_INFO else PLUGIN_HEADER
    lines = [header.format(name=name), "", f"# The `{f.name}` family", "",
             _intro(f), "",
             "## The target", "", f"The factory's `target`: {f.target}.", "",
             "## Draws", "",
             "Each step returns `draws`, a dict of arrays with the chains (C) as leading axis. "
             "The runner checks the first step of every stream against this table (trailing "
             "shape for the stream's target, dtype) and every block of draws for NaN/inf where "
             "the table says finite; a mismatch ends the run with one paragraph naming the "
             "plugin, the stream and the step.", "",
             "| key | shape | dtype | finite | what it is |", "|---|---|---|---|---|"]
    for d in f.draws:
        kinds = " or ".join(_KINDS.get(k, k) for k in d.kinds)
        lines.append(f"| `{d.key}` | `{d.shape}` | {kinds} | "
                     f"{'yes' if d.finite else '-'} | {_cell(d.help)} |")
    need = " or ".join(f"`{k}`" for k in f.required)
    lines += ["", f"Every step emits {need}{' (at least one)' if len(f.required) > 1 else ''}; "
                  f"other keys are recorded as they are.", "",
              "## One step", "", f"{f.step[0].upper()}{f.step[1:]}.", "",
              "## Cost statistic", "",
              f"`stats[\"{f.cost}\"]`, `(C,)` float: {f.cost_help}. The league ranks samplers "
              f"at equal total `{f.cost}`, and ESS per work divides by its sum; report it from "
              f"every step (`mixlab.plugins.families.cost_statistic(\"{f.name}\")` names it).", "",
              "## Summaries `mixlab diagnose` computes", "",
              f"{f.summaries}: per draw, for every stream of this family, plugin samplers "
              f"included; ESS, R-hat and MCSE are computed on them.", "",
              "## Exact truths to test against", "", f"{f.exact}.", "",
              "## Benchmarks that run this family", "", f"{_benchmarks(f)}.", "",
              *_league_section(f),
              "## Built-in samplers" if f.name in FAMILY_INFO else "## The plugin's samplers",
              "",
              "| method | parameters (default) | what it is |", "|---|---|---|"]
    for kind in _builtin_samplers(name):
        params = ", ".join(f"`{k}` ({d})" for k, d, _ in describe(kind.params)) or "-"
        lines.append(f"| `{kind.name}` | {_cell(params)} | {_cell(kind.help)} |")
    return "\n".join(lines) + "\n"


def _league_section(f: Family) -> list[str]:
    """A plugin family's league targets (its definitions) and yardstick; nothing for mixlab's
    own (docs/league.md lists theirs)."""
    if f.name in FAMILY_INFO or f.league is None:
        return []
    out = ["## League targets", "",
           f"Truth: {f.league.truth_source}. Yardstick: {f.league.yardstick_name}.", "",
           "| target | definition |", "|---|---|"]
    for tname, d in f.league.definitions().items():
        out.append(f"| `{tname}` | {_cell(', '.join(f'{k}={v}' for k, v in d.items()))} |")
    return out + [""]


def families_table() -> str:
    """The summary table of docs/plugins.md: one row per family, linking its page."""
    lines = ["| family (`mixlab.api` constant) | draws | one step | cost statistic |",
             "|---|---|---|---|"]
    for f in FAMILY_INFO.values():
        draws = ", ".join(f"`{d.key} {d.shape}` {' or '.join(_KINDS[k] for k in d.kinds)}"
                          for d in f.draws)
        step = f.step.split(";")[0]
        lines.append(f"| [`{f.name}`](plugins/{f.name}.md) (`{f.constant}`) | {_cell(draws)} | "
                     f"{_cell(step)} | `{f.cost}` |")
    return "\n".join(lines) + "\n"


def with_table(text: str) -> str:
    """docs/plugins.md's ``text`` with the generated families table between its markers."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return head + START + families_table() + END + tail


def write_docs(docs: Path) -> list[Path]:
    """Rewrite ``docs/plugins/<family>.md`` and the table of ``docs/plugins.md``."""
    out = []
    (docs / "plugins").mkdir(exist_ok=True)
    for name in FAMILY_INFO:
        path = docs / "plugins" / f"{name}.md"
        path.write_text(family_page(name))
        out.append(path)
    index = docs / "plugins.md"
    index.write_text(with_table(index.read_text()))
    return out + [index]


if __name__ == "__main__":
    for p in write_docs(Path(__file__).resolve().parents[2] / "docs"):
        print(p)
