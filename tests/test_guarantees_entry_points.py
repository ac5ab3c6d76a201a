"""Every entry point jaxcfr exports refuses the wrong kind of argument up front
(docs/guarantees.md, "Entry points"; issue 17): a game's name instead of a compiled
Game, an integer instead of a PRNG key, a bad iteration count. A wrong kind of argument
is an ``ArgumentTypeError``, both a ``TypeError`` and a ``ValueError``. Also: the one
host-memory function (cgroup v1 and v2, /proc/meminfo) and the progress bar closed when
a run stops."""

import inspect
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr
from experiments import algorithms, study_memory
from jaxcfr import _guards

SOLVERS = sorted(algorithms.available())  # every solver factory jaxcfr exports
BOTS = ("oos", "ismcts", "random_bot")
KEY = jax.random.PRNGKey(0)
NAME = "kuhn_poker"
NOT_A_KEY = [0, 12345, np.array([0, 1]), None, "0"]
BAD_COUNTS = [-1, 1.5, "10", True, None, np.float32(3.0)]


@pytest.fixture(scope="module")
def kuhn():
    return gt.load("kuhn_poker")


def _is_type_error(exc_info, words):
    assert isinstance(exc_info.value, TypeError) and isinstance(exc_info.value, ValueError)
    assert words in str(exc_info.value), str(exc_info.value)


def test_the_lists_cover_every_export():
    """SOLVERS and BOTS hold every exported factory that builds a Solver or a Bot."""
    assert {"cfr", "dcfr", "outcome_sampling", "uct", "smooth_uct"} <= set(SOLVERS)
    for name in jaxcfr.__all__:
        obj = getattr(jaxcfr, name)
        if not inspect.isfunction(obj):
            continue
        try:
            built = obj()
        except TypeError:  # needs arguments: not a factory
            continue
        if isinstance(built, jaxcfr.Solver):
            assert name in SOLVERS, name
        if isinstance(built, jaxcfr.Bot):
            assert name in BOTS, name


# ------------------------------------------------------------------ solvers
@pytest.mark.parametrize("name", SOLVERS)
def test_solver_init_and_update_refuse_a_name_instead_of_a_game(kuhn, name):
    solver = getattr(jaxcfr, name)()
    for bad in (NAME, {"game": kuhn}, None):
        with pytest.raises(TypeError) as e:
            solver.init(bad)
        _is_type_error(e, "compiled games_tensor.Game")
    state = solver.init(kuhn)
    args = (KEY,) if solver.needs_key else ()
    with pytest.raises(TypeError) as e:
        solver.update(NAME, state, *args)
    _is_type_error(e, "games_tensor.load(name)")


@pytest.mark.parametrize("name", [n for n in SOLVERS if getattr(jaxcfr, n)().needs_key])
def test_sampling_solver_update_refuses_an_integer_key(kuhn, name):
    solver = getattr(jaxcfr, name)()
    state = solver.init(kuhn)
    for bad in NOT_A_KEY:
        with pytest.raises(TypeError) as e:
            solver.update(kuhn, state, bad)
        _is_type_error(e, "PRNG key")


def test_deterministic_solver_keys_are_checked_where_used(kuhn):
    with pytest.raises(TypeError, match="PRNG key"):
        jaxcfr.cfr().init(kuhn, 0, scale=1.0)  # random initial regrets
    solver = jaxcfr.cfr(chance_sampling=True)
    with pytest.raises(TypeError, match="PRNG key"):
        solver.update(kuhn, solver.init(kuhn), 0)


@pytest.mark.parametrize("name", SOLVERS)
def test_run_refuses_bad_arguments_for_every_solver(kuhn, name):
    solver = getattr(jaxcfr, name)()
    with pytest.raises(TypeError) as e:
        jaxcfr.run(solver, NAME, 4, 2)
    _is_type_error(e, "games_tensor.load(name)")
    with pytest.raises(TypeError) as e:
        jaxcfr.run(solver, kuhn, 4, 2, key=0)
    _is_type_error(e, "PRNG key")
    for bad in BAD_COUNTS + [0, 2**31, 10**30]:
        with pytest.raises(ValueError, match="num_iterations must be an integer in"):
            jaxcfr.run(solver, kuhn, bad, 2)
        with pytest.raises(ValueError, match="eval_every must be an integer in"):
            jaxcfr.run(solver, kuhn, 4, bad)


def test_run_refuses_to_pass_the_int32_iteration_counter(kuhn):
    res = jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2)
    late = res.state._replace(iteration=jnp.full((1,), 2**31 - 3, jnp.int32))
    with pytest.raises(ValueError, match="int32 iteration counter"):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, state=late)


