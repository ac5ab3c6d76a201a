"""A convergence study's configuration: load (TOML or JSON), validate, resolve.

A study file (``experiments/studies/default.toml`` is an example)::

    game = "leduc_poker"           # any name of games_tensor.available()
    game_params = {}               # its parameters
    seeds = 16                     # runs per algorithm, vmapped together
    key = 0                        # base PRNG key (0 <= key < 2**32); seed i: fold_in(key, i)
    iterations = 20000             # defaults for every algorithm ...
    eval_every = 500               # ... (exact exploitability every k iterations)
    evaluate = "average"           # or "current" policy, or "full_regret" (imperfect recall:
                                   # full-game regret, solvers with full_average=true)
    init_scale = 0.1               # deterministic solvers: initial regrets U[0, s) per seed
    rate_decades = 1.0             # rate = log-log slope over the last decade(s) of iterations
    bootstrap = 1000               # bootstrap resamples (over seeds) for the rate's CI
    confidence = 0.95
    x64 = false                    # float64 arrays (slower; float32 floors near 1e-6)

    [[algorithms]]
    name = "dcfr"
    params = { alpha = 1.5, beta = 0.0, gamma = 2.0 }

    [[algorithms]]
    name = "outcome_sampling"
    iterations = 400000            # per-algorithm overrides of the defaults above
    eval_every = 20000
    optional = true                # skipped (with a notice) if jaxcfr does not export it

An entry of ``algorithms`` may also be a bare name (``algorithms = ["cfr", "dcfr"]``).

Resolving fills in every default (including each solver's default parameters), so
the resolved dictionary (``StudyConfig.to_dict``, written to ``config.json``) reruns
the study exactly and is what decides whether an output folder holds the same study.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

import games_tensor as gt
from experiments import algorithms
from experiments.algorithms import ConfigError

FORMAT_VERSION = 1
CONFIG_NAME = "config.json"  # the resolved study in an output folder (study_store.CONFIG)

# what the runner evaluates (jaxcfr.run(evaluate=...)): NashConv of the average or current
# policy, or the full-game regret of an imperfect-recall run (jaxcfr.full_game_regret)
EVALUATE = ("average", "current", "full_regret")
DEFAULTS = {
    "seeds": 16,
    "key": 0,
    "iterations": 1000,
    "evaluate": "average",
    "init_scale": 0.1,
    "rate_decades": 1.0,
    "bootstrap": 1000,
    "confidence": 0.95,
    "x64": False,
}
STUDY_KEYS = {"version", "game", "game_params", "algorithms", "eval_every", *DEFAULTS}
ALGO_KEYS = {
    "name",
    "label",
    "params",
    "iterations",
    "eval_every",
    "evaluate",
    "init_scale",
    "optional",
}
EVAL_POINTS = 50  # default eval_every = iterations // EVAL_POINTS
# jax.random.PRNGKey keeps 32 bits of its seed without x64 (2**32 would be key 0), so
# larger keys are refused rather than folded onto small ones.
MAX_KEY = 2**32 - 1
# Iteration counters are int32: no study can count past this.
MAX_ITERATIONS = 2**31 - 1
SCALARS = (bool, int, float, str, type(None))  # the values a parameter may take in a file


@dataclasses.dataclass(frozen=True)
class AlgorithmConfig:
    """One algorithm of a study, fully resolved."""

    label: str  # unique within the study; names its files
    name: str  # jaxcfr factory name
    params: dict[str, Any]  # every factory parameter, defaults filled in
    iterations: int
    eval_every: int
    evaluate: str  # one of EVALUATE
    init_scale: float  # deterministic solvers only: initial regrets U[0, init_scale)

    @property
    def slug(self) -> str:
        return slug(self.label)


@dataclasses.dataclass(frozen=True)
class StudyConfig:
    game: str
    game_params: dict[str, Any]
    algorithms: tuple[AlgorithmConfig, ...]
    seeds: int
    key: int
    rate_decades: float
    bootstrap: int
    confidence: float
    x64: bool
    skipped: tuple[str, ...] = dataclasses.field(default=(), compare=False)  # optional, unavailable

    def to_dict(self) -> dict[str, Any]:
        """The resolved configuration as plain JSON data (``from_dict`` reads it back)."""
        return {
            "version": FORMAT_VERSION,
            "game": self.game,
            "game_params": dict(self.game_params),
            "seeds": self.seeds,
            "key": self.key,
            "rate_decades": self.rate_decades,
            "bootstrap": self.bootstrap,
            "confidence": self.confidence,
            "x64": self.x64,
            "algorithms": [dataclasses.asdict(a) for a in self.algorithms],
        }


def slug(label: str) -> str:
    """A file-name-safe version of a label."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", label).strip("_") or "algorithm"


# ---------------------------------------------------------------- value checks
def _int(field: str, value, lo: int, hi: int | None = None) -> int:
    given = value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < lo
        or (hi is not None and value > hi)
    ):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"{field} must be an integer {bound}, got {given!r}")
    return value


