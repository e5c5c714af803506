"""Leaderboard tracks (frozen data) and the runner that scores a consolidator on one."""
from dreamer_gym.leaderboard.runner import REFERENCES, TrackResult, run_track, run_transfer, summarise
from dreamer_gym.leaderboard.tracks import (
    PROTOCOL_VERSION,
    TRACKS,
    Track,
    TransferTrack,
    load_track,
    register_track,
    track_names,
)

__all__ = ["PROTOCOL_VERSION", "REFERENCES", "TRACKS", "Track", "TrackResult", "TransferTrack", "load_track",
           "register_track", "run_track", "run_transfer", "summarise", "track_names"]