# ------------------------------------------------------------------ search bots
@pytest.mark.parametrize("name", BOTS)
def test_bots_refuse_a_name_a_bad_key_and_bad_iteration_counts(kuhn, name):
    bot = getattr(jaxcfr, name)()
    view = jaxcfr.root_view()
    with pytest.raises(TypeError) as e:
        bot.init(NAME)
    _is_type_error(e, "games_tensor.load(name)")
    state = bot.init(kuhn)
    for call in (
        lambda: bot.search(NAME, state, view, KEY, 1),
        lambda: bot.policy(NAME, state, view),
        lambda: bot.strategy(NAME, state),
    ):
        with pytest.raises(TypeError) as e:
            call()
        _is_type_error(e, "games_tensor.load(name)")
    for bad in NOT_A_KEY:
        with pytest.raises(TypeError) as e:
            bot.search(kuhn, state, view, bad, 1)
        _is_type_error(e, "PRNG key")
    for bad in BAD_COUNTS:
        with pytest.raises(ValueError, match="num_iterations must be an integer >= 0"):
            bot.search(kuhn, state, view, KEY, bad)
    with pytest.raises(ValueError, match="jaxcfr.View"):
        bot.search(kuhn, state, (-1, -1, -1), KEY, 1)
    after = bot.search(kuhn, state, view, KEY, jnp.asarray(2))  # a 0-d integer array is fine
    assert int(after.iteration) == 2


def test_play_refuses_bad_arguments(kuhn):
    rnd = jaxcfr.random_bot()
    with pytest.raises(TypeError) as e:
        jaxcfr.play(NAME, rnd, rnd, 2, 1, KEY)
    _is_type_error(e, "games_tensor.load(name)")
    for bad in NOT_A_KEY:
        with pytest.raises(TypeError) as e:
            jaxcfr.play(kuhn, rnd, rnd, 2, 1, bad)
        _is_type_error(e, "PRNG key")
    for bad in (-1, 1.5, "3", True, None):
        with pytest.raises(ValueError, match="iterations_per_move"):
            jaxcfr.play(kuhn, rnd, rnd, 2, bad, KEY)
        with pytest.raises(ValueError, match="num_matches"):
            jaxcfr.play(kuhn, rnd, rnd, bad, 1, KEY)


@pytest.mark.parametrize(
    "call",
    [
        lambda g: jaxcfr.solve_lp(NAME),
        lambda g: jaxcfr.full_game_regret(NAME, jaxcfr.cfr().init(g)),
        lambda g: jaxcfr.view_of(NAME, 0),
        lambda g: jaxcfr.search.fixed_random_policy(NAME),
        lambda g: jaxcfr.estimate_run_memory(jaxcfr.cfr(), NAME, 1),
        lambda g: jaxcfr.average_policy(NAME, jaxcfr.cfr().init(g)),
        lambda g: jaxcfr.exploitability(NAME, g.legal_uniform),
    ],
)
def test_other_functions_refuse_a_name_instead_of_a_game(kuhn, call):
    with pytest.raises(TypeError) as e:
        call(kuhn)
    _is_type_error(e, "games_tensor.load(name)")


def test_play_refuses_zero_matches_and_bad_chunk_sizes(kuhn):
    """Zero matches is refused (it returned an empty array, and with ``collect`` the
    weights ``None``); ``chunk_size`` takes NumPy integers like ``num_matches`` does,
    not ``True``."""
    rnd = jaxcfr.random_bot()
    for collect in (None, 0):
        with pytest.raises(ValueError, match="num_matches must be an integer >= 1"):
            jaxcfr.play(kuhn, rnd, rnd, 0, 1, KEY, collect=collect)
    for bad in (0, True, 2.0, "2"):
        with pytest.raises(ValueError, match="chunk_size"):
            jaxcfr.play(kuhn, rnd, rnd, 2, 1, KEY, chunk_size=bad)
    u = jaxcfr.play(kuhn, rnd, rnd, 3, 1, KEY, chunk_size=np.int64(2))
    np.testing.assert_array_equal(u, jaxcfr.play(kuhn, rnd, rnd, 3, 1, KEY, chunk_size=2))


def test_bot_repr_is_its_name_not_four_function_addresses():
    assert repr(jaxcfr.oos()) == "Bot(oos(ist, d=0.9, e=0.4))"
    assert "function" not in repr(jaxcfr.ismcts()) and "function" not in repr(jaxcfr.random_bot())


def _other_state(g):
    return jaxcfr.outcome_sampling().init(g)