def _float(field: str, value, lo: float, hi: float = math.inf, *, open_lo: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > lo if open_lo else value >= lo) and value <= hi
    if not ok:
        bound = f"> {lo}" if open_lo else f">= {lo}"
        bound += f" and <= {hi}" if hi < math.inf else ""
        raise ConfigError(f"{field} must be a number {bound}, got {value!r}")
    return float(value)


def _init_scale(where: str, value, x64: bool) -> float:
    """Initial-regret scale: finite in the study's float type (1e308 is inf in float32)."""
    dtype = np.float64 if x64 else np.float32
    hi = float(np.finfo(dtype).max)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > hi:
        raise ConfigError(
            f"init_scale ({where}) must be a number >= 0.0 and <= {hi:.8g} (the largest "
            f"{np.dtype(dtype).name}; x64 = {str(x64).lower()}), got {value!r}"
        )
    return _float(f"init_scale ({where})", value, 0.0)


def _choice(field: str, value, choices) -> str:
    if value not in choices:
        raise ConfigError(f"{field} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _table(field: str, value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{field} must be a table of name = value, got {value!r}")
    for k, v in value.items():
        if not isinstance(v, SCALARS):
            raise ConfigError(f"{field}.{k} must be a number, string, boolean or null, got {v!r}")
    return dict(value)


def _check_keys(where: str, raw: dict, allowed) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {unknown} in {where}; valid keys: {', '.join(sorted(allowed))}"
        )


def _check_game(name, params) -> None:
    if not isinstance(name, str):
        raise ConfigError(f"game must be a game name (string), got {name!r}")
    try:  # instantiating the rules checks the name and parameters without compiling
        gt.make_rules(name, **params)
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from exc


