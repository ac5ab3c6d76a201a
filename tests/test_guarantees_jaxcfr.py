"""Library guarantees of jaxcfr (docs/guarantees.md, "Library"): malformed policies and
arguments get a ValueError naming the value; inside jit/vmap invalid policies give NaN;
the runner refuses batches that cannot fit, states of another solver or game, and stops
on a non-finite state; weights that overflowed the float type are computed stably."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
import jaxcfr
from jaxcfr import _guards
from jaxcfr._cfr import regret_discounted, weight_discounted, weight_power


@pytest.fixture(scope="module")
def kuhn():
    return gt.load("kuhn_poker")


@pytest.fixture(scope="module")
def leduc():
    return gt.load("leduc_poker")


def _uniform(game):
    return np.asarray(gt.uniform_policy(game), dtype=np.float64)


# ------------------------------------------------------------------ malformed policies
def _malformed(game):
    """name -> (policy, words of the eager error). Row 3 of Kuhn has both actions legal."""
    u = _uniform(game)
    cases = {}
    for name, row in [
        ("nan", [np.nan, 0.5]),
        ("inf", [np.inf, 0.0]),
        ("negative", [-0.5, 1.5]),
        ("not summing to one", [0.2, 0.2]),
    ]:
        p = u.copy()
        p[3] = row
        cases[name] = p
    return cases


EAGER_WORDS = {
    "nan": "non-finite",
    "inf": "non-finite",
    "negative": "negative",
    "not summing to one": "sums to",
}


@pytest.mark.parametrize("case", list(EAGER_WORDS))
@pytest.mark.parametrize(
    "fn",
    [
        jaxcfr.exploitability,
        jaxcfr.nash_conv,
        jaxcfr.expected_value,
        lambda g, p: jaxcfr.best_response(g, p, 0)[1],
    ],
)
def test_invalid_policy_eager_error_jit_nan(kuhn, case, fn):
    """Eager: a clear ValueError. Under jit (and vmap) it cannot raise: NaN, never the
    number of a repaired policy (a NaN row used to be evaluated as uniform)."""
    pol = _malformed(kuhn)[case]
    with pytest.raises(ValueError, match=EAGER_WORDS[case]):
        fn(kuhn, pol)
    assert np.isnan(np.asarray(jax.jit(fn)(kuhn, jnp.asarray(pol, jnp.float32)))).all()
    batch = jnp.asarray(np.stack([_uniform(kuhn), pol]), jnp.float32)
    out = np.asarray(jax.vmap(fn, in_axes=(None, 0))(kuhn, batch))
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()


def test_mass_on_illegal_action_inside_jit_is_nan(leduc):
    mask = np.asarray(leduc.legal_mask)
    row = int(np.argmin(mask.sum(axis=1)))
    pol = _uniform(leduc)
    pol[row] = 0.0
    pol[row, int(np.argmin(mask[row]))] = 1.0
    with pytest.raises(ValueError, match="illegal"):
        jaxcfr.exploitability(leduc, pol)
    assert np.isnan(float(jax.jit(jaxcfr.exploitability)(leduc, jnp.asarray(pol, jnp.float32))))


def test_valid_policy_same_under_jit(kuhn):
    """The NaN guard does not change valid policies (Kuhn uniform NashConv 11/12)."""
    u = jnp.asarray(_uniform(kuhn), jnp.float32)
    np.testing.assert_allclose(float(jax.jit(jaxcfr.nash_conv)(kuhn, u)), 11 / 12, rtol=1e-6)


@pytest.mark.parametrize(
    "policy, words",
    [
        ({"P0": [0.5, 0.5]}, "must be an \\[I, A\\] array"),
        ("uniform", "must be an \\[I, A\\] array"),
        (None, "must be an \\[I, A\\] array"),
        (np.ones((12, 2), np.complex64) / 2, "real numbers"),
        (np.full((12, 2), "a"), "real numbers"),
        (np.full((12, 3), 1 / 3), "shape"),
        (np.full((2, 12), 0.5), "shape"),
        ([[0.5, 0.5]] * 11 + [[1.0]], "rectangular"),
    ],
)
def test_malformed_policy_type_shape_dtype(kuhn, policy, words):
    with pytest.raises(ValueError, match=words):
        jaxcfr.exploitability(kuhn, policy)


def test_complex_policy_refused_under_jit(kuhn):
    u = jnp.asarray(_uniform(kuhn), jnp.complex64)
    with pytest.raises(ValueError, match="real numbers"):
        jax.jit(jaxcfr.exploitability)(kuhn, u)


@pytest.mark.parametrize("atol", [float("nan"), -1.0, float("inf"), "0.1", None])
def test_validate_policy_refuses_bad_atol(kuhn, atol):
    with pytest.raises(ValueError, match="atol"):
        jaxcfr.validate_policy(kuhn, _uniform(kuhn), atol=atol)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda g, p: jaxcfr.exploitability("kuhn_poker", p), "compiled games_tensor.Game"),
        (lambda g, p: jaxcfr.nash_conv({"game": g}, p), "compiled games_tensor.Game"),
        (lambda g, p: jaxcfr.best_response(g, p, 1.0), "player must be the integer 0 or 1"),
        (lambda g, p: jaxcfr.best_response(g, p, True), "player must be the integer 0 or 1"),
        (lambda g, p: jaxcfr.best_response(g, p, 2), "player must be the integer 0 or 1"),
        (lambda g, p: jaxcfr.cfr().update("kuhn_poker", None), "compiled games_tensor.Game"),
        (lambda g, p: jaxcfr.cfr().update(g, {"regrets": p}), "solver state"),
        (lambda g, p: jaxcfr.average_policy("kuhn_poker", None), "compiled games_tensor.Game"),
        (lambda g, p: jaxcfr.current_policy({}, None), "compiled games_tensor.Game"),
    ],
)
def test_wrong_kind_of_argument(kuhn, call, words):
    with pytest.raises(ValueError, match=words):
        call(kuhn, _uniform(kuhn))


def test_numpy_integer_player_accepted(kuhn):
    a = jaxcfr.best_response(kuhn, _uniform(kuhn), np.int64(1))[1]
    b = jaxcfr.best_response(kuhn, _uniform(kuhn), 1)[1]
    assert float(a) == float(b)


# ------------------------------------------------------------------ run: arguments
@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"key": 0}, "key must be one PRNG key"),
        ({"key": np.array([0, 1])}, "key must be one PRNG key"),
        ({"key": jax.random.split(jax.random.PRNGKey(0), 2)}, "key must be one PRNG key"),
        ({"init_scale": "0.1"}, "init_scale"),
        ({"init_scale": -1.0}, "init_scale"),
        ({"init_scale": float("nan")}, "init_scale"),
        ({"init_scale": float("inf")}, "init_scale"),
        ({"target_exploitability": float("nan")}, "target_exploitability"),
        ({"target_exploitability": "0.1"}, "target_exploitability"),
        ({"progress": "yes"}, "progress"),
        ({"devices": []}, "devices"),
        ({"devices": ["cpu"]}, "devices"),
        ({"devices": 1}, "devices"),
        ({"on_chunk": "print"}, "on_chunk"),
        ({"evaluate": ["average"]}, "evaluate"),
        ({"num_seeds": 2.0}, "num_seeds"),
    ],
)
def test_run_refuses_bad_arguments(kuhn, kwargs, words):
    with pytest.raises(ValueError, match=words):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, **kwargs)


@pytest.mark.parametrize(
    "hparams, words",
    [
        ({}, "non-empty dict"),
        ([1.0, 2.0], "non-empty dict"),
        ({"alpha": jnp.array([])}, "non-empty 1-D"),
        ({"alpha": 1.5}, "non-empty 1-D"),
        ({"alpha": ["a", "b"]}, "numeric"),
        ({"alpha": jnp.array([1.0, 2.0]), "gamma": jnp.array([1.0])}, "equal length"),
    ],
)
def test_run_refuses_bad_hparams(kuhn, hparams, words):
    with pytest.raises(ValueError, match=words):
        jaxcfr.run(jaxcfr.dcfr, kuhn, 4, 2, hparams=hparams)


def test_run_refuses_a_name_instead_of_a_game():
    with pytest.raises(ValueError, match="games_tensor.load"):
        jaxcfr.run(jaxcfr.cfr(), "kuhn_poker", 4, 2)


def test_typed_key_accepted(kuhn):
    a = jaxcfr.run(jaxcfr.outcome_sampling(), kuhn, 4, 2, key=jax.random.key(3))
    assert np.isfinite(a.nash_conv).all()


# ------------------------------------------------------------------ run: memory
def test_memory_estimate_matches_xla_memory_analysis(leduc):
    """The estimate covers XLA's own accounting of the runner's chunk (arguments +
    outputs + temporaries) for a batch of 16, without exceeding it by more than 2x."""
    for solver in (jaxcfr.cfr(), jaxcfr.outcome_sampling()):
        B = 16
        st = _guards.state_shapes(solver, leduc)

        def chunk(s, k, solver=solver):
            s = solver.update(leduc, s, k) if solver.needs_key else solver.update(leduc, s)
            return s, jnp.sum(jaxcfr.best_response_values(leduc, jaxcfr.average_policy(leduc, s)))

        batched = jax.tree.map(lambda x, B=B: jax.ShapeDtypeStruct((B,) + x.shape, x.dtype), st)
        keys = jax.ShapeDtypeStruct((B, 2), jnp.uint32)
        m = jax.jit(jax.vmap(chunk)).lower(batched, keys).compile().memory_analysis()
        measured = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
        estimate = jaxcfr.estimate_run_memory(solver, leduc, B) - _guards._tree_bytes(leduc)
        assert measured <= estimate <= 2 * measured, (solver, measured, estimate)


def test_batch_that_cannot_fit_is_refused_with_the_number(leduc):
    """Leduc CFR with 150,000 seeds in 6 GiB (the issue's case), and 10^7 seeds against
    this machine's memory: refused before allocating, naming the estimate."""
    need = jaxcfr.estimate_run_memory(jaxcfr.cfr(), leduc, 150_000)
    assert need > 6 * 2**30
    with pytest.raises(jaxcfr.BatchTooLargeError, match="150000 runs.*GiB.*at most about"):
        _guards.check_run_memory(jaxcfr.cfr(), leduc, 150_000, limit=6 * 2**30)
    with pytest.raises(jaxcfr.BatchTooLargeError, match="10000000 runs"):
        jaxcfr.run(jaxcfr.cfr(), leduc, 20, 10, num_seeds=10**7)
    # a batch that fits passes, and returns the estimate
    assert _guards.check_run_memory(jaxcfr.cfr(), leduc, 2, limit=6 * 2**30) > 0


# ------------------------------------------------------------------ run: solver identity
def test_resume_with_another_solver_or_hyperparameters_is_refused(kuhn):
    first = jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, num_seeds=2)
    assert first.solver == "cfr(alternating=True)"
    with pytest.raises(ValueError, match="made by cfr\\(alternating=True\\).*cfr_plus"):
        jaxcfr.run(jaxcfr.cfr_plus(), kuhn, 4, 2, num_seeds=2, state=first.state)
    with pytest.raises(ValueError, match="made by cfr"):
        jaxcfr.run(jaxcfr.cfr(alternating=False), kuhn, 4, 2, num_seeds=2, state=first.state)
    # the same solver resumes (a RunResult is accepted for its state)
    again = jaxcfr.run(jaxcfr.cfr(), kuhn, 4, 2, num_seeds=2, state=first)
    assert list(again.iterations) == [6, 8]
    d = jaxcfr.run(jaxcfr.dcfr(alpha=1.5), kuhn, 4, 2)
    with pytest.raises(ValueError, match="alpha=1.5.*alpha=2.0"):
        jaxcfr.run(jaxcfr.dcfr(alpha=2.0), kuhn, 4, 2, state=d.state)