@pytest.mark.parametrize(
    "call, words",
    [  # each was an AttributeError / a JAX broadcasting error, or returned a value
        (lambda g: jaxcfr.average_policy(g, g.legal_uniform), "already a policy"),
        (lambda g: jaxcfr.current_policy(g, g.legal_uniform), "solver state"),
        (lambda g: jaxcfr.full_game_regret(g, g.legal_uniform), "solver state"),
        (lambda g: jaxcfr.average_policy(g, jaxcfr.run(jaxcfr.cfr(), g, 1, 1)), "result.state"),
        (lambda g: jaxcfr.exploitability(g, jaxcfr.cfr().init(g)), "average_policy"),
        (lambda g: jaxcfr.cfr().update(g, _other_state(g)), "not a full-width CFR state"),
        (lambda g: jaxcfr.regret_matching(jnp.zeros((3, 2)), jnp.ones((3, 3), bool)), "legal_mask"),
        (lambda g: jaxcfr.infoset_table(g, jnp.zeros((3, 3))), "table must be"),
        (lambda g: jaxcfr.view_of(g, 10**6), "history must be"),
        (lambda g: jaxcfr.view_of(g, -1), "history must be"),
        (lambda g: jaxcfr.estimate_run_memory(jaxcfr.cfr, g), "build one setting"),
        (lambda g: jaxcfr.estimate_run_memory("cfr", g), "built jaxcfr Solver"),
        (lambda g: jaxcfr.search.fixed_random_policy(g, 1.5), "seed"),
        (lambda g: jaxcfr.search.bytes_per_match(g, jaxcfr.cfr(), jaxcfr.random_bot()), "bot_p1"),
        (lambda g: jaxcfr.play(g, jaxcfr.oos, jaxcfr.random_bot(), 2, 1, KEY), "call the factory"),
        (lambda g: jaxcfr.pruning.run_live(jaxcfr.cfr(pruning="total"), g, -1), "iterations"),
        (lambda g: jaxcfr.cfr().init(g, KEY, scale=-1.0), "scale"),
        (lambda g: jaxcfr.pruning.space_fraction(g, jaxcfr.cfr().init(g)), "PrunedState"),
        (lambda g: jaxcfr.pruning.nodes_touched(jaxcfr.cfr().init(g)), "PrunedState"),
        (lambda g: jaxcfr.pruning.compact_bytes(g, jaxcfr.cfr().init(g)), "PrunedState"),
        (lambda g: jaxcfr.pruning.tables("kuhn_poker"), "games_tensor.load"),
        (lambda g: jaxcfr.cfr_plus().init(g, scale=0.5), "needs a key"),
        (lambda g: gt.uniform_policy("kuhn_poker"), "games_tensor.load"),
        (lambda g: gt.check_abstraction("kuhn_poker"), "games_tensor.load"),
        (lambda g: gt.to_tabular_policy("kuhn_poker", g.legal_uniform), "games_tensor.load"),
        (lambda g: jaxcfr.run(jaxcfr.cfr(), g, 2, 1, devices=jax.devices()[0]), "for one device"),
        (lambda g: jaxcfr.run(jaxcfr.cfr(), g, 2, 1, evaluate=lambda g, s: s.regrets), "scalar"),
        (lambda g: jaxcfr.run(jaxcfr.cfr(), g, 2, 1, evaluate=lambda s: 0.0), "evaluate must"),
    ],
)
def test_user_mistakes_are_named(kuhn, call, words):
    with pytest.raises(ValueError, match=words):
        call(kuhn)


# ------------------------------------------------------------------ progress bar
def test_regret_matching_takes_a_mask_shared_by_a_batch():
    """A ``[I, A]`` mask broadcasts over a batch of ``[B, I, A]`` regrets (as before the
    shape check of session 28); the result is each row's own regret matching."""
    regrets = jnp.array(
        [[[1.0, 3.0], [0.0, 0.0], [2.0, -1.0]], [[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]]
    )
    mask = jnp.array([[True, True], [True, True], [True, False]])
    out = jaxcfr.regret_matching(regrets, mask)
    want = [[[0.25, 0.75], [0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]]]
    np.testing.assert_allclose(np.asarray(out), want)


def test_progress_bar_is_closed_when_the_run_stops(kuhn, monkeypatch):
    """A run stopped by NonFiniteStateError (and one that completes) closes its bar."""
    tqdm_auto = pytest.importorskip("tqdm.auto")
    bars = []

    class Bar:
        def __init__(self, **kwargs):
            self.closed = False
            self.n = 0
            bars.append(self)

        def update(self, n):
            self.n += n

        def set_postfix(self, **kwargs):
            pass

        def close(self):
            self.closed = True

    monkeypatch.setattr(tqdm_auto, "tqdm", Bar)
    state = jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2).state
    bad = state._replace(regrets=state.regrets.at[0, 0, 0].set(jnp.nan))
    with pytest.raises(jaxcfr.NonFiniteStateError):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, state=bad, progress=True)
    assert len(bars) == 1 and bars[0].closed and bars[0].n == 0
    jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, progress=True)
    assert len(bars) == 2 and bars[1].closed and bars[1].n == 4


