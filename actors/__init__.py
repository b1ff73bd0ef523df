"""Self-play actors (Ray): batches of games played with the batched search, streamed to replay."""
from actors.config import ActorConfig
from actors.messages import PlayReport

__all__ = ["ActorConfig", "PlayReport"]