def test_state_of_another_family_or_game_is_refused(kuhn):
    cfr_state = jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2).state
    loaded = jax.tree.map(np.asarray, cfr_state)  # as from a checkpoint: no identity
    with pytest.raises(ValueError, match="another solver family"):
        jaxcfr.run(jaxcfr.outcome_sampling(), kuhn, 2, 2, state=loaded)
    os_state = jaxcfr.run(jaxcfr.external_sampling(), kuhn, 2, 2).state
    with pytest.raises(ValueError, match="made by external_sampling"):
        jaxcfr.run(jaxcfr.outcome_sampling(), kuhn, 2, 2, state=os_state)
    # another game with the same [I, A] shape: its structure fingerprint differs
    a = gt.load("liars_dice", faces=2, recall=1)
    b = gt.load("liars_dice", faces=2)
    assert (a.num_infosets, a.num_actions) == (b.num_infosets, b.num_actions)
    sa = jaxcfr.run(jaxcfr.cfr(), a, 2, 2).state
    with pytest.raises(ValueError, match="another game"):
        jaxcfr.run(jaxcfr.cfr(), b, 2, 2, state=sa)
    # another game of another shape (e.g. loaded from a checkpoint)
    leduc_like = jax.tree.map(np.asarray, jaxcfr.run(jaxcfr.cfr(), b, 2, 2).state)
    with pytest.raises(ValueError, match="another game"):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2, state=leduc_like)