# ---------------------------------------------------------------- resolution
def from_dict(raw: dict[str, Any]) -> StudyConfig:
    """Validate a study description (file contents or command-line overrides) and fill
    in every default. Raises :class:`ConfigError` naming the offending field."""
    if not isinstance(raw, dict):
        raise ConfigError("a study configuration must be a table (TOML) or an object (JSON)")
    _check_keys("the study", raw, STUDY_KEYS)
    if raw.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise ConfigError(f"version must be {FORMAT_VERSION}, got {raw['version']!r}")
    if "game" not in raw:
        raise ConfigError(f"game is required; valid games: {', '.join(gt.available())}")
    game_params = _table("game_params", raw.get("game_params"))
    _check_game(raw["game"], game_params)
    get = lambda k: raw.get(k, DEFAULTS.get(k))  # noqa: E731
    seeds = _int("seeds", get("seeds"), 1)
    key = _int("key", get("key"), 0, MAX_KEY)
    # int32 iteration counters span at most log10(2**31) = 9.3 decades
    rate_decades = _float("rate_decades", get("rate_decades"), 0.0, 10.0, open_lo=True)
    bootstrap = _int("bootstrap", get("bootstrap"), 1)
    confidence = _float("confidence", get("confidence"), 0.0, 1.0, open_lo=True)
    x64 = get("x64")
    if not isinstance(x64, bool):
        raise ConfigError(f"x64 must be true or false, got {x64!r}")
    study_iters = _int("iterations", get("iterations"), 1, MAX_ITERATIONS)
    study_eval = (
        None
        if raw.get("eval_every") is None
        else _int("eval_every", raw["eval_every"], 1, MAX_ITERATIONS)
    )
    study_evaluate = _choice("evaluate", get("evaluate"), EVALUATE)
    study_scale = _float("init_scale", get("init_scale"), 0.0)

    entries = raw.get("algorithms")
    if not entries or not isinstance(entries, list):
        raise ConfigError(
            "algorithms must be a non-empty list; valid algorithms: "
            + ", ".join(algorithms.available())
        )
    resolved, skipped = [], []
    for i, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict) or "name" not in entry:
            raise ConfigError(
                f"algorithms[{i}] must be a name or a table with a name, got {entry!r}"
            )
        name = entry["name"]
        if not isinstance(name, str):
            raise ConfigError(
                f"algorithms[{i}].name must be an algorithm name (string), got {name!r}; "
                f"valid algorithms: {', '.join(algorithms.available())}"
            )
        where = f"algorithm {name!r}"
        _check_keys(where, entry, ALGO_KEYS)
        optional = entry.get("optional", False)
        if not isinstance(optional, bool):
            raise ConfigError(f"optional ({where}) must be true or false, got {optional!r}")
        if optional and name not in algorithms.available():
            skipped.append(name)
            continue
        given = _table(f"{where} params", entry.get("params"))
        algorithms.build(name, given)  # raises ConfigError naming the bad value
        params = {**algorithms.parameters(name), **given}
        for k, v in params.items():
            if not isinstance(v, SCALARS):
                raise ConfigError(
                    f"{where}: parameter {k}={v!r} cannot be written to a config file"
                )
        iters = _int(
            f"iterations ({where})", entry.get("iterations", study_iters), 1, MAX_ITERATIONS
        )
        eval_every = entry.get("eval_every", study_eval)
        eval_every = max(1, iters // EVAL_POINTS) if eval_every is None else eval_every
        eval_every = _int(f"eval_every ({where})", eval_every, 1)
        if eval_every > iters:
            raise ConfigError(f"eval_every ({where}) = {eval_every} exceeds iterations = {iters}")
        label = entry.get("label")
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise ConfigError(f"label ({where}) must be a non-empty string, got {label!r}")
        resolved.append(
            dict(
                label=label,
                name=name,
                params=params,
                iterations=iters,
                eval_every=eval_every,
                evaluate=_choice(
                    f"evaluate ({where})",
                    entry.get("evaluate", study_evaluate),
                    EVALUATE,
                ),
                init_scale=_init_scale(where, entry.get("init_scale", study_scale), x64),
                given=given,
            )
        )
    if not resolved:
        raise ConfigError(
            "no algorithm left to run (every optional algorithm is unavailable); "
            f"valid algorithms: {', '.join(algorithms.available())}"
        )
    counts = collections.Counter(r["name"] for r in resolved)
    for r in resolved:  # default label: the name, plus the given parameters when repeated
        given = r.pop("given")
        if r["label"] is None:
            r["label"] = r["name"]
            if counts[r["name"]] > 1 and given:
                r["label"] += "(" + ",".join(f"{k}={v}" for k, v in given.items()) + ")"
    seen = set()
    for r in resolved:
        s = slug(r["label"])
        if s in seen:
            raise ConfigError(
                f"two algorithms share the label {r['label']!r} (file name {s!r}); "
                "give each a distinct label"
            )
        if s.endswith(".prev"):  # runs/<slug>.prev.npz is another algorithm's backup
            raise ConfigError(f"label {r['label']!r} must not end in '.prev'; choose another")
        seen.add(s)
    return StudyConfig(
        game=raw["game"],
        game_params=game_params,
        algorithms=tuple(AlgorithmConfig(**r) for r in resolved),
        seeds=seeds,
        key=key,
        rate_decades=rate_decades,
        bootstrap=bootstrap,
        confidence=confidence,
        x64=x64,
        skipped=tuple(skipped),
    )


def _study_table(path: Path, data) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {str(path)!r} must hold an object of study keys (game, algorithms, "
            f"...), got a JSON {type(data).__name__}"
        )
    return data


def read_file(path: str | Path) -> dict[str, Any]:
    """Read a study file: ``.toml`` (tomllib) or ``.json``, UTF-8 text (a byte-order mark
    is allowed). Anything else is a :class:`ConfigError` naming the file."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(
            f"config file {str(path)!r} is a folder; give a study file (.toml or .json), "
            f"e.g. {str(path / CONFIG_NAME)!r} of an earlier study"
        )
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {str(path)!r} is not UTF-8 text (byte {data[exc.start]:#04x} at "
            f"offset {exc.start}); study files must be UTF-8 (save it as UTF-8)"
        ) from exc
    if "\x00" in text:
        raise ConfigError(
            f"config file {str(path)!r} holds NUL bytes (a binary file?); study files "
            "are UTF-8 text"
        )
    if path.suffix.lower() == ".json":
        try:
            return _study_table(path, json.loads(text))
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid JSON: {exc}") from exc
    if path.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            try:
                import tomli as tomllib
            except ImportError as exc:
                raise ConfigError(
                    "reading TOML needs Python 3.11+ (or tomli); use a .json file"
                ) from exc
        try:
            return _study_table(path, tomllib.loads(text))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {str(path)!r} is not valid TOML: {exc}") from exc
    raise ConfigError(f"config file {str(path)!r} must end in .toml or .json")


def parse_value(text: str):
    """A command-line value: JSON scalar (1, 0.5, true, null, "x"), Python's True/False/None,
    or else the string itself."""
    py = {"True": True, "False": False, "None": None}
    if text in py:
        return py[text]
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, SCALARS) else text


def parse_assignments(text: str, sep: str, where: str) -> dict[str, Any]:
    """``"a=1<sep>b=true"`` -> ``{"a": 1, "b": True}``."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(sep))):
        k, eq, v = part.partition("=")
        if not eq or not k.strip():
            raise ConfigError(f"{where}: expected name=value, got {part!r}")
        out[k.strip()] = parse_value(v.strip())
    return out


def parse_algorithms(text: str) -> list[dict[str, Any]]:
    """``"cfr,dcfr:alpha=2:gamma=3,outcome_sampling:epsilon=0.4:iterations=100000"`` ->
    algorithm entries. Keys named like per-algorithm settings (iterations, eval_every,
    evaluate, init_scale, label) set those; the others are solver parameters."""
    entries = []
    for spec in filter(None, (s.strip() for s in text.split(","))):
        name, _, rest = spec.partition(":")
        assigned = parse_assignments(rest, ":", f"algorithm {name!r}")
        entry = {"name": name.strip()}
        params = {}
        for k, v in assigned.items():
            if k in ALGO_KEYS - {"name", "params", "optional"}:
                entry[k] = v
            else:
                params[k] = v
        if params:
            entry["params"] = params
        entries.append(entry)
    if not entries:
        raise ConfigError(
            "--algorithms is empty; valid algorithms: " + ", ".join(algorithms.available())
        )
    return entries
