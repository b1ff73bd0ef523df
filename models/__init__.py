"""Flax networks: AlphaZero ResNet, searchless transformer (Ruoss et al. 2024), Chessformer; the
network as a search calls it (`evaluation_fn`, `load_evaluation`)."""
from models.chessformer import ChessformerConfig
from models.evaluation import Evaluation, evaluation_fn, load_evaluation
from models.network import NetworkConfig, make_network, make_student
from models.output import NetworkOutput, wdl_to_value
from models.resnet import ResNetConfig
from models.searchless import SearchlessConfig

__all__ = ["ChessformerConfig", "Evaluation", "NetworkConfig", "NetworkOutput", "ResNetConfig", "SearchlessConfig",
           "evaluation_fn", "load_evaluation", "make_student", "make_network", "wdl_to_value"]
