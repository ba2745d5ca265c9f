"""Helpers the bench/ scripts share (not a benchmark itself)."""
import sys

LOCK_SRC = "policies/baselines/clock-lock.yaml"


def lock_policy(mhz, prog):
    """The clock-lock baseline's text with its clocks locked at mhz and
    named lock-MHZ; exits naming prog if the baseline changed shape (its
    relative paths do not matter: the baseline has none)."""
    src = open(LOCK_SRC).read()
    text = src.replace("name: clock-lock", f"name: lock-{mhz}").replace(
        "frequency: {min_mhz: 1545, max_mhz: 1545}", f"frequency: {{min_mhz: {mhz}, max_mhz: {mhz}}}")
    if text == src or f"name: lock-{mhz}" not in text:
        sys.exit(f"{prog}: {LOCK_SRC} changed shape")
    return text
