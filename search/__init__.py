"""Batched MCTS (AlphaZero PUCT or Gumbel MuZero) over any pgx game, on mctx, with a legal-slot tree.

    from search import SearchConfig, make_search
    search_fn = make_search(game, evaluate, SearchConfig(num_simulations=128))
    out = search_fn(params, states, key)   # SearchOutput: action [B], policy_target [B, W], ...

With `SearchConfig(reuse_tree=True)` and `return_tree=True` the search takes the last tree back:
    out, tree = search_fn(params, states, key, Reuse(tree, played_slot, keep))

Other rooms use the names below, never another module of search (slots: the legal-move slot axis).
"""
from search import slots
from search.config import SearchConfig, WinCheck
from search.game_search import (
                         Node,
                         Reuse,
                         SearchOutput,
                         legal_slots,
                         make_recurrent_fn,
                         make_search,
                         make_search_tree,
                         network_fn,
                         scatter_slots,
)
from search.slots import EMPTY, EMPTY_LOGIT

__all__ = ["SearchConfig", "WinCheck", "SearchOutput", "make_search", "make_search_tree", "make_recurrent_fn",
           "scatter_slots", "legal_slots", "network_fn", "Node", "Reuse", "EMPTY", "EMPTY_LOGIT", "slots"]
