"""Printing the peer benchmarks' rows: one JSON record per line, or an aligned table."""

import json


def emit(rows, columns, as_json):
    """Prints ``rows`` (dicts) as JSON lines when ``as_json``, else as a table of
    ``columns``: ``(key, heading, width, format)`` each, the first left-aligned."""
    if as_json:
        for row in rows:
            print(json.dumps(row))
        return
    (key, heading, width, _), rest = columns[0], columns[1:]
    print(f"{heading:{width}} " + " ".join(f"{h:>{w}}" for _, h, w, _ in rest))
    for row in rows:
        print(f"{row[key]:{width}} " + " ".join(f"{row[k]:{w}{f}}" for k, _, w, f in rest))
