"""The compiler on every registered game: conformance, determinism, pytree behaviour."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import games_tensor as gt
from games_tensor._rules import CHANCE, TERMINAL, Rules

ALL_GAMES = sorted(gt.available())


@pytest.fixture(scope="module", params=ALL_GAMES)
def game(request):
    return gt.load(request.param)


def _np(x):
    return np.asarray(x)


def test_registry_is_populated():
    for name in [
        "kuhn_poker",
        "leduc_poker",
        "leduc5",
        "generic_poker",
        "liars_dice",
        "ii_goofspiel",
        "die_roll_poker",
        "biased_rps",
        "nonlocality",
    ]:
        assert name in ALL_GAMES


def test_chance_probabilities_sum_to_one(game):
    player = _np(game.node_player)
    probs = game.meta.host["node_chance_probs"]
    children = _np(game.node_children)
    chance = player == CHANCE
    np.testing.assert_allclose(probs[chance].sum(axis=1), 1.0, atol=1e-12)
    # probabilities sit exactly on existing children
    assert ((probs[chance] > 0) == (children[chance] >= 0)).all()
    assert (probs[~chance] == 0).all()


def test_legal_masks_nonempty_and_match_tree(game):
    mask = _np(game.legal_mask)
    assert mask.any(axis=1).all()
    player = _np(game.node_player)
    inf = _np(game.node_infoset)
    children = _np(game.node_children)
    decision = (player == 0) | (player == 1)
    np.testing.assert_array_equal(
        children[decision][:, : game.num_actions] >= 0, mask[inf[decision]]
    )
    np.testing.assert_array_equal(_np(game.infoset_player)[inf[decision]], player[decision])


def test_zero_sum_and_chance_reach_sums(game):
    player = _np(game.node_player)
    term = player == TERMINAL
    # the chance reach of all terminals under any fixed pure profile sums to 1:
    # summing over all terminals counts each chance branch once per action path,
    # so check instead that the root's chance reach is 1 and leaves are in (0, 1].
    reach = game.meta.host["node_chance_reach"]
    assert reach[0] == 1.0
    assert (reach[term] > 0).all() and (reach[term] <= 1).all()
    assert term.sum() == game.sizes["terminals"]


def test_breadth_first_layout(game):
    depth = _np(game.node_depth)
    parent = _np(game.node_parent)
    assert (np.diff(depth) >= 0).all()
    for start, end in game.meta.node_levels:
        assert (depth[start:end] == depth[start]).all()
    assert parent[0] == -1 and (parent[1:] < np.arange(1, parent.size)).all()
    assert (np.diff(parent[1:]) >= 0).all()  # children of a node are contiguous


def test_level_positions(game):
    """``parent_local`` addresses each infoset's parent sequence in the previous level's
    ``[A, n]`` block (a table with entry [a, i] = id of sequence i*A + a read there gives
    back ``parent_seq``), and the gathered child lists name every child once."""
    A, n = game.num_actions, game.num_infosets
    table = np.arange(n)[None, :] * A + np.arange(A)[:, None]
    parent_seq, local = _np(game.parent_seq), _np(game.parent_local)
    for levels in game.meta.infoset_levels:
        for (start, end), (pstart, pend) in zip(levels[1:], levels[:-1], strict=True):
            block = table[:, pstart:pend].reshape(-1)  # the previous level's [A, n] block
            np.testing.assert_array_equal(block[local[start:end]], parent_seq[start:end])
    # gathered child lists: every child of a level listed exactly once, under its parent slot
    children, offset = _np(game.level_children), 0
    for p, fanout in enumerate(game.meta.child_fanout):
        levels = game.meta.infoset_levels[p]
        for d, K in enumerate(fanout, start=1):
            (start, end), (pstart, pend) = levels[d], levels[d - 1]
            m = A * (pend - pstart)
            lists = children[offset : offset + K * m].reshape(K, m)
            offset += K * m
            if K == 0:
                continue
            k_idx, slot = np.nonzero(lists < end - start)
            kids = lists[k_idx, slot]
            np.testing.assert_array_equal(np.sort(kids), np.arange(end - start))
            np.testing.assert_array_equal(local[start + kids], slot)
    assert offset == children.size


def test_sequence_form_level_order(game):
    A = game.num_actions
    parent_seq = _np(game.parent_seq)
    player = _np(game.infoset_player)
    empty = game.empty_sequence
    n0 = game.meta.infosets_per_player[0]
    assert (player[:n0] == 0).all() and (player[n0:] == 1).all()
    for p in (0, 1):
        levels = game.meta.infoset_levels[p]
        for d, (start, end) in enumerate(levels):
            ps = parent_seq[start:end]
            assert (np.diff(ps) >= 0).all()
            if d == 0:
                assert (ps == empty).all()
            else:
                owner = ps // A
                assert ((owner >= levels[d - 1][0]) & (owner < levels[d - 1][1])).all()
                assert _np(game.legal_mask)[owner, ps % A].all()
    # perfect recall: every player node's own sequence (recomputed from the tree)
    # equals its infoset's parent sequence
    node_player = _np(game.node_player)
    node_inf = _np(game.node_infoset)
    node_parent = _np(game.node_parent)
    children = _np(game.node_children)
    slot = np.zeros(node_player.size, dtype=np.int64)
    h_idx, k_idx = np.nonzero(children >= 0)
    slot[children[h_idx, k_idx]] = k_idx
    own_seq = np.full((2, node_player.size), empty, dtype=np.int64)
    for start, end in game.meta.node_levels[1:]:
        nodes = np.arange(start, end)
        par = node_parent[nodes]
        own_seq[:, nodes] = own_seq[:, par]
        pp = node_player[par]
        for q in (0, 1):
            sel = pp == q
            own_seq[q, nodes[sel]] = node_inf[par[sel]] * A + slot[nodes[sel]]
    idx = np.nonzero(node_player >= 0)[0]
    np.testing.assert_array_equal(own_seq[node_player[idx], idx], parent_seq[node_inf[idx]])


def test_sequence_form_payoffs_match_tree(game):
    """Sum of sf payoffs equals the expected utility under 'everyone plays every action'."""
    term = _np(game.node_player) == TERMINAL
    total_tree = (game.meta.host["node_chance_reach"] * game.meta.host["node_utility"])[term].sum()
    np.testing.assert_allclose(game.meta.host["sf_payoff"].sum(), total_tree, atol=1e-9)


def test_deterministic_numbering(game):
    again = gt.load(game.name, **game.params)
    for a, b in zip(jax.tree_util.tree_leaves(game), jax.tree_util.tree_leaves(again), strict=True):
        np.testing.assert_array_equal(_np(a), _np(b))
    assert again.infoset_keys == game.infoset_keys
    assert jax.tree_util.tree_structure(again) == jax.tree_util.tree_structure(game)


def test_passes_through_jit_and_vmap(game):
    out = jax.jit(lambda g: g)(game)
    assert out.meta == game.meta
    for a, b in zip(jax.tree_util.tree_leaves(game), jax.tree_util.tree_leaves(out), strict=True):
        np.testing.assert_array_equal(_np(a), _np(b))

    def utility_sum(g, key):
        return jnp.sum(g.node_utility) + jax.random.uniform(key) * 0

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    vals = jax.vmap(utility_sum, in_axes=(None, 0))(game, keys)
    assert vals.shape == (2,)


def test_repr_is_short(game):
    r = repr(game)
    assert r.startswith("Game(name=") and len(r) < 400


def test_uniform_policy(game):
    pol = _np(gt.uniform_policy(game))
    mask = _np(game.legal_mask)
    np.testing.assert_allclose(pol.sum(axis=1), 1.0, rtol=1e-6)
    assert (pol[~mask] == 0).all()


def test_unknown_game_lists_valid_names():
    with pytest.raises(ValueError, match="kuhn_poker"):
        gt.load("kuhn_pokr")


def test_unknown_parameter_is_named():
    with pytest.raises(ValueError, match="nonsense"):
        gt.load("kuhn_poker", nonsense=3)


class _ForgetfulRules(Rules):
    """P1 moves twice and forgets its first move: not perfect recall."""

    name = "forgetful"
    num_actions = 2

    def initial_state(self):
        return ()

    def current_player(self, s):
        return TERMINAL if len(s) == 2 else 0

    def legal_actions(self, s):
        return (0, 1)

    def apply(self, s, a):
        return s + (a,)

    def returns(self, s):
        return (float(s[0] == s[1]), -float(s[0] == s[1]))

    def information_state(self, s, player):
        return f"move{len(s)}"


def test_imperfect_recall_keys_are_refused():
    """Rules whose keys forget own moves: the compiler's ImperfectRecallError (a
    ValueError) names the infoset, both own action sequences and what to do."""
    with pytest.raises(ValueError, match="perfect recall"):
        gt.compile(_ForgetfulRules())
    with pytest.raises(gt.ImperfectRecallError, match=r"'move1'.*\[0\] and \[1\].*abstract"):
        gt.compile(_ForgetfulRules())


def test_history_limit_refuses_before_walking():
    class Big(_ForgetfulRules):
        def estimated_histories(self):
            return 10**12

    with pytest.raises(gt.GameTooLargeError, match="GiB"):
        gt.compile(Big())


def test_different_games_never_share_metadata():
    """Same name, parameters and shapes but a different tree: the metadata (the jit
    cache key) differs, so static layouts baked into a trace cannot leak across."""

    class Left(_ForgetfulRules):
        def current_player(self, s):
            return TERMINAL if len(s) == 2 else len(s)

        def information_state(self, s, player):
            return f"p{player}"

    class Right(Left):
        def current_player(self, s):
            return TERMINAL if len(s) == 2 else 1 - len(s)

    a, b = gt.compile(Left()), gt.compile(Right())
    assert a.name == b.name and a.params == b.params
    assert a.meta != b.meta
    assert gt.compile(Left()).meta == a.meta


def test_own_block_positions(game):
    """Positions in each player's own flattened [A, n_p] block (``parent_own``,
    ``sf_own0/1``, ``block_row_own/col_own``) address the same sequences as the flat ids:
    a block with entry [a, j] = id of sequence (start_p + j)*A + a, followed by the empty
    sequence and a padding marker, read at each stored position gives back the id."""
    A, S = game.num_actions, game.num_sequences

    def own_block(p):
        sl = game.player_slice(p)
        ids = np.arange(sl.start, sl.stop)[None, :] * A + np.arange(A)[:, None]
        return np.append(ids.reshape(-1), [game.empty_sequence, -1])

    def expect(seq):
        return np.where(seq < S, seq, -1)

    for p, (own, seqs) in enumerate([("sf_own0", "sf_seq0"), ("sf_own1", "sf_seq1")]):
        got = own_block(p)[_np(getattr(game, own))]
        np.testing.assert_array_equal(got, expect(_np(getattr(game, seqs))), err_msg=own)
    for p, (own, seqs) in enumerate(
        [("block_row_own", "block_rows"), ("block_col_own", "block_cols")]
    ):
        if game.meta.num_payoff_blocks:
            got = own_block(p)[_np(getattr(game, own))]
            np.testing.assert_array_equal(got, expect(_np(getattr(game, seqs))), err_msg=own)
    parent_own, parent_seq = _np(game.parent_own), _np(game.parent_seq)
    for p in (0, 1):
        sl = game.player_slice(p)
        np.testing.assert_array_equal(own_block(p)[parent_own[sl]], parent_seq[sl])


def test_compact_layout(game):
    """The compact layout (``games_tensor._table.compact_layout``): each level is as wide
    as its widest infoset; ``compact_position`` and ``compact_index`` are inverse maps
    between the legal pairs and the slots; slot (k, i) holds i's k-th legal action; the
    compact positions of the parents and payoff entries name the same sequences as the
    ``[A, n_p]`` ones."""
    A, n_inf = game.num_actions, game.num_infosets
    mask, pos, index = _np(game.legal_mask), _np(game.compact_position), _np(game.compact_index)
    widths, pieces = game.meta.compact_widths, game.meta.compact_pieces
    sizes = [sum(w * n for lv in pieces[p] for w, n in lv) for p in (0, 1)]
    total = sizes[0] + sizes[1]
    assert index.shape == (total,)
    assert pos.shape == (n_inf, A)
    order, place = _np(game.compact_order), _np(game.compact_rank)
    for p, levels in enumerate(game.meta.infoset_levels):
        for w, lv, (s, e) in zip(widths[p], pieces[p], levels, strict=True):
            assert w == mask[s:e].sum(axis=1).max()
            assert sum(n for _, n in lv) == e - s and max(pw for pw, _ in lv) == w
            np.testing.assert_array_equal(np.sort(order[s:e]), np.arange(e - s))
            np.testing.assert_array_equal(place[s + order[s:e]], np.arange(e - s))
    assert (pos[~mask] == total).all()
    ii, aa = np.nonzero(mask)
    np.testing.assert_array_equal(index[pos[ii, aa]], ii * A + aa)
    assert np.unique(pos[ii, aa]).size == ii.size
    np.testing.assert_array_equal(_np(game.compact_legal), index < n_inf * A)
    # slot (k, q) of a [W, n] piece: rank k of the action among the legal ones of the
    # piece's q-th infoset (piece order), each infoset no wider than its piece
    rank = np.cumsum(mask, axis=1) - 1
    offset = 0
    for p, levels in enumerate(game.meta.infoset_levels):
        for lv, (s, _) in zip(pieces[p], levels, strict=True):
            q = 0
            for w, n in lv:
                ids = s + order[s + q : s + q + n]
                assert mask[ids].sum(axis=1).max() <= w
                slots = pos[ids] - offset
                legal = mask[ids]
                k, i = np.divmod(slots[legal], n)
                np.testing.assert_array_equal(k, rank[ids][legal])
                np.testing.assert_array_equal(i, np.nonzero(legal)[0])
                offset += w * n
                q += n

    def seq_of(own, p):  # compact position in player p's block -> sequence id
        base = 0 if p == 0 else sizes[0]
        full = np.concatenate([index[base : base + sizes[p]], [n_inf * A, n_inf * A + 1]])
        return full[own]

    for p in (0, 1):
        sl = game.player_slice(p)
        np.testing.assert_array_equal(
            seq_of(_np(game.compact_parent_own)[sl], p), _np(game.parent_seq)[sl]
        )
        sf_seq = _np(game.sf_seq0 if p == 0 else game.sf_seq1)
        own = _np(game.compact_sf_own0 if p == 0 else game.compact_sf_own1)
        np.testing.assert_array_equal(seq_of(own, p), np.minimum(sf_seq, n_inf * A + 1))


def test_fanin_groups(game):
    """The payoff entries grouped by the fan-in of their own sequence
    (``games_tensor._table.fanin_groups``): per player, each group's ``[K, n]`` table lists,
    for each of its own sequences, exactly that sequence's K payoff entries (the
    opponent's compact position and the payoff signed for the owner) in their order in
    the sf list; ``compact_group_slot`` sends every own slot to its sequence's column, or
    to the zero after the groups when it has no entry; a merged group's shorter columns end
    in padding cells (the zero after the plan, payoff 0). With unit payoffs (-1, 0, 1) the
    zero entries are dropped and a -1 entry's position points into the negated copy of the
    opponent's plan (``opp_size + 2`` further). Games with payoff blocks carry none."""
    if game.meta.num_payoff_blocks:
        assert game.meta.payoff_groups is None
        assert _np(game.compact_group_opp).size == 0
        return
    pieces = game.meta.compact_pieces
    sizes = [sum(w * n for lv in pieces[p] for w, n in lv) for p in (0, 1)]
    opp_all, pay_all = _np(game.compact_group_opp), _np(game.compact_group_payoff)
    slot_all = _np(game.compact_group_slot)
    payoff = game.meta.host["sf_payoff"]
    start, slot_start = 0, 0
    unit = game.meta.payoff_groups[2]
    assert unit == bool(np.isin(payoff, (-1.0, 0.0, 1.0)).all())
    for p, sign in ((0, 1.0), (1, -1.0)):
        own = _np(game.compact_sf_own0 if p == 0 else game.compact_sf_own1)
        opp = _np(game.compact_sf_own1 if p == 0 else game.compact_sf_own0)
        slot = slot_all[slot_start : slot_start + sizes[p] + 1]
        columns = []  # (entries of one own sequence as (opp, payoff) pairs)
        pad = (2 if unit else 1) * (sizes[1 - p] + 2)  # merged groups' padding: the zero
        for K, n in game.meta.payoff_groups[p]:
            o = opp_all[start : start + K * n].reshape(K, n)
            v = pay_all[start : start + K * n].reshape(K, n)
            for j in range(n):  # a column's entries first, then only padding (payoff 0)
                real = int(np.argmax(o[:, j] == pad)) if (o[:, j] == pad).any() else K
                assert (o[real:, j] == pad).all() and (v[real:, j] == 0).all()
                columns.append(list(zip(o[:real, j], v[:real, j], strict=True)))
            start += K * n
        columns.append([])
        for s in range(sizes[p] + 1):
            z = np.nonzero(own == s)[0]
            want = []
            for i in z:
                v = sign * payoff[i]
                if unit and v == 0:  # unit payoffs: zeros dropped, -1 read from -x
                    continue
                shift = sizes[1 - p] + 2 if unit and v < 0 else 0
                want.append((int(opp[i]) + shift, np.float32(v)))
            got = [(int(a), np.float32(b)) for a, b in columns[slot[s]]]
            assert got == want, (p, s)
        slot_start += sizes[p] + 1
    assert start == opp_all.size


def test_split_level_by_legal_count():
    """``split_level``: buckets by ceil(log2(count)), narrowest first, level order inside
    a piece, a bucket of fewer than SPLIT_MIN_INFOSETS infosets joining the next wider
    one; one piece where the split would keep more than SPLIT_FRACTION of the slots."""
    from games_tensor._table import SPLIT_MIN_INFOSETS as m
    from games_tensor._table import split_level

    count = np.array([8, 1] * m + [2] * 3)  # 1s, a small bucket of 2s, 8s
    pieces = split_level(count)
    assert [(w, ids.size) for w, ids in pieces] == [(1, m), (8, m + 3)]
    np.testing.assert_array_equal(pieces[0][1], np.arange(1, 2 * m, 2))
    np.testing.assert_array_equal(pieces[1][1], np.r_[np.arange(0, 2 * m, 2), 2 * m + np.arange(3)])
    (whole,) = split_level(np.array([4, 5] * m))  # 9m of 10m slots kept: not split
    assert whole[0] == 5 and whole[1].size == 2 * m
