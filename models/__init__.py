"""Flax networks: AlphaZero ResNet, searchless transformer (Ruoss et al. 2024), Chessformer."""
from models.network import NetworkConfig, make_network
from models.output import NetworkOutput, wdl_to_value

__all__ = ["NetworkConfig", "NetworkOutput", "make_network", "wdl_to_value"]
