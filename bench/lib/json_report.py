"""How the bench's Python cases that print one JSON document hand it over (bench/capacity.py,
bench/fleet_idle.py): on stdout, and into the --json file when one is named."""

import json


def emit(document, path=None):
    """Prints document as indented JSON; writes the same text to path unless it is None."""
    text = json.dumps(document, indent=1)
    print(text)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
