"""Flax networks: AlphaZero ResNet, searchless transformer (Ruoss et al. 2024), Chessformer; the
network as a search calls it (`evaluation_fn`, `load_evaluation`); network directories on disk
(network_dir) and the named presets (presets). Other rooms use the names below, never another
module of models."""
from models import network_dir, presets
from models.chessformer import ChessformerConfig
from models.evaluation import Evaluation, evaluation_fn, load_evaluation
from models.network import NetworkConfig, check_game, make_network, make_student, upgrade_network_dict
from models.output import NetworkOutput, wdl_to_value
from models.resnet import VALUE_ACTIVE, ResNetConfig
from models.searchless import SearchlessConfig

__all__ = ["ChessformerConfig", "Evaluation", "NetworkConfig", "NetworkOutput", "ResNetConfig", "SearchlessConfig",
           "VALUE_ACTIVE", "check_game", "evaluation_fn", "load_evaluation", "make_student", "make_network",
           "network_dir", "presets", "upgrade_network_dict", "wdl_to_value"]