def test_resume_with_wrong_batch_is_refused(kuhn):
    st = jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2, num_seeds=2).state
    with pytest.raises(ValueError, match="B = 3"):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2, num_seeds=3, state=st)


# ------------------------------------------------------------------ run: non-finite
def test_non_finite_state_stops_the_run_naming_the_iterations(kuhn):
    """A solver whose regrets overflow stops with NonFiniteStateError naming the chunk's
    iterations and the field; no result and no on_chunk call for that chunk."""

    def explode(regrets, inst, t):
        return (regrets + inst) * 1e30

    boom = jaxcfr.make_cfr_solver("boom", explode, weight_power(0))
    seen = []
    with pytest.raises(jaxcfr.NonFiniteStateError, match="iterations 1-4.*state.regrets"):
        jaxcfr.run(boom, kuhn, 8, 4, on_chunk=lambda it, nc, st: seen.append(it))
    assert seen == []


def test_nan_in_a_resumed_state_is_caught(kuhn):
    st = jax.tree.map(np.asarray, jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2, num_seeds=2).state)
    st = st._replace(strategy_sum=st.strategy_sum.copy())
    st.strategy_sum[1, 0, 0] = np.nan  # evaluated as uniform before: a plausible number
    with pytest.raises(jaxcfr.NonFiniteStateError, match="1 of 2 runs.*run 1.*strategy_sum"):
        jaxcfr.run(jaxcfr.cfr(), kuhn, 2, 2, num_seeds=2, state=st)


