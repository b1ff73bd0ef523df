"""Flax networks: AlphaZero ResNet, searchless transformer (Ruoss et al. 2024), Chessformer."""
from models.chessformer import ChessformerConfig
from models.network import NetworkConfig, make_model, make_network
from models.output import NetworkOutput, wdl_to_value
from models.resnet import ResNetConfig
from models.searchless import SearchlessConfig

__all__ = ["ChessformerConfig", "NetworkConfig", "NetworkOutput", "ResNetConfig", "SearchlessConfig",
           "make_model", "make_network", "wdl_to_value"]
