"""Games between agents (arena's face names what other rooms use).

    game.py      one game from an opening, with adjudication, recorded as PGN (append_pgn)
    openings.py  opening books: EPD positions or PGN lines, each played with both colours
    match.py     matches: two agents or a round robin, games in parallel, PGN + JSON out
    uci.py       the UCI protocol in front of any agent (uci.py beside the project serves it)
"""