def test_payoffs_near_the_float_limit_stop_the_run():
    """Payoffs finite in float32 but whose regrets overflow: the run stops."""
    game = gt.load("nonlocality", left_leaf=3e38)
    with pytest.raises(jaxcfr.NonFiniteStateError, match="float32"):
        jaxcfr.run(jaxcfr.cfr(), game, 20, 10)


# ------------------------------------------------------------------ stable weights
def test_discount_weights_equal_closed_form_without_overflow():
    """t^a/(t^a+1) and (t/(t+1))^g against exact rationals (Python integers), in float32,
    where the direct formula overflows (t^100 at t = 3); rtol 1e-5: float32 rounding of
    a log t inside the exponential."""
    from fractions import Fraction

    def exact(t, power):
        x = Fraction(t) ** power
        return float(x / (x + 1))

    for alpha, beta in [(2, 0), (100, -100), (10**6, 3)]:
        upd = regret_discounted(float(alpha), float(beta))
        for t in (1, 2, 3, 10, 1000):
            got = upd(jnp.array([1.0, -1.0], jnp.float32), jnp.zeros(2), jnp.asarray(t))
            assert np.isfinite(np.asarray(got)).all()
            np.testing.assert_allclose(float(got[0]), exact(t, alpha), rtol=1e-5)
            np.testing.assert_allclose(-float(got[1]), exact(t, beta), rtol=1e-5, atol=1e-37)
    for gamma in (2, 10):
        _, d = weight_discounted(float(gamma))(jnp.asarray(7, jnp.int32))
        np.testing.assert_allclose(float(d), float(Fraction(7, 8) ** gamma), rtol=1e-6)