# ------------------------------------------------------------------ host memory
def _fake_system(tmp_path, cgroup_lines, files, meminfo_kib=8 << 20):
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text(
        f"MemTotal:       {2 * meminfo_kib} kB\nMemAvailable:   {meminfo_kib} kB\n"
    )
    (proc / "self" / "status").write_text("VmSize:     1024 kB\n")
    (proc / "self" / "cgroup").write_text("".join(line + "\n" for line in cgroup_lines))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return {"proc": proc, "cgroup_root": root}


GiB = 1 << 30


@pytest.mark.parametrize(
    "cgroup_lines, files, expect",
    [
        # no cgroup limit: MemAvailable (8 GiB)
        (["0::/"], {"memory.max": "max", "memory.current": str(GiB)}, 8 * GiB),
        # cgroup v2, the process's own cgroup (nested path): 3 GiB limit, 1 GiB used
        (
            ["0::/user.slice/job"],
            {"user.slice/job/memory.max": str(3 * GiB), "user.slice/job/memory.current": str(GiB)},
            2 * GiB,
        ),
        # cgroup v2, a container mounting its own cgroup at the root: the path's suffix
        (
            ["0::/docker/abc"],
            {"memory.max": str(5 * GiB), "memory.current": str(GiB)},
            4 * GiB,
        ),
        # cgroup v2, an ancestor's limit applies to its children
        (
            ["0::/a/b"],
            {
                "a/memory.max": str(2 * GiB),
                "a/memory.current": str(GiB // 2),
                "a/b/memory.max": "max",
                "a/b/memory.current": str(GiB // 4),
            },
            GiB + GiB // 2,
        ),
        # cgroup v1: memory controller's own hierarchy
        (
            ["12:memory:/job", "11:cpu,cpuacct:/job"],
            {
                "memory/job/memory.limit_in_bytes": str(6 * GiB),
                "memory/job/memory.usage_in_bytes": str(3 * GiB),
            },
            3 * GiB,
        ),
        # cgroup v1 without a limit (the kernel's huge "unlimited" number)
        (
            ["4:memory,hugetlb:/"],
            {
                "memory/memory.limit_in_bytes": "9223372036854771712",
                "memory/memory.usage_in_bytes": str(GiB),
            },
            8 * GiB,
        ),
        # MemAvailable below the cgroup's headroom wins
        (
            ["0::/"],
            {"memory.max": str(100 * GiB), "memory.current": str(GiB)},
            8 * GiB,
        ),
    ],
)
def test_host_available_memory_reads_cgroup_v1_v2_and_meminfo(
    tmp_path, cgroup_lines, files, expect
):
    fake = _fake_system(tmp_path, cgroup_lines, files)
    assert _guards.host_available_memory(**fake) == expect


def test_host_available_memory_without_proc_is_unknown(tmp_path):
    got = _guards.host_available_memory(proc=tmp_path / "none", cgroup_root=tmp_path / "none")
    import resource

    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        assert got is None
    else:
        assert got is not None and got >= 0


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/meminfo: Linux")
def test_study_memory_uses_the_library_function(monkeypatch):
    """The study CLI's host and device memory are jaxcfr's (one implementation)."""
    assert study_memory.host_available() == pytest.approx(_guards.host_available_memory(), rel=0.05)
    monkeypatch.setattr(_guards, "host_available_memory", lambda **_: 12345)
    monkeypatch.setattr(_guards, "_device_free_memory", lambda: None)
    assert study_memory.host_available() == 12345
    assert study_memory.device_available() == 12345
    assert _guards.available_memory() == 12345


def test_games_tensor_refuses_a_name_with_the_library_s_one_error_class(kuhn):
    """games_tensor's own entry points raise the same ``ArgumentTypeError`` as jaxcfr's
    (one class: a user catching ``TypeError`` or the class itself sees both)."""
    from jaxcfr._solver import ArgumentTypeError

    for call in (
        lambda: gt.uniform_policy(NAME),
        lambda: gt.check_abstraction(NAME),
        lambda: gt.to_tabular_policy(NAME, kuhn.legal_uniform),
    ):
        with pytest.raises(ArgumentTypeError) as e:
            call()
        _is_type_error(e, "games_tensor.load(name)")
