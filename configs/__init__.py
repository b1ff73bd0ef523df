"""Config presets (YAML files in this folder) and the loader that turns them into typed dataclasses."""
from configs.loader import ConfigError, apply_overrides, from_dict, load, parse_overrides, to_dict

__all__ = ["ConfigError", "load", "parse_overrides", "to_dict", "from_dict", "apply_overrides"]