def test_power_averaging_normalised_equals_weighted_average():
    """The stored sum of weight_power(p) is sum_s s^p x_s / (t+1)^p (the average policy
    is unchanged): a float64 NumPy recursion against the closed form, p up to 10, and no
    overflow in float32 at t = 10^5 with p = 10 (t^10 = 1e50)."""
    for p in (0.0, 1.0, 2.0, 10.0):
        w = weight_power(p)
        S = 0.0
        x = np.cos(np.arange(1, 201))  # any contributions
        for t in range(1, 201):
            wt, d = w(jnp.asarray(t, jnp.int32))
            S = (S + float(wt) * x[t - 1]) * float(d)
        s = np.arange(1, 201, dtype=np.float64)
        want = np.sum((s / 201.0) ** p * x)
        np.testing.assert_allclose(S, want, rtol=1e-4)  # float32 factors
    wt, d = weight_power(10.0)(jnp.asarray(100_000, jnp.int32))
    assert np.isfinite(float(wt)) and 0 < float(d) <= 1


@pytest.mark.parametrize(
    "solver",
    [
        jaxcfr.dcfr(alpha=100.0),
        jaxcfr.dcfr(alpha=1e6),
        jaxcfr.dcfr(gamma=1e6),
        jaxcfr.dcfr(beta=-1e6),
        jaxcfr.pcfr_plus(averaging_power=10),
    ],
    ids=repr,
)
def test_extreme_hyperparameters_run_finite_and_converge(kuhn, solver):
    """Hyper-parameters that overflowed float32 now run finite and still converge on Kuhn
    (vanilla CFR's 200-iteration exploitability is about 0.01)."""
    res = jaxcfr.run(solver, kuhn, 400, 200)
    assert np.isfinite(res.nash_conv).all()
    assert res.exploitability[0, -1] < 0.02


@pytest.mark.parametrize(
    "solver",
    [
        jaxcfr.dcfr(alpha=10.0),  # NaN regrets after ~7,000 iterations on Leduc before
        jaxcfr.pcfr_plus(averaging_power=10),  # NaN from ~4,000 iterations before
    ],
    ids=repr,
)
def test_extreme_hyperparameters_stay_finite_at_large_iterations(leduc, solver):
    """Leduc, float32: the same solvers resumed at iteration 10,000 and just below the
    int32 counter's limit keep a finite state and a policy far better than uniform (the
    overflow used to turn the average into the uniform policy, NashConv 4.747)."""
    uniform = float(jaxcfr.nash_conv(leduc, _uniform(leduc)))
    first = jaxcfr.run(solver, leduc, 200, 100)
    for start in (10_000, 2**31 - 201):
        late = first.state._replace(iteration=jnp.full_like(first.state.iteration, start))
        res = jaxcfr.run(solver, leduc, 100, 100, state=late)
        assert all(np.isfinite(np.asarray(x)).all() for x in jax.tree.leaves(res.state))
        assert list(res.iterations) == [start + 100]
        assert res.nash_conv[0, -1] < 0.25 * uniform, (start, res.nash_conv)
