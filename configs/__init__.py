"""Config presets (YAML files in this folder) and the loader that turns them into typed dataclasses:
`load`, `--set` overrides, and the checks every room's config runs in `__post_init__`."""
from configs.loader import (
                            ConfigError,
                            Retired,
                            apply_overrides,
                            check_at_least,
                            check_choices,
                            check_unit_interval,
                            from_dict,
                            load,
                            parse_overrides,
                            to_dict,
                            upgrade,
)

__all__ = ["ConfigError", "Retired", "apply_overrides", "check_at_least", "check_choices", "check_unit_interval",
           "from_dict", "load", "parse_overrides", "to_dict", "upgrade"]
